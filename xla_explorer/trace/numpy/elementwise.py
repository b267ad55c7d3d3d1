"""Element-wise lowerings: NumPy's ufuncs (arithmetic, exponentials and logarithms,
trigonometric and hyperbolic functions, rounding, comparisons, logic, bits), the ones that are
formulas of other ops (sinh, cosh, exp2, log2, log10, arcsin, arccos, arctan, arcsinh, arccosh,
arctanh, floor_divide, remainder, power, hypot, logaddexp, copysign, signbit, heaviside,
deg2rad, rad2deg, fmod), and the element-wise functions that are not ufuncs: np.where, np.clip,
np.round, np.astype and x.astype, np.sinc, np.nan_to_num, np.isclose, np.select;
np.result_type. On real arrays: np.fix, np.real, np.imag, np.conj, np.real_if_close; also
np.logaddexp2, np.ldexp, np.modf and np.frexp (two outputs), np.isin and np.digitize.

A ufunc lowering gets the builder and the operands already converted to the ufunc loop's input
types and broadcast to one shape (see `dispatch.call_ufunc`); it returns an instruction of the
loop's output type.
"""
from __future__ import annotations

import decimal
import math
import operator

import numpy as np

from ...ir.module import Instruction
from ...ir.shape import is_supported_dtype
from ..scalars import Const, python_op
from ..context import active_builder, at_user_site, dtype_error
from ..tracer import Tracer, node_of, read_shape, value_of
from .opaque import lower_nonzero
from .registry import lowers, lowers_ufunc, static
from .util import eager, is_python_scalar, unsupported, wrap

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# -- the rows, and the helpers that make them --------------------------------------------------


def _direct(opcode):
    return lambda b, *xs: b.ew(opcode, *xs)


def _by_kind(**rows):
    """Pick a lowering by the operands' element kind: b(ool), i(nt), u(nsigned) or f(loat);
    unsigned integers take the signed row where none of their own is given."""
    def lower(b, *xs):
        kind = xs[0].dtype.kind
        return rows[kind if kind in rows or kind != "u" else "i"](b, *xs)
    return lower


def _const(b, value, like):
    return b.scalar_like(value, like)


def _identity(b, x):
    return x


def _scalar_source(x: Instruction) -> Instruction | None:
    """The rank-0 value `x` broadcasts, or x itself if rank 0; None for a real array."""
    if x.shape.rank == 0:
        return x
    if x.opcode == "broadcast" and x.operands[0].shape.rank == 0:
        return x.operands[0]
    return None


@lowers_ufunc(np.power)
def _power(b, shape, inputs, types):
    # NumPy computes a float array to a scalar power by its fast paths: x ** 0.5 is sqrt
    # (nan at -inf, -0.0 at -0.0, where C's pow gives +inf and +0.0), ** 2 is x * x, ** -1
    # is 1 / x, ** 1 is x. A constant exponent picks one at trace time; for a value known
    # only at run time, only 0.5's results differ from pow's beyond rounding.
    x = b.broadcast_to(node_of(inputs[0], types[0]), shape)
    known = inputs[1] if not isinstance(inputs[1], Tracer) else None
    fast = {0.5: lambda: b.ew("sqrt", x), 2.0: lambda: b.ew("multiply", x, x),
            -1.0: lambda: b.ew("divide", _const(b, 1, x), x), 1.0: lambda: x}
    if x.dtype.kind == "f" and np.ndim(known) == 0 and known is not None \
            and float(known) in fast:
        return fast[float(known)]()
    y = node_of(inputs[1], types[1])
    scalar = _scalar_source(y) is not None
    y = b.broadcast_to(y, shape)
    if x.dtype.kind != "f" or not scalar or known is not None:
        return b.ew("power", x, y)
    return b.select(b.compare(y, _const(b, 0.5, y), "EQ"), b.ew("sqrt", x), b.ew("power", x, y))


_power.takes_inputs = True  # sees the exponent as given: a constant one makes no instruction


def _compare(direction):
    return lambda b, x, y: b.compare(x, y, direction)


def _isnan(b, x):
    return b.compare(x, x, "NE")


def _floor_divide_int(b, x, y):
    # HLO divides toward zero; NumPy floors, and gives 0 for a zero divisor.
    zero = _const(b, 0, x)
    q = b.ew("divide", x, y)
    r = b.ew("remainder", x, y)
    signs_differ = b.compare(b.compare(r, zero, "LT"), b.compare(y, zero, "LT"), "NE")
    fix = b.ew("and", b.compare(r, zero, "NE"), signs_differ)
    q = b.ew("subtract", q, b.convert(fix, x.dtype))
    return b.select(b.compare(y, zero, "EQ"), zero, q)


def _divmod_float(b, x, y):
    # NumPy's npy_divmod, step by step, so results agree to the last bit.
    zero = _const(b, 0, x)
    mod = b.ew("remainder", x, y)
    div = b.ew("divide", b.ew("subtract", x, mod), y)
    signs_differ = b.compare(b.compare(y, zero, "LT"), b.compare(mod, zero, "LT"), "NE")
    fix = b.ew("and", b.compare(mod, zero, "NE"), signs_differ)
    one = _const(b, 1, x)
    div = b.select(fix, b.ew("subtract", div, one), div)
    mod = b.select(fix, b.ew("add", mod, y), mod)
    # A zero remainder takes the divisor's sign, a zero quotient that of x / y (-0.0 // 3 is
    # -0.0): npy_divmod's copysign(0, ...), as selects (1 / q < 0 tells -0.0 from +0.0).
    neg_zero = _const(b, -0.0, x)
    mod = b.select(b.compare(mod, zero, "EQ"),
                   b.select(b.compare(y, zero, "LT"), neg_zero, zero), mod)
    floor = b.ew("floor", div)
    round_up = b.compare(b.ew("subtract", div, floor), _const(b, 0.5, x), "GT")
    floor = b.select(round_up, b.ew("add", floor, one), floor)
    negative = b.compare(b.ew("divide", one, b.ew("divide", x, y)), zero, "LT")
    floor = b.select(b.compare(div, zero, "EQ"), b.select(negative, neg_zero, zero), floor)
    by_zero = b.compare(y, zero, "EQ")
    return b.select(by_zero, b.ew("divide", x, y), floor), b.select(by_zero, b.ew("remainder", x, y), mod)


