"""codegen/parallel.py: the threads of a parallel loop claim its blocks. Every block is claimed
once, a held-up thread's blocks are done by the others, and a kernel's result does not depend
on how many threads ran it."""
from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from numba import njit, prange

import xla_explorer as xe
from xla_explorer import compiler
from xla_explorer.backends.cpu import CpuBackend
from xla_explorer.codegen.cpu import GEMM_IMPORT, PARALLEL_IMPORT
from xla_explorer.codegen.cpu.outline import runs_on_threads
from xla_explorer.codegen.options import DEFAULT_OPTIONS, CodegenOptions
from xla_explorer.codegen.parallel import block_counter, fetch_add, next_block, thread, threads
from xla_explorer.codegen.scalar import nonnegative

from .held_up import wait_for


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))


@njit(parallel=True)
def claim_all(blocks, seen):
    counter = block_counter()
    for _ in prange(8):  # more callers than threads: the late ones find every block claimed
        while True:
            b = next_block(counter, blocks)
            if b >= blocks:
                break
            seen[b] += 1


@pytest.mark.parametrize("blocks", [1, 2, 3, 17, 64])
def test_every_block_is_claimed_once(blocks):
    seen = np.zeros(blocks, np.int64)
    claim_all(blocks, seen)
    assert (seen == 1).all(), seen


@njit(parallel=True)
def claim_with_thread_0_held_up(blocks, owner):
    counter, finished = block_counter(), block_counter()
    for _ in prange(threads()):  # one iteration on each thread
        me = thread()
        if me == 0:  # held up until another thread finds no block left
            wait_for(finished)
        while True:
            b = next_block(counter, blocks)
            if b >= blocks:
                break
            owner[b] = me
        if me != 0:
            fetch_add(finished, 0, 1)


def test_a_held_up_thread_s_blocks_are_done_by_the_others():
    if numba.get_num_threads() < 2:
        pytest.skip("needs two threads: this machine runs parallel loops on one")
    owner = np.full(64, -1, np.int64)
    claim_with_thread_0_held_up(64, owner)
    assert (owner > 0).all(), owner  # thread 0's region included


@njit(error_model="numpy", fastmath=True)
def sum_from(x, lo, hi):
    s = 0.0
    for i in range(lo, hi):
        s += np.float64(x[i])
    return s


@njit(error_model="numpy", fastmath=True)
def sum_from_nonnegative(x, lo, hi):
    s = 0.0
    for i in range(lo, hi):
        i = nonnegative(i)
        s += np.float64(x[i])
    return s


def test_an_index_known_not_to_be_negative_lets_a_block_s_loop_vectorize():
    # Vectorized as a plain loop: packed float64 adds of elements loaded side by side. Without
    # the assumption, each index is first wrapped (i + n where i < 0), and the elements are
    # gathered one by one (AVX2's and AVX-512's vgather) or the loop stays scalar.
    x = np.arange(1000, dtype=np.float32)
    for fn, plain in ((sum_from_nonnegative, True), (sum_from, False)):
        assert fn(x, 3, 1000) == x[3:].astype(np.float64).sum()
        asm = fn.inspect_asm(fn.signatures[0])
        packed = re.search(r"\bv?addpd\s", asm) is not None
        assert (packed and "gather" not in asm) == plain, fn.__name__


# -- generated kernels -------------------------------------------------------------------------

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def programs(rng):
    n = DEFAULT_OPTIONS.parallel_threshold + 1001  # blocks of unequal size
    x, y, z = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    big = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    rows = rng.standard_normal((3, 300, 1200)).astype(np.float32)
    return [
        ("sum", lambda x, y, z: np.sum(x + y * z), (x, y, z)),  # a sum in blocks
        ("int sum", lambda a: np.sum(a, dtype=np.int32), (big,)),  # wraps as NumPy's does
        ("elementwise", lambda x: np.tanh(x) * 2 + x, (x,)),
        ("mean and variance", lambda x: (x.mean(), x.var()), (x.astype(np.float64),)),
        ("softmax rows", softmax, (rows,)),  # per-thread row arrays, two leading dimensions
    ]


def test_parallel_kernels_match_numpy_and_not_the_thread_count(rng):
    for name, f, args in programs(rng):
        ex = xe.explore(f, *args, backend="cpu")
        source = "\n".join(ex.kernels.values())
        assert "next_block(" in source and "nonnegative(" in source, (name, source)
        check = ex.check(*args)
        assert check.ok, (name, str(check))
        default = numba.get_num_threads()
        many = ex.run(*args)
        numba.set_num_threads(1)
        try:
            one = ex.run(*args)
        finally:
            numba.set_num_threads(default)
        for a, b in zip(*(r if isinstance(r, tuple) else (r,) for r in (many, one))):
            assert np.array_equal(a, b), name  # the same bits, on one thread or all


def test_a_parallel_loop_and_a_shared_product_in_one_program(rng):
    # Both kinds of kernel claim their blocks, each through a routine of its own: the
    # generated file imports the two, and neither may hide the other.
    x, w = rng.standard_normal((160, 128), np.float32), rng.standard_normal((128, 256), np.float32)
    y = rng.standard_normal(DEFAULT_OPTIONS.parallel_threshold, np.float32)

    def f(x, w, y):
        return np.maximum(x @ w, np.float32(0)), y * np.float32(2) + np.float32(1)

    ex = xe.explore(f, x, w, y, backend="cpu")
    check = ex.check(x, w, y)
    assert check.ok, str(check)
    source = ex.executable.sources[""]
    assert "next_block(" in source and "next_product_block(" in source, source


def test_the_names_a_kernel_file_imports_are_distinct():
    # A name imported twice is the last import's: a kernel calling the other would not compile.
    from xla_explorer.codegen import scalar

    imported = [set(scalar.__all__)] + [
        set(re.findall(r"\w+", line.split(" import ", 1)[1]))
        for line in (PARALLEL_IMPORT, GEMM_IMPORT)]
    for k, names in enumerate(imported):
        for other in imported[k + 1:]:
            assert not names & other, names & other


def test_serial_only_keeps_every_kernel_on_one_thread(rng):
    # Options reach the code generator through the backend that compiles: the same programs
    # that run in parallel by default (the sum's blocks, the product's rows) run serially,
    # with the same results.
    x, w = rng.standard_normal((160, 128), np.float32), rng.standard_normal((128, 256), np.float32)
    y = rng.standard_normal(DEFAULT_OPTIONS.parallel_threshold + 1001, np.float32)

    def f(x, w, y):
        return np.maximum(x @ w, np.float32(0)), np.sum(y * np.float32(2))

    module = xe.explore(f, x, w, y).stages[0].module  # as traced: each compile runs the passes
    for options, parallel in ((DEFAULT_OPTIONS, True), (CodegenOptions(serial_only=True), False)):
        exe = compiler.compile(module, CpuBackend(options)).executable
        source = exe.sources[""]
        assert runs_on_threads(source) == parallel, source
        relu, total = exe(x, w, y)
        np.testing.assert_allclose(relu, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(total, np.sum(y.astype(np.float64) * 2), rtol=1e-5)
