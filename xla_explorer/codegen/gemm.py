"""The matrix product inside a dot kernel, written for this CPU's vector registers.

XLA's CPU backend does not leave its dots to a system BLAS: it calls its own kernels or emits
tiled LLVM IR for them. This module does the same, in the classic layout of BLIS and of
OpenBLAS's own kernels (Goto's algorithm):

  - B is packed once per product into panels NR columns wide, KC rows at a time, so the
    innermost loop reads it contiguously, into scratch space at the end of the executable's
    arena (`packed_b`): by one thread (`pack_b`), or, in the loop that shares the product,
    each group of panels by the thread whose columns of C they make (`next_product_block`);
  - A is packed per block of MC rows into panels MR rows tall, a column of a panel's MR
    elements after another, on the thread's own stack, by the first panel of B to use it
    (`tile_packing`);
  - the micro-kernel (`tile`) keeps an MR x NR tile of C in vector registers for KC steps,
    each step one broadcast of A per row and one fused multiply-add per register. It is
    written as LLVM IR with explicit vectors of the machine's width (gemm_ir.py), since
    Numba has no intrinsics for them and LLVM's vectorizers do not keep accumulators in
    registers across a loop.

Why not NumPy's BLAS: where the environment holds NumPy's OpenBLAS to narrower vectors than
the CPU has (OPENBLAS_CORETYPE, docs/machine-facts.md), a product written for the CPU's own
vector registers, as this one and XLA's are, is the faster one; and a dot kernel then runs
its epilogue on each block of C as it is made. benchmarks/gemm.py times the micro-kernel and
the product against NumPy and XLA (docs/performance.md).

`product_block` computes a block of C, so a kernel can run it in parallel: each thread makes
its own group of C's columns (`claims`), claiming blocks of rows from an atomic counter
(`next_product_block`) and moving on to another group's rows when its own are done, and
applies the kernel's epilogue to each block it has just made, while it is in cache.
Arrays are C-contiguous, but for A or B given transposed, as the transpose of a C-contiguous
array (B is `k.T` in q @ k.T): the packing reads them in that layout, so no kernel copies
them first. A is (m, k), B (k, n), C (m, n), all of one float dtype.
"""
from __future__ import annotations

import os

# How OpenMP's threads wait, set before Numba loads its threading layer (below). A parallel
# kernel after idle must not wait milliseconds for them to wake (docs/machine-facts.md), so
# they sleep when idle (passive); but first they spin GOMP_SPINCOUNT times (GNU OpenMP's
# count, a fraction of a millisecond), so that a kernel called straight after another finds
# its second thread awake, and a loop's threads meet at its end without a wake-up.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("GOMP_SPINCOUNT", "5000")

import llvmlite.binding as llvm  # noqa: E402
import numpy as np  # noqa: E402
from numba import carray, cfunc, njit, prange, types  # noqa: E402

from .gemm_ir import (MR, NV, PACK_ROWS, VECTOR_BYTES, copy_panel_row, local_array,  # noqa: E402
                      short_tile, tile, tile_packing, transpose_strip)
from .packing import WIDEST_PANEL_BYTES, packed_b_size  # noqa: E402
from .parallel import LINE, fetch_add, load_acquire, thread, threads  # noqa: E402

# packed_b_size, which the buffer assignment asks before Numba loads, sizes panels this wide.
assert NV * VECTOR_BYTES <= WIDEST_PANEL_BYTES

__all__ = ["MR", "NV", "KC", "VECTOR_BYTES", "panel_width", "packed_b_size", "packed_b",
           "pack_b", "pack_b_parallel", "claims", "next_rows", "group_columns",
           "next_product_block", "product_block", "product_rows", "product",
           "aot_pack_b", "aot_product_block", "aot_product_rows"]


