"""How the threads of a parallel loop share one matrix product (codegen/gemm.py), B packed on
their own stacks.

B's columns are split into groups of whole panels, one for each thread (more where a
group's packed panels would not fit in STACK_B_BYTES, packing.py). The first thread to come
to a group owns it: it packs the group's panels into a buffer on its own stack (a
`local_array` in the parallel loop's body), publishes the buffer's address, and claims
blocks of C's rows in that group from an atomic counter. A thread starts with its own group
and makes its columns of C for all of C's rows, so what one thread packs and writes is read
by it alone, unless a thread falls behind: when the machine puts the two cores of a
product on different L3 caches (docs/machine-facts.md), every line passed between threads
crosses between the caches (docs/performance.md). A thread whose group has no rows left
takes a group nobody owns yet, or else claims rows of a group another thread packed,
reading that thread's stack through the published address: legal, since the owner's frame
is alive until every row of its group is done.

    # room: elements of each thread's stack buffer; the counters on this kernel's stack
    claimed = claims(b, room, stack_empty(np.int64, CLAIMS_STACK))
    for _ in prange(workers):
        bp = local_array(b, room)
        while True:
            r0, r1, c0, c1, g = next_product_block(b, bp, claimed, m)
            if r0 == r1:
                break
            product_claimed(a, claimed, g, c, r0, r1, c0, c1)
            ... the kernel's epilogue on C[r0:r1, c0:c1] ...

Where even one panel is too deep for the stack (room 0), bp is packed B's place in the
arena (`packed_b`), each group at its own offset, packed by its owner just the same.

No thread waits forever: a thread waits only inside `next_product_block`, where it holds
no block it has not finished, and only for work that is running and never waits itself:
for an owner that is packing (packing waits for nothing), or for the rows that other
threads claimed from the group in its buffer (computing a block waits for nothing), before
it packs another group there or leaves the loop's frame.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .gemm import (MC_PANELS, MR, pack_panels_at, packed_b, panels_of, product_block_at,
                   tile_columns)
from .gemm_ir import local_bytes
from .packing import CLAIMS_STACK, STACK_B_BYTES
from .parallel import LINE, fetch_add, load_acquire, thread, threads
from .scalar import stack_empty

__all__ = ["claims", "next_rows", "group_columns", "next_product_block", "product_claimed",
           "product"]

# The counters the threads of one product share (`claims`), int64s. The first cache line:
# how many groups B's columns are split into, and the elements of each thread's buffer on
# its stack (0: packed B lies in the arena). Then a line for each group: C's row panels
# handed out, whether a thread owns it, whether its B is packed, where (an address), and C's
# row panels done. Then a line for each thread: the group its stack buffer holds (+1; 0 for
# none). A group's claims never contend with another's.
GROUPS, ROOM = 0, 1
ROWS_CLAIMED, OWNED, PACKED, AT, ROWS_DONE = 0, 1, 2, 3, 4


@njit(cache=True)
def claims(b, room, space):
    """Fresh counters for the threads of one parallel product C = A @ B, each packing a group
    of B's panels at a time into `room` elements on its stack (0: into the arena). A group
    for each thread (fewer if B has fewer panels), more where so many panels would not fit.
    Made in `space` (the calling kernel's stack, CLAIMS_STACK int64s) where they fit: a
    product's call then allocates nothing (for a 1024^2 product, eager NumPy's call
    allocates its output alone, and these 320 bytes and their header would have put ours
    above it). (Made here, not in the kernel: there Numba would turn the zeroing into a
    parallel loop of its own, compiled and launched for a few numbers.)"""
    k, n = b.shape
    panels = panels_of(n, b.itemsize)
    groups = max(1, min(threads(), panels))
    if room > 0 and k > 0:
        fit = max(1, room // (k * tile_columns(b.itemsize)))  # panels a buffer holds
        groups = max(groups, (panels + fit - 1) // fit)
    size = (groups + 1 + threads()) * LINE
    if size <= space.size:
        counters = space[:size]
        counters[:] = 0
    else:
        counters = np.zeros(size, np.int64)
    counters[GROUPS] = groups
    counters[ROOM] = room
    return counters


@njit(inline="always")
def _counter(g, which):
    return (g + 1) * LINE + which


@njit(inline="always")
def _held(counters):
    """Where this thread's line says which group its stack buffer holds."""
    return (counters[GROUPS] + 1 + thread()) * LINE


