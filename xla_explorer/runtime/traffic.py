"""Bytes moved to and from memory, COMPUTED (never measured): eager op by op against fused.

The quantity fusion exists to save, the same on every machine and every backend:

  fused   each kernel of the compiled module (a fusion, or an op that fused with nothing)
          reads each array it takes once (a parameter, a constant, a temporary of the buffer
          assignment) and writes each array it makes once. A value made and used inside a
          fusion never touches memory.
  eager   the program before fusion, one op at a time as NumPy runs it: each op reads its
          operands and writes its result. Ops NumPy makes as views (reshape, broadcast,
          transpose, slice, ...) move nothing; an op reading a view reads the bytes the view
          stands on (a broadcast row is read once, not once per row).

Caches are not modelled: a kernel that reads an array twice (a row's second pass) counts it
once, as if the row stayed in cache or shared memory, which is what the kernels are written
to do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.module import Instruction, Module
from ..passes.dataflow import is_kernel
from ..viz.format import byte_count

# Ops NumPy evaluates as views of their operand: no bytes move when they run.
VIEW_OPS = frozenset(["reshape", "bitcast", "broadcast", "transpose", "slice", "reverse",
                      "get-tuple-element", "tuple"])


@dataclass(frozen=True)
class Moved:
    name: str
    read_bytes: int
    write_bytes: int

    def to_dict(self) -> dict:
        return {"name": self.name, "read_bytes": self.read_bytes,
                "write_bytes": self.write_bytes}


@dataclass(frozen=True)
class Traffic:
    """Bytes moved by the eager program (`eager`, per op) and the fused one (`fused`, per
    kernel). `to_dict()` is the explorer's "traffic" payload."""

    eager: tuple[Moved, ...]
    fused: tuple[Moved, ...]
    computed: bool = field(default=True)

    @property
    def eager_bytes(self) -> int:
        return sum(m.read_bytes + m.write_bytes for m in self.eager)

    @property
    def fused_bytes(self) -> int:
        return sum(m.read_bytes + m.write_bytes for m in self.fused)

    def to_dict(self) -> dict:
        def side(items, key):
            return {"read_bytes": sum(m.read_bytes for m in items),
                    "write_bytes": sum(m.write_bytes for m in items),
                    key: [m.to_dict() for m in items]}

        return {"computed": True, "eager": side(self.eager, "ops"),
                "fused": side(self.fused, "kernels")}

    def table(self) -> str:
        def count(n, noun):
            return f"{n} {noun}" + ("s" if n != 1 else "")

        lines = [f"bytes moved, computed: eager {byte_count(self.eager_bytes)} in "
                 f"{count(len(self.eager), 'op')}, fused {byte_count(self.fused_bytes)} in "
                 f"{count(len(self.fused), 'kernel')}"]
        for m in self.fused:
            lines.append(f"  {m.name:<32} read {byte_count(m.read_bytes, 12)}  "
                         f"write {byte_count(m.write_bytes, 12)}")
        return "\n".join(lines)


def _nbytes(inst: Instruction) -> int:
    shape = inst.shape
    if shape.is_tuple:
        return sum(_nbytes_shape(e) for e in shape.elements)
    return _nbytes_shape(shape)


def _nbytes_shape(shape) -> int:
    if shape.is_tuple:
        return sum(_nbytes_shape(e) for e in shape.elements)
    return shape.nbytes


def _stands_on(inst: Instruction) -> int:
    """Bytes a read of `inst` touches in eager NumPy: a view reads what it is a view of."""
    if inst.opcode in ("broadcast", "reshape", "bitcast", "transpose"):
        return min(_nbytes(inst), _stands_on(inst.operands[0]))
    return _nbytes(inst)


def _distinct(operands):
    seen, out = set(), []
    for o in operands:
        if id(o) not in seen:
            seen.add(id(o))
            out.append(o)
    return out


def fused_traffic(module: Module) -> tuple[Moved, ...]:
    """Per kernel of the compiled module: the arrays it reads and the arrays it writes."""
    out = []
    for inst in module.entry.instructions:
        if not is_kernel(inst):
            continue
        # a get-tuple-element operand is one array of a kernel's tuple: its own bytes
        reads = sum(_nbytes(o) for o in _distinct(inst.operands))
        out.append(Moved(inst.name, reads, _nbytes(inst)))
    return tuple(out)


def eager_traffic(module: Module) -> tuple[Moved, ...]:
    """Per op of the program before fusion, run one at a time as NumPy runs it."""
    out = []
    for inst in module.entry.instructions:
        if not is_kernel(inst) or inst.opcode in VIEW_OPS:
            continue
        reads = sum(_stands_on(o) for o in _distinct(inst.operands))
        out.append(Moved(inst.name, reads, _nbytes(inst)))
    return tuple(out)


def traffic(eager_module: Module, fused_module: Module) -> Traffic:
    return Traffic(eager_traffic(eager_module), fused_traffic(fused_module))
