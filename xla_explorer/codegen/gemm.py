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
    (`_tile_packing`);
  - the micro-kernel (`_tile`) keeps an MR x NR tile of C in vector registers for KC steps,
    each step one broadcast of A per row and one fused multiply-add per register. It is
    written as LLVM IR with explicit vectors of the machine's width, since Numba has no
    intrinsics for them and LLVM's vectorizers do not keep accumulators in registers across
    a loop.

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
from llvmlite import ir  # noqa: E402
from numba import carray, cfunc, njit, prange, types  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

from .parallel import LINE, fetch_add, load_acquire, stack_array, thread, threads  # noqa: E402
from .target import cpu_features  # noqa: E402

__all__ = ["MR", "NV", "KC", "VECTOR_BYTES", "panel_width", "packed_b_size", "packed_b",
           "pack_b", "pack_b_parallel", "claims", "next_rows", "group_columns",
           "next_product_block", "product_block", "product_rows", "product"]


def _target_vectors() -> tuple[int, int]:
    """(bytes per vector register, number of vector registers) of the CPU Numba compiles
    for."""
    features = cpu_features()
    if "avx512f" in features:
        return 64, 32
    if {"avx2", "avx"} & features:
        return 32, 16
    if "neon" in features or llvm.get_host_cpu_name().startswith("apple"):
        return 16, 32
    return 16, 16


VECTOR_BYTES, _REGISTERS = _target_vectors()
# The register tile: MR rows of C, NV vector registers per row. MR * NV accumulators, NV
# registers for B's row and one broadcast must fit in the register file: 12 x 2 with 32
# registers (BLIS's Skylake-X tile, transposed for row-major C), 6 x 2 with 16 (Haswell's).
MR, NV = (12, 2) if _REGISTERS >= 32 else (6, 2)
# Rows of B per packed block: a micro-panel (KC x NR: 32 KiB of float32 at 512 bits) stays in
# L1 (docs/machine-facts.md) while every tile of an A block reuses it.
KC = 256
# Row panels per A block at most: the packed block (MC x KC, MC = 96 rows: 96 KiB of float32)
# stays in L2 while the micro-panels of B pass through L1.
MC_PANELS = 8
# Rows of B packed together, a panel at a time (a packing thread's claim, too): few enough
# that their loads stream, and that the threads' last claims end close together.
PACK_ROWS = 16

_JIT = dict(cache=True, error_model="numpy", fastmath=True)

# Elements of a thread's packed A block and of its edge tile: on the thread's stack
# (`_stack_array`), so a product allocates nothing on the heap but packed B.
_A_BLOCK = MC_PANELS * MR * KC
_EDGE_TILE = MR * NV * VECTOR_BYTES // 4


def panel_width(dtype) -> int:
    """NR: the columns of C one register tile covers, for `dtype`."""
    return NV * VECTOR_BYTES // np.dtype(dtype).itemsize


def _float_arrays(*arrays) -> bool:
    return (isinstance(arrays[0], types.Array) and arrays[0].dtype in (types.float32, types.float64)
            and all(isinstance(x, types.Array) and x.dtype == arrays[0].dtype for x in arrays))


def _data(context, builder, ty, value, offset):
    """Pointer to element `offset` of array `value` (of type `ty`) counted in its memory."""
    return builder.gep(context.make_array(ty)(context, builder, value).data, [offset])


