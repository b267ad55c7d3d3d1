"""Emits HLO instructions while tracing: one Builder per trace.

The helpers here speak HLO, not NumPy: operands already have the shapes and types the
instruction needs (HLO has no implicit broadcasting or promotion). The lowerings in
`trace/numpy/` turn NumPy semantics into calls of these helpers.
"""
from __future__ import annotations

import itertools
from typing import Iterable, Sequence

import numpy as np

from ..ir.library import library_call
from ..ir.module import Computation, Instruction, Metadata, Module
from ..ir.ops import SHAPE_KEEPING, infer_shape
from ..ir.shape import Shape, TupleShape, hlo_type_name, scalar
from .scalars import ScalarProgram

# Reductions the tracer emits, by the element-wise op of their reducer, with each one's
# identity (the init value XLA wants) as a function of the element type.
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)

REDUCERS = {
    "add": lambda dt: 0,
    "multiply": lambda dt: 1,
    "maximum": lambda dt: -np.inf if dt.kind == "f" else (False if dt.kind == "b" else np.iinfo(dt).min),
    "minimum": lambda dt: np.inf if dt.kind == "f" else (True if dt.kind == "b" else np.iinfo(dt).max),
    "and": lambda dt: True if dt.kind == "b" else -1,
    "or": lambda dt: 0,
}


def _uniform(array: np.ndarray) -> bool:
    """Every element has the same bits (so NaN arrays are uniform, and 0.0 and -0.0 differ)."""
    bits = np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}").ravel()
    return bool((bits == bits[0]).all())


def _value_shaped(inst: Instruction) -> bool:
    """A custom-call whose shape depends on its operands' values, or an element of one (a
    tracer holds the element, never the tuple): an eager op's, or a library call's that
    says so (lstsq's residuals)."""
    if inst.opcode == "get-tuple-element" and inst.operands[0].opcode == "custom-call":
        inst = inst.operands[0]
    if inst.opcode != "custom-call":
        return False
    call = library_call(inst)
    if call is not None:
        return call.value_shaped
    return inst.attr("custom_call_target") not in SHAPE_KEEPING


