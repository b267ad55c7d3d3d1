"""The CPU's row shape: every reduction in the kernel reduces the same trailing dimensions of
one loop space (softmax, layernorm, sum(x + y*z), a loop fusion with no reduction at all).

One outer loop over the rows (the leading dimensions), in parallel when there are enough of
them, and inside it one loop over the row per reduction, with its accumulator in a register,
then one loop that writes the outputs. A row stays in cache across its passes. With one row
(a full reduction) the inner loops run in parallel instead.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...ir.ops import is_expensive
from .. import exprs
from ..analysis import elementwise_closure, phases, refuse_float16
from ..options import CACHE_LINE
from ..reducers import wide_accumulator
from ..writer import np_type
from .loop import Loops, scratch_array
from .reduce import accumulate, init_accs, parallel_sums

def emit_rows(loops: Loops, lead: tuple[int, ...], trail: tuple[int, ...]) -> None:
    core, w = loops.core, loops.w
    rows = prod(lead)
    per_row = prod(trail)
    outer_parallel = rows >= 2 and rows * per_row >= loops.parallel_from
    inner_parallel = rows == 1 and per_row >= loops.parallel_from
    reduces = phases(core.comp)
    keep = [] if inner_parallel else _values_to_keep(core, lead, trail)
    ridx, opened = _row_loops(loops, lead, trail, keep, outer_parallel)
    if reduces and lead and len(trail) == 1:
        _prefetch_rows(loops, lead, trail, ridx)
    for inst in reduces:
        refuse_float16(inst)
        w.comment(inst)
        n = len(inst.operands) // 2
        operands, inits = inst.operands[:n], inst.operands[n:]
        reducer = core.module.computation(inst.attr("to_apply"))
        accs = init_accs(loops, inits, reducer)
        sums = parallel_sums(reducer, accs, operands) if inner_parallel else ()
        wide = wide_accumulator(reducer, np.dtype(operands[0].dtype), n)
        # In rows, float32 blocks beat converting every element into the float64 sum
        # (docs/performance.md); a single long row (a full sum) runs fastest straight
        # into float64.
        if wide != np.dtype(operands[0].dtype) and not inner_parallel and trail and lead:
            _blocked_sum(loops, reducer, accs[0], operands[0], ridx, trail)
        else:
            tidx = _row_pass(loops, trail, bool(sums), ridx, sums)
            accumulate(loops, reducer, [loops.partial[a] for a in accs] if sums else accs,
                       operands, ridx + tidx)
            _end_row_pass(loops, trail)
        if inst.shape.is_tuple:
            for k, (acc, e) in enumerate(zip(accs, inst.shape.elements)):
                var = w.fresh(f"{inst.name}_{k}")
                w.line(f"{var} = {np_type(e.dtype)}({acc})")
                core.row_scalars[(id(inst), k)] = var
        else:
            var = w.fresh(inst.name)
            w.line(f"{var} = {np_type(inst.dtype)}({accs[0]})")
            core.row_scalars[id(inst)] = var
    # Per-row values that outputs need, then the full-row outputs in one loop.
    full = [o for o in core.outputs if o.dims == lead + trail]
    small = [o for o in core.outputs if o.dims != lead + trail]
    for o in small:  # per row: shaped like the rows, or with the row's axes kept as 1s
        w.comment(o)
        idx = ridx + ("0",) * (len(o.dims) - len(lead))
        core.store(core.out_names[id(o)], idx, core.value(o, idx))
    if full:
        tidx = _row_pass(loops, trail, inner_parallel, ridx)
        for o in full:
            w.comment(o)
            v = core.value(o, ridx + tidx)
            core.store(core.out_names[id(o)], ridx + tidx, v)
        _end_row_pass(loops, trail)
    loops.close(opened)


def _prefetch_rows(loops: Loops, lead, trail, ridx) -> None:
    """Ask for the next row of each input that the row's passes read element by element,
    and for this row of each full output, before the passes start. The passes run over a
    row held in L1, and while they compute, nothing is in flight from memory: the
    hardware prefetchers follow the stream of addresses, which stands still. Asked for
    ahead, the next row arrives while this one computes (docs/performance.md). Only for
    arrays past the last-level cache, in rows of at most `prefetch_row_bytes`."""
    core, w, options = loops.core, loops.w, loops.options
    full = lead + trail
    roots = [o for r in phases(core.comp) for o in r.operands[:len(r.operands) // 2]]
    roots += [o for o in core.outputs if o.dims == full]
    at_element = roots + [o for e in elementwise_closure(roots, full) for o in e.operands]
    reads = {i.parameter_number: i for i in at_element
             if i.opcode == "parameter" and i.dims == full}
    writes = [o for o in core.outputs if o.dims == full]
    arrays = [*reads.values(), *writes]
    if (sum(a.shape.nbytes for a in arrays) < options.prefetch_min_bytes
            or max(trail[0] * np.dtype(a.dtype).itemsize for a in arrays)
            > options.prefetch_row_bytes):
        return
    w.line("# Fetch ahead: the next row of each input, this row of each output.")

    def lines(array, dtype, idx, helper):
        j = w.fresh("line")
        step = max(1, CACHE_LINE // np.dtype(dtype).itemsize)
        w.line(f"for {j} in range(0, {trail[0]}, {step}):")
        w.line(f"    {helper}({array}, ({', '.join(idx + (j,))}))")

    if reads:
        w.line(f"if {ridx[-1]} + 1 < {lead[-1]}:")
        w.depth += 1
        for k, param in sorted(reads.items()):
            lines(f"p{k}", param.dtype, ridx[:-1] + (f"{ridx[-1]} + 1",), "prefetch_read")
        w.depth -= 1
    for o in writes:
        lines(core.out_names[id(o)], o.dtype, ridx, "prefetch_write")


def _blocked_sum(loops: Loops, reducer, acc, operand, ridx, trail) -> None:
    """A float32 sum over the row in blocks of `sum_block`: each block in float32 (which
    vectorises: the loop carries several partial sums, NumPy's pairwise sum does the
    same in blocks of 128), the blocks into the float64 accumulator."""
    core, w = loops.core, loops.w
    size = loops.options.sum_block
    outer = loops.loop_nest(trail[:-1], parallel=False)
    n = trail[-1]
    blocks = n > size  # else the row is one block
    b, i = w.fresh("block"), w.fresh("i")
    if blocks:
        w.line(f"for {b} in range(0, {n}, {size}):")
        loops.open()
    part = w.fresh("part")
    dtype = np.dtype(operand.dtype)
    w.line(f"{part} = {exprs.literal(0, dtype)}")
    span = f"{b}, min({b} + {size}, {n})" if blocks else f"{n}"
    w.line(f"for {i} in range({span}):")
    loops.open()
    if blocks:  # a block starts where LLVM cannot see it is not negative
        w.line(f"{i} = nonnegative({i})  # so that indexing with it skips NumPy's "
               "wraparound, and vectorizes")
    tidx = outer + (i,)
    core.row_index, core.row_tail = ridx + tidx, tidx
    w.line(f"{part} = add_reassoc({part}, {core.value(operand, ridx + tidx)})")
    loops.close(1)
    wide = wide_accumulator(reducer, dtype, 1)
    w.line(f"{acc} += {np_type(wide)}({part})")
    loops.close(1 if blocks else 0)
    _end_row_pass(loops, trail[:-1])


def _row_pass(loops: Loops, trail, parallel: bool, ridx, sums=()) -> tuple[str, ...]:
    tidx = loops.loop_nest(trail, parallel=parallel, sums=sums)
    loops.core.row_index, loops.core.row_tail = ridx + tidx, tidx
    return tidx


def _end_row_pass(loops: Loops, trail) -> None:
    core = loops.core
    loops.close(len(trail))
    core.row_index = None
    core.stashed |= core.stashed_now
    core.stashed_now = set()


def _values_to_keep(core, lead, trail) -> list:
    """Expensive element-wise values that more than one pass over a row computes (the
    exponential in softmax: once for the sum, once for the output): the first pass keeps
    them in a row-sized array and the later ones read it, as a hand-written kernel would.
    Only values every pass reads at the element it is on qualify, so the array is indexed
    by the pass's own position in the row."""
    full = lead + trail
    passes = [r.operands[:len(r.operands) // 2] for r in phases(core.comp)]
    passes.append([o for o in core.outputs if o.dims == full])
    seen: dict[int, int] = {}
    for roots in passes:
        for i in elementwise_closure(roots, full):
            seen[id(i)] = seen.get(id(i), 0) + 1
    return [i for i in core.comp.instructions
            if seen.get(id(i), 0) > 1 and is_expensive(i)]


def _row_loops(loops: Loops, lead, trail, keep, parallel: bool) -> tuple[tuple[str, ...], int]:
    """Open the loop over rows, with a row-sized array for each value in `keep`; returns
    the row's index and how many loops to close."""
    core, w = loops.core, loops.w

    def arrays():
        for inst in keep:
            var = w.fresh(f"{inst.name}_row")
            w.line(f"{var} = {scratch_array(trail, inst.dtype)}")
            core.stash[id(inst)] = var

    if not keep:
        return loops.loop_nest(lead, parallel=parallel), len(lead)
    if not parallel:
        arrays()
        return loops.loop_nest(lead, parallel=False), len(lead)
    # In parallel, each thread gets arrays of its own, and claims blocks of all the rows.
    rows = prod(lead)
    r = loops.parallel_loop(rows, setup=arrays, index="row")
    if len(lead) == 1:
        return (r,), 1
    ridx = []
    stride = rows
    for n in lead:
        stride //= n
        i = w.fresh("i")
        w.line(f"{i} = ({r} // {stride}) % {n}" if stride > 1 else f"{i} = {r} % {n}")
        ridx.append(i)
    return tuple(ridx), 1
