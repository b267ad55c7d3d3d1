"""The CUDA backend's kernels and runtime, under the simulator where there is no GPU: each
kernel shape against NumPy, HLO's semantics at the edges, the launch configuration in the
kernel's source, device arrays in and out, and the error without a GPU or the simulator."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import xla_explorer as xe
from xla_explorer import compiler

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
ROOT = Path(__file__).resolve().parents[2]


def run_cuda(f, *args):
    ex = xe.explore(f, *args, backend="cuda")
    got = ex.run(*[np.copy(a) for a in args])
    return ex, got


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5)


@pytest.fixture
def x(rng):
    return rng.standard_normal((3, 40)).astype(np.float32)


def test_loop_kernel_is_one_thread_per_element_over_a_grid_stride_loop(x):
    ex, got = run_cuda(lambda a: np.tanh(a) * 2 + a, x)
    np.testing.assert_allclose(got, np.tanh(x) * 2 + x, rtol=1e-6, atol=1e-6)
    (src,) = ex.kernels.values()
    assert src.startswith("# launch: 1 x 128 (blocks x threads), loop kernel: one thread per "
                          "element of 120 over a grid-stride loop: 1 block of 128 threads"), src
    assert "for j_" in src and "range(start, 120, step)" in src
    assert ex.executable.program.launches[next(iter(ex.kernels))] == (1, 128)


@pytest.mark.parametrize("fn", [softmax, layernorm])
def test_row_fusion_is_one_block_per_row(fn, x):
    ex, got = run_cuda(fn, x)
    np.testing.assert_allclose(got, fn(x), rtol=2e-6, atol=1e-6)
    assert len(ex.kernels) == 1
    (name, src), = ex.kernels.items()
    assert "one block per row: 3 rows of 40 elements, 64 threads" in src.splitlines()[0]
    assert ex.executable.program.launches[name] == (3, 64)
    assert "shfl_down(" in src and "cuda.shared.array" in src and "cuda.syncthreads()" in src
    # the row is read from global memory by the first pass only: later passes read it from
    # the shared-memory copy the first pass made
    assert src.count("p0[") == 1, src


def test_short_rows_are_a_warp_each_several_to_a_block(rng):
    x = rng.standard_normal((20, 8)).astype(np.float32)
    ex, got = run_cuda(softmax, x)
    np.testing.assert_allclose(got, softmax(x), rtol=2e-6, atol=1e-7)
    (name, src), = ex.kernels.items()
    assert "one warp per row: 20 rows of 8 elements, 8 rows to a block of 256 threads" in src
    assert ex.executable.program.launches[name] == (3, 256)
    assert "cuda.syncthreads()" not in src  # a warp's shuffles need no barrier
    _, (total, arg) = run_cuda(lambda a: (a.sum(axis=1), np.argmax(a, axis=1)), x)
    np.testing.assert_allclose(total, x.sum(axis=1), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(arg, np.argmax(x, axis=1))


def test_full_reduction_spreads_over_blocks_and_the_last_block_finishes(rng):
    x, y, z = (rng.standard_normal(3000).astype(np.float32) for _ in range(3))
    ex, (got,) = run_cuda(lambda a, b, c: (np.sum(a + b * c),), x, y, z)
    want = np.sum(x.astype(np.float64) + y.astype(np.float64) * z)
    assert abs(float(got) - want) <= 1e-6 * np.sum(np.abs(x) + np.abs(y * z))
    (src,) = ex.kernels.values()
    assert "3 blocks of 256 threads" in src.splitlines()[0]
    assert "cuda.atomic.add(counter, 0, 1)" in src and "counter[0] = 0" in src
    # the counter is reset for the next call: a second call gives the same answer
    assert ex.run(x, y, z)[0] == got


def test_one_long_row_read_back_is_a_cooperative_grid(rng):
    x = rng.standard_normal(3000).astype(np.float32)
    ex, (mean, var, centred) = run_cuda(lambda a: (a.mean(), a.var(), a - a.max()), x)
    np.testing.assert_allclose([mean, var], [x.mean(), x.var()], rtol=1e-6)
    np.testing.assert_array_equal(centred, x - x.max())
    (name, src), = ex.kernels.items()
    assert src.startswith("# launch: one per multiprocessor (at most 12) x 256")
    assert src.count("grid.sync()") == 3  # after each reduction's partials: sum, sum, max
    assert f"{name}[cooperative_blocks(12), 256](" in ex.executable.program.source


@pytest.mark.deep  # 20,000 elements: long under the simulator
def test_float32_sums_are_as_accurate_as_numpys(rng):
    x = (rng.random(20000) + 1000).astype(np.float32)
    _, got = run_cuda(np.sum, x)
    exact = np.sum(x.astype(np.float64))
    assert abs(float(got) - exact) <= abs(float(np.sum(x)) - exact) + 1e-3


def test_column_reduction_is_one_thread_per_column(rng):
    x = rng.standard_normal((7, 50)).astype(np.float32)
    ex, got = run_cuda(lambda a: a.mean(axis=0), x)
    np.testing.assert_allclose(got, x.mean(axis=0), rtol=1e-6, atol=1e-7)
    (src,) = [s for s in ex.kernels.values() if "column kernel" in s.splitlines()[0]]
    assert "one thread per result element (50), each looping over the 7" in src.splitlines()[0]


def test_middle_axis_reduction_and_argmax(rng):
    x = rng.standard_normal((3, 5, 4))
    _, got = run_cuda(lambda a: a.max(axis=1), x)
    np.testing.assert_array_equal(got, x.max(axis=1))
    _, got = run_cuda(lambda a: np.argmax(a, axis=1), x)
    np.testing.assert_array_equal(got, np.argmax(x, axis=1))


def test_multi_output_fusion_and_tuple_root(x):
    def f(a):
        return a.sum(axis=1), (a * a).sum(axis=1), a + 1

    ex, got = run_cuda(f, x)
    for g, w in zip(got, f(x)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_hlo_semantics_at_the_edges():
    a = np.array([7, -7, 5, np.iinfo(np.int32).min], np.int32)
    b = np.array([0, 0, -1, -1], np.int32)
    ex = xe.explore(lambda p, q: p // q, a, b, backend="cuda")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ex.run(a, b), xe.explore(lambda p, q: p // q, a, b,
                                                                backend="cpu").run(a, b))
    f = np.array([np.nan, 1e20, -1e20, 3.7, -3.7], np.float32)
    _, got = run_cuda(lambda v: v.astype(np.int32), f)
    np.testing.assert_array_equal(got, [0, 2**31 - 1, -2**31, 3, -3])  # saturating, NaN 0
    m = np.array([[1.0, np.nan, 3.0], [0.0, -1.0, 2.0]])
    _, got = run_cuda(lambda v: (v.max(axis=1), np.maximum(v, 0.5)), m)
    np.testing.assert_array_equal(got[0], [np.nan, 2.0])
    np.testing.assert_array_equal(got[1], np.maximum(m, 0.5))


def test_float16_as_the_cpu_backend_computes_it(rng):
    h = rng.standard_normal((2, 33)).astype(np.float16)
    _, got = run_cuda(lambda v: np.exp(v) * v, h)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, xe.explore(lambda v: np.exp(v) * v, h,
                                                  backend="cpu").run(h))


def test_device_arrays_in_give_device_arrays_out_and_transfers_are_counted(x):
    from numba import cuda

    ex = xe.explore(softmax, x, backend="cuda")
    exe = ex.executable
    host = exe(x)[0]
    assert isinstance(host, np.ndarray)
    assert exe.last_call.to_device_bytes == x.nbytes == exe.last_call.to_host_bytes
    dev = cuda.to_device(x)
    out = exe(dev)[0]
    assert hasattr(out, "copy_to_host") and not isinstance(out, np.ndarray)  # a device array
    assert exe.last_call.to_device_bytes == 0 == exe.last_call.to_host_bytes
    np.testing.assert_array_equal(out.copy_to_host(), host)


@pytest.mark.parametrize("f", [
    lambda x: x * 2, lambda x: x.sum(), lambda x: x.sum(axis=0), lambda x: x.sum(axis=1),
    lambda x: x.mean(axis=0), lambda x: np.exp(x - x.max(axis=1, keepdims=True)),
    lambda x: x.T @ x, lambda x: np.cumsum(x, axis=0)],
    ids=["loop", "sum", "column", "row", "mean", "softmax-part", "product", "cumsum"])
def test_arrays_with_no_elements_give_numpys_results(f):
    """No kernel can be laid out over zero threads: a program with an empty array is computed
    on the host, and a device array in still gives a device array out."""
    from numba import cuda

    x = np.zeros((0, 3), np.float32)
    with np.errstate(all="ignore"):
        want = f(x)
        got = xe.jit(f, backend="cuda")(x)
        on_device = xe.explore(f, x, backend="cuda").run(cuda.to_device(x))
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if want.ndim:
        np.testing.assert_array_equal(on_device.copy_to_host(), want)


def test_a_dump_holds_the_cuda_kernels(x, tmp_path):
    written = xe.explore(softmax, x, backend="cuda").dump(tmp_path)
    kernels = [p for p in written if p.name.endswith(".kernels.py")]
    assert len(kernels) == 1, [p.name for p in written]
    assert "# launch: " in kernels[0].read_text() and "cuda.jit" in kernels[0].read_text()


def test_wrap_around_is_silent_as_on_a_gpu():
    import warnings

    x = np.array([250, 3], np.uint8)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = xe.jit(lambda x: x + np.uint8(10), backend="cuda")(x)
    np.testing.assert_array_equal(got, np.array([4, 13], np.uint8))
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)], seen


def test_jit_on_cuda(x):
    f = xe.jit(lambda a: a * 2 + 1, backend="cuda")
    np.testing.assert_array_equal(f(x), x * 2 + 1)


def test_what_the_cuda_backend_cannot_compile_is_refused_by_name():
    text = """HloModule pairs

