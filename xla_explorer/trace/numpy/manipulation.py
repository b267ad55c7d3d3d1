"""Array manipulation: data movement without arithmetic. np.reshape, np.ravel, np.squeeze,
np.expand_dims, np.transpose, np.swapaxes, np.moveaxis, np.broadcast_to, np.flip (the views:
NumPy's result may share the argument's storage), np.concatenate, np.stack, np.hstack,
np.vstack, np.pad, np.copy; np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit and
np.broadcast_arrays (several views); and np.shape, np.ndim and np.size, answered at trace
time. What is composed of several of these ops is in `rearranging.py`.
"""
from __future__ import annotations

import numpy as np

from ..context import active_builder
from ..tracer import Tracer, node_of, read_shape, value_of
from .padding import pad_linear_ramp, pad_reflect_odd
from .registry import lowers, static
from .util import axis_slice, canonical_axes, concat_nodes, unsupported


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
    return _reshaped("reshape", a, np.shape(value), order)


@lowers(np.ravel, view=True)
def _ravel(value, a, order="C"):
    return _reshaped("ravel", a, np.shape(value), order)


def _reshaped(name, a, dims, order):
    """A reshape in C order; in Fortran order (the first index fastest), the same reshape of
    the axes reversed: transpose, reshape to the reversed shape, transpose back."""
    b = active_builder()
    if order in ("C", None):
        return b.reshape(node_of(a), dims)
    if order != "F":
        raise unsupported(name, f" with order={order!r} (only 'C' and 'F')")
    x = node_of(a)
    x = b.transpose(x, tuple(reversed(range(x.shape.rank))))
    x = b.reshape(x, tuple(reversed(dims)))
    return b.transpose(x, tuple(reversed(range(len(dims)))))


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