# Rows of B per packed block: a micro-panel (KC x NR: 32 KiB of float32 at 512 bits) stays in
# L1 (docs/machine-facts.md) while every tile of an A block reuses it.
KC = 256
# Row panels per A block at most: the packed block (MC x KC, MC = 96 rows: 96 KiB of float32)
# stays in L2 while the micro-panels of B pass through L1.
MC_PANELS = 8

_JIT = dict(cache=True, error_model="numpy", fastmath=True)
# Index arguments handed on as int64, never as literals or unsigned: Numba compiles a callee
# again for every literal value and every integer type it is called with.
_I = np.int64

# Elements of a thread's packed A block and of its edge tile: on the thread's stack
# (`local_array`), so a product allocates nothing on the heap but packed B.
_A_BLOCK = MC_PANELS * MR * KC
_EDGE_TILE = MR * NV * VECTOR_BYTES // 4


def panel_width(dtype) -> int:
    """NR: the columns of C one register tile covers, for `dtype`."""
    return NV * VECTOR_BYTES // np.dtype(dtype).itemsize




@njit(inline="always")
def _nr(itemsize):
    return NV * VECTOR_BYTES // itemsize


@njit(inline="always")
def _panels(n, itemsize):
    """Panels of B (or of C) n columns wide: the last one padded."""
    nr = _nr(itemsize)
    return (n + nr - 1) // nr


@njit(inline="always")
def _packed_elements(k, n, itemsize):
    """Elements of B (k x n) packed by `pack_b` on this host."""
    return _panels(n, itemsize) * _nr(itemsize) * k


@njit(**_JIT)
def packed_b(b, work):
    """Packed B's place at the start of `work`, a byte array of at least `packed_b_size`."""
    k, n = b.shape
    return work[:_packed_elements(k, n, b.itemsize) * b.itemsize].view(b.dtype)




@njit(**_JIT)
def _pack_b_rows(b, bp, r0, r1, jp0, jp1):
    """Rows r0..r1 of panels jp0..jp1 of B into their places (block k // KC, row k % KC of
    each panel of that block), PACK_ROWS rows at a time, a panel at a time: the rows of one
    panel are contiguous in bp, so the stores stream, and few enough rows of B are read at
    once for the loads to stream too. (Row by row, each row's stores would land a panel
    apart, KC * NR elements; a whole block of rows a panel at a time would read KC rows of B
    at once, each its own stream: both slower, docs/performance.md.)"""
    kk, n = b.shape
    nr = _nr(b.itemsize)
    panels = _panels(n, b.itemsize)
    full = n // nr
    flat = b.reshape(-1)
    k0 = r0
    while k0 < r1:
        pc = k0 - k0 % KC
        kc = min(KC, kk - pc)
        k1 = min(r1, pc + kc, k0 + PACK_ROWS)
        first = pc * panels * nr + (k0 - pc) * nr  # row k0 in the block's first panel
        for jp in range(jp0, min(jp1, full)):
            dst = first + jp * kc * nr
            for k in range(k0, k1):
                copy_panel_row(flat, k * n + jp * nr, bp, dst)
                dst += nr
        if full < jp1:  # the last panel, past B's last column: zeros
            dst = first + full * kc * nr
            for k in range(k0, k1):
                for j in range(nr):
                    col = full * nr + j
                    bp[dst + j] = b[k, col] if col < n else 0
                dst += nr
        k0 = k1





