"""Reductions: np.sum, np.prod, np.max / np.amax, np.min / np.amin, np.mean, np.var, np.std,
np.argmax, np.argmin, np.all, np.any, and the ufunc.reduce calls that are one of them
(np.add.reduce is np.sum); compositions of them: np.nansum, np.nanmax, np.nanmin, np.nanmean,
np.count_nonzero, np.ptp, np.average, np.nanprod, np.nanvar, np.nanstd, np.nanargmax,
np.nanargmin; and np.histogram (weights= too) and np.histogram2d, counts by comparisons
against their edges.

NumPy's `where=` masks elements out (they count as the reduction's identity) and `initial=`
joins the result once; both are lowered rather than ignored.
"""
from __future__ import annotations

import numpy as np

from ...ir.module import Instruction
from ..builder import REDUCERS
from ..context import active_builder
from ..tracer import Tracer, node_of, value_of
from .elementwise import truth
from .registry import lowers, reduces_as
from .util import canonical_axes, unsupported, wrap


def _keep(b, node, x_dims, axes, keepdims):
    if not keepdims:
        return node
    return b.reshape(node, [1 if i in axes else n for i, n in enumerate(x_dims)])


def _sum_type(dtype, requested):
    if requested is not None:
        return np.dtype(requested)
    dtype = np.dtype(dtype)
    # NumPy sums and multiplies small integers in the platform's int (uint for unsigned ones)
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 8):
        return np.dtype(np.int64)
    if dtype.kind == "u" and dtype.itemsize < 8:
        return np.dtype(np.uint64)
    return dtype


def _mean_type(dtype, requested):
    if requested is not None:
        return np.dtype(requested)
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)


def _masked(b, x: Instruction, where, opcode) -> Instruction:
    """x with the elements `where` leaves out replaced by the reducer's identity."""
    if where is True:
        return x
    mask = b.broadcast_to(truth(b, node_of(where)), x.dims)
    return b.select(mask, x, b.full(REDUCERS[opcode](x.dtype), x.dtype, x.dims))


def _reduce_node(b, x, axes, opcode, dtype, keepdims, initial=np._NoValue, where=True):
    x = node_of(x)
    dims = x.dims
    node = b.reduce(_masked(b, b.convert(x, dtype), where, opcode), axes, opcode)
    if initial is not np._NoValue and initial is not None:
        node = b.ew(opcode, node, b.full(initial, node.dtype, node.dims))
    return _keep(b, node, dims, axes, keepdims)


def _count(x, axes, where=True) -> int | Instruction:
    """How many elements each result reduces: a number, or an instruction under where=."""
    shape = node_of(x).dims
    if where is True:
        return int(np.prod([shape[a] for a in axes], dtype=np.int64))
    b = active_builder()
    mask = b.convert(b.broadcast_to(truth(b, node_of(where)), shape), np.int64)
    return b.reduce(mask, axes, "add")


def _accumulation(opcode: str, bool_opcode: str):
    """np.sum and np.prod: a reduce in NumPy's accumulation type, logical on bools (a sum of
    bools that stays bool is their or, a product their and)."""
    def lower(value, a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
              where=True):
        b = active_builder()
        axes = canonical_axes(axis, np.ndim(value_of(a)))
        dt = _sum_type(np.asarray(value_of(a)).dtype, dtype)
        return _reduce_node(b, a, axes, bool_opcode if dt == np.bool_ else opcode, dt,
                            keepdims, initial, where)
    return lower


lowers(np.sum)(_accumulation("add", "or"))
lowers(np.prod)(_accumulation("multiply", "and"))


