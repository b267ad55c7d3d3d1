"""The matrix product inside a dot kernel, written for this CPU's vector registers.

XLA's CPU backend does not leave its dots to a system BLAS: it calls its own kernels or emits
tiled LLVM IR for them. This module does the same, in the classic layout of BLIS and of
OpenBLAS's own kernels (Goto's algorithm):

  - B is packed once per product into panels NR columns wide, KC rows at a time, so the
    innermost loop reads it contiguously: on the stack of the thread that packs it, a group
    of panels at a time (gemm_threads.py, and `group_width` for one thread), or, where even
    one panel is too deep for the stack (packing.py), into scratch space at the end of the
    executable's arena (`packed_b`);
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

`product_block` computes a block of C from B's panels for its columns, so a kernel can run
it in parallel (gemm_threads.py): each thread packs a group of C's columns, claims blocks of
their rows from an atomic counter and moves on to another group when its own are done, and
applies the kernel's epilogue to each block it has just made, while it is in cache.
Arrays are C-contiguous, but for A or B given transposed, as the transpose of a C-contiguous
array (B is `k.T` in q @ k.T): the packing reads them in that layout, so no kernel copies
them first. A is (m, k), B (k, n), C (m, n), all of one float dtype.
"""
from __future__ import annotations

# Numba's threads are started by codegen/parallel.py (imported through gemm_ir below), which
# first tells OpenMP how they wait and how much stack each gets: the product packs B there.
import numpy as np
from numba import carray, cfunc, njit, prange, types

from .gemm_ir import (MR, NV, PACK_ROWS, VECTOR_BYTES, copy_panel_row, local_array, short_tile,
                      tile, tile_packing, transpose_strip)
from . import objects
from .packing import WIDEST_PANEL_BYTES, packed_b_size

# packed_b_size, which the buffer assignment asks before Numba loads, sizes panels this wide.
assert NV * VECTOR_BYTES <= WIDEST_PANEL_BYTES

__all__ = ["MR", "NV", "KC", "VECTOR_BYTES", "panel_width", "packed_b_size", "packed_b",
           "tile_columns", "panels_of", "group_width", "pack_b", "pack_b_parallel",
           "pack_columns", "pack_columns_parallel", "pack_panels_at", "product_block",
           "product_block_at", "product_rows", "aot_pack_b", "aot_pack_columns",
           "aot_product_block", "aot_product_rows"]


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
# (`local_array`), as its packed B is where it fits.
_A_BLOCK = MC_PANELS * MR * KC
_EDGE_TILE = MR * NV * VECTOR_BYTES // 4


def panel_width(dtype) -> int:
    """NR: the columns of C one register tile covers, for `dtype`."""
    return NV * VECTOR_BYTES // np.dtype(dtype).itemsize




@njit(inline="always")
def tile_columns(itemsize):
    """NR, in a Numba function."""
    return NV * VECTOR_BYTES // itemsize


@njit(inline="always")
def panels_of(n, itemsize):
    """Panels of B (or of C) n columns wide: the last one padded."""
    nr = tile_columns(itemsize)
    return (n + nr - 1) // nr


@njit(inline="always")
def _packed_elements(k, n, itemsize):
    """Elements of B (k x n) packed by `pack_b` on this host."""
    return panels_of(n, itemsize) * tile_columns(itemsize) * k


