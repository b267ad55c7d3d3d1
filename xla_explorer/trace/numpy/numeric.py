"""Number-theoretic, bit and float-neighbour ufuncs (np.gcd, np.lcm, np.bitwise_count,
np.nextafter), np.i0 and np.angle, the real/complex and infinity predicates (np.isposinf,
np.isneginf, np.isreal, np.iscomplex, np.isrealobj), and the whole-array comparisons that
answer one bool (np.allclose, np.array_equal, np.array_equiv).

None of them is an HLO op: each is a composition of the table's element-wise ops, as JAX
writes them with lax ops (gcd as Euclid's loop run to its longest length for the type,
bitwise_count as the classic SWAR popcount, nextafter from the float's exponent).
"""
from __future__ import annotations

import numpy as np
from numpy.lib import _function_base_impl as _fb

from ...ir.module import Instruction
from ..context import active_builder
from ..loops import fori_loop
from ..tracer import Tracer, node_of, read_shape, value_of
from .registry import lowers, lowers_ufunc, static
from .util import unsupported

# -- gcd and lcm: Euclid's algorithm, as a loop --------------------------------------------

# The most remainder steps Euclid takes on two values of each width: Lamé's bound, the pair of
# consecutive Fibonacci numbers below the type's largest value, plus the swap a first step
# makes when a < b (for 64 bits: F(93) < 2**64 - 1 < F(94), 91 steps, one more to swap).
_EUCLID_STEPS = {1: 13, 2: 24, 4: 47, 8: 93}


def _const(b, value, like: Instruction) -> Instruction:
    return b.scalar_like(value, like)


def _operands(b, shape, inputs, types) -> list[Tracer]:
    """The ufunc's operands as Tracers of the loop's types, broadcast to one shape."""
    out = []
    for v, t in zip(inputs, types):
        node = b.broadcast_to(node_of(v, t), shape)
        with np.errstate(all="ignore"):
            value = np.broadcast_to(np.asarray(value_of(v)).astype(t), shape).copy()
        out.append(Tracer(b, node, value))
    return out


def _gcd_tracer(x: Tracer, y: Tracer) -> Tracer:
    """gcd(|x|, |y|), 0 for gcd(0, 0): the step (a, c) -> (c, a mod c) keeps (a, 0) once c is
    0, so running the bound's number of steps on every element is exact. A loop, traced once
    (xe.fori_loop): unrolled, 93 steps of int64 are a kernel Numba takes a minute over."""
    def step(i, state):
        a, c = state
        done = c == 0
        return np.where(done, a, c), np.fmod(a, np.where(done, 1, c))
    steps = _EUCLID_STEPS[x.dtype.itemsize]
    # A signed type's most negative value stays negative under abs, and so can a remainder
    # it leaves: the last abs gives what NumPy gives (gcd(-128, 6) is 2 on int8).
    return np.abs(fori_loop(0, steps, step, (np.abs(x), np.abs(y)))[0])


@lowers_ufunc(np.gcd)
def _gcd(b, shape, inputs, types):
    return node_of(_gcd_tracer(*_operands(b, shape, inputs, types)))


@lowers_ufunc(np.lcm)
def _lcm(b, shape, inputs, types):
    # NumPy's npy_lcm: |x / gcd * y|, 0 where the gcd is 0 (the product wraps, as there).
    x, y = _operands(b, shape, inputs, types)
    g = _gcd_tracer(x, y)
    g = b.broadcast_to(node_of(g), shape)
    xn, yn = x.node, y.node
    zero = _const(b, 0, g)
    is_zero = b.compare(g, zero, "EQ")
    q = b.ew("divide", xn, b.select(is_zero, _const(b, 1, g), g))
    dt = np.dtype(xn.dtype)
    if dt.kind == "i" and dt.itemsize < 4:  # C computes int8 and int16 products in int
        q, yn = b.convert(q, np.int32), b.convert(yn, np.int32)
    product = b.convert(b.ew("abs", b.ew("multiply", q, yn)), dt)
    return b.select(is_zero, zero, product)


_gcd.takes_inputs = _lcm.takes_inputs = True  # Tracers of the operands: the loop takes them


# -- bitwise_count: popcount of |x| --------------------------------------------------------


