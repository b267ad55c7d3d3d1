"""The CUDA row shape: every reduction reduces the same trailing dimensions (softmax,
layernorm, sum(x + y*z) per row).

One block per row (a grid-stride loop over the rows), its threads striding over the row; each
reduction is a per-thread partial, then the block's tree: warp shuffles, one value per warp in
shared memory, combined by every thread in the same order (so every thread holds the same
result, with no second broadcast). A row's parameters and expensive values that several passes
read are kept in shared memory by the first pass where they fit, never re-read from global
memory. Rows of a warp's width or less get a warp each, several rows to a block. One long row
runs on many blocks: with nothing but scalars to write, each block's partial goes to scratch
space and the last block to finish (an atomic counter) combines them in block order
(deterministic, any reducer); where the rest of the kernel reads the reductions, a cooperative
launch with a grid-wide barrier after each.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...ir.ops import is_expensive
from ..analysis import elementwise_closure, phases
from ..writer import np_type
from .loop import MAX_BLOCKS, ROW_THREADS, SHARED_BUDGET, WARP, Layout, round_up
from .reduce import acc_types, block_reduce, finish, fold_partials, identity_start, \
    reducer_parts, step

# Blocks a cooperative launch may have (one per multiprocessor; no GPU has more): the
# scratch space holds a partial per block.
COOPERATIVE_BLOCKS = 1024
# Blocks a full reduction spreads over, at most: each adds a grid-stride partial.
FULL_REDUCTION_BLOCKS = 1024


def _values_to_keep(core, lead, trail):
    """What the first pass over a row keeps in shared memory for the later ones: the
    expensive values several passes compute (softmax's exp) and the parameters several
    passes read, as long as they fit in SHARED_BUDGET."""
    full = lead + trail
    passes = [r.operands[:len(r.operands) // 2] for r in phases(core.comp)]
    passes.append([o for o in core.outputs if o.dims == full])
    seen: dict[int, int] = {}
    for roots in passes:
        for i in {id(x): x for x in elementwise_closure(roots, full)
                  + [o for e in elementwise_closure(roots, full) for o in e.operands]
                  + list(roots)}.values():
            seen[id(i)] = seen.get(id(i), 0) + 1
    wanted = [i for i in core.comp.instructions if seen.get(id(i), 0) > 1 and i.dims == full
              and (is_expensive(i) or i.opcode == "parameter")]
    keep, used = [], 0
    for i in sorted(wanted, key=lambda i: i.opcode == "parameter"):
        size = prod(trail) * max(np.dtype(i.dtype).itemsize, 4)  # float16 kept as float32
        if used + size <= SHARED_BUDGET:
            keep.append(i)
            used += size
    return keep


def _row_pass(layout: Layout, per_row, lanes, stride, ridx, trail) -> tuple[str, ...]:
    """Open a pass over the row, this thread's elements of it; returns their index."""
    core = layout.core
    j = layout.strided(per_row, lanes, stride)
    tidx = layout.unravel(j, trail)
    core.row_index, core.row_tail = ridx + tidx, tidx
    return tidx


def _end_row_pass(layout: Layout) -> None:
    """Close the pass's one strided loop; what it kept is there for the later passes."""
    core = layout.core
    layout.w.close(1)
    core.row_index = None
    core.stashed |= core.stashed_now
    core.stashed_now = set()


def emit_rows(layout: Layout, lead, trail) -> None:
    core, w = layout.core, layout.w
    rows, per_row = prod(lead), prod(trail)
    reduces = phases(core.comp)
    full = [o for o in core.outputs if o.dims == lead + trail]
    small = [o for o in core.outputs if o.dims != lead + trail]
    if not lead and not full and _independent(reduces) and per_row > ROW_THREADS:
        _emit_full_reduction(layout, trail, reduces)
        return
    if not lead and per_row > ROW_THREADS:
        _emit_one_row_grid(layout, trail, reduces, full, small)
        return
    # Rows of a warp's width or less: a warp per row, several rows to a block, so that
    # blocks stay large enough to fill the GPU; the reductions are warp shuffles alone.
    layout.warp_rows = per_row <= WARP and rows > 1
    keep = _values_to_keep(core, lead, trail)
    if layout.warp_rows:
        per_block = min(ROW_THREADS // WARP, rows)
        layout.threads = per_block * WARP
        layout.blocks = max(1, min(-(-rows // per_block), MAX_BLOCKS))
        layout.reason = (f"one warp per row: {rows} rows of {per_row} elements, "
                         f"{per_block} rows to a block of {layout.threads} threads")
        for inst in keep:
            buf = layout.shared(f"{inst.name}_rows", (per_block,) + trail, inst.dtype)
            core.stash[id(inst)] = f"{buf}[warp]"  # this warp's row
        first, stride_of_rows, lanes, leader = (f"cuda.blockIdx.x * {per_block} + warp",
                                                f"cuda.gridDim.x * {per_block}", "lane", "lane")
    else:
        layout.threads = min(ROW_THREADS, max(WARP, round_up(per_row, WARP)))
        layout.blocks = max(1, min(rows, MAX_BLOCKS))
        layout.reason = (f"one block per row: {rows} rows of {per_row} elements, "
                         f"{layout.threads} threads striding over each row")
        if not lead:
            layout.reason = (f"one row of {per_row} elements whose result the rest of the "
                             "kernel reads: one block")
        for inst in keep:
            core.stash[id(inst)] = layout.shared(f"{inst.name}_row", trail, inst.dtype)
        first, stride_of_rows, lanes, leader = ("cuda.blockIdx.x", "cuda.gridDim.x", "tid",
                                                "tid")
    stride = WARP if layout.warp_rows else layout.threads
    w.line("tid = cuda.threadIdx.x")
    w.line(f"lane = tid % {WARP}")
    w.line(f"warp = tid // {WARP}")
    row = layout.strided(rows, first, stride_of_rows)
    ridx = layout.unravel(row, lead)
    for inst in reduces:
        w.comment(inst)
        operands, inits, reducer = reducer_parts(core, inst)
        accs, late = identity_start(layout, inst, inits, reducer)
        tidx = _row_pass(layout, per_row, lanes, stride, ridx, trail)
        step(layout, inst, reducer, accs, [core.value(o, ridx + tidx) for o in operands])
        _end_row_pass(layout)
        block_reduce(layout, inst, reducer, accs, acc_types(inst, reducer))
        core.hold(inst, finish(layout, inst, reducer, accs, late))
    if small:
        w.line(f"if {leader} == 0:")
        w.open()
        for o in small:
            w.comment(o)
            idx = ridx + ("0",) * (len(o.dims) - len(lead))
            core.store(core.out_names[id(o)], idx, core.value(o, idx))
        w.close(1)
    if full:
        tidx = _row_pass(layout, per_row, lanes, stride, ridx, trail)
        for o in full:
            w.comment(o)
            core.store(core.out_names[id(o)], ridx + tidx, core.value(o, ridx + tidx))
        _end_row_pass(layout)
    w.close(1)


def _block_partial(layout: Layout, inst, n, trail, offset: int, slots: int):
    """One reduce's grid-stride partial, combined by the block's tree, and the block's value
    written to the scratch space at `offset` (an array of `slots` 8-byte slots per
    accumulator). Returns (reducer, accumulators, partial arrays, late init, next offset)."""
    core, w = layout.core, layout.w
    w.comment(inst)
    operands, inits, reducer = reducer_parts(core, inst)
    accs, late = identity_start(layout, inst, inits, reducer)
    j = layout.strided(n, "start", "step")
    tidx = layout.unravel(j, trail)
    step(layout, inst, reducer, accs, [core.value(o, tidx) for o in operands])
    w.close(1)
    types = acc_types(inst, reducer)
    block_reduce(layout, inst, reducer, accs, types)
    parts = []
    for t in types:
        offset = round_up(offset, 8)
        var = w.fresh("partials")
        w.line(f"{var} = scratch[{offset}:{offset + 8 * slots}].view({np_type(t)})")
        offset += 8 * slots
        parts.append(var)
    w.line("if tid == 0:")
    for p, acc in zip(parts, accs):
        w.line(f"    {p}[cuda.blockIdx.x] = {acc}")
    return reducer, accs, parts, late, offset


def _thread_names(layout: Layout) -> None:
    w = layout.w
    w.line("tid = cuda.threadIdx.x")
    w.line(f"lane = tid % {WARP}")
    w.line(f"warp = tid // {WARP}")
    w.line("start = cuda.blockIdx.x * cuda.blockDim.x + tid")
    w.line("step = cuda.gridDim.x * cuda.blockDim.x")


def _emit_one_row_grid(layout: Layout, trail, reduces, full, small) -> None:
    """One long row whose reductions the rest of the kernel reads (`x - x.mean()`,
    mean and variance): a cooperative launch of one block per multiprocessor (every
    block resident at once), grid-stride passes over the row, and after each
    reduction's block partials are written, a grid-wide barrier, then every thread
    combines the partials in block order (so all hold the same value)."""
    core, w = layout.core, layout.w
    n = prod(trail)
    layout.threads = ROW_THREADS
    layout.blocks = -(-n // ROW_THREADS)  # at most; the launch takes one per multiprocessor
    layout.cooperative = True
    layout.reason = (f"one row of {n} elements whose reductions the rest of the kernel "
                     f"reads: a cooperative launch of one block of {layout.threads} threads "
                     "per multiprocessor, a grid-wide barrier after each reduction's "
                     "block partials")
    offset = 8  # (past the counter a full reduction keeps at zero between its calls)
    w.line("grid = cuda.cg.this_grid()")
    _thread_names(layout)
    for inst in reduces:
        reducer, accs, parts, late, offset = _block_partial(layout, inst, n, trail, offset,
                                                            COOPERATIVE_BLOCKS)
        w.line("grid.sync()  # every block's partial is written")
        for part, acc in zip(parts, accs):
            w.line(f"{acc} = {part}[0]")
        fold_partials(layout, inst, reducer, accs, parts, "cuda.gridDim.x", "b")
        core.hold(inst, finish(layout, inst, reducer, accs, late))
    layout.scratch = offset
    if small:
        w.line("if start == 0:")
        w.open()
        for o in small:
            w.comment(o)
            idx = ("0",) * len(o.dims)
            core.store(core.out_names[id(o)], idx, core.value(o, idx))
        w.close(1)
    if full:
        j = layout.strided(n, "start", "step")
        tidx = layout.unravel(j, trail)
        for o in full:
            w.comment(o)
            core.store(core.out_names[id(o)], tidx, core.value(o, tidx))
        w.close(1)


def _independent(reduces) -> bool:
    """No reduce reads another's result (so each can be finished by the last block)."""
    ids = {id(r) for r in reduces}
    for r in reduces:
        stack, seen = list(r.operands), set()
        while stack:
            i = stack.pop()
            if id(i) in seen:
                continue
            seen.add(id(i))
            if id(i) in ids:
                return False
            stack.extend(i.operands)
    return True


def _emit_full_reduction(layout: Layout, trail, reduces) -> None:
    """One row spread over many blocks: each block's partial to scratch, the last block
    to finish combines them in block order and writes the outputs."""
    core, w = layout.core, layout.w
    n = prod(trail)
    layout.threads = ROW_THREADS
    layout.blocks = max(1, min(FULL_REDUCTION_BLOCKS, -(-n // (ROW_THREADS * 4))))
    layout.reason = (f"a full reduction of {n} elements: {layout.blocks} blocks of "
                     f"{layout.threads} threads each add a grid-stride partial; the last "
                     "block to finish combines the partials in block order")
    # scratch: [counter (8 bytes)] then per reduce and accumulator, one slot per block
    _thread_names(layout)
    slots, offset = [], 8
    for inst in reduces:
        reducer, _, parts, late, offset = _block_partial(layout, inst, n, trail, offset,
                                                         layout.blocks)
        slots.append((inst, reducer, parts, late))
    layout.scratch = offset
    w.line("# the last block to finish sees every partial (the fence publishes this "
           "block's before it counts itself)")
    w.line("cuda.threadfence()")
    layout.declarations.append("    done = cuda.shared.array(1, np.int64)")
    w.line("counter = scratch[0:8].view(np.int64)")
    w.line("if tid == 0:")
    w.line("    done[0] = cuda.atomic.add(counter, 0, 1)")
    w.line("cuda.syncthreads()")
    w.line(f"if done[0] == {layout.blocks - 1}:")
    w.open()
    w.line("cuda.threadfence()")
    for inst, reducer, parts, late in slots:
        accs = []
        for p in parts:
            acc = w.fresh("acc")
            w.line(f"{acc} = {p}[0]")
            accs.append(acc)
        fold_partials(layout, inst, reducer, accs, parts, layout.blocks, "b")
        core.hold(inst, finish(layout, inst, reducer, accs, late))
    w.line("if tid == 0:")
    w.open()
    for o in core.outputs:
        w.comment(o)
        idx = ("0",) * len(o.dims)
        core.store(core.out_names[id(o)], idx, core.value(o, idx))
    w.line("counter[0] = 0  # ready for the next call")
    w.close(1)
    w.close(1)
