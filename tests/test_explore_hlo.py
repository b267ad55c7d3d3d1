"""`xe.explore_hlo` on real HLO: what JAX prints and XLA dumps for the benchmark programs and
ten more (tests/data/hlo, written by scripts/make_hlo_data.py), against JAX's own outputs;
inputs made from a seed; what is refused, where, and why.

Every file runs on the interpreter here, and a handful on cpu (each compiles Numba kernels,
about 0.5 s a program); the rest on cpu are deep.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from xla_explorer.api.checking import compare
from xla_explorer.api.hlo_input import explore_hlo, inline_calls
from xla_explorer.errors import HloParseError, UnsupportedOpError
from xla_explorer.ir.parser import parse_hlo

DATA = Path(__file__).parent / "data" / "hlo"
PROGRAMS = sorted(p.name for p in DATA.iterdir() if p.is_dir() and p.name != "unsupported")
UNSUPPORTED = DATA / "unsupported"
# On cpu in the normal suite: two calls inlined (argmax, mean_var's var), integer math,
# slicing and the row fusion of softmax. The rest on cpu are deep.
QUICK_CPU = ("argmax", "concat_slice", "int_math", "mean_var", "softmax")


def hlo_file(program: str, kind: str) -> Path:
    folder = DATA / program
    if kind == "lowered":
        return folder / f"{program}.hlo"
    (dump,) = folder.glob("module_*.before_optimizations.txt")
    return dump


def saved(program: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The inputs JAX ran on and the outputs it gave."""
    with np.load(DATA / program / f"{program}.npz", allow_pickle=False) as z:
        args = [z[k] for k in sorted((k for k in z.files if k.startswith("arg")),
                                     key=lambda k: int(k[3:]))]
        outs = [z[k] for k in sorted((k for k in z.files if k.startswith("out")),
                                     key=lambda k: int(k[3:]))]
    return args, outs


def agrees_with_jax(program: str, kind: str, backend: str) -> None:
    args, want = saved(program)
    ex = explore_hlo(hlo_file(program, kind), *args, backend=backend)
    got = ex.run()
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want)
    for n, (g, w) in enumerate(zip(got, want)):
        check = compare(f"output {n}", g, w)  # float32's tolerance: a few ulps
        assert check.ok, f"{program} ({kind}, {backend}): {check}"


def test_the_data_set_is_the_benchmarks_and_ten_more():
    assert len(PROGRAMS) >= 17
    assert {"sum_xyz", "gelu", "softmax", "layernorm", "dense_relu", "mean_var",
            "chain50"} <= set(PROGRAMS)
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 2_000_000