add {
  add.a = f32[] parameter(0)
  add.b = f32[] parameter(1)
  ROOT add.r = f32[] add(add.a, add.b)
}

ENTRY main {
  x = f32[8] parameter(0)
  z = f32[] constant(0)
  ROOT pairs = f32[7] reduce-window(x, z), window={size=2}, to_apply=add
}
"""
    module = xe.verify(xe.parse_hlo(text))
    with pytest.raises(xe.CompileError, match="reduce-window only as a scan"):
        compiler.compile(module, "cuda")


def _add_at(a, i, v):
    a = a.copy()
    np.add.at(a, i, v)
    return a


@pytest.mark.parametrize("f", [
    lambda a: np.sort(a, axis=1), lambda a: np.argsort(a, axis=1),
    lambda a: np.cumsum(a, axis=1), lambda a: np.cumsum(a), np.median,
    lambda a: _add_at(a[0], np.array([0, 2, 2, 5]), np.ones(4, np.float32)),
    lambda a: np.sort(a) * 2 + 1,
], ids=["sort", "argsort", "cumsum-rows", "cumsum-flat", "median", "add.at", "sort-epilogue"])
def test_scatters_sorts_and_scans_run_in_one_block(f, x):
    ex, got = run_cuda(f, x)
    np.testing.assert_allclose(got, f(x), rtol=1e-6, atol=1e-6)
    assert any("one-block kernel" in s.splitlines()[0] for s in ex.kernels.values())


@pytest.mark.parametrize("f,shapes", [
    (lambda a, w, b: np.maximum(a @ w + b, 0), [(20, 7), (7, 18), (18,)]),
    (lambda a, w: a @ w.T, [(5, 6), (9, 6)]),
    (np.matmul, [(2, 5, 4), (2, 4, 3)]),
    (lambda a, w: np.tensordot(a, w, axes=2), [(2, 3, 4), (3, 4, 5)]),
])
def test_output_fusion_is_a_tiled_product_with_its_epilogue(f, shapes, rng):
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ex, got = run_cuda(f, *args)
    np.testing.assert_allclose(got, f(*args), rtol=1e-5, atol=1e-5)
    src = next(s for s in ex.kernels.values() if "product kernel" in s.splitlines()[0])
    assert "cuda.shared.array((16, 17)" in src and "tiles of 16x16" in src


def test_xla_cell_magic_on_cuda(x):
    sh = InteractiveShell.instance()
    sh.reset(new_session=False)
    assert sh.run_cell("%reload_ext xla_explorer").success
    sh.user_ns.update(x=x, np=np)
    with capture_output():
        result = sh.run_cell("%%xla --backend cuda --quiet\ny = np.exp(x) + 1\n")
    assert result.success, result.error_in_exec
    np.testing.assert_allclose(sh.user_ns["y"], np.exp(x) + 1, rtol=1e-6)
    # The magic answers with the interpreter only where kernels compile in the background
    # (Backend.tiers): on the simulator, a background compile run beside the next
    # launch failed it ("concurrent simulated kernel not supported").
    run = sh.magics_manager.registry["XlaMagics"].last
    assert run.tier is None and run.exploration.backend == "cuda"
    sh.reset(new_session=False)


def test_tiered_jit_on_cuda_waits_for_its_kernels(x):
    fast = xe.jit(lambda a: np.exp(a) + 1, backend="cuda", tiered=True)
    np.testing.assert_allclose(fast(x), np.exp(x) + 1, rtol=1e-6)
    assert fast.last_ran == "cuda" and not fast.waiting()


@pytest.mark.slow  # a fresh interpreter that imports numba.cuda for real
def test_without_a_gpu_or_the_simulator_the_error_says_how_to_get_either():
    code = textwrap.dedent("""
        import numpy as np, xla_explorer as xe
        try:
            xe.explore(lambda a: a + 1, np.ones(3), backend="cuda")
        except xe.CompileError as e:
            print("ERROR", e)
    """)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120, cwd=ROOT).stdout
    from numba.cuda import is_available  # noqa: F401  (this process: simulator or GPU)
    if "ERROR" not in out:  # this machine has a GPU: the program compiled
        return
    assert "no CUDA GPU is available here" in out
    assert "NUMBA_ENABLE_CUDASIM=1" in out and "xla-explorer[cuda]" in out


def test_bench_times_the_kernels_apart_from_the_transfers(x):
    ex = xe.explore(softmax, x, backend="cuda")
    result = ex.bench(repeat=2)
    assert result is ex.last_bench and result.compiled.median > 0
    assert result.transfer is not None and result.transfer.median > 0
    # device memory: the arena (empty here: one kernel) and the 480-byte output
    assert result.compiled.peak_bytes == ex.executable.arena_bytes + x.nbytes
    text = result.table()
    assert "compiled kernels" in text and "transfers (host<->device)" in text
    assert "simulator" in text or "eager CuPy" in text
    # Its memory figure already counts the arena: held is that figure, not the arena twice.
    assert result.compiled_held_bytes == result.compiled.peak_bytes
    assert result.memory_verdict in text


def test_the_threads_of_a_simulated_block_share_one_shared_array():
    # Numba's simulator made a second array, now and then, for a thread preempted while
    # the first was being made: what that thread staged was lost (issue 39's wrong column
    # of a product). 64 threads asking at once, 200 times: 20 of 200 split before the fix.
    import threading

    from xla_explorer.runtime import cuda_device

    cuda_device.helpers()
    if not cuda_device.simulated():
        pytest.skip("a real GPU: no simulator here")
    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-7)  # a thread switch between any two bytecodes, about
    try:
        for _ in range(200):
            shared, got = FakeCUDAShared(0), [None] * 64
            start = threading.Barrier(64)

            def thread(i):
                start.wait()
                got[i] = shared.array((16, 17), np.float64)

            threads = [threading.Thread(target=thread, args=(i,)) for i in range(64)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert len({id(a) for a in got}) == 1
            assert got[0].shape == (16, 17) and got[0].dtype == np.float64
    finally:
        sys.setswitchinterval(interval)


_BARRIER_KERNELS = """
import numpy as np
from numba import cuda


