"""Element-wise NumPy functions that are not ufuncs: np.where, np.clip, np.round, np.sinc,
np.nan_to_num, np.isclose, np.select; on real arrays np.fix, np.real, np.imag and
np.real_if_close; np.modf and np.frexp (two outputs), np.isin and np.digitize. Their lowerings
take NumPy's result and the call's arguments, as every function's does (`dispatch`).
"""
from __future__ import annotations

import operator

import numpy as np

from ...ir.shape import is_supported_dtype
from ..context import active_builder, dtype_error
from ..tracer import Tracer, node_of, read_shape, value_of
from .elementwise import truth
from .opaque import lower_nonzero
from .registry import lowers
from .types import astype, python_scalar_op
from .util import eager, is_python_scalar, unsupported, wrap


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
    inf = b.scalar_like(np.inf, node)
    node = b.select(b.compare(node, node, "NE"), b.scalar_like(fill["nan"], node), node)
    node = b.select(b.compare(node, inf, "EQ"), b.scalar_like(fill["posinf"], node), node)
    neg = b.compare(node, b.ew("negate", inf), "EQ")
    return b.select(neg, b.scalar_like(fill["neginf"], node), node)


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


# -- on real arrays: fix, real, real_if_close, imag; modf, isin, digitize, frexp ---------------


@lowers(np.fix)
def _fix(value, x, out=None):
    # Rounding toward zero is np.trunc's, -0.0 for -0.5 included; integers stay themselves.
    return node_of(np.trunc(x))



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