def _floor_divide_uint(b, x, y):
    # Truncation is floor for unsigned integers; NumPy gives 0 for a zero divisor.
    zero = _const(b, 0, x)
    return b.select(b.compare(y, zero, "EQ"), zero, b.ew("divide", x, y))


def _remainder_uint(b, x, y):
    zero = _const(b, 0, x)
    return b.select(b.compare(y, zero, "EQ"), zero, b.ew("remainder", x, y))


def _remainder_int(b, x, y):
    zero = _const(b, 0, x)
    r = b.ew("remainder", x, y)
    signs_differ = b.compare(b.compare(r, zero, "LT"), b.compare(y, zero, "LT"), "NE")
    fix = b.ew("and", b.compare(r, zero, "NE"), signs_differ)
    r = b.select(fix, b.ew("add", r, y), r)
    return b.select(b.compare(y, zero, "EQ"), zero, r)


def _trunc(b, x):
    return b.select(b.compare(x, _const(b, 0, x), "LT"), b.ew("ceil", x), b.ew("floor", x))


def _in_float64(f):
    """A float32 lowering that computes f in float64 and rounds once: for the functions whose
    float32 formula loses more than rounding (a rounded argument or constant), at the cost of
    a float64 function in the loop."""
    def lower(b, x):
        if x.dtype == np.float64:
            return f(b, x)
        return b.convert(f(b, b.convert(x, np.float64)), x.dtype)
    return lower


def _exp2_float64(b, x):
    # Not exp(x ln 2): the rounding of x ln 2 is amplified by |x ln 2| (722 ulp at 1024), and
    # exp2(k) would miss 2**k. power(2, x) is exact at whole x, as NumPy's exp2 is.
    return b.ew("power", _const(b, 2, x), x)


def _exp2_float32(b, x):
    # In float64 x ln 2 is rounded far below float32's precision.
    w = b.convert(x, np.float64)
    return b.convert(b.ew("exponential", b.ew("multiply", w, _const(b, _LN2, w))), x.dtype)


@lowers_ufunc(np.exp2)
def _exp2(b, x):
    return (_exp2_float64 if x.dtype == np.float64 else _exp2_float32)(b, x)


def _ln2_rounded_up(bits: int) -> tuple[float, float]:
    """ln 2 rounded up to a multiple of 2**-bits, and e^(that - ln 2), from 60 digits."""
    ctx = decimal.Context(prec=60)
    ln2 = ctx.ln(decimal.Decimal(2))
    hi = decimal.Decimal(math.ceil(ctx.multiply(ln2, 2 ** bits))) / 2 ** bits
    return float(hi), float(ctx.exp(hi - ln2))


# Per float type: (H, C, BIG) for sinh and cosh. e^a / 2 = e^(a - H) C, where a - H is exact
# for the a it is used on (a >= BIG: a below 2**8 in float32 and 2**21 in float64, where H has
# 15 and 32 bits); exp(a - ln 2) would be off by the rounding of a - ln 2 times a (25 ulp in
# float32, 496 in float64), and e^a overflows before e^a / 2 does. H is rounded up so that
# e^(a - H) overflows only where e^a / 2 does.
_HALF_EXP = {np.dtype(np.float32): (*_ln2_rounded_up(15), 88.0),
             np.dtype(np.float64): (*_ln2_rounded_up(32), 709.0)}
# Below this |x|, sinh(x) and arcsinh(x) round to x (x^3 / 6 is below half an ulp of x); taking
# x itself there keeps the sign of -0.0, which a select on x < 0 loses.
_TINY = {np.dtype(np.float32): 2.0 ** -12, np.dtype(np.float64): 2.0 ** -26}


def _half_exp(b, a):
    """e^a / 2 for a >= BIG, without overflowing before it."""
    hi, c, _ = _HALF_EXP[a.dtype]
    return b.ew("multiply", b.ew("exponential", b.ew("subtract", a, _const(b, hi, a))),
                _const(b, c, a))


@lowers_ufunc(np.sinh)
def _sinh(b, x):
    # sinh|x| = (E + E / (E + 1)) / 2 with E = expm1|x|: no cancellation near 0 (where
    # e^x - e^-x cancels) and one expm1; above BIG, e^|x| / 2 without overflowing early (expm1
    # overflows at 88.7 in float32, sinh at 89.4).
    _, _, big = _HALF_EXP[x.dtype]
    a = b.ew("abs", x)
    e = b.ew("exponential-minus-one", a)
    small = b.ew("multiply", _const(b, 0.5, x),
                 b.ew("add", e, b.ew("divide", e, b.ew("add", e, _const(b, 1, x)))))
    mag = b.select(b.compare(a, _const(b, big, x), "GT"), _half_exp(b, a), small)
    signed = b.select(b.compare(x, _const(b, 0, x), "LT"), b.ew("negate", mag), mag)
    return b.select(b.compare(a, _const(b, _TINY[x.dtype], x), "LT"), x, signed)


