"""codegen/gemm.py, the register-tiled product, against float64 NumPy: every edge of the tile
and of the blocks, both float types, serial and shared between threads (gemm_threads.py),
B packed on the threads' stacks or, where a panel is too deep for them, in the arena."""
from __future__ import annotations

import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba import njit, prange

import xla_explorer as xe
from xla_explorer.codegen import gemm, gemm_threads, packing
from xla_explorer.codegen.gemm import (pack_b, pack_b_parallel, pack_columns, packed_b,
                                       packed_b_size, product_rows)
from xla_explorer.codegen.gemm_ir import local_array
from xla_explorer.codegen.gemm_threads import (group_columns, next_product_block,
                                               next_rows, product, product_claimed)
from xla_explorer.codegen.packing import CLAIMS_STACK
from xla_explorer.codegen.parallel import LINE, fetch_add, thread
from xla_explorer.codegen.cpu.outline import runs_on_threads

from .held_up import wait_for


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))


def scratch(b):
    return np.empty(packed_b_size(*b.shape, b.dtype), np.uint8)


@njit
def serial_product(a, b, c, work):
    bp = packed_b(b, work)
    pack_b(b, bp)
    product_rows(a, bp, c, 0, a.shape[0])


def close_to_exact(got, a, b):
    """Within float rounding of the exact product: |error| <= k * eps * sum |a_ik b_kj|."""
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    eps = np.finfo(a.dtype).eps
    k = max(a.shape[1], 1)
    return np.all(np.abs(got - exact) <= k * eps * bound + np.finfo(a.dtype).tiny)


def sizes_around(*points):
    return sorted({max(p + d, 0) for p in points for d in (-1, 0, 1)})