def _emit_tile(context, builder, dtype, load_a, b_ptr, c_ptr, ldc, kc, accumulate, rows=MR,
               live=None):
    """The register tile's loop over k < kc, then its store to C (an add if `accumulate`):
    `rows` rows (a constant), of which the first `live` (a value; all if None) are stored.
    load_a(k, r) emits the load of A's element in row r, column k."""
    lanes = VECTOR_BYTES // (dtype.bitwidth // 8)
    nr = NV * lanes
    vec = ir.VectorType(context.get_value_type(dtype), lanes)
    intp = context.get_value_type(types.intp)

    def const(v):
        return ir.Constant(intp, v)

    fma = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vec, [vec] * 3), f"llvm.fma.v{lanes}f{dtype.bitwidth}")
    zero = ir.Constant(vec, None)
    undef = ir.Constant(vec, ir.Undefined)
    splat = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
    align = dtype.bitwidth // 8

    entry = builder.block
    loop = builder.function.append_basic_block("tile.k")
    done = builder.function.append_basic_block("tile.done")
    builder.cbranch(builder.icmp_signed(">", kc, const(0)), loop, done)

    # The loop over k: rows x NV accumulators live in registers as phi nodes.
    builder.position_at_end(loop)
    k = builder.phi(intp)
    acc = [[builder.phi(vec) for _ in range(NV)] for _ in range(rows)]
    b_row = builder.gep(b_ptr, [builder.mul(k, const(nr))])
    b_vecs = [builder.load(builder.bitcast(builder.gep(b_row, [const(v * lanes)]),
                                           vec.as_pointer()), align=align)
              for v in range(NV)]
    new = []
    for r in range(rows):
        x = load_a(k, r)
        xs = builder.shuffle_vector(
            builder.insert_element(undef, x, ir.Constant(ir.IntType(32), 0)), undef, splat)
        new.append([builder.call(fma, [xs, b_vecs[v], acc[r][v]]) for v in range(NV)])
    k_next = builder.add(k, const(1))
    latch = builder.block
    k.add_incoming(const(0), entry)
    k.add_incoming(k_next, latch)
    for r in range(rows):
        for v in range(NV):
            acc[r][v].add_incoming(zero, entry)
            acc[r][v].add_incoming(new[r][v], latch)
    builder.cbranch(builder.icmp_signed("<", k_next, kc), loop, done)

    # Write the tile back once.
    builder.position_at_end(done)
    sums = []
    for r in range(rows):  # phi nodes first: LLVM wants them at the top of the block
        row = []
        for v in range(NV):
            total = builder.phi(vec)
            total.add_incoming(zero, entry)
            total.add_incoming(new[r][v], latch)
            row.append(total)
        sums.append(row)

    def each_row(emit):
        """emit(sums, pointers) for each row of the tile that is stored."""
        for r in range(rows):
            c_row = builder.gep(c_ptr, [builder.mul(const(r), ldc)])
            ptrs = [builder.bitcast(builder.gep(c_row, [const(v * lanes)]), vec.as_pointer())
                    for v in range(NV)]
            if live is None:
                emit(sums[r], ptrs)
            else:
                with builder.if_then(builder.icmp_signed("<", const(r), live), likely=True):
                    emit(sums[r], ptrs)

    def add(totals, ptrs):
        for total, p in zip(totals, ptrs):
            builder.store(builder.fadd(builder.load(p, align=align), total), p, align=align)

    def store(totals, ptrs):
        for total, p in zip(totals, ptrs):
            builder.store(total, p, align=align)

    flag = builder.icmp_unsigned("!=", accumulate, ir.Constant(accumulate.type, 0))
    with builder.if_else(flag) as (then, otherwise):
        with then:
            each_row(add)
        with otherwise:
            each_row(store)


def _packed(builder, k, r):
    """Where a packed panel of A keeps its row r, column k: at k*MR + r."""
    return builder.add(builder.mul(k, ir.Constant(k.type, MR)), ir.Constant(k.type, r))


def _packed_a_tile(rows, short):
    """Code for a tile of `rows` rows reading A packed, from the arguments (a, a_off, b, b_off,
    c, c_off, ldc, kc, accumulate), and if `short`, (rows, live) after them."""
    def codegen(context, builder, signature, args):
        a_, a_off_, b_, b_off_, c_, c_off_, ldc_, kc_, accumulate_ = args[:9]
        aty, bty, cty = signature.args[0], signature.args[2], signature.args[4]
        a_ptr = _data(context, builder, aty, a_, a_off_)
        _emit_tile(context, builder, aty.dtype,
                   lambda k, r: builder.load(builder.gep(a_ptr, [_packed(builder, k, r)])),
                   _data(context, builder, bty, b_, b_off_),
                   _data(context, builder, cty, c_, c_off_), ldc_, kc_, accumulate_,
                   rows=rows, live=args[10] if short else None)
        return context.get_dummy_value()

    return codegen