@lowers_ufunc(np.cosh)
def _cosh(b, x):
    # e^|x| / 2 + (1 / 2) / e^|x|, and above BIG (where e^-|x| no longer counts) e^|x| / 2
    # without overflowing early.
    _, _, big = _HALF_EXP[x.dtype]
    a = b.ew("abs", x)
    e = b.ew("exponential", a)
    half = _const(b, 0.5, x)
    small = b.ew("add", b.ew("multiply", half, e), b.ew("divide", half, e))
    return b.select(b.compare(a, _const(b, big, x), "GT"), _half_exp(b, a), small)


def _one_minus_sq(b, x):
    one = _const(b, 1, x)
    return b.ew("multiply", b.ew("subtract", one, x), b.ew("add", one, x))  # (1-x)(1+x): exact near 1


@lowers_ufunc(np.arcsin)
def _arcsin(b, x):
    return b.ew("atan2", x, b.ew("sqrt", _one_minus_sq(b, x)))


@lowers_ufunc(np.arccos)
def _arccos(b, x):
    return b.ew("atan2", b.ew("sqrt", _one_minus_sq(b, x)), x)


@lowers_ufunc(np.arctan)
def _arctan(b, x):
    return b.ew("atan2", x, _const(b, 1, x))


@lowers_ufunc(np.arcsinh)
def _arcsinh(b, x):
    # asinh|x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), and log|x| + ln 2 once x^2 overflows.
    a = b.ew("abs", x)
    one = _const(b, 1, x)
    sq = b.ew("multiply", a, a)
    small = b.ew("log-plus-one", b.ew("add", a, b.ew("divide", sq, b.ew("add", one, b.ew(
        "sqrt", b.ew("add", one, sq))))))
    large = b.ew("add", b.ew("log", a), _const(b, _LN2, x))
    big = b.compare(a, _const(b, 1e8 if x.dtype == np.float64 else 1e4, x), "GT")
    mag = b.select(big, large, small)
    signed = b.select(b.compare(x, _const(b, 0, x), "LT"), b.ew("negate", mag), mag)
    return b.select(b.compare(a, _const(b, _TINY[x.dtype], x), "LT"), x, signed)


@lowers_ufunc(np.arccosh)
def _arccosh(b, x):
    # acosh x = log1p(t + sqrt(t) sqrt(x + 1)) with t = x - 1: exact near 1, and NaN below 1
    # (sqrt(t (x + 1)) would be a real number again for x < -1).
    one = _const(b, 1, x)
    t = b.ew("subtract", x, one)
    root = b.ew("multiply", b.ew("sqrt", t), b.ew("sqrt", b.ew("add", x, one)))
    small = b.ew("log-plus-one", b.ew("add", t, root))
    large = b.ew("add", b.ew("log", x), _const(b, _LN2, x))
    big = b.compare(x, _const(b, 1e8 if x.dtype == np.float64 else 1e4, x), "GT")
    return b.select(big, large, small)


@lowers_ufunc(np.arctanh)
def _arctanh(b, x):
    # (log1p(x) - log1p(-x)) / 2: both arguments exact and the two logs of opposite signs, so
    # nothing cancels; log1p(2x / (1 - x)) / 2 loses everything as x -> -1, where 1 - x rounds
    # (arctanh(-0.99999994) was 3.6e5 ulp off). Odd by construction, -0.0 included.
    return b.ew("multiply", _const(b, 0.5, x), b.ew("subtract", b.ew("log-plus-one", x),
                                                     b.ew("log-plus-one", b.ew("negate", x))))


def _fmax_fmin(opcode):
    def lower(b, x, y):
        if x.dtype.kind != "f":
            return b.ew(opcode, x, y)
        m = b.ew(opcode, x, y)
        return b.select(_isnan(b, y), x, b.select(_isnan(b, x), y, m))
    return lower


def truth(b, x):
    """x as bools: x itself for bools, x != 0 otherwise."""
    return x if x.dtype == np.bool_ else b.compare(x, _const(b, 0, x), "NE")


def _logical(opcode):
    return lambda b, x, y: b.ew(opcode, truth(b, x), truth(b, y))


def _false_like(b, x):
    return b.full(False, np.bool_, x.dims)


def _true_like(b, x):
    return b.full(True, np.bool_, x.dims)


def _log_base(factor):
    """log(x) * factor (1 / ln 2, 1 / ln 10), float32 computed in float64 and rounded once.
    A result within 1.25 * 2**-52 * k of a whole number k becomes k, so that log2(2**k) and
    log10(10**k) are k, as NumPy's are: the product alone misses 364 of the float64 powers of
    two and 21 of the 23 exact powers of ten (floor(log10(1000.0)) was 2), by up to 1.07 *
    2**-52 * k. Near whole numbers the snap costs 0.5 ulp at most (log2: 1.7 -> 2.2 ulp)."""
    def lower(b, x):
        y = b.ew("multiply", b.ew("log", x), _const(b, factor, x))
        whole = b.ew("round-nearest-even", y)
        near = b.compare(b.ew("abs", b.ew("subtract", y, whole)),
                         b.ew("multiply", b.ew("abs", whole), _const(b, 1.25 * 2.0 ** -52, x)),
                         "LE")
        return b.select(near, whole, y)
    return _in_float64(lower)


# -- ufuncs that are compositions of the others (as JAX's jnp composes them) --------------------