@cuda.jit
def rotate_twice(x, out):
    buf = cuda.shared.array(64, np.float64)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()  # every write before any read of a neighbour's slot
    v = buf[(t + 1) % 64]
    cuda.syncthreads()  # every read before the slot is written again
    buf[t] = v
    cuda.syncthreads()
    out[t] = buf[(t + 1) % 64]


@cuda.jit
def fails_after_a_barrier(out):
    t = cuda.threadIdx.x
    cuda.syncthreads()
    if t == 5:
        raise ValueError("thread five")
    cuda.syncthreads()
    out[t] = t
"""


def test_a_simulated_block_meets_at_each_barrier_and_a_thread_s_error_reaches_the_caller():
    # runtime/cuda_simulator.py replaces the simulator's polling of a block's threads with a
    # condition they signal: every barrier must still hold them all, and an exception in one
    # thread must still abort the rest and reach the launch, not hang it. (The simulator
    # swaps in its own `cuda` for a kernel's module-level name, hence the namespace.)
    from xla_explorer.runtime import cuda_device

    cuda_device.helpers()
    if not cuda_device.simulated():
        pytest.skip("a real GPU: no simulator here")
    from numba.cuda.simulator import kernel as sim

    assert getattr(sim.BlockManager.run, "xla_explorer_waits", False)
    ns: dict = {}
    exec(compile(_BARRIER_KERNELS, "<barrier kernels>", "exec"), ns)
    x = np.arange(64, dtype=np.float64)
    out = np.zeros(64)
    ns["rotate_twice"][1, 64](x, out)
    np.testing.assert_array_equal(out, np.roll(x, -2))
    with pytest.raises(ValueError, match="tid=\\[5, 0, 0\\].*thread five"):
        ns["fails_after_a_barrier"][1, 32](np.zeros(32))
