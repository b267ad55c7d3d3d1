"""Array manipulations composed of several data-movement ops (the single ops are in
`manipulation.py`): np.fliplr, np.flipud, np.rot90 and np.atleast_1d/2d/3d (views), np.column_stack,
np.dstack, np.diff, np.tile, np.repeat and np.roll (static counts and shifts); np.append,
np.ediff1d, np.delete and np.insert (static positions), np.block, np.resize and np.vander.
"""
from __future__ import annotations

import numpy as np

from ..context import active_builder
from ..tracer import Tracer, node_of, value_of
from .registry import lowers
from .util import axis_slice, concat_nodes, unsupported


# -- compositions: flips, rotations, promotions to more dimensions, stacking, tiling -----------


@lowers(np.fliplr, view=True)
def _fliplr(value, m):
    return active_builder().reverse(node_of(m), (1,))


@lowers(np.flipud, view=True)
def _flipud(value, m):
    return active_builder().reverse(node_of(m), (0,))


@lowers(np.rot90, view=True)
def _rot90(value, m, k=1, axes=(0, 1)):
    """NumPy's own composition of flip and transpose; k=1 and k=3 are two ops, so writes
    through those views are refused (a read-only view here), never silently lost."""
    b = active_builder()
    x = node_of(m)
    n = x.shape.rank
    a0, a1 = int(axes[0]) % n, int(axes[1]) % n
    k = int(k) % 4
    if k == 0:
        return x
    if k == 2:
        return b.reverse(x, (a0, a1))
    perm = list(range(n))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return b.transpose(b.reverse(x, (a1,)), perm)
    return b.reverse(b.transpose(x, perm), (a1,))


def _atleast(name):
    def lower(value, *arys):
        if len(arys) != 1:
            raise unsupported(name, " with more than one array (call it once per array)")
        return active_builder().reshape(node_of(arys[0]), np.shape(value))
    return lower


for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    lowers(_f, view=True)(_atleast(_f.__name__))


@lowers(np.column_stack)
def _column_stack(value, tup):
    b, nodes = concat_nodes(value, tup)
    nodes = [n if n.shape.rank >= 2 else b.reshape(n, (n.shape.size, 1)) for n in nodes]
    return b.concatenate(nodes, 1)


@lowers(np.dstack)
def _dstack(value, tup):
    b, nodes = concat_nodes(value, tup)
    shaped = []
    for n in nodes:
        if n.shape.rank == 0:
            n = b.reshape(n, (1, 1, 1))
        elif n.shape.rank == 1:
            n = b.reshape(n, (1,) + n.dims + (1,))
        elif n.shape.rank == 2:
            n = b.reshape(n, n.dims + (1,))
        shaped.append(n)
    return b.concatenate(shaped, 2)