def _extreme(which):
    def lower(value, a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
        b = active_builder()
        axes = canonical_axes(axis, np.ndim(value_of(a)))
        dt = np.asarray(value_of(a)).dtype
        if dt == np.bool_:
            opcode = "or" if which == "maximum" else "and"
        else:
            opcode = which
        return _reduce_node(b, a, axes, opcode, dt, keepdims, initial, where)
    return lower


lowers(np.max, np.amax)(_extreme("maximum"))
lowers(np.min, np.amin)(_extreme("minimum"))


def _mean_node(b, a, axes, dt, keepdims, where=True):
    # NumPy's float16 mean sums and divides in float32 and rounds once, at the end.
    work = np.dtype(np.float32) if dt == np.float16 else dt
    total = _reduce_node(b, a, axes, "add", work, keepdims, where=where)
    count = _count(a, axes, where)
    if isinstance(count, Instruction):
        count = b.convert(_keep(b, count, node_of(a).dims, axes, keepdims), work)
        return b.convert(b.ew("divide", total, count), dt)
    return b.convert(b.ew("divide", total, b.scalar_like(count, total)), dt)


@lowers(np.mean)
def _mean(value, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    b = active_builder()
    axes = canonical_axes(axis, np.ndim(value_of(a)))
    return _mean_node(b, a, axes, _mean_type(np.asarray(value_of(a)).dtype, dtype), keepdims,
                      where)


def _var_node(b, a, axes, dtype, ddof, keepdims, where=True, mean=np._NoValue,
              correction=np._NoValue):
    if where is not True or mean is not np._NoValue:
        raise unsupported("var", " with where= or mean=")
    if correction is not np._NoValue:
        ddof = correction  # NumPy 2's name for ddof
    a_dtype = np.asarray(value_of(a)).dtype
    dt = _mean_type(a_dtype, dtype)
    # NumPy centres in the promotion of the array's type with the mean's (uint32 - float32 is
    # float64), and sums the squares in `dt`.
    wide = np.result_type(a_dtype, dt)
    x = b.convert(node_of(a), wide)
    mean = b.convert(_mean_node(b, a, axes, dt, True), wide)
    centered = b.ew("subtract", x, b.broadcast_to(mean, x.dims))
    total = _reduce_node(b, b.ew("multiply", centered, centered), axes, "add", dt, keepdims)
    n = max(_count(a, axes) - ddof, 0)
    return b.ew("divide", total, b.scalar_like(n, total))


@lowers(np.var)
def _var(value, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    b = active_builder()
    return _var_node(b, a, canonical_axes(axis, np.ndim(value_of(a))), dtype, ddof, keepdims, **kw)


@lowers(np.std)
def _std(value, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    b = active_builder()
    return b.ew("sqrt", _var_node(b, a, canonical_axes(axis, np.ndim(value_of(a))), dtype, ddof,
                                  keepdims, **kw))


def _arg(which):
    def lower(value, a, axis=None, out=None, keepdims=False):
        b = active_builder()
        x = node_of(a)
        if axis is None:
            flat = b.reshape(x, (x.shape.size,))
            node = b.arg_reduce(flat, 0, which)
            return b.reshape(node, (1,) * x.shape.rank) if keepdims else node
        ax = int(axis) % x.shape.rank
        return _keep(b, b.arg_reduce(x, ax, which), x.dims, (ax,), keepdims)
    return lower


lowers(np.argmax)(_arg("argmax"))
lowers(np.argmin)(_arg("argmin"))


def _all_any(opcode):
    def lower(value, a, axis=None, out=None, keepdims=False, *, where=True):
        b = active_builder()
        x = truth(b, node_of(a))
        axes = canonical_axes(axis, x.shape.rank)
        return _keep(b, b.reduce(_masked(b, x, where, opcode), axes, opcode), x.dims, axes,
                     keepdims)
    return lower


lowers(np.all)(_all_any("and"))
lowers(np.any)(_all_any("or"))


# -- compositions of the above: NaN-ignoring reductions, counts, ranges, weighted means ------------


def _float(a) -> bool:
    return np.asarray(value_of(a)).dtype.kind == "f"


def _no_mask(name, initial, where):
    if initial is not np._NoValue or where is not np._NoValue:
        raise unsupported(name, " with initial= or where=")


@lowers(np.nansum)
def _nansum(value, a, axis=None, dtype=None, out=None, keepdims=np._NoValue,
            initial=np._NoValue, where=np._NoValue):
    _no_mask("nansum", initial, where)
    x = np.where(np.isnan(a), 0, a) if _float(a) else a
    return node_of(np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims is True))


def _nan_extreme(name, reduce, fill):
    def lower(value, a, axis=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
              where=np._NoValue):
        # NaN is skipped (taken as the other end's infinity); a slice of NaN only is NaN.
        _no_mask(name, initial, where)
        keep = keepdims is True
        if not _float(a):
            return node_of(reduce(a, axis=axis, keepdims=keep))
        nan = np.isnan(a)
        best = reduce(np.where(nan, fill, a), axis=axis, keepdims=keep)
        return node_of(np.where(np.all(nan, axis=axis, keepdims=keep), np.nan, best))
    return lower


lowers(np.nanmax)(_nan_extreme("nanmax", np.max, -np.inf))
lowers(np.nanmin)(_nan_extreme("nanmin", np.min, np.inf))


@lowers(np.nanmean)
def _nanmean(value, a, axis=None, dtype=None, out=None, keepdims=np._NoValue, *,
             where=np._NoValue):
    _no_mask("nanmean", np._NoValue, where)
    keep = keepdims is True
    if not _float(a):
        return node_of(np.mean(a, axis=axis, dtype=dtype, keepdims=keep))
    nan = np.isnan(a)
    count = np.sum(~nan, axis=axis, dtype=np.int64, keepdims=keep)
    total = np.sum(np.where(nan, 0, a), axis=axis, dtype=dtype, keepdims=keep)
    # NumPy divides the total (of its type) by the count (int64): in float64, rounded once.
    b = active_builder()
    mean = np.true_divide(total, count)
    return b.convert(node_of(mean), np.asarray(value).dtype)


@lowers(np.count_nonzero)
def _count_nonzero(value, a, axis=None, *, keepdims=False):
    b = active_builder()
    x = b.convert(truth(b, node_of(a)), np.int64)
    axes = canonical_axes(axis, x.shape.rank)
    return _keep(b, b.reduce(x, axes, "add"), x.dims, axes, keepdims)


@lowers(np.ptp)
def _ptp(value, a, axis=None, out=None, keepdims=np._NoValue):
    keep = keepdims is True
    return node_of(np.subtract(np.max(a, axis=axis, keepdims=keep),
                               np.min(a, axis=axis, keepdims=keep)))


@lowers(np.average)
def _average(value, a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    # Sum of a * w over the sum of w, at NumPy's result type. NumPy's ZeroDivisionError for
    # weights that sum to zero needs their values: traced weights give NaN or inf there.
    b = active_builder()
    keep = keepdims is True
    dims = node_of(a).dims
    axes = canonical_axes(axis, len(dims))
    avg_value = value[0] if returned else value
    if weights is None:
        avg = node_of(np.mean(a, axis=axis, keepdims=keep))
        if not returned:
            return avg
        return avg, b.literal(np.asarray(value[1]))  # a.size / avg.size, known now
    dt = np.asarray(avg_value).dtype
    w = b.convert(node_of(weights), dt)
    if w.dims != dims:  # 1-D weights along the one axis (NumPy has checked them)
        w = b.reshape(w, [n if i == axes[0] else 1 for i, n in enumerate(dims)])
    scl = _keep(b, b.reduce(w, axes, "add"), w.dims, axes, keep)
    total = _reduce_node(b, b.ew("multiply", b.convert(node_of(a), dt), b.broadcast_to(w, dims)),
                         axes, "add", dt, keep)
    avg = b.ew("divide", total, b.broadcast_to(scl, total.dims))
    return (avg, b.broadcast_to(scl, avg.dims)) if returned else avg



# -- more NaN-ignoring reductions: nanprod, nanvar, nanstd, nanargmax, nanargmin ------


@lowers(np.nanprod)
def _nanprod(value, a, axis=None, dtype=None, out=None, keepdims=np._NoValue,
             initial=np._NoValue, where=np._NoValue):
    _no_mask("nanprod", initial, where)
    x = np.where(np.isnan(a), 1, a) if _float(a) else a
    return node_of(np.prod(x, axis=axis, dtype=dtype, keepdims=keepdims is True))


def _nanvar_node(name, value, a, axis, dtype, ddof, keepdims, where, mean, correction):
    """NumPy's nanvar step for step: NaNs become 0 and leave the count; the mean and the
    variance divide in float64 by the count (an integer) and round to the sum's type; a
    slice with count - ddof <= 0 is NaN."""
    if where is not np._NoValue or mean is not np._NoValue:
        raise unsupported(name, " with where= or mean=")
    if correction is not np._NoValue:
        ddof = correction  # NumPy 2's name for ddof
    keep = keepdims is True
    if not _float(a):
        return node_of(np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keep))
    nan = np.isnan(a)
    arr = np.where(nan, 0, a)
    cnt = np.sum(~nan, axis=axis, dtype=np.intp, keepdims=True)
    avg = np.sum(arr, axis=axis, dtype=dtype, keepdims=True)
    avg = np.true_divide(avg, cnt).astype(avg.dtype)
    arr = np.where(nan, 0, np.subtract(arr, avg).astype(arr.dtype))
    var = np.sum(np.multiply(arr, arr), axis=axis, dtype=dtype, keepdims=keep)
    dof = np.sum(~nan, axis=axis, dtype=np.intp, keepdims=keep) - ddof
    var = np.where(dof <= 0, np.nan, np.true_divide(var, dof).astype(var.dtype))
    return node_of(var)


@lowers(np.nanvar)
def _nanvar(value, a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *,
            where=np._NoValue, mean=np._NoValue, correction=np._NoValue):
    return _nanvar_node("nanvar", value, a, axis, dtype, ddof, keepdims, where, mean,
                        correction)


@lowers(np.nanstd)
def _nanstd(value, a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *,
            where=np._NoValue, mean=np._NoValue, correction=np._NoValue):
    b = active_builder()
    return b.ew("sqrt", _nanvar_node("nanstd", value, a, axis, dtype, ddof, keepdims, where,
                                     mean, correction))


def _nan_arg(arg, fill):
    def lower(value, a, axis=None, out=None, *, keepdims=np._NoValue):
        # NumPy's own rule: NaN read as the other end's infinity, then argmax / argmin. NumPy
        # raises ValueError for a slice of NaN only; a compiled program cannot raise, so there
        # it gives that slice's index 0 (tracing raises NumPy's error, on the traced input).
        keep = keepdims is True
        x = np.where(np.isnan(a), fill, a) if _float(a) else a
        return node_of(arg(x, axis=axis, keepdims=keep))
    return lower


lowers(np.nanargmax)(_nan_arg(np.argmax, -np.inf))
lowers(np.nanargmin)(_nan_arg(np.argmin, np.inf))

# ufunc.reduce(a, axis, keepdims) for the ufuncs whose reduction is one of the above.
reduces_as(np.add, np.sum)
reduces_as(np.multiply, np.prod)
reduces_as(np.maximum, np.max)
reduces_as(np.minimum, np.min)
reduces_as(np.logical_and, np.all)
reduces_as(np.logical_or, np.any)


# -- np.histogram: counts by comparisons against the bin edges ----------------------


def _counts_between(x, edges, n: int):
    """NumPy's histogram counts for sorted edges (n + 1 of them): bin i holds
    edges[i] <= x < edges[i + 1], the last bin edges[n] too; values outside, and NaN, in none.
    As differences of the counts at or above each edge (above, for the last)."""
    xs = np.expand_dims(np.ravel(x), -1)
    at_or_above = np.sum(np.greater_equal(xs, edges[:n]), axis=0, dtype=np.intp)
    above_last = np.sum(np.greater(xs, edges[n:]), axis=0, dtype=np.intp)
    g = np.concatenate((at_or_above, above_last))
    return g[:n] - g[1:]


def _linspace_edges(first, last, num: int, dt):
    """np.linspace(first, last, num) for traced 0-d ends of type dt, as NumPy computes it:
    i * step + first (i / div * delta where the step underflows to 0), the last one `last`."""
    b = active_builder()
    div = num - 1
    delta = np.subtract(last, first)
    step = delta / div
    i = wrap(b.iota(dt, (num,), 0), np.arange(num, dtype=dt), "np.histogram")
    y = np.where(step == 0, i / div * delta, i * step) + first
    return np.concatenate((y[:-1], np.reshape(last, (1,))))


def outer_edges(a, n: int, dt):
    """NumPy's n + 1 equal bins from a.min() to a.max() (widened by 0.5 each way where the
    two are equal), of type dt, traced."""
    lo, hi = np.min(a).astype(dt), np.max(a).astype(dt)
    same = lo == hi
    lo, hi = np.where(same, lo - 0.5, lo), np.where(same, hi + 0.5, hi)
    return _linspace_edges(lo, hi, n + 1, dt)


def in_bins(x, edges, n: int):
    """(x.size, n) bools: x in bin i, edges[i] <= x < edges[i + 1], the last bin closed on
    the right (NumPy's rule for histogram and histogramdd)."""
    xs = np.expand_dims(np.ravel(x), -1)
    below_next = np.concatenate((np.less(xs, edges[1:n]), np.less_equal(xs, edges[n:])),
                                axis=-1)
    return np.greater_equal(xs, edges[:n]) & below_next


def _weights_between(x, weights, edges, n: int, dt):
    """The weights summed per bin (NumPy's histogram(weights=)), in their type."""
    w = np.expand_dims(np.ravel(weights), -1).astype(dt)
    return np.sum(np.where(in_bins(x, edges, n), w, np.zeros((), dt)), axis=0, dtype=dt)


@lowers(np.histogram)
def _histogram(value, a, bins=10, range=None, density=None, weights=None):
    # Edges as NumPy makes them; counts by comparisons against them (NumPy's rule: the last bin
    # is closed on the right; values outside the edges, and NaN, are dropped). Without range
    # the edges come from a.min() and a.max() in the program: NumPy's ValueError for a NaN or
    # inf there is raised while tracing, and a later run given one gets NaN edges.
    if isinstance(bins, (Tracer, str)):
        raise unsupported("histogram", " with traced or named bins (give a number of bins "
                                       "or a constant array of edges)")
    if isinstance(range, Tracer) or (range is not None and any(
            isinstance(r, Tracer) for r in range)):
        raise unsupported("histogram", " with a traced range (give it as Python numbers)")
    edges = np.asarray(value[1])
    n = edges.size - 1
    wdt = np.asarray(value[0]).dtype

    def count(xa, edges):
        if weights is None:
            return _counts_between(xa, edges, n)
        return _weights_between(xa, weights, edges, n, wdt)
    if np.ndim(bins) == 1:  # the edges themselves, compared in NumPy's common type
        counts = count(a, edges)
    else:
        xa = a.astype(edges.dtype)
        if range is None and a.size:
            edges = outer_edges(a, n, edges.dtype)
        counts = count(xa, edges)
    if density:  # NumPy's formula: counts / bin widths / total count, in float64
        counts = counts / np.diff(edges).astype(np.float64) / counts.sum()
    b = active_builder()
    return node_of(counts), (node_of(edges) if isinstance(edges, Tracer) else b.literal(edges))


def _has_tracer(v) -> bool:
    if isinstance(v, (list, tuple)):
        return any(_has_tracer(e) for e in v)
    return isinstance(v, Tracer)


@lowers(np.histogram2d)
def _histogram2d(value, x, y, bins=10, range=None, density=None, weights=None):
    # NumPy's histogramdd for two samples: edges per sample as histogram makes them, each
    # point in the bin its comparisons say, the counts (float64, as NumPy casts them) a
    # product of the two one-hot tables, weighted where weights are given.
    if isinstance(bins, str) or _has_tracer(bins):
        raise unsupported("histogram2d", " with traced or named bins")
    if _has_tracer(range):
        raise unsupported("histogram2d", " with a traced range (give it as Python numbers)")
    dt = np.asarray([np.ravel(value_of(x))[:1], np.ravel(value_of(y))[:1]]).dtype
    # NumPy's reading: a number, or one array of edges, for both samples; else one each.
    per_axis = bins if not isinstance(bins, (list, tuple, np.ndarray)) or len(bins) != 2 \
        else None
    tables, out_edges = [], []
    for k, (v, eager_edges) in enumerate(((x, value[1]), (y, value[2]))):
        b_k = per_axis if per_axis is not None else bins[k]
        edges = np.asarray(eager_edges)
        n = edges.size - 1
        s = np.ravel(v).astype(dt)
        if np.ndim(b_k) == 0 and (range is None or range[k] is None) and s.size:
            edges = outer_edges(s, n, edges.dtype)
        tables.append(in_bins(s, edges, n).astype(np.float64))
        out_edges.append(edges)
    right = tables[1]
    if weights is not None:
        right = right * np.expand_dims(np.ravel(weights).astype(np.float64), -1)
    hist = np.einsum("ki,kj->ij", tables[0], right)
    if density:
        total = hist.sum()
        hist = hist / np.reshape(np.diff(out_edges[0]), (-1, 1))
        hist = hist / np.reshape(np.diff(out_edges[1]), (1, -1))
        hist = hist / total
    b = active_builder()
    return (node_of(hist),) + tuple(node_of(e) if isinstance(e, Tracer) else b.literal(e)
                                    for e in out_edges)
