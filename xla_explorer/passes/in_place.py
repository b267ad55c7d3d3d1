"""In-place sharing, a step of buffer assignment: a kernel may write an output into an
operand's buffer when that operand dies there, is a temporary of the same size, and the kernel
reads it only element-wise at the index it writes (XLA's CanShareOperandBufferWithUser).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from ..ir.module import Computation, Instruction, Module
from ..ir.ops import Group, elementwise_like, in_group
from .dataflow import Dataflow, ShapeIndex, is_kernel

if TYPE_CHECKING:  # buffer assignment imports this module
    from .buffer_assignment import LogicalBuffer


@dataclass(frozen=True)
class Sharing:
    """A kernel writing one of its outputs into a dying operand's buffer."""

    kernel: str
    operand: str  # the buffer that dies at the kernel
    output: str  # the buffer written over it
    reason: str

    def __str__(self) -> str:
        return self.reason



def _dependents(comp: Computation, param: Instruction) -> list[Instruction]:
    """The instructions of `comp` whose value depends on `param` (in order, `param` excluded)."""
    reached, out = {id(param)}, []
    for inst in comp.instructions:
        if any(id(o) in reached for o in inst.operands):
            reached.add(id(inst))
            out.append(inst)
    return out


def _reads_elementwise(module: Module, kernel: Instruction, positions: list[int],
                       out_index: ShapeIndex) -> str | None:
    """Why `kernel` reads its operands at `positions` only at the index it writes output
    `out_index`, or None when it may read them anywhere else (so writing over them early
    would change what it reads later). Unlike `elementwise_like`, which asks about one op,
    this asks about a whole kernel: every path inside a fusion from the operand to the output
    must be element-wise at the operand's shape, and no other output may read it."""
    callee = kernel.attr("calls") or kernel.attr("to_apply")
    if in_group(kernel.opcode, Group.CALL) and callee:
        comp = module.computation(callee)
        root = comp.root
        if any(in_group(i.opcode, Group.DOT) for i in comp.instructions):
            # An output fusion writes the product into its output first, then runs the
            # epilogue over it: an operand the epilogue reads would be overwritten by then.
            return None
        if out_index == ():
            target, others = root, []
        elif root.opcode == "tuple" and len(out_index) == 1:
            target = root.operands[out_index[0]]
            others = [o for k, o in enumerate(root.operands) if k != out_index[0]]
        else:
            return None
        params = comp.parameters
        for pos in positions:
            p = params[pos]
            deps = _dependents(comp, p)
            inner = [d for d in deps if d is not root or out_index == ()]
            if any(d.shape.is_tuple or not elementwise_like(d.opcode) or d.dims != p.dims
                   for d in inner):
                return None
            reached = {id(p)} | {id(d) for d in deps}
            if id(target) not in reached or target.shape.is_tuple or target.dims != p.dims:
                return None
            # Another output reading it too could be computed after this one overwrote it.
            if any(id(o) in reached for o in others):
                return None
        return f"every path from that parameter of {comp.name} to {target.name} is element-wise"
    if out_index == () and kernel.opcode == "scatter" and positions == [0]:
        # Issue 24: a scatter copies its operand into its result before any update, and then
        # reads only its result, so the copy may be the operand itself.
        return ("a scatter reads its operand only to copy it into its result, before any "
                "update is applied")
    if out_index == () and elementwise_like(kernel.opcode) and all(
            kernel.operands[pos].dims == kernel.dims for pos in positions):
        return f"{kernel.opcode} is element-wise"
    return None


def in_place_sharings(module: Module, comp: Computation, flow: Dataflow,
                      temporaries: Iterable[LogicalBuffer]) -> list[Sharing]:
    """Each kernel output that may take over the buffer of an operand dying at the kernel:
    both must be among `temporaries` (in the arena; the caller owns the others)."""
    by_key = {(b.instruction, b.index): b for b in temporaries}
    taken: set[str] = set()
    sharings: list[Sharing] = []
    for t, inst in enumerate(comp.instructions):
        if not is_kernel(inst):
            continue
        for index in flow.defined[inst.name]:
            out = by_key.get((inst.name, index))
            if out is None:
                continue
            for o in inst.operands:
                pts = flow.points_to[o.name]
                if set(pts) != {()}:
                    continue
                b = by_key.get(pts[()])
                if b is None or b.name in taken or b.end_time != t or b.size != out.size:
                    continue
                readers = [k for k, o2 in enumerate(inst.operands)
                           if pts[()] in flow.points_to[o2.name].values()]
                if any(set(flow.points_to[inst.operands[k].name]) != {()} for k in readers):
                    continue
                why = _reads_elementwise(module, inst, readers, index)
                if why is None:
                    continue
                taken.add(b.name)
                what = "its result" if out.name == inst.name else out.name
                sharings.append(Sharing(inst.name, b.name, out.name, (
                    f"{inst.name} writes {what} in place over {b.name}: {b.name} is last used "
                    f"here, it is a temporary of the same size ({out.size} bytes), and {why}, "
                    "so each element is read before it is overwritten")))
                break
    return sharings


