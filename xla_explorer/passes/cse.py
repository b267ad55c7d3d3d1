"""Common subexpression elimination: one instruction for each distinct computation.

Two instructions are the same when they have the same opcode, shape, attributes, literal and
operands (operands already merged, so one walk in def-before-use order finds every duplicate).
Parameters are never merged: they are distinct inputs even when they look alike. Only the
duplicates go; everything else keeps its place.
"""
from __future__ import annotations

from ..ir.module import Instruction, Module, root_last
from .base import Note, Pass, PassResult


def _key(inst, canon):
    literal = None
    if inst.literal is not None:
        literal = (inst.literal.dtype.str, inst.literal.shape, inst.literal.tobytes())
    return (inst.opcode, str(inst.shape), tuple(id(canon[id(o)]) for o in inst.operands),
            repr(inst.attrs), literal)


class CSE(Pass):
    name = "cse"

    def run(self, module: Module) -> PassResult:
        canon = {}  # id(inst) -> the instruction that stands for it
        first = {}  # key -> first instruction with that key
        mapping = {}
        notes = []
        for inst in module.entry.instructions:
            if inst.opcode == "parameter":
                canon[id(inst)] = inst
                continue
            key = _key(inst, canon)
            if key in first:
                keep = first[key]
                canon[id(inst)] = keep
                mapping[inst] = keep
                notes.append(Note(f"replaced {inst.name} with {keep.name}: the same "
                                  f"{inst.opcode} of the same operands", "duplicate",
                                  (inst.name, keep.name)))
            else:
                first[key] = inst
                canon[id(inst)] = inst
        if not mapping:
            return PassResult(module, False)
        # Every use of a duplicate now uses its first copy; the duplicates go, all else stays
        # where it was (dead code is DCE's to remove and report).
        done: dict[int, Instruction] = {}
        out = []
        for inst in module.entry.instructions:
            ops = tuple(done[id(canon[id(o)])] for o in inst.operands)
            if inst in mapping:
                continue
            same = all(a is b for a, b in zip(ops, inst.operands))
            done[id(inst)] = inst if same else inst.replace(operands=ops)
            out.append(done[id(inst)])
        root = done[id(canon[id(module.entry.root)])]
        entry = root_last(module.entry.name, out, root)
        return PassResult(module.with_entry(entry), True, tuple(notes))
