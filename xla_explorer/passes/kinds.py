"""What kind of kernel an instruction runs as, and the record of a fusion decision.

The fusion passes write these facts into the module (a fusion's `kind`, the row schedule's
`backend_config`) and into their notes (`Decision`); the code generator, the runtime and the
viewers read them back. They live here, in a module with no pass logic, so that writers and
readers share one definition of each and no reader imports a pass, or its private names, to
ask.

The element-wise rule itself is the op table's, `ir.ops.elementwise_like`: an op whose output
element i reads only its operands' elements i. The predicates here build on it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

from ..ir.library import is_library_call
from ..ir.module import Instruction
from ..ir.ops import Group, elementwise_like, in_group
from .base import Note

# The backend_config marking a row fusion: a kInput fusion the code generator runs row by row
# (softmax, layernorm). XLA keeps such backend-specific choices in backend_config too.
ROW_CONFIG = '{"schedule":"row"}'


@dataclass(frozen=True)
class Decision(Note):
    """A fusion decision: `reason` says why it was taken or refused, in a student's words."""

    producer: str = ""
    consumer: str = ""
    fused: bool = False
    pass_name: str = "fusion"

    @property
    def reason(self) -> str:
        return self.message


def is_row_fusion(inst: Instruction) -> bool:
    """Whether inst is a fusion that runs row by row: its backend_config asks for the row
    schedule. Read as JSON, so that HLO text spaced differently by hand still counts."""
    if inst.opcode != "fusion":
        return False
    config = inst.attr("backend_config")
    if config == ROW_CONFIG:
        return True
    try:
        return json.loads(config).get("schedule") == "row"
    except (TypeError, ValueError, AttributeError):  # absent, not JSON, or not an object
        return False


def kind_of(members: Iterable[Instruction], row: bool = False) -> str:
    """The kind, in XLA's names, of a kernel computing `members`: kOutput with a dot (BLAS
    writes its result, an element-wise epilogue follows), kInput with a reduction or when it
    runs row by row (its loop is over the reduction's input), else kLoop (one loop over the
    output). A reduce-window is kLoop, as in XLA: each output element runs its own window."""
    opcodes = [m.opcode for m in members]
    if any(in_group(op, Group.DOT) for op in opcodes):
        return "kOutput"
    if row or "reduce" in opcodes:
        return "kInput"
    return "kLoop"


def kernel_kind(inst: Instruction) -> str:
    """The kind of the kernel an entry instruction runs as: a fusion's own `kind`, and for an
    op that fused with nothing, the kind a fusion of it alone would have."""
    if inst.opcode == "fusion":
        return str(inst.attr("kind"))
    if inst.opcode == "while":
        return "while"  # a loop kernel calling its body's program (codegen/cpu/while_loop.py)
    if is_library_call(inst):
        return "kCustom"  # a library routine's kernel: XLA's kind for its library calls
    return kind_of([inst])


# -- row kernels -------------------------------------------------------------------------------
# Row fusion decides with these which values may join a row kernel, and the code generator
# checks with the same ones that a kernel can be emitted row by row.


def row_reduce_space(inst: Instruction):
    """(leading dims, trailing dims) for a reduce over the trailing axes of its operand (as
    listed, in order), else None: the rows a row kernel holding it runs over."""
    if inst.opcode != "reduce" or inst.shape.is_tuple:
        return None
    x = inst.operands[0].dims
    dims = tuple(inst.attr("dimensions"))
    k = len(x) - len(dims)
    if dims != tuple(range(k, len(x))) or not dims:
        return None
    return x[:k], x[k:]


def fits_rows(inst: Instruction, lead, trail) -> bool:
    """Whether inst can run inside a row kernel over rows `lead` of `trail` elements: it is
    computed at the current row, whole (`lead + trail`), per row (`lead`, or with the row's
    axes kept as 1s), or as a scalar."""
    full, per_row, kept = lead + trail, lead, lead + (1,) * len(trail)
    if inst.opcode == "reduce":
        return row_reduce_space(inst) == (lead, trail)
    if inst.shape.is_tuple:
        return False
    shape = inst.dims
    if inst.opcode == "broadcast":
        src, mapped = inst.operands[0], tuple(inst.attr("dimensions"))
        if shape != full:
            return shape in (per_row, kept, ())
        if src.dims in (per_row, kept) and mapped[:len(lead)] == tuple(range(len(lead))):
            return True  # a per-row value spread along its row
        # A row-independent input (a scalar, or a vector along the trailing axes) is fine.
        return all(d >= len(lead) for d in mapped) or not src.dims
    if inst.opcode == "reshape":
        return {shape, inst.operands[0].dims} <= {per_row, kept}
    if elementwise_like(inst.opcode) or inst.opcode in ("constant", "iota"):
        return shape in (full, per_row, kept, ())
    return False
