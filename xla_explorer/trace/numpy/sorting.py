"""Sorting: np.sort, np.argsort (and ndarray.sort, in place, and .argsort), lowered to XLA's
`sort` op, and np.partition and np.argpartition as the same sort; compositions of it:
np.median and np.nanmedian (np.quantile and np.percentile are in `quantiles`); and
np.searchsorted as a count of comparisons.

The order is NumPy's: ascending, NaN after everything else, and stable, so that -0.0 and 0.0
(equal) keep their input order and np.argsort's ties keep their index order. The comparator
says it in HLO: `lt(a, b) or (isnan(b) and not isnan(a))` (`a != a` is isnan).
"""
from __future__ import annotations

import numpy as np

from ...ir.module import Computation, Instruction
from ...ir.shape import TupleShape, hlo_type_name, scalar
from ..context import active_builder
from ..tracer import Tracer, node_of, value_of
from .dispatch import assign_inplace
from .registry import lowers
from .util import canonical_axes, unsupported


# -- the sort op -------------------------------------------------------------------------------


def _comparator(b, dtypes) -> str:
    """The computation ordering operand 0 ascending, NaN last (ASCENDING_COMPARATORS), with a
    parameter pair for every operand, as XLA's sort asks."""
    dtypes = [np.dtype(d) for d in dtypes]
    name = "compare_" + "_".join(hlo_type_name(d) for d in dtypes)
    if name in b.computations:
        return name
    insts: list[Instruction] = []

    def add(opcode, ops, shape, attrs=(), **kw):
        inst = Instruction(b.fresh(opcode), opcode, shape, tuple(ops), tuple(attrs), **kw)
        insts.append(inst)
        return inst

    params = [add("parameter", (), scalar(d), parameter_number=2 * k + side)
              for k, d in enumerate(dtypes) for side in (0, 1)]
    lhs, rhs = params[0], params[1]
    pred = scalar(np.bool_)
    less = add("compare", (lhs, rhs), pred, [("direction", "LT")])
    if dtypes[0].kind == "f":
        rhs_nan = add("compare", (rhs, rhs), pred, [("direction", "NE")])
        lhs_number = add("compare", (lhs, lhs), pred, [("direction", "EQ")])
        nan_after = add("and", (rhs_nan, lhs_number), pred)
        add("or", (less, nan_after), pred)
    b.computations[name] = Computation(name, tuple(insts))
    return name


def sort_nodes(b, operands, axis: int) -> list[Instruction]:
    """The operands (one shape) permuted together as operand 0 sorts along `axis`."""
    operands = list(operands)
    x = operands[0]
    if x.shape.size == 0 or x.dims[axis] <= 1:
        return operands  # already in order
    shape = x.shape if len(operands) == 1 else TupleShape(tuple(o.shape for o in operands))
    node = b.emit("sort", tuple(operands), shape=shape,
                  attrs=[("dimensions", (axis,)), ("is_stable", "true"),
                         ("to_apply", _comparator(b, [o.dtype for o in operands]))])
    if len(operands) == 1:
        return [node]
    return [b.emit("get-tuple-element", (node,), attrs=[("index", k)])
            for k in range(len(operands))]


def _axis(x: Instruction, axis, name: str) -> tuple[Instruction, int]:
    if axis is None:
        return active_builder().reshape(x, (x.shape.size,)), 0
    if x.shape.rank == 0:
        raise unsupported(name, " of a 0-d array along an axis")
    return x, int(axis) % x.shape.rank


def _check_order(name, order):
    if order is not None:
        raise unsupported(name, " with order= (structured arrays)")


@lowers(np.sort)
def _sort(value, a, axis=-1, kind=None, order=None, *, stable=None):
    _check_order("sort", order)
    b = active_builder()
    x, ax = _axis(node_of(a), axis, "sort")
    return sort_nodes(b, [x], ax)[0]


@lowers(np.argsort)
def _argsort(value, a, axis=-1, kind=None, order=None, *, stable=None):
    # Always stable: ties in index order (NumPy's default quicksort leaves their order open).
    _check_order("argsort", order)
    b = active_builder()
    x, ax = _axis(node_of(a), axis, "argsort")
    index = b.iota(np.int64, x.dims, ax)
    return sort_nodes(b, [x, index], ax)[1]


