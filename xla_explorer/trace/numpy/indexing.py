"""Indexing: x[index] and x[index] = v. A basic index (ints, slices, None, ...) is a reverse,
a slice and a reshape, and its result a view that writes back into the base; a boolean mask
reads through a custom call and writes as a select. Also the write-back of the views that
functions make (np.reshape, np.transpose, np.flip). And the functions that write into an
argument as a select: np.copyto, np.putmask, np.place (one value) and np.fill_diagonal.
"""
from __future__ import annotations

import numpy as np

from ...errors import TraceError, UnsupportedOpError
from ...ir.module import Computation, Instruction
from ...ir.shape import hlo_type_name, scalar
from ..context import active_builder, at_user_site, located
from ..tracer import Tracer, assigned_node, node_of, value_of
from .opaque import custom_call
from .registry import lowers, lowers_ufunc_at, static
from .util import eager, unsupported, wrap


# -- index plans -------------------------------------------------------------------------------


def _expand_index(index, ndim):
    """Normalise a basic index into a list with Ellipsis expanded."""
    if not isinstance(index, tuple):
        index = (index,)
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(i)
    if not any(i is Ellipsis for i in index):  # `in` would compare index arrays with ==
        out.extend([slice(None)] * (ndim - n_real))
    return out


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, slice) or (
        isinstance(i, (int, np.integer)) and not isinstance(i, bool)) for i in items)


