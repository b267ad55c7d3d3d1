"""Array manipulation: data movement without arithmetic. np.reshape, np.ravel, np.squeeze,
np.expand_dims, np.transpose, np.swapaxes, np.moveaxis, np.broadcast_to, np.flip (the views:
NumPy's result may share the argument's storage), np.concatenate, np.stack, np.hstack,
np.vstack, np.pad, np.copy; compositions of those ops: np.fliplr, np.flipud, np.rot90 and
np.atleast_1d/2d/3d (views too), np.column_stack, np.dstack, np.diff, np.tile, np.repeat and
np.roll (static counts and shifts); np.split, np.array_split, np.hsplit, np.vsplit,
np.dsplit and np.broadcast_arrays (several views); np.append, np.ediff1d, np.delete and
np.insert (static positions), np.block, np.resize and np.vander; and np.shape, np.ndim and
np.size, answered at trace time.
"""
from __future__ import annotations

import numpy as np

from ..context import active_builder
from ..tracer import Tracer, node_of, read_shape, value_of
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
    """np.pad axis by axis, as NumPy pads (a later axis pads the corners an earlier one
    made): with constants, HLO's pad; edge, reflect, symmetric and wrap, slices of the axis
    (reversed where the pad runs backwards) concatenated in the order NumPy reads them;
    maximum, minimum and mean, NumPy's statistic of the first and last stat_length
    elements, broadcast. NumPy has already refused keywords that do not fit the mode."""
    modes = ("constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean",
             "empty")
    if callable(mode) or mode not in modes:
        raise unsupported("pad", f" with mode={mode!r} (only {', '.join(map(repr, modes))})")
    if kw.get("reflect_type", "even") != "even":
        raise unsupported("pad", " with reflect_type='odd' (only reflect_type='even')")
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
    if mode in ("maximum", "minimum", "mean"):
        return node_of(_stat_pad(array, widths, kw.get("stat_length"), mode, dt))
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
    func = {"maximum": np.max, "minimum": np.min, "mean": np.mean}[mode]
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
        part = _axis_slice(b, x, ax, lo, hi)
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
    return tuple(_axis_slice(b, x, ax, lo, hi)
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
    b, nodes = _concat_nodes(value, tup)
    nodes = [n if n.shape.rank >= 2 else b.reshape(n, (n.shape.size, 1)) for n in nodes]
    return b.concatenate(nodes, 1)


@lowers(np.dstack)
def _dstack(value, tup):
    b, nodes = _concat_nodes(value, tup)
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


def _axis_slice(b, x, axis, start, stop):
    spec = [(0, d, 1) for d in x.dims]
    spec[axis] = (start, stop, 1)
    return b.slice(x, spec)


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
        hi, lo = _axis_slice(b, x, ax, 1, length), _axis_slice(b, x, ax, 0, length - 1)
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
            x = b.concatenate([_axis_slice(b, x, ax, n - s, n), _axis_slice(b, x, ax, 0, n - s)], ax)
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
    return b.concatenate([_axis_slice(b, sources[s], axis, lo, hi) for s, lo, hi in runs], axis)


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
    diff = b.ew("subtract", _axis_slice(b, x, 0, min(1, n), n), _axis_slice(b, x, 0, 0, max(n - 1, 0)))
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
        return b.concatenate([_axis_slice(b, x, ax, 0, index), v,
                              _axis_slice(b, x, ax, index, n)], ax)
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
    return b.reshape(_axis_slice(b, tiled, 0, 0, total), np.shape(value))


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