NR32 = gemm.panel_width(np.float32)
# ... and a last row panel of each height the short tiles cover (a third of MR or less, two
# thirds or less, more).
ROWS = sizes_around(1, gemm.MR, gemm.MR * gemm.MC_PANELS) + [0] + [
    gemm.MR + t for t in (gemm.MR // 3, gemm.MR // 3 + 1, 2 * gemm.MR // 3, 2 * gemm.MR // 3 + 1)]
COLS = sizes_around(1, NR32, 2 * NR32) + [0]
DEPTHS = [0, 1, 7, gemm.KC - 1, gemm.KC, gemm.KC + 1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", ROWS)
def test_every_edge_of_tiles_and_blocks(rng, dtype, m):
    for n in COLS:
        for k in DEPTHS:
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            c = np.full((m, n), np.nan, dtype)  # every element must be written
            serial_product(a, b, c, scratch(b))
            assert close_to_exact(c, a, b), (m, k, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threads_claiming_blocks_write_every_row_once(rng, dtype):
    for m, k, n in [(1, 5, 3), (gemm.MR * gemm.MC_PANELS * 3 + 5, 300, 2 * NR32 + 3),
                    (1000, 64, 70)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        c = np.full((m, n), np.nan, dtype)
        product(a, b, c, scratch(b))
        assert close_to_exact(c, a, b), (m, k, n)


def claims_from_python(b, room):
    """`claims` as a kernel calls it, its counters in room of the size a kernel's stack gives."""
    return gemm_threads.claims(b, room, np.empty(CLAIMS_STACK, np.int64))


def test_counters_are_made_zeroed_in_the_space_given_and_allocated_where_they_do_not_fit():
    b = np.empty((10, 7 * NR32), np.float32)
    space = np.full(CLAIMS_STACK, -1, np.int64)  # what a stack frame held before
    counters = gemm_threads.claims(b, 0, space)
    groups = counters[gemm_threads.GROUPS]
    assert len(counters) == (groups + 1 + numba.get_num_threads()) * LINE
    assert np.shares_memory(counters, space) and not counters[2:].any()
    small = np.full(LINE, -1, np.int64)  # no room even for the first line
    elsewhere = gemm_threads.claims(b, 0, small)
    assert not np.shares_memory(elsewhere, small) and (small == -1).all()
    assert np.array_equal(elsewhere, counters)


def test_claimed_blocks_cover_the_rows_in_order_and_shrink_towards_the_end():
    claimed = claims_from_python(np.empty((1, 5 * NR32), np.float32), 0)
    m = gemm.MR * gemm.MC_PANELS * 6 + 7
    for g in range(claimed[gemm_threads.GROUPS]):
        ranges = []
        while True:
            r0, r1 = next_rows(claimed, g, m)
            if r0 == r1:
                break
            ranges.append((r0, r1))
        assert ranges[0] == (0, gemm.MR * gemm.MC_PANELS)
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])) and ranges[-1][1] == m
        sizes = [r1 - r0 for r0, r1 in ranges]
        assert sizes == sorted(sizes, reverse=True) and sizes[-1] <= gemm.MR
        assert next_rows(claimed, g, m) == (m, m)


def group_bounds(claimed, n, itemsize):
    groups = claimed[gemm_threads.GROUPS]
    bounds = [group_columns(claimed, g, n, itemsize) for g in range(groups)]
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(a[1] == b[0] and a[1] % (gemm.NV * gemm.VECTOR_BYTES // itemsize) == 0
               for a, b in zip(bounds, bounds[1:]))
    return bounds


@pytest.mark.parametrize("panels", [1, 2, 3, 7])
def test_the_groups_split_b_into_whole_panels_one_group_for_each_thread(panels):
    n = panels * NR32 - 3
    for room in (0, panels * NR32 * 10):  # the arena, or a stack buffer B fits in
        claimed = claims_from_python(np.empty((10, n), np.float32), room)
        assert claimed[gemm_threads.GROUPS] == max(1, min(numba.get_num_threads(), panels))
        widths = [c1 - c0 for c0, c1 in group_bounds(claimed, n, 4)]
        assert max(widths) - min(widths) <= NR32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fit", [1, 2, 3])
def test_groups_are_narrower_than_a_thread_s_share_where_its_stack_holds_fewer_panels(dtype, fit):
    # 17 panels, a stack buffer holding `fit` of them (k rows each): at least 17 / fit groups.
    nr, k = gemm.panel_width(dtype), 40
    n = 17 * nr - 5
    claimed = claims_from_python(np.empty((k, n), dtype), fit * k * nr + k * nr // 2)
    groups = claimed[gemm_threads.GROUPS]
    assert groups == max(-(-17 // fit), min(numba.get_num_threads(), 17))
    widths = [c1 - c0 for c0, c1 in group_bounds(claimed, n, np.dtype(dtype).itemsize)]
    assert max(widths) <= fit * nr


def test_packing_lays_b_out_in_panels_of_the_tile_width(rng):
    k, n = gemm.KC + 3, NR32 + 5
    b = rng.standard_normal((k, n)).astype(np.float32)
    bp = packed_b(b, scratch(b))
    pack_b(b, bp)
    panels = 2
    assert bp.size == panels * NR32 * k
    # Block 0 (KC rows), panel 1: columns NR..n, zero-padded to NR wide.
    start = 1 * gemm.KC * NR32
    panel = bp[start:start + gemm.KC * NR32].reshape(gemm.KC, NR32)
    assert np.array_equal(panel[:, :5], b[:gemm.KC, NR32:])
    assert not panel[:, 5:].any()
    # Block 1 (the last 3 rows), panel 0.
    start = gemm.KC * panels * NR32
    assert np.array_equal(bp[start:start + 3 * NR32].reshape(3, NR32), b[gemm.KC:, :NR32])
    parallel = packed_b(b, scratch(b))
    pack_b_parallel(b, parallel)
    assert np.array_equal(parallel, bp)
    # A group of panels alone, as a thread packs it: panel 1 of B is the group's only one.
    group = np.full(NR32 * k, np.nan, np.float32)
    pack_columns(b, group, NR32, n)
    assert np.array_equal(group[:gemm.KC * NR32], panel.reshape(-1))
    assert np.array_equal(group[gemm.KC * NR32:].reshape(3, NR32)[:, :5], b[gemm.KC:, NR32:])


def check_the_arena_holds_each_group_after_the_ones_before(b, by_threads, counters, want):
    """Packed into the arena by the threads: each group's panels in its own place, as
    pack_columns lays them out, after the groups before it."""
    k, n = b.shape
    nr = gemm.panel_width(b.dtype)
    for c0, c1 in group_bounds(counters, n, b.itemsize):
        group = np.empty(-(-(c1 - c0) // nr) * nr * k, b.dtype)
        pack_columns(want, group, c0, c1)
        at = c0 // nr * nr * k
        assert np.array_equal(by_threads[at:at + group.size], group), (c0, c1)


def test_the_threads_pack_each_group_once_where_its_owner_put_it(rng):
    k, n = gemm.KC + 3, 5 * NR32 + 5
    b = rng.standard_normal((k, n)).astype(np.float32)
    by_threads = packed_b(b, scratch(b))
    cover = np.zeros((50, n), np.int64)
    counters = claim_every_block(b, by_threads, cover)
    assert (cover == 1).all()  # every element of C in one block
    check_the_arena_holds_each_group_after_the_ones_before(b, by_threads, counters, b)
    for g in range(counters[gemm_threads.GROUPS]):
        at = (g + 1) * LINE
        assert counters[at + gemm_threads.OWNED] >= 1 and counters[at + gemm_threads.PACKED] == 1
        assert counters[at + gemm_threads.ROWS_DONE] == -(-50 // gemm.MR)


@njit(parallel=True)
def claim_every_block(b, bp, cover):
    """Every block handed out once (its rows counted done), B packed into the arena, bp."""
    # The counters on the heap, not the stack as a kernel has them: they are returned.
    counters = gemm_threads.claims(b, 0, np.empty(CLAIMS_STACK, np.int64))
    for _ in prange(8):  # more callers than threads: the late ones find every block claimed
        while True:
            r0, r1, c0, c1, g = next_product_block(b, bp, counters, cover.shape[0])
            if r0 == r1:
                break
            cover[r0:r1, c0:c1] += 1
            fetch_add(counters, (g + 1) * LINE + gemm_threads.ROWS_DONE, -(-(r1 - r0) // gemm.MR))
    return counters


@njit
def serial_product_of(a, b, c, work):
    """serial_product, for operands given as they are or as .T of a C-contiguous array."""
    bp = packed_b(b, work)
    pack_b(b, bp)
    product_rows(a, bp, c, 0, a.shape[0])


def laid_out(x, transposed):
    """x itself, or x as the transpose of a C-contiguous copy of x.T (as q @ k.T reads k)."""
    return np.ascontiguousarray(x.T).T if transposed else x


LAYOUTS = {"B transposed": (False, True), "A transposed": (True, False),
           "both transposed": (True, True)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_operands_given_transposed_at_every_edge(rng, dtype, layout):
    a_t, b_t = LAYOUTS[layout]
    for m in ROWS:
        for n in COLS:
            for k in DEPTHS:
                a = rng.standard_normal((m, k)).astype(dtype)
                b = rng.standard_normal((k, n)).astype(dtype)
                c = np.full((m, n), np.nan, dtype)
                serial_product_of(laid_out(a, a_t), laid_out(b, b_t), c, scratch(b))
                assert close_to_exact(c, a, b), (m, k, n)
                if m * n and m * n * k < 20000 and k % 7 == 0:  # shared between threads too
                    c = np.full((m, n), np.nan, dtype)
                    product(laid_out(a, a_t), laid_out(b, b_t), c, scratch(b))
                    assert close_to_exact(c, a, b), ("threads", m, k, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_b_given_transposed_packs_into_the_same_panels(rng, dtype):
    # Whole strips of PACK_ROWS rows, a block's shorter last strip, the zero-padded panel.
    nr = gemm.panel_width(dtype)
    for k, n in [(gemm.KC + 3, nr + 5), (2 * gemm.KC + 17, 3 * nr), (5, 2), (gemm.PACK_ROWS, nr)]:
        b = rng.standard_normal((k, n)).astype(dtype)
        bt = np.ascontiguousarray(b.T)
        want = packed_b(b, scratch(b))
        pack_b(b, want)
        for packer in (pack_b, pack_b_parallel):
            got = packed_b(bt.T, scratch(b))
            packer(bt.T, got)
            assert np.array_equal(got, want), (packer.__name__, k, n)
        by_threads = packed_b(bt.T, scratch(b))
        cover = np.zeros((50, n), np.int64)
        counters = claim_every_block(bt.T, by_threads, cover)
        check_the_arena_holds_each_group_after_the_ones_before(bt.T, by_threads, counters, b)
        assert (cover == 1).all()


# -- B packed on the threads' stacks ---------------------------------------------------------

# Elements of the tests' stack buffers: a few panels, so that the threads pack narrow groups
# one after another into them, and take rows of groups in other threads' buffers.
BUFFER = 1 << 15


@njit(parallel=True)
def product_on_stacks(a, b, c, room, workers):
    """C = A @ B as a dot kernel shares it between its threads, each packing a group of B's
    panels at a time into `room` elements (at most BUFFER) on its stack."""
    counters = gemm_threads.claims(b, room, np.empty(CLAIMS_STACK, np.int64))  # returned
    for _ in prange(workers):
        bp = local_array(b, 32768)
        while True:
            r0, r1, c0, c1, g = next_product_block(b, bp, counters, a.shape[0])
            if r0 == r1:
                break
            product_claimed(a, counters, g, c, r0, r1, c0, c1)
    return counters


def rooms(k, dtype):
    """Stack buffers holding one panel, two and a half, and as many as BUFFER holds."""
    panel = max(k, 1) * gemm.panel_width(dtype)
    return [panel, 5 * panel // 2, BUFFER // panel * panel]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("b_transposed", [False, True], ids=["B", "B transposed"])
def test_products_on_stacks_at_ragged_sizes_match_numpy(rng, dtype, b_transposed):
    nr = gemm.panel_width(dtype)
    for m, k, n in [(1, 5, 3), (gemm.MR * gemm.MC_PANELS * 2 + 5, gemm.KC + 1, 3 * nr + 5),
                    (300, 7, 7 * nr - 1), (gemm.MR + 1, 2 * gemm.KC, 11 * nr), (40, 0, nr + 1)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        for room in rooms(k, dtype):
            for workers in (1, 3, 64):  # fewer callers than threads, more
                c = np.full((m, n), np.nan, dtype)  # every element must be written
                counters = product_on_stacks(a, laid_out(b, b_transposed), c, room, workers)
                assert close_to_exact(c, a, b), (m, k, n, room, workers)
                groups = counters[gemm_threads.GROUPS]
                done = counters[LINE + gemm_threads.ROWS_DONE:(groups + 1) * LINE:LINE]
                assert (done == -(-m // gemm.MR)).all()  # every row of every group, once


@njit(parallel=True)
def product_with_thread_0_held_up(a, b, c, room, blocks_by, finished):
    """`product_on_stacks` with thread 0 held up until another thread has found no block
    left (or, if none runs, for a few seconds at most): blocks_by[t] counts thread t's."""
    counters = gemm_threads.claims(b, room, np.empty(CLAIMS_STACK, np.int64))  # returned
    for _ in prange(64):
        bp = local_array(b, 32768)
        me = thread()
        if me == 0:
            wait_for(finished)
        while True:
            r0, r1, c0, c1, g = next_product_block(b, bp, counters, a.shape[0])
            if r0 == r1:
                break
            product_claimed(a, counters, g, c, r0, r1, c0, c1)
            blocks_by[me] += 1
        if me != 0:
            fetch_add(finished, 0, 1)
    return counters


def test_a_held_up_thread_s_group_is_packed_and_made_by_the_others(rng):
    if numba.get_num_threads() < 2:
        pytest.skip("needs two threads: this machine runs parallel loops on one")
    a = rng.standard_normal((500, 100)).astype(np.float32)
    b = rng.standard_normal((100, 9 * NR32 + 3)).astype(np.float32)
    for room in rooms(100, np.float32):
        c = np.full((500, b.shape[1]), np.nan, np.float32)
        blocks_by = np.zeros(numba.get_num_threads(), np.int64)
        counters = product_with_thread_0_held_up(a, b, c, room, blocks_by, np.zeros(1, np.int64))
        assert close_to_exact(c, a, b), room
        assert blocks_by[0] == 0 and blocks_by.sum() > 0, blocks_by
        assert counters[gemm_threads.GROUPS] >= 2  # thread 0's own group too, packed by others


@pytest.mark.slow  # a process of its own, which compiles the tests' products again
def test_many_threads_contending_for_groups_on_their_stacks():
    # NUMBA_NUM_THREADS is fixed once a process starts Numba's threads: these tests again, in
    # a process with 8 threads taking turns on this machine's cores.
    env = dict(os.environ, NUMBA_NUM_THREADS="8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", __file__,
         "-k", "on_stacks or held_up"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout


def dot_module(m, k, n, dtype="f32"):
    return xe.parse_hlo(f"""HloModule product

ENTRY main {{
  a = {dtype}[{m},{k}] parameter(0)
  b = {dtype}[{k},{n}] parameter(1)
  ROOT d = {dtype}[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
""")


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_a_product_takes_arena_scratch_only_where_one_panel_is_too_deep_for_the_stack(dtype):
    # One panel: K rows of NR columns, 128 bytes a row on any host (two 512-bit registers).
    deepest = packing.STACK_B_BYTES // packing.WIDEST_PANEL_BYTES
    assert deepest == 16384
    for m, n in [(8, 64), (2048, 4096)]:  # whatever the product's size
        fits = dot_module(m, deepest, n, dtype).entry.root
        assert packing.packed_b_on_stack(fits) and packing.product_scratch(fits) == 0
        too_deep = dot_module(m, deepest + 1, n, dtype).entry.root
        assert not packing.packed_b_on_stack(too_deep)
        assert packing.product_scratch(too_deep) == packing.whole_lines(
            packed_b_size(deepest + 1, n, np.dtype(dtype.replace("f", "float"))))


@pytest.mark.slow  # a product compiled for each
def test_a_smaller_stack_bound_packs_narrower_groups_or_falls_back_to_the_arena(rng, monkeypatch):
    # The bound at 16 KiB: a panel of 100 rows (12.5 KiB) fits, so the threads pack B a panel
    # at a time, more groups than threads, and a serial product a panel's columns at a time;
    # one of 200 rows (25 KiB) does not, and B goes to the arena as a whole.
    monkeypatch.setattr(packing, "STACK_B_BYTES", 16 * 1024)

    def dense(x, w, b):
        return np.maximum(x @ w + b, 0)

    for (m, k, n), where in [((300, 100, 300), "stacks"), ((8, 100, 300), "stack"),
                             ((300, 200, 100), "arena"), ((8, 200, 100), "arena")]:
        x, w = rng.standard_normal((m, k)).astype(np.float32), \
            rng.standard_normal((k, n)).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        ex = xe.explore(dense, x, w, b, backend="cpu")
        (source,) = ex.kernels.values()
        scratch = [x for x in ex.buffers.buffers if x.category == "scratch"]
        if where == "arena":
            assert "packed_b(" in source and "local_array(" not in source, source
            assert [x.size for x in scratch] == [packed_b_size(k, n, np.float32)]
            assert ex.executable.arena_bytes >= packed_b_size(k, n, np.float32)
        else:
            assert "local_array(rhs_2, 4096)" in source and "packed_b(" not in source, source
            assert runs_on_threads(source) == (where == "stacks")
            assert ("group_width(" in source) == (where == "stack")
            assert scratch == [] and ex.executable.arena_bytes == 0
        np.testing.assert_allclose(ex.run(x, w, b), dense(x, w, b), rtol=2e-5, atol=2e-4)


def test_an_operand_in_neither_layout_is_refused(rng):
    a = rng.standard_normal((8, 6)).astype(np.float32)
    b = rng.standard_normal((12, 10)).astype(np.float32)[::2, ::2]  # strided: neither
    with pytest.raises(ValueError, match="C-contiguous operands or their transposes"):
        serial_product_of(a, b, np.empty((8, 5), np.float32), scratch(b))


def qkt(q, k):
    return q @ k.T


def at_b(a, b):
    return a.T @ b


def at_bt(a, b):
    return a.T @ b.T


def qkt_bias_relu(q, k, bias):
    return np.maximum(q @ k.T + bias, 0)


def batched_qkt(q, k):
    return q @ k.swapaxes(1, 2)


# (function, operand shapes): the product reads a transposed operand in place, in one kernel.
TRANSPOSED_DOTS = [
    (qkt, [(7, 13), (5, 13)]),
    (qkt, [(64, 32), (64, 32)]),
    (qkt, [(300, 200), (100, 200)]),  # shared between threads, B packed a panel at a time
    (at_b, [(13, 7), (13, 5)]),
    (at_b, [(200, 300), (200, 100)]),
    (at_bt, [(13, 7), (5, 13)]),
    (qkt_bias_relu, [(7, 13), (5, 13), (5,)]),
    (qkt_bias_relu, [(300, 200), (100, 200), (100,)]),  # the epilogue on each thread's blocks
    (batched_qkt, [(3, 7, 13), (3, 5, 13)]),  # small: a loop nest, B read in place too
    (batched_qkt, [(3, 40, 64), (3, 48, 64)]),
]


@pytest.mark.slow  # a product compiled for each
@pytest.mark.parametrize("dtype", [np.float32, pytest.param(np.float64, marks=pytest.mark.deep)])
@pytest.mark.parametrize("fn, shapes", TRANSPOSED_DOTS,
                         ids=[f"{f.__name__}-{'x'.join(map(str, s[0]))}" for f, s in TRANSPOSED_DOTS])
def test_a_transposed_operand_is_read_in_place_and_matches_numpy(rng, dtype, fn, shapes):
    args = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ex = xe.explore(fn, *args, backend="cpu")
    (source,) = ex.kernels.values()  # no transpose kernel before the dot
    assert "np.transpose" not in source
    assert ".T\n" in source or ".transpose(0, 2, 1)\n" in source
    got = ex.run(*args)
    exact = fn(*[x.astype(np.float64) for x in args])
    bound = fn(*[np.abs(x).astype(np.float64) for x in args])  # relu and bias: still a bound
    k = shapes[1][-1] if fn in (qkt, qkt_bias_relu, batched_qkt) else shapes[0][0]
    tol = k * np.finfo(dtype).eps * np.abs(bound) + np.finfo(dtype).tiny
    assert got.dtype == dtype and got.shape == exact.shape
    assert np.all(np.abs(got - exact) <= tol + 2 * np.finfo(dtype).eps * np.abs(exact))
    assert ex.check(*args).ok


def test_attention_runs_as_three_kernels(rng):
    def attention(q, k, v):
        s = q @ k.T
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p = p / p.sum(axis=1, keepdims=True)
        return p @ v

    q, k, v = (rng.standard_normal((64, 32)).astype(np.float32) for _ in range(3))
    ex = xe.explore(attention, q, k, v, backend="cpu")
    assert [f.kind for f in ex.fusions] == ["kOutput", "kInput", "kOutput"]
    assert not any(i.opcode == "transpose" for i in ex.module.entry.instructions)
    assert ex.check().ok


def test_an_epilogue_that_reads_other_elements_of_the_product_runs_after_it(rng):
    # The transpose reads element (j, i) of the product: it may not run on a thread's rows.
    x, w = rng.standard_normal((300, 200)).astype(np.float32), \
        rng.standard_normal((200, 300)).astype(np.float32)
    ex = xe.explore(lambda x, w: np.tanh((x @ w).T) + 1, x, w, backend="cpu")
    source = "\n".join(ex.kernels.values())
    assert "the epilogue, on this block" not in source
    assert ex.check().ok


def test_an_element_wise_epilogue_runs_on_each_threads_blocks(rng):
    x, w = rng.standard_normal((300, 200)).astype(np.float32), \
        rng.standard_normal((200, 100)).astype(np.float32)
    b = rng.standard_normal(100).astype(np.float32)
    ex = xe.explore(lambda x, w, b: np.tanh(x @ w + b) * 2, x, w, b, backend="cpu")
    (source,) = ex.kernels.values()
    assert "the epilogue, on this block" in source and runs_on_threads(source)
    assert ex.check().ok


def test_a_dense_layer_allocates_only_its_output(rng):
    # Packed B lives on the threads' stacks, as each thread's A block does: no arena at all.
    import tracemalloc

    x, w = rng.standard_normal((300, 200)).astype(np.float32), \
        rng.standard_normal((200, 100)).astype(np.float32)
    b = rng.standard_normal(100).astype(np.float32)
    ex = xe.explore(lambda x, w, b: np.maximum(x @ w + b, 0), x, w, b, backend="cpu")
    assert ex.executable.arena.nbytes == 0
    ex.run(x, w, b)
    tracemalloc.start()
    try:
        out = ex.run(x, w, b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.nbytes <= peak < out.nbytes + 4096


def test_the_outputs_a_product_writes_start_on_a_cache_line(rng):
    # NumPy starts an array 16 bytes into a line; the product's tiles store into C once per
    # KC rows of B, and a vector store across two lines costs two. Only its outputs move.
    x, w = rng.standard_normal((300, 200)).astype(np.float32), \
        rng.standard_normal((200, 100)).astype(np.float32)
    ex = xe.explore(lambda x, w: (x * 2, np.maximum(x @ w, 0), x[:, :100] @ w[:100]), x, w,
                    backend="cpu")
    program = ex.executable.program
    number = {element: k for element, (where, k) in enumerate(program.outputs)}
    assert [where for where, _ in program.outputs] == ["output"] * 3
    assert program.line_outputs == {number[1], number[2]}
    for _ in range(5):
        doubled, dense, other = ex.run(x, w)
        assert dense.ctypes.data % 64 == 0 and other.ctypes.data % 64 == 0
        np.testing.assert_array_equal(doubled, x * 2)
        np.testing.assert_allclose(dense, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(other, x[:, :100] @ w[:100], rtol=1e-4, atol=1e-4)
        assert dense.shape == (300, 100) and dense.dtype == np.float32 and dense.flags.c_contiguous


def _train_step(W1, b1, W2, b2, X, Y, lr):
    h = np.maximum(X @ W1 + b1, 0)
    logits = h @ W2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    dlogits = (np.exp(log_p) - Y) / X.shape[0]
    dh = (dlogits @ W2.T) * (h > 0)
    W1 -= lr * (X.T @ dh)
    b1 -= lr * dh.sum(axis=0)
    W2 -= lr * (h.T @ dlogits)
    b2 -= lr * dlogits.sum(axis=0)
    return -(Y * log_p).sum() / X.shape[0]


def test_a_training_step_whose_epilogue_reads_a_dying_temporary_matches_numpy(rng):
    # `dh`'s kernel computes dlogits @ W2.T into its output, then multiplies by (h > 0) read
    # from X @ W1's buffer, which dies there: it must not be that output's buffer too.
    X = rng.standard_normal((32, 5)).astype(np.float32)
    Y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 32)]
    params = [(rng.standard_normal(s) * 0.3).astype(np.float32)
              for s in ((5, 16), (16,), (16, 3), (3,))]
    ours, theirs = [p.copy() for p in params], [p.copy() for p in params]
    loss = xe.jit(_train_step)(*ours, X, Y, 0.5)
    want = _train_step(*theirs, X, Y, 0.5)
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    for got, expected in zip(ours, theirs):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