@pytest.mark.parametrize("kind", ["lowered", "dump"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_every_file_agrees_with_jax_on_the_interpreter(program, kind):
    agrees_with_jax(program, kind, "interpreter")


@pytest.mark.parametrize("program", QUICK_CPU)
def test_files_agree_with_jax_on_cpu(program):
    agrees_with_jax(program, "lowered", "cpu")


@pytest.mark.deep
@pytest.mark.parametrize("kind", ["lowered", "dump"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_every_file_agrees_with_jax_on_cpu(program, kind):
    agrees_with_jax(program, kind, "cpu")


def test_a_dump_file_reads_its_header_and_tables():
    """XLA's dump carries header attributes and stack-frame tables the lowered text lacks;
    both give the same program."""
    dump = hlo_file("softmax", "dump").read_text()
    assert "allow_spmd_sharding_propagation" in dump.split("\n", 1)[0]
    assert "StackFrames" in dump
    lowered = explore_hlo(hlo_file("softmax", "lowered"), backend="interpreter")
    dumped = explore_hlo(hlo_file("softmax", "dump"), backend="interpreter")
    assert dumped.hlo(0) == lowered.hlo(0)


def test_a_path_a_str_path_and_the_text_give_the_same_module():
    path = hlo_file("layernorm", "lowered")
    by_path = explore_hlo(path, backend="interpreter")
    by_str = explore_hlo(str(path), backend="interpreter")
    by_text = explore_hlo(path.read_text(), backend="interpreter")
    assert by_path.source == by_str.source == path and by_text.source is None
    assert by_path.hlo(0, metadata=True) == by_str.hlo(0, metadata=True) \
        == by_text.hlo(0, metadata=True)
    assert by_path.hlo() == by_text.hlo()


def _int_math(a, b):  # scripts/make_hlo_data.py's int_math, in NumPy (floor division and mod)
    return (a * b + 3) // 4, np.abs(a) % 5, np.maximum(a, b) - np.minimum(a, b), a.sum()


def test_inputs_made_from_the_seed_are_reproducible():
    path = hlo_file("int_math", "lowered")
    ex = explore_hlo(path, backend="interpreter")
    again = explore_hlo(path, backend="interpreter", seed=0)
    other = explore_hlo(path, backend="interpreter", seed=1)
    assert ex.seed == 0 and "inputs made from seed 0" in repr(ex)
    assert other.seed == 1 and "inputs made from seed 1" in repr(other)
    for a, b in zip(ex.args, again.args):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(ex.args, other.args))
    # Small integers of the parameters' shapes and type, which the program computes right.
    assert [(a.shape, a.dtype) for a in ex.args] == [((7, 3), np.int32)] * 2
    assert all(np.abs(a).max() <= 5 for a in ex.args)
    for got, want in zip(ex.run(), _int_math(*ex.args)):
        np.testing.assert_array_equal(got, want)
    given = explore_hlo(path, *ex.args, backend="interpreter")
    assert given.seed is None and "seed" not in repr(given)


def test_float_inputs_are_standard_normal_from_default_rng():
    ex = explore_hlo(hlo_file("layernorm", "lowered"), backend="interpreter", seed=7)
    rng = np.random.default_rng(7)
    for a, dims in zip(ex.args, [(8, 16), (16,), (16,)]):
        np.testing.assert_array_equal(a, rng.standard_normal(dims).astype(np.float32))


def test_run_check_and_bench_on_made_inputs_on_cpu():
    ex = explore_hlo(hlo_file("softmax", "lowered"))
    assert ex.backend == "cpu" and ex.fusions
    x = ex.args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(ex.run(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    result = ex.check()
    assert result.ok, str(result)
    bench = ex.bench(repeat=2)
    assert bench is ex.last_bench
    # The explorer's bundle, as for a traced function: stages, kernels, the bench.
    data, _ = ex._repr_mimebundle_()
    assert "application/vnd.xla-explorer.v1+json" in data


def test_a_wrong_compiled_answer_fails_the_check():
    """check compares with the interpreter on stage 0: a run that differs is caught."""
    ex = explore_hlo(hlo_file("gelu", "lowered"), backend="interpreter")
    right = ex.run
    ex.run = lambda *args: right(*args) * np.float32(1.001)  # type: ignore[method-assign]
    assert not ex.check().ok


TWICE = """HloModule twice

double.1 {
  p.1 = f32[4] parameter(0)
  ROOT add.1 = f32[4] add(p.1, p.1)
}

ENTRY main.2 {
  x.1 = f32[4] parameter(0)
  c.1 = f32[4] call(x.1), to_apply=double.1
  ROOT c.2 = f32[4] call(c.1), to_apply=double.1
}
"""


def test_calls_are_inlined_with_unique_names():
    module = inline_calls(parse_hlo(TWICE))
    names = [i.name for i in module.entry.instructions]
    assert "call" not in {i.opcode for i in module.entry.instructions}
    assert len(names) == len(set(names)) and not module.computations
    ex = explore_hlo(TWICE, np.arange(4, dtype=np.float32), backend="interpreter")
    np.testing.assert_array_equal(ex.run(), 4 * np.arange(4, dtype=np.float32))
    assert "call(" in ex.parsed.to_text() and "call(" not in ex.hlo(0)


SHARED = """HloModule shared

add.1 {
  a.1 = f32[] parameter(0)
  b.1 = f32[] parameter(1)
  ROOT s.1 = f32[] add(a.1, b.1)
}

ENTRY main.2 {
  x.1 = f32[4] parameter(0)
  z.1 = f32[] constant(0)
  r.1 = f32[] reduce(x.1, z.1), dimensions={0}, to_apply=add.1
  ROOT c.1 = f32[] call(r.1, r.1), to_apply=add.1
}
"""


def test_a_computation_called_and_reduced_with_stays_for_the_reduce():
    x = np.arange(4, dtype=np.float32)
    ex = explore_hlo(SHARED, x, backend="interpreter")
    assert [c.name for c in ex.stages[0].module.computations] == ["add.1"]
    assert ex.run() == 12 and ex.check().ok


def _defined_on(path_or_text, pattern: str) -> tuple[str, int]:
    """The name and line number of the first instruction whose line matches `pattern`."""
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=", line)
        if m and re.search(pattern, line):
            return m.group(1), n
    raise AssertionError(f"no line matches {pattern}")


@pytest.mark.parametrize("name, pattern, words", [
    ("cond", r" conditional\(", "jnp.where"),
    ("convolution", r" convolution\(", "convolution"),
    ("sharding", r"sharding=", "one device"),
    ("bf16", r"bf16\[", "float32"),
])
@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_what_cannot_run_is_refused_at_its_line(name, pattern, words, backend):
    path = UNSUPPORTED / f"{name}.hlo"
    inst, line = _defined_on(path, pattern)
    with pytest.raises(UnsupportedOpError) as caught:
        explore_hlo(path, backend=backend)
    err = caught.value
    assert err.op == inst and err.source_line == line
    assert f"{inst} " in str(err) and f"line {line}, column " in str(err) and words in str(err)
    column = int(re.search(r"line \d+, column (\d+)", str(err)).group(1))
    text = path.read_text().split("\n")[line - 1]
    assert re.match(pattern.lstrip(" "), text[column - 1:])  # the column points at it
    if name == "bf16":
        assert "bf16" in str(err) and "not supported" in str(err)


def test_what_parses_still_draws():
    """A conditional, a convolution, a while and sharding parse: the graph still draws."""
    from xla_explorer.viz.graphviz import graph

    for name, opcode in [("cond", "conditional"), ("convolution", "convolution"),
                         ("fori_loop", "while"), ("sharding", "custom-call")]:
        module = parse_hlo((UNSUPPORTED / f"{name}.hlo").read_text())
        assert opcode in graph(module).source


def test_jaxs_fori_loop_runs_on_the_interpreter_and_is_refused_on_cpu():
    path = UNSUPPORTED / "fori_loop.hlo"
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    ex = explore_hlo(path, x, backend="interpreter")
    want = x
    for i in range(3):
        want = want * np.float32(2) + np.float32(i)
    np.testing.assert_array_equal(ex.run(), want)
    inst, line = _defined_on(path, r" while\(")
    with pytest.raises(UnsupportedOpError, match=f"(?s)line {line}.*interpreter") as caught:
        explore_hlo(path, x, backend="cpu")
    assert caught.value.op == inst


def test_a_dynamic_dimension_is_refused_at_its_line_and_column():
    text = hlo_file("softmax", "lowered").read_text().replace(
        "f32[8,16]{1,0} parameter(0)", "f32[<=8,16]{1,0} parameter(0)", 1)
    inst, line = _defined_on(text, r"<=8")
    column = text.split("\n")[line - 1].index("f32[<=") + 1
    with pytest.raises(UnsupportedOpError, match=rf"line {line}, column {column} ") as caught:
        explore_hlo(text, backend="interpreter")
    assert caught.value.op == inst and "dynamic" in str(caught.value)


def test_a_parse_error_names_line_and_column():
    text = hlo_file("gelu", "lowered").read_text()
    lines = text.split("\n")
    n = next(i for i, s in enumerate(lines) if " multiply(" in s)
    lines[n] = lines[n].replace(" multiply(", " multiply[", 1)
    with pytest.raises(HloParseError, match=rf"line {n + 1}: .*column \d+"):
        explore_hlo("\n".join(lines), backend="interpreter")


def test_arguments_that_do_not_fit_name_the_parameter():
    args, _ = saved("layernorm")
    with pytest.raises(TypeError, match=r"parameter .* \(line \d+ of layernorm.hlo\)"):
        explore_hlo(hlo_file("layernorm", "lowered"), args[0].astype(np.float64), *args[1:],
                    backend="interpreter")


def _softmax_and_cumsum(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), np.cumsum(x, axis=0)


@pytest.mark.parametrize("stage", [0, "fusion", -1])
def test_our_own_text_at_any_stage_runs_again(stage):
    """What the explorer prints (traced, fused, scheduled) reads back and runs alike."""
    import xla_explorer as xe

    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    ex = xe.explore(_softmax_and_cumsum, x, backend="interpreter")
    again = explore_hlo(ex.hlo(stage, metadata=True), x, backend="interpreter")
    for got, want in zip(again.run(), _softmax_and_cumsum(x.astype(np.float64))):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert again.check().ok


def test_a_while_loop_with_a_known_trip_count_compiles_on_cpu():
    """xe.fori_loop's while says its trip count, so cpu compiles it; only JAX's, which does
    not, is refused there."""
    import xla_explorer as xe

    def loop(x):
        return xe.fori_loop(0, 3, lambda i, v: v * np.float32(2) + np.float32(1), x)

    x = np.linspace(-1, 1, 8, dtype=np.float32)
    text = xe.explore(loop, x, backend="interpreter").hlo(0)
    assert " while(" in text
    ex = explore_hlo(text, x, backend="cpu")
    (got,) = ex.run()  # our root is a tuple, of one output here
    np.testing.assert_array_equal(got, ((x * 2 + 1) * 2 + 1) * 2 + 1)


def test_a_backends_own_refusal_gets_the_line_of_what_it_names():
    """The cpu backend refuses a float16 loop state itself; explore_hlo adds the line."""
    import xla_explorer as xe

    def loop(x):
        return xe.fori_loop(0, 3, lambda i, v: v * np.float16(2), x)

    x = np.linspace(-1, 1, 8, dtype=np.float16)
    text = xe.explore(loop, x, backend="interpreter").hlo(0)
    inst, line = _defined_on(text, r" while\(")
    with pytest.raises(UnsupportedOpError, match=rf"float16.*\(line {line} of the HLO text\)"):
        explore_hlo(text, x, backend="cpu")