def _is_neg_zero_or_below(b, x):
    # x < 0, or -0.0 (1 / -0.0 is -inf). A NaN counts as positive: the IR has no op that reads
    # a NaN's sign bit, so signbit(-nan) and copysign(x, -nan) differ from NumPy's.
    zero = _const(b, 0, x)
    neg_zero = b.ew("and", b.compare(x, zero, "EQ"),
                    b.compare(b.ew("divide", _const(b, 1, x), x), zero, "LT"))
    return b.ew("or", b.compare(x, zero, "LT"), neg_zero)


@lowers_ufunc(np.signbit)
def _signbit(b, x):
    return _is_neg_zero_or_below(b, x)


@lowers_ufunc(np.copysign)
def _copysign(b, x, y):
    a = b.ew("abs", x)
    return b.select(_is_neg_zero_or_below(b, y), b.ew("negate", a), a)


@lowers_ufunc(np.hypot)
def _hypot(b, x, y):
    # C's hypot: inf if either is infinite (NaN or not), else NaN if either is NaN. float32 in
    # float64, where x^2 + y^2 neither overflows nor underflows; float64 scaled by the larger
    # magnitude m, m sqrt(1 + (s / m)^2), so that nothing overflows before the result does.
    ax, ay = b.ew("abs", x), b.ew("abs", y)
    if x.dtype == np.float32:
        wx, wy = b.convert(ax, np.float64), b.convert(ay, np.float64)
        h = b.convert(b.ew("sqrt", b.ew("add", b.ew("multiply", wx, wx),
                                        b.ew("multiply", wy, wy))), x.dtype)
    else:
        m, s = b.ew("maximum", ax, ay), b.ew("minimum", ax, ay)
        zero, one = _const(b, 0, x), _const(b, 1, x)
        m_is_zero = b.compare(m, zero, "EQ")
        r = b.ew("divide", s, b.select(m_is_zero, one, m))
        h = b.ew("multiply", m, b.ew("sqrt", b.ew("add", one, b.ew("multiply", r, r))))
        h = b.select(m_is_zero, zero, h)
        h = b.select(b.ew("or", _isnan(b, x), _isnan(b, y)), _const(b, np.nan, x), h)
    inf = _const(b, np.inf, x)
    either_inf = b.ew("or", b.compare(ax, inf, "EQ"), b.compare(ay, inf, "EQ"))
    return b.select(either_inf, inf, h)


@lowers_ufunc(np.logaddexp)
def _logaddexp(b, x, y):
    # NumPy's npy_logaddexp: x + ln 2 where x == y (so inf and -inf stay themselves), else the
    # larger plus log1p(exp(-|x - y|)); NaN where either is NaN.
    big = b.ew("add", b.ew("maximum", x, y), b.ew("log-plus-one", b.ew("exponential", b.ew(
        "negate", b.ew("abs", b.ew("subtract", x, y))))))
    big = b.select(b.ew("or", _isnan(b, x), _isnan(b, y)), _const(b, np.nan, x), big)
    return b.select(b.compare(x, y, "EQ"), b.ew("add", x, _const(b, _LN2, x)), big)


@lowers_ufunc(np.heaviside)
def _heaviside(b, x, h0):
    zero, one = _const(b, 0, x), _const(b, 1, x)
    sided = b.select(b.compare(x, zero, "LT"), zero, b.select(b.compare(x, zero, "GT"), one, x))
    return b.select(b.compare(x, zero, "EQ"), h0, sided)  # NaN stays x


def _times_constant(f64, f32):
    """x times a constant, as NumPy's loops round it per type (deg2rad, rad2deg)."""
    return lambda b, x: b.ew("multiply", x, _const(b, f64 if x.dtype == np.float64 else f32, x))


def _fmod_int(b, x, y):
    # C's % (the dividend's sign, as HLO's remainder), and 0 for a zero divisor as NumPy gives;
    # -1 too, where INT_MIN % -1 would trap.
    zero = _const(b, 0, x)
    no_rest = b.ew("or", b.compare(y, zero, "EQ"), b.compare(y, _const(b, -1, y), "EQ"))
    return b.select(no_rest, zero, b.ew("remainder", x, b.select(no_rest, _const(b, 1, y), y)))


lowers_ufunc(np.fabs)(_direct("abs"))
lowers_ufunc(np.deg2rad, np.radians)(_times_constant(np.pi / 180,
                                                     np.float32(np.pi) / np.float32(180)))
lowers_ufunc(np.rad2deg, np.degrees)(_times_constant(180 / np.pi,
                                                     np.float32(180) / np.float32(np.pi)))
lowers_ufunc(np.float_power)(_direct("power"))  # NumPy's only loop: float64
lowers_ufunc(np.fmod)(_by_kind(i=_fmod_int, u=_remainder_uint, f=_direct("remainder")))  # HLO's is C's fmod


# -- the ufuncs whose rows the helpers above make ----------------------------------------------
# (a row that is a function of its own is registered with @lowers_ufunc where it is defined)

# arithmetic; on bools NumPy's add is `or` and multiply is `and`
lowers_ufunc(np.add)(_by_kind(b=_direct("or"), i=_direct("add"), f=_direct("add")))
lowers_ufunc(np.subtract)(_direct("subtract"))
lowers_ufunc(np.multiply)(_by_kind(b=_direct("and"), i=_direct("multiply"), f=_direct("multiply")))
lowers_ufunc(np.divide)(_direct("divide"))
lowers_ufunc(np.floor_divide)(_by_kind(i=_floor_divide_int, u=_floor_divide_uint,
                                       f=lambda b, x, y: _divmod_float(b, x, y)[0]))