def _index_plan(index, dims):
    """(slice spec, reversed axes, result dims) for a basic index over `dims`."""
    spec, flips, out_dims = [], [], []
    axis = 0
    for item in _expand_index(index, len(dims)):
        if item is None:
            out_dims.append(1)
            continue
        n = dims[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            count = len(range(start, stop, step))
            if step < 0:
                flips.append(axis)
                start, step = n - 1 - start, -step
            spec.append((start, start + (count - 1) * step + 1 if count else start, step))
            out_dims.append(count)
        else:
            i = int(item)
            if not -n <= i < n:
                raise located(TraceError, f"index {i} is out of bounds for axis {axis} with "
                                          f"size {n}", "indexing")
            i %= n
            spec.append((i, i + 1, 1))
        axis += 1
    return spec, flips, tuple(out_dims)


def lower_index(node: Instruction, index) -> Instruction:
    b = active_builder()
    spec, flips, out_dims = _index_plan(index, node.dims)
    x = b.reverse(node, flips)
    x = b.slice(x, spec)
    return b.reshape(x, out_dims)


def lower_index_update(node: Instruction, index, update: Instruction) -> Instruction:
    """node with node[index] = update (update already of the indexed shape and type)."""
    b = active_builder()
    spec, flips, out_dims = _index_plan(index, node.dims)
    inner = tuple(hi - lo and -(-(hi - lo) // st) for lo, hi, st in spec)
    upd = b.reshape(update, inner)
    if any(n == 0 for n in inner):
        return node
    if all(st == 1 for _, _, st in spec):
        x = b.reverse(node, flips)
        # upd is in x[index]'s order, which is the reversed array's order already.
        x = b.dynamic_update_slice(x, upd, [lo for lo, _, _ in spec])
        return b.reverse(x, flips)
    # A strided window: spread the update out with interior padding, select it in by a mask.
    x = b.reverse(node, flips)
    zero = b.constant(0, x.dtype)
    cfg = [(lo, n - (lo + (k - 1) * st + 1), st - 1) for (lo, _, st), k, n in zip(spec, inner, x.dims)]
    spread = b.pad(upd, zero, cfg)
    mask = b.pad(b.full(True, np.bool_, inner), b.constant(False, np.bool_), cfg)
    return b.reverse(b.select(mask, spread, x), flips)


# -- what an index may hold --------------------------------------------------------------------


def _static_index(index):
    """A Python int argument in an index is read as a Python value (guarded, so each value
    compiles its own program): `v[i]`, `v[i:i + 2]`, `v[:, i]`."""
    def one(i):
        if isinstance(i, Tracer) and i._weak and not isinstance(i.value, float):
            return i.__index__()
        if isinstance(i, slice):
            return slice(one(i.start), one(i.stop), one(i.step))
        return i
    return tuple(one(i) for i in index) if isinstance(index, tuple) else one(index)


def _describe_index(index) -> str:
    """An index as the user wrote it, with traced arrays by type and shape, not repr."""
    def one(i):
        if isinstance(i, Tracer):
            return f"a traced {i.dtype}{list(i.shape)} array"
        if isinstance(i, np.ndarray):
            return f"a {i.dtype}{list(i.shape)} array"
        if isinstance(i, slice):
            return ":".join("" if p is None else str(p) for p in (i.start, i.stop, i.step)
                            ).rstrip(":") or ":"
        return "..." if i is Ellipsis else repr(i)
    items = index if isinstance(index, tuple) else (index,)
    return "[" + ", ".join(one(i) for i in items) + "]"


_INDEX_HINT = ("Index with slices, Python ints, None and ..., or with a boolean mask; "
               "pick elements by value with np.where.")


def _unsupported_index(index, what: str = "indexing"):
    items = index if isinstance(index, tuple) else (index,)
    arrays = [i for i in items if isinstance(i, (Tracer, np.ndarray, list))]
    if arrays and all(np.ndim(value_of(i)) == 0 for i in arrays):
        message = (f"{what} x{_describe_index(index)} uses a traced integer as an index, whose "
                   "value is only known when the compiled program runs")
        hint = ("Pass the index as a Python int argument (it is then a static value: each "
                "value compiles its own program), or select with np.where.")
    elif arrays:
        message = (f"{what} x{_describe_index(index)} is integer-array (fancy) indexing, "
                   "which is not supported")
        hint = _INDEX_HINT
    else:
        message, hint = f"{what} x{_describe_index(index)} is not supported", _INDEX_HINT
    return located(UnsupportedOpError, message, what, hint)


# -- x[index] and x[index] = v -----------------------------------------------------------------


def getitem(x: Tracer, index):
    """x[index]: a view of x for a basic index, a custom call for a boolean mask."""
    b = active_builder()
    with at_user_site(b, "indexing"):
        index = _static_index(index)
        if isinstance(index, Tracer) or (isinstance(index, np.ndarray)):
            if np.asarray(value_of(index)).dtype == np.bool_:
                value = eager(lambda v, m: v[m], "boolean-mask indexing", x.value, value_of(index))
                node = custom_call("numpy.boolean_mask", (x, index), value)
                return wrap(node, value, "boolean-mask indexing")
        if _has_index_arrays(index):  # integer-array indexing: a gather
            value = eager(lambda v: v[value_of(index)], "indexing", x.value)
            node = gather_axes(x.node, _array_axes(index, x.ndim, "indexing"))
            return wrap(node, value, "indexing")
        if not _is_basic(index):
            raise _unsupported_index(index)
        value = eager(lambda v: v[index], "indexing", x.value)
        node = lower_index(x.node, index)
        if isinstance(value, np.ndarray):
            return Tracer(b, node, value, base=x, derive=lambda n: lower_index(n, index),
                          write_back=lambda base, new: lower_index_update(base, index, new))
        return wrap(node, value, "indexing")


def setitem(x: Tracer, index, v):
    """x[index] = v, written into x (and through x into its base, if x is a view)."""
    b = active_builder()
    with at_user_site(b, "assignment"):
        index = _static_index(index)
        if not isinstance(x.value, np.ndarray):  # a NumPy scalar, e.g. from x.sum()
            raise located(TraceError, f"'{type(x.value).__name__}' object does not support "
                                      "item assignment (NumPy scalars are immutable)",
                          "assignment")
        if (isinstance(index, (Tracer, np.ndarray))
                and np.asarray(value_of(index)).dtype == np.bool_):
            # x[mask] = scalar is np.where(mask, scalar, x): compilable.
            if np.ndim(value_of(v)) != 0:
                raise located(UnsupportedOpError, "assigning an array through a boolean mask is "
                                                  "not supported", "assignment",
                              "Use x = np.where(mask, values, x) with values of x's shape.")
            new_value = x.value.copy()
            eager(new_value.__setitem__, "assignment", value_of(index), value_of(v))
            # A mask covers x's leading dimensions: x[rows] = 0 sets whole rows.
            m = node_of(index)
            m = b.reshape(m, m.dims + (1,) * (x.ndim - m.shape.rank))
            mask = b.broadcast_to(m, x.shape)
            fill = b.broadcast_to(assigned_node(v, x.dtype), x.shape)
            x._set_node(b.select(mask, fill, x.node), "assignment")
            x.value[...] = new_value
            return
        if _has_index_arrays(index):  # through integer arrays: a scatter
            trial = x.value.copy()
            eager(trial.__setitem__, "assignment", value_of(index), value_of(v))
            items = _array_axes(index, x.ndim, "assignment")
            x._set_node(scatter_axes(x.node, items, v, None, "assignment"), "assignment")
            x.value[value_of(index)] = value_of(v)
            return
        if not _is_basic(index):
            raise _unsupported_index(index, "assignment")
        _, _, out_dims = _index_plan(index, x.shape)
        trial = x.value.copy() if isinstance(x.value, np.ndarray) else np.asarray(x.value)
        eager(trial.__setitem__, "assignment", index, value_of(v))
        update = b.broadcast_to(assigned_node(v, x.dtype), out_dims)
        x._set_node(lower_index_update(x.node, index, update), "assignment")
        x.value[index] = value_of(v)


# -- views: writing through them ---------------------------------------------------------------


def view_write_back(view: Instruction, base: Instruction):
    """base_node, new value of the view -> new value of the base; None where NumPy's view is
    read-only (np.broadcast_to) or not one op."""
    if view is base:
        return lambda base_node, new: new
    if len(view.operands) != 1 or view.operands[0] is not base:
        return None
    if view.opcode == "reshape":
        return lambda base_node, new: active_builder().reshape(new, base_node.dims)
    if view.opcode == "transpose":
        inverse = tuple(int(i) for i in np.argsort(view.attr("dimensions")))
        return lambda base_node, new: active_builder().transpose(new, inverse)
    if view.opcode == "reverse":
        axes = tuple(view.attr("dimensions"))
        return lambda base_node, new: active_builder().reverse(new, axes)
    return None


# -- integer-array indexing: gather and scatter -------------------------------------
# x[idx], x[:, idx], x[i_arr, j_arr] (broadcasting), with ints and slices beside the arrays,
# read as one XLA gather; x[idx] = v, x[idx] += v and np.add.at & co. write as one scatter.
# NumPy's negative indices wrap before the gather or scatter (`select(i < 0, i + n, i)`, as
# JAX does). An index out of range is NumPy's IndexError at trace time for constant indices;
# for traced ones, compiled code clamps (gather) or skips (scatter) as XLA does, and the
# reference interpreter raises IndexError at the user's line.


def _is_index_array(i) -> bool:
    """An integer-array index item: a traced array (not a Python scalar argument), a NumPy
    array or a list; bool arrays are masks, handled apart."""
    if isinstance(i, Tracer):
        return not i._weak
    return isinstance(i, (np.ndarray, list))


def _has_index_arrays(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(_is_index_array(i) for i in items)


def _is_bool_array(i) -> bool:
    return _is_index_array(i) and np.asarray(value_of(i)).dtype == np.bool_


def _refuse(index, what: str, why: str, hint: str):
    return located(UnsupportedOpError, f"{what} x{_describe_index(index)}: {why}", what, hint)


def _array_axes(index, ndim: int, what: str):
    """The index as one item per axis of x: a slice, or an index array (an int beside
    arrays counts as a 0-d array, as in NumPy)."""
    items = index if isinstance(index, tuple) else (index,)
    if any(i is None for i in items):
        raise _refuse(index, what, "None (np.newaxis) beside index arrays is not supported",
                      "Split it in steps: index with the arrays first, then add the axis "
                      "with np.expand_dims(y, axis) (y = x[idx]; np.expand_dims(y, -1)).")
    if any(_is_bool_array(i) for i in items):
        raise _refuse(index, what, "a boolean mask beside other index items is not supported",
                      "Index with the mask alone (x[mask]), or select with np.where.")
    out = []
    for item in _expand_index(index, ndim):
        if isinstance(item, slice):
            out.append(item)
        elif isinstance(item, (int, np.integer)) or _is_index_array(item):
            out.append(("array", item))
        else:
            raise _refuse(index, what, f"the index item {item!r} is not supported",
                          "Index with integer arrays, ints and slices.")
    return out


def _wrapped_indices(item, n: int, axis: int) -> Instruction:
    """An index array as int64 with NumPy's negative indices wrapped: at trace time for a
    constant, by `select(i < 0, i + n, i)` for a traced one."""
    b = active_builder()
    if isinstance(item, Instruction):  # made by a lowering, already in range (np.take's modes)
        return b.convert(item, np.int64)
    if not isinstance(item, Tracer):
        arr = np.asarray(item)
        if arr.dtype.kind not in "iu":
            raise located(UnsupportedOpError, f"an index array of {arr.dtype} on axis {axis} "
                                              "is not an integer array", "indexing",
                          "Index with integer arrays (x[idx.astype(np.int64)]).")
        return node_of(np.where(arr < 0, arr + n, arr).astype(np.int64))
    if item.dtype.kind not in "iu":
        raise located(UnsupportedOpError, f"a traced {item.dtype} array indexes axis {axis}; "
                                          "only integer arrays are indices", "indexing",
                      "Convert it: x[idx.astype(np.int64)].")
    i = b.convert(node_of(item), np.int64)
    negative = b.compare(i, b.full(0, np.int64, i.dims), "LT")
    return b.select(negative, b.ew("add", i, b.full(n, np.int64, i.dims)), i)


def _item_shape(item) -> tuple:
    return item.dims if isinstance(item, Instruction) else np.shape(value_of(item))


def _stack_indices(nodes, batch) -> tuple[Instruction, int]:
    """Index arrays broadcast to `batch` and stacked along a last dimension, XLA's index
    vector; one array stays as it is, with index_vector_dim its rank (an implicit 1)."""
    b = active_builder()
    nodes = [b.broadcast_to(n, batch) for n in nodes]
    if len(nodes) == 1:
        return nodes[0], len(batch)
    cols = [b.reshape(n, tuple(batch) + (1,)) for n in nodes]
    return b.concatenate(cols, len(batch)), len(batch)


def _array_plan(node: Instruction, axes_items, what: str):
    """For x (node) indexed by `axes_items` with at least one array: the sliced x, the axes
    the arrays index, their stacked indices and index_vector_dim, the broadcast shape of the
    arrays, and the offset dimensions of the result (NumPy's placement: where the first array
    is when the arrays are adjacent, else first)."""
    basic = tuple(i if isinstance(i, slice) else slice(None) for i in axes_items)
    y = lower_index(node, basic)
    axes = [d for d, i in enumerate(axes_items) if not isinstance(i, slice)]
    shapes = [_item_shape(axes_items[d][1]) for d in axes]
    batch = tuple(np.broadcast_shapes(*shapes))
    nodes = [_wrapped_indices(axes_items[d][1], y.dims[d], d) for d in axes]
    indices, ivd = _stack_indices(nodes, batch)
    rest = [d for d in range(y.shape.rank) if d not in axes]
    adjacent = axes == list(range(axes[0], axes[-1] + 1))
    if adjacent:
        before = [d for d in rest if d < axes[0]]
        offset = list(range(len(before))) + list(
            range(len(before) + len(batch), len(batch) + len(rest)))
    else:
        offset = list(range(len(batch), len(batch) + len(rest)))
    return y, axes, indices, ivd, batch, offset


def gather_axes(node: Instruction, axes_items, what: str = "indexing") -> Instruction:
    """node indexed by one item per axis (slices and index arrays), as NumPy's advanced
    indexing gives it: one gather."""
    b = active_builder()
    y, axes, indices, ivd, batch, offset = _array_plan(node, axes_items, what)
    sizes = tuple(1 if d in axes else n for d, n in enumerate(y.dims))
    if any(y.dims[d] == 0 for d in axes):  # only empty index arrays index an empty axis
        dims = [n for d, n in enumerate(y.dims) if d not in axes]
        out = list(batch)
        for k, d in enumerate(offset):
            out.insert(d, dims[k])
        return b.full(0, y.dtype, out) if 0 in out else b.reshape(y, out)
    return b.emit("gather", (y, indices), attrs=[
        ("offset_dims", tuple(offset)), ("collapsed_slice_dims", tuple(axes)),
        ("start_index_map", tuple(axes)), ("index_vector_dim", ivd), ("slice_sizes", sizes)])


def assign_combiner(dtype) -> str:
    """The scatter combiner that keeps the update (assignment): with updates applied in
    order, the last write to an index wins, as NumPy's x[idx] = v gives."""
    b = active_builder()
    dtype = np.dtype(dtype)
    name = f"assign_{hlo_type_name(dtype)}"
    if name not in b.computations:
        s = scalar(dtype)
        old = Instruction(b.fresh("old"), "parameter", s, parameter_number=0)
        new = Instruction(b.fresh("new"), "parameter", s, parameter_number=1)
        b.computations[name] = Computation(name, (old, new))
    return name


def scatter_axes(node: Instruction, axes_items, update, combiner: str | None,
                 what: str) -> Instruction:
    """node with node[index] combined with `update` (any value broadcastable to the indexed
    shape): one scatter, its updates in order. combiner None is assignment."""
    b = active_builder()
    if any(isinstance(i, slice) and i != slice(None) for i in axes_items):
        # A partial slice beside the arrays: scatter into the sliced part, write it back.
        basic = tuple(i if isinstance(i, slice) else slice(None) for i in axes_items)
        part = lower_index(node, basic)
        inner = [slice(None) if isinstance(i, slice) else i for i in axes_items]
        return lower_index_update(node, basic, scatter_axes(part, inner, update, combiner, what))
    y, axes, indices, ivd, batch, offset = _array_plan(node, axes_items, what)
    rest = [n for d, n in enumerate(y.dims) if d not in axes]
    dims = list(batch)
    for k, d in enumerate(offset):
        dims.insert(d, rest[k])
    upd = b.broadcast_to(assigned_node(update, node.dtype), tuple(dims))
    if any(y.dims[d] == 0 for d in axes) or 0 in dims:
        return node
    to_apply = assign_combiner(node.dtype) if combiner is None else b.reducer(combiner, node.dtype)
    return b.emit("scatter", (node, indices, upd), attrs=[
        ("update_window_dims", tuple(offset)), ("inserted_window_dims", tuple(axes)),
        ("scatter_dims_to_operand_dims", tuple(axes)), ("index_vector_dim", ivd),
        ("to_apply", to_apply)])


# -- np.take, np.take_along_axis, np.put_along_axis, ufunc.at -----------------------


def _take_indices(indices, n: int, mode: str):
    """np.take's indices under `mode`: 'raise' as indexing takes them (negatives wrap);
    'wrap' modulo n; 'clip' clamped into [0, n - 1] (a negative one to 0, as NumPy does)."""
    b = active_builder()
    if mode == "raise":
        return indices
    if not isinstance(indices, Tracer):
        arr = np.asarray(indices).astype(np.int64)
        return np.mod(arr, n) if mode == "wrap" else np.clip(arr, 0, n - 1)
    i = b.convert(node_of(indices), np.int64)
    if mode == "wrap":  # HLO's remainder takes the dividend's sign; NumPy's mod the divisor's
        r = b.ew("remainder", i, b.full(n, np.int64, i.dims))
        negative = b.compare(r, b.full(0, np.int64, i.dims), "LT")
        return b.select(negative, b.ew("add", r, b.full(n, np.int64, i.dims)), r)
    return b.emit("clamp", (b.constant(0, np.int64), i, b.constant(n - 1, np.int64)))


@lowers(np.take)
def _take(value, a, indices, axis=None, out=None, mode="raise"):
    b = active_builder()
    if out is not None:
        raise unsupported("take", " with out=")
    if mode not in ("raise", "wrap", "clip"):
        raise unsupported("take", f" with mode={mode!r}")
    x = node_of(a)
    if axis is None:
        x, axis = b.reshape(x, (x.shape.size,)), 0
    axis = int(axis) % max(x.shape.rank, 1)
    items = [slice(None)] * x.shape.rank
    items[axis] = ("array", _take_indices(indices, x.dims[axis], mode))
    return gather_axes(x, items, "np.take")


def _along_axis_items(x: Instruction, indices, axis: int):
    """NumPy's take_along_axis index: the indices on `axis`, a ramp on every other axis."""
    b = active_builder()
    items = []
    for d, n in enumerate(x.dims):
        if d == axis:
            items.append(("array", indices))
        else:
            ramp = [1] * x.shape.rank
            ramp[d] = n
            items.append(("array", b.iota(np.int64, ramp, d)))
    return items


@lowers(np.take_along_axis)
def _take_along_axis(value, arr, indices, axis=-1):
    b = active_builder()
    x = node_of(arr)
    if axis is None:
        x, axis = b.reshape(x, (x.shape.size,)), 0
    axis = int(axis) % x.shape.rank
    return gather_axes(x, _along_axis_items(x, indices, axis), "np.take_along_axis")


def _in_place_target(arr, name: str) -> Tracer:
    if not isinstance(arr, Tracer) or not isinstance(arr.value, np.ndarray):
        raise located(TraceError, f"{name} writes into its first argument, which must be a "
                                  "traced array (an input or an array made in the function)",
                      name, "Copy the array into the function first: x = np.array(x).")
    return arr


@static(np.put_along_axis)
def _put_along_axis(arr, indices, values, axis):
    """In place, so answered here rather than as a lowering of a new value: the scatter
    becomes arr's instruction, and NumPy's own call updates arr's eager value."""
    b = active_builder()
    name = "np.put_along_axis"
    with at_user_site(b, name):
        target = _in_place_target(arr, name)
        trial = target.value.copy()
        eager(np.put_along_axis, name, trial, value_of(indices), value_of(values), axis)
        x = target.node
        if axis is None:
            raise unsupported("put_along_axis", " with axis=None")
        ax = int(axis) % x.shape.rank
        node = scatter_axes(x, _along_axis_items(x, indices, ax), values, None, name)
        target._set_node(node, name)
        target.value[...] = trial
    return None


# ufunc.at: unbuffered, so repeated indices combine, each in turn, as the scatter's combiner.
_AT_COMBINERS = {"add": "add", "subtract": "subtract", "multiply": "multiply",
                 "maximum": "maximum", "minimum": "minimum"}


@lowers_ufunc_at(np.add, np.subtract, np.multiply, np.maximum, np.minimum)
def ufunc_at(ufunc, a, indices, b=None):
    name = f"np.{ufunc.__name__}.at"
    builder = active_builder()
    with at_user_site(builder, name):
        target = _in_place_target(a, name)
        if b is None:
            raise unsupported(f"{ufunc.__name__}.at", " without its values (b)")
        index = _static_index(indices)
        trial = target.value.copy()
        eager(ufunc.at, name, trial, value_of(index), value_of(b))
        if not _has_index_arrays(index):  # no index repeats: x[index] = ufunc(x[index], b)
            setitem(target, index, ufunc(getitem(target, index), b))
            return None
        items = _array_axes(index, target.ndim, name)
        node = scatter_axes(target.node, items, b, _AT_COMBINERS[ufunc.__name__], name)
        target._set_node(node, name)
        target.value[...] = trial
    return None
# -- writes into an argument: np.copyto, np.putmask, np.place, np.fill_diagonal -------
# Each lowering gives the first argument's new contents; dispatch writes them into it.


@lowers(np.copyto, in_place=True)
def _copyto(value, dst, src, casting="same_kind", where=True):
    # src broadcast to dst and converted to its type (NumPy has checked `casting`), taken
    # where `where` holds.
    b = active_builder()
    new = b.broadcast_to(node_of(src, dst.dtype), dst.shape)
    if where is True:
        return new
    mask = b.broadcast_to(node_of(where, np.bool_), dst.shape)
    return b.select(mask, new, node_of(dst))


@lowers(np.putmask, in_place=True)
def _putmask(value, a, mask, values):
    # a.flat[i] = values.flat[i % values.size] where mask.flat[i]: values repeated over a's
    # positions (np.resize), not over the masked ones.
    b = active_builder()
    if np.size(value_of(values)) == 0:
        return node_of(a)  # NumPy changes nothing (a all-False mask needs no values either)
    vals = np.resize(values, a.shape) if np.ndim(value_of(values)) else values
    new = b.broadcast_to(node_of(vals, a.dtype), a.shape)
    return b.select(b.broadcast_to(node_of(mask, np.bool_), a.shape), new, node_of(a))


@lowers(np.place, in_place=True)
def _place(value, arr, mask, vals):
    # The k-th masked position takes vals[k % len(vals)]: a running count of the mask, which
    # only a scan or gather gives; one value is a select.
    if np.size(value_of(vals)) != 1:
        raise unsupported("place", " with more than one value (the k-th masked element takes "
                                   "vals[k]: that needs a running count of the mask)")
    b = active_builder()
    new = b.broadcast_to(b.reshape(node_of(vals, arr.dtype), ()), arr.shape)
    return b.select(b.broadcast_to(node_of(mask, np.bool_), arr.shape), new, node_of(arr))


@lowers(np.fill_diagonal, in_place=True)
def _fill_diagonal(value, a, val, wrap=False):
    # NumPy writes a.flat[:end:step] = val (val repeated as needed): the flat positions that
    # are multiples of step below end, found by an iota compare, take val's elements placed
    # there by an interior pad.
    b = active_builder()
    x = node_of(a)
    size = x.shape.size
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = size if wrap else min(size, a.shape[1] * a.shape[1])
    else:
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
        end = size
    count = len(range(0, end, step))
    flat = b.reshape(x, (size,))
    if count == 0:
        return x
    vals = node_of(np.resize(val, count) if np.ndim(value_of(val)) else val, x.dtype)
    vals = b.broadcast_to(b.reshape(vals, (vals.shape.size,)), (count,))
    zero = b.full(0, x.dtype, ())
    spread = b.pad(vals, zero, [(0, size - ((count - 1) * step + 1), step - 1)])
    k = b.iota(np.int64, (size,), 0)
    on = b.ew("and", b.compare(b.ew("remainder", k, b.full(step, np.int64, (size,))),
                               b.full(0, np.int64, (size,)), "EQ"),
              b.compare(k, b.full(end, np.int64, (size,)), "LT"))
    return b.reshape(b.select(on, spread, flat), x.dims)