def _sort_in_place(self: Tracer, axis=-1, kind=None, order=None, *, stable=None):
    """ndarray.sort(): the sorted array written back into self, as `x += 1` is."""
    assign_inplace(self, np.sort(self, axis=axis, kind=kind, order=order), "ndarray.sort")


def _argsort_method(self: Tracer, axis=-1, kind=None, order=None, *, stable=None):
    return np.argsort(self, axis=axis, kind=kind, order=order)


Tracer.sort = _sort_in_place
Tracer.argsort = _argsort_method


# -- partition: a full sort ---------------------------------------------------------------


def _kth(name: str, kth) -> None:
    """np.partition's kth known while tracing (NumPy has checked its range)."""
    if isinstance(kth, Tracer) or np.asarray(kth).dtype.kind not in "iu":
        raise unsupported(name, " with kth computed in the traced function; kth must be an "
                                "int or a list of ints known when tracing")


@lowers(np.partition)
def _partition(value, a, kth, axis=-1, kind="introselect", order=None):
    # A sorted slice is one of the arrangements np.partition may return: the kth element in
    # its sorted place, none larger before it, none smaller after. Which of the others
    # NumPy's introselect returns is unspecified, and differs from the sort's.
    _check_order("partition", order)
    _kth("partition", kth)
    b = active_builder()
    x, ax = _axis(node_of(a), axis, "partition")
    return sort_nodes(b, [x], ax)[0]


@lowers(np.argpartition)
def _argpartition(value, a, kth, axis=-1, kind="introselect", order=None):
    _check_order("argpartition", order)
    _kth("argpartition", kth)
    b = active_builder()
    x, ax = _axis(node_of(a), axis, "argpartition")
    return sort_nodes(b, [x, b.iota(np.int64, x.dims, ax)], ax)[1]


def _partition_method(self: Tracer, kth, axis=-1, kind="introselect", order=None):
    """ndarray.partition(): the partitioned (here sorted) array written back into self."""
    assign_inplace(self, np.partition(self, kth, axis=axis, kind=kind, order=order),
                   "ndarray.partition")


def _argpartition_method(self: Tracer, kth, axis=-1, kind="introselect", order=None):
    return np.argpartition(self, kth, axis=axis, kind=kind, order=order)


Tracer.partition = _partition_method
Tracer.argpartition = _argpartition_method


# -- compositions: median, percentile, quantile --------------------------------------------------


def _rows(a, axis) -> tuple[Instruction, tuple[int, ...]]:
    """a with the reduced axes moved last and flattened into one: (rows, their lead dims)."""
    b = active_builder()
    x = node_of(a)
    axes = canonical_axes(axis, x.shape.rank)
    rest = [d for d in range(x.shape.rank) if d not in axes]
    lead = tuple(x.dims[d] for d in rest)
    x = b.transpose(x, rest + list(axes))
    n = int(np.prod([node_of(a).dims[d] for d in axes], dtype=np.int64))
    return b.reshape(x, lead + (n,)), lead


def _at(b, s: Instruction, k: int) -> Instruction:
    """s[..., k] (k < 0 counts from the end)."""
    n = s.dims[-1]
    k %= n
    lead = s.dims[:-1]
    spec = [(0, d, 1) for d in lead] + [(k, k + 1, 1)]
    return b.reshape(b.slice(s, spec), lead)


def _tracer(node: Instruction, value) -> Tracer:
    return Tracer(active_builder(), node, value)


def sorted_rows(a, axis):
    """The sorted rows as a Tracer (with its eager value), so that NumPy's own arithmetic on
    them (dtype rules included) can be traced."""
    b = active_builder()
    rows, lead = _rows(a, axis)
    s = sort_nodes(b, [rows], rows.shape.rank - 1)[0]
    eager = np.asarray(value_of(a))
    axes = canonical_axes(axis, eager.ndim)
    rest = [d for d in range(eager.ndim) if d not in axes]
    eager = np.sort(np.transpose(eager, rest + list(axes)).reshape(lead + (rows.dims[-1],)),
                    axis=-1)
    return _tracer(s, eager), lead