lowers_ufunc(np.remainder)(_by_kind(i=_remainder_int, u=_remainder_uint, f=lambda b, x, y: _divmod_float(b, x, y)[1]))
lowers_ufunc(np.negative)(_direct("negate"))
lowers_ufunc(np.positive)(_identity)
lowers_ufunc(np.absolute)(_by_kind(b=_identity, i=_direct("abs"), u=_identity,
                                   f=_direct("abs")))
lowers_ufunc(np.sign)(_direct("sign"))
lowers_ufunc(np.square)(lambda b, x: b.ew("multiply", x, x))
lowers_ufunc(np.reciprocal)(lambda b, x: b.ew("divide", _const(b, 1, x), x))
lowers_ufunc(np.maximum)(_by_kind(b=_direct("or"), i=_direct("maximum"), f=_direct("maximum")))
lowers_ufunc(np.minimum)(_by_kind(b=_direct("and"), i=_direct("minimum"), f=_direct("minimum")))
lowers_ufunc(np.fmax)(_fmax_fmin("maximum"))
lowers_ufunc(np.fmin)(_fmax_fmin("minimum"))
# exponentials and logarithms
lowers_ufunc(np.exp)(_direct("exponential"))
lowers_ufunc(np.expm1)(_direct("exponential-minus-one"))
lowers_ufunc(np.log)(_direct("log"))
lowers_ufunc(np.log2)(_log_base(1 / _LN2))
lowers_ufunc(np.log10)(_log_base(1 / _LN10))
lowers_ufunc(np.log1p)(_direct("log-plus-one"))
lowers_ufunc(np.sqrt)(_direct("sqrt"))
lowers_ufunc(np.cbrt)(_direct("cbrt"))
# trigonometric and hyperbolic
lowers_ufunc(np.sin)(_direct("sine"))
lowers_ufunc(np.cos)(_direct("cosine"))
lowers_ufunc(np.tan)(_direct("tan"))
lowers_ufunc(np.arctan2)(_direct("atan2"))
lowers_ufunc(np.tanh)(_direct("tanh"))
# rounding; NumPy keeps integers as they are
lowers_ufunc(np.floor)(_by_kind(i=_identity, b=_identity, f=_direct("floor")))
lowers_ufunc(np.ceil)(_by_kind(i=_identity, b=_identity, f=_direct("ceil")))
lowers_ufunc(np.trunc)(_by_kind(i=_identity, b=_identity, f=_trunc))
lowers_ufunc(np.rint)(_by_kind(i=_identity, b=_identity, f=_direct("round-nearest-even")))
# comparisons and logic
lowers_ufunc(np.greater)(_compare("GT"))
lowers_ufunc(np.greater_equal)(_compare("GE"))
lowers_ufunc(np.less)(_compare("LT"))
lowers_ufunc(np.less_equal)(_compare("LE"))
lowers_ufunc(np.equal)(_compare("EQ"))
lowers_ufunc(np.not_equal)(_compare("NE"))
lowers_ufunc(np.logical_and)(_logical("and"))
lowers_ufunc(np.logical_or)(_logical("or"))
lowers_ufunc(np.logical_xor)(lambda b, x, y: b.compare(truth(b, x), truth(b, y), "NE"))
lowers_ufunc(np.logical_not)(lambda b, x: b.ew("not", truth(b, x)))
lowers_ufunc(np.isnan)(_by_kind(b=_false_like, i=_false_like, f=_isnan))
lowers_ufunc(np.isinf)(_by_kind(
    b=_false_like, i=_false_like,
    f=lambda b, x: b.compare(b.ew("abs", x), _const(b, np.inf, x), "EQ")))
lowers_ufunc(np.isfinite)(_by_kind(b=_true_like, i=_true_like, f=_direct("is-finite")))
# bits
lowers_ufunc(np.bitwise_and)(_direct("and"))
lowers_ufunc(np.bitwise_or)(_direct("or"))
lowers_ufunc(np.bitwise_xor)(_direct("xor"))
lowers_ufunc(np.invert)(_direct("not"))
lowers_ufunc(np.left_shift)(_direct("shift-left"))
# NumPy shifts an unsigned integer right logically, a signed one arithmetically
lowers_ufunc(np.right_shift)(_by_kind(i=_direct("shift-right-arithmetic"),
                                      u=_direct("shift-right-logical")))


# -- element-wise functions that are not ufuncs ------------------------------------------------


@lowers(np.where)
def _where(value, condition, x=None, y=None):
    if x is None and y is None:
        return lower_nonzero(value, condition)
    b = active_builder()
    dt = np.asarray(value).dtype  # x and y promoted together, Python scalars weakly
    shape = np.shape(value)
    cond = b.broadcast_to(truth(b, node_of(condition)), shape)

    def operand(v):
        # NumPy's where converts a Python int to the result type unchecked: on an int32 x,
        # np.where(x > 0, x, 2**40 + 7) gives 7 where x + 2**40 raises. So a Python scalar
        # argument is converted without node_of's overflow check, and wraps as NumPy's does.
        node = b.convert(node_of(v), dt) if isinstance(v, Tracer) and v._weak else node_of(v, dt)
        return b.broadcast_to(node, shape)
    return b.select(cond, operand(x), operand(y))


