"""The fuzzer (`make fuzz`, tests/fuzz.py), the programs and scenarios it prints as scripts, and
a few random scenarios of each kind (tests/fuzz_cases.py) on every backend."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import types
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import xla_explorer as xe
from xla_explorer.api import compare
from xla_explorer.backends import BACKENDS, Executable
from xla_explorer.backends.interpreter import InterpreterBackend

from . import fuzz
from .fuzz_cases import ALIAS_HELPERS, GROUPS, PRELUDE, STRATEGIES, TRANSCENDENTAL, Scenario
from .fuzz_cases import KINDS as SCENARIO_KINDS
from .programs import INT_OPS, INT_TEMPLATES, OPS, TEMPLATES, array_source, build, build_int, render

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))


def same_bits(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return (got.dtype == want.dtype and got.shape == want.shape
            and np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes())


def run_snippet(text: str) -> tuple[int, str, dict]:
    """Execute a rendered script in this process: (exit status, what it printed, namespace)."""
    namespace: dict = {"__name__": "__snippet__"}
    printed = io.StringIO()
    with redirect_stdout(printed), pytest.raises(SystemExit) as exit_:
        exec(compile(text, "<snippet>", "exec"), namespace)
    return exit_.value.code, printed.getvalue(), namespace


@pytest.mark.parametrize("table, templates", [(OPS, TEMPLATES), (INT_OPS, INT_TEMPLATES)],
                         ids=["float", "int"])
def test_every_template_computes_exactly_what_its_function_does(table, templates):
    rng = np.random.default_rng(0)
    integer = table is INT_OPS
    assert len(templates) == len(table)
    for (kind, name, fn), template in zip(table, templates):
        code = eval(f"lambda x, y: {template.format(x='x', y='y')}", {"np": np})
        for shapes in [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((1, 4), (3, 1)), ((1, 1), (3, 4))]:
            for dtype in ([np.int32, np.int64] if integer else [np.float32, np.float64]):
                x, y = (rng.integers(-100, 100, size=s).astype(dtype) if integer
                        else rng.uniform(-3, 3, size=s).astype(dtype) for s in shapes)
                with np.errstate(all="ignore"):
                    want = fn(x, y) if kind == "b" else fn(x)
                    got = code(x.copy(), y.copy())
                assert same_bits(got, want), (name, template, shapes, dtype)


@pytest.mark.parametrize("value", [
    np.array(0.1, dtype=np.float32), np.array([[1 / 3, -2.5e-38, 3.0]], dtype=np.float32),
    np.array([[np.pi], [-0.0]]), np.array([[np.nan, np.inf, -np.inf]], dtype=np.float32),
    np.array([[2**62, -7]], dtype=np.int64), np.array([[-3]], dtype=np.int32),
    np.zeros((0, 3), dtype=np.float32),
])
def test_array_source_rebuilds_every_bit(value):
    assert same_bits(eval(array_source(value), {"np": np}), value)


def test_rendered_programs_compute_what_the_generator_computes():
    cases = fuzz.draw_cases(24, seed=7, kinds=("float", "int"))
    assert {c.kind for c in cases} == {"float", "int"}
    assert any(np.ndim(x) == 0 for c in cases for x in c.inputs)  # the made-2-D path, too
    for case in cases:
        text = render(case.inputs, case.steps, case.n_out, "interpreter",
                      integer=case.kind == "int", header=f"program {case.index}")
        code, printed, ns = run_snippet(text)
        assert code == 0 and printed.strip().endswith("all outputs match"), text + printed
        for a, x in zip(ns["args"], case.inputs, strict=True):
            assert same_bits(a, x)
        program = build_int(case.steps) if case.kind == "int" else build(case.steps, case.n_out)
        with np.errstate(all="ignore"):
            want = program(*[x.copy() for x in case.inputs])
        want = (want,) if case.kind == "int" else want
        assert len(ns["want"]) == len(want), text
        for got, expected in zip(ns["want"], want):
            assert same_bits(got, expected), text


@pytest.mark.slow  # a subprocess that compiles
def test_a_rendered_program_runs_as_a_script_of_its_own(tmp_path):
    case = next(c for c in fuzz.draw_cases(12, seed=3, kinds=("float", "int"))
                if c.kind == "float" and len(c.steps) > 2)
    script = tmp_path / "repro.py"
    script.write_text(render(case.inputs, case.steps, case.n_out, "cpu"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all outputs match" in done.stdout


@pytest.mark.slow  # the fuzz run
def test_the_fuzzer_passes_on_a_handful_of_programs(capsys):
    assert fuzz.main(["-n", "8", "--seed", "11", "--kinds", "float,int", "--jobs", "0"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    summary = out[-1]
    assert summary.startswith("fuzz: 8 programs (6 float, 2 int), seed 11;"), summary
    for backend in BACKENDS:
        assert f"{backend}: 0 mismatches, 0 errors" in summary
    assert "=====" not in "\n".join(out)  # nothing found, nothing printed


def test_an_output_nearer_the_exact_result_than_numpys_is_no_mismatch():
    """NumPy rounds a float16 sum along an outer axis to float16 after every addition; the
    compiled sum rounds once. The fuzz judges as ex.check does, by the float64 referee, so a
    result nearer the exact sum is right, and one that is further off is still caught."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 3)) * 40).astype(np.float16)
    sum0 = [i for i, op in enumerate(OPS) if op[1] == "sum0"][0]
    case = fuzz.Case(0, "float", [x], [(sum0, 0, 0)], 1)
    want = np.sum(x, axis=0)
    exact = np.sum(x.astype(np.float64), axis=0)
    ours = xe.explore(case.function(), x, backend="cpu").run(x)[0]
    assert not compare("sum", ours, want, np.float16).ok  # outside the plain tolerance
    assert np.max(np.abs(ours - exact)) <= np.max(np.abs(want.astype(np.float64) - exact))
    assert fuzz.run_case(case, ["interpreter", "cpu"], 0).findings == []