@intrinsic
def _tile(typingctx, a, a_off, b, b_off, c, c_off, ldc, kc, accumulate):
    """C[c_off + r*ldc + j] (+)= sum over k < kc of A[a_off + k*MR + r] * B[b_off + k*NR + j],
    for r < MR, j < NR: one register tile, A packed. Stores when `accumulate` is false."""
    if not _float_arrays(a, b, c):
        return None
    sig = types.void(a, types.intp, b, types.intp, c, types.intp, types.intp, types.intp,
                     types.boolean)
    return sig, _packed_a_tile(MR, short=False)


@intrinsic
def _short_tile(typingctx, a, a_off, b, b_off, c, c_off, ldc, kc, accumulate, rows, live):
    """`_tile` over A's last row panel, where only `live` rows are left: `rows` rows (a
    constant, at least `live`) computed, the first `live` stored."""
    if not (_float_arrays(a, b, c) and isinstance(rows, types.IntegerLiteral)):
        return None
    sig = types.void(a, types.intp, b, types.intp, c, types.intp, types.intp, types.intp,
                     types.boolean, rows, types.intp)
    return sig, _packed_a_tile(rows.literal_value, short=True)


@intrinsic
def _tile_packing(typingctx, a, a_off, lda, ap, ap_off, b, b_off, c, c_off, ldc, kc,
                  accumulate):
    """`_tile` reading A unpacked (row r, column k at A[a_off + r*lda + k]) and packing it on
    the way: it writes each element it reads to ap[ap_off + k*MR + r], where `_tile` reads it
    for the next panels of B. The packing stores ride along with the multiply-adds instead of
    costing a pass over A of their own."""
    if not _float_arrays(a, ap, b, c):
        return None
    sig = types.void(a, types.intp, types.intp, ap, types.intp, b, types.intp, c, types.intp,
                     types.intp, types.intp, types.boolean)

    def codegen(context, builder, signature, args):
        a_, a_off_, lda_, ap_, ap_off_, b_, b_off_, c_, c_off_, ldc_, kc_, accumulate_ = args
        aty, apty, bty, cty = (signature.args[i] for i in (0, 3, 5, 7))
        a_ptr = _data(context, builder, aty, a_, a_off_)
        ap_ptr = _data(context, builder, apty, ap_, ap_off_)
        rows = [builder.gep(a_ptr, [builder.mul(ir.Constant(lda_.type, r), lda_)])
                for r in range(MR)]
        bits = ir.IntType(aty.dtype.bitwidth)

        def load_a(k, r):
            at = builder.gep(rows[r], [k])
            x = builder.load(at)
            # The element is copied to packed A through an integer register, loaded a second
            # time: stored from the vector register it is broadcast into, its store would
            # take a slot on the floating-point pipes the multiply-adds need
            # (docs/performance.md). The load is atomic (monotonic: a plain move on x86 and
            # Arm) only so that LLVM keeps it apart from the broadcast's load instead of
            # merging the two.
            copy = builder.load_atomic(builder.bitcast(at, bits.as_pointer()), "monotonic",
                                       bits.width // 8)
            builder.store(copy, builder.bitcast(builder.gep(ap_ptr, [_packed(builder, k, r)]),
                                                bits.as_pointer()))
            return x

        _emit_tile(context, builder, aty.dtype, load_a, _data(context, builder, bty, b_, b_off_),
                   _data(context, builder, cty, c_, c_off_), ldc_, kc_, accumulate_)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _stack_array(typingctx, like, size):
    """A 1-d array of `size` (a constant) elements of like's dtype in the calling function's
    stack frame: gone when it returns, never seen by an allocator."""
    if not isinstance(size, types.IntegerLiteral):
        return None
    n = size.literal_value
    array = types.Array(like.dtype, 1, "C")

    def codegen(context, builder, signature, args):
        return stack_array(context, builder, like.dtype, n)[0]

    return array(like, size), codegen


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


def packed_b_size(k: int, n: int, dtype) -> int:
    """Bytes that B (k x n) packed into panels takes at most, on any host: every panel NR wide
    (the last one padded with zeros), NR being at most two 512-bit registers. (The bound keeps
    generated source the same on every host.)"""
    widest = NV * 64 // np.dtype(dtype).itemsize
    return -(-n // widest) * widest * k * np.dtype(dtype).itemsize


@njit(**_JIT)
def packed_b(b, work):
    """Packed B's place at the start of `work`, a byte array of at least `packed_b_size`."""
    k, n = b.shape
    return work[:_packed_elements(k, n, b.itemsize) * b.itemsize].view(b.dtype)


@intrinsic
def _copy_panel_row(typingctx, src, src_off, dst, dst_off):
    """dst[dst_off:dst_off + NR] = src[src_off:src_off + NR]: NV vector loads and stores.
    (Written out, since LLVM leaves the packing loop's copy scalar.)"""
    if not _float_arrays(src, dst):
        return None

    def codegen(context, builder, signature, args):
        s, s_off, d, d_off = args
        sty, dty = signature.args[0], signature.args[2]
        lanes = VECTOR_BYTES // (sty.dtype.bitwidth // 8)
        vec = ir.VectorType(context.get_value_type(sty.dtype), lanes).as_pointer()
        s_ptr = _data(context, builder, sty, s, s_off)
        d_ptr = _data(context, builder, dty, d, d_off)
        align = sty.dtype.bitwidth // 8
        for v in range(NV):
            at = ir.Constant(s_off.type, v * lanes)
            x = builder.load(builder.bitcast(builder.gep(s_ptr, [at]), vec), align=align)
            builder.store(x, builder.bitcast(builder.gep(d_ptr, [at]), vec), align=align)
        return context.get_dummy_value()

    return types.void(src, types.intp, dst, types.intp), codegen


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
                _copy_panel_row(flat, k * n + jp * nr, bp, dst)
                dst += nr
        if full < jp1:  # the last panel, past B's last column: zeros
            dst = first + full * kc * nr
            for k in range(k0, k1):
                for j in range(nr):
                    col = full * nr + j
                    bp[dst + j] = b[k, col] if col < n else 0
                dst += nr
        k0 = k1


@intrinsic
def _transpose_strip(typingctx, src, src_off, ld, dst, dst_off):
    """dst[dst_off + k*NR + j] = src[src_off + j*ld + k] for j < NR, k < PACK_ROWS: NR rows
    of B's transpose, PACK_ROWS long, into PACK_ROWS rows of a panel of B. In square blocks
    of vector registers, each loaded along the rows and transposed in log2(lanes) rounds of
    shuffles (each round swaps one bit of the row number with that bit of the lane), then
    stored whole: element by element, the panel's stores or the strip's loads would go one
    scalar at a time."""
    if not _float_arrays(src, dst):
        return None

    def codegen(context, builder, signature, args):
        s, s_off, ld_, d, d_off = args
        sty, dty = signature.args[0], signature.args[3]
        lanes = VECTOR_BYTES // (sty.dtype.bitwidth // 8)
        vec = ir.VectorType(context.get_value_type(sty.dtype), lanes)
        s_ptr = _data(context, builder, sty, s, s_off)
        d_ptr = _data(context, builder, dty, d, d_off)
        align = sty.dtype.bitwidth // 8

        def const(v):
            return ir.Constant(s_off.type, v)

        def mask(indices):
            return ir.Constant(ir.VectorType(ir.IntType(32), lanes), indices)

        for jb in range(NV):
            for kb in range(PACK_ROWS // lanes):
                rows = []
                for j in range(lanes):
                    at = builder.add(builder.mul(const(jb * lanes + j), ld_), const(kb * lanes))
                    rows.append(builder.load(builder.bitcast(builder.gep(s_ptr, [at]),
                                                             vec.as_pointer()), align=align))
                bit = 1
                while bit < lanes:
                    for i in range(lanes):
                        if i & bit:
                            continue
                        lo, hi = rows[i], rows[i + bit]
                        rows[i] = builder.shuffle_vector(lo, hi, mask(
                            [c + lanes - bit if c & bit else c for c in range(lanes)]))
                        rows[i + bit] = builder.shuffle_vector(lo, hi, mask(
                            [c + lanes if c & bit else c + bit for c in range(lanes)]))
                    bit *= 2
                for k in range(lanes):
                    at = const((kb * lanes + k) * NV * lanes + jb * lanes)
                    builder.store(rows[k], builder.bitcast(builder.gep(d_ptr, [at]),
                                                           vec.as_pointer()), align=align)
        return context.get_dummy_value()

    return types.void(src, types.intp, types.intp, dst, types.intp), codegen


@njit(**_JIT)
def _pack_bt_rows(bt, bp, r0, r1, jp0, jp1):
    """`_pack_b_rows` for B given as its transpose, bt (n x k, C-contiguous): what q @ k.T
    hands the product. A panel's rows of B are NR rows of bt, transposed PACK_ROWS at a time
    on the way in (`_transpose_strip`). A panel at a time, all its rows: bt's NR rows are
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
                _transpose_strip(flat, src, kk, bp, dst)
            else:  # a block's last rows, fewer than PACK_ROWS, or the last panel: zero-padded
                for k in range(k1 - k0):
                    for j in range(nr):
                        bp[dst + k * nr + j] = flat[src + j * kk + k] if jp * nr + j < n else 0
            k0 = k1


@njit(**_JIT)
def _pack_a(a, i, pc, kc, ap, base):
    """A[i:i+MR, pc:pc+kc] into ap[base:], each column's MR elements contiguous: the order in
    which `_tile` reads them. Rows past A's end are zeros. (Panels of whole rows are packed by
    `_tile_packing` instead, as it computes with them.)"""
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
        _short_tile(ap, a_off, bp, b_off, c, c_off, ldc, kc, accumulate, _THIRD_TILE, left)
    elif left <= _TWO_THIRDS_TILE:
        _short_tile(ap, a_off, bp, b_off, c, c_off, ldc, kc, accumulate, _TWO_THIRDS_TILE,
                    left)
    else:
        _short_tile(ap, a_off, bp, b_off, c, c_off, ldc, kc, accumulate, MR, left)


@njit(**_JIT)
def _product_block(a, bp, c, r0, r1, c0, c1):
    """C[r0:r1, c0:c1] of C = A @ B, with B packed by `pack_b`; c0 and c1 are where panels
    begin (or C's width). A is C-contiguous, or the transpose of a C-contiguous array."""
    m, kk = a.shape
    n = c.shape[1]
    # A transposed is packed by `_pack_a`, which then reads each column's MR elements from
    # one place; `_tile_packing` reads A's rows.
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
    ap = _stack_array(a, _A_BLOCK)
    edge = _stack_array(a, _EDGE_TILE)
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
                            _tile_packing(a, i * kk + pc, kk, ap, a_off, bp, b_off,
                                          cf, i * n + j0, n, kc, later)
                        else:
                            _tile(ap, a_off, bp, b_off, cf, i * n + j0, n, kc, later)
                        continue
                    if jp < full:  # A's last rows, fewer than MR
                        _last_rows_tile(ap, a_off, bp, b_off, cf, i * n + j0, n, kc, later,
                                        m - i)
                        continue
                    # A tile over C's edge: computed whole, then its part inside C kept.
                    if packing:
                        _tile_packing(a, i * kk + pc, kk, ap, a_off, bp, b_off, edge, 0, nr,
                                      kc, False)
                    else:
                        _tile(ap, a_off, bp, b_off, edge, 0, nr, kc, False)
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
    product_block(a, bp, c, r0, r1, 0, c.shape[1])


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
    _pack_rows(b, bp, 0, b.shape[0], 0, _panels(b.shape[1], b.itemsize))


@njit(parallel=True, cache=True)
def pack_b_parallel(b, bp):
    """B into panels in bp, its rows shared among the threads. (A Numba function, not an
    entry point: a C function cannot start Numba's threads.)"""
    k = b.shape[0]
    panels = _panels(b.shape[1], b.itemsize)
    if _transposed(b):  # a panel at a time, all its rows (see `_pack_bt_rows`)
        for p in prange(panels):
            _pack_rows(b, bp, 0, k, p, p + 1)
        return
    for r in prange((k + PACK_ROWS - 1) // PACK_ROWS):
        _pack_rows(b, bp, r * PACK_ROWS, min(k, (r + 1) * PACK_ROWS), 0, panels)


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
            _pack_rows(b, bp, 0, k, jp0 + u0, jp0 + u1)
        else:
            _pack_rows(b, bp, u0, u1, jp0, jp1)
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
