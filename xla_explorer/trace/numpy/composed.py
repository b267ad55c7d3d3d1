"""NumPy functions with no HLO op of their own, composed at trace time of slices, pads,
products and reductions: np.convolve and np.correlate (unrolled over the shorter operand),
np.polyval (Horner's rule), np.cov and np.corrcoef, np.gradient, np.interp, np.trapezoid and
np.unwrap.
"""
from __future__ import annotations

import numpy as np

from ...ir.shape import is_supported_dtype
from ..context import active_builder, dtype_error
from ..tracer import Tracer, node_of, value_of
from .registry import lowers
from .util import unsupported, wrap

# np.convolve and np.correlate emit one slice, product and sum per element of the shorter
# operand: beyond this many the program grows past what the passes and viewers handle well.
MAX_TAPS = 64


def _result_type(value, name):
    dt = np.asarray(value).dtype
    if not is_supported_dtype(dt):
        raise dtype_error(f"np.{name}", dt)
    return dt


def _slice(b, x, axis, start, stop, step=1):
    spec = [(0, d, 1) for d in x.dims]
    spec[axis] = (start, stop, step)
    return b.slice(x, spec)


def _sum_op(dt):
    return ("and", "or") if dt == np.bool_ else ("multiply", "add")


# -- np.convolve, np.correlate -----------------------------------------------------------------


