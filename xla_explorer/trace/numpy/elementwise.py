"""Element-wise lowerings: NumPy's ufuncs (arithmetic, exponentials and logarithms,
trigonometric and hyperbolic functions, rounding, comparisons, logic, bits), the ones that are
formulas of other ops (sinh, cosh, exp2, log2, log10, arcsin, arccos, arctan, arcsinh, arccosh,
arctanh, floor_divide, remainder, power, hypot, logaddexp, logaddexp2, ldexp, copysign,
signbit, heaviside, deg2rad, rad2deg, fmod, conjugate). The element-wise functions that are
not ufuncs are in `elementwise_functions.py`; conversions and Python scalars in `types.py`.

A ufunc lowering gets the builder and the operands already converted to the ufunc loop's input
types and broadcast to one shape (see `dispatch.call_ufunc`); it returns an instruction of the
loop's output type.
"""
from __future__ import annotations

import decimal
import math

import numpy as np

from ...ir.module import Instruction
from ..tracer import Tracer, node_of
from .registry import lowers_ufunc

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


# -- more ufuncs composed of others: conjugate, logaddexp2, ldexp ------------------------------


lowers_ufunc(np.conjugate)(_identity)  # a real number is its own conjugate

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
