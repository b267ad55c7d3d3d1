"""np.put (a scatter into the flattened array, in place) and np.ix_ (index arrays shaped to
cross each other), on top of the gathers and scatters of `indexing`.
"""
from __future__ import annotations

import numpy as np

from ..context import active_builder
from ..tracer import Tracer, node_of, value_of
from .indexing import scatter_axes
from .registry import lowers
from .util import unsupported


def _put_indices(ind, n: int, mode: str):
    """np.put's flat indices under `mode`: 'raise' wraps negatives as indexing does (one out
    of range is skipped by compiled code, an IndexError on the interpreter); 'wrap' takes
    them modulo n; 'clip' clamps them into [0, n - 1], a negative one to 0."""
    if mode == "raise":
        return ind
    if mode == "wrap":
        return np.mod(ind, n)
    return np.clip(ind, 0, n - 1)


@lowers(np.put, in_place=True)
def _put(value, a, ind, v, mode="raise"):
    # a.flat[ind[k]] = v[k % len(v)], in order, so a repeated index keeps its last value.
    if mode not in ("raise", "wrap", "clip"):
        raise unsupported("put", f" with mode={mode!r}")
    b = active_builder()
    x = node_of(a)
    size = x.shape.size
    count = int(np.size(value_of(ind)))
    if count == 0 or np.size(value_of(v)) == 0 or size == 0:
        return x
    flat_ind = np.ravel(ind) if isinstance(ind, Tracer) else np.ravel(np.asarray(ind))
    if isinstance(flat_ind, Tracer) and flat_ind.dtype.kind not in "iu":
        flat_ind = flat_ind.astype(np.int64)
    flat_ind = _put_indices(flat_ind, size, mode)
    vals = np.resize(v, count) if isinstance(v, Tracer) else np.resize(np.asarray(v), count)
    flat = b.reshape(x, (size,))
    node = scatter_axes(flat, [("array", flat_ind)], node_of(vals, x.dtype), None, "np.put")
    return b.reshape(node, x.dims)


@lowers(np.ix_)
def _ix(value, *args):
    # Each 1-D index array reshaped to lie along its own axis, so that together they index
    # the cross product; a boolean one is its np.nonzero, whose length is a value.
    b = active_builder()
    k = len(args)
    out = []
    for d, arg in enumerate(args):
        v = np.asarray(value_of(arg))
        if v.dtype == np.bool_ and isinstance(arg, Tracer):
            raise unsupported("ix_", " of a traced boolean array (its indices are np.nonzero's, "
                                     "whose length depends on the values)")
        node = node_of(np.nonzero(v)[0] if v.dtype == np.bool_ else arg)
        dims = [1] * k
        dims[d] = node.shape.size
        out.append(b.reshape(node, tuple(dims)))
    return tuple(out)