@njit(cache=True)
def next_rows(counters, g, m):
    """The next block of C's rows that no thread has claimed in group g, [r0, r1), or an
    empty range when all are claimed. Threads claim blocks as they finish their last one,
    so a thread the machine slows down does fewer blocks instead of holding up the others;
    and blocks shrink towards the end (a quarter of what is left, at most MC_PANELS
    panels), so the threads finish close together."""
    panels = (m + MR - 1) // MR
    at = _counter(g, ROWS_CLAIMED)
    left = panels - counters[at]  # a stale read only changes the size asked for
    take = min(MC_PANELS, max(1, left // 4))
    q = fetch_add(counters, at, take)
    return min(q * MR, m), min((q + take) * MR, m)


@njit(cache=True)
def group_columns(counters, g, n, itemsize):
    """Group g's columns of C, [c0, c1): whole panels, the groups as even as they can be."""
    nr, panels, groups = tile_columns(itemsize), panels_of(n, itemsize), counters[GROUPS]
    return min(n, g * panels // groups * nr), min(n, (g + 1) * panels // groups * nr)


@njit(inline="always")
def _rows_left(counters, g, m):
    return load_acquire(counters, _counter(g, ROWS_CLAIMED)) < (m + MR - 1) // MR


@njit(inline="always")
def _wait_until_done(counters, g, m):
    """Until every row panel of group g is done: no thread reads its packed B any more."""
    if g >= 0:
        while load_acquire(counters, _counter(g, ROWS_DONE)) < (m + MR - 1) // MR:
            pass


@njit(cache=True)
def _pack_owned(b, bp, counters, g):
    """Group g's panels packed by the thread that owns it, into its stack buffer bp (or bp's
    place for the group in the arena), and published: the address, then the flag."""
    k, n = b.shape
    c0, c1 = group_columns(counters, g, n, b.itemsize)
    q0, q1 = c0 // tile_columns(b.itemsize), panels_of(c1, b.itemsize)
    at = np.int64(bp.ctypes.data)
    if counters[ROOM] == 0:  # the arena: each group after the ones before it
        at += q0 * tile_columns(b.itemsize) * k * b.itemsize
    q0, q1 = np.int64(q0), np.int64(q1)
    pack_panels_at(b, at, q0, q1, np.int64(0), np.int64(k), q0, q1)
    counters[_counter(g, AT)] = at
    fetch_add(counters, _counter(g, PACKED), 1)  # releases the address and the panels


@njit(cache=True)
def next_product_block(b, bp, counters, m):
    """The next block of C = A @ B (m rows) that no thread has claimed, (r0, r1, c0, c1, g),
    g its group of columns, or an empty block when every one is claimed. In this order: the
    rows of the group this thread packed last; a group nobody owns yet, which it packs into
    bp, its stack buffer (after the rows other threads took from the group there are done);
    the rows of a group another thread packed, waiting for its packing if nothing else is
    left. Called by every thread of a parallel loop, as long as it returns blocks; before
    the empty one it waits until nobody reads its stack buffer any more."""
    n = b.shape[1]
    groups = counters[GROUPS]
    on_stack = counters[ROOM] > 0
    held = counters[_held(counters)] - 1
    if held >= 0:
        r0, r1 = next_rows(counters, held, m)
        if r0 < r1:
            c0, c1 = group_columns(counters, held, n, b.itemsize)
            return r0, r1, c0, c1, held
    first = thread() % groups
    while True:
        for step in range(groups):  # a group nobody owns: this thread packs it
            g = (first + step) % groups
            if load_acquire(counters, _counter(g, OWNED)) > 0 or not _rows_left(counters, g, m):
                continue
            if on_stack:
                _wait_until_done(counters, held, m)
            if fetch_add(counters, _counter(g, OWNED), 1) == 0:
                _pack_owned(b, bp, counters, g)
                counters[_held(counters)] = g + 1
                held = g
                r0, r1 = next_rows(counters, g, m)
                if r0 < r1:
                    c0, c1 = group_columns(counters, g, n, b.itemsize)
                    return r0, r1, c0, c1, g
        packing = -1
        for step in range(groups):  # rows of a group another thread packed
            g = (first + step) % groups
            if not _rows_left(counters, g, m):
                continue
            if load_acquire(counters, _counter(g, PACKED)) == 0:
                packing = g
                continue
            r0, r1 = next_rows(counters, g, m)
            if r0 < r1:
                c0, c1 = group_columns(counters, g, n, b.itemsize)
                return r0, r1, c0, c1, g
        if packing < 0:
            break
        while load_acquire(counters, _counter(packing, PACKED)) == 0:
            pass
    if on_stack:
        _wait_until_done(counters, held, m)
    return m, m, n, n, np.int64(0)


@njit(cache=True)
def product_claimed(a, counters, g, c, r0, r1, c0, c1):
    """C's block [r0:r1, c0:c1] that `next_product_block` handed out from group g, from the
    group's packed B wherever it lies; then its rows counted done, so that the group's owner
    may reuse its buffer once all are."""
    product_block_at(a, counters[_counter(g, AT)], c, r0, r1, c0, c1)
    fetch_add(counters, _counter(g, ROWS_DONE), (r1 - r0 + MR - 1) // MR)


@njit(cache=True)
def product(a, b, c, work):
    """C = A @ B on every thread, as a dot kernel makes it without its epilogue: B packed on
    the threads' stacks, a group of at most STACK_B_BYTES at a time; or into `work` (at least
    `packed_b_size` bytes) where even one panel would not fit there."""
    k, n = b.shape
    nr = tile_columns(b.itemsize)
    room = min(STACK_B_BYTES // b.itemsize, max(k, 1) * panels_of(n, b.itemsize) * nr)
    if k * nr > room:  # not even one panel
        _product_in(a, b, c, packed_b(b, work),
                    claims(b, 0, stack_empty(np.int64, CLAIMS_STACK)))
    else:
        _product_on_stacks(a, b, c, claims(b, room, stack_empty(np.int64, CLAIMS_STACK)))


@njit(parallel=True, cache=True)
def _product_on_stacks(a, b, c, counters):
    for _ in prange(64):
        bp = local_bytes(b, STACK_B_BYTES)
        while True:
            r0, r1, c0, c1, g = next_product_block(b, bp, counters, a.shape[0])
            if r0 == r1:
                break
            product_claimed(a, counters, g, c, r0, r1, c0, c1)


@njit(parallel=True, cache=True)
def _product_in(a, b, c, bp, counters):
    for _ in prange(64):
        while True:
            r0, r1, c0, c1, g = next_product_block(b, bp, counters, a.shape[0])
            if r0 == r1:
                break
            product_claimed(a, counters, g, c, r0, r1, c0, c1)
