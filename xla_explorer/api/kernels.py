"""The kernel view: one record per kernel the backend launches, with the fusion decisions
about what it computes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..ir.library import runs_eagerly
from ..ir.module import Module
from ..passes.dataflow import is_kernel
from ..passes.kinds import Decision, is_row_fusion, kernel_kind
from ..passes.names import traced_name


@dataclass(frozen=True)
class Kernel:
    """One kernel the backend launches: a fusion, or an op that fused with nothing (a fusion
    of one). `instructions` are the HLO instructions it computes (as traced, so a cheap
    producer copied into several kernels appears in each); `reasons` every fusion decision
    about them, taken or refused."""

    name: str
    kind: str  # kLoop | kInput | kOutput
    instructions: tuple[str, ...]
    reasons: tuple[str, ...]
    outputs: tuple[str, ...] = ()
    row: bool = False  # a row fusion: runs row by row (kInput, backend_config schedule row)

    def __str__(self) -> str:
        what = "row fusion" if self.row else self.kind
        return f"{self.name} ({what}): {', '.join(self.instructions)}"


def kernels_of(module: Module, decisions: Sequence[Decision] = ()) -> list[Kernel]:
    """The kernels of a module's entry, in schedule order, with the decisions about each."""
    # Which decisions name each instruction, in order: a 200-step loop has 100 kernels and
    # 2,900 decisions, and asking each kernel of every decision took a quarter of a second.
    about: dict[str, list[int]] = {}
    for n, d in enumerate(decisions):
        for name in _named(d):
            about.setdefault(name, []).append(n)
    out = []
    for inst in module.entry.instructions:
        if not is_kernel(inst) or runs_eagerly(inst):
            continue  # eager ops run in NumPy, between kernels (a library call is a kernel)
        if inst.opcode == "fusion":
            comp = module.computation(inst.attr("calls"))
            body = [i for i in comp.instructions if i.opcode not in ("parameter", "tuple")]
            root = comp.root
            outs = root.operands if root.opcode == "tuple" else (root,)
            names = tuple(i.name for i in body)
            kernel = Kernel(inst.name, kernel_kind(inst), names, (),
                            tuple(o.name for o in outs), is_row_fusion(inst))
        else:
            kernel = Kernel(inst.name, kernel_kind(inst), (inst.name,), (), (inst.name,))
        traced = {traced_name(n) for n in kernel.instructions}
        mine = sorted({n for name in traced for n in about.get(name, ())})
        reasons = tuple(decisions[n].reason for n in mine)
        out.append(Kernel(kernel.name, kernel.kind, kernel.instructions, reasons,
                          kernel.outputs, kernel.row))
    return out


def _named(d: Decision) -> tuple[str, ...]:
    """The instructions a decision is about: one taken, the one it fused into; one refused,
    both sides."""
    sides = (d.consumer or d.producer,) if d.fused else (d.producer, d.consumer)
    return tuple(n for n in sides if n)