def column(s: Tracer, k: int) -> Tracer:
    node = _at(active_builder(), s.node, k)
    return _tracer(node, s.value[..., k % s.shape[-1]])


@lowers(np.median)
def _median(value, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    # NumPy: the mean of the middle one or two of the sorted slice, in the mean's type; NaN
    # where the slice holds a NaN (it sorts last).
    b = active_builder()
    dt = np.asarray(value).dtype
    s, lead = sorted_rows(a, axis)
    n = s.shape[-1]
    if n == 0:
        return b.full(np.nan, dt, np.shape(value))
    if n % 2:
        m = column(s, n // 2).astype(dt)
    else:
        m = (column(s, n // 2 - 1).astype(dt) + column(s, n // 2).astype(dt)) / 2
    if s.dtype.kind == "f":
        last = column(s, -1)
        m = np.where(np.isnan(last), last, m)
    return b.reshape(b.convert(node_of(m), dt), np.shape(value))


@lowers(np.nanmedian)
def _nanmedian(value, a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    # The median of each slice's numbers: NaN sorts last, so a slice with c numbers has its
    # middle at (c - 1) / 2, read with a one-hot sum over the row (c varies by row).
    b = active_builder()
    dt = np.asarray(value).dtype
    if np.asarray(value_of(a)).dtype.kind != "f":
        return node_of(np.median(a, axis=axis, keepdims=keepdims is True))
    s, lead = sorted_rows(a, axis)
    n = s.shape[-1]
    if n == 0:
        return b.full(np.nan, dt, np.shape(value))
    count = np.sum(~np.isnan(s), axis=-1)  # numbers per row (int64)
    pos = np.arange(n)
    lo_i, hi_i = (count - 1) // 2, count // 2
    zero = np.asarray(-0.0, s.dtype)  # the sum's identity: a middle -0.0 stays -0.0
    lo = np.sum(np.where(pos == np.expand_dims(lo_i, -1), s, zero), axis=-1)
    hi = np.sum(np.where(pos == np.expand_dims(hi_i, -1), s, zero), axis=-1)
    m = np.where(lo_i == hi_i, lo, (lo + hi) / 2).astype(dt)
    m = np.where(count == 0, np.asarray(np.nan, dt), m)
    return b.reshape(b.convert(node_of(m), dt), np.shape(value))


# -- searchsorted: a count of comparisons ------------------------------------------------------


@lowers(np.searchsorted)
def _searchsorted(value, a, v, side="left", sorter=None):
    """How many of a's elements go before each v: those less than it (side='left') or not
    greater (side='right'), in NumPy's order (NaN last). n comparisons per element of v: for
    the short sorted arrays of a histogram or a lookup table, one pass with no branches."""
    if sorter is not None:
        raise unsupported("searchsorted", " with sorter=")
    b = active_builder()
    av = np.asarray(value_of(a))
    if av.ndim != 1:
        raise unsupported("searchsorted", " of a sorted array that is not 1-D")
    dt = np.result_type(av, value_of(v))
    x = node_of(a, dt)
    y = node_of(v, dt)
    n = x.dims[0]
    dims = y.dims + (n,)
    xs = b.broadcast(x, dims, (len(y.dims),))
    ys = b.broadcast(y, dims, tuple(range(len(y.dims))))
    if str(side).lower().startswith("r"):
        before = b.ew("not", _less(b, ys, xs))  # a[i] <= v: not v < a[i]
    else:
        before = _less(b, xs, ys)  # a[i] < v
    count = b.reduce(b.convert(before, np.int64), (len(dims) - 1,), "add")
    return b.reshape(count, np.shape(value))


def _less(b, p: Instruction, q: Instruction) -> Instruction:
    """p < q in NumPy's sort order: NaN after every number."""
    less = b.compare(p, q, "LT")
    if np.dtype(p.dtype).kind != "f":
        return less
    nan_after = b.ew("and", b.compare(q, q, "NE"), b.compare(p, p, "EQ"))
    return b.ew("or", less, nan_after)
