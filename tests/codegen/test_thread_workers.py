"""codegen/cpu/outline.py and launch.py: a kernel's parallel loop cut out into a thread
worker, compiled serially and run on the threads by one launcher compiled once.

The thresholds are lowered so that small arrays take the parallel path; every test compares
with NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

import xla_explorer as xe
from xla_explorer.codegen.cpu.launch import put, thread_workers
from xla_explorer.codegen.cpu.outline import outline, runs_on_threads

F32 = np.float32


@pytest.fixture(autouse=True)
def small_parallel_loops(tmp_path_factory, monkeypatch, codegen_options):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))
    codegen_options(parallel_threshold=4096, parallel_threshold_expensive=4096,
                    gemm_parallel_macs=1 << 16)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


PROGRAMS = {
    "softmax rows": (softmax, [(96, 256)]),
    "a sum read by the next loop": (lambda v: v - v.mean(), [(3 * 4096 + 5,)]),
    "std and argmax": (lambda v: (v.std(), v.argmax()), [(20001,)]),
    "a product and its epilogue": (lambda x, w: np.tanh(x @ w + F32(1)), [(64, 256), (256, 96)]),
    "a transposed product": (lambda x, w: x.T @ w, [(256, 64), (256, 96)]),
    "a batched product": (lambda a, b: a @ b, [(3, 160, 128), (3, 128, 256)]),
    "B too deep for the stack": (lambda x, w: np.maximum(x @ w, F32(0)), [(96, 6000), (6000, 64)]),
    "rows sorted": (lambda x: np.sort(x, axis=1), [(64, 256)]),
    "a running sum": (lambda x: np.cumsum(x, axis=1), [(64, 256)]),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_each_parallel_loop_is_a_thread_worker_with_numpys_answer(name, rng):
    f, shapes = PROGRAMS[name]
    args = [rng.standard_normal(s).astype(F32) for s in shapes]
    ex = xe.explore(f, *args, backend="cpu")
    parallel = [k for k, src in ex.kernels.items() if runs_on_threads(src)]
    assert parallel, "no parallel loop: no test"
    for k in parallel:
        src = ex.kernels[k]
        assert "prange(" not in src and "@thread_worker(" in src, src
        assert 'parallel=False' in src  # the kernel itself compiles serially
    got = ex.run(*args)
    want = f(*args)
    for g, w in zip(got if isinstance(want, tuple) else [got],
                    want if isinstance(want, tuple) else [want]):
        # (Products over 6,000 terms round differently from NumPy's BLAS: a wrong block
        # would be off by whole units.)
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-3)
    for k in parallel:
        assert thread_workers(ex.executable._py, k), f"{k}'s worker was not compiled"


@pytest.mark.parametrize("layout", ["transposed", "every other column", "Fortran order"])
def test_a_strided_input_reaches_the_workers_as_a_contiguous_copy(layout, rng):
    base = rng.standard_normal((256, 192)).astype(F32)
    x = {"transposed": base.T[:96],
         "every other column": base[:96, ::2],
         "Fortran order": np.asfortranarray(base[:96])}[layout]
    assert not x.flags.c_contiguous
    fast = xe.jit(softmax)
    for _ in range(3):  # the first call, and the calls after it
        np.testing.assert_allclose(fast(x), softmax(x), rtol=2e-5, atol=1e-7)
    c = np.ascontiguousarray(x)
    np.testing.assert_allclose(fast(c), softmax(c), rtol=2e-5, atol=1e-7)
    assert fast.cache_info().misses == 1  # the same signature: one program


def test_a_loop_body_with_a_parallel_kernel(rng):
    """A while loop's body is a program of its own, in its own file: its workers are
    compiled before the loop's kernel links to them."""
    x = rng.standard_normal((64, 256)).astype(F32)

    def f(x):
        return xe.fori_loop(0, 3, lambda i, y: softmax(y + F32(1)), x)

    want = x
    for _ in range(3):
        want = softmax(want + F32(1))
    ex = xe.explore(f, x, backend="cpu")
    np.testing.assert_allclose(ex.run(x), want, rtol=2e-5, atol=1e-7)


KERNEL = '''@njit(cache=True, fastmath=FASTMATH, error_model="numpy", parallel=True)
def k(p0, out0):
    """A kernel."""
    s = p0[0]
    total = np.float32(s)
    for t in prange(threads()):
        out0[t] = {read} + p0[t]
'''


def test_a_loop_that_reads_a_value_of_unknown_type_keeps_its_prange():
    arguments = {"p0": ("array", "np.float32", 1, "C"), "out0": ("array", "np.float32", 1, "C")}
    assert outline(KERNEL.format(read="s"), "k", arguments) is None
    outlined = outline(KERNEL.format(read="total"), "k", arguments)
    assert outlined is not None and "prange(" not in outlined
    # Two 1-d arrays first, three slots each (address, size, stride), then the number.
    assert "total = scalar_at(args, 6, np.float32)" in outlined
    assert 'put(args, 6, total, "float32")' in outlined


def test_put_refuses_a_value_of_another_type_than_the_worker_reads():
    @njit
    def store(block, a):
        put(block, 0, a, "float64 2 C")

    block = np.zeros(8, np.int64)
    store(block, np.ones((3, 4)))
    assert block[1:3].tolist() == [3, 4]  # the shape, after the address
    for wrong in (np.ones((3, 4)).T, np.ones((3, 4), np.float32), np.ones(12), 1.0):
        with pytest.raises(TypingError, match="thread worker reads 'float64 2 C'"):
            store(block, wrong)