@njit(**_JIT)
def _pack_bt_rows(bt, bp, r0, r1, jp0, jp1):
    """`_pack_b_rows` for B given as its transpose, bt (n x k, C-contiguous): what q @ k.T
    hands the product. A panel's rows of B are NR rows of bt, transposed PACK_ROWS at a time
    on the way in (`transpose_strip`). A panel at a time, all its rows: bt's NR rows are
    read front to back and the panel written front to back, where PACK_ROWS rows of every
    panel at a time would read a few elements from each of bt's n rows, k elements apart."""
    n, kk = bt.shape
    nr = _nr(bt.itemsize)
    panels = _panels(n, bt.itemsize)
    full = n // nr
    flat = bt.reshape(-1)
    for jp in range(jp0, jp1):
        k0 = r0
        while k0 < r1:
            pc = k0 - k0 % KC
            kc = min(KC, kk - pc)
            k1 = min(r1, pc + kc, k0 + PACK_ROWS)
            # row k0 of this panel in its block
            dst = pc * panels * nr + jp * kc * nr + (k0 - pc) * nr
            src = jp * nr * kk + k0
            if jp < full and k1 - k0 == PACK_ROWS:
                transpose_strip(flat, src, kk, bp, dst)
            else:  # a block's last rows, fewer than PACK_ROWS, or the last panel: zero-padded
                for k in range(k1 - k0):
                    for j in range(nr):
                        bp[dst + k * nr + j] = flat[src + j * kk + k] if jp * nr + j < n else 0
            k0 = k1


@njit(**_JIT)
def _pack_a(a, i, pc, kc, ap, base):
    """A[i:i+MR, pc:pc+kc] into ap[base:], each column's MR elements contiguous: the order in
    which `tile` reads them. Rows past A's end are zeros. (Panels of whole rows are packed by
    `tile_packing` instead, as it computes with them.)"""
    m = a.shape[0]
    for k in range(kc):
        for r in range(MR):
            ap[base + k * MR + r] = a[i + r, pc + k] if i + r < m else 0


# The counters that the threads of one parallel product share (`claims`): at GROUPS, how many
# groups B's columns are split into; then a cache line for each group, with C's row panels
# handed out, B's rows handed out for packing, and B's rows packed (panels, for a B given
# transposed: see `_pack_group`). A group's claims never contend with another's.
GROUPS = 0
ROWS_CLAIMED, B_CLAIMED, B_PACKED = 0, 1, 2


@njit(cache=True)
def claims(b):
    """Fresh counters for the threads of one parallel product C = A @ B. B's columns are split
    into groups of whole panels, one for each thread (fewer if B has fewer panels): a thread
    packs its group's panels of B and makes its columns of C, for all of C's rows, and moves
    on to another group's rows only when its own are done. What one thread writes, packed B
    and C, is then read and written by that thread alone, call after call, unless a thread
    falls behind: when the machine puts the two cores of a product on different L3 caches
    (docs/machine-facts.md), a product that shared packed B between threads would pass every
    line the other thread packed between the caches (docs/performance.md). (Made here, not
    in the kernel: there Numba would turn np.zeros into a parallel loop of its own, compiled
    and launched for a few numbers.)"""
    groups = max(1, min(threads(), _panels(b.shape[1], b.itemsize)))
    counters = np.zeros((groups + 1) * LINE, np.int64)
    counters[GROUPS] = groups
    return counters


@njit(inline="always")
def _counter(g, which):
    return (g + 1) * LINE + which


@njit(**_JIT)
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


