"""The CUDA one-block shape: scatters, sorts, scans and the reductions the other shapes cannot
take, as phases one after another in one block, barriers between them.

The phase bodies are codegen/phases/'s, run with this block's loops (`BlockLoops`): every loop
the CPU would run in parallel (a scan's or sort's rows, the outputs' elements) is a
block-stride loop, one thread per element; a scatter's updates run on one thread in order (as
np.add.at applies them). A value one phase hands to a later one that is no output lives in
shared memory.
"""
from __future__ import annotations

import re
from math import prod

import numpy as np

from ...errors import UnsupportedOpError
from ..analysis import phases, refuse_float16
from ..phases.scan import emit_scan
from ..phases.scatter import emit_scatter
from ..phases.sort import emit_sort
from .loop import ROW_THREADS, SHARED_BUDGET, WARP, Layout, round_up
from .reduce import reduce_at

# The phase bodies codegen/phases/ writes for every target; a reduce's is `_reduce_phase`.
PHASES = {"reduce-window": emit_scan, "sort": emit_sort}


class BlockLoops:
    """The loops a phase body asks for, as one block runs them: one block-stride loop over
    the flattened dimensions (one thread per element), or, while `serial`, plain loops on
    the one thread that runs them."""

    # A block's loops share out every element whatever their size: nothing is too small.
    parallel_from = 0

    def __init__(self, layout: Layout):
        self.layout = layout
        self.w = layout.w
        self.serial = 0  # > 0 inside a phase that one thread runs (a scatter's updates)

    def open(self, with_inner: bool = False, after=()) -> None:
        self.w.open(with_inner, after)

    def close(self, n: int) -> None:
        self.w.close(n)

    def loop_nest(self, dims, parallel: bool, sums=()) -> tuple[str, ...]:
        if self.serial or not dims or sums:
            return self.w.for_nest(dims)
        flat = self.layout.strided(prod(dims), "tid", self.layout.threads, loops=len(dims))
        return self.layout.unravel(flat, dims)


def shared_storage(layout: Layout, core, inst, index) -> str:
    """A value the phases hand on that is no output: a shared array (a 0-d one as one
    element); outside a one-block kernel there is no place for one."""
    if not layout.one_block:
        raise UnsupportedOpError(
            f"the cuda backend keeps no array of {inst.name} ({inst.opcode}) inside this "
            "kernel unless it is the kernel's output", op=inst.opcode,
            source_file=inst.metadata.source_file or None,
            source_line=inst.metadata.source_line or None)
    shape = inst.shape if index is None else inst.shape.elements[index]
    size = max(np.dtype(shape.dtype).itemsize, 4) * prod(shape.dims)
    if layout.shared_bytes + size > SHARED_BUDGET:
        raise UnsupportedOpError(
            f"the cuda backend keeps {inst.name} ({inst.opcode}, {shape}) for the kernel's "
            "later phases in shared memory, and it does not fit", op=inst.opcode,
            source_file=inst.metadata.source_file or None,
            source_line=inst.metadata.source_line or None)
    var = layout.shared(inst.name if index is None else f"{inst.name}_{index}",
                        shape.dims or (1,), shape.dtype)
    if not shape.dims:
        core.scalar_arrays.add(var)
    return var


def emit_one_block(layout: Layout, serial_phases) -> None:
    """Scatters first, then every phase in program order, a barrier after each (a phase
    reads what earlier phases wrote), then the outputs not yet written."""
    core, w = layout.core, layout.w
    widest = max([prod(o.dims) for o in core.outputs] + [1])
    layout.threads = min(ROW_THREADS, max(WARP, round_up(widest, WARP)))
    layout.blocks = 1
    what = ", ".join(sorted({p.opcode for p in serial_phases}))
    layout.reason = (f"one block ({what}): a phase reads what the one before wrote, which only "
                     "a block's barrier orders; its rows and elements are shared out among "
                     "the block's threads (a scatter's updates stay in order on one thread)")
    loops = BlockLoops(layout)
    w.line("tid = cuda.threadIdx.x")
    for inst in core.comp.instructions:
        if inst.opcode == "scatter":
            w.line("if tid == 0:  # the updates in order, as np.add.at applies them")
            w.open()
            loops.serial += 1
            emit_scatter(core, loops, inst)
            loops.serial -= 1
            w.close(1)
            w.line("cuda.syncthreads()  # the phase is written before it is read")
    layout.one_block = True
    for inst in phases(core.comp):
        if inst.opcode in PHASES:
            PHASES[inst.opcode](core, loops, inst)
        else:
            _reduce_phase(layout, inst)
        w.line("cuda.syncthreads()  # the phase is written before it is read")
    _emit_outputs(core, loops)
    # A row's scratch (a sort's positions) is the thread's own: local memory.
    w.lines = [re.sub(r"np\.empty\((\d+), dtype=([\w.]+)\)", r"cuda.local.array(\1, \2)",
                      line) for line in w.lines]


def _emit_outputs(core, loops: BlockLoops) -> None:
    """Every output not written by its own phase, one block-stride loop per shape."""
    by_shape: dict[tuple, list] = {}
    for o in core.outputs:
        if not core.written(o):
            by_shape.setdefault(o.dims, []).append(o)
    for dims, group in by_shape.items():
        idx = loops.loop_nest(dims, True)
        for o in group:
            core.w.comment(o)
            core.store(core.out_names[id(o)], idx, core.value(o, idx))
        loops.close(len(dims))


def _reduce_phase(layout: Layout, inst) -> None:
    """A reduce as a phase: one thread per element of its result (block-stride), each
    accumulating what it reduces, into its output or a shared-memory array."""
    core, w = layout.core, layout.w
    refuse_float16(inst)
    w.comment(inst)
    n = len(inst.operands) // 2
    if inst.shape.is_tuple:
        stores = [core.element_storage(inst, k, needed=True) for k in range(n)]
        shapes = list(inst.shape.elements)
    else:
        stores = [core.storage(inst)]
        core.stored[id(inst)] = stores[0]
        shapes = [inst.shape]
    kept_dims = shapes[0].dims
    flat = layout.strided(prod(kept_dims), "tid", layout.threads)
    kidx = layout.unravel(flat, kept_dims)
    values = reduce_at(layout, inst, kidx)
    for store, v, shape in zip(stores, values, shapes):
        core.store_result(store, kidx, v, shape.dtype)
    w.close(1)