class Builder:
    """Collects the instructions and computations of one traced function."""

    def __init__(self, name: str, autocluster: bool = False):
        self.name = name
        # Under auto-clustering, NumPy functions the op table lacks are recorded as opaque
        # custom-calls that run eagerly (must-compile refuses them instead).
        self.autocluster = autocluster
        self.instructions: list[Instruction] = []
        self.computations: dict[str, Computation] = {}
        self._ids = itertools.count(1)
        self._constants: dict[tuple, Instruction] = {}
        self.site = Metadata()
        # What the trace read of Python scalar arguments, replayed on every call.
        self.scalars = ScalarProgram()
        # Value-dependent results (np.unique's, a boolean mask's) whose shape the trace read
        # as a Python value, in the order first read; see `read_shape`.
        self.shape_reads: dict[Instruction, None] = {}
        self._shape_sources: dict[Instruction, tuple[Instruction, ...]] = {}

    # -- naming and emission ----------------------------------------------------------------

    def fresh(self, base: str) -> str:
        return f"{base}.{next(self._ids)}"

    def emit(self, opcode: str, operands: Sequence[Instruction] = (), *, shape=None,
             attrs: Iterable[tuple] = (), name: str | None = None, literal=None,
             parameter_number: int | None = None, record: bool = True) -> Instruction:
        attrs = tuple(attrs)
        if shape is None:
            shape = infer_shape(opcode, [o.shape for o in operands], dict(attrs))
        inst = Instruction(name or self.fresh(opcode), opcode, shape, tuple(operands), attrs,
                           self.site, parameter_number, literal)
        if record:
            self.instructions.append(inst)
        return inst

    def parameter(self, number: int, shape: Shape, name: str) -> Instruction:
        return self.emit("parameter", shape=shape, name=self.fresh(name), parameter_number=number)

    # -- shapes read as Python values -------------------------------------------------------

    def read_shape(self, node: Instruction) -> None:
        """The trace read node's shape as a Python value (len, .shape, .size). Where that
        shape comes from a value-dependent result, the program is right only for the shape
        seen now: the result is recorded so that the trace keeps it as an output, and every
        run computes it and checks its shape, even when nothing else uses it."""
        for source in self.shape_sources(node):
            self.shape_reads.setdefault(source, None)

    def shape_sources(self, node: Instruction) -> tuple[Instruction, ...]:
        """The value-dependent results node's shape may come from: custom-calls (or elements
        of one) upstream of it whose shape depends on values. A scalar's shape is () whatever
        its operands' are, so the walk stops there; np.sort's shape is its operand's."""
        memo = self._shape_sources
        stack = [node]
        while stack:  # a post-order walk, memoised: a long trace reads shapes many times
            inst = stack[-1]
            if inst in memo:
                stack.pop()
                continue
            if _value_shaped(inst):
                memo[inst] = (inst,)
            elif inst.opcode in ("parameter", "constant") or (not inst.shape.is_tuple
                                                              and inst.shape.rank == 0):
                memo[inst] = ()
            else:
                todo = [o for o in inst.operands if o not in memo]
                if todo:
                    stack.extend(todo)
                    continue
                memo[inst] = tuple(dict.fromkeys(s for o in inst.operands for s in memo[o]))
            stack.pop()
        return memo[node]

    # -- leaves -----------------------------------------------------------------------------

    def constant(self, value, dtype) -> Instruction:
        """A scalar constant of `dtype` (one instruction per distinct value)."""
        dtype = np.dtype(dtype)
        lit = np.asarray(value).astype(dtype)
        assert lit.ndim == 0, "constant() makes scalars; use literal() for arrays"
        key = (dtype.str, lit.tobytes(), self.site)
        if key not in self._constants:
            self._constants[key] = self.emit("constant", shape=scalar(dtype), literal=lit)
        return self._constants[key]

    def literal(self, array: np.ndarray) -> Instruction:
        """An array constant; a uniform array is a broadcast scalar, never a big literal."""
        array = np.asarray(array)
        if array.size >= 1 and array.ndim and _uniform(array):
            return self.full(array.flat[0], array.dtype, array.shape)
        if array.ndim == 0:
            return self.constant(array, array.dtype)
        return self.emit("constant", shape=Shape(array.dtype, array.shape),
                         literal=np.ascontiguousarray(array).copy())

    def full(self, value, dtype, dims) -> Instruction:
        c = self.constant(value, dtype)
        return self.broadcast(c, dims, ()) if tuple(dims) else c

    def iota(self, dtype, dims, axis: int) -> Instruction:
        return self.emit("iota", shape=Shape(dtype, dims), attrs=[("iota_dimension", axis)])

    # -- element-wise -----------------------------------------------------------------------

    def ew(self, opcode: str, *xs: Instruction) -> Instruction:
        if any(x.dtype == _F16 for x in xs):
            # float16 arithmetic is computed in float32 and rounded once, as NumPy's float16
            # loops compute (and as XLA's CPU backend upcasts): convert in, op, convert out.
            out = self.emit(opcode, tuple(self.convert(x, _F32) for x in xs))
            return self.convert(out, _F16) if out.dtype == _F32 else out
        return self.emit(opcode, xs)

    def compare(self, a: Instruction, b: Instruction, direction: str) -> Instruction:
        return self.emit("compare", (a, b), attrs=[("direction", direction)])

    def select(self, pred: Instruction, on_true: Instruction, on_false: Instruction) -> Instruction:
        return self.emit("select", (pred, on_true, on_false))

    def convert(self, x: Instruction, dtype) -> Instruction:
        dtype = np.dtype(dtype)
        if x.dtype == dtype:
            return x
        return self.emit("convert", (x,), shape=x.shape.with_dtype(dtype))

    def scalar_like(self, value, x: Instruction) -> Instruction:
        """`value` as an array of x's shape and type."""
        return self.full(value, x.dtype, x.dims)

    # -- data movement ----------------------------------------------------------------------

    def broadcast(self, x: Instruction, dims, mapping) -> Instruction:
        """HLO broadcast: operand dimension i becomes output dimension mapping[i]."""
        dims, mapping = tuple(dims), tuple(mapping)
        if dims == x.dims and mapping == tuple(range(len(dims))):
            return x
        return self.emit("broadcast", (x,), shape=x.shape.with_dims(dims),
                         attrs=[("dimensions", mapping)])

    def broadcast_to(self, x: Instruction, dims) -> Instruction:
        """NumPy broadcasting: align trailing dimensions, stretch those of size 1."""
        dims = tuple(dims)
        if x.dims == dims:
            return x
        offset = len(dims) - x.shape.rank
        keep = [i for i, n in enumerate(x.dims) if not (n == 1 and dims[i + offset] != 1)]
        if len(keep) != x.shape.rank:
            x = self.reshape(x, [x.dims[i] for i in keep])
        return self.broadcast(x, dims, [i + offset for i in keep])

    def reshape(self, x: Instruction, dims) -> Instruction:
        dims = tuple(int(d) for d in dims)
        if x.dims == dims:
            return x
        return self.emit("reshape", (x,), shape=x.shape.with_dims(dims))

    def transpose(self, x: Instruction, perm) -> Instruction:
        perm = tuple(int(p) for p in perm)
        if perm == tuple(range(len(perm))):
            return x
        return self.emit("transpose", (x,), attrs=[("dimensions", perm)])

    def slice(self, x: Instruction, spec) -> Instruction:
        spec = tuple((int(a), int(b), int(c)) for a, b, c in spec)
        if all(a == 0 and b == n and c == 1 for (a, b, c), n in zip(spec, x.dims)):
            return x
        return self.emit("slice", (x,), attrs=[("slice", spec)])

    def reverse(self, x: Instruction, axes) -> Instruction:
        axes = tuple(a for a in axes if x.dims[a] > 1)
        if not axes:
            return x
        return self.emit("reverse", (x,), attrs=[("dimensions", tuple(sorted(axes)))])

    def concatenate(self, xs: Sequence[Instruction], axis: int) -> Instruction:
        if len(xs) == 1:
            return xs[0]
        return self.emit("concatenate", tuple(xs), attrs=[("dimensions", (axis,))])

    def dynamic_update_slice(self, x: Instruction, update: Instruction, starts) -> Instruction:
        idx = [self.constant(s, np.int64) for s in starts]
        return self.emit("dynamic-update-slice", (x, update, *idx))

    def pad(self, x: Instruction, value: Instruction, config) -> Instruction:
        return self.emit("pad", (x, value), attrs=[("padding", tuple(map(tuple, config)))])

    # -- reductions and dot -----------------------------------------------------------------

    def reducer(self, opcode: str, dtype) -> str:
        """The computation `opcode(lhs, rhs)` over scalars of `dtype`, made once per module."""
        dtype = np.dtype(dtype)
        name = f"{opcode}_{hlo_type_name(dtype)}"
        if name not in self.computations:
            s = scalar(dtype)
            lhs = Instruction(self.fresh("lhs"), "parameter", s, parameter_number=0)
            rhs = Instruction(self.fresh("rhs"), "parameter", s, parameter_number=1)
            root = Instruction(self.fresh(opcode), opcode, s, (lhs, rhs))
            self.computations[name] = Computation(name, (lhs, rhs, root))
        return name

    def reduce(self, x: Instruction, axes, opcode: str) -> Instruction:
        """Reduce `axes` of x with the element-wise `opcode`, from its identity."""
        if x.dtype == _F16:  # accumulated in float32, rounded once (NumPy's float16 sum too)
            return self.convert(self.reduce(self.convert(x, _F32), axes, opcode), _F16)
        axes = tuple(sorted(int(a) for a in axes))
        init = self.constant(REDUCERS[opcode](x.dtype), x.dtype)
        return self.emit("reduce", (x, init),
                         attrs=[("dimensions", axes), ("to_apply", self.reducer(opcode, x.dtype))])

    def arg_reducer(self, which: str, dtype) -> str:
        """The (value, index) comparator of argmax/argmin: NaN wins, then the extreme, then
        the lower index, exactly NumPy's rule (the first occurrence)."""
        dtype = np.dtype(dtype)
        name = f"{which}_{hlo_type_name(dtype)}"
        if name in self.computations:
            return name
        s, si = scalar(dtype), scalar(np.int64)
        insts: list[Instruction] = []

        def add(opcode, ops, shape, attrs=(), **kw):
            inst = Instruction(self.fresh(opcode), opcode, shape, tuple(ops), tuple(attrs), **kw)
            insts.append(inst)
            return inst

        pred = scalar(np.bool_)
        av = add("parameter", (), s, parameter_number=0)
        ai = add("parameter", (), si, parameter_number=1)
        bv = add("parameter", (), s, parameter_number=2)
        bi = add("parameter", (), si, parameter_number=3)
        better = add("compare", (av, bv), pred, [("direction", "GT" if which == "argmax" else "LT")])
        equal = add("compare", (av, bv), pred, [("direction", "EQ")])
        lower = add("compare", (ai, bi), pred, [("direction", "LT")])
        tie = add("and", (equal, lower), pred)
        take_a = add("or", (better, tie), pred)
        if dtype.kind == "f":
            a_nan = add("compare", (av, av), pred, [("direction", "NE")])
            b_nan = add("compare", (bv, bv), pred, [("direction", "NE")])
            b_ok = add("not", (b_nan,), pred)
            a_ok = add("not", (a_nan,), pred)
            both_nan = add("and", (a_nan, b_nan), pred)
            nan_tie = add("and", (both_nan, lower), pred)
            only_a_nan = add("and", (a_nan, b_ok), pred)
            both_ok = add("and", (a_ok, b_ok), pred)
            plain = add("and", (both_ok, take_a), pred)
            first = add("or", (only_a_nan, nan_tie), pred)
            take_a = add("or", (first, plain), pred)
        val = add("select", (take_a, av, bv), s)
        idx = add("select", (take_a, ai, bi), si)
        add("tuple", (val, idx), TupleShape((s, si)))
        self.computations[name] = Computation(name, tuple(insts))
        return name

    def arg_reduce(self, x: Instruction, axis: int, which: str) -> Instruction:
        x = self.convert(x, _F32) if x.dtype == _F16 else x  # exact: every float16 is a float32
        index = self.iota(np.int64, x.dims, axis)
        # Start from the value every element beats or ties (ties go to the element's index).
        extreme = REDUCERS["maximum" if which == "argmax" else "minimum"](x.dtype)
        init_v = self.constant(extreme, x.dtype)
        init_i = self.constant(0, np.int64)
        out_dims = tuple(n for i, n in enumerate(x.dims) if i != axis)
        shape = TupleShape((Shape(x.dtype, out_dims), Shape(np.int64, out_dims)))
        red = self.emit("reduce", (x, index, init_v, init_i), shape=shape,
                        attrs=[("dimensions", (axis,)), ("to_apply", self.arg_reducer(which, x.dtype))])
        return self.emit("get-tuple-element", (red,), attrs=[("index", 1)])

    def dot(self, a: Instruction, b: Instruction, lhs_batch=(), lhs_contract=(), rhs_batch=(),
            rhs_contract=()) -> Instruction:
        if a.dtype == _F16:  # NumPy's float16 products accumulate in float32 too
            out = self.dot(self.convert(a, _F32), self.convert(b, _F32), lhs_batch, lhs_contract,
                           rhs_batch, rhs_contract)
            return self.convert(out, _F16)
        attrs = []
        if lhs_batch:
            attrs.append(("lhs_batch_dims", tuple(lhs_batch)))
        attrs.append(("lhs_contracting_dims", tuple(lhs_contract)))
        if rhs_batch:
            attrs.append(("rhs_batch_dims", tuple(rhs_batch)))
        attrs.append(("rhs_contracting_dims", tuple(rhs_contract)))
        return self.emit("dot", (a, b), attrs=attrs)

    # -- the module -------------------------------------------------------------------------

    def module(self, name: str, outputs: Sequence[Instruction], aliases=()) -> Module:
        """Everything traced, in the order it was traced, parameters first. Values nothing
        uses stay in: removing them is DCE's job, and the viewer shows it doing so."""
        root = self.emit("tuple", tuple(outputs), record=False, name=self.fresh("tuple"))
        params = sorted((i for i in self.instructions if i.opcode == "parameter"),
                        key=lambda p: p.parameter_number)
        body = params + [i for i in self.instructions if i.opcode != "parameter"] + [root]
        comps = tuple(self.computations.values())
        return Module(name, Computation(name, tuple(body)), comps, tuple(aliases))
