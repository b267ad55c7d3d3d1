"""The Numba CPU backend: generated kernels run the fused programs and agree with NumPy."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import xla_explorer as xe
from xla_explorer.api.checking import judge

from ..test_fusion_programs import PROGRAMS
from ..test_random_programs import build, describe, programs


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    # One cache directory for the whole session: compiled kernels are shared between tests.
    root = tmp_path_factory.getbasetemp() / "kernels"
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(root))
    return root


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("program, shapes, kinds", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_fused_programs_on_the_cpu_match_numpy(rng, program, shapes, kinds):
    args = [f32(rng, *s) for s in shapes]
    ex = xe.explore(program, *args, backend="cpu")
    check = ex.check()
    assert check.ok, str(check)
    # One generated function per kernel, named after it, commented with its HLO.
    names = [xe.api.kernels_of(ex.module)[0].name.replace(".", "_")]
    assert list(ex.kernels) == names
    (source,) = ex.kernels.values()
    assert f"def {names[0]}(" in source and "# " in source


def test_kernels_are_real_files_and_the_driver_runs_them_in_order(rng, kernel_cache):
    def program(x, w):
        h = np.tanh(x) @ w
        return h.sum(axis=0), np.maximum(h, 0)

    ex = xe.explore(program, f32(rng, 16, 8), f32(rng, 8, 4), backend="cpu")
    path = ex.executable.path
    assert path.parent == kernel_cache and path.suffix == ".py"
    text = path.read_text()
    calls = [line.strip().split("(")[0] for line in text.split("def run(")[1].splitlines()
             if line.startswith("    ") and not line.strip().startswith(("#", "t_"))]
    assert calls == list(ex.kernels)  # every kernel, in schedule order
    assert ex.check()


def test_outputs_are_fresh_arrays_not_views_of_the_arena(rng):
    def program(x):
        e = np.exp(x)
        return e @ x.T, e.sum()

    x = f32(rng, 8, 8)
    ex = xe.explore(program, x, backend="cpu")
    assert ex.buffers.peak_bytes > 0  # there is an arena to alias
    first = ex.run(x)
    second = ex.run(x)
    for a, b in zip(first, second):
        assert not np.shares_memory(a, ex.executable.arena)
        assert a is not b
    np.testing.assert_array_equal(first[0], second[0])


def test_the_arena_starts_on_a_cache_line(rng):
    from xla_explorer.codegen.cpu import CACHE_LINE

    # The arena holds the first product (32 KiB), which the second reads.
    x, w = f32(rng, 64, 128), f32(rng, 128, 128)
    product = xe.explore(lambda x, w: (x @ w) @ w, x, w, backend="cpu")
    assert product.executable.arena.size > 0
    assert product.executable.arena.ctypes.data % CACHE_LINE == 0
    np.testing.assert_allclose(product.run(x, w), (x @ w) @ w, rtol=1e-4, atol=1e-3)


def test_jit_compiles_once_per_signature(rng):
    calls = []

    def f(x, y):
        calls.append(1)  # runs only while tracing
        return np.tanh(x) * y + 1

    fast = xe.jit(f)
    x, y = f32(rng, 100), f32(rng, 100)
    np.testing.assert_allclose(fast(x, y), f(x, y), rtol=2e-5, atol=1e-6)
    fast(x, y)
    fast(x + 1, y)
    assert fast.cache_info().misses == 1 and fast.cache_info().hits == 2
    fast(f32(rng, 7), f32(rng, 7))  # a new shape compiles a new program, as XLA does
    fast(x.astype(np.float64), y.astype(np.float64))
    info = fast.cache_info()
    assert info.misses == 3 and len(info.signatures) == 3
    assert ((100,), "<f8") in [s[0] for s in info.signatures]


def test_jit_is_must_compile(rng):
    @xe.jit
    def f(x):
        return np.unique(x) * 2

    with pytest.raises(xe.CompileError) as err:
        f(np.array([3.0, 1.0, 3.0]))
    message = str(err.value)
    assert "np.unique is not compilable" in message and "np.unique(x) * 2" in message
    assert "autocluster" in message  # says what to do instead


def test_in_place_updates_reach_the_caller(rng):
    def f(x):
        x += 1
        return x * 2

    x = f32(rng, 5)
    want_x = x + 1
    out = xe.jit(f)(x)
    np.testing.assert_allclose(x, want_x)
    np.testing.assert_allclose(out, want_x * 2)


def _assert_random_program_matches_numpy(case):
    inputs, steps, n_out = case
    program = build(steps, n_out)
    with np.errstate(all="ignore"):
        want = program(*[x.copy() for x in inputs])
        ex = xe.explore(program, *inputs, backend="cpu")
        got = ex.run(*[x.copy() for x in inputs])
    precision = np.float32 if any(x.dtype == np.float32 for x in inputs) else None
    # As `ex.check` and `make fuzz` judge: an output outside the tolerance is right when it is
    # as near the float64 result as NumPy's (a float16 chain NumPy rounds more often).
    for check in judge(program, inputs, list(got), list(want), precision):
        assert check.ok, f"{describe(steps)}\n{check}\n" + "\n".join(ex.kernels.values())


_RANDOM = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.data_too_large])


@pytest.mark.slow  # each program compiled
@settings(max_examples=6, **_RANDOM)
@given(programs())
def test_random_programs_on_the_cpu_match_numpy(case):
    _assert_random_program_matches_numpy(case)


@pytest.mark.deep
@settings(max_examples=200, **_RANDOM)
@given(programs())
def test_many_random_programs_on_the_cpu_match_numpy(case):
    _assert_random_program_matches_numpy(case)


SECOND_PROCESS = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core.registry import CPUDispatcher
    import xla_explorer as xe

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def centre(x):  # two kernels, so a compiled driver
        m = x.mean(axis=0)
        return x - m, m

    x = np.linspace(-3, 3, 64 * 32, dtype=np.float32).reshape(64, 32)
    stats = {}
    for f in (softmax, centre):
        ex = xe.explore(f, x, backend="cpu")
        out, want = ex.run(x), f(x)
        ex.run(x)  # the second call compiles the driver
        want = want if isinstance(want, tuple) else (want,)
        # The driver's file and the files of the kernels it loads (each a file of its own).
        jitted = [v for v in vars(ex.executable._py).values() if isinstance(v, CPUDispatcher)
                  and v.py_func.__module__.startswith("xla_explorer_kernels.")]
        stats[f.__name__] = {
            "kernels": len(ex.kernels), "dispatchers": len(jitted),
            "hits": sum(len(d.stats.cache_hits) for d in jitted),
            "misses": sum(len(d.stats.cache_misses) for d in jitted),
            "ok": all(np.allclose(o, w, rtol=1e-5) for o, w in zip(out, want))}
    print(json.dumps(stats))
""")


