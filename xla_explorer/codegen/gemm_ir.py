"""The register tile of the matrix product (codegen/gemm.py), written as LLVM IR.

Numba has no intrinsics for explicit vectors, and LLVM's vectorizers do not keep accumulators
in registers across a loop, so the innermost parts of the product are emitted here as IR with
vectors of the machine's width: the MR x NR register tile (`tile`, `short_tile`, and
`tile_packing`, which packs A as it reads it), the packing copies of B (`copy_panel_row`,
`transpose_strip`) and a scratch array in the caller's stack frame (`local_array`). The
register facts (VECTOR_BYTES, MR, NV) are the host's, read from the CPU Numba compiles for.
"""
from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .parallel import stack_array
from .target import cpu_features

__all__ = ["VECTOR_BYTES", "MR", "NV", "PACK_ROWS", "tile", "short_tile", "tile_packing",
           "local_array", "local_bytes", "copy_panel_row", "transpose_strip"]


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
# Rows of B packed together, a panel at a time (a packing thread's claim, too): few enough
# that their loads stream, and that the threads' last claims end close together.
PACK_ROWS = 16


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
def tile(typingctx, a, a_off, b, b_off, c, c_off, ldc, kc, accumulate):
    """C[c_off + r*ldc + j] (+)= sum over k < kc of A[a_off + k*MR + r] * B[b_off + k*NR + j],
    for r < MR, j < NR: one register tile, A packed. Stores when `accumulate` is false."""
    if not _float_arrays(a, b, c):
        return None
    sig = types.void(a, types.intp, b, types.intp, c, types.intp, types.intp, types.intp,
                     types.boolean)
    return sig, _packed_a_tile(MR, short=False)


@intrinsic
def short_tile(typingctx, a, a_off, b, b_off, c, c_off, ldc, kc, accumulate, rows, live):
    """`tile` over A's last row panel, where only `live` rows are left: `rows` rows (a
    constant, at least `live`) computed, the first `live` stored."""
    if not (_float_arrays(a, b, c) and isinstance(rows, types.IntegerLiteral)):
        return None
    sig = types.void(a, types.intp, b, types.intp, c, types.intp, types.intp, types.intp,
                     types.boolean, rows, types.intp)
    return sig, _packed_a_tile(rows.literal_value, short=True)


@intrinsic
def tile_packing(typingctx, a, a_off, lda, ap, ap_off, b, b_off, c, c_off, ldc, kc,
                  accumulate):
    """`tile` reading A unpacked (row r, column k at A[a_off + r*lda + k]) and packing it on
    the way: it writes each element it reads to ap[ap_off + k*MR + r], where `tile` reads it
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


# Where a local array starts: on a cache line, as the arena's buffers do, so that a vector
# load of a packed panel never straddles two lines.
_LINE_BYTES = 64


@intrinsic
def local_array(typingctx, like, size):
    """A 1-d array of `size` (a constant) elements of like's dtype in the calling function's
    stack frame, starting on a cache line: gone when it returns, never seen by an
    allocator."""
    if not isinstance(size, types.IntegerLiteral):
        return None
    n = size.literal_value
    array = types.Array(like.dtype, 1, "C")

    def codegen(context, builder, signature, args):
        return stack_array(context, builder, like.dtype, n, align=_LINE_BYTES)[0]

    return array(like, size), codegen


@intrinsic
def local_bytes(typingctx, like, nbytes):
    """`local_array` of as many of like's elements as `nbytes` (a constant) bytes hold."""
    if not isinstance(nbytes, types.IntegerLiteral):
        return None
    n = nbytes.literal_value // (like.dtype.bitwidth // 8)
    array = types.Array(like.dtype, 1, "C")

    def codegen(context, builder, signature, args):
        return stack_array(context, builder, like.dtype, n, align=_LINE_BYTES)[0]

    return array(like, nbytes), codegen


@intrinsic
def copy_panel_row(typingctx, src, src_off, dst, dst_off):
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


@intrinsic
def transpose_strip(typingctx, src, src_off, ld, dst, dst_off):
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
