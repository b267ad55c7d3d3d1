"""Partial statistics: a variance over the batch in one pass per chunk, for the partitioning
pass (`passes/partition.py`).

NumPy's `var` traces to a sum (the mean), then the sum of the squared deviations from that
mean (M2, the variance before its divide): two reductions over the batch, the second reading
the first's total, so a chunk is read twice and held until the total mean is known. Where
the pattern below matches, each chunk instead computes its own count, mean and M2 about its
own mean in one program, and the tree combine merges those partials with Chan, Golub and
LeVeque's parallel formula (what `dask.array`'s var does with its moments):

    n = na + nb    d = mean_b - mean_a    mean = mean_a + d nb / n
    M2 = M2_a + M2_b + d^2 na nb / n

Every term is a deviation from a mean, so a large mean (1e4 plus small noise) keeps its
digits, which the naive sum(x^2) - n mean^2 loses in float32.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable

import numpy as np

from ..ir.module import Computation, Instruction, Module, post_order
from ..ir.shape import Shape


@dataclass(frozen=True)
class Node:
    """One row of a pattern: the instruction bound to `name` has `opcode`, and its operands
    are `operands`, in order. An operand name with a row of its own is matched by that row,
    one without is bound to whatever is there, and a name used twice must be one instruction.
    `~name` looks through reshapes first (keepdims and NumPy's own mean add them)."""

    name: str
    opcode: str
    operands: tuple[str, ...]
    math: str


# M2 over the axes D, as NumPy's var and ((x - x.mean(axis)) ** 2).sum(axis) trace it. Checked
# beside the match (`_fits`): both reductions add from 0 over the same axes D, which hold the
# batch; the broadcast puts the mean back along D; count is the number of elements over D.
SQUARED_DEVIATIONS = (
    Node("m2",     "reduce",    ("square", "zero"), "M2 = sum over D of square"),
    Node("square", "multiply",  ("dev", "dev"),     "square = dev * dev"),
    Node("dev",    "subtract",  ("x", "spread"),    "dev = x - spread"),
    Node("spread", "broadcast", ("~mean",),         "spread = mean, repeated along D"),
    Node("mean",   "divide",    ("~sum", "count"),  "mean = sum / count"),
    Node("sum",    "reduce",    ("x", "zero2"),     "sum = sum over D of x"),
)


def match(rule: tuple[Node, ...], inst: Instruction,
          resolve: Callable[[Instruction], Instruction]) -> dict[str, Instruction] | None:
    """The names of `rule` bound to instructions, its first row to `inst`, or None. An operand
    is passed through `resolve` first (a kernel's parameter may stand for another kernel's
    sum); `raw.<name>` is bound to what the operand was before it."""
    rows = {n.name: n for n in rule}
    bound: dict[str, Instruction] = {}

    def bind(name: str, i: Instruction) -> bool:
        if name.startswith("~"):
            name = name[1:]
            while i.opcode == "reshape":
                i = i.operands[0]
        raw, i = i, resolve(i)
        if name in bound:
            return bound[name] is i
        bound[name], bound[f"raw.{name}"] = i, raw
        row = rows.get(name)
        if row is None:
            return True
        return (i.opcode == row.opcode and len(i.operands) == len(row.operands)
                and all(bind(n, o) for n, o in zip(row.operands, i.operands)))

    return bound if bind(rule[0].name, inst) else None


@dataclass(frozen=True)
class Statistics:
    """A sum of squared deviations (`m2`) computed per chunk about the chunk's own mean
    (`mean`, an output of the chunk's program beside it), `count` the constant that holds the
    chunk's element count (`per_row` elements a row of the batch), `local` the instructions
    that read the chunk's own sum (`sum`) rather than the total."""

    m2: str
    mean: str
    count: str
    per_row: int
    sum: str
    local: tuple[str, ...]


def _adds_from_zero(module: Module, r: Instruction) -> bool:
    """Whether `r` is a reduce of one value that adds, from 0."""
    if len(r.operands) != 2 or r.operands[1].opcode != "constant":
        return False
    comp = module.computation(r.attr("to_apply"))
    params = {id(p) for p in comp.parameters}
    return (comp.root.opcode == "add" and len(params) == 2
            and {id(o) for o in comp.root.operands} == params
            and not np.asarray(r.operands[1].literal).any())


def _scalar(i: Instruction):
    """The value of a scalar constant, or of a broadcast of one; None otherwise."""
    if i.opcode == "broadcast":
        i = i.operands[0]
    if i.opcode == "constant" and i.literal is not None and np.asarray(i.literal).ndim == 0:
        return np.asarray(i.literal).item()
    return None


def _fits(module: Module, b: dict[str, Instruction], batch_dim: int | None) -> bool:
    """The checks beside SQUARED_DEVIATIONS' rows, with the batch axis of `x` (None: not
    batched)."""
    m2, total, x = b["m2"], b["sum"], b["x"]
    axes = tuple(m2.attr("dimensions"))
    kept = tuple(a for a in range(len(x.dims)) if a not in axes)
    return (batch_dim is not None and batch_dim in axes and x.dtype.kind == "f"
            and tuple(total.attr("dimensions")) == axes
            and _adds_from_zero(module, m2) and _adds_from_zero(module, total)
            and tuple(b["spread"].attr("dimensions")) == kept and b["spread"].dims == x.dims
            and _scalar(b["count"]) == prod(x.dims[a] for a in axes))


def sums_elsewhere(module: Module, kernel: Instruction, comp: Computation) -> dict:
    """{a parameter of `comp`: a reduce of `comp`'s own making} where the kernel's operand is
    another kernel's sum (an add from 0) of an array that is also one of this kernel's
    operands: the variance's M2 in one kernel, its mean's sum in another (NumPy's
    var(axis=0)). This kernel can then take each chunk's sum itself."""
    out = {}
    params = comp.parameters
    for k, operand in enumerate(kernel.operands):
        index = 0
        if operand.opcode == "get-tuple-element":
            index, operand = operand.attr("index"), operand.operands[0]
        if operand.opcode != "fusion":
            continue
        root = module.computation(operand.attr("calls")).root
        r = root.operands[index] if root.opcode == "tuple" else root
        if (r.opcode != "reduce" or len(r.operands) != 2
                or r.operands[0].opcode != "parameter" or r.operands[1].opcode != "constant"):
            continue
        source = operand.operands[r.operands[0].parameter_number]
        m = next((n for n, o in enumerate(kernel.operands) if o is source), None)
        if m is None or k >= len(params) or m >= len(params):
            continue
        out[params[k]] = r.replace(operands=(params[m], r.operands[1]))
    return out


def per_chunk_statistics(module: Module, kernel: Instruction, comp: Computation,
                         batch_dim: Callable[[Instruction], int | None]
                         ) -> tuple[Computation, tuple[Statistics, ...]]:
    """`comp` with every sum of squared deviations over the batch taken about each chunk's
    own mean (its chain from the sum cloned, the total count replaced by a constant the chunk
    sets), and what each became; `comp` unchanged when none matches. `batch_dim(i)`: the
    axis of `i` that is batched, or None."""
    elsewhere = sums_elsewhere(module, kernel, comp)
    found = []
    for inst in comp.instructions:
        if inst.opcode == "reduce":
            b = match(SQUARED_DEVIATIONS, inst, lambda i: elsewhere.get(i, i))
            if b is not None and _fits(module, b, batch_dim(b["x"])):
                found.append(b)
    if not found:
        return comp, ()
    at = {id(b["m2"]): (k, b) for k, b in enumerate(found)}
    new: dict[int, Instruction] = {}
    out: list[Instruction] = []
    stats = []
    for inst in comp.instructions:
        if id(inst) in at:
            k, b = at[id(inst)]
            made, stat = _clone(b, k, new, batch_dim(b["x"]))
            out.extend(made)
            new[id(inst)] = made[-1]
            stats.append(stat)
            continue
        ops = tuple(new.get(id(o), o) for o in inst.operands)
        same = all(a is o for a, o in zip(ops, inst.operands))
        new[id(inst)] = inst if same else inst.replace(operands=ops)
        out.append(new[id(inst)])
    live = {id(i) for i in post_order([out[-1]])}
    kept = tuple(i for i in out if id(i) in live or i.opcode == "parameter")
    return Computation(comp.name, kept), tuple(stats)


def _clone(b: dict[str, Instruction], k: int, new: dict[int, Instruction],
           batch: int | None) -> tuple[list[Instruction], Statistics]:
    """The instructions that compute match `b`'s M2 about the chunk's own mean (`batch`: the
    batch axis of its x), the last one the new M2 (named as the old, so its users need no
    change), and its Statistics."""
    x = new.get(id(b["x"]), b["x"])
    made: list[Instruction] = []
    total = b["sum"]
    if b["raw.sum"] is not total:  # another kernel's sum: taken here, from this chunk
        zero = total.operands[1]
        zero = zero.replace(name=f"{zero.name}.chunk{k}")
        total = total.replace(name=f"{total.name}.chunk{k}", operands=(x, zero))
        made.extend((zero, total))
    else:
        total = new.get(id(total), total)
    dtype = b["mean"].dtype
    count = Instruction(f"{b['m2'].name}.count", "constant", Shape(dtype, ()),
                        literal=np.asarray(_scalar(b["count"]), dtype))
    made.append(count)
    local = [count.name]
    if b["count"].opcode == "broadcast":
        count = b["count"].replace(name=f"{b['count'].name}.chunk{k}", operands=(count,))
        made.append(count)
        local.append(count.name)
    clones: dict[int, Instruction] = {id(b["raw.sum"]): total, id(b["count"]): count}

    def clone(i: Instruction) -> Instruction:
        if id(i) not in clones:
            c = i.replace(name=f"{i.name}.chunk{k}", operands=tuple(clone(o) for o in i.operands))
            clones[id(i)] = c
            made.append(c)
            local.append(c.name)
        return clones[id(i)]

    mean = clone(b["spread"].operands[0])
    spread = b["spread"].replace(name=f"{b['spread'].name}.chunk{k}", operands=(mean,))
    dev = b["dev"].replace(name=f"{b['dev'].name}.chunk{k}", operands=(x, spread))
    square = b["square"].replace(name=f"{b['square'].name}.chunk{k}", operands=(dev, dev))
    zero = new.get(id(b["zero"]), b["zero"])
    m2 = b["m2"].replace(operands=(square, zero))
    made.extend((spread, dev, square, m2))
    per_row = prod(x.dims[a] for a in m2.attr("dimensions") if a != batch)
    return made, Statistics(m2.name, mean.name, f"{b['m2'].name}.count", per_row, total.name,
                            tuple(local))
