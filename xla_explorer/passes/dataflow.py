"""Dataflow: which buffers each entry instruction's value is made of.

An analysis of one computation, as XLA's HloDataflowAnalysis: every array an instruction
makes is a buffer, except that `tuple` and `get-tuple-element` only name arrays other
instructions made (they alias), and a tuple-shaped kernel makes one buffer per element.

It has a module of its own because several layers ask it and none should need another's
internals to do so: the scheduler (bytes live at each step), buffer assignment (live ranges,
in-place sharing), the code generator (which buffer each kernel reads and writes) and the
runtime (which instructions allocate).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.module import Computation, Instruction
from ..ir.ops import Group, in_group
from ..ir.shape import Shape, TupleShape

# Where an array sits in a (possibly nested) tuple value: `()` for the value itself when it is
# an array, `(1,)` for element 1 of a tuple, as XLA's ShapeIndex.
ShapeIndex = tuple[int, ...]


def is_kernel(inst: Instruction) -> bool:
    """Whether an entry instruction computes something (a fusion, a custom-call, or, in a module
    without fusion, any op): parameters and constants come from outside, and tuple /
    get-tuple-element only regroup values other instructions made."""
    return inst.opcode not in ("parameter", "constant") and not in_group(inst.opcode,
                                                                          Group.STRUCTURAL)


def leaf_indices(shape: Shape | TupleShape) -> list[ShapeIndex]:
    """The index of every array in a (possibly nested) tuple shape; `[()]` for an array."""
    if not shape.is_tuple:
        return [()]
    return [(i,) + rest for i, e in enumerate(shape.elements) for rest in leaf_indices(e)]


def subshape(shape: Shape | TupleShape, index: ShapeIndex) -> Shape:
    for i in index:
        shape = shape.elements[i]
    return shape


@dataclass(frozen=True)
class Dataflow:
    """Points-to sets of one computation: `points_to[name][index]` is the (defining
    instruction name, index) of the buffer holding that array of the instruction's value."""

    points_to: dict[str, dict[ShapeIndex, tuple[str, ShapeIndex]]]
    defined: dict[str, list[ShapeIndex]]  # instruction name -> indices of buffers it defines

    def used_by(self, inst: Instruction) -> list[tuple[str, ShapeIndex]]:
        """Buffers a kernel reads, one entry per operand array (an operand used twice counts
        twice, as XLA counts uses)."""
        return [b for o in inst.operands for b in self.points_to[o.name].values()]


def dataflow(comp: Computation) -> Dataflow:
    points_to: dict[str, dict[ShapeIndex, tuple[str, ShapeIndex]]] = {}
    defined: dict[str, list[ShapeIndex]] = {}
    for inst in comp.instructions:
        if inst.opcode == "tuple":
            points_to[inst.name] = {(i,) + idx: buf for i, o in enumerate(inst.operands)
                                    for idx, buf in points_to[o.name].items()}
        elif inst.opcode == "get-tuple-element":
            k = inst.attr("index")
            points_to[inst.name] = {idx[1:]: buf for idx, buf
                                    in points_to[inst.operands[0].name].items() if idx[0] == k}
        else:
            defined[inst.name] = leaf_indices(inst.shape)
            points_to[inst.name] = {idx: (inst.name, idx) for idx in defined[inst.name]}
    return Dataflow(points_to, defined)