class Broken(InterpreterBackend):
    """A backend with a bug, registered as every backend is: the interpreter with its first
    output wrong."""

    name = "broken"

    def compile(self, module, assignment) -> Executable:
        run = super().compile(module, assignment)

        class Wrong(Executable):
            def __call__(self, *args):
                first, *rest = run(*args)
                return [_wrong(first), *rest]

        return Wrong()


@pytest.fixture
def broken_backend(monkeypatch):
    monkeypatch.setitem(BACKENDS, Broken.name, Broken())


def test_a_wrong_backend_is_reported_with_a_script_that_shows_it(broken_backend, tmp_path):
    printed = io.StringIO()
    code = fuzz.fuzz(4, seed=5, backends=["interpreter", "broken"], jobs=0, kinds=("float", "int"),
                     out=str(tmp_path), stream=printed, progress=io.StringIO())
    text = printed.getvalue()
    assert code == 1
    summary = text.strip().splitlines()[-1]
    assert "interpreter: 0 mismatches, 0 errors; broken: 4 mismatches, 0 errors" in summary
    snippets = re.split(r"\n=+ mismatch: program \d+, backend broken =+\n", text)[1:]
    assert len(snippets) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"mismatch_{i}_broken.py" for i in range(4)]
    for snippet in snippets:
        snippet = snippet.split("\nfuzz: ")[0]  # the last one runs into the summary
        assert "backend='broken'" in snippet and "output 0" in snippet
        status, shown, _ = run_snippet(snippet)  # the broken backend is still in place
        assert status == 1 and "MISMATCH" in shown, shown
        assert re.search(r"output 0 .* MISMATCH", shown)


