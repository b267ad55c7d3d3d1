"""Indexing: x[index] and x[index] = v. A basic index (ints, slices, None, ...) is a reverse,
a slice and a reshape, and its result a view that writes back into the base; a boolean mask
reads through a custom call and writes as a select. Also the write-back of the views that
functions make (np.reshape, np.transpose, np.flip). And the functions that write into an
argument as a select: np.copyto, np.putmask, np.place (one value) and np.fill_diagonal.
"""
from __future__ import annotations

import numpy as np

from ...errors import TraceError, UnsupportedOpError
from ...ir.module import Instruction
from ..tracer import (Tracer, active_builder, assigned_node, at_user_site, located, node_of,
                      value_of)
from .opaque import custom_call
from .registry import lowers
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
    if Ellipsis not in index:
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
            raise _unsupported_index(index)
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


# -- writes into an argument (issue 24): np.copyto, np.putmask, np.place, np.fill_diagonal -------
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
