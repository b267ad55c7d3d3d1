"""`xe.fori_loop`: a loop traced once, as an HLO `while`, as `jax.lax.fori_loop` makes one.

A Python loop unrolls while tracing: 200 steps are 200 copies of the step, traced, optimised
and drawn 200 times. `fori_loop(lower, upper, body, init)` traces `body(i, value)` once, into a
computation of its own, and the program runs it `upper - lower` times:

    state = (i, value..., what body reads from outside)
    while state.i < upper:                 # the condition computation
        state = (i + 1, body(i, value)..., the same outside values)   # the body computation

What the body reads from outside it (an array of the enclosing function, say) becomes part of
the loop's state, passed through unchanged, as JAX passes a loop's closed-over values: HLO
computations read only their parameters. Not tracing, `fori_loop` is the Python loop.
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from ..errors import as_python_class
from ..ir.library import runs_eagerly
from ..ir.module import Computation, Instruction, trip_count_config
from ..ir.shape import Shape, TupleShape
from ..tree import flatten, unflatten
from .context import active_builder, located, not_tracing
from .tracer import Tracer, node_of, value_of

__all__ = ["fori_loop"]

COUNTER = np.dtype(np.int64)  # i, as NumPy's range gives it (a Python int, int64 in arrays)


def fori_loop(lower: int, upper: int, body: Callable, init_val):
    """`body(i, value)` for i in range(lower, upper), each time on the last value, starting from
    `init_val` (an array, a number, or a tuple, list or dict of them); the last value. Traced
    once, as an HLO while loop whose body is compiled once, however many steps it runs."""
    lower, upper = _bound(lower, "lower"), _bound(upper, "upper")
    b = active_builder()
    if b is None:
        value = init_val
        for i in range(lower, upper):
            value = body(i, value)
        return value
    leaves, treedef = flatten(init_val)
    init_nodes = [node_of(leaf) for leaf in leaves]
    cond_name, body_name, externals, final = _trace_body(b, body, lower, upper, treedef,
                                                         leaves, init_nodes)
    start = b.constant(lower, COUNTER)
    state = b.emit("tuple", (start, *init_nodes, *externals))
    # The trip count, as XLA's WhileLoopTripCountAnnotator writes it: what the CPU backend
    # compiles the loop for (codegen/cpu/while_loop.py).
    count = trip_count_config(max(0, upper - lower))
    loop = b.emit("while", (state,), shape=state.shape,
                  attrs=[("condition", cond_name), ("body", body_name),
                         ("backend_config", count)])
    results = [Tracer(b, b.emit("get-tuple-element", (loop,), attrs=[("index", 1 + k)]), v)
               for k, v in enumerate(final)]
    return unflatten(treedef, results)


def _refused(message: str, hint: str | None = None):
    """A TypeError (and xe.TraceError) naming fori_loop and the user's line."""
    return located(as_python_class(TypeError), message, "fori_loop", hint)


def _bound(n, what: str) -> int:
    if isinstance(n, Tracer):
        raise _refused(f"fori_loop's {what} bound is a traced value: the number of steps must "
                       "be known when tracing", "Pass a Python int (a shape, or a number the "
                       "function is given as a constant).")
    try:
        return int(n)
    except TypeError:
        raise _refused(f"fori_loop's {what} bound must be an int, not "
                       f"{type(n).__name__}") from None


