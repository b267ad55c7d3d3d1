"""Scalar helpers that generated Numba kernels call, one per HLO semantic that Python's own
operators do not give.

Each helper is `@njit(inline="always")` (maximum, minimum, their reduction steps, add_reassoc
and multiply_reassoc are Numba intrinsics, see there):
Numba pastes its body into the kernel before typing, so the kernel's `fastmath` and
`error_model` apply to it and LLVM sees one loop body it can vectorize. Bodies are written as
selects (`a if c else b` on cheap operands, `|` and `&` on bools) rather than early returns, for
the same reason; all but int_divide, int_remainder and int_power vectorize (x86 has no vector
integer division, and a power loops over the exponent's bits).

The helpers are generic over element types: `type(x)(c)` makes a constant of x's own type
(a float32 kernel stays in float32) and `np.iinfo(type(x))` gives an integer type's width.
Each returns exactly the type of its (first) operand, so callers never need to cast.

Float `exp`, `log` and `tanh` come from `fastmath.py` (polynomials that vectorize, where
NumPy's are library calls in Numba); they are re-exported here so a kernel needs one import.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm_ir

from . import numba_start  # noqa: F401  (before anything loads Numba's registries)
from numba import njit, types
from numba.core import cgutils
from numba.core.extending import intrinsic, overload

__all__ = [
    "maximum", "minimum", "maximum_nsz", "minimum_nsz", "clamp", "add_reassoc", "multiply_reassoc", "sign", "round_afz", "rsqrt",
    "int_divide", "int_remainder", "int_power", "uint_divide", "uint_remainder",
    "shift_left", "shift_right_arithmetic", "uint_shift_right_arithmetic",
    "shift_right_logical",
    "float_to_int", "prefetch_read", "prefetch_write",
    "f16_load", "f16_bits", "f16_round", "f16_round_f64", "f16_from", "stack_empty",
    "nonnegative", "as_matrix", "contiguous",
]


# -- a kernel's small scratch arrays ----------------------------------------------------------
# A row a kernel keeps between its passes (softmax's exponentials), or a parallel loop's
# partial sums, is a few kilobytes at most. np.empty would take them from the heap on every
# call, and cost Numba a compile of np.empty's implementation, about 0.07 s, in each process
# and for each signature it is called with: a cold start waited for it. On the stack they
# cost neither. (codegen/cpu decides what is small: STACK_SCRATCH_BYTES.)

@intrinsic
def stack_empty(typingctx, dtype, size):
    """np.empty(size, dtype) (size a constant) in the calling function's stack frame, made
    once in its entry block: gone when it returns. A parallel loop's threads each get their
    own when it is called inside the loop."""
    if not isinstance(size, types.IntegerLiteral) or not isinstance(dtype, types.NumberClass):
        return None
    element, n = dtype.instance_type, size.literal_value

    def codegen(context, builder, signature, args):
        # Imported as the kernel compiles, not with this module, which every kernel imports.
        from .parallel import stack_array
        return stack_array(context, builder, element, n, align=64)[0]

    return types.Array(element, 1, "C")(dtype, size), codegen


@intrinsic
def nonnegative(typingctx, i):
    """i, which the caller knows is not negative, said to LLVM (`llvm.assume`). A block's
    loop starts where LLVM cannot see that it is not negative, so it would keep NumPy's
    wraparound for negative indices (i < 0 ? i + n : i) in every array access, and the loop
    would gather its elements one at a time (a vector gather, or no vectors at all), far
    slower than loading them side by side (docs/performance.md). prange's own loops
    are known not to be negative. (Here, not in codegen/parallel.py, which starts threads
    on import: a serial kernel's blocked row sum needs it too.)"""
    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        (x,) = args
        assume = builder.module.declare_intrinsic(
            "llvm.assume", fnty=llvm_ir.FunctionType(llvm_ir.VoidType(), [llvm_ir.IntType(1)]))
        builder.call(assume, [builder.icmp_signed(">=", x, llvm_ir.Constant(x.type, 0))])
        return x

    return i(i), codegen


def contiguous_view(context, builder, result, data, dims, parent):
    """Codegen of an intrinsic that views memory: the C-contiguous array of type `result`
    over `data` (a pointer to its elements) with sizes `dims` (intp values), sharing the
    memory of `parent` (an array's struct) and keeping it alive, as NumPy's views do. One
    array made in a few instructions, where `reshape` or `view` would cost Numba a compile
    of its implementation for each type (codegen/cpu/views.py)."""
    from numba.core.imputils import impl_ret_borrowed
    from numba.np.arrayobj import populate_array

    intp = context.get_value_type(types.intp)
    itemsize = llvm_ir.Constant(intp, context.get_abi_sizeof(context.get_data_type(result.dtype)))
    strides, stride = [], itemsize
    for d in reversed(dims):
        strides.insert(0, stride)
        stride = builder.mul(stride, d)
    out = context.make_array(result)(context, builder)
    populate_array(out, data=data, shape=cgutils.pack_array(builder, dims, ty=intp),
                   strides=cgutils.pack_array(builder, strides, ty=intp), itemsize=itemsize,
                   meminfo=parent.meminfo, parent=parent.parent)
    return impl_ret_borrowed(context, builder, result, out._getvalue())


@intrinsic
def as_matrix(typingctx, array, rows, cols):
    """A C-contiguous array (a vector, a scalar's 0-d array) as the rows x cols matrix of
    its elements, the same memory: a product's vector operand read as a matrix, where
    `reshape` would cost Numba a compile of its implementation for each type (tens of
    milliseconds in a cold start). The caller vouches that rows * cols is its size."""
    if not (isinstance(array, types.Array) and array.layout == "C"
            and isinstance(rows, types.Integer) and isinstance(cols, types.Integer)):
        return None
    result = types.Array(array.dtype, 2, "C")

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        dims = [context.cast(builder, v, t, types.intp)
                for v, t in zip(args[1:], signature.args[1:])]
        return contiguous_view(context, builder, result, src.data, dims, src)

    return result(array, rows, cols), codegen


@intrinsic
def contiguous(typingctx, array):
    """np.ascontiguousarray(array), which a kernel's array already is, almost always (the
    runtime passes C-contiguous arrays): then the array itself, where Numba would compile
    NumPy's function for each array type (about 0.02 s each in a cold start); else NumPy's
    copy, as np.ascontiguousarray makes it (a 0-d array's a 1-d one)."""
    if not isinstance(array, types.Array):
        return None
    result = (array if array.ndim and array.layout == "C"
              else types.Array(array.dtype, max(array.ndim, 1), "C"))

    def codegen(context, builder, signature, args):
        from numba.core.imputils import impl_ret_borrowed

        if signature.args[0] == signature.return_type:
            return impl_ret_borrowed(context, builder, signature.return_type, args[0])
        return context.compile_internal(builder, lambda a: np.ascontiguousarray(a), signature,
                                        args)

    return result(array), codegen


# -- maximum, minimum and clamp -------------------------------------------------------------
# Element-wise, np.maximum(a, b) is `a if (a > b or a is NaN) else b`: NaN if either is NaN,
# and b where the two compare equal, so np.maximum(-0.0, +0.0) is +0.0 and np.maximum(+0.0,
# -0.0) is -0.0 (a relu keeps +0.0 at x = -0.0, and 1 / relu(x) is +inf there). `maximum` and
# `minimum` give exactly that: a compare, an unordered test of a and a select, which vectorize
# to vmaxps / vcmpunordps / vblendvps like LLVM's own `llvm.maximum`.
#
# A reduction's step is `maximum_nsz` / `minimum_nsz`: LLVM's `llvm.maximum` / `llvm.minimum`
# (NaN-propagating, IEEE 754-2019) with `nsz`, which the loop vectorizer takes as a reduction
# in any order, where it leaves a select with a NaN test scalar, one element at a time
# (docs/performance.md). Which zero the max of -0.0 and +0.0 is stays open there, as
# it does in NumPy's own reductions (their SIMD loops leave it to the order they combine in);
# without nsz each vector maximum also needs a sign test and a blend.
# Integers are a signed (or unsigned) compare and select, pred is or / and.


def _min_max(name: str, cmp: str, fcmp: str, logical: str, step: bool):
    @intrinsic
    def op(typingctx, a, b):
        t = typingctx.unify_types(a, b)
        if not isinstance(t, (types.Float, types.Integer, types.Boolean)):
            return None

        def codegen(context, builder, sig, args):
            x, y = (context.cast(builder, v, ty, t) for v, ty in zip(args, sig.args))
            if isinstance(t, types.Float) and step:
                fnty = llvm_ir.FunctionType(x.type, [x.type, x.type])
                fn = builder.module.declare_intrinsic(f"llvm.{name}", [x.type], fnty)
                return builder.call(fn, [x, y], fastmath=("nsz",))
            if isinstance(t, types.Float):
                # x where it wins or is NaN, else y (y on a tie, and y's NaN).
                wins = builder.or_(builder.fcmp_ordered(fcmp, x, y),
                                   builder.fcmp_unordered("uno", x, x))
                return builder.select(wins, x, y)
            if isinstance(t, types.Boolean):
                return getattr(builder, logical)(x, y)
            icmp = builder.icmp_signed if t.signed else builder.icmp_unsigned
            return builder.select(icmp(cmp, x, y), x, y)

        return t(a, b), codegen

    op.__name__ = op.__qualname__ = f"{name}_nsz" if step else name
    return op


maximum = _min_max("maximum", ">=", ">", "or_", step=False)
maximum.__doc__ = "np.maximum of two scalars, to the bit: NaN if either is NaN, b on a tie."
minimum = _min_max("minimum", "<=", "<", "and_", step=False)
minimum.__doc__ = "np.minimum of two scalars, to the bit: NaN if either is NaN, b on a tie."
maximum_nsz = _min_max("maximum", ">=", ">", "or_", step=True)
maximum_nsz.__doc__ = ("The step of a max-reduction: NaN if either is NaN, either zero on "
                       "-0.0 against +0.0.")
minimum_nsz = _min_max("minimum", "<=", "<", "and_", step=True)
minimum_nsz.__doc__ = ("The step of a min-reduction: NaN if either is NaN, either zero on "
                       "-0.0 against +0.0.")


@njit(inline="always")
def clamp(lo, x, hi):
    """HLO clamp(lo, x, hi) as np.clip(x, lo, hi) with scalar bounds: NaN if any of the three
    is NaN, x itself where it equals a bound (np.clip(+0.0, -0.0, 1) is +0.0), hi where lo > hi.
    Not minimum(maximum(x, lo), hi), which gives the bound on a tie."""
    t = lo if (lo > x) | (lo != lo) else x
    return hi if (hi < t) | (hi != hi) else t


# -- a reduction's accumulation step --------------------------------------------------------
# Kernels are compiled without fastmath's `reassoc`, so that their element-wise arithmetic
# rounds as NumPy's does (with it, LLVM rewrote x + y - y to x and (x * 2) * 0 to 0). The
# order of a sum is unspecified in NumPy and XLA alike, and LLVM's loop vectorizer splits a
# loop-carried fadd or fmul into vector partial sums only when that instruction carries
# `reassoc`: so the accumulation step is built here, with that flag on it alone (all the
# vectorizer asks for; `contract` would fuse a product into the sum, `nsz` open the sign of
# a zero sum).

ACCUMULATE_FLAGS = ("reassoc",)


def _accumulate_step(opname: str):
    @intrinsic
    def step(typingctx, acc, x):
        if not (isinstance(acc, types.Float) and x == acc):
            return None  # only a float accumulator, and a value of its own type

        def codegen(context, builder, sig, args):
            instr = getattr(builder, opname)(*args)
            # Numba's fastmath pass gives the kernel's flags only to instructions with none.
            instr.flags.extend(ACCUMULATE_FLAGS)
            return instr

        return acc(acc, x), codegen

    return step


add_reassoc = _accumulate_step("fadd")
add_reassoc.__doc__ = "acc + x, which LLVM may reassociate: the step of a float sum."
multiply_reassoc = _accumulate_step("fmul")
multiply_reassoc.__doc__ = "acc * x, which LLVM may reassociate: the step of a float product."


# -- sign and rounding ----------------------------------------------------------------------


@njit(inline="always")
def sign(x):
    """np.sign: -1, 0 or 1 in x's type; NaN stays NaN and both zeros give +0. (-1 is made
    only where x is negative: the CUDA simulator's NumPy scalars refuse uint8(-1).)"""
    zero, one = type(x)(0), type(x)(1)
    return one if x > zero else (type(x)(-1) if x < zero else (zero if x == zero else x))


@njit(inline="always")
def round_afz(x):
    """round-nearest-afz: halves away from zero, exactly (x - trunc(x) is exact, where
    x + 0.5 would round first)."""
    t = np.trunc(x)
    away = t + (type(x)(1) if x > type(x)(0) else type(x)(-1))
    return away if abs(x - t) >= type(x)(0.5) else t


@njit(inline="always")
def rsqrt(x):
    """1 / sqrt(x). Kernels are compiled without fastmath's `arcp` (which would make a float32
    1 / sqrt a hardware estimate, NaN at 0 and Inf); the edges are still put back in case a
    caller compiles with it."""
    r = type(x)(1) / np.sqrt(x)
    r = np.copysign(type(x)(np.inf), x) if x == type(x)(0) else r
    return type(x)(0) if x == type(x)(np.inf) else r


# -- integer division, remainder and power -----------------------------------------------
# HLO integer division truncates toward zero and defines the cases C leaves undefined:
# x / 0 = -1, x % 0 = x, and INT_MIN / -1 = INT_MIN (wraps), INT_MIN % -1 = 0. The divisor is
# replaced by 1 for 0 and -1 before dividing, because x86 traps on INT_MIN / -1.


@njit(inline="always")
def _safe_divisor(b):
    return type(b)(1) if (b == type(b)(0)) | (b == type(b)(-1)) else b


@njit(inline="always")
def int_divide(a, b):
    d = _safe_divisor(b)
    q = a // d  # floor division: one more than the truncated quotient when inexact and < 0
    q = q + ((q < 0) & (q * d != a))
    t = type(a)
    return t(-1) if b == t(0) else (t(-a) if b == t(-1) else t(q))


@njit(inline="always")
def int_remainder(a, b):
    d = _safe_divisor(b)
    r = a % d  # Python's remainder takes the divisor's sign; HLO's takes the dividend's
    r = r - d if (r != 0) & ((r < 0) != (a < 0)) else r
    t = type(a)
    return a if b == t(0) else t(r)


# Unsigned division has no INT_MIN / -1 case (and -1 is the largest value there): only the
# divisor 0 is replaced. x / 0 is all ones, the type's largest value.


@njit(inline="always")
def uint_divide(a, b):
    t = type(a)
    d = t(1) if b == t(0) else b
    return t(~t(0)) if b == t(0) else t(a // d)


@njit(inline="always")
def uint_remainder(a, b):
    t = type(a)
    d = t(1) if b == t(0) else b
    return a if b == t(0) else t(a % d)


@njit(inline="always")
def int_power(a, b):
    """a ** b by squaring, wrapping on overflow as np.power does (0 ** 0 = 1). A negative
    exponent, which np.power refuses for integers, gives XLA's answer: 1 if a == 1 else 0."""
    t = type(a)
    acc = t(1)
    base = a
    e = b
    while e > 0:
        acc = t(acc * base) if e & 1 else acc
        base = t(base * base)
        e = e >> 1
    return acc if b >= t(0) else (t(1) if a == t(1) else t(0))


# -- shifts ---------------------------------------------------------------------------------
# XLA reads shift amounts as unsigned: a negative amount, or one of at least the width, shifts
# every bit out (0, or the sign for an arithmetic right shift). LLVM leaves such shifts
# undefined, so the amount is masked into range before shifting and the result selected after.


@njit(inline="always")
def shift_left(a, b):
    bits = np.iinfo(type(a)).bits
    out = type(a)(a << (b & type(b)(bits - 1)))
    return type(a)(0) if (b < 0) | (b >= bits) else out


@njit(inline="always")
def shift_right_arithmetic(a, b):
    bits = np.iinfo(type(a)).bits
    amount = bits - 1 if (b < 0) | (b >= bits) else b
    return type(a)(a >> amount)


@njit(inline="always")
def uint_shift_right_arithmetic(a, b):
    """An unsigned a shifted as the signed integer of its bits (XLA's semantics): where its
    top bit is set, ~(~a >> b) fills with ones."""
    t = type(a)
    bits = np.iinfo(t).bits
    # constants in b's type: Numba computes uint64 with int64 in float64
    amount = type(b)(bits - 1) if b >= type(b)(bits) else b
    top = t(a >> t(bits - 1)) != t(0)
    return t(~t(t(~a) >> amount)) if top else t(a >> amount)


@njit(inline="always")
def shift_right_logical(a, b):
    bits = np.iinfo(type(a)).bits
    # Zero-extend a's bits into uint64 (the mask drops the sign extension of narrow types).
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)
    unsigned = np.uint64(a) & mask
    out = type(a)(unsigned >> np.uint64(b & type(b)(bits - 1)))
    return type(a)(0) if (b < 0) | (b >= bits) else out


# -- conversion -----------------------------------------------------------------------------


@njit(inline="always")
def float_to_int(x, to):
    """convert float -> integer type `to` as XLA does: truncate, saturate at the type's
    limits, NaN -> 0 (C and LLVM leave out-of-range conversions undefined)."""
    info = np.iinfo(to)
    # The limits in x's own type (so a float32 loop stays float32): lo = -2**(bits-1) exactly;
    # hi is 2**(bits-1) where x's type cannot hold 2**(bits-1) - 1, and x >= hi saturates
    # either way.
    lo, hi = type(x)(info.min), type(x)(info.max)
    inside = (x > lo) & (x < hi)  # false for NaN
    out = to(x if inside else type(x)(0))
    out = to(info.max) if x >= hi else out
    return to(info.min) if x <= lo else out


# -- float16 --------------------------------------------------------------------------------
# Numba cannot load, store or compute float16. A float16 array reaches a kernel as its bits
# (a uint16 view); a float16 value lives in a float32 register: `f16_load` widens the bits
# (exactly), `f16_bits` rounds a float32 to the nearest float16 (ties to even; overflow to
# Inf, subnormals and NaN kept) and gives its bits for a store. Both are integer arithmetic on
# the float32 bits, so they need neither F16C instructions nor a runtime library.


@intrinsic
def _f32_to_u32(typingctx, x):
    if x != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], llvm_ir.IntType(32))

    return types.uint32(x), codegen


