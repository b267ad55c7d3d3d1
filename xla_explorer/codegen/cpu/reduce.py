"""The CPU's reduce shape, as a phase of the general kernel: the reduce's result filled in
loops of its own before anything reads it; and the accumulator helpers the row shape shares.

With the reduced dimensions trailing, each kept element accumulates in a register (one row in
parallel partial sums when there is only one, a full reduction); otherwise the operand is
swept in memory order, accumulating into the result array.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..analysis import refuse_float16
from ..reducers import parallel_reducer, reassociable_step, is_sum, wide_accumulator
from ..writer import index_text, np_type
from .loop import Loops


def parallel_sums(reducer, accs, operands) -> list[tuple[str, np.dtype]]:
    """The accumulators a parallel loop sums into, [(name, dtype)]: the one of a sum
    (`parallel_reducer`), or none, and the reduce runs on one thread."""
    n = len(operands)
    if not parallel_reducer(reducer, n):
        return []
    return [(accs[0], wide_accumulator(reducer, np.dtype(operands[0].dtype), n))]


def init_accs(loops: Loops, inits, reducer) -> list[str]:
    """One accumulator per init, in the type it accumulates in."""
    core, w = loops.core, loops.w
    accs = []
    for init in inits:
        acc = w.fresh("acc")
        dtype = np.dtype(init.dtype)
        wide = wide_accumulator(reducer, dtype, len(inits))
        v = core.value(init, ())
        w.line(f"{acc} = {np_type(wide)}({v})" if wide != dtype else f"{acc} = {v}")
        accs.append(acc)
    return accs


def accumulate(loops: Loops, reducer, accs, operands, idx) -> None:
    """The reducer's step on the operands' values at `idx`."""
    core, w = loops.core, loops.w
    vals = [core.value(o, idx) for o in operands]
    n = len(operands)
    dtype = np.dtype(operands[0].dtype)
    wide = wide_accumulator(reducer, dtype, n)
    if wide != dtype:
        vals = [f"{np_type(wide)}({v})" for v in vals]
    step = reassociable_step(reducer, n, wide)
    if step is not None:
        w.line(f"{accs[0]} = {step}({accs[0]}, {vals[0]})")
        return
    new = core.combine(reducer, accs, vals, dtype=wide)
    if is_sum(reducer, n):
        w.line(f"{accs[0]} += {vals[0]}")
        return
    for acc, v in zip(accs, new):
        w.line(f"{acc} = {v}")


def emit_reduce(loops: Loops, inst) -> None:
    """Fill the reduce's result array(s): accumulate in registers when the reduced
    dimensions are the trailing ones, else into the array in row-major order."""
    core, w = loops.core, loops.w
    refuse_float16(inst)
    w.comment(inst)
    n = len(inst.operands) // 2
    operands, inits = inst.operands[:n], inst.operands[n:]
    x_dims = operands[0].dims
    axes = sorted(inst.attr("dimensions"))
    kept = [d for d in range(len(x_dims)) if d not in axes]
    reducer = core.module.computation(inst.attr("to_apply"))
    suffix = axes == list(range(len(kept), len(x_dims)))
    if inst.shape.is_tuple:
        # With the reduced dimensions trailing, an element nothing reads stays in its
        # register (argmax's value); a sweep in memory order keeps every one in an array.
        stores = [core.element_storage(inst, k, needed=not suffix) for k in range(n)]
    else:
        stores = [core.storage(inst)]
        core.stored[id(inst)] = stores[0]
    kept_dims = [x_dims[d] for d in kept]
    red_dims = [x_dims[d] for d in axes]
    if suffix:
        big = prod(kept_dims) >= 2 and prod(x_dims) >= loops.parallel_from
        outer = loops.loop_nest(kept_dims, parallel=big)
        accs = init_accs(loops, inits, reducer)
        one_row = not kept_dims and prod(x_dims) >= loops.parallel_from
        sums = parallel_sums(reducer, accs, operands) if one_row else ()
        inner = loops.loop_nest(red_dims, parallel=bool(sums), sums=sums)
        accumulate(loops, reducer, [loops.partial[a] for a in accs] if sums else accs,
                   operands, outer + inner)
        loops.close(len(red_dims))
        for s, acc, o in zip(stores, accs, inst.shape.elements if inst.shape.is_tuple
                             else [inst.shape]):
            if s is not None:
                w.line(f"{index_text(s, outer)} = {np_type(o.dtype)}({acc})")
        loops.close(len(kept_dims))
    else:
        # Initialise, then sweep the operand in memory order.
        init_idx = loops.loop_nest(kept_dims, parallel=False)
        for s, init in zip(stores, inits):
            w.line(f"{index_text(s, init_idx)} = {core.value(init, ())}")
        loops.close(len(kept_dims))
        idx = loops.loop_nest(x_dims, parallel=False)
        kidx = tuple(idx[d] for d in kept)
        accs = [index_text(s, kidx) for s in stores]
        vals = [core.value(o, idx) for o in operands]
        new = core.combine(reducer, accs, vals)
        for s, v in zip(stores, new):
            w.line(f"{index_text(s, kidx)} = {v}")
        loops.close(len(x_dims))