def _trace_body(b, body: Callable, lower: int, upper: int, treedef, leaves, init_nodes):
    """Trace body once into a computation of its own; (condition name, body name, the outside
    values it reads, which the loop's state carries, and the loop's last value in NumPy).

    Tracing computes NumPy's values beside the instructions (what the program is checked
    against): the later steps are traced again for their values alone, into instructions
    that are dropped, so a closed-over array is read as the step itself reads it."""
    shapes = [n.shape for n in init_nodes]
    outer, constants = b.instructions, b._constants
    b.instructions, b._constants = [], {}
    hoisted: list[Instruction] = []  # array literals the body read, made before the loop
    try:
        param = b.emit("parameter", shape=TupleShape((Shape(COUNTER, ()), *shapes)),
                       name=b.fresh("state"), parameter_number=0)
        i = b.emit("get-tuple-element", (param,), attrs=[("index", 0)])
        carried = [b.emit("get-tuple-element", (param,), attrs=[("index", 1 + k)])
                   for k in range(len(shapes))]
        start = [_eager(value_of(leaf)) for leaf in leaves]
        out = body(Tracer(b, i, np.int64(lower)),
                   unflatten(treedef, [Tracer(b, n, v) for n, v in zip(carried, start)]))
        out_leaves, out_def = flatten(out)
        if out_def != treedef:
            raise _refused("fori_loop's body returned a value of another structure than the "
                           "loop's value", "Return the same containers (tuple, list, dict) "
                           "with the same number of arrays as init_val.")
        nodes = [node_of(leaf) for leaf in out_leaves]
        for k, (node, want) in enumerate(zip(nodes, shapes)):
            if str(node.shape) != str(want):
                raise _refused(f"fori_loop's body changes element {k} of the loop's value from "
                               f"{want} to {node.shape}", "A loop's value keeps its shape and "
                               "type from step to step: convert (x.astype) or start from an "
                               "array of the final type.")
        one = b.constant(1, COUNTER)
        step = b.emit("add", (i, one))
        instructions = b.instructions
        final = [_eager(value_of(leaf)) for leaf in out_leaves] if upper > lower else start
        if any(runs_eagerly(n) for n in instructions):
            raise _refused("fori_loop's body calls a NumPy function that runs eagerly (its "
                           "result's shape depends on values)", "Keep such calls outside the "
                           "loop.")
        root = Instruction(b.fresh("tuple"), "tuple", param.shape, (step, *nodes),
                           metadata=b.site)
        body_comp, externals, hoisted = _closed(b, param, instructions + [root])
        state_shape = body_comp.parameters[0].shape
        # The condition: state.i < upper.
        b.instructions = []
        cparam = b.emit("parameter", shape=state_shape, name=b.fresh("state"),
                        parameter_number=0)
        ci = b.emit("get-tuple-element", (cparam,), attrs=[("index", 0)])
        bound = b.emit("constant", shape=Shape(COUNTER, ()), literal=np.asarray(upper, COUNTER))
        b.emit("compare", (ci, bound), attrs=[("direction", "LT")])
        cond_comp = Computation(b.fresh("condition"), tuple(b.instructions))
        # The later steps, for their values: by NumPy alone where the body reads nothing
        # from the enclosing trace, else traced again, their instructions and names dropped.
        plain = None if externals else _plain_steps(body, lower + 1, upper, treedef, final,
                                                    shapes)
        if plain is not None:
            final = plain
        else:
            next_id = next(b._ids)
            for k in range(lower + 1, upper):
                b.instructions, b._constants = [], {}
                out = body(Tracer(b, i, np.int64(k)),
                           unflatten(treedef, [Tracer(b, n, v) for n, v in zip(carried, final)]))
                final = [_eager(value_of(leaf)) for leaf in flatten(out)[0]]
            b._ids = itertools.count(next_id)
    finally:
        b.instructions, b._constants = outer, constants
    outer.extend(hoisted)
    body_name = b.fresh("body")
    b.computations[cond_comp.name] = cond_comp
    b.computations[body_name] = Computation(body_name, body_comp.instructions)
    return cond_comp.name, body_name, externals, final


def _plain_steps(body: Callable, start: int, upper: int, treedef, values: list,
                 shapes: list) -> list | None:
    """The loop's value after steps start..upper-1, each `body` called on NumPy's arrays with
    no trace active: what tracing the steps computes beside their instructions, for a body
    whose first step read nothing from the enclosing trace (a 200-step stencil: 44 ms traced,
    a few ms so). None where a step fails or gives another type or shape than its trace (the
    steps are then traced)."""
    with not_tracing():
        try:
            for k in range(start, upper):
                out = flatten(body(np.int64(k), unflatten(treedef, values)))[0]
                values = [_eager(v) for v in out]
                if any(np.shape(v) != shape.dims or np.asarray(v).dtype != shape.dtype
                       for v, shape in zip(values, shapes)) or len(values) != len(shapes):
                    return None
        except Exception:  # noqa: BLE001  (tracing them says what went wrong, if anything)
            return None
    return values


def _eager(value):
    """A value as a Tracer carries it: an array, or a NumPy scalar."""
    return value if isinstance(value, np.generic) else np.asarray(value)


def _closed(b, param: Instruction, instructions: list[Instruction]):
    """The body as a computation of its parameter alone: each value from outside it becomes
    one more element of the state, read by a get-tuple-element and handed on unchanged.
    Returns (the computation, the outside values in state order, the array literals to make
    before the loop).

    An array literal (a NumPy array the body closes over) is made outside the loop and
    carried in its state, as JAX hoists a loop's constants: the body reads only its state."""
    hoisted = [i for i in instructions if i.opcode == "constant" and i.shape.rank > 0]
    moved = {id(h) for h in hoisted}
    instructions = [i for i in instructions if id(i) not in moved]
    inside = {id(i) for i in instructions}
    externals: dict[int, Instruction] = {}
    for inst in instructions:
        for o in inst.operands:
            if id(o) not in inside:
                externals.setdefault(id(o), o)
    if not externals:
        return Computation("body", tuple(instructions)), [], hoisted
    outside = list(externals.values())
    n = len(param.shape.elements)
    shape = TupleShape((*param.shape.elements, *(e.shape for e in outside)))
    new_param = param.replace(shape=shape)
    reads = [Instruction(b.fresh("get-tuple-element"), "get-tuple-element", e.shape,
                         (new_param,), (("index", n + k),), e.metadata)
             for k, e in enumerate(outside)]
    swap = {id(param): new_param, **{id(e): r for e, r in zip(outside, reads)}}
    out: list[Instruction] = [new_param, *reads]
    for inst in instructions[1:]:
        new = inst.replace(operands=tuple(swap.get(id(o), o) for o in inst.operands))
        if inst is instructions[-1]:  # the root tuple: the outside values go round unchanged
            new = new.replace(shape=shape, operands=new.operands + tuple(reads))
        swap[id(inst)] = new
        out.append(new)
    return Computation("body", tuple(out)), outside, hoisted
