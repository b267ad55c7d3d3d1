"""What changed between two stages: the instructions a pass added, removed and rewrote.

The viewer highlights these; it reads the recorded stages and never re-runs a pass. An
instruction is identified by its name (passes keep the names of what they do not touch) and
compared by its printed text without metadata. The instructions inside fused computations
count as well, so a fusion stage shows the new fusion instructions as added and the fused ones
as unchanged: they still compute the same thing, now inside a kernel.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

from ..ir.module import Module
from ..ir.printer import format_instruction


@dataclass(frozen=True)
class StageDiff:
    added: frozenset[str]
    removed: frozenset[str]
    rewritten: frozenset[str]  # same name, other text (operands, shape or attributes)

    @property
    def changed(self) -> frozenset[str]:
        """What to highlight in the later stage: added and rewritten instructions."""
        return self.added | self.rewritten

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.rewritten)


# instructions() of each module while it lives: each stage is the later of one diff and the
# earlier of the next, and the explorer's views ask for the diffs more than once.
_TEXTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def instructions(module: Module) -> dict[str, str]:
    if module not in _TEXTS:
        _TEXTS[module] = _instructions(module)
    return _TEXTS[module]


def _instructions(module: Module) -> dict[str, str]:
    """Every computing instruction of the entry and of the computations fusions call, by name,
    as printed without metadata (fused computations' own parameters and roots left out). A
    fused instruction's operand that is the fused computation's parameter prints as the
    value the fusion passes in, so fusing an instruction does not count as rewriting it."""
    out = {}
    for inst in module.entry.instructions:
        out[inst.name] = _text(inst)
        if inst.opcode != "fusion":
            continue
        outer = {}
        for i in module.computation(inst.attr("calls")).instructions:
            if i.opcode == "parameter":
                outer[i] = inst.operands[i.parameter_number].name
            elif i.opcode != "tuple":
                out[i.name] = _text(i.replace(operands=tuple(
                    o.replace(name=outer[o]) if o in outer else o for o in i.operands)))
    return out


def _text(inst) -> str:
    return format_instruction(inst, metadata=False).strip()


def diff(before: Module, after: Module) -> StageDiff:
    if before is after:  # a pass that changed nothing hands its module on
        return StageDiff(frozenset(), frozenset(), frozenset())
    old, new = instructions(before), instructions(after)
    return StageDiff(frozenset(new.keys() - old.keys()), frozenset(old.keys() - new.keys()),
                     frozenset(n for n in new.keys() & old.keys() if new[n] != old[n]))