@njit(**_JIT)
def group_columns(counters, g, n, itemsize):
    """Group g's columns of C, [c0, c1): whole panels, the groups as even as they can be."""
    nr, panels, groups = _nr(itemsize), _panels(n, itemsize), counters[GROUPS]
    return min(n, g * panels // groups * nr), min(n, (g + 1) * panels // groups * nr)


# The tiles A's last rows use when fewer than MR are left, by how many: a third of the tile,
# or two thirds. (1024 rows are 85 tiles of 12 and 4 rows: a whole tile for those would
# compute 8 rows for nothing, 0.8% of the product.)
_THIRD_TILE, _TWO_THIRDS_TILE = MR // 3, 2 * MR // 3


@njit(**_JIT, inline="always")
def _last_rows_tile(ap, a_off, bp, b_off, c, c_off, ldc, kc, accumulate, left):
    if left <= _THIRD_TILE:
        short_tile(ap, a_off, bp, b_off, c, c_off, ldc, kc, accumulate, _THIRD_TILE, left)
    elif left <= _TWO_THIRDS_TILE:
        short_tile(ap, a_off, bp, b_off, c, c_off, ldc, kc, accumulate, _TWO_THIRDS_TILE,
                    left)
    else:
        short_tile(ap, a_off, bp, b_off, c, c_off, ldc, kc, accumulate, MR, left)


@njit(**_JIT)
def _product_block(a, bp, c, r0, r1, c0, c1):
    """C[r0:r1, c0:c1] of C = A @ B, with B packed by `pack_b`; c0 and c1 are where panels
    begin (or C's width). A is C-contiguous, or the transpose of a C-contiguous array."""
    m, kk = a.shape
    n = c.shape[1]
    # A transposed is packed by `_pack_a`, which then reads each column's MR elements from
    # one place; `tile_packing` reads A's rows.
    by_rows = a.flags.c_contiguous
    if r0 >= r1 or c0 >= c1:
        return
    if kk == 0:
        c[r0:r1, c0:c1] = 0
        return
    nr = _nr(a.itemsize)
    panels = _panels(n, a.itemsize)
    full = n // nr
    jp0, jp1 = c0 // nr, _panels(c1, a.itemsize)
    cf = c.reshape(-1)
    ap = local_array(a, _A_BLOCK)
    edge = local_array(a, _EDGE_TILE)
    for i0 in range(r0, r1, MC_PANELS * MR):
        rows = min(MC_PANELS * MR, r1 - i0)
        tiles = (rows + MR - 1) // MR
        for pc in range(0, kk, KC):
            kc = min(KC, kk - pc)
            later = pc > 0
            b_block = pc * panels * nr
            for jp in range(jp0, jp1):
                j0 = jp * nr
                b_off = b_block + jp * kc * nr
                for q in range(tiles):
                    i = i0 + q * MR
                    a_off = q * kc * MR
                    whole = i + MR <= m
                    # The first panel of B packs A's panel as it goes; the others read it.
                    packing = jp == jp0 and whole and by_rows
                    if jp == jp0 and not packing:
                        _pack_a(a, i, pc, kc, ap, a_off)
                    if whole and jp < full:
                        if packing:
                            tile_packing(a, i * kk + pc, kk, ap, a_off, bp, b_off,
                                          cf, i * n + j0, n, kc, later)
                        else:
                            tile(ap, a_off, bp, b_off, cf, i * n + j0, n, kc, later)
                        continue
                    if jp < full:  # A's last rows, fewer than MR
                        _last_rows_tile(ap, a_off, bp, b_off, cf, i * n + j0, n, kc, later,
                                        m - i)
                        continue
                    # A tile over C's edge: computed whole, then its part inside C kept.
                    if packing:
                        tile_packing(a, i * kk + pc, kk, ap, a_off, bp, b_off, edge, 0, nr,
                                      kc, False)
                    else:
                        tile(ap, a_off, bp, b_off, edge, 0, nr, kc, False)
                    for r in range(min(MR, m - i)):
                        for j in range(min(nr, n - j0)):
                            if later:
                                c[i + r, j0 + j] += edge[r * nr + j]
                            else:
                                c[i + r, j0 + j] = edge[r * nr + j]


# -- entry points ------------------------------------------------------------------------------
# The routines above are compiled once (and cached on disk) as C functions, and kernels call
# them by symbol, as XLA's generated code calls its runtime's matmul. Called as Numba functions
# they would be linked into every kernel and optimised and code-generated again in each
# kernel's cold compile (docs/performance.md).

_P32, _P64, _N = types.CPointer(types.float32), types.CPointer(types.float64), types.intp
_ENTRY = dict(cache=True, error_model="numpy", fastmath=True)


@cfunc(types.void(_P32, _N, _N, _P32, _P32, _N, _N, _N, _N, _N), **_ENTRY)
def _block_f32(a, m, k, bp, c, n, r0, r1, c0, c1):
    _product_block(carray(a, (m, k)), carray(bp, (_packed_elements(k, n, 4),)),
                   carray(c, (m, n)), r0, r1, c0, c1)


@cfunc(types.void(_P64, _N, _N, _P64, _P64, _N, _N, _N, _N, _N), **_ENTRY)
def _block_f64(a, m, k, bp, c, n, r0, r1, c0, c1):
    _product_block(carray(a, (m, k)), carray(bp, (_packed_elements(k, n, 8),)),
                   carray(c, (m, n)), r0, r1, c0, c1)


@cfunc(types.void(_P32, _N, _N, _P32, _P32, _N, _N, _N, _N, _N), **_ENTRY)
def _block_t_f32(a, m, k, bp, c, n, r0, r1, c0, c1):
    _product_block(carray(a, (k, m)).T, carray(bp, (_packed_elements(k, n, 4),)),
                   carray(c, (m, n)), r0, r1, c0, c1)


@cfunc(types.void(_P64, _N, _N, _P64, _P64, _N, _N, _N, _N, _N), **_ENTRY)
def _block_t_f64(a, m, k, bp, c, n, r0, r1, c0, c1):
    _product_block(carray(a, (k, m)).T, carray(bp, (_packed_elements(k, n, 8),)),
                   carray(c, (m, n)), r0, r1, c0, c1)


@cfunc(types.void(_P32, _N, _N, _P32, _N, _N, _N, _N), **_ENTRY)
def _pack_f32(b, k, n, bp, r0, r1, jp0, jp1):
    _pack_b_rows(carray(b, (k, n)), carray(bp, (_packed_elements(k, n, 4),)), r0, r1, jp0,
                 jp1)


@cfunc(types.void(_P64, _N, _N, _P64, _N, _N, _N, _N), **_ENTRY)
def _pack_f64(b, k, n, bp, r0, r1, jp0, jp1):
    _pack_b_rows(carray(b, (k, n)), carray(bp, (_packed_elements(k, n, 8),)), r0, r1, jp0,
                 jp1)


@cfunc(types.void(_P32, _N, _N, _P32, _N, _N, _N, _N), **_ENTRY)
def _pack_t_f32(bt, k, n, bp, r0, r1, jp0, jp1):
    _pack_bt_rows(carray(bt, (n, k)), carray(bp, (_packed_elements(k, n, 4),)), r0, r1, jp0,
                  jp1)


@cfunc(types.void(_P64, _N, _N, _P64, _N, _N, _N, _N), **_ENTRY)
def _pack_t_f64(bt, k, n, bp, r0, r1, jp0, jp1):
    _pack_bt_rows(carray(bt, (n, k)), carray(bp, (_packed_elements(k, n, 8),)), r0, r1, jp0,
                  jp1)


def _symbol(entry, name: str, *args) -> types.ExternalFunction:
    """`entry` as an external symbol LLVM resolves by name when a kernel is linked, which keeps
    the kernels cacheable (an address would be baked into their code)."""
    llvm.add_symbol(name, entry.address)
    return types.ExternalFunction(name, types.void(*args))


_V = types.voidptr
_BLOCK32 = _symbol(_block_f32, "xla_explorer_gemm_block_f32", _V, _N, _N, _V, _V, *[_N] * 5)
_BLOCK64 = _symbol(_block_f64, "xla_explorer_gemm_block_f64", _V, _N, _N, _V, _V, *[_N] * 5)
_PACK32 = _symbol(_pack_f32, "xla_explorer_gemm_pack_f32", _V, _N, _N, _V, _N, _N, _N, _N)
_PACK64 = _symbol(_pack_f64, "xla_explorer_gemm_pack_f64", _V, _N, _N, _V, _N, _N, _N, _N)
# The same for an operand given transposed: A as A^T's rows, B as B^T's (q @ k.T).
_BLOCKT32 = _symbol(_block_t_f32, "xla_explorer_gemm_block_t_f32", _V, _N, _N, _V, _V, *[_N] * 5)
_BLOCKT64 = _symbol(_block_t_f64, "xla_explorer_gemm_block_t_f64", _V, _N, _N, _V, _V, *[_N] * 5)
_PACKT32 = _symbol(_pack_t_f32, "xla_explorer_gemm_pack_t_f32", _V, _N, _N, _V, _N, _N, _N, _N)
_PACKT64 = _symbol(_pack_t_f64, "xla_explorer_gemm_pack_t_f64", _V, _N, _N, _V, _N, _N, _N, _N)


@njit(inline="always")
def _transposed(x):
    """Whether x (2-d) is the transpose of a C-contiguous array rather than one itself: the
    two layouts the product reads. (Both at once only where they put every element in the
    same place.)"""
    if x.flags.c_contiguous:
        return False
    if not x.flags.f_contiguous:
        raise ValueError("the product reads C-contiguous operands or their transposes")
    return True


@njit(cache=True)
def product_block(a, bp, c, r0, r1, c0, c1):
    """C[r0:r1, c0:c1] of C = A @ B (arrays of one float type: C C-contiguous, A C-contiguous
    or the transpose of such an array), with B packed by `pack_b` into bp; c0 and c1 are
    where panels begin (or C's width)."""
    m, k = a.shape
    n = c.shape[1]
    if _transposed(a):
        if a.itemsize == 4:
            _BLOCKT32(a.ctypes.data, m, k, bp.ctypes.data, c.ctypes.data, n, r0, r1, c0, c1)
        else:
            _BLOCKT64(a.ctypes.data, m, k, bp.ctypes.data, c.ctypes.data, n, r0, r1, c0, c1)
    elif a.itemsize == 4:
        _BLOCK32(a.ctypes.data, m, k, bp.ctypes.data, c.ctypes.data, n, r0, r1, c0, c1)
    else:
        _BLOCK64(a.ctypes.data, m, k, bp.ctypes.data, c.ctypes.data, n, r0, r1, c0, c1)


@njit(cache=True)
def product_rows(a, bp, c, r0, r1):
    """Rows r0..r1 of C = A @ B, with B packed by `pack_b` into bp."""
    product_block(a, bp, c, _I(r0), _I(r1), _I(0), _I(c.shape[1]))


@njit(cache=True)
def _pack_rows(b, bp, r0, r1, jp0, jp1):
    k, n = b.shape
    if _transposed(b):  # b.ctypes.data is B^T's, n x k
        if b.itemsize == 4:
            _PACKT32(b.ctypes.data, k, n, bp.ctypes.data, r0, r1, jp0, jp1)
        else:
            _PACKT64(b.ctypes.data, k, n, bp.ctypes.data, r0, r1, jp0, jp1)
    elif b.itemsize == 4:
        _PACK32(b.ctypes.data, k, n, bp.ctypes.data, r0, r1, jp0, jp1)
    else:
        _PACK64(b.ctypes.data, k, n, bp.ctypes.data, r0, r1, jp0, jp1)


@njit(cache=True)
def pack_b(b, bp):
    """B (C-contiguous, or the transpose of a C-contiguous array) into panels in bp (from
    `packed_b`), on this thread."""
    _pack_rows(b, bp, _I(0), _I(b.shape[0]), _I(0), _I(_panels(b.shape[1], b.itemsize)))


@njit(parallel=True, cache=True)
def pack_b_parallel(b, bp):
    """B into panels in bp, its rows shared among the threads. (A Numba function, not an
    entry point: a C function cannot start Numba's threads.)"""
    k = b.shape[0]
    panels = _panels(b.shape[1], b.itemsize)
    if _transposed(b):  # a panel at a time, all its rows (see `_pack_bt_rows`)
        for p in prange(panels):
            _pack_rows(b, bp, _I(0), _I(k), _I(p), _I(p + 1))
        return
    for r in prange((k + PACK_ROWS - 1) // PACK_ROWS):
        _pack_rows(b, bp, _I(r * PACK_ROWS), _I(min(k, (r + 1) * PACK_ROWS)), _I(0), _I(panels))


@njit(cache=True)
def _pack_group(b, bp, counters, g, c0, c1):
    """Group g's panels of B (columns c0..c1) into bp, by every thread that comes to the
    group: each claims PACK_ROWS of B's rows at a time (a panel, of a B given transposed)
    and counts them once packed. Returns when every row is packed, so that the product can
    start. A thread only waits for rows
    another thread is packing, never for one yet to start: alone, it packs them all."""
    k = b.shape[0]
    jp0, jp1 = c0 // _nr(b.itemsize), _panels(c1, b.itemsize)
    claimed, packed = _counter(g, B_CLAIMED), _counter(g, B_PACKED)
    # What is claimed: PACK_ROWS rows of B across the group's panels; of a B given
    # transposed, a panel, all its rows (see `_pack_bt_rows`).
    transposed = _transposed(b)
    units, step = (jp1 - jp0, 1) if transposed else (k, PACK_ROWS)
    while True:
        u0 = fetch_add(counters, claimed, step)
        if u0 >= units:
            break
        u1 = min(units, u0 + step)
        if transposed:
            _pack_rows(b, bp, _I(0), _I(k), _I(jp0 + u0), _I(jp0 + u1))
        else:
            _pack_rows(b, bp, _I(u0), _I(u1), _I(jp0), _I(jp1))
        fetch_add(counters, packed, u1 - u0)
    while load_acquire(counters, packed) < units:
        pass


@njit(cache=True)
def next_product_block(b, bp, counters, m):
    """The next block of C = A @ B (m rows) that no thread has claimed, (r0, r1, c0, c1), or
    an empty one when every block is claimed: from this thread's own group of columns first
    (`claims`), packing its panels of B when it first comes to them, then from the other
    groups, helping to pack theirs if they are not yet packed. Called by every thread of
    a parallel loop, as long as it returns blocks."""
    n = b.shape[1]
    groups = counters[GROUPS]
    first = thread() % groups
    for step in range(groups):
        g = (first + step) % groups
        c0, c1 = group_columns(counters, g, n, b.itemsize)
        _pack_group(b, bp, counters, g, c0, c1)
        r0, r1 = next_rows(counters, g, m)
        if r0 < r1:
            return r0, r1, c0, c1
    return m, m, n, n


@njit(parallel=True, cache=True)
def product(a, b, c, work):
    """C = A @ B on every thread, B packed into `work` (at least `packed_b_size` bytes): what
    a dot kernel does, without its epilogue."""
    bp = packed_b(b, work)
    counters = claims(b)
    for _ in prange(64):
        while True:
            r0, r1, c0, c1 = next_product_block(b, bp, counters, a.shape[0])
            if r0 == r1:
                break
            product_block(a, bp, c, r0, r1, c0, c1)


# -- for an ahead-of-time module -------------------------------------------------------------
# An exported program (codegen/export/) has no symbols registered in this process to call
# the entry points above by: its kernels import these under the plain names instead, which
# call the same routines as Numba functions, so the product is compiled into the module.
# Serial only, as an exported program is.

@njit
def aot_product_block(a, bp, c, r0, r1, c0, c1):
    """`product_block`, the routine compiled into the caller."""
    _product_block(a, bp, c, _I(r0), _I(r1), _I(c0), _I(c1))


@njit
def aot_product_rows(a, bp, c, r0, r1):
    """`product_rows`, the routine compiled into the caller."""
    _product_block(a, bp, c, _I(r0), _I(r1), _I(0), _I(c.shape[1]))


@njit
def aot_pack_b(b, bp):
    """`pack_b`, the routine compiled into the caller."""
    k = b.shape[0]
    panels = _panels(b.shape[1], b.itemsize)
    if _transposed(b):  # b.T is B^T, C-contiguous
        _pack_bt_rows(b.T, bp, _I(0), _I(k), _I(0), _I(panels))
    else:
        _pack_b_rows(b, bp, _I(0), _I(k), _I(0), _I(panels))