def _correlation(b, name, value, longer, shorter, mode, inverted):
    """NumPy's correlation loop (multiarray's _pyarray_correlate): out[i] = sum over j of
    longer[i - left + j] * shorter[j], zero outside `longer`, with `left` set by the mode;
    reversed when NumPy swapped the operands to put the longer first."""
    dt = _result_type(value, name)
    # NumPy's float16 correlation accumulates in float32 and rounds once, at the end.
    work = np.dtype(np.float32) if dt == np.float16 else dt
    mul, add = _sum_op(work)
    x, v = (b.convert(node_of(o, dt), work) for o in (longer, shorter))
    x, v = b.reshape(x, (x.shape.size,)), b.reshape(v, (v.shape.size,))
    n_long, n = x.dims[0], v.dims[0]
    if n > MAX_TAPS:
        raise unsupported(name, f" with a shorter operand of {n} elements: it is unrolled "
                                f"into one product per element, at most {MAX_TAPS}. Compute "
                                "it as a product with a Toeplitz matrix, or by FFT outside "
                                "the traced function")
    mode = ("valid", "same", "full")[mode] if isinstance(mode, int) else mode  # NumPy's codes
    left = {"valid": 0, "same": n // 2, "full": n - 1}[mode]
    length = int(np.size(value))
    right = length + n - 1 - left - n_long
    zero = b.constant(0, work)
    xp = b.pad(x, zero, [(left, right, 0)])
    total = None
    for j in range(n):
        tap = b.broadcast(b.reshape(_slice(b, v, 0, j, j + 1), ()), (length,), ())
        term = b.ew(mul, _slice(b, xp, 0, j, j + length), tap)
        total = term if total is None else b.ew(add, total, term)
    total = b.convert(total, dt)
    return b.reverse(total, (0,)) if inverted else total


@lowers(np.convolve)
def _convolve(value, a, v, mode="full"):
    b = active_builder()
    if np.size(value_of(v)) > np.size(value_of(a)):
        a, v = v, a  # NumPy puts the longer first (a convolution is symmetric)
    return _correlation(b, "convolve", value, a, _reversed(b, v, value), mode, False)


def _reversed(b, v, value):
    node = node_of(v, _result_type(value, "convolve"))
    node = b.reshape(node, (node.shape.size,))
    return b.reverse(node, (0,))


@lowers(np.correlate)
def _correlate(value, a, v, mode="valid"):
    b = active_builder()
    if np.size(value_of(a)) < np.size(value_of(v)):
        return _correlation(b, "correlate", value, v, a, mode, True)
    return _correlation(b, "correlate", value, a, v, mode, False)


# -- compositions of other NumPy calls on traced arrays, in NumPy's own order of operations ----


def _strong(x):
    """x as NumPy's function sees it after asarray: a Python scalar argument becomes a 0-d
    array of its strong type (float64, int64), no longer weak."""
    v = np.asarray(value_of(x))
    if isinstance(x, Tracer):
        return x if not x._weak else wrap(node_of(x, v.dtype), v, "asarray")
    return v


def _static_choice(name, **flags):
    for k, v in flags.items():
        if isinstance(v, Tracer):
            raise unsupported(name, f" with a traced {k} (it decides the program)")


@lowers(np.polyval)
def _polyval(value, p, x):
    """Horner's rule, as NumPy's np.polyval loops over the coefficients: y = y * x + p[i],
    from y = zeros_like(x); p of static length."""
    p, x = _strong(p), _strong(x)
    y = np.zeros_like(x)
    for pv in p:
        y = y * x + pv
    return node_of(y)


@lowers(np.trapezoid)
def _trapezoid(value, y, x=None, dx=1.0, axis=-1):
    """NumPy's formula: the spacing times the sum of neighbours, halved, summed."""
    _static_choice("trapezoid", axis=axis)
    y = _strong(y)
    nd = np.ndim(value_of(y))
    ax = int(axis) % nd
    if x is None:
        d = dx
    else:
        x = _strong(x)
        if np.ndim(value_of(x)) == 1:
            d = np.diff(x)
            shape = [1] * nd
            shape[ax] = np.shape(value_of(d))[0]
            d = np.reshape(d, shape)
        else:
            d = np.diff(x, axis=ax)
    hi = y[(slice(None),) * ax + (slice(1, None),)]
    lo = y[(slice(None),) * ax + (slice(None, -1),)]
    return node_of(np.sum(d * (hi + lo) / 2.0, axis=ax))


@lowers(np.cov)
def _cov(value, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
         *, dtype=None):
    """NumPy's np.cov: rows of observations (columns with rowvar=False), the mean of each
    taken away, the product with the transpose, times 1 / (n - ddof) (NumPy multiplies by
    the reciprocal)."""
    if fweights is not None or aweights is not None:
        raise unsupported("cov", " with fweights or aweights (only unweighted)")
    _static_choice("cov", rowvar=rowvar, bias=bias, ddof=ddof)
    dt = np.asarray(value).dtype
    if np.shape(value) == (0, 0):
        return active_builder().full(0, dt, (0, 0))
    m = _strong(m)
    X = np.atleast_2d(m).astype(dt)
    if not rowvar and np.ndim(value_of(m)) != 1:
        X = X.T
    if y is not None:
        Y = np.atleast_2d(_strong(y)).astype(dt)
        if not rowvar and np.shape(value_of(Y))[0] != 1:
            Y = Y.T
        X = np.concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    fact = np.shape(value_of(X))[1] - ddof
    with np.errstate(all="ignore"):
        scale = np.true_divide(1, max(fact, 0.0))  # NumPy warns, and divides by zero
    X = X - np.mean(X, axis=1)[:, None]
    c = np.dot(X, X.T)
    c = (c * scale).astype(dt)  # NumPy's c *= scale: in float64, stored in c's type
    return node_of(np.squeeze(c))


@lowers(np.corrcoef)
def _corrcoef(value, x, y=None, rowvar=True, *, dtype=None):
    """NumPy's np.corrcoef: the covariance divided by the standard deviations of its row
    and of its column, clipped to [-1, 1]; a single variable's is c / c."""
    c = np.cov(x, y, rowvar, dtype=dtype)
    if np.ndim(value_of(c)) == 0:
        return node_of(c / c)
    d = np.sqrt(np.diag(c))
    c = c / d[:, None]
    c = c / d[None, :]
    return node_of(np.clip(c, -1, 1))


@lowers(np.gradient)
def _gradient(value, f, *varargs, axis=None, edge_order=1):
    """NumPy's np.gradient: central differences inside, one-sided differences of first or
    second order at the two ends, each piece computed as NumPy computes it (Python and
    NumPy scalars keep their types, coordinate arrays give NumPy's weights) and stored in
    the result type."""
    _static_choice("gradient", axis=axis, edge_order=edge_order)
    f = _strong(f)
    fv = value_of(f)
    n = fv.ndim
    axes = tuple(range(n)) if axis is None else tuple(
        int(a) % n for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(value_of(varargs[0])) == 0:
        spacing = list(varargs) * len(axes)
    else:
        spacing = [_uniform_spacing(d) for d in varargs]
    otype = fv.dtype
    if otype.kind not in "fc":
        if otype.kind in "iu":
            f = f.astype(np.float64)
        otype = np.dtype(np.float64)

    def part(ax, start, stop):
        return f[(slice(None),) * ax + (slice(start, stop),)]

    outs = []
    for ax, h in zip(axes, spacing):
        if np.ndim(value_of(h)) == 0:
            first, inner, last = _uniform_differences(part, ax, h, int(edge_order))
        else:
            first, inner, last = _uneven_differences(part, ax, h, int(edge_order), n)
        pieces = [np.asarray(p).astype(otype) if not isinstance(p, Tracer) else p.astype(otype)
                  for p in (first, inner, last)]
        outs.append(node_of(np.concatenate(pieces, axis=ax)))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _uniform_differences(part, ax, h, edge_order):
    inner = (part(ax, 2, None) - part(ax, None, -2)) / (2. * h)
    if edge_order == 1:
        first = (part(ax, 1, 2) - part(ax, 0, 1)) / h
        last = (part(ax, -1, None) - part(ax, -2, -1)) / h
    else:
        first = (-1.5 / h) * part(ax, 0, 1) + (2. / h) * part(ax, 1, 2) + \
            (-0.5 / h) * part(ax, 2, 3)
        last = (0.5 / h) * part(ax, -3, -2) + (-2. / h) * part(ax, -2, -1) + \
            (1.5 / h) * part(ax, -1, None)
    return first, inner, last


def _uneven_differences(part, ax, h, edge_order, ndim):
    """NumPy's weights for unevenly spaced coordinates (h: their differences, concrete),
    computed in NumPy as NumPy does, times the traced slices."""
    dx1, dx2 = h[0:-1], h[1:]
    shape = [1] * ndim
    shape[ax] = -1
    a = (-(dx2) / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    inner = a * part(ax, None, -2) + b * part(ax, 1, -1) + c * part(ax, 2, None)
    if edge_order == 1:
        first = (part(ax, 1, 2) - part(ax, 0, 1)) / h[0]
        last = (part(ax, -1, None) - part(ax, -2, -1)) / h[-1]
        return first, inner, last
    dx1, dx2 = h[0], h[1]
    a = -(2. * dx1 + dx2) / (dx1 * (dx1 + dx2))
    b = (dx1 + dx2) / (dx1 * dx2)
    c = - dx1 / (dx2 * (dx1 + dx2))
    first = a * part(ax, 0, 1) + b * part(ax, 1, 2) + c * part(ax, 2, 3)
    dx1, dx2 = h[-2], h[-1]
    a = (dx2) / (dx1 * (dx1 + dx2))
    b = - (dx2 + dx1) / (dx1 * dx2)
    c = (2. * dx2 + dx1) / (dx2 * (dx1 + dx2))
    last = a * part(ax, -3, -2) + b * part(ax, -2, -1) + c * part(ax, -1, None)
    return first, inner, last


def _uniform_spacing(d):
    """Coordinates given as spacing: NumPy uses the step of evenly spaced ones as a scalar,
    and the differences of others as arrays (constant ones only: they are read here)."""
    if isinstance(d, Tracer):
        if d.ndim == 0:
            return d
        raise unsupported("gradient", " with traced coordinate arrays (give scalar spacings "
                                      "or coordinates known when tracing)")
    if np.ndim(d) == 0:  # as given: a Python number stays weak
        return d
    d = np.asanyarray(d)
    if d.dtype.kind in "iu":
        d = d.astype(np.float64)
    step = np.diff(d)
    if len(step) and (step == step[0]).all():
        return step[0]
    return step


# -- np.interp: NumPy's compiled loop as comparisons and one-hot selections --------------------


@lowers(np.interp)
def _interp(value, x, xp, fp, left=None, right=None, period=None):
    """NumPy's interpolation loop (compiled_interp), in float64, for every x at once: the
    segment j is how many xp are <= x, less one (NumPy's binary search, for increasing xp);
    xp[j], xp[j+1], fp[j], fp[j+1] are picked by a one-hot compare and select, summed; then
    NumPy's cases in its order: NaN x, left of xp, right of xp, an exact or last point, the
    line through the segment (from its other end where that gives NaN)."""
    if period is not None:
        raise unsupported("interp", " with period= (only non-periodic interpolation)")
    b = active_builder()
    f64 = np.dtype(np.float64)
    if np.asarray(value).dtype != f64:
        raise unsupported("interp", " of complex values (only real fp)")
    xs = node_of(x, f64)
    shape = xs.dims
    xv, yv = node_of(xp, f64), node_of(fp, f64)
    if xv.shape.rank != 1 or yv.shape.rank != 1:
        raise unsupported("interp", " with xp or fp not 1-D")
    n = xv.dims[0]

    def at(v, i):  # element i of a 1-D node, broadcast to x's shape
        return b.broadcast(b.reshape(_slice(b, v, 0, i, i + 1), ()), shape, ())

    lval = at(yv, 0) if left is None else b.broadcast_to(node_of(left, f64), shape)
    rval = at(yv, n - 1) if right is None else b.broadcast_to(node_of(right, f64), shape)
    first, last = at(xv, 0), at(xv, n - 1)
    if n == 1:  # NumPy's own branch: no segment, and a NaN x takes fp[0]
        res = b.select(b.compare(xs, last, "GT"), rval, at(yv, 0))
        return b.select(b.compare(xs, first, "LT"), lval, res)
    wide = shape + (n,)
    k = len(shape)
    xw = b.broadcast(xs, wide, tuple(range(k)))
    count = b.reduce(b.convert(b.compare(b.broadcast(xv, wide, (k,)), xw, "LE"), np.int64),
                     (k,), "add")
    j = b.ew("subtract", count, b.full(1, np.int64, shape))
    iota = b.iota(np.int64, wide, k)
    zero = b.full(0.0, f64, wide)

    def pick(v, index):  # v[index] for each x: the one matching element, the rest zeros
        hot = b.compare(iota, b.broadcast(index, wide, tuple(range(k))), "EQ")
        return b.reduce(b.select(hot, b.broadcast(v, wide, (k,)), zero), (k,), "add")

    j1 = b.ew("add", j, b.full(1, np.int64, shape))
    x0, x1, y0, y1 = pick(xv, j), pick(xv, j1), pick(yv, j), pick(yv, j1)
    slope = b.ew("divide", b.ew("subtract", y1, y0), b.ew("subtract", x1, x0))
    line = b.ew("add", b.ew("multiply", slope, b.ew("subtract", xs, x0)), y0)
    other = b.ew("add", b.ew("multiply", slope, b.ew("subtract", xs, x1)), y1)
    line_nan = b.compare(line, line, "NE")
    res = b.select(line_nan, other, line)
    flat = b.ew("and", b.ew("and", line_nan, b.compare(other, other, "NE")),
                b.compare(y0, y1, "EQ"))
    res = b.select(flat, y0, res)
    on_point = b.ew("or", b.compare(x0, xs, "EQ"),
                    b.compare(j, b.full(n - 1, np.int64, shape), "EQ"))
    res = b.select(on_point, y0, res)
    res = b.select(b.compare(xs, last, "GT"), rval, res)
    res = b.select(b.compare(xs, first, "LT"), lval, res)
    return b.select(b.compare(xs, xs, "NE"), xs, res)


@lowers(np.unwrap)
def _unwrap(value, p, discont=None, axis=-1, *, period=2 * np.pi):
    # NumPy's steps: each jump (np.diff) taken into [-period/2, period/2) by a modulo, a jump
    # of exactly +period/2 kept (and, for integers, the halves as NumPy's divmod gives them),
    # jumps under `discont` left alone, and the running sum of the corrections added from the
    # second element on.
    for name, v in (("discont", discont), ("period", period)):
        if isinstance(v, Tracer) or np.ndim(v) != 0:
            raise unsupported("unwrap", f" with a traced or array {name}=")
    arr = np.asarray(value_of(p))
    axis = int(axis) % max(arr.ndim, 1)
    dd = np.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(np.asarray(value_of(dd)).dtype, period)
    if dtype.kind in "iu":
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = np.mod(dd - low, period) + low
    if ambiguous:
        ddmod = np.where((ddmod == low) & (dd > 0), high, ddmod)
    correction = np.where(np.abs(dd) < discont, 0, ddmod - dd)
    first = tuple(slice(0, 1) if d == axis else slice(None) for d in range(arr.ndim))
    rest = tuple(slice(1, None) if d == axis else slice(None) for d in range(arr.ndim))
    head = p[first].astype(value.dtype)
    tail = (p[rest] + np.cumsum(correction, axis=axis)).astype(value.dtype)
    return node_of(np.concatenate([head, tail], axis=axis))
