"""np.quantile and np.percentile with every method NumPy has, and np.nanquantile and
np.nanpercentile: compositions of the sort (`sorting`).

q is known when tracing, so where each quantile lies in a sorted slice of n elements is too:
NumPy's own method table (`_QuantileMethods`: the virtual index, the neighbours, gamma) is
asked at trace time, and the program reads the two neighbours and interpolates between them
as NumPy's `_lerp` does. The nan variants drop each slice's NaNs, so their n is the count of
numbers in the slice, a value: the table is made for every count from 0 to the slice's
length, and each slice reads its row of it.
"""
from __future__ import annotations

import numpy as np
from numpy.lib import _function_base_impl as _fb

from ..context import active_builder
from ..tracer import Tracer, node_of, value_of
from .registry import lowers
from .sorting import column, sorted_rows
from .util import unsupported

_METHODS = tuple(_fb._QuantileMethods)


def _plan(method: str, n: int, qs: np.ndarray):
    """For each quantile of qs (flat): (previous index, next index, gamma) in a sorted slice
    of n numbers, as NumPy's _quantile computes them, and whether gamma is used at all
    (methods that take an element, and integer indexes, do not)."""
    props = _fb._QuantileMethods[method]
    virtual = np.asanyarray(props["get_virtual_index"](n, qs))
    takes = props["fix_gamma"] is None or (method == "linear" and virtual.dtype.kind in "iu")
    if takes:
        idx = virtual.astype(np.intp).reshape(-1) % max(n, 1)
        return idx, idx, np.zeros(idx.shape), True
    prev, nxt = _fb._get_indexes(np.empty(0), virtual, n)
    gamma = _fb._get_gamma(virtual, prev, props)
    return (prev.reshape(-1) % max(n, 1), nxt.reshape(-1) % max(n, 1), gamma.reshape(-1),
            False)


def _lerp(lo, hi, t):
    """NumPy's _lerp: from the nearer end, so that t = 1 gives hi exactly."""
    diff = hi - lo
    return np.where(t >= 0.5, hi - diff * (1 - t), lo + diff * t)


def _check(name, q, method, interpolation, weights):
    if weights is not None:
        raise unsupported(name, " with weights=")
    if interpolation is not None:
        raise unsupported(name, " with interpolation= (use method=)")
    if method not in _METHODS:
        raise unsupported(name, f" with method={method!r}")
    if isinstance(q, Tracer):
        raise unsupported(name, " with q computed in the traced function; q must be known "
                                "when tracing (a number or a list)")


def _sorted_slices(a, q, axis, value, scale):
    """What both quantile lowerings start from: q as an array of fractions, the slices
    sorted (each a row), a slice's length and the result's type."""
    qs = np.asanyarray(q)
    if scale:
        qs = np.true_divide(qs, 100)
    s, lead = sorted_rows(a, axis)
    return qs, s, lead, s.shape[-1], np.asarray(value).dtype


def _quantiles(name, value, a, q, axis, method, scale):
    b = active_builder()
    weak = type(q) in (int, float)
    qs, s, lead, n, dt = _sorted_slices(a, q, axis, value, scale)
    if n == 0:
        raise unsupported(name, " of an empty slice")
    prev, nxt, gammas, takes = _plan(method, n, qs)
    results = []
    for k in range(prev.size):
        lo = column(s, int(prev[k]))
        if takes:
            r = lo
        else:
            gamma = np.asanyarray(gammas[k])
            t = float(gamma) if weak else gamma
            hi = column(s, int(nxt[k]))
            diff = hi - lo
            r = hi - diff * (1 - t) if gamma >= 0.5 else lo + diff * t
        if s.dtype.kind == "f":  # a slice with a NaN (sorted last) gives NaN
            last = column(s, -1)
            r = np.where(np.isnan(last), last, r)
        results.append(node_of(r.astype(dt) if isinstance(r, Tracer) else r))
    if qs.ndim == 0:
        out = results[0]
    else:
        out = b.concatenate([b.reshape(r, (1,) + r.dims) for r in results], 0)
    return b.reshape(b.convert(out, dt), np.shape(value))


def _table(values, dtype) -> Tracer:
    """A small constant (one entry per count) as a traced array, to be indexed by a traced
    count: a gather."""
    t = np.asarray(values, dtype)
    return Tracer(active_builder(), node_of(t), t)


def _nan_quantiles(name, value, a, q, axis, method, scale):
    """Each slice's quantiles of its numbers: NaN sorts last, so a slice with c numbers holds
    them first, and the plan for c (a row of a table over every c) says where to read."""
    b = active_builder()
    qs, s, lead, n, dt = _sorted_slices(a, q, axis, value, scale)
    if n == 0:
        return b.full(np.nan, dt, np.shape(value))
    plans = [_plan(method, c, qs) for c in range(n + 1)]
    count = np.sum(~np.isnan(s), axis=-1)  # numbers per slice (int64)
    pos = np.arange(n)
    zero = np.asarray(-0.0, s.dtype)  # the sum's identity: a -0.0 read stays -0.0
    results = []
    for k in range(qs.size):
        prev = _table([p[0][k] for p in plans], np.int64)[count]
        nxt = _table([p[1][k] for p in plans], np.int64)[count]
        gamma = _table([0.0 if p[3] else float(p[2][k]) for p in plans], np.float64)[count]
        lo = np.sum(np.where(pos == np.expand_dims(prev, -1), s, zero), axis=-1)
        hi = np.sum(np.where(pos == np.expand_dims(nxt, -1), s, zero), axis=-1)
        r = _lerp(lo.astype(np.float64), hi.astype(np.float64), gamma)
        r = np.where(count == 0, np.nan, r)
        results.append(node_of(r.astype(dt)))
    if qs.ndim == 0:
        out = results[0]
    else:
        out = b.concatenate([b.reshape(r, (1,) + r.dims) for r in results], 0)
    return b.reshape(b.convert(out, dt), np.shape(value))


def _lowering(name: str, scale: bool, nan: bool):
    def lower(value, a, q, axis=None, out=None, overwrite_input=False, method="linear",
              keepdims=False, *, weights=None, interpolation=None):
        _check(name, q, method, interpolation, weights)
        if nan and np.asarray(value_of(a)).dtype.kind != "f":  # no NaN: the plain one
            plain = np.percentile if scale else np.quantile
            return node_of(plain(a, q, axis=axis, method=method, keepdims=keepdims))
        return (_nan_quantiles if nan else _quantiles)(name, value, a, q, axis, method, scale)
    return lower


lowers(np.quantile)(_lowering("quantile", False, False))
lowers(np.percentile)(_lowering("percentile", True, False))
lowers(np.nanquantile)(_lowering("nanquantile", False, True))
lowers(np.nanpercentile)(_lowering("nanpercentile", True, True))