@lowers(np.concatenate)
def _concatenate(value, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    b, nodes = concat_nodes(value, arrays)
    if axis is None:
        nodes = [b.reshape(n, (n.shape.size,)) for n in nodes]
        axis = 0
    return b.concatenate(nodes, int(axis) % nodes[0].shape.rank)


@lowers(np.stack)
def _stack(value, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    b, nodes = concat_nodes(value, arrays)
    ax = int(axis) % (nodes[0].shape.rank + 1)
    nodes = [b.reshape(n, n.dims[:ax] + (1,) + n.dims[ax:]) for n in nodes]
    return b.concatenate(nodes, ax)


@lowers(np.hstack)
def _hstack(value, tup, dtype=None, casting="same_kind"):
    b, nodes = concat_nodes(value, tup)
    nodes = [n if n.shape.rank else b.reshape(n, (1,)) for n in nodes]
    return b.concatenate(nodes, 0 if nodes[0].shape.rank == 1 else 1)


@lowers(np.vstack)
def _vstack(value, tup, dtype=None, casting="same_kind"):
    b, nodes = concat_nodes(value, tup)
    nodes = [n if n.shape.rank >= 2 else b.reshape(n, (1,) * (2 - n.shape.rank) + n.dims) for n in nodes]
    return b.concatenate(nodes, 0)


@lowers(np.pad)
def _pad(value, array, pad_width, mode="constant", **kw):
    """np.pad axis by axis, as NumPy pads (a later axis pads the corners an earlier one
    made): with constants, HLO's pad; edge, reflect, symmetric and wrap, slices of the axis
    (reversed where the pad runs backwards) concatenated in the order NumPy reads them;
    maximum, minimum, mean and median, NumPy's statistic of the first and last stat_length
    elements, broadcast; linear_ramp and reflect_type='odd' as NumPy builds them
    (`padding`). NumPy has already refused keywords that do not fit the mode."""
    modes = ("constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean",
             "median", "linear_ramp", "empty")
    if callable(mode) or mode not in modes:
        raise unsupported("pad", f" with mode={mode!r} (only {', '.join(map(repr, modes))})")
    fill = kw.get("constant_values", 0)
    mode = "constant" if mode == "empty" else mode  # NumPy leaves the pad arbitrary: zeros
    b = active_builder()
    dt = np.asarray(value).dtype
    x = node_of(array, dt)
    rank = x.shape.rank
    if rank == 0:  # NumPy pads a 0-d array to itself
        return x
    if isinstance(pad_width, dict):  # {axis: width or (before, after)}, the rest unpadded
        pairs = [(0, 0)] * rank
        for ax, w in pad_width.items():
            pairs[int(ax)] = tuple(np.broadcast_to(np.asarray(w, dtype=object), (2,)))
        pad_width = pairs
    widths = np.broadcast_to(np.asarray(_static_ints_shaped(pad_width, "pad"), np.int64),
                             (rank, 2))
    if mode in ("maximum", "minimum", "mean", "median"):
        return node_of(_stat_pad(array, widths, kw.get("stat_length"), mode, dt))
    if mode == "linear_ramp":
        return node_of(pad_linear_ramp(array, widths, kw.get("end_values", 0), dt))
    if mode in ("reflect", "symmetric") and kw.get("reflect_type", "even") == "odd":
        return node_of(pad_reflect_odd(array, widths, mode == "symmetric", dt))
    if mode == "constant":
        fills = _pad_fills(b, fill, x.dtype, rank)
    for ax in range(rank):
        lo, hi = int(widths[ax][0]), int(widths[ax][1])
        if not lo and not hi:
            continue
        if mode == "constant":
            for side, w in ((0, lo), (1, hi)):
                if w:
                    config = [(0, 0, 0)] * rank
                    config[ax] = (w, 0, 0) if side == 0 else (0, w, 0)
                    x = b.pad(x, fills[ax][side], config)
            continue
        # Which source element each output position reads: NumPy's own answer on indices.
        index = np.pad(np.arange(x.dims[ax]), (lo, hi), mode=mode)
        x = b.concatenate(_gathered_runs(b, x, ax, index), ax)
    return x


def _stat_pad(array, widths, stat_length, mode, dt):
    """NumPy's statistic pads (_get_stats): per axis, the statistic of the first and of the
    last stat_length elements (all of them when None or longer), rounded for integer
    arrays, broadcast over the pad; computed on traced arrays, as NumPy does."""
    func = {"maximum": np.max, "minimum": np.min, "mean": np.mean, "median": np.median}[mode]
    x = array if isinstance(array, Tracer) else np.asarray(array)
    rank = len(widths)
    lengths = ([(None, None)] * rank if stat_length is None else np.broadcast_to(
        np.asarray(_static_ints_shaped(stat_length, "pad"), np.int64), (rank, 2)).tolist())
    for ax in range(rank):
        lo, hi = int(widths[ax][0]), int(widths[ax][1])
        if not lo and not hi:
            continue
        n = np.shape(value_of(x))[ax]
        ll, rl = (n if v is None or n < v else int(v) for v in lengths[ax])

        def stat(start, stop):
            s = func(x[(slice(None),) * ax + (slice(start, stop),)], axis=ax, keepdims=True)
            return np.round(s) if dt.kind in "iu" else s

        left = stat(0, ll)
        right = left if ll == rl == n else stat(n - rl, n)
        dims = list(np.shape(value_of(x)))
        parts = []
        for w, s in ((lo, left), (0, x), (hi, right)):
            if s is x:
                parts.append(x)
            elif w:
                dims[ax] = w
                parts.append(np.broadcast_to(s, tuple(dims)).astype(dt))
        x = np.concatenate(parts, axis=ax)
    return x


def _static_ints_shaped(v, name):
    if isinstance(v, Tracer) or any(isinstance(e, Tracer) for e in np.ravel(
            np.asarray(v, dtype=object))):
        raise unsupported(name, " with traced widths (they decide the shape)")
    return np.asarray(v, dtype=object).astype(np.int64)


def _pad_fills(b, fill, dtype, rank):
    """constant_values in any of NumPy's forms (one value, (before, after), one pair per
    axis) as [axis][side] scalar instructions of the array's type; a traced scalar too."""
    if isinstance(fill, Tracer):
        if fill.ndim:
            raise unsupported("pad", " with traced constant_values other than one scalar")
        node = node_of(fill, dtype)
        return [[node, node]] * rank
    table = np.broadcast_to(np.asarray(fill, dtype=object), (rank, 2))
    if any(isinstance(v, Tracer) for v in table.ravel()):
        raise unsupported("pad", " with traced constant_values other than one scalar")
    with np.errstate(all="ignore"):  # NumPy casts them to the array's type unsafely
        return [[b.constant(np.asarray(v).astype(dtype), dtype) for v in row] for row in table]


def _gathered_runs(b, x, ax, index):
    """x's elements along `ax` in the order of the static `index`, as the fewest slices: a
    run of consecutive indices is one slice, a descending run a reversed slice, a repeated
    index one element broadcast."""
    parts, i, n = [], 0, len(index)
    while i < n:
        j = i + 1
        step = int(index[j] - index[i]) if j < n else 0
        if step not in (-1, 0, 1):
            step = 0
        while j < n and index[j] - index[j - 1] == step:
            j += 1
        if j == i + 1:
            step = 1
        first, last = int(index[i]), int(index[j - 1])
        lo, hi = min(first, last), max(first, last) + 1
        part = axis_slice(b, x, ax, lo, hi)
        if step == -1:
            part = b.reverse(part, (ax,))
        elif step == 0:
            dims = x.dims[:ax] + (j - i,) + x.dims[ax + 1:]
            part = b.broadcast(b.reshape(part, x.dims[:ax] + x.dims[ax + 1:]), dims,
                               [d for d in range(len(dims)) if d != ax])
        parts.append(part)
        i = j
    return parts


# -- splitting: several results, views of the argument -------------------------------------


def _split_points(n, sections, name):
    """NumPy's array_split boundaries along `axis`: sections of sizes differing by at most
    one (the larger first), or the pieces between the given indices, with Python's slicing
    (negative indices count from the end, a backward pair is empty)."""
    if isinstance(sections, Tracer) or any(isinstance(v, Tracer) for v in np.ravel(
            np.asarray(sections, dtype=object))):
        raise unsupported(name, " with traced indices or sections (they decide the shapes)")
    if np.ndim(sections) == 0:
        each, extra = divmod(n, int(sections))
        sizes = [each + 1] * extra + [each] * (int(sections) - extra)
        points = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
    else:
        points = [0] + [int(i) for i in sections] + [n]
    out = []
    for start, stop in zip(points[:-1], points[1:]):
        lo, hi, _ = slice(start, stop).indices(n)
        out.append((lo, max(lo, hi)))
    return out


def _split_along(value, ary, sections, axis, name):
    b = active_builder()
    x = node_of(ary)  # an instruction too, when a view of it is re-derived
    if axis is None:  # hsplit: the second axis, or the first of a 1-D array
        axis = 1 if x.shape.rank > 1 else 0
    ax = int(axis) % x.shape.rank
    return tuple(axis_slice(b, x, ax, lo, hi)
                 for lo, hi in _split_points(x.dims[ax], sections, name))


@lowers(np.split, view=True)
def _split(value, ary, indices_or_sections, axis=0):
    return _split_along(value, ary, indices_or_sections, axis, "split")


@lowers(np.array_split, view=True)
def _array_split(value, ary, indices_or_sections, axis=0):
    return _split_along(value, ary, indices_or_sections, axis, "array_split")


@lowers(np.hsplit, view=True)
def _hsplit(value, ary, indices_or_sections):
    return _split_along(value, ary, indices_or_sections, None, "hsplit")


@lowers(np.vsplit, view=True)
def _vsplit(value, ary, indices_or_sections):
    return _split_along(value, ary, indices_or_sections, 0, "vsplit")


@lowers(np.dsplit, view=True)
def _dsplit(value, ary, indices_or_sections):
    return _split_along(value, ary, indices_or_sections, 2, "dsplit")


@lowers(np.broadcast_arrays, view=True)
def _broadcast_arrays(value, *args, subok=False):
    b = active_builder()
    return tuple(b.broadcast_to(node_of(a), np.shape(v)) for a, v in zip(args, value))


@lowers(np.copy)
def _copy(value, a, *args, **kw):
    return node_of(a)
