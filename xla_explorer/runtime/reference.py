"""The reference interpreter: runs any module with NumPy, one instruction at a time.

It is the `interpreter` backend, and the judge of every pass: a module before and after a
pass must give the same answers here. Each opcode's NumPy implementation is its op-table row;
this file only walks computations and evaluates reducers.
"""
from __future__ import annotations

import functools
import re
from typing import Callable, Sequence

import numpy as np

from ..errors import LinAlgError, XlaExplorerError
from ..ir.library import library_call, run_library_call, shape_changed
from ..ir.module import Computation, Instruction, Module
from ..ir.ops import (ASCENDING_COMPARATORS, comparator_signature, op, out_of_range, scan_axis,
                      scatter_indices)


class ShapeChanged(XlaExplorerError):
    """An eager op (a custom-call) gave a shape other than the one traced: the program must be
    traced again. `observed` maps every eager instruction run so far to the shape(s) it gave."""

    def __init__(self, inst: Instruction, observed: dict[str, tuple]):
        super().__init__(f"{inst.name} gave shape {observed[inst.name]}; it was traced as "
                         f"{declared_shape(inst)}")
        self.inst = inst
        self.observed = observed


def shape_of(value) -> tuple:
    """np.shape of a value (a tuple of them for a tuple)."""
    if isinstance(value, tuple):
        return tuple(np.shape(v) for v in value)
    return np.shape(value)


def declared_shape(inst: Instruction) -> tuple:
    """An instruction's traced shape as np.shape gives it (a tuple of them for a tuple)."""
    if inst.shape.is_tuple:
        return tuple(e.dims for e in inst.shape.elements)
    return inst.dims


# Reducers that are one element-wise op of their two parameters run as NumPy's ufunc.reduce.
_UFUNC_OF = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def _as_value(x, shape):
    return np.asarray(x, dtype=shape.dtype).reshape(shape.dims) if not shape.is_tuple else x