def _int_bound(bound, dtype: np.dtype, result_dtype: np.dtype, lower: bool):
    """A bound of np.clip on an integer array as NumPy takes it: a Python int at or beyond
    the array type's limit on its own side is dropped (np.clip(int32, 0, 2**40) is
    np.maximum(int32, 0)), and one beyond the other side is converted, and refused, as a
    ufunc converts it (np.clip(int32, 2**40, None) raises OverflowError)."""
    v = value_of(bound)
    if type(v) is not int:
        return bound
    info = np.iinfo(dtype)
    limit = int(info.min if lower else info.max)
    if not isinstance(bound, Tracer):  # a literal: dropped or not now
        return None if (v <= limit if lower else v >= limit) else bound
    if result_dtype == dtype:
        # Taken to the limit, the bound clips nothing, as a dropped one does, and one beyond
        # the other side still fails node_of's check, on each call.
        return python_scalar_op(np.maximum if lower else np.minimum, (bound, limit))
    # A wider result (a float bound beside it): a bound at the limit would clip what the
    # other one moved past it, so whether it is dropped decides the program (a guard).
    beyond = bound <= limit if lower else bound >= limit
    return None if beyond else bound


@lowers(np.clip)
def _clip(value, a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
          max=np._NoValue, **kw):
    lo = a_min if a_min is not np._NoValue else min
    hi = a_max if a_max is not np._NoValue else max
    lo, hi = (None if v is np._NoValue else v for v in (lo, hi))
    a_dtype, dt = np.asarray(value_of(a)).dtype, np.asarray(value).dtype
    if a_dtype.kind in "iu":
        lo, hi = _int_bound(lo, a_dtype, dt, True), _int_bound(hi, a_dtype, dt, False)
    given = [v for v in (lo, hi) if v is not None]
    if len(given) == 2 and dt.kind != "b" and all(np.ndim(value_of(v)) == 0 for v in given):
        # Two scalar bounds: NumPy keeps x where it equals a bound (clip(+0.0, -0.0, 1) is
        # +0.0), which HLO's clamp does and maximum-then-minimum does not. (HLO's clamp takes
        # no pred: a bool array clips by maximum and minimum, its or and and.)
        b = active_builder()
        x = b.broadcast_to(node_of(a, dt), np.shape(value))
        return b.emit("clamp", (node_of(lo, dt), x, node_of(hi, dt)))
    result = a
    if lo is not None:
        result = np.maximum(result, lo)
    if hi is not None:
        result = np.minimum(result, hi)
    return active_builder().convert(node_of(result), dt)


@lowers(np.sinc)
def _sinc(value, x):
    # NumPy's own formula, step by step: sin(y) / y with y = pi x, and eps for y = 0.
    y = np.pi * x
    dt = np.asarray(value_of(y)).dtype
    y = np.where(y, y, np.finfo(dt).eps if dt.kind == "f" else 1e-20)
    return node_of(np.sin(y) / y)


def _fill_value(v, dtype: np.dtype):
    """A fill value of np.nan_to_num as NumPy's copyto casts it: a number, at trace time."""
    if isinstance(v, Tracer) or np.ndim(v) != 0:
        raise unsupported("nan_to_num", " with a traced or array nan=, posinf= or neginf=")
    with np.errstate(all="ignore"):
        return np.asarray(v).astype(dtype)[()]


@lowers(np.nan_to_num)
def _nan_to_num(value, x, copy=True, nan=0.0, posinf=None, neginf=None):
    b = active_builder()
    dt = np.asarray(value).dtype
    node = b.broadcast_to(node_of(x, dt), np.shape(value))
    if dt.kind != "f":  # NumPy returns integers and bools as they are
        return node
    info = np.finfo(dt)
    fill = {"nan": _fill_value(nan, dt),
            "posinf": _fill_value(info.max if posinf is None else posinf, dt),
            "neginf": _fill_value(info.min if neginf is None else neginf, dt)}
    inf = _const(b, np.inf, node)
    node = b.select(_isnan(b, node), _const(b, fill["nan"], node), node)
    node = b.select(b.compare(node, inf, "EQ"), _const(b, fill["posinf"], node), node)
    neg = b.compare(node, b.ew("negate", inf), "EQ")
    return b.select(neg, _const(b, fill["neginf"], node), node)


