"""XLA's scatter as a phase: the operand copied into the output, then every update applied in
order (np.add.at's meaning: duplicate indices combine one after another)."""
from __future__ import annotations

from ...ir.module import Instruction
from ..elemental import Elemental
from ..writer import index_text


def emit_scatter(core: Elemental, loops, inst: Instruction) -> None:
    """The operand copied into the output (nothing to do in effect when buffer assignment
    let the output take the operand's buffer), then one sequential loop over the updates
    applying the combiner, so duplicate indices combine in order as np.add.at does. An
    update whose window would leave the operand is skipped, as XLA does. `loops` is the
    target's (`loop_nest`, `open`, `close`)."""
    w = core.w
    x, indices, upd = inst.operands
    out = core.storage(inst)
    core.stored[id(inst)] = out
    w.comment(inst)
    w.line("# the operand first (a copy onto itself when written in place)")
    copy_idx = loops.loop_nest(x.dims, False)
    if x.opcode == "parameter":
        core.copy(out, copy_idx, f"p{x.parameter_number}", copy_idx)
    else:
        core.store(out, copy_idx, core.value(x, copy_idx))
    loops.close(len(x.dims))
    window = tuple(inst.attr("update_window_dims", ()))
    inserted = set(inst.attr("inserted_window_dims", ()))
    to_operand = tuple(inst.attr("scatter_dims_to_operand_dims"))
    ivd = inst.attr("index_vector_dim")
    w.line("# then every update, in order")
    uidx = loops.loop_nest(upd.dims, False)
    batch = tuple(i for d, i in enumerate(uidx) if d not in window)
    operand_window = [d for d in range(x.shape.rank) if d not in inserted]
    target, conds = [], []
    for d, n in enumerate(x.dims):
        start = "0"
        if d in to_operand:
            start = w.fresh("start")
            at = core.index_vector_at(indices, ivd, batch, to_operand.index(d))
            w.line(f"{start} = {at}")
        size = 1
        if d in operand_window:
            k = window[operand_window.index(d)]
            size = upd.dims[k]
            target.append(f"{start} + {uidx[k]}")
        else:
            target.append(start)
        if d in to_operand:
            conds.append(f"0 <= {start} <= {n - size}")
    w.line(f"if {' and '.join(conds) or 'True'}:  # a window that leaves the operand is "
           "skipped")
    loops.open()
    old = w.fresh("old")
    w.line(f"{old} = {core.load(out, index_text(out, tuple(target)))}")
    combiner = core.module.computation(inst.attr("to_apply"))
    (new,) = core.combine(combiner, [old], [core.value(upd, uidx)], inst.dtype)
    # float16 rounds after each update, as np.add.at does: duplicates combine one by one
    core.store_result(out, tuple(target), new, inst.dtype)
    loops.close(1)
    loops.close(len(upd.dims))
