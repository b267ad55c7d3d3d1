"""Array manipulation: data movement without arithmetic. np.reshape, np.ravel, np.squeeze,
np.expand_dims, np.transpose, np.swapaxes, np.moveaxis, np.broadcast_to, np.flip (the views:
NumPy's result may share the argument's storage), np.concatenate, np.stack, np.hstack,
np.vstack, np.pad, np.copy; and np.shape, np.ndim and np.size, answered at trace time.
"""
from __future__ import annotations

import numpy as np

from ..tracer import Tracer, active_builder, node_of, read_shape, value_of
from .registry import lowers, static
from .util import canonical_axes, unsupported


# -- static queries: answered at trace time, no instruction ------------------------------------


@static(np.shape)
def _shape(a):
    read_shape(a)  # a Python value the program may depend on: checked on every run
    return np.shape(value_of(a))


@static(np.size)
def _size(a, axis=None):
    read_shape(a)
    return np.size(value_of(a), axis)


static(np.ndim)(lambda a: np.ndim(value_of(a)))


# -- views -------------------------------------------------------------------------------------


@lowers(np.reshape, view=True)
def _reshape(value, a, *args, **kw):
    order = kw.get("order", args[1] if len(args) > 1 else "C")
    if order not in ("C", None):
        raise unsupported("reshape", f" with order={order!r} (only C order)")
    return active_builder().reshape(node_of(a), np.shape(value))


@lowers(np.ravel, view=True)
def _ravel(value, a, order="C"):
    if order not in ("C", None):
        raise unsupported("ravel", f" with order={order!r} (only C order)")
    return active_builder().reshape(node_of(a), np.shape(value))


@lowers(np.squeeze, np.expand_dims, view=True)
def _same_shape_reshape(value, a, *args, **kw):
    return active_builder().reshape(node_of(a), np.shape(value))


@lowers(np.transpose, view=True)
def _transpose(value, a, axes=None):
    x = node_of(a)
    perm = tuple(reversed(range(x.shape.rank))) if axes is None else tuple(
        int(p) % x.shape.rank for p in axes)
    return active_builder().transpose(x, perm)


@lowers(np.swapaxes, view=True)
def _swapaxes(value, a, axis1, axis2):
    x = node_of(a)
    perm = list(range(x.shape.rank))
    i, j = int(axis1) % x.shape.rank, int(axis2) % x.shape.rank
    perm[i], perm[j] = perm[j], perm[i]
    return active_builder().transpose(x, perm)


@lowers(np.moveaxis, view=True)
def _moveaxis(value, a, source, destination):
    x = node_of(a)
    n = x.shape.rank
    src = [int(s) % n for s in np.atleast_1d(source)]
    dst = [int(d) % n for d in np.atleast_1d(destination)]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return active_builder().transpose(x, order)


@lowers(np.broadcast_to, view=True)
def _broadcast_to(value, a, shape, subok=False):
    return active_builder().broadcast_to(node_of(a), np.shape(value))


@lowers(np.flip, view=True)
def _flip(value, m, axis=None):
    x = node_of(m)
    return active_builder().reverse(x, canonical_axes(axis, x.shape.rank))


# -- joining, padding, copying: new arrays -----------------------------------------------------


def _concat_nodes(value, arrays):
    b = active_builder()
    dt = np.asarray(value).dtype  # NumPy's common type, or the dtype= asked for
    return b, [node_of(x, dt) for x in arrays]


@lowers(np.concatenate)
def _concatenate(value, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    b, nodes = _concat_nodes(value, arrays)
    if axis is None:
        nodes = [b.reshape(n, (n.shape.size,)) for n in nodes]
        axis = 0
    return b.concatenate(nodes, int(axis) % nodes[0].shape.rank)


@lowers(np.stack)
def _stack(value, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    b, nodes = _concat_nodes(value, arrays)
    ax = int(axis) % (nodes[0].shape.rank + 1)
    nodes = [b.reshape(n, n.dims[:ax] + (1,) + n.dims[ax:]) for n in nodes]
    return b.concatenate(nodes, ax)


@lowers(np.hstack)
def _hstack(value, tup, dtype=None, casting="same_kind"):
    b, nodes = _concat_nodes(value, tup)
    nodes = [n if n.shape.rank else b.reshape(n, (1,)) for n in nodes]
    return b.concatenate(nodes, 0 if nodes[0].shape.rank == 1 else 1)


@lowers(np.vstack)
def _vstack(value, tup, dtype=None, casting="same_kind"):
    b, nodes = _concat_nodes(value, tup)
    nodes = [n if n.shape.rank >= 2 else b.reshape(n, (1,) * (2 - n.shape.rank) + n.dims) for n in nodes]
    return b.concatenate(nodes, 0)


@lowers(np.pad)
def _pad(value, array, pad_width, mode="constant", **kw):
    """np.pad with a constant is HLO's pad (edges only, no interior padding)."""
    fill = kw.pop("constant_values", 0)
    if mode != "constant" or kw or np.ndim(fill) != 0 or isinstance(fill, Tracer):
        raise unsupported("pad", " except mode='constant' with one constant value")
    x = node_of(array)
    if x.shape.rank == 0:  # NumPy pads a 0-d array to itself
        return x
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.shape.rank, 2))
    b = active_builder()
    return b.pad(x, b.constant(fill, x.dtype), [(int(lo), int(hi), 0) for lo, hi in widths])


@lowers(np.copy)
def _copy(value, a, *args, **kw):
    return node_of(a)