@lowers(np.isclose)
def _isclose(value, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    # NumPy's own formula: |x - y| <= atol + rtol |y| where y is finite, or x == y, with y
    # taken to a float type first (never abs(INT_MIN)).
    x, y = a, b
    if not is_python_scalar(y):
        dt = np.result_type(value_of(y), 1.0)
        y = astype(y, dt) if isinstance(y, Tracer) else np.asarray(y, dt)
    elif type(value_of(y)) is int:
        y = y * 1.0
    close = np.less_equal(np.abs(x - y), atol + rtol * np.abs(y)) & np.isfinite(y) | (x == y)
    if equal_nan:
        close = close | (np.isnan(x) & np.isnan(y))
    return active_builder().broadcast_to(node_of(close), np.shape(value))


@lowers(np.select)
def _select(value, condlist, choicelist, default=0):
    # The first condition that holds picks its choice; none, the default. All at NumPy's
    # result type, broadcast to the result's shape.
    b = active_builder()
    dt, shape = np.asarray(value).dtype, np.shape(value)
    result = b.broadcast_to(node_of(default, dt), shape)
    for cond, choice in zip(condlist[::-1], choicelist[::-1]):
        result = b.select(b.broadcast_to(node_of(cond), shape),
                          b.broadcast_to(node_of(choice, dt), shape), result)
    return result


@lowers(np.round, np.around)
def _round(value, a, decimals=0, out=None):
    """np.round is np.rint (halves to even, as NumPy rounds); to `decimals` places NumPy
    (PyArray_Round) multiplies by 10**decimals in the array's type, rints and divides back
    (for decimals < 0, divides first), and so does this, to the same bits. Integers keep
    their value, or for decimals < 0 are rounded so in float64 and converted back."""
    decimals = operator.index(decimals)
    dt = np.asarray(value).dtype
    if out is not None:
        raise unsupported("round", " with out= (assign the result instead)")
    if dt.kind != "f" and decimals >= 0:  # whole numbers already, and NumPy keeps the type
        return node_of(a)
    if decimals == 0:
        return node_of(np.rint(a))
    x = a if dt.kind == "f" else a.astype(np.float64)
    f = np.asarray(_power_of_ten(abs(decimals)), x.dtype)[()]
    x = np.rint(x * f) / f if decimals > 0 else np.rint(x / f) * f
    return node_of(x.astype(dt) if dt.kind != "f" else x)


def _power_of_ten(n: int) -> float:
    """10**n as NumPy's power_of_ten computes it: a table to 1e8, then products by 10 (which
    can differ from a correctly rounded 10.0**n above 1e22)."""
    if n < 9:
        return 10.0 ** n
    p = 1e9
    for _ in range(n - 9):
        p *= 10.0
    return p


def astype(x: Tracer, dtype) -> Tracer:
    """x.astype(dtype) (also how a value is converted before it is stacked or combined)."""
    b = active_builder()
    with at_user_site(b, "astype"):
        value = eager(lambda v: np.asarray(v).astype(dtype), "astype", x.value)
        if not is_supported_dtype(value.dtype):
            raise dtype_error("astype", value.dtype)
        if isinstance(x.value, np.generic):
            value = value[()]
        return wrap(b.convert(x.node, value.dtype), value, "astype")


@lowers(np.astype)
def _np_astype(value, x, dtype, /, *, copy=True, device=None):
    return active_builder().convert(node_of(x), np.asarray(value).dtype)


# -- types -------------------------------------------------------------------------------------


def _promotion_key(x):
    """What np.result_type wants for x: a Python scalar stays one (weak, NEP 50)."""
    if is_python_scalar(x):
        return x.value if isinstance(x, Tracer) else x
    if isinstance(x, Tracer):
        return x.dtype
    return x


@static(np.result_type)
def _result_type(*a):
    return np.result_type(*(_promotion_key(x) for x in a))


# -- arithmetic between Python scalars ---------------------------------------------------------


# Python keeps bool for these between bools; all other arithmetic on bools gives int.
_PY_BOOL_RESULT = {"bitwise_and", "bitwise_or", "bitwise_xor", "less", "less_equal", "greater",
                   "greater_equal", "equal", "not_equal"}


def python_scalar_op(ufunc, operands):
    """An operator between Python scalars: the operands take Python's common type (bool <
    int < float, bools becoming ints for arithmetic), NumPy computes at that type, and the
    result is a weak Python scalar again."""
    b = active_builder()
    name = ufunc.__name__
    with at_user_site(b, name) as site:
        python = python_op(name, [value_of(x) for x in operands], site)
        ref = b.scalars.op(name, tuple(x._ref if isinstance(x, Tracer) else Const(x)
                                       for x in operands), type(python), site)
    kinds = {type(value_of(x)) for x in operands}
    if float in kinds:
        dt = np.dtype(np.float64)
    elif kinds == {bool} and name in _PY_BOOL_RESULT:
        dt = np.dtype(np.bool_)
    else:
        dt = np.dtype(np.int64)
        if name == "power" and value_of(operands[1]) < 0:
            dt = np.dtype(np.float64)  # Python: 2 ** -1 == 0.5 (NumPy refuses it for ints)
    with at_user_site(b, name):
        strong = [astype(x, dt) if isinstance(x, Tracer) else np.asarray(x, dt)[()]
                  for x in operands]
    result = ufunc(*strong)
    # Python's value, not NumPy's at the traced type: they differ only where python_op refused.
    result._weak, result._value, result._ref = True, python, ref
    return result


# -- more compositions: fix, real/imag/conj, real_if_close, logaddexp2, ldexp, modf ----


@lowers(np.fix)
def _fix(value, x, out=None):
    # Rounding toward zero is np.trunc's, -0.0 for -0.5 included; integers stay themselves.
    return node_of(np.trunc(x))


lowers_ufunc(np.conjugate)(_identity)  # a real number is its own conjugate


@lowers(np.real, np.real_if_close, view=True)
def _real(value, x, *args, **kw):
    # On a real array NumPy returns the array itself (a view): no imaginary part to drop.
    return node_of(x)


@lowers(np.imag)
def _imag(value, x):
    # A real array's imaginary part: zeros of its type and shape (NumPy's is read-only).
    read_shape(x)
    v = np.asarray(value)
    return active_builder().full(0, v.dtype, v.shape)


@lowers_ufunc(np.logaddexp2)
def _logaddexp2(b, x, y):
    # NumPy's npy_logaddexp2: x + 1 where x == y (inf and -inf stay themselves), else the
    # larger plus log2(1 + 2^-|x - y|), computed as log1p(exp2(-d)) / ln 2; NaN where either is.
    d = b.ew("negate", b.ew("abs", b.ew("subtract", x, y)))
    tail = b.ew("multiply", b.ew("log-plus-one", _exp2(b, d)), _const(b, 1 / _LN2, x))
    big = b.ew("add", b.ew("maximum", x, y), tail)
    big = b.select(b.ew("or", _isnan(b, x), _isnan(b, y)), _const(b, np.nan, x), big)
    return b.select(b.compare(x, y, "EQ"), b.ew("add", x, _const(b, 1, x)), big)


def _pow2(b, n: Instruction, like: Instruction) -> Instruction:
    """2**n exactly in like's float type, for integer n with |n| under the type's exponent
    range (a power of two is exact under HLO's power)."""
    return b.ew("power", _const(b, 2, like), b.convert(n, like.dtype))


@lowers_ufunc(np.ldexp)
def _ldexp(b, x, n):
    # x * 2**n rounded once, in float64 (float32's range and precision fit inside it, so a
    # float32 result rounds once, at the conversion). n is clamped to where every result is 0
    # or inf already and split in three powers of two, each representable: the largest last,
    # so that every product before it is exact unless the result is 0 or inf anyway.
    dt = x.dtype
    wide = b.convert(x, np.float64)
    n = b.convert(n, np.int64)

    def clamp(v, lo, hi):
        return b.ew("maximum", b.ew("minimum", v, _const(b, hi, v)), _const(b, lo, v))
    n = clamp(n, -2300, 2300)
    last = clamp(n, -1074, 1023)
    rest = b.ew("subtract", n, last)
    half = b.ew("divide", rest, _const(b, 2, rest))
    for part in (half, b.ew("subtract", rest, half), last):
        wide = b.ew("multiply", wide, _pow2(b, part, wide))
    return b.convert(wide, dt)


def modf_parts(x):
    """np.modf(x): (fraction, integral part), each with x's sign as C's modf gives them
    (modf(-0.5) is (-0.5, -0.0), modf(-inf) is (-0.0, -inf)). Written with traced NumPy calls,
    each checked against NumPy's own result as it is made."""
    dt = np.modf.resolve_dtypes((np.asarray(value_of(x)).dtype, None, None))[0]
    if not is_supported_dtype(dt):
        raise dtype_error("np.modf", dt)
    xf = astype(x, dt) if isinstance(x, Tracer) else np.asarray(x, dt)
    whole = np.trunc(xf)
    frac = np.where(np.isinf(xf), 0, xf - whole)
    return np.copysign(frac, xf), whole


# Past this many traced test elements np.isin's compare-all table (element.size x this) is too
# big to build; NumPy sorts instead, which has no compilable equivalent here yet.
ISIN_TRACED_LIMIT = 256


@lowers(np.isin)
def _isin(value, element, test_elements, assume_unique=False, invert=False, *, kind=None):
    # An OR of equality compares with every test element (NaN equals nothing, as in NumPy's
    # sorted search); types promote as NumPy's `==` does.
    if isinstance(test_elements, Tracer) and test_elements.size > ISIN_TRACED_LIMIT:
        raise unsupported("isin", f" with a traced test_elements of {test_elements.size} "
                                  f"elements (at most {ISIN_TRACED_LIMIT}: each is compared "
                                  "with every element)")
    tests = np.ravel(test_elements)
    if not isinstance(tests, Tracer):
        tests = np.unique(np.asarray(tests))  # a constant: each distinct value once
    hit = np.any(np.equal(np.expand_dims(element, -1), tests), axis=-1)
    return node_of(np.logical_not(hit) if invert else hit)


@lowers(np.digitize)
def _digitize(value, x, bins, right=False):
    # A count of the bins each x has passed: np.searchsorted's answer for monotonic bins (NaN
    # sorts after every bin). Decreasing bins count from the other end, as NumPy does; for
    # traced bins which way they go is a value, so both counts are made and one selected.
    if not isinstance(bins, Tracer):
        edges = np.asarray(bins)
        increasing = edges.size < 2 or bool(edges[0] <= edges[-1])
        count = _passed(x, edges if increasing else edges[::-1], right)
        return node_of(count if increasing else edges.size - count)
    n = np.shape(value_of(bins))[0]
    if n < 2:
        return node_of(_passed(x, bins, right))
    up, down = _passed(x, bins, right), n - _passed(x, bins[::-1], right)
    return node_of(np.where(bins[-1] >= bins[0], up, down))


def _passed(x, edges, right: bool):
    """How many of the increasing `edges` each x has passed: those at or below it (below it
    with `right`), NaN past them all."""
    xs = np.expand_dims(x, -1)
    passed = np.less(edges, xs) if right else np.less_equal(edges, xs)
    return np.sum(np.logical_or(passed, np.isnan(xs)), axis=-1, dtype=np.intp)


def frexp_parts(x):
    """np.frexp(x): (mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa|
    < 1; 0, inf and NaN give themselves and exponent 0. In float64 (float32 values fit in it
    exactly): the exponent estimated from log2, the mantissa by np.ldexp (exact), and the
    estimate corrected once, which log2's rounding near a power of two can need."""
    loop = np.frexp.resolve_dtypes((np.asarray(value_of(x)).dtype, None, None))
    if not is_supported_dtype(loop[1]):
        raise dtype_error("np.frexp", loop[1])
    xf = astype(x, np.float64) if isinstance(x, Tracer) else np.asarray(x, np.float64)
    normal = np.isfinite(xf) & (xf != 0)
    safe = np.where(normal, xf, 1.0)
    e = np.floor(np.log2(np.abs(safe))).astype(np.int32) + 1
    m = np.ldexp(safe, -e)
    big, small = np.abs(m) >= 1, np.abs(m) < 0.5
    m = np.where(big, m * 0.5, np.where(small, m * 2, m))
    e = np.where(big, e + 1, np.where(small, e - 1, e))
    mantissa, exponent = astype(np.where(normal, m, xf), loop[1]), np.where(normal, e, 0)
    # NumPy's own values, scalars for a 0-d x as a ufunc gives them (np.where gives arrays).
    want = eager(np.frexp, "np.frexp", value_of(x))
    return (wrap(node_of(mantissa), want[0], "np.frexp"),
            wrap(node_of(exponent, loop[2]), want[1], "np.frexp"))