class _Frame:
    """What one running computation can ask of the interpreter."""

    def __init__(self, interp: "Interpreter", args: Sequence):
        self.interp = interp
        self.args = args

    def parameter(self, number: int):
        return self.args[number]

    def call(self, name: str, args):
        return self.interp.evaluate(self.interp.module.computation(name), args)

    def loop(self, condition: str, body: str, state):
        """A while loop: body's result is the next state while condition's is true."""
        cond, step = (self.interp.module.computation(n) for n in (condition, body))
        while bool(self.interp.evaluate(cond, [state])):
            state = self.interp.evaluate(step, [state])
        return state

    def custom_call(self, instr: Instruction, args):
        # What follows was traced for the shape seen at trace time (np.unique's length): on
        # another, it would compute something else, or fail further on.
        # The registry of eager ops is the tracer's (it writes what they name); imported only
        # when one runs, as the interpreter needs nothing else of the tracer.
        from ..trace.numpy.eager_calls import run_eager

        out = run_eager(instr, args)
        shape = shape_of(out)
        if shape != declared_shape(instr):
            raise ShapeChanged(instr, {instr.name: shape})
        return out

    def library_call(self, instr: Instruction, args):
        """NumPy's own function for a library call (np.linalg.solve), its LinAlgError at the
        user's line; a result whose shape depends on values (lstsq's residuals) must have
        the shape traced, or it is the ValueError the compiled call raises too."""
        call = library_call(instr)
        try:
            out = run_library_call(instr, args)
        except np.linalg.LinAlgError as e:
            md = instr.metadata
            raise LinAlgError(f"{call.function}: {e}", call.function, md.source_file or None,
                              md.source_line or None) from None
        if call.value_shaped and shape_of(out) != declared_shape(instr):
            raise ValueError(shape_changed(call.function, instr.metadata.source_line))
        return out

    def reduce(self, name, operands, inits, axes, shape):
        """Each output element is its input elements combined, starting from init once (as
        XLA's evaluator does; XLA asks init to be the reducer's identity anyway)."""
        comp = self.interp.module.computation(name)
        ufunc = _simple_reducer(comp) if len(operands) == 1 else None
        if ufunc is not None:
            x, init = operands[0], inits[0]
            if all(x.shape[a] > 0 for a in axes):
                with np.errstate(all="ignore"):
                    out = ufunc.reduce(x, axis=axes) if axes else x.copy()
                    out = ufunc(init, out)
            else:
                dims = [n for i, n in enumerate(x.shape) if i not in axes]
                out = np.broadcast_to(init, dims).copy()
            return np.asarray(out).astype(shape.dtype, copy=False)
        return self._tree_reduce(comp, operands, inits, axes, shape)

    def _tree_reduce(self, comp, operands, inits, axes, shape):
        """Any reducer: pair neighbours up, level by level (the reducer must be associative,
        as XLA requires; pairing neighbours keeps index tie-breaks in order). An odd element
        out waits for the next level, so init is combined exactly once, at the end."""
        rest = [a for a in range(operands[0].ndim) if a not in axes]
        k = int(np.prod([operands[0].shape[a] for a in axes], dtype=np.int64))
        outer = [operands[0].shape[a] for a in rest]
        xs = [np.transpose(x, rest + list(axes)).reshape(outer + [k]) for x in operands]
        shapes = shape.elements if shape.is_tuple else (shape,)
        if k == 0:
            outs = [np.broadcast_to(i, outer) for i in inits]
        else:
            while k > 1:
                half = k // 2
                pairs = [x[..., 0:2 * half:2] for x in xs] + [x[..., 1:2 * half:2] for x in xs]
                out = self.interp.evaluate(comp, pairs)
                merged = list(out) if isinstance(out, tuple) else [out]
                merged = [np.broadcast_to(m, outer + [half]) for m in merged]
                if k % 2:
                    merged = [np.concatenate([m, x[..., -1:]], axis=-1) for m, x in zip(merged, xs)]
                xs, k = merged, half + k % 2
            out = self.interp.evaluate(comp, [np.broadcast_to(i, outer) for i in inits] +
                                       [x[..., 0] for x in xs])
            outs = list(out) if isinstance(out, tuple) else [out]
        res = [np.asarray(o).astype(s.dtype).reshape(s.dims) for o, s in zip(outs, shapes)]
        return tuple(res) if shape.is_tuple else res[0]

    def reduce_window(self, instr: Instruction, args):
        n = len(args) // 2
        if n != 1:
            raise NotImplementedError("variadic reduce-window")
        x, init = args
        comp = self.interp.module.computation(instr.attr("to_apply"))
        axis = scan_axis(instr)
        ufunc = _simple_reducer(comp) if axis is not None else None
        if ufunc is not None:
            # A scan (np.cumsum): ufunc.accumulate is the same sequential pass, where the
            # general path below would hold every window, n * n elements, at once.
            with np.errstate(all="ignore"):
                out = ufunc(init, ufunc.accumulate(x, axis=axis, dtype=x.dtype))
            return np.asarray(out).astype(instr.dtype, copy=False)
        size, stride, pad = _parse_window(instr.attr("window"), x.ndim)
        padded = np.pad(x, pad, constant_values=init)
        windows = np.lib.stride_tricks.sliding_window_view(padded, size)
        windows = windows[tuple(slice(None, None, s) for s in stride)]
        axes = tuple(range(x.ndim, 2 * x.ndim))
        comp = self.interp.module.computation(instr.attr("to_apply"))
        return self.reduce(comp.name, [np.ascontiguousarray(windows)], [init], axes, instr.shape)

    def scatter(self, instr: Instruction, args):
        """XLA's scatter, one update element after another in row-major order (so duplicate
        indices combine in order, as np.add.at does). A one-op combiner runs as its ufunc's
        `at` (unbuffered, in the same order); one that returns its update (assignment) keeps
        the last write; any other combiner runs element by element."""
        x, idx, upd = args
        index, fits = scatter_indices(instr, x.shape, idx, upd.shape)
        index = [np.broadcast_to(i, upd.shape) for i in index]
        if not fits.all():
            where = tuple(int(v) for v in np.argwhere(np.broadcast_to(fits, upd.shape) == 0)[0])
            at = tuple(int(i[where]) for i in index)
            raise out_of_range(instr, f"the update at {where}: its window leaves the operand "
                                      "at", at, (0,) * x.ndim, tuple(n - 1 for n in x.shape))
        out = x.copy()
        if out.size == 0 or upd.size == 0:
            return out
        flat = np.ravel_multi_index(tuple(i.ravel() for i in index), x.shape)
        values = upd.ravel()
        comp = self.interp.module.computation(instr.attr("to_apply"))
        ufunc = _simple_reducer(comp)
        params = comp.parameters
        target = out.reshape(-1)
        if ufunc is not None:
            with np.errstate(all="ignore"):
                ufunc.at(target, flat, values)
        elif comp.root is next((p for p in params if p.parameter_number == 1), None):
            # Assignment: the last update to each index wins.
            last = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]
            target[flat[last]] = values[last]
        else:
            for f, v in zip(flat, values):
                target[f] = np.asarray(self.call(comp.name, [target[f], v]), dtype=x.dtype)
        return out

    # -- sort -------------------------------------------------------------------

    def sort(self, instr: Instruction, args):
        """Each operand permuted as the comparator orders operand rows along the sort's
        dimension, stably. The comparators np.sort's lowering emits run as NumPy's stable
        argsort (the same order: NaN last); any other as a comparison sort that calls it."""
        (axis,) = instr.attr("dimensions")
        comp = self.interp.module.computation(instr.attr("to_apply"))
        xs = [np.moveaxis(np.asarray(a), axis, -1) for a in args]
        kind_ = np.dtype(xs[0].dtype).kind
        if comparator_signature(comp) == ASCENDING_COMPARATORS.get(kind_):
            order = np.argsort(xs[0], axis=-1, kind="stable")
        else:
            order = self._general_order(comp, xs)
        outs = [np.moveaxis(np.take_along_axis(x, order, axis=-1), -1, axis) for x in xs]
        outs = [np.ascontiguousarray(o) for o in outs]
        return tuple(outs) if instr.shape.is_tuple else outs[0]

    def _general_order(self, comp, xs):
        lead = xs[0].shape[:-1]
        n = xs[0].shape[-1]
        rows = [x.reshape(-1, n) for x in xs]
        order = np.empty((int(np.prod(lead, dtype=np.int64)), n), dtype=np.int64)

        for r in range(order.shape[0]):
            def less(i, j, r=r):
                args = [v for x in rows for v in (x[r, i], x[r, j])]
                return bool(self.interp.evaluate(comp, [np.asarray(a) for a in args]))

            def cmp(i, j):
                return -1 if less(i, j) else (1 if less(j, i) else 0)
            order[r] = sorted(range(n), key=functools.cmp_to_key(cmp))  # stable, as is_stable
        return order.reshape(lead + (n,))