def test_an_exception_is_reported_as_an_error(monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr("xla_explorer.explore", explode)
    printed = io.StringIO()
    code = fuzz.fuzz(2, seed=1, backends=["interpreter"], jobs=0, kinds=("float", "int"),
                     stream=printed, progress=io.StringIO())
    assert code == 1
    text = printed.getvalue()
    assert "interpreter: 0 mismatches, 2 errors" in text.splitlines()[-1]
    assert "# RuntimeError: kaboom" in text


# ---------------------------------------------------------------------------------------------
# The scenario kinds (tests/fuzz_cases.py): predicates, transcendental, scalars, aliasing,
# retype. Each is a script; these run it in this process as `__main__`, as `python script.py`
# would.

def run_script(text: str) -> tuple[int, str]:
    """Execute a scenario script as a script: (exit status, what it printed)."""
    printed = io.StringIO()
    with redirect_stdout(printed), pytest.raises(SystemExit) as exit_:
        exec(compile(text, "<script>", "exec"), {"__name__": "__main__"})
    return exit_.value.code, printed.getvalue()


def test_the_default_mix_has_every_kind_and_keeps_the_old_plan():
    plan = fuzz.plan_of(25)
    assert plan.count("float") == 15 and plan.count("int") == 5
    assert all(plan.count(k) == 1 for k in SCENARIO_KINDS)
    assert fuzz.plan_of(12, ("float", "int")) == ["float", "float", "float", "int"] * 3
    assert fuzz.plan_of(3, ("retype",)) == ["retype"] * 3
    assert set(fuzz.KINDS) == {"float", "int", *SCENARIO_KINDS}


def test_scenarios_are_drawn_the_same_for_a_seed_and_cover_their_groups():
    first = fuzz.draw_cases(30, seed=4, kinds=SCENARIO_KINDS)
    again = fuzz.draw_cases(30, seed=4, kinds=SCENARIO_KINDS)
    other = fuzz.draw_cases(30, seed=5, kinds=SCENARIO_KINDS)
    assert {c.kind for c in first} == set(SCENARIO_KINDS)
    assert [c.scenario.script("cpu") for c in first] == [c.scenario.script("cpu") for c in again]
    assert [c.scenario.body for c in first] != [c.scenario.body for c in other]
    # The groups in turn: the first of a kind's scenarios each take a function of their own.
    cases = fuzz.draw_cases(GROUPS["transcendental"], seed=0, kinds=("transcendental",))
    names = {c.scenario.title.split(" (")[0] for c in cases}
    assert names == {name for name, _, _ in TRANSCENDENTAL}
    # Different groups draw different values (each group has a seed of its own).
    scalars = fuzz.draw_cases(8, seed=0, kinds=("scalars",))
    assert len({c.scenario.title.split(": ", 1)[1] for c in scalars}) > 1


@pytest.fixture
def judge() -> dict:
    """The judge every scenario script carries (fuzz_cases.PRELUDE), as a namespace."""
    namespace: dict = {"__name__": "judge"}
    exec(PRELUDE, namespace)
    return namespace


F32 = np.float32
TINY32 = float(np.finfo(F32).smallest_subnormal)


@pytest.mark.parametrize("got, want, precision, why", [
    # classes: never inf for a finite value, or the other way round, whatever the tolerance
    (np.array([np.inf], F32), np.array([3.4028196e38], F32), None, "values differ"),
    (np.array([3.4028235e38], F32), np.array([np.inf], F32), None, "values differ"),
    (np.array([np.inf]), np.array([-np.inf]), None, "values differ"),
    (np.array([1.0]), np.array([np.nan]), None, "values differ"),
    (np.array([np.nan]), np.array([1.0]), None, "values differ"),
    # tiny values at their own scale: an absolute tolerance would pass these
    (np.array([0.0], F32), np.array([1e-40], F32), None, "values differ"),
    (np.array([0.0]), np.array([1e-20]), None, "values differ"),
    (np.array([1e-20 * (1 + 1e-6)]), np.array([1e-20]), None, "values differ"),
    # types and structure
    (np.array([1.0], F32), np.array([1.0]), None, "float32[1] where NumPy gives float64[1]"),
    (np.int64(3), 3, None, "where NumPy gives a Python int"),
    (3, np.int64(3), None, "a Python int where NumPy gives"),
    (3, 4, None, "3 where NumPy gives 4"),
    (2**80 - 1, 2**80, None, "where NumPy gives"),
    ((np.float64(1.0),), (np.float64(1.0), np.float64(2.0)), None, "a tuple of 2"),
    (np.array([1, 2], np.int32), np.array([1, 3], np.int32), None, "1 of 2 values differ"),
    # within the tolerance
    (np.array([np.nan, np.inf, -np.inf, 0.0]), np.array([np.nan, np.inf, -np.inf, -0.0]), None,
     None),
    (np.array([5 * TINY32], F32), np.array([3 * TINY32], F32), None, None),  # 2 ulps
    (np.array([1 + 4e-16]), np.array([1.0]), None, None),
    (np.array([1 + 1e-6]), np.array([1.0]), np.float32, None),  # float32 rounding, carried
    (np.array([1 + 1e-6]), np.array([1.0]), None, "values differ"),
    (2**80, 2**80, None, None),
    ({"returned": np.array([1.0]), "b after": np.array([2.0])},
     {"returned": np.array([1.0]), "b after": np.array([3.0])}, None, "b after: 1 of 1"),
])
def test_the_judge_compares_values_as_documented(judge, got, want, precision, why):
    said = judge["difference"](got, want, precision)
    if why is None:
        assert said is None
    else:
        assert said is not None and why in said, said


def test_with_rtol_0_the_judge_allows_only_its_few_ulps(judge):
    """As for the element-wise programs (predicates, transcendental)."""
    difference = judge["difference"]
    assert difference(np.array([1 + 8e-16]), np.array([1.0]), None, 0) is None  # 3.6 ulps
    assert "values differ" in difference(np.array([1 + 2e-15]), np.array([1.0]), None, 0)
    assert difference(np.array([1 + 2e-6]), np.array([1.0]), np.float32, None) is None
    assert "values differ" in difference(np.array([1 + 2e-6]), np.array([1.0]), np.float32, 0)


def test_the_judge_compares_exceptions_too(judge):
    check, clear = judge["check"], judge["CLEAR"]

    def raises(error):
        def call():
            raise error
        return call

    check("both answer", lambda: 1, lambda: 1)
    check("NumPy raises, compiled answers", lambda: 0, raises(OverflowError("too big")))
    check("both raise clear errors", raises(TypeError("no")), raises(OverflowError("too big")))
    check("a refusal", raises(TypeError("unsupported dtype")), lambda: 1, refusals=clear)
    check("accepted", raises(TypeError("traced for int64")), lambda: 1, accepted=(TypeError,))
    check("an unclear error", raises(IndexError("oops")), lambda: 1, refusals=clear)
    check("an unclear error as NumPy raises", raises(IndexError("oops")), raises(ValueError("x")))
    check("a clear error, no refusal allowed", raises(TypeError("no")), lambda: 1)
    check("a wrong value", lambda: np.array([2.0]), lambda: np.array([1.0]))
    check("a false claim", raises(OverflowError("5 is too big (NumPy raises this too)")),
          lambda: 1, refusals=clear)  # an error that says NumPy raises is no refusal
    assert [(s, m.splitlines()[0]) for s, m in judge["FINDINGS"]] == [
        ("mismatch", "NumPy raises, compiled answers"), ("refused", "a refusal"),
        ("error", "an unclear error"), ("error", "an unclear error as NumPy raises"),
        ("error", "a clear error, no refusal allowed"), ("mismatch", "a wrong value"),
        ("mismatch", "a false claim")]


def _wrong(value):
    """A result made surely wrong, its type kept."""
    if isinstance(value, tuple):
        return tuple(_wrong(v) for v in value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1 + abs(value) if np.isfinite(value) else 0.0
    a = np.asarray(value)
    if a.dtype == np.bool_:
        w = ~a
    elif a.dtype.kind == "f":
        w = np.where(np.isfinite(a), a + 1 + np.abs(a), 0).astype(a.dtype)
    else:
        w = a + np.ones((), a.dtype)
    return w if isinstance(value, np.ndarray) else w[()]


@pytest.fixture
def broken_xe(monkeypatch):
    """A backend 'broken' as the scenario scripts call it: `xe.jit` and `xe.explore` on the
    interpreter, with every result made wrong."""
    import xla_explorer as xe

    jit, explore = xe.jit, xe.explore

    def broken_jit(f, *, backend="cpu", **options):
        real = jit(f, backend="interpreter" if backend == "broken" else backend, **options)
        if backend != "broken":
            return real
        # On copies: in-place updates are lost, and arguments that share memory are not refused.
        return lambda *args: _wrong(real(*[a.copy() if isinstance(a, np.ndarray) else a
                                           for a in args]))

    def broken_explore(f, *args, backend="interpreter", **options):
        ex = explore(f, *args, backend="interpreter" if backend == "broken" else backend,
                     **options)
        if backend != "broken":
            return ex

        class Wrong:
            def run(self, *run_args):
                return _wrong(ex.run(*run_args))

        return Wrong()

    monkeypatch.setattr(xe, "jit", broken_jit)
    monkeypatch.setattr(xe, "explore", broken_explore)


@pytest.mark.parametrize("kind", SCENARIO_KINDS)
def test_each_scenario_kind_reports_a_broken_backend_with_a_script_that_shows_it(
        broken_xe, kind, tmp_path):
    printed = io.StringIO()
    code = fuzz.fuzz(6, seed=2, backends=["broken"], jobs=0, kinds=(kind,), out=str(tmp_path),
                     stream=printed, progress=io.StringIO())
    assert code == 1
    summary = printed.getvalue().strip().splitlines()[-1]
    assert summary.startswith(f"fuzz: 6 programs (6 {kind}), seed 2; broken: "), summary
    found = sorted(tmp_path.glob("mismatch_*_broken.py"))
    assert found, printed.getvalue()
    for path in found:
        status, shown = run_script(path.read_text())  # the broken backend is still in place
        assert status == 1 and shown.strip().endswith("MISMATCH"), shown
        assert "MISMATCH: " in shown and "NumPy:" in shown and "compiled:" in shown


@pytest.mark.slow  # a subprocess that compiles
def test_a_scenario_script_runs_on_its_own_and_agrees_with_the_fuzzer(tmp_path):
    case = fuzz.draw_cases(3, seed=1, kinds=("scalars",))[2]
    findings = case.scenario.run("cpu")
    script = tmp_path / "scenario.py"
    script.write_text(case.scenario.script("cpu", "a header line"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(ROOT)}, timeout=300)
    failed = any(status != "refused" for status, _ in findings)
    assert done.returncode == (1 if failed else 0), done.stdout + done.stderr
    verdict = done.stdout.strip().splitlines()[-1]
    assert verdict == "MISMATCH" if failed else verdict.startswith("every call matches NumPy")
    assert done.stdout.count(": call ") == len(findings), done.stdout


def test_a_crashing_case_is_reported_and_the_run_goes_on(monkeypatch):
    """A worker killed in compiled code (here: it exits) fails only the case it was running."""
    # An IPython shell made by an earlier test in this worker leaves its user namespace as
    # `__main__`, a module without `__spec__`, which multiprocessing's spawn cannot read.
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    fine = Scenario("retype", "fine", 'check("1 + 1", lambda: 2, lambda: 1 + 1)\n')
    dies = Scenario("retype", "dies", "import os\nos._exit(70)\n")
    cases = [fuzz.Case(i, "retype", [], [], None, s) for i, s in enumerate([fine, dies, fine])]
    outcomes = list(fuzz._in_workers([(c, ["interpreter"], 0) for c in cases], 1))
    assert [o.index for o in outcomes] == [0, 1, 2]
    assert outcomes[0].findings == [] and outcomes[2].findings == []
    (crash,) = outcomes[1].findings
    assert crash.status == "error" and crash.backend == "interpreter"
    assert crash.message.startswith("crashed") and "os._exit(70)" in crash.snippet


# The defects of issue 22, each as the scenario of its kind that shows it: every backend must
# give NumPy's answer (or, where allowed, refuse with a clear error).
ISSUE_22 = {
    "predicates: isfinite of a product": '''
x = np.array([1.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 3.0, 5e-324])


def f(x):
    return np.where(np.isfinite(x * 2), x, 0.0), np.isfinite(x + x), np.isnan(x * 0)


check("f(x)", lambda: xe.explore(f, x, backend=BACKEND).run(x.copy()), lambda: f(x.copy()))
''',
    "transcendental: float32 sinh and cosh between exp's and their own overflow": '''
x = np.linspace(88.0, 89.5, 61, dtype=np.float32)


def f(x):
    return np.sinh(x), np.sinh(-x), np.cosh(x)


check("f(x)", lambda: xe.explore(f, x, backend=BACKEND).run(x.copy()), lambda: f(x.copy()))
''',
    "scalars: a big Python int through a warm cache": '''
a = np.arange(4, dtype=np.int32)


def f(a, n):
    return a * n


j = xe.jit(f, backend=BACKEND)
check("f(a, 2)", lambda: j(a, 2), lambda: f(a, 2), refusals=CLEAR)
check("f(a, 2**40)", lambda: j(a, 2**40), lambda: f(a, 2**40), refusals=CLEAR)
check("f(a, -2**31)", lambda: j(a, -2**31), lambda: f(a, -2**31), refusals=CLEAR)
''',
    "aliasing: an update in place seen through a view": '''
B = np.arange(5.0)


def f(x, y):
    x += 1
    return y * 1

''' + ALIAS_HELPERS + '''

j = xe.jit(f, backend=BACKEND)
check("f(b, b[1:])", lambda: run(j, lambda b: (b, b[1:])), lambda: run(f, lambda b: (b, b[1:])),
      refusals=CLEAR)
''',
    "retype: an exploration for ints run on floats": '''
x = np.arange(3)
y = np.arange(3) + 0.5


def f(x):
    return x * 2


check("xe.explore(f, x).run(y)", lambda: xe.explore(f, x, backend=BACKEND).run(y),
      lambda: f(y), accepted=(TypeError,))
j = xe.jit(f, backend=BACKEND)
for dtype in (np.int64, np.float64, np.float32, np.int32):
    z = (y * 3).astype(dtype)
    check(f"f(z), z {dtype.__name__}", lambda: j(z), lambda: f(z))
''',
}


@pytest.mark.parametrize("name", ISSUE_22)
def test_the_issue_22_defects_stay_fixed(name):
    scenario = Scenario(name.split(":")[0], name, ISSUE_22[name])
    for backend in BACKENDS:
        bad = [message for status, message in scenario.run(backend) if status != "refused"]
        assert not bad, scenario.script(backend, "\n".join(bad))


@pytest.mark.slow  # a small fuzz run: scenarios on every backend
@pytest.mark.parametrize("examples", [2, pytest.param(5, marks=pytest.mark.deep)])
@pytest.mark.parametrize("kind", SCENARIO_KINDS)
def test_random_scenarios_match_numpy(kind, examples):
    """A few scenarios of each kind on every backend (`make fuzz` runs many)."""

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(STRATEGIES[kind]())
    def agrees(scenario):
        for backend in BACKENDS:
            bad = [message for status, message in scenario.run(backend) if status != "refused"]
            assert not bad, scenario.script(backend, "\n".join(bad))

    agrees()
