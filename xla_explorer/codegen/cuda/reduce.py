"""CUDA reductions: each thread's partial, the block's tree that combines the partials, and
the column shape, where reductions run over leading or middle dimensions: one thread per kept
element, looping over the reduced ones; neighbouring threads read neighbouring columns, so
the loads of a warp coalesce."""
from __future__ import annotations

from math import prod

import numpy as np

from .. import exprs
from ..analysis import phases, reads_at_kept
from ..reducers import simple_op, wide_accumulator
from ..writer import np_type
from .loop import WARP, Layout, launch_for_loop

# Reducers whose identity a thread can start from when the init is something else.
IDENTITY = {"add": 0, "multiply": 1, "or": 0, "xor": 0}


def reducer_parts(core, inst):
    """(operands, inits, reducer) of a reduce."""
    n = len(inst.operands) // 2
    operands, inits = inst.operands[:n], inst.operands[n:]
    reducer = core.module.computation(inst.attr("to_apply"))
    return operands, inits, reducer


def identity_start(layout: Layout, inst, inits, reducer) -> tuple[list[str], list[str] | None]:
    """Each thread's starting accumulators, and the init to combine once at the end when
    it is not the reducer's identity (np.sum(x, initial=5)): every thread starts from
    the init, which HLO's contract says is the identity, so one that is not is applied
    once, by itself."""
    core, w = layout.core, layout.w
    wide = wide_accumulator(reducer, np.dtype(inits[0].dtype), len(inits))
    starts = [core.value(i, ()) for i in inits]
    late = None
    root = reducer.root
    if len(inits) == 1 and simple_op(reducer) and root.opcode in IDENTITY:
        init = inits[0]
        if init.opcode != "constant" or init.literal.reshape(-1)[0] != IDENTITY[root.opcode]:
            late = starts
            starts = [exprs.literal(IDENTITY[root.opcode], init.dtype)]
    accs = []
    for s, init in zip(starts, inits):
        acc = w.fresh("acc")
        t = wide if len(inits) == 1 else np.dtype(init.dtype)
        w.line(f"{acc} = {np_type(t)}({s})")
        accs.append(acc)
    return accs, late


def step(layout: Layout, inst, reducer, accs, vals) -> None:
    """The reducer's step on this thread's values, converted to the accumulator's type."""
    wide = wide_accumulator(reducer, np.dtype(inst.operands[0].dtype), len(accs))
    if wide != np.dtype(inst.operands[0].dtype):
        vals = [f"{np_type(wide)}({v})" for v in vals]
    new = layout.core.combine(reducer, accs, vals, dtype=wide)
    for acc, v in zip(accs, new):
        layout.w.line(f"{acc} = {v}")


def step_plain(layout: Layout, inst, reducer, accs, vals) -> None:
    """The reducer's step on values already of the accumulator's type (other partials)."""
    types = acc_types(inst, reducer)
    new = layout.core.combine(reducer, accs, vals, dtype=types[0])
    for acc, v in zip(accs, new):
        layout.w.line(f"{acc} = {v}")


def fold_partials(layout: Layout, inst, reducer, accs, arrays, count, name: str) -> None:
    """Each accumulator (which starts as element 0 of its array) combined with elements 1 to
    count - 1 of it, in order: the partials a block's warps or a grid's blocks left there."""
    w = layout.w
    k = w.fresh(name)
    w.line(f"for {k} in range(1, {count}):")
    w.open()
    step_plain(layout, inst, reducer, accs, [f"{a}[{k}]" for a in arrays])
    w.close(1)


def acc_types(inst, reducer):
    n = len(inst.operands) // 2
    wide = wide_accumulator(reducer, np.dtype(inst.operands[0].dtype), n)
    return [wide] if n == 1 else [np.dtype(i.dtype) for i in inst.operands[n:]]