@lowers_ufunc(np.bitwise_count)
def _bitwise_count(b, x):
    # NumPy counts the bits of the absolute value (bitwise_count(-1) is 1). The SWAR sum:
    # pairs, nibbles, bytes, then the bytes summed by a multiply into the top byte.
    width = np.dtype(x.dtype).itemsize
    u = b.convert(b.ew("abs", x), np.dtype(f"u{width}"))

    def k(value):
        return _const(b, int(value, 16) if isinstance(value, str) else value, u)

    def shr(v, n):
        return b.ew("shift-right-logical", v, k(n))
    m1, m2, m4, h01 = ("0x" + p * width for p in ("55", "33", "0f", "01"))
    u = b.ew("subtract", u, b.ew("and", shr(u, 1), k(m1)))
    u = b.ew("add", b.ew("and", u, k(m2)), b.ew("and", shr(u, 2), k(m2)))
    u = b.ew("and", b.ew("add", u, shr(u, 4)), k(m4))
    if width > 1:
        u = shr(b.ew("multiply", u, k(h01)), 8 * (width - 1))
    return u


# -- nextafter: the float next to x towards y ------------------------------------------------


def _pow2(b, e: Instruction) -> Instruction:
    """2**e for whole float64 e: exact under HLO's power (0 below the subnormals)."""
    return b.ew("power", _const(b, 2.0, e), e)


@lowers_ufunc(np.nextafter)
def _nextafter(b, shape, inputs, types):
    # In float64, where float16 and float32 values and their neighbours are exact: x moves by
    # its spacing, 2**(e - p + 1) for |x| in [2**e, 2**(e+1)) and p the type's digits, or by
    # half that towards zero from a power of two; never less than the smallest subnormal. e
    # is floor(log2 |x|), corrected once where log's rounding lands beside a power of two.
    # NumPy's loop type (float16's loop computes in float32 here; integers take float64's)
    with np.errstate(all="ignore"):
        dt = np.result_type(np.nextafter(*(value_of(v) for v in inputs)))
    info = np.finfo(dt)
    p = info.nmant + 1
    tiny = float(info.smallest_subnormal)
    x0, y0 = (b.broadcast_to(node_of(v, t), shape) for v, t in zip(inputs, types))
    x, y = b.convert(x0, np.float64), b.convert(y0, np.float64)
    ax = b.ew("abs", x)
    finite = b.ew("and", b.compare(ax, _const(b, np.inf, ax), "LT"),
                  b.compare(ax, _const(b, 0.0, ax), "GT"))
    safe = b.select(finite, ax, _const(b, 1.0, ax))
    e = b.ew("floor", b.ew("multiply", b.ew("log", safe), _const(b, 1 / np.log(2.0), safe)))
    one = _const(b, 1.0, e)
    e = b.select(b.compare(_pow2(b, e), safe, "GT"), b.ew("subtract", e, one), e)
    e = b.select(b.compare(_pow2(b, b.ew("add", e, one)), safe, "LE"), b.ew("add", e, one), e)
    away_step = _pow2(b, b.ew("subtract", e, _const(b, p - 1, e)))
    toward_step = b.select(b.compare(_pow2(b, e), safe, "EQ"),
                           _pow2(b, b.ew("subtract", e, _const(b, p, e))), away_step)
    up = b.compare(y, x, "GT")
    away = b.compare(up, b.compare(x, _const(b, 0.0, x), "GT"), "EQ")
    step = b.ew("maximum", b.select(away, away_step, toward_step), _const(b, tiny, x))
    moved = b.select(up, b.ew("add", x, step), b.ew("subtract", x, step))
    # A step onto zero keeps x's sign (the float next to -tiny towards 0 is -0.0).
    zero = _const(b, 0.0, x)
    moved = b.select(b.compare(moved, zero, "EQ"),
                     b.select(b.compare(x, zero, "LT"), _const(b, -0.0, x), zero), moved)
    # 0 steps to the smallest subnormal on y's side; an infinity to the largest finite value.
    small = _const(b, tiny, x)
    moved = b.select(b.compare(x, _const(b, 0.0, x), "EQ"),
                     b.select(up, small, b.ew("negate", small)), moved)
    big = _const(b, float(info.max), x)
    moved = b.select(b.compare(ax, _const(b, np.inf, ax), "EQ"),
                     b.select(up, b.ew("negate", big), big), moved)
    # x == y: C's nextafter gives y, NumPy's float16 one x (they differ for 0.0 and -0.0).
    moved = b.select(b.compare(x, y, "EQ"), x if dt == np.float16 else y, moved)
    nan = b.ew("or", b.compare(x, x, "NE"), b.compare(y, y, "NE"))
    moved = b.select(nan, b.ew("add", x, y), moved)
    return b.convert(moved, types[0])


_nextafter.takes_inputs = True  # reads the inputs' own type: float16 is computed in float32


# -- i0 and angle ------------------------------------------------------------------------------