@lowers(np.diff)
def _diff(value, a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    if isinstance(n, Tracer) or isinstance(axis, Tracer):
        raise unsupported("diff", " with a traced n or axis")
    b = active_builder()
    dt = np.asarray(value).dtype
    x = node_of(a, dt)
    ax = int(axis) % x.shape.rank
    if int(n) == 0:
        return x
    parts = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = node_of(extra, dt)
        if e.shape.rank == 0:
            e = b.broadcast_to(e, x.dims[:ax] + (1,) + x.dims[ax + 1:])
        parts.append(e)
    x = b.concatenate([p for p in (parts[0], x, parts[1]) if p is not None], ax)
    if np.size(value) == 0:
        return b.full(0, dt, np.shape(value))
    for _ in range(int(n)):
        length = x.dims[ax]
        hi, lo = axis_slice(b, x, ax, 1, length), axis_slice(b, x, ax, 0, length - 1)
        x = b.compare(hi, lo, "NE") if dt == np.bool_ else b.ew("subtract", hi, lo)
    return x


def _static_ints(x, name):
    if isinstance(x, Tracer) or any(isinstance(v, Tracer) for v in np.ravel(
            np.asarray(x, dtype=object))):
        raise unsupported(name, " with traced counts (they decide the shape)")
    return [int(v) for v in np.ravel(x)]


@lowers(np.tile)
def _tile(value, A, reps):
    b = active_builder()
    reps_ = _static_ints(reps, "tile")
    x = node_of(A)
    d = max(len(reps_), x.shape.rank)
    reps_ = [1] * (d - len(reps_)) + reps_
    dims = (1,) * (d - x.shape.rank) + x.dims
    x = b.reshape(x, dims)
    wide = tuple(v for r, s in zip(reps_, dims) for v in (r, s))
    x = b.broadcast(x, wide, tuple(2 * i + 1 for i in range(d)))
    return b.reshape(x, np.shape(value))


@lowers(np.repeat)
def _repeat(value, a, repeats, axis=None):
    counts = _static_ints(repeats, "repeat")
    if len(counts) != 1:
        raise unsupported("repeat", " with a count per element (only one repeat count)")
    b = active_builder()
    x = node_of(a)
    if axis is None:
        x = b.reshape(x, (x.shape.size,))
        ax = 0
    else:
        ax = int(axis) % x.shape.rank
    dims = x.dims[:ax + 1] + (counts[0],) + x.dims[ax + 1:]
    mapping = tuple(range(ax + 1)) + tuple(range(ax + 2, len(dims)))
    return b.reshape(b.broadcast(x, dims, mapping), np.shape(value))


@lowers(np.roll)
def _roll(value, a, shift, axis=None):
    b = active_builder()
    x = node_of(a)
    shifts = _static_ints(shift, "roll")
    if axis is None:
        if len(shifts) != 1:
            raise unsupported("roll", " with several shifts and no axis")
        flat = b.reshape(x, (x.shape.size,))
        return b.reshape(_rolled(b, flat, {0: shifts[0]}), x.dims)
    axes = [int(v) % x.shape.rank for v in np.ravel(axis)]
    total: dict[int, int] = {}
    for s, ax in np.broadcast(np.asarray(shifts if len(shifts) > 1 else shifts[0]),
                              np.asarray(axes if len(axes) > 1 else axes[0])):
        total[int(ax)] = total.get(int(ax), 0) + int(s)
    return _rolled(b, x, total)


def _rolled(b, x, shifts: dict[int, int]):
    for ax, s in sorted(shifts.items()):
        n = x.dims[ax]
        s = s % n if n else 0
        if s:
            x = b.concatenate([axis_slice(b, x, ax, n - s, n), axis_slice(b, x, ax, 0, n - s)], ax)
    return x


# -- more compositions: append, ediff1d, delete, insert, block, resize, vander --------


def _static_index_arg(obj, name):
    """A static index argument (an int, a slice, a list or array of ints or bools): the
    positions are decided at trace time, so a traced one is refused."""
    if isinstance(obj, Tracer) or (isinstance(obj, (list, tuple)) and any(
            isinstance(v, Tracer) for v in np.ravel(np.asarray(obj, dtype=object)))):
        raise unsupported(name, " with traced positions (obj decides the result's shape); "
                                "give them as Python ints, a slice or a list")
    return obj


def _pick(b, sources, picks, axis):
    """Concatenate along `axis` the slices picks = [(source number, index), ...] names, one
    per result position, consecutive indices of one source taken as one slice."""
    runs = []
    for src, i in picks:
        if runs and runs[-1][0] == src and runs[-1][2] == i:
            runs[-1][2] = i + 1
        else:
            runs.append([src, i, i + 1])
    if not runs:  # nothing picked: an empty slice of the first source keeps its type
        runs = [[0, 0, 0]]
    return b.concatenate([axis_slice(b, sources[s], axis, lo, hi) for s, lo, hi in runs], axis)


@lowers(np.append)
def _append(value, arr, values, axis=None):
    if axis is None:
        return node_of(np.concatenate((np.ravel(arr), np.ravel(values))))
    return node_of(np.concatenate((arr, values), axis=axis))


@lowers(np.ediff1d)
def _ediff1d(value, ary, to_end=None, to_begin=None):
    # NumPy's result keeps ary's type; to_begin and to_end are converted to it (NumPy has
    # checked the conversion is same_kind).
    b = active_builder()
    dt = np.asarray(value).dtype
    flat = np.ravel(ary)
    x = node_of(flat)
    n = x.dims[0]
    diff = b.ew("subtract", axis_slice(b, x, 0, min(1, n), n), axis_slice(b, x, 0, 0, max(n - 1, 0)))
    parts = [diff]
    if to_begin is not None:
        parts.insert(0, b.reshape(node_of(to_begin, dt), (int(np.size(value_of(to_begin))),)))
    if to_end is not None:
        parts.append(b.reshape(node_of(to_end, dt), (int(np.size(value_of(to_end))),)))
    return b.concatenate(parts, 0)


@lowers(np.delete)
def _delete(value, arr, obj, axis=None):
    b = active_builder()
    obj = _static_index_arg(obj, "delete")
    x = node_of(arr)
    if axis is None:
        x, ax = b.reshape(x, (x.shape.size,)), 0
    else:
        ax = int(axis) % x.shape.rank
    # NumPy itself says which positions stay: delete them from the positions 0..n-1.
    keep = np.delete(np.arange(x.dims[ax]), obj)
    return _pick(b, [x], [(0, int(i)) for i in keep], ax)


@lowers(np.insert)
def _insert(value, arr, obj, values, axis=None):
    # NumPy's own steps (numpy.insert), with the positions known at trace time: one position
    # inserts `values` as a block; several insert one slice each, in the order of the
    # positions (a stable sort), values broadcast to one slice per position.
    b = active_builder()
    obj = _static_index_arg(obj, "insert")
    x = node_of(arr)
    if axis is None:
        x, ax = b.reshape(x, (x.shape.size,)), 0
    else:
        ax = int(axis) % x.shape.rank
    n, rank = x.dims[ax], x.shape.rank
    v = node_of(values, x.dtype)
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == np.bool_:
            indices = np.flatnonzero(indices)
    if indices.size == 1:
        index = int(indices.item())
        index = index + n if index < 0 else index
        v = b.reshape(v, (1,) * (rank - v.shape.rank) + v.dims)
        if indices.ndim == 0:  # NumPy moves values' first axis to `axis`
            perm = list(range(1, rank))
            perm.insert(ax, 0)
            v = b.transpose(v, perm)
        dims = x.dims[:ax] + (v.dims[ax],) + x.dims[ax + 1:]
        v = b.broadcast_to(v, dims)
        return b.concatenate([axis_slice(b, x, ax, 0, index), v,
                              axis_slice(b, x, ax, index, n)], ax)
    indices = indices.astype(np.intp)
    indices[indices < 0] += n
    numnew = len(indices)
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(numnew)
    v = b.broadcast_to(v, x.dims[:ax] + (numnew,) + x.dims[ax + 1:])
    slot = {int(p): k for k, p in enumerate(indices)}  # result position -> value slice
    picks, i = [], 0
    for pos in range(n + numnew):
        if pos in slot:
            picks.append((1, slot[pos]))
        else:
            picks.append((0, i))
            i += 1
    return _pick(b, [x, v], picks, ax)


@lowers(np.block)
def _block(value, arrays):
    # Innermost lists join along the last axis, the next ones out along the one before; every
    # piece first gets leading axes of length 1 up to the result's rank (NumPy's rule).
    ndim = np.ndim(value)

    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else int(isinstance(x, list))

    d = depth(arrays)

    def join(x, level):
        if isinstance(x, list):
            return np.concatenate([join(e, level + 1) for e in x], axis=level - d)
        v = value_of(x)
        shape = (1,) * (ndim - np.ndim(v)) + np.shape(v)
        return np.reshape(x, shape) if isinstance(x, Tracer) else np.reshape(np.asarray(x), shape)
    return node_of(join(arrays, 0))


@lowers(np.resize)
def _resize(value, a, new_shape):
    # a's elements in order, repeated as often as needed, cut to the new size.
    _static_ints(new_shape, "resize")
    b = active_builder()
    x = node_of(a)
    flat = b.reshape(x, (x.shape.size,))
    total = int(np.size(value))
    if total == 0 or x.shape.size == 0:
        return b.full(0, x.dtype, np.shape(value))
    reps = -(-total // x.shape.size)
    tiled = b.reshape(b.broadcast(flat, (reps, x.shape.size), (1,)), (reps * x.shape.size,))
    return b.reshape(axis_slice(b, tiled, 0, 0, total), np.shape(value))


@lowers(np.vander)
def _vander(value, x, N=None, increasing=False):
    # Column by column as NumPy computes them (np.multiply.accumulate): each power is the
    # previous one times x, so float results round as NumPy's do.
    if N is not None:
        _static_ints(N, "vander")
    b = active_builder()
    v = np.asarray(value)
    col = b.reshape(node_of(x, v.dtype), (v.shape[0], 1))
    n = v.shape[1]
    cols, p = [], None
    for k in range(n):
        p = b.full(1, v.dtype, col.dims) if k == 0 else (col if k == 1 else
                                                          b.ew("multiply", p, col))
        cols.append(p)
    if not cols:
        return b.full(0, v.dtype, v.shape)
    if not increasing:
        cols = cols[::-1]
    return b.concatenate(cols, 1)