def block_reduce(layout: Layout, inst, reducer, accs, types) -> None:
    """Combine the block's per-thread accumulators: within each warp by shuffles, then
    the warps' results through shared memory, which every thread combines in warp order,
    so that each ends with the same value. The block's threads are whole warps."""
    w = layout.w
    warps = 1 if layout.warp_rows else layout.threads // WARP
    for off in (16, 8, 4, 2, 1):
        others = []
        for acc in accs:
            o = w.fresh("other")
            w.line(f"{o} = shfl_down({acc}, {off})")
            others.append(o)
        # lanes whose partner is past the warp's end keep their own value (the shuffle
        # returns their own); only lane 0's result is used
        step_plain(layout, inst, reducer, accs, others)
    if warps == 1:
        w.line("# one warp: lane 0 holds its value; every lane takes it")
        for acc in accs:
            w.line(f"{acc} = shfl_idx({acc}, 0)")
        return
    slots = [layout.shared("warp_values", warps, t) for t in types]
    w.line("if lane == 0:")
    for s, acc in zip(slots, accs):
        w.line(f"    {s}[warp] = {acc}")
    w.line("cuda.syncthreads()")
    for s, acc in zip(slots, accs):
        w.line(f"{acc} = {s}[0]")
    fold_partials(layout, inst, reducer, accs, slots, warps, "w")
    w.line("cuda.syncthreads()  # every thread has read the slots before they are "
           "reused")


def finish(layout: Layout, inst, reducer, accs, late) -> list[str]:
    """The reduce's value(s) in its own type, with a non-identity init applied once."""
    w = layout.w
    if late is not None:
        step_plain(layout, inst, reducer, accs,
                   [f"{np_type(acc_types(inst, reducer)[0])}({late[0]})"])
    shapes = inst.shape.elements if inst.shape.is_tuple else (inst.shape,)
    out = []
    for acc, s in zip(accs, shapes):
        var = w.fresh(f"{inst.name}_value")
        w.line(f"{var} = {np_type(s.dtype)}({acc})")
        out.append(var)
    return out


def reduce_at(layout: Layout, inst, kidx) -> list[str]:
    """The reduce's value(s) at kept index `kidx`, accumulated by this thread alone."""
    core, w = layout.core, layout.w
    operands, inits, reducer = reducer_parts(core, inst)
    x_dims = operands[0].dims
    axes = sorted(inst.attr("dimensions"))
    kept = [d for d in range(len(x_dims)) if d not in axes]
    red_dims = tuple(x_dims[d] for d in axes)
    accs, late = identity_start(layout, inst, inits, reducer)
    r = w.fresh("r")
    w.line(f"for {r} in range({prod(red_dims)}):")
    w.open()
    ridx = layout.unravel(r, red_dims)
    full = [""] * len(x_dims)
    for d, i in zip(kept, kidx):
        full[d] = i
    for d, i in zip(axes, ridx):
        full[d] = i
    step(layout, inst, reducer, accs, [core.value(o, tuple(full)) for o in operands])
    w.close(1)
    return finish(layout, inst, reducer, accs, late)


# -- columns: one thread per kept element ------------------------------------------------------


def column_plan(core, reduces):
    """(operand dims, reduced axes) when every reduce reduces the same axes of the same
    shape and everything computed from them reads them at the thread's own element
    (an element-wise chain of the kept shape, ending in outputs of that shape): a value
    of another thread is not in this thread's registers. None otherwise."""
    shapes = {(r.operands[0].dims, tuple(sorted(r.attr("dimensions")))) for r in reduces}
    if len(shapes) != 1:
        return None
    ((x_dims, axes),) = shapes
    kept_dims = tuple(n for d, n in enumerate(x_dims) if d not in axes)
    if not reads_at_kept(core.comp, core.outputs, reduces, kept_dims):
        return None
    return x_dims, axes


def emit_columns(layout: Layout) -> None:
    """Every reduce of the kernel keeps the same dimensions K of the same operand shape;
    one thread per element of K accumulates over the reduced ones, and writes the
    outputs at that element (those shaped K, read from the reduces' registers)."""
    core, w = layout.core, layout.w
    reduces = phases(core.comp)
    x_dims, axes = column_plan(core, reduces)
    kept_dims = tuple(n for d, n in enumerate(x_dims) if d not in axes)
    n = prod(kept_dims)
    layout.blocks, layout.threads, _ = launch_for_loop(n)
    layout.reason = (f"one thread per result element ({n}), each looping over the "
                     f"{prod(x_dims) // max(n, 1)} it reduces; neighbouring threads read "
                     "neighbouring elements, so a warp's loads coalesce")
    layout.grid_stride()
    flat = layout.strided(n, "start", "step")
    kidx = layout.unravel(flat, kept_dims)
    for inst in reduces:
        w.comment(inst)
        core.hold(inst, reduce_at(layout, inst, kidx))
    for o in core.outputs:
        w.comment(o)
        core.store(core.out_names[id(o)], kidx, core.value(o, kidx))
    w.close(1)