def _chebyshev(x: Tracer, coefficients) -> Tracer:
    """NumPy's _chbevl (Clenshaw's recurrence over a Chebyshev series) on a traced x, as a
    loop over the coefficients (xe.fori_loop): unrolled, the 30 steps of each of np.i0's two
    series make one expression too deep to generate. Each coefficient is rounded to x's type
    first, as NumPy's x * b1 - b2 + vals[i] rounds the Python float it adds."""
    dt = x.dtype
    half = dt == np.float16
    if half:
        # The CPU's loops carry no float16: float32 carries it, each step rounded to float16
        # as NumPy's float16 ops round (float32 holds a float16 product exactly, and rounds
        # a sum innocuously twice: 24 >= 2 * 11 + 2 bits).
        x = x.astype(np.float32)

    def r(v):
        return v.astype(np.float16).astype(np.float32) if half else v
    table = np.asarray(coefficients, np.float64).astype(dt).astype(x.dtype)
    b = active_builder()
    table = Tracer(b, node_of(table), table)
    zero = x * 0
    start = (zero + table[0], zero, zero)

    def step(i, state):
        b0, b1, _ = state
        return r(r(r(x * b0) - b1) + np.take(table, i)), b0, b1
    b0, _, b2 = fori_loop(1, len(coefficients), step, start)
    out = r(0.5 * r(b0 - b2))
    return out.astype(dt) if half else out


@lowers(np.i0)
def _i0(value, x):
    # NumPy's two series: exp(x) chbevl(x / 2 - 2, A) up to 8, exp(x) chbevl(32 / x - 2, B)
    # / sqrt(x) beyond (its np.piecewise as a select); each sees a value inside its range.
    v = np.asarray(value_of(x))
    if v.dtype.kind != "f":
        x = x.astype(np.float64) if isinstance(x, Tracer) else np.asarray(x, np.float64)
    x = np.abs(x)
    small = x <= 8.0
    near = np.where(small, x, 0.0)
    far = np.where(small, 9.0, x)
    inner = np.exp(near) * _chebyshev(near / 2.0 - 2, _fb._i0A)
    outer = np.exp(far) * _chebyshev(32.0 / far - 2.0, _fb._i0B) / np.sqrt(far)
    return node_of(np.where(small, inner, outer))


@lowers(np.angle)
def _angle(value, z, deg=False):
    # A real number's angle is arctan2(0, x): 0, or pi for x < 0 and -0.0; NaN stays NaN.
    a = np.arctan2(0, z)
    if deg:
        a = a * (180 / np.pi)
    return node_of(a)


# -- predicates ------------------------------------------------------------------------------


@lowers(np.isposinf)
def _isposinf(value, x, out=None):
    if out is not None:
        raise unsupported("isposinf", " with out=")
    return node_of(np.logical_and(np.isinf(x), ~np.signbit(x)))


@lowers(np.isneginf)
def _isneginf(value, x, out=None):
    if out is not None:
        raise unsupported("isneginf", " with out=")
    return node_of(np.logical_and(np.isinf(x), np.signbit(x)))


@lowers(np.isreal)
def _isreal(value, x):
    # A real array has no imaginary part: every element is real.
    read_shape(x)
    return active_builder().full(True, np.bool_, np.shape(value))


@lowers(np.iscomplex)
def _iscomplex(value, x):
    read_shape(x)
    return active_builder().full(False, np.bool_, np.shape(value))


@static(np.isrealobj)
def _isrealobj(x):
    # The explorer has no complex type: every traced array is real, known while tracing.
    return False if np.iscomplexobj(value_of(x)) else True


# -- whole-array comparisons: one bool -------------------------------------------------------


@lowers(np.allclose)
def _allclose(value, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return node_of(np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def _false(*arrays) -> Instruction:
    for x in arrays:  # the answer comes from their shapes alone
        read_shape(x)
    return active_builder().full(False, np.bool_, ())


@lowers(np.array_equal)
def _array_equal(value, a1, a2, equal_nan=False):
    if np.shape(value_of(a1)) != np.shape(value_of(a2)):
        return _false(a1, a2)
    same = np.equal(a1, a2)
    kinds = {np.asarray(value_of(a)).dtype.kind for a in (a1, a2)}
    if equal_nan and "f" in kinds:
        # NaN where the other has NaN counts as equal; elsewhere the values must be.
        n1, n2 = np.isnan(a1), np.isnan(a2)
        same = np.where(n1, n2, same)
    return node_of(np.all(same))


@lowers(np.array_equiv)
def _array_equiv(value, a1, a2):
    try:
        np.broadcast_shapes(np.shape(value_of(a1)), np.shape(value_of(a2)))
    except ValueError:
        return _false(a1, a2)
    return node_of(np.all(np.equal(a1, a2)))
