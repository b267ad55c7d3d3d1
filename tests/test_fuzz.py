"""The fuzzer (`make fuzz`, tests/fuzz.py) and the programs it prints as NumPy scripts."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from xla_explorer import api

from . import fuzz
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
    cases = fuzz.draw_cases(24, seed=7)
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


def test_a_rendered_program_runs_as_a_script_of_its_own(tmp_path):
    case = next(c for c in fuzz.draw_cases(12, seed=3) if c.kind == "float" and len(c.steps) > 2)
    script = tmp_path / "repro.py"
    script.write_text(render(case.inputs, case.steps, case.n_out, "cpu"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all outputs match" in done.stdout


def test_the_fuzzer_passes_on_a_handful_of_programs(capsys):
    assert fuzz.main(["-n", "8", "--seed", "11"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    summary = out[-1]
    assert summary.startswith("fuzz: 8 programs (6 float, 2 int), seed 11;"), summary
    for backend in api.BACKENDS:
        assert f"{backend}: 0 mismatches, 0 errors" in summary
    assert "=====" not in "\n".join(out)  # nothing found, nothing printed


@pytest.fixture
def broken_backend(monkeypatch):
    """A backend 'broken': the interpreter with its first output wrong."""
    monkeypatch.setattr(api, "BACKENDS", api.BACKENDS + ("broken",))
    run = api.Exploration.run

    def wrong_run(self, *args):
        out = run(self, *args)
        if self.backend != "broken":
            return out
        first = np.asarray(out[0] if isinstance(out, tuple) else out)
        if first.dtype.kind == "f":  # surely different: NaN and inf too, and big values
            wrong = np.where(np.isfinite(first), first + 1 + np.abs(first), 0).astype(first.dtype)
        else:
            wrong = first + 1
        return (wrong,) + out[1:] if isinstance(out, tuple) else wrong

    monkeypatch.setattr(api.Exploration, "run", wrong_run)


def test_a_wrong_backend_is_reported_with_a_script_that_shows_it(broken_backend, tmp_path):
    printed = io.StringIO()
    code = fuzz.fuzz(4, seed=5, backends=["interpreter", "broken"], out=str(tmp_path),
                     stream=printed, progress=io.StringIO())
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
    code = fuzz.fuzz(2, seed=1, backends=["interpreter"], stream=printed, progress=io.StringIO())
    assert code == 1
    text = printed.getvalue()
    assert "interpreter: 0 mismatches, 2 errors" in text.splitlines()[-1]
    assert "# RuntimeError: kaboom" in text