def _parse_window(text: str, ndim: int):
    """size, stride and (lo, hi) padding per dimension from `{size=2x2 stride=1x2 pad=0_1x0_0}`."""
    fields = dict(re.findall(r"(\w+)=([^\s{}]+)", str(text)))
    for key in ("lhs_dilate", "rhs_dilate"):
        if set(fields.get(key, "1").split("x")) != {"1"}:
            raise NotImplementedError(f"reduce-window with {key}={fields[key]}")
    size = [int(v) for v in fields["size"].split("x")]
    stride = [int(v) for v in fields.get("stride", "x".join("1" * ndim)).split("x")]
    pad = [tuple(int(p) for p in v.split("_")) for v in fields.get("pad", "x".join(["0_0"] * ndim)).split("x")]
    if not len(size) == len(stride) == len(pad) == ndim:
        raise ValueError(f"window {text} does not have {ndim} dimensions")
    return size, stride, pad


def _simple_reducer(comp: Computation):
    root = comp.root
    params = comp.parameters
    if len(params) == 2 and len(root.operands) == 2 and set(map(id, root.operands)) == set(map(id, params)):
        return _UFUNC_OF.get(root.opcode)
    return None


class Interpreter:
    """Runs a module's entry computation on NumPy arrays."""

    def __init__(self, module: Module):
        self.module = module

    def evaluate(self, comp: Computation, args: Sequence):
        frame = _Frame(self, args)
        env: dict[int, object] = {}
        for inst in comp.instructions:
            vals = [env[id(o)] for o in inst.operands]
            out = op(inst.opcode).impl(inst, vals, frame)
            env[id(inst)] = out
        return env[id(comp.root)]

    def run(self, args: Sequence) -> list:
        """The root tuple's elements for `args` (one per entry parameter)."""
        params = self.module.entry.parameters
        if len(args) != len(params):
            raise TypeError(f"{self.module.name} takes {len(params)} arguments, got {len(args)}")
        values = [_as_value(a, p.shape) for a, p in zip(args, params)]
        out = self.evaluate(self.module.entry, values)
        return list(out) if isinstance(out, tuple) else [out]


def instruction_evaluator(module: Module) -> Callable[[Instruction, list], object]:
    """A function running one instruction of `module`'s entry on the values of its operands
    (a list), its interpreter made once."""
    frame = _Frame(Interpreter(module), ())
    return lambda inst, operands: op(inst.opcode).impl(inst, operands, frame)


def run_module(module: Module, args: Sequence) -> list:
    return Interpreter(module).run(args)