@intrinsic
def _u32_to_f32(typingctx, u):
    if not isinstance(u, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        bits = context.cast(builder, args[0], sig.args[0], types.uint32)
        return builder.bitcast(bits, llvm_ir.FloatType())

    return types.float32(u), codegen


@njit(inline="always")
def f16_load(h):
    """The float32 of float16 bits `h`: the exponent rebiased (127 - 15), the 10 mantissa
    bits moved up by 13; a subnormal is its mantissa times 2**-24; Inf and NaN kept."""
    b = np.int64(h)
    sign = (b & 0x8000) << 16
    e = (b >> 10) & 0x1F
    m = b & 0x3FF
    bits = sign | (0x7F800000 | (m << 13) if e == 0x1F else ((e + 112) << 23) | (m << 13))
    tiny = np.float32(m) * np.float32(2.0 ** -24)
    tiny = -tiny if sign else tiny
    return tiny if e == 0 else _u32_to_f32(bits)


@njit(inline="always")
def f16_bits(x):
    """The bits of the float16 nearest the float32 `x` (ties to even)."""
    u = np.int64(_f32_to_u32(np.float32(x)))
    sign = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    # normal: rebias the exponent, then round off 13 mantissa bits (a carry may step the
    # exponent, up to Inf)
    t = a - 0x38000000
    normal = (t + 0x0FFF + ((t >> 13) & 1)) >> 13
    # subnormal: the 24-bit significand shifted into units of 2**-24, rounded to even
    e = a >> 23
    shift = min(max(126 - e, 1), 31)
    m = (a & 0x7FFFFF) | 0x800000
    q = m >> shift
    rest = m & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    sub = q + ((rest > half) | ((rest == half) & ((q & 1) == 1)))
    h = (0x7C00 | 0x0200 | ((a & 0x7FFFFF) >> 13)) if a > 0x7F800000 else (
        0x7C00 if a >= 0x477FF000 else (
            normal if a >= 0x38800000 else (sub if a > 0x33000000 else 0)))
    return np.uint16(sign | h)


@njit(inline="always")
def f16_round(x):
    """The float32 `x` rounded to float16 precision and range (an HLO convert to f16)."""
    return f16_load(f16_bits(x))


@njit(inline="always")
def f16_round_f64(x):
    """A float64 rounded to float16 in one rounding, as a float32. Through a float32 rounded
    to odd (an inexact result takes the neighbour with an odd last bit): a float32 has bits
    enough past float16's that the second rounding then sees every tie as the first would."""
    y = np.float32(x)
    bits = _f32_to_u32(y)
    inexact = (np.float64(y) != x) & (x == x) & ((bits & np.uint32(1)) == np.uint32(0))
    toward = abs(np.float64(y)) < abs(x)
    odd = _u32_to_f32(bits + np.uint32(1) if toward else bits - np.uint32(1))
    return f16_round(odd if inexact else y)


def f16_from(x):
    """An HLO convert to f16 of x (a bool, an integer or a float): the float16 nearest x, in
    one rounding, held in a float32. In kernels, the overload below."""
    return np.float32(np.float16(x))


@overload(f16_from)
def _f16_from(x):
    if x == types.float64:
        return lambda x: f16_round_f64(x)
    # an integer beyond float32's exact range is beyond float16's too: one rounding either way
    return lambda x: f16_round(np.float32(x))


# -- prefetch -------------------------------------------------------------------------------
# A hint that a[idx]'s cache line will be read (or written) soon, into L1 (LLVM's
# `llvm.prefetch`, x86's prefetcht0 / prefetchw); it never faults and changes no value. A row
# kernel asks for the next row while it computes this one, so that memory is busy while it
# computes (codegen/cpu/rows.py, `_prefetch_rows`).


def _prefetch(rw: int):
    @intrinsic
    def prefetch(typingctx, a, idx):
        if not isinstance(a, types.Array) or not isinstance(idx, types.BaseTuple):
            return None

        def codegen(context, builder, sig, args):
            aty, ity = sig.args
            arr = context.make_array(aty)(context, builder, args[0])
            inds = [context.cast(builder, v, t, types.intp)
                    for v, t in zip(cgutils.unpack_tuple(builder, args[1]), ity)]
            ptr = cgutils.get_item_pointer2(
                context, builder, data=arr.data, shape=cgutils.unpack_tuple(builder, arr.shape),
                strides=cgutils.unpack_tuple(builder, arr.strides), layout=aty.layout,
                inds=inds)
            i8p, i32 = llvm_ir.IntType(8).as_pointer(), llvm_ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, llvm_ir.FunctionType(llvm_ir.VoidType(), [i8p, i32, i32, i32]),
                "llvm.prefetch.p0")
            # (address, read 0 / write 1, locality 3: keep in every level, data cache)
            builder.call(fn, [builder.bitcast(ptr, i8p), i32(rw), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.none(a, idx), codegen
    return prefetch


prefetch_read = _prefetch(0)
prefetch_write = _prefetch(1)


# -- fast float exp, expm1, log, log1p, tanh and logistic (fastmath.py) ----------------------

from .fastmath import (exp_f32, exp_f64, expm1_f32, expm1_f64, log_f32, log_f64,  # noqa: E402
                       log1p_f32, log1p_f64, logistic_f32, logistic_f64, tanh_f32, tanh_f64)

FLOAT_FUNCTIONS = ("exp", "expm1", "log", "log1p", "tanh", "logistic")
__all__ += ["exp_f32", "exp_f64", "expm1_f32", "expm1_f64", "log_f32", "log_f64",
            "log1p_f32", "log1p_f64", "logistic_f32", "logistic_f64", "tanh_f32", "tanh_f64"]
