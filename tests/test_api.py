"""The public API as the README names it: explore, stages, hlo, run, check, parse_hlo, errors."""
import copy
import re

import numpy as np
import pytest

import xla_explorer as xe


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


@pytest.fixture
def xyz(rng):
    return [rng.standard_normal(1000).astype(np.float32) for _ in range(3)]


def test_sum_xyz_prints_as_hlo_with_recorded_stages(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    text = ex.hlo(metadata=True)
    lines = text.splitlines()
    assert lines[0].startswith("HloModule sum_xyz")
    for opcode in ("parameter(0)", "multiply(", "add(", "constant(0)", "reduce("):
        assert any(opcode in line for line in lines), opcode
    reduce_line = next(line for line in lines if " reduce(" in line)
    assert "dimensions={0}" in reduce_line and "to_apply=add_f32" in reduce_line
    assert "add_f32 {" in text  # the reducer computation is printed before the entry
    assert [s.name for s in ex.stages] == ["trace", "algsimp", "cse", "dce", "roll-loops",
                                           "fusion", "multi-output-fusion", "unused-outputs",
                                           "schedule", "buffer-assignment"]
    for s in ex.stages:
        assert s.seconds >= 0 and isinstance(s.changed, bool)
    # Metadata points at the user's line.
    line = sum_xyz.__code__.co_firstlineno + 1
    assert f'source_line={line}' in reduce_line and 'op_name="sum_xyz/sum"' in reduce_line


def test_run_and_check_against_numpy(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    got = ex.run(*xyz)
    want = sum_xyz(*xyz)
    assert type(got) is type(want)  # a NumPy scalar, as NumPy returns
    np.testing.assert_allclose(got, want, rtol=1e-6)
    result = ex.check(*xyz)
    assert result.ok and len(result.outputs) == 1
    assert result.outputs[0].max_abs_error <= 1e-3


def test_check_reports_a_mismatch(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    ex.function = lambda x, y, z: np.sum(x + y * z) + np.float32(1)  # a different "NumPy"
    result = ex.check(*xyz)
    assert not result.ok and "MISMATCH" in str(result)


def test_hlo_by_stage_name_and_index(xyz):
    ex = xe.explore(lambda x, y, z: x * 1 + y * z, *xyz)
    assert " multiply(x." in ex.hlo("trace") and " multiply(x." not in ex.hlo("algsimp")
    assert ex.hlo("dce") != ex.hlo("fusion")  # one kernel now
    assert ex.hlo("buffer-assignment") == ex.hlo(-1) == ex.hlo("schedule")  # an analysis
    assert ex.stage("algsimp").changed
    assert any("x * 1 -> x" in str(n) for n in ex.stage("algsimp").notes)
    with pytest.raises(KeyError, match="no stage named"):
        ex.hlo("fusion-of-everything")


def test_hlo_leaves_metadata_out_unless_asked(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    line = sum_xyz.__code__.co_firstlineno + 1
    for stage in range(len(ex.stages)):
        plain, full = ex.hlo(stage), ex.hlo(stage, metadata=True)
        assert "metadata={" not in plain and f"source_line={line}" in full
        # The same program: the text without metadata is the full text with it cut out.
        assert plain == re.sub(r", metadata=\{[^}]*\}", "", full)
        assert xe.parse_hlo(plain).to_text() == plain


def test_every_stage_round_trips_through_the_parser(xyz):
    ex = xe.explore(lambda x, y, z: (np.tanh(x) * 2.0 + 0, np.max(y - z)), *xyz)
    for s in ex.stages:
        text = s.module.to_text()
        assert xe.parse_hlo(text).to_text() == text
        xe.verify(xe.parse_hlo(text))


def test_run_rejects_wrong_arguments(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        ex.run(xyz[0])
    with pytest.raises(TypeError, match="shape"):
        ex.run(xyz[0][:10], xyz[1], xyz[2])


@pytest.mark.parametrize("backend", xe.api.BACKENDS)
def test_run_refuses_another_dtype_naming_the_argument(backend):
    ex = xe.explore(lambda x: x * 1.25 + x**2, np.arange(4), backend=backend)
    np.testing.assert_array_equal(ex.run(np.arange(4)), np.arange(4) * 1.25 + np.arange(4)**2)
    with pytest.raises(TypeError) as info:
        ex.run(np.arange(4.0))  # NumPy gives float64 [0, 2.25, 6.5, 12.75]; int64 was traced
    message = str(info.value)
    assert "argument 'x'" in message and "float64" in message and "int64" in message, message
    with pytest.raises(TypeError, match="a Python float"):
        xe.explore(lambda x, n: x * n, np.ones(2), 2, backend=backend).run(np.ones(2), 2.5)


def updates_x_returns_y(x, y):
    x += 1
    return y * 1


def doubles_x_adds_y(x, y):
    x *= 2
    return x + y


@pytest.mark.parametrize("backend", xe.api.BACKENDS)
@pytest.mark.parametrize("f,pick", [(updates_x_returns_y, lambda b: (b, b[1:])),
                                    (doubles_x_adds_y, lambda b: (b, b)),
                                    (updates_x_returns_y, lambda b: (b[::2], b))],
                         ids=["view", "same", "strided"])
def test_inputs_that_share_memory_with_an_updated_one_are_refused(backend, f, pick):
    b = np.arange(5.0)
    j = xe.jit(f, backend=backend)
    with pytest.raises(ValueError, match="shares memory") as info:
        j(*pick(b))
    assert isinstance(info.value, xe.TraceError) and info.value.source_line
    np.testing.assert_array_equal(b, np.arange(5.0))  # nothing was written
    x, y = np.arange(5.0), np.arange(5.0)  # separate arrays still compile and run
    want_x, want = x.copy(), f(x.copy(), y.copy())
    f(want_x, y.copy())
    np.testing.assert_array_equal(j(x, y), want)
    np.testing.assert_array_equal(x, want_x)


@pytest.mark.parametrize("backend", xe.api.BACKENDS)
def test_updating_a_read_only_input_is_refused_at_its_line(backend):
    def f(x):
        x += 1
        return x
    ro = np.ones(3)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        f(ro)  # NumPy refuses it
    with pytest.raises(ValueError, match="read-only") as info:
        xe.jit(f, backend=backend)(ro)
    assert info.value.source_line == f.__code__.co_firstlineno + 1


def test_nested_jit_joins_the_outer_trace():
    inner = xe.jit(lambda x: x + 1)
    outer = xe.jit(lambda x: inner(x) * 2)
    np.testing.assert_array_equal(outer(np.ones(3)), np.full(3, 4.0))
    assert inner.cache_info().misses == 0  # traced into outer, not compiled alone

    def explores(x):
        return xe.explore(lambda y: y, x).run(x)
    with pytest.raises(xe.TraceError, match="nested tracing is not supported"):
        xe.jit(explores)(np.ones(3))


def test_unknown_backend_is_refused(xyz):
    with pytest.raises(ValueError, match="interpreter"):
        xe.explore(sum_xyz, *xyz, backend="tpu")


def test_errors_are_compile_errors():
    assert issubclass(xe.UnsupportedOpError, xe.CompileError)
    e = xe.CompileError("np.foo is not supported", op="np.foo", source_file=__file__, source_line=1)
    assert e.op == "np.foo" and e.source_line == 1 and __file__ in str(e)


def test_check_asks_float64_when_compiled_and_numpy_disagree(monkeypatch):
    # float32 (x + 1e8) - 1e8 keeps x only to a multiple of 8. A compiled result nearer the
    # float64 answer than NumPy's is right; one farther away stays a mismatch.
    def f(x):
        return (x + np.float32(1e8)) - np.float32(1e8)

    x = np.linspace(-50, 50, 101, dtype=np.float32)
    ex = xe.explore(f, x)
    monkeypatch.setattr(ex, "run", lambda *a: x.copy())
    (better,) = ex.check(x).outputs
    assert better.ok and "float64" in better.note, str(better)
    monkeypatch.setattr(ex, "run", lambda *a: f(x) + np.float32(8))
    (worse,) = ex.check(x).outputs
    assert not worse.ok and not worse.note


SCALE = np.array([1.0, 2.0, 3.0])


def scaled(x):
    return x * SCALE


def test_check_explains_a_global_frozen_at_trace_time():
    global SCALE
    j = xe.jit(scaled)
    x = np.ones(3)
    np.testing.assert_array_equal(j(x), [1.0, 2.0, 3.0])
    saved, SCALE = SCALE, np.array([-1.0, -1.0, -1.0])
    try:
        np.testing.assert_array_equal(j(x), [1.0, 2.0, 3.0])  # frozen, as in jax.jit
        result = j.explore(x).check(x)
        assert not result.ok
        assert "'SCALE' changed since scaled was traced" in str(result)
        assert xe.jit(scaled)(x).tolist() == [-1.0, -1.0, -1.0]  # a new trace reads it anew
    finally:
        SCALE = saved
    assert j.explore(x).check(x).ok and not j.explore(x).check(x).note


# -- arguments as NumPy has them: subclasses, NumPy scalars, keywords ---------------------------


def times(a, b):
    return a * b


def masked_sum(x):
    return x.sum()


@pytest.mark.parametrize("f,make,fix", [
    (times, lambda: (np.matrix([[1.0, 2.0], [3.0, 4.0]]), np.matrix([[0.0, 1.0], [1.0, 0.0]])),
     "np.asarray(a)"),
    (masked_sum, lambda: (np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]),), "x.filled("),
], ids=["matrix", "masked"])
@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_array_subclasses_are_refused_naming_the_argument_and_its_class(f, make, fix):
    # NumPy gives np.matrix's * a matrix product and a masked sum 4.0: a plain array's answer
    # would be silently wrong, so every way in refuses them, the cached call too.
    args = make()
    plain = [np.asarray(a) for a in args]
    name = f.__code__.co_varnames[0]
    cls = type(args[0])
    j = xe.jit(f)
    j(*plain)  # the plain arrays' program is cached: the subclass must not reach it
    calls = [lambda: xe.jit(f)(*args), lambda: j(*args), lambda: xe.explore(f, *args),
             lambda: xe.explore(f, *plain).run(*args)]
    for call in calls:
        with pytest.raises(TypeError) as info:
            call()
        err = info.value
        assert isinstance(err, xe.XlaExplorerError)
        message = str(err)
        assert f"argument {name!r} is a {cls.__module__}.{cls.__qualname__}" in message
        assert fix in message, message
        assert err.source_file == __file__ and err.source_line == call.__code__.co_firstlineno
    assert j.cache_info().hits == 0  # nothing ran the plain program


def test_a_numpy_scalar_and_a_0d_array_get_programs_of_their_own():
    def same(s):
        return s

    j = xe.jit(same)
    scalar, zero_d = j(np.float64(2.5)), j(np.array(2.5))
    assert type(scalar) is np.float64 and scalar == 2.5  # as NumPy returns each
    assert type(zero_d) is np.ndarray and zero_d.shape == () and zero_d == 2.5
    assert type(j(np.float64(3.5))) is np.float64 and j(np.float64(3.5)) == 3.5
    info = j.cache_info()
    assert info.misses == 2 and info.signatures == ((((), "np.float64"),), (((), "<f8"),))
    with pytest.raises(TypeError, match=r"argument 's' is an array of shape \(\) .* traced for "
                                        r"a NumPy scalar \(np.float64\)"):
        xe.explore(same, np.float64(1.0)).run(np.array(1.0))


@pytest.mark.parametrize("f", [
    lambda s: s.copy(), lambda s: s * 2, lambda s: np.sqrt(s), lambda s: s.sum(),
    lambda s: s.astype(np.float32), lambda s: -s, lambda s: s, lambda s: np.copy(s),
], ids=["copy", "times2", "sqrt", "sum", "astype", "neg", "itself", "np.copy"])
@pytest.mark.parametrize("arg", [np.float64(2.5), np.float32(2.5), np.int64(3), np.array(2.5)],
                         ids=["float64", "float32", "int64", "0-d"])
def test_numpy_scalar_arguments_give_numpys_output_forms(f, arg):
    j = xe.jit(f)
    j(np.array(arg))  # a 0-d array first: the scalar must not get its program
    want, got = f(copy.deepcopy(arg)), j(arg)
    assert type(got) is type(want), (got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype and got == want


def scaled_shifted(x, scale=2.0, bias=0.0):
    return x * scale + bias


def sums(x, *, axis=0, shift=0.0):
    return x.sum(axis=axis) + shift


def test_keyword_arguments_are_bound_as_jax_jit_takes_them():
    x = np.arange(6.0).reshape(2, 3)
    j = xe.jit(scaled_shifted)
    np.testing.assert_array_equal(j(x, scale=3.0), scaled_shifted(x, scale=3.0))
    np.testing.assert_array_equal(j(x, 3.0), scaled_shifted(x, 3.0))
    assert j.cache_info().misses == 1  # a keyword that is a position shares its program
    np.testing.assert_array_equal(j(x, bias=1.0), scaled_shifted(x, bias=1.0))  # scale's default
    np.testing.assert_array_equal(j(x, bias=5.0, scale=-1.0),
                                  scaled_shifted(x, scale=-1.0, bias=5.0))
    np.testing.assert_array_equal(j(scale=4.0, x=x), scaled_shifted(x, 4.0))
    k = xe.jit(sums)  # keyword-only parameters
    for kwargs in ({}, {"axis": 1}, {"axis": 1, "shift": 2.5}, {"shift": 1.0}, {"axis": 0}):
        np.testing.assert_array_equal(k(x, **kwargs), sums(x, **kwargs))
    assert k.explore(x, axis=1, shift=2.5).check(x, 1, 2.5).ok
    np.testing.assert_array_equal(xe.jit(lambda x, **kw: x * kw["s"])(x, s=4.0), x * 4.0)
    with pytest.raises(TypeError, match="scaled_shifted.*unexpected keyword argument 'scal'"):
        j(x, scal=3.0)


def test_numpy_scalar_types_of_a_python_number_argument_cast_its_value():
    x32, xi = np.ones(3, np.float32), np.arange(3, dtype=np.int32)
    for f, x in [(lambda x, s: x * np.float32(s), x32), (lambda x, s: x + np.int32(s), xi),
                 (lambda x, s: x * np.float64(s), x32), (lambda x, s: x + np.float16(s) * 0, x32)]:
        j = xe.jit(f)
        for s in (0.5, 2.75, 0.5, 3):
            want, got = f(x, s), j(x, s)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


# A softmax as JAX prints it, with no Python function behind it.
SOFTMAX_HLO = """HloModule softmax, entry_computation_layout={(f32[4,8])->f32[4,8]}

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

add_f32 {
  c = f32[] parameter(0)
  d = f32[] parameter(1)
  ROOT s = f32[] add(c, d)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  bmx = f32[4,8] broadcast(mx), dimensions={0}
  shifted = f32[4,8] subtract(x, bmx)
  e = f32[4,8] exponential(shifted)
  zero = f32[] constant(0)
  total = f32[4] reduce(e, zero), dimensions={1}, to_apply=add_f32
  btotal = f32[4,8] broadcast(total), dimensions={0}
  ROOT out = f32[4,8] divide(e, btotal)
}
"""


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_a_module_with_no_function_is_explored(backend, rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    ex = xe.Exploration.from_module(xe.parse_hlo(SOFTMAX_HLO), backend=backend, args=[x])
    assert ex.function is None and ex.backend == backend
    np.testing.assert_allclose(ex.run(), numpy_softmax(x), rtol=1e-5, atol=1e-7)
    y = rng.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(ex.run(y), numpy_softmax(y), rtol=1e-5, atol=1e-7)
    assert ex.check(y).ok  # against the module run op by op by the interpreter
    # The record every viewer reads is there without a trace.
    assert ex.fusions and ex.buffers is not None and ex.decisions
    assert ex.traffic.to_dict() and "fusion" in ex.hlo()
    assert "application/vnd.xla-explorer.v1+json" in ex._repr_mimebundle_()
    with pytest.raises(TypeError, match="parameter x"):
        ex.run(np.ones((4, 4), np.float32))


def test_a_module_check_sees_a_wrong_answer(rng, monkeypatch):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    ex = xe.Exploration.from_module(xe.parse_hlo(SOFTMAX_HLO), args=[x])
    monkeypatch.setattr(ex, "run", lambda *a: numpy_softmax(x) + np.float32(1e-3))
    assert not ex.check().ok


def test_a_module_root_tuple_runs_to_a_tuple():
    text = """HloModule pair

ENTRY main {
  x = f64[3] parameter(0)
  y = f64[3] parameter(1)
  s = f64[3] add(x, y)
  p = f64[3] multiply(x, y)
  ROOT t = (f64[3], f64[3]) tuple(s, p)
}
"""
    x, y = np.arange(3.0), np.array([2.0, -1.0, 0.5])
    got = xe.Exploration.from_module(xe.parse_hlo(text), backend="cpu").run(x, y)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_array_equal(got[0], x + y)
    np.testing.assert_array_equal(got[1], x * y)


def test_bench_counts_the_arena_the_compiled_program_holds(monkeypatch):
    from xla_explorer.codegen import packing

    rng = np.random.default_rng(0)
    x, w = rng.random((4, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    # A small product whose packed copy of w (256 KiB) is too deep for a stack bound of 16
    # KiB: scratch in the arena, held between calls, and more than eager NumPy ever holds. A
    # chart of the call alone said "less".
    monkeypatch.setattr(packing, "STACK_B_BYTES", 16 * 1024)
    ex = xe.explore(lambda x, w: np.maximum(x @ w, 0), x, w, backend="cpu")
    b = ex.bench(repeat=3)
    assert b.arena_bytes == ex.executable.arena.nbytes >= w.nbytes
    assert b.compiled_held_bytes == b.arena_bytes + b.compiled.peak_bytes
    assert b.compiled_held_bytes > b.eager.peak_bytes
    assert b.memory_verdict.startswith("compiled holds more memory than eager NumPy")
    # Softmax keeps nothing between calls, and eager writes every temporary.
    x = rng.random((512, 512), dtype=np.float32)

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    b = xe.explore(softmax, x, backend="cpu").bench(repeat=3)
    assert b.compiled_held_bytes < b.eager.peak_bytes
    assert b.memory_verdict.endswith("less memory than eager NumPy")


def test_a_bench_whose_timings_spread_wide_says_so_everywhere():
    from xla_explorer.runtime.bench import BenchResult, Timing
    from xla_explorer.viz.html import fragment
    from xla_explorer.viz.mime import bench_dict

    steady = Timing(1.0e-3, 0.95e-3, 1.05e-3, 1000)  # IQR 10% of the median
    busy = Timing(1.0e-3, 0.8e-3, 1.4e-3, 1000)  # 60%
    quiet = BenchResult("f", steady, steady, 20, 0, 0, None)
    assert quiet.spread_note == "" and "warning" not in quiet.table()
    noisy = BenchResult("f", steady, busy, 20, 0, 0, None)
    assert noisy.spread_note.startswith("the timings spread wide (compiled's by 60% of its "
                                        "median)")
    assert f"warning: {noisy.spread_note}" in noisy.table()
    assert bench_dict(noisy)["spread_note"] == noisy.spread_note
    assert bench_dict(quiet)["spread_note"] == ""
    both = BenchResult("f", busy, busy, 20, 0, 0, None)
    assert "(eager NumPy's by 60% of its median and compiled's by 60%" in both.spread_note
    ex = xe.explore(lambda x: x * 2, np.ones(4, np.float32), backend="cpu")
    assert "Warning: the timings spread wide" in fragment(ex, noisy)
