"""A scan as a phase: a reduce-window whose window grows along one axis (np.cumsum,
ufunc.accumulate)."""
from __future__ import annotations

from math import prod

from ...errors import CompileError
from ...ir.module import Instruction
from ...ir.ops import scan_axis
from ..elemental import Elemental
from ..writer import F16, index_text, np_type


def emit_scan(core: Elemental, loops, inst: Instruction) -> None:
    """One sequential pass along the axis with a running accumulator, for each position of
    the other axes (in parallel when there are many). A CPU makes the prefix in one pass of
    n steps, where an associative scan would do about 2n to expose parallelism it cannot
    use. `loops` is the target's (`loop_nest`, `open`, `close`, `parallel_from`)."""
    w = core.w
    axis = scan_axis(inst)
    if axis is None:
        raise CompileError(f"{inst.name}: the {core.backend} backend compiles a reduce-window only as a "
                           f"scan (a window growing along one axis, as np.cumsum's), not "
                           f"window={inst.attr('window')}; run it on the interpreter backend",
                           op="reduce-window", source_file=inst.metadata.source_file or None,
                           source_line=inst.metadata.source_line or None)
    w.comment(inst)
    x, init = inst.operands
    out = core.storage(inst)
    core.stored[id(inst)] = out
    reducer = core.module.computation(inst.attr("to_apply"))
    dims = x.dims
    lanes = [d for d in range(len(dims)) if d != axis]
    lane_dims = [dims[d] for d in lanes]
    parallel = prod(lane_dims) >= 2 and prod(dims) >= loops.parallel_from
    lidx = loops.loop_nest(lane_dims, parallel=parallel)
    acc = w.fresh("acc")
    w.line(f"{acc} = {np_type(inst.dtype)}({core.value(init, ())})")
    k = w.fresh("k")
    w.line(f"for {k} in range({dims[axis]}):  # the scan: one step per element")
    loops.open()
    idx = list(lidx)
    idx.insert(axis, k)
    idx = tuple(idx)
    (new,) = core.combine(reducer, [acc], [core.value(x, idx)], dtype=inst.dtype)
    if inst.dtype != F16:
        w.line(f"{acc} = {new}")
        w.line(f"{index_text(out, idx)} = {acc}")
    elif out in core.half_arrays:
        # NumPy's float16 accumulate rounds the running value to float16 at every step (each
        # prefix is read back from the float16 result), so the accumulator is the rounded one.
        bits = w.fresh("bits")
        w.line(f"{bits} = f16_bits({new})")
        w.line(f"{acc} = f16_load({bits})")
        w.line(f"{index_text(out, idx)} = {bits}")
    else:
        w.line(f"{acc} = f16_round({new})  # rounded at every step, as NumPy's is")
        w.line(f"{index_text(out, idx)} = {acc}")
    loops.close(1)
    loops.close(len(lane_dims))
