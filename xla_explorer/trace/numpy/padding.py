"""np.pad's linear_ramp mode and reflect_type='odd', on traced arrays, step by step as NumPy's
_arraypad_impl builds them (its linspace, its reflection chunk by chunk), so that the values
agree to the bit; `manipulation._pad` calls them.
"""
from __future__ import annotations

import numpy as np
from numpy.lib import _arraypad_impl as _arraypad

from ..tracer import Tracer, value_of
from .util import unsupported


def _along(ax: int, rank: int, s) -> tuple:
    return (slice(None),) * ax + (s,) + (slice(None),) * (rank - ax - 1)


def _ramp(start, stop, num: int, ax: int):
    """np.linspace(start, stop, num, endpoint=False, axis=ax) for a traced stop whose axis
    `ax` has length 1, as NumPy computes it (float type of the pair, the denormal step's
    other order where any step is 0). The caller converts to the array's type."""
    stop = np.squeeze(stop, axis=ax)
    dt = np.result_type(np.asarray(value_of(stop)).dtype, start, 1.0)
    delta = np.subtract(stop, start, dtype=dt)
    y = np.arange(num, dtype=dt).reshape((-1,) + (1,) * np.ndim(value_of(delta)))
    step = delta / num
    y = np.where(np.any(step == 0), y / num * delta, y * step) + np.asarray(start, dt)
    return np.moveaxis(y, 0, ax)


def pad_linear_ramp(array, widths, end_values, dt):
    """np.pad(mode='linear_ramp'): per axis, a ramp from each end value (included) to the
    edge (excluded), floored for integer arrays."""
    x = array if isinstance(array, Tracer) else np.asarray(array)
    rank = len(widths)
    if any(isinstance(v, Tracer) for v in np.ravel(np.asarray(end_values, dtype=object))):
        raise unsupported("pad", " with traced end_values")
    # NumPy's own pairs: a scalar or a pair gives NumPy scalars (strong types, so a float32
    # ramp is computed in float64), a pair per axis Python numbers (weak ones).
    ends = _arraypad._as_pairs(end_values, rank)
    for ax in range(rank):
        lo, hi = int(widths[ax][0]), int(widths[ax][1])
        n = np.shape(value_of(x))[ax]
        parts = []
        for side, w in ((0, lo), (1, hi)):
            if not w:
                parts.append(None)
                continue
            edge = x[_along(ax, rank, slice(0, 1) if side == 0 else slice(n - 1, n))]
            r = _ramp(ends[ax][side], edge, w, ax)
            if dt.kind in "iu":
                r = np.floor(r)
            r = r.astype(dt)
            parts.append(r if side == 0 else np.flip(r, axis=ax))
        pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
        if len(pieces) > 1:
            x = np.concatenate(pieces, axis=ax)
    return x


def pad_reflect_odd(array, widths, include_edge: bool, dt):
    """np.pad(mode='reflect' or 'symmetric', reflect_type='odd'): NumPy's _set_reflect_both,
    chunk by chunk (a pad wider than the array reflects what the last chunk made), each chunk
    2 * edge - its mirror image. An axis of one element is padded with its edge."""
    x = array if isinstance(array, Tracer) else np.asarray(array)
    rank = len(widths)
    for ax in range(rank):
        left, right = int(widths[ax][0]), int(widths[ax][1])
        n = np.shape(value_of(x))[ax]
        if not left and not right:
            continue
        if n == 1:
            x = np.concatenate([x] * (left + 1 + right), axis=ax)
            continue
        offset = 1 if include_edge else 0
        while left > 0 or right > 0:
            m = np.shape(value_of(x))[ax]
            if include_edge:
                old = m // n * n
            else:
                old = (m - 1) // (n - 1) * (n - 1)
            if left > 0:
                k = min(old, left)
                lo = 1 - offset  # the mirror of the first k elements past (or at) the edge
                chunk = np.flip(x[_along(ax, rank, slice(lo, lo + k))], axis=ax)
                chunk = 2 * x[_along(ax, rank, slice(0, 1))] - chunk
                x = np.concatenate([chunk.astype(dt), x], axis=ax)
                left -= k
            if right > 0:
                k = min(old, right)
                m = np.shape(value_of(x))[ax]
                top = m - 2 + offset
                chunk = np.flip(x[_along(ax, rank, slice(top - k + 1, top + 1))], axis=ax)
                chunk = 2 * x[_along(ax, rank, slice(m - 1, m))] - chunk
                x = np.concatenate([x, chunk.astype(dt)], axis=ax)
                right -= k
    return x
