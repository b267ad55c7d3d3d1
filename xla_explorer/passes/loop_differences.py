"""How the steps of an unrolled loop may differ and still roll into one while
(passes/loop_rolling.py): by the scalar constants Python computed while tracing (`1 - 0.9 **
t`, `np.sin(0.05 * i)`), read in the body from a table at the loop's counter; and by where a
slice starts, when it moves by the same amount each step (`xs[k]`), read in the body with a
dynamic-slice at the counter.
"""
from __future__ import annotations

import numpy as np

from ..ir.module import Instruction, Module
from ..ir.structure import own_key

__all__ = ["alike", "own", "table_entry", "tables", "moving_slices", "what_differs"]


def table_entry(v: Instruction) -> tuple | None:
    """(what v makes of one scalar constant, that constant), for a scalar constant or a
    broadcast, convert or reshape of one (what tracing makes of a Python number); None for
    anything else."""
    chain = []
    while v.opcode != "constant":
        if v.opcode not in ("broadcast", "convert", "reshape") or len(v.operands) != 1:
            return None
        chain.append((v.opcode, str(v.shape), v.attrs))
        v = v.operands[0]
    if v.shape.rank != 0:
        return None
    return (tuple(chain), str(v.shape)), v


def alike(a: Instruction, b: Instruction) -> bool:
    """Whether two steps may read a and b in one place: the same made of two scalar
    constants (read from a table when the loop is rolled)."""
    ea, eb = table_entry(a), table_entry(b)
    return ea is not None and eb is not None and ea[0] == eb[0]


def own(module: Module, inst: Instruction) -> tuple:
    """`own_key`, but a slice by its sizes and strides, not where it starts: a step may slice
    at a place that moves with the counter (`xs[k]`, `moving_slices`)."""
    if inst.opcode == "slice":
        return "slice", str(inst.shape), tuple((b - a, c) for a, b, c in inst.attr("slice"))
    return own_key(module, inst)


def tables(sources: dict, steps: list[list[Instruction]]
           ) -> dict[tuple[int, int], list[Instruction]]:
    """(offset in the step, operand number) -> the value each step reads there, where a
    step reads a value from before the loop (`sources`, as loop rolling finds them) that
    is a constant changing from step to step (`alike`)."""
    out = {}
    for (r, q), (kind, _) in sources.items():
        if kind == "outside":
            values = [step[r].operands[q] for step in steps]
            if any(v is not values[0] for v in values):
                out[r, q] = values
    return out


def moving_slices(steps: list[list[Instruction]]) -> dict[int, tuple] | str:
    """Offset in the step -> (starts in the first step, how far they move each step, the
    sizes), for each slice whose place changes from step to step by the same amount
    (`xs[k]`); or a sentence saying why such a slice cannot be read at the counter."""
    out = {}
    once = "; xe.fori_loop(0, n, body, value) traces such a loop once, its counter a value"
    for r, inst in enumerate(steps[0]):
        if inst.opcode != "slice":
            continue
        specs = [step[r].attr("slice") for step in steps]
        if all(spec == specs[0] for spec in specs):
            continue
        if any(c != 1 for spec in specs for _, _, c in spec):
            return (f"{inst.name} takes every few elements, from a place that changes from "
                    "step to step" + once)
        starts = np.array([[a for a, _, _ in spec] for spec in specs], np.int64)
        delta = starts[1] - starts[0]
        if (starts != starts[0] + np.arange(len(specs))[:, None] * delta).any():
            return (f"{inst.name} slices at places that do not move by the same amount each "
                    "step" + once)
        out[r] = (tuple(map(int, starts[0])), tuple(map(int, delta)),
                  tuple(b - a for a, b, _ in specs[0]))
    return out


def what_differs(count: int, table_of: dict, moving: dict,
                 first: list[Instruction]) -> str:
    """What a rolled loop's note says of the constants it reads from tables and of the
    slices it takes at the counter."""
    said = ""
    n = len({tuple(map(id, values)) for values in table_of.values()})
    if n:
        which = "a constant that changes" if n == 1 else f"{n} constants that change"
        tables_of = "a table of" if n == 1 else "tables of"
        said += (f" The steps differ by {which} from step to step (computed in Python while "
                 f"tracing): the body reads {'it' if n == 1 else 'them'} from {tables_of} "
                 f"{count} values by the loop's counter.")
    if moving:
        names = ", ".join(first[r].operands[0].name for r in moving)
        said += (f" Each step slices {names} at a place that moves with the counter (as "
                 "xs[k] does): the body reads it with a dynamic-slice at the counter.")
    return said