@pytest.mark.slow  # two subprocesses that compile
def test_a_second_process_loads_the_kernels_from_the_disk_cache(tmp_path):
    env = dict(os.environ, XLA_EXPLORER_CACHE=str(tmp_path / "cache"))
    first, second = (json.loads(subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS], env=env, capture_output=True, text=True,
        check=True, timeout=300).stdout.strip().splitlines()[-1]) for _ in range(2))
    # softmax is one kernel called straight from Python; centre has two and a driver.
    assert first["softmax"]["kernels"] == first["softmax"]["dispatchers"] == 1
    assert first["centre"]["kernels"] == 2 and first["centre"]["dispatchers"] == 3
    for name in ("softmax", "centre"):
        assert first[name]["ok"] and second[name]["ok"]
        # The first process compiles every kernel and the driver; the second compiles
        # nothing (a driver's machine code, its kernels linked in, comes from disk at once).
        assert first[name]["misses"] == first[name]["dispatchers"] and first[name]["hits"] == 0
        assert second[name]["misses"] == 0 and second[name]["hits"] >= 1


def test_compile_seconds_count_what_numba_compiled_in_the_first_call(rng):
    from xla_explorer.backends import BACKENDS

    def centre(x):  # two kernels and a driver
        m = x.mean(axis=0)
        return x - m, m

    x = f32(rng, 48, 40)
    ex = xe.explore(centre, x, backend="cpu")
    exe = ex.executable
    assert exe.compile_seconds is None  # nothing compiled before the first call
    ex.run(x)
    assert exe.compile_seconds > 0
    kernels = exe.compile_seconds
    ex.run(x)  # the second call compiles the driver, and counts it
    assert exe.compile_seconds > kernels
    # A second executable of the same module shares the generated file and Numba's compiled
    # driver in this process: its first call compiles nothing and counts nothing, though it
    # runs (and its outputs are right).
    again = BACKENDS["cpu"].compile(ex.module, ex.buffers)
    out = again(x)
    assert again.compile_seconds == 0.0
    np.testing.assert_allclose(out[1], x.mean(axis=0), rtol=1e-6)


def test_the_first_call_runs_the_kernels_from_python_and_the_second_the_compiled_driver(rng):
    def steps(x, y):  # three kernels with temporaries between them
        s = np.exp(x @ y)
        t = s / s.sum(axis=1, keepdims=True)
        return t @ y.T + x
    x, y = f32(rng, 40, 24), f32(rng, 24, 40)
    exe = xe.explore(steps, x, y, backend="cpu").executable
    assert exe.first_path is not None and exe.first_path.name == exe.program.first_stem + ".py"
    assert "@njit" not in exe.first_path.read_text().split("def run")[0].splitlines()[-1]
    for call in range(3):
        np.testing.assert_allclose(exe(x, y)[0], steps(x, y), rtol=2e-5, atol=1e-6)
        # Numba has compiled the compiled driver from the second call on, and only then.
        assert bool(exe.entry.signatures) == (call > 0), call