@njit(inline="always")
def _columns_elements(k, c0, c1, itemsize):
    """Elements of the panels of B's columns c0..c1 (c0 where a panel begins), packed."""
    return (panels_of(c1, itemsize) - c0 // tile_columns(itemsize)) * tile_columns(itemsize) * k


@njit(**_JIT)
def packed_b(b, work):
    """Packed B's place at the start of `work`, a byte array of at least `packed_b_size`."""
    k, n = b.shape
    return work[:_packed_elements(k, n, b.itemsize) * b.itemsize].view(b.dtype)


@njit(**_JIT)
def group_width(b, bp):
    """How many of B's columns bp holds packed at once: whole panels, as many as fit (all of
    B's if they do). What a thread packs at a time, and computes C's columns for."""
    k, n = b.shape
    nr = tile_columns(b.itemsize)
    if k == 0:
        return max(n, 1)
    return min(max(n, 1), bp.size // (k * nr) * nr)


# Packed B is laid out in blocks of KC rows, each block the panels side by side, a panel's
# rows one after another. A buffer holds the panels q0..q1 (of columns q0 * NR up to
# q1 * NR): all of B's, or one group's.

@njit(**_JIT)
def _pack_b_rows(b, bp, q0, q1, r0, r1, jp0, jp1):
    """Rows r0..r1 of panels jp0..jp1 of B into their places in bp, which holds panels
    q0..q1 (block k // KC, row k % KC of each panel of that block), PACK_ROWS rows at a time,
    a panel at a time: the rows of one panel are contiguous in bp, so the stores stream, and
    few enough rows of B are read at once for the loads to stream too. (Row by row, each
    row's stores would land a panel apart, KC * NR elements; a whole block of rows a panel at
    a time would read KC rows of B at once, each its own stream: both slower,
    docs/performance.md.)"""
    kk, n = b.shape
    nr = tile_columns(b.itemsize)
    panels = q1 - q0
    full = n // nr
    flat = b.reshape(-1)
    k0 = r0
    while k0 < r1:
        pc = k0 - k0 % KC
        kc = min(KC, kk - pc)
        k1 = min(r1, pc + kc, k0 + PACK_ROWS)
        first = pc * panels * nr + (k0 - pc) * nr  # row k0 in the block's first panel
        for jp in range(jp0, min(jp1, full)):
            dst = first + (jp - q0) * kc * nr
            for k in range(k0, k1):
                copy_panel_row(flat, k * n + jp * nr, bp, dst)
                dst += nr
        if full < jp1:  # the last panel, past B's last column: zeros
            dst = first + (full - q0) * kc * nr
            for k in range(k0, k1):
                for j in range(nr):
                    col = full * nr + j
                    bp[dst + j] = b[k, col] if col < n else 0
                dst += nr
        k0 = k1


@njit(**_JIT)
def _pack_bt_rows(bt, bp, q0, q1, r0, r1, jp0, jp1):
    """`_pack_b_rows` for B given as its transpose, bt (n x k, C-contiguous): what q @ k.T
    hands the product. A panel's rows of B are NR rows of bt, transposed PACK_ROWS at a time
    on the way in (`transpose_strip`). A panel at a time, all its rows: bt's NR rows are
    read front to back and the panel written front to back, where PACK_ROWS rows of every
    panel at a time would read a few elements from each of bt's n rows, k elements apart."""
    n, kk = bt.shape
    nr = tile_columns(bt.itemsize)
    panels = q1 - q0
    full = n // nr
    flat = bt.reshape(-1)
    for jp in range(jp0, jp1):
        k0 = r0
        while k0 < r1:
            pc = k0 - k0 % KC
            kc = min(KC, kk - pc)
            k1 = min(r1, pc + kc, k0 + PACK_ROWS)
            # row k0 of this panel in its block
            dst = pc * panels * nr + (jp - q0) * kc * nr + (k0 - pc) * nr
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
    """C[r0:r1, c0:c1] of C = A @ B, with bp holding B's panels of columns c0..c1, packed by
    `pack_columns`; c0 and c1 are where panels begin (or C's width). A is C-contiguous, or
    the transpose of a C-contiguous array."""
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
    nr = tile_columns(a.itemsize)
    full = n // nr
    jp0, jp1 = c0 // nr, panels_of(c1, a.itemsize)
    panels = jp1 - jp0
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
                b_off = b_block + (jp - jp0) * kc * nr
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
# kernel's cold compile (docs/performance.md). Packed B is passed as an address: it may lie
# on another thread's stack (gemm_threads.py).

_P32, _P64, _N = types.CPointer(types.float32), types.CPointer(types.float64), types.intp
_ENTRY = dict(cache=True, error_model="numpy", fastmath=True)


@cfunc(types.void(_P32, _N, _N, _P32, _P32, _N, _N, _N, _N, _N), **_ENTRY)
def _block_f32(a, m, k, bp, c, n, r0, r1, c0, c1):
    _product_block(carray(a, (m, k)), carray(bp, (_columns_elements(k, c0, c1, 4),)),
                   carray(c, (m, n)), r0, r1, c0, c1)


@cfunc(types.void(_P64, _N, _N, _P64, _P64, _N, _N, _N, _N, _N), **_ENTRY)
def _block_f64(a, m, k, bp, c, n, r0, r1, c0, c1):
    _product_block(carray(a, (m, k)), carray(bp, (_columns_elements(k, c0, c1, 8),)),
                   carray(c, (m, n)), r0, r1, c0, c1)


@cfunc(types.void(_P32, _N, _N, _P32, _P32, _N, _N, _N, _N, _N), **_ENTRY)
def _block_t_f32(a, m, k, bp, c, n, r0, r1, c0, c1):
    _product_block(carray(a, (k, m)).T, carray(bp, (_columns_elements(k, c0, c1, 4),)),
                   carray(c, (m, n)), r0, r1, c0, c1)


@cfunc(types.void(_P64, _N, _N, _P64, _P64, _N, _N, _N, _N, _N), **_ENTRY)
def _block_t_f64(a, m, k, bp, c, n, r0, r1, c0, c1):
    _product_block(carray(a, (k, m)).T, carray(bp, (_columns_elements(k, c0, c1, 8),)),
                   carray(c, (m, n)), r0, r1, c0, c1)


_PACK_SIGNATURE = (_N,) * 6


@cfunc(types.void(_P32, _N, _N, _P32, *_PACK_SIGNATURE), **_ENTRY)
def _pack_f32(b, k, n, bp, q0, q1, r0, r1, jp0, jp1):
    size = (q1 - q0) * tile_columns(4) * k
    _pack_b_rows(carray(b, (k, n)), carray(bp, (size,)), q0, q1, r0, r1, jp0, jp1)


@cfunc(types.void(_P64, _N, _N, _P64, *_PACK_SIGNATURE), **_ENTRY)
def _pack_f64(b, k, n, bp, q0, q1, r0, r1, jp0, jp1):
    size = (q1 - q0) * tile_columns(8) * k
    _pack_b_rows(carray(b, (k, n)), carray(bp, (size,)), q0, q1, r0, r1, jp0, jp1)


@cfunc(types.void(_P32, _N, _N, _P32, *_PACK_SIGNATURE), **_ENTRY)
def _pack_t_f32(bt, k, n, bp, q0, q1, r0, r1, jp0, jp1):
    size = (q1 - q0) * tile_columns(4) * k
    _pack_bt_rows(carray(bt, (n, k)), carray(bp, (size,)), q0, q1, r0, r1, jp0, jp1)


@cfunc(types.void(_P64, _N, _N, _P64, *_PACK_SIGNATURE), **_ENTRY)
def _pack_t_f64(bt, k, n, bp, q0, q1, r0, r1, jp0, jp1):
    size = (q1 - q0) * tile_columns(8) * k
    _pack_bt_rows(carray(bt, (n, k)), carray(bp, (size,)), q0, q1, r0, r1, jp0, jp1)


def _symbol(entry, name: str, *args) -> types.ExternalFunction:
    """`entry` as an external symbol LLVM resolves by name when a kernel is linked, which keeps
    the kernels cacheable (an address would be baked into their code)."""
    objects.define(name, entry)
    return types.ExternalFunction(name, types.void(*args))


# Named anew when what they take changes: code cached against the older ones (Numba's cache
# does not track what a cached function calls) then fails to link instead of passing
# arguments the entry point reads differently.
_V = types.voidptr
_BLOCK = (_V, _N, _N, _V, _V, *[_N] * 5)
_PACK = (_V, _N, _N, _V, *[_N] * 6)
_BLOCK32 = _symbol(_block_f32, "xla_explorer_gemm_columns_block_f32", *_BLOCK)
_BLOCK64 = _symbol(_block_f64, "xla_explorer_gemm_columns_block_f64", *_BLOCK)
_PACK32 = _symbol(_pack_f32, "xla_explorer_gemm_pack_panels_f32", *_PACK)
_PACK64 = _symbol(_pack_f64, "xla_explorer_gemm_pack_panels_f64", *_PACK)
# The same for an operand given transposed: A as A^T's rows, B as B^T's (q @ k.T).
_BLOCKT32 = _symbol(_block_t_f32, "xla_explorer_gemm_columns_block_t_f32", *_BLOCK)
_BLOCKT64 = _symbol(_block_t_f64, "xla_explorer_gemm_columns_block_t_f64", *_BLOCK)
_PACKT32 = _symbol(_pack_t_f32, "xla_explorer_gemm_pack_panels_t_f32", *_PACK)
_PACKT64 = _symbol(_pack_t_f64, "xla_explorer_gemm_pack_panels_t_f64", *_PACK)


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
def product_block_at(a, bp, c, r0, r1, c0, c1):
    """`product_block` with packed B given by its address, bp (an integer): where it lies on
    another thread's stack."""
    m, k = a.shape
    n = c.shape[1]
    if _transposed(a):
        if a.itemsize == 4:
            _BLOCKT32(a.ctypes.data, m, k, bp, c.ctypes.data, n, r0, r1, c0, c1)
        else:
            _BLOCKT64(a.ctypes.data, m, k, bp, c.ctypes.data, n, r0, r1, c0, c1)
    elif a.itemsize == 4:
        _BLOCK32(a.ctypes.data, m, k, bp, c.ctypes.data, n, r0, r1, c0, c1)
    else:
        _BLOCK64(a.ctypes.data, m, k, bp, c.ctypes.data, n, r0, r1, c0, c1)


@njit(cache=True)
def product_block(a, bp, c, r0, r1, c0, c1):
    """C[r0:r1, c0:c1] of C = A @ B (arrays of one float type: C C-contiguous, A C-contiguous
    or the transpose of such an array), with bp holding B's panels of columns c0..c1, packed
    by `pack_columns`; c0 and c1 are where panels begin (or C's width)."""
    product_block_at(a, _I(bp.ctypes.data), c, r0, r1, c0, c1)


@njit(cache=True)
def product_rows(a, bp, c, r0, r1):
    """Rows r0..r1 of C = A @ B, with B packed by `pack_b` into bp."""
    product_block_at(a, _I(bp.ctypes.data), c, _I(r0), _I(r1), _I(0), _I(c.shape[1]))


@njit(cache=True)
def pack_panels_at(b, bp, q0, q1, r0, r1, jp0, jp1):
    """Rows r0..r1 of B's panels jp0..jp1 into bp, the address of a buffer that holds
    panels q0..q1 packed."""
    k, n = b.shape
    if _transposed(b):  # b.ctypes.data is B^T's, n x k
        if b.itemsize == 4:
            _PACKT32(b.ctypes.data, k, n, bp, q0, q1, r0, r1, jp0, jp1)
        else:
            _PACKT64(b.ctypes.data, k, n, bp, q0, q1, r0, r1, jp0, jp1)
    elif b.itemsize == 4:
        _PACK32(b.ctypes.data, k, n, bp, q0, q1, r0, r1, jp0, jp1)
    else:
        _PACK64(b.ctypes.data, k, n, bp, q0, q1, r0, r1, jp0, jp1)


@njit(cache=True)
def pack_columns(b, bp, c0, c1):
    """The panels of columns c0..c1 of B (C-contiguous, or the transpose of a C-contiguous
    array; c0 where a panel begins) into bp, on this thread: what `product_block` reads."""
    q0, q1 = _I(c0 // tile_columns(b.itemsize)), _I(panels_of(c1, b.itemsize))
    pack_panels_at(b, _I(bp.ctypes.data), q0, q1, _I(0), _I(b.shape[0]), q0, q1)


@njit(parallel=True, cache=True)
def pack_columns_parallel(b, bp, c0, c1):
    """`pack_columns`, B's rows shared among the threads. (A Numba function, not an entry
    point: a C function cannot start Numba's threads.)"""
    k = b.shape[0]
    at = _I(bp.ctypes.data)
    q0, q1 = c0 // tile_columns(b.itemsize), panels_of(c1, b.itemsize)
    if _transposed(b):  # a panel at a time, all its rows (see `_pack_bt_rows`)
        for p in prange(q1 - q0):
            pack_panels_at(b, at, _I(q0), _I(q1), _I(0), _I(k), _I(q0 + p), _I(q0 + p + 1))
        return
    for r in prange((k + PACK_ROWS - 1) // PACK_ROWS):
        pack_panels_at(b, at, _I(q0), _I(q1), _I(r * PACK_ROWS),
                       _I(min(k, (r + 1) * PACK_ROWS)), _I(q0), _I(q1))


@njit(cache=True)
def pack_b(b, bp):
    """B (C-contiguous, or the transpose of a C-contiguous array) into panels in bp (from
    `packed_b`, or as large), on this thread."""
    pack_columns(b, bp, _I(0), _I(b.shape[1]))


@njit(cache=True)
def pack_b_parallel(b, bp):
    """`pack_b`, B's rows shared among the threads."""
    pack_columns_parallel(b, bp, _I(0), _I(b.shape[1]))


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
def aot_pack_columns(b, bp, c0, c1):
    """`pack_columns`, the routine compiled into the caller."""
    k = b.shape[0]
    q0, q1 = c0 // tile_columns(b.itemsize), panels_of(c1, b.itemsize)
    if _transposed(b):  # b.T is B^T, C-contiguous
        _pack_bt_rows(b.T, bp, _I(q0), _I(q1), _I(0), _I(k), _I(q0), _I(q1))
    else:
        _pack_b_rows(b, bp, _I(q0), _I(q1), _I(0), _I(k), _I(q0), _I(q1))


@njit
def aot_pack_b(b, bp):
    """`pack_b`, the routine compiled into the caller."""
    aot_pack_columns(b, bp, _I(0), _I(b.shape[1]))