def test_compile_driver_compiles_the_driver_before_the_second_call_needs_it(rng):
    def steps(x, y):  # three kernels, and a driver, with an op no other test's driver has
        s = np.tanh(x @ y) * np.float32(1.5)
        t = s - s.max(axis=0)
        return t @ y.T - x, t.min(axis=1)
    x, y = f32(rng, 36, 20), f32(rng, 20, 28)
    exe = xe.explore(steps, x, y, backend="cpu").executable
    assert exe.compile_driver() is None  # nothing to compile before the first call
    exe(x, y)
    assert not exe.entry.signatures
    assert exe.compile_driver() > 0
    assert exe.entry.signatures and exe.compile_driver() is None  # once
    # The second call runs the compiled driver and compiles nothing more.
    counted = exe.compile_seconds
    x2 = f32(rng, 36, 20)
    got = exe(x2, y)
    assert exe.compile_seconds == counted and len(exe.entry.signatures) == 1
    want = steps(x2, y)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=2e-5, atol=1e-6)


def test_bench_measures_both_and_a_one_kernel_program_allocates_only_its_outputs(rng):
    from matplotlib.figure import Figure

    def layernorm(x):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-5)

    x = f32(rng, 256, 128)
    ex = xe.explore(layernorm, x, backend="cpu")
    assert len(ex.fusions) == 1
    result = ex.bench(x, repeat=3)
    assert result.eager.median > 0 and result.compiled.median > 0 and result.repeat == 3
    # tracemalloc sees NumPy's allocations: the compiled call makes its output and nothing
    # else (no temporaries, no arena); eager NumPy makes several full-size temporaries.
    assert result.arena_bytes == 0 and result.predicted_peak_bytes == x.nbytes
    assert x.nbytes <= result.compiled.peak_bytes < x.nbytes + 4096
    assert result.eager.peak_bytes >= 2 * x.nbytes
    assert "eager NumPy" in result.table() and "speed-up" in result.table()
    assert isinstance(result.plot(), Figure)


def test_strided_reversed_transposed_and_empty_inputs(rng):
    f = xe.jit(lambda x, y: np.tanh(x) * y + x.sum())
    a = f32(rng, 4, 6)
    for x in (a[:, ::2], a[::-1], a.T, np.asfortranarray(a), np.zeros((0, 3), np.float32)):
        y = np.ones_like(x)
        np.testing.assert_allclose(f(x, y), np.tanh(x) * y + x.sum(), rtol=2e-5, atol=1e-6)


def test_nan_inf_and_integer_wrap_as_numpy():
    x = np.array([np.nan, np.inf, 0, -np.inf, 1], np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(xe.jit(lambda x: np.exp(x) / x)(x), np.exp(x) / x,
                                   rtol=2e-7)  # NaN where NumPy's is, inf and -0 too
    i = np.array([1, 2, -5], np.int32)
    np.testing.assert_array_equal(xe.jit(lambda i: i + np.int32(2**31 - 1))(i),
                                  i + np.int32(2**31 - 1))


def test_bad_arguments_are_type_errors_that_say_what_was_expected(rng):
    f = xe.jit(lambda x, y: x + y)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        f(f32(rng, 3))
    with pytest.raises(TypeError, match="is a str; expected a NumPy array"):
        f("x", f32(rng, 3))


def test_a_numba_failure_is_a_compile_error_naming_the_generated_line_and_its_hlo(rng, monkeypatch):
    from xla_explorer.codegen import exprs

    real = exprs.scalar_expr

    def broken(inst, operands):  # a code generator bug: a call Numba cannot type
        text = real(inst, operands)
        return f"undefined_helper({text})" if inst.opcode == "tanh" else text

    monkeypatch.setattr(exprs, "scalar_expr", broken)
    ex = xe.explore(lambda x: np.tanh(x) + 1, f32(rng, 7), backend="cpu")
    with pytest.raises(xe.CompileError) as err:
        ex.run(f32(rng, 7))
    message = str(err.value)
    assert "NameError: name 'undefined_helper' is not defined" in message
    # The generated line that uses the unknown name, and the HLO instruction it computes.
    assert "generated line" in message and "undefined_helper(tanh_f32(" in message
    assert re.search(r"from HLO: tanh\.\d+ = f32\[7\] tanh\(", message)
    # ...in the generated file that holds it: the kernel's own.
    (holding,) = [p for p in ex.executable.files if "undefined_helper" in p.read_text()]
    assert f"the generated source is {holding}" in message


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("shapes", [((40, 30), (30,)), ((30,), (30, 20)), ((50,), (50,)),
                                    ((900, 700), (700,))])  # the last on the threads
def test_a_vector_product_is_one_dot_read_as_a_matrix_and_answers_as_numpy(rng, dtype,
                                                                          shapes):
    a, b = ((rng.standard_normal(s) * 3).astype(dtype) for s in shapes)
    ex = xe.explore(lambda a, b: a @ b + a.sum(), a, b, backend="cpu")
    # As jax.numpy writes it: no reshape of the vector to a matrix, which was a copy kernel.
    assert "reshape(" not in ex.hlo(0) and " dot(" in ex.hlo(0)
    source = "\n".join(ex.kernels.values())
    assert "as_matrix(" in source and ".reshape(" not in source
    want = a @ b + a.sum()
    np.testing.assert_allclose(ex.run(a, b), want, rtol=1e-4 if dtype == np.float32 else 0)
