"""Partitioning: how each kernel's work splits over the chunks of a batch axis, for a target
that runs kernels per chunk (the dask backend), modelled on XLA's SPMD partitioner.

The arguments are split along their leading axis (the batch, as a data-parallel strategy
splits it); every other axis is kept whole. Each value of the program then has a `Split`:
batched along one of its axes (one block per chunk), replicated (one block, whole), or
partial (a reduction over the batch: one partial block per chunk, to be combined with the
reducer: the all-reduce of a distributed training step). The split is carried through every
instruction of every kernel, as sharding propagation does; an instruction that reads a
partial value waits for its combine, so a kernel splits into steps: the instructions before
a combine, run per chunk, then those after it. What cannot be split (an iota along the
batch, a slice of it) runs on the whole array after a rechunk, and the note says why. A
variance over the batch is the exception to waiting for a combine: each chunk takes its sum
of squared deviations about its own mean, and Chan's formula merges them (`moments.py`).

The module is not changed: the plan is the stage's artifact (`Partitioning`) and its notes,
one per kernel; the target compiles it from the module and the chunks again
(`partition`), as a backend reads XLA's sharding annotations.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod

import numpy as np

from ..errors import XlaExplorerError
from ..ir.module import Computation, Instruction, Module, called_by
from ..ir.ops import elementwise_like
from ..ir.shape import Shape, TupleShape
from ..passes.dataflow import is_kernel
from .base import Note, Pass, PassResult
from .moments import Statistics, per_chunk_statistics

# A reduction's combine: the reducer's op, for the reducers a combine can apply to partials.
COMBINABLE = ("add", "multiply", "maximum", "minimum", "and", "or")
# The tree combine's fan-in (as dask.array.reduction's split_every).
SPLIT_EVERY = 4


@dataclass(frozen=True)
class Split:
    """How one array value lies across the chunks: "batched" along axis `dim`, "replicated",
    "partial" (each chunk's share of a reduction, combined by `reducer`; "moments": a sum of
    squared deviations, merged with its chunk's count and mean by Chan's formula) or "local"
    (each chunk's own value, never combined: a chunk's mean, for its M2's merge)."""

    kind: str
    dim: int = -1
    reducer: str = ""

    def __str__(self) -> str:
        if self.kind == "batched":
            return f"batched on axis {self.dim}"
        return f"partial ({self.reducer})" if self.kind == "partial" else self.kind


REPLICATED = Split("replicated")
LOCAL = Split("local")


@dataclass(frozen=True)
class PartitionDecision(Note):
    """How one kernel's work splits: its `mark` (per-chunk, partial-reduce, partial-reduce,
    combine, replicated or rechunk, also its `rule`) and `reason`, as fusion's decisions
    give theirs."""

    kernel: str = ""
    mark: str = ""

    @property
    def reason(self) -> str:
        return self.message


class Unsplittable(XlaExplorerError):
    """An instruction whose work cannot be split over the chunks; the message says why. The
    pass catches it and plans a rechunk instead: it never reaches the user."""


@dataclass(frozen=True)
class Step:
    """Instructions of one kernel run together: per chunk when any is batched, else once.
    `computation` has whole shapes; its parameters are `inputs` (names of the kernel's
    values, `operand.N` for the kernel's N-th operand) and its root a tuple of `outputs`."""

    computation: Computation
    computations: tuple[Computation, ...]  # the reducers it calls
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    splits: dict[str, Split]  # every instruction's split (partial operands as combined)
    per_chunk: bool
    statistics: tuple[Statistics, ...] = ()  # M2s taken about each chunk's own mean


@dataclass(frozen=True)
class KernelPlan:
    """One kernel's plan: its mark (per-chunk, partial-reduce, combine, rechunk or
    replicated), the reason, its steps, and the split of each of its results."""

    kernel: str
    mark: str
    reason: str
    steps: tuple[Step, ...]
    results: tuple[Split, ...]
    roots: tuple[str, ...]  # the values it returns, by their names in its steps
    rechunk: bool = False  # run on the whole arrays (its batched operands made one chunk)
    tasks: int = 0
    moved_bytes: int = 0  # between workers, estimated from the chunks
    kernel_bytes: int = 0  # what the kernel reads and writes
    statistics: tuple[str, ...] = ()  # its variances' M2s, by partial statistics


@dataclass(frozen=True)
class Partitioning:
    """The plan: the batch's chunks (None: nothing split), each parameter's split, each
    kernel's plan, the Dask graph's task count and the bytes estimated to move between
    workers."""

    chunks: tuple[int, ...] | None
    parameters: tuple[Split, ...]
    kernels: dict[str, KernelPlan] = field(default_factory=dict)
    tasks: int = 0
    moved_bytes: int = 0


def _reducer_op(module: Module, inst: Instruction) -> str:
    comp = module.computation(inst.attr("to_apply"))
    root = comp.root
    params = {id(p) for p in comp.parameters}
    if (len(comp.parameters) == 2 and root.opcode in COMBINABLE
            and {id(o) for o in root.operands} == params):
        init = inst.operands[1]
        if init.opcode != "constant" or not _is_identity(root.opcode, init.literal):
            raise Unsplittable(f"{inst.name} starts its reduction from {init.name}, not the "
                               f"{root.opcode}'s identity: every chunk's partial would count it")
        return root.opcode
    raise Unsplittable(f"{inst.name} reduces over the batch with a reducer ({comp.name}) that "
                       "is not one op of its two arguments, so its partials cannot be combined")


def _is_identity(op: str, literal) -> bool:
    """Whether a reduction's initial value leaves every value as it is under `op`."""
    v = np.asarray(literal).reshape(())
    if op in ("add", "or"):
        return not v
    if op in ("multiply", "and"):
        return bool(v == 1)
    lowest = op == "maximum"
    if v.dtype.kind == "f":
        return bool(v == (-np.inf if lowest else np.inf))
    if v.dtype.kind == "b":
        return bool(v == (not lowest))
    info = np.iinfo(v.dtype)
    return bool(v == (info.min if lowest else info.max))


def _batched(split: Split) -> bool:
    return split.kind == "batched"


def propagate(module: Module, inst: Instruction, ops: list[Split]) -> Split:
    """The split of `inst`'s result, given its operands' (partial ones already combined)."""
    batched = [(n, s) for n, s in enumerate(ops) if _batched(s)]
    if not batched:
        return REPLICATED
    op = inst.opcode
    dims = {s.dim for _, s in batched}
    if op in ("parameter", "constant", "iota"):
        return REPLICATED
    if elementwise_like(op) or op == "copy":
        if len(dims) > 1:
            raise Unsplittable(f"{inst.name} ({op}) reads operands batched on different axes")
        for o, s in zip(inst.operands, ops):
            if not _batched(s) and o.dims == inst.dims and inst.dims:
                raise Unsplittable(f"{inst.name} ({op}) reads {o.name}, an array of the whole "
                                   "batch that is not split with the others")
        return batched[0][1]
    (n, s), = batched if len(batched) == 1 else (batched[0],)
    d = s.dim
    operand = inst.operands[n]
    if op == "broadcast":
        return Split("batched", inst.attr("dimensions")[d])
    if op == "transpose":
        return Split("batched", tuple(inst.attr("dimensions")).index(d))
    if op == "reshape":
        before, size = prod(operand.dims[:d]), operand.dims[d]
        for k in range(len(inst.dims)):
            if prod(inst.dims[:k]) == before and inst.dims[k] == size:
                return Split("batched", k)
        raise Unsplittable(f"{inst.name} reshapes the batch axis into others")
    if op == "reduce":
        k = len(inst.operands) // 2  # the values reduced, then their initial values
        if any(_batched(t) for t in ops[k:]) or not all(t == s for t in ops[:k]):
            raise Unsplittable(f"{inst.name} reduces values split in different ways")
        axes = inst.attr("dimensions")
        if d not in axes:
            return Split("batched", d - sum(a < d for a in axes))
        if k > 1:
            raise Unsplittable(f"{inst.name} reduces {k} values together over the batch (an "
                               "argmax): their partials would need a combine of their own")
        return Split("partial", reducer=_reducer_op(module, inst))
    if op == "get-tuple-element":
        return s
    if op == "dot":
        return _dot(inst, ops)
    if op == "slice":
        start, limit, stride = inst.attr("slice")[d]
        if (start, limit, stride) == (0, operand.dims[d], 1):
            return s
        raise Unsplittable(f"{inst.name} slices the batch axis")
    if op in ("concatenate", "reverse"):
        if len(dims) > 1 or d in inst.attr("dimensions") or len(batched) < len(ops):
            raise Unsplittable(f"{inst.name} ({op}) works along the batch axis")
        return s
    if op == "pad" and n == 0:
        if tuple(inst.attr("padding")[d][:2]) == (0, 0) and not any(inst.attr("padding")[d][2:]):
            return s
        raise Unsplittable(f"{inst.name} pads the batch axis")
    raise Unsplittable(f"{inst.name} ({op}) is not split over chunks")


def _dot(inst: Instruction, ops: list[Split]) -> Split:
    lc, rc = inst.attr("lhs_contracting_dims", ()), inst.attr("rhs_contracting_dims", ())
    lb, rb = inst.attr("lhs_batch_dims", ()), inst.attr("rhs_batch_dims", ())
    lhs, rhs = ops
    lfree = [a for a in range(len(inst.operands[0].dims)) if a not in lc and a not in lb]
    rfree = [a for a in range(len(inst.operands[1].dims)) if a not in rc and a not in rb]
    if _batched(lhs) and _batched(rhs):
        if lhs.dim in lc and rhs.dim in rc and lc.index(lhs.dim) == rc.index(rhs.dim):
            return Split("partial", reducer="add")  # per-chunk products, then their sum
        if lhs.dim in lb and rhs.dim in rb and lb.index(lhs.dim) == rb.index(rhs.dim):
            return Split("batched", lb.index(lhs.dim))
        raise Unsplittable(f"{inst.name} multiplies operands batched on axes that do not meet")
    if _batched(lhs) and lhs.dim in lfree:
        return Split("batched", len(lb) + lfree.index(lhs.dim))
    if _batched(rhs) and rhs.dim in rfree:
        return Split("batched", len(lb) + len(lfree) + rfree.index(rhs.dim))
    raise Unsplittable(f"{inst.name} contracts the batch axis of one operand with a whole one")


def _as_computation(inst: Instruction) -> Computation:
    """A lone op (not a fusion) as a computation of its own: a parameter for each operand
    (numbered as the operand), a constant one copied in (a reduction's initial value, which
    the plan reads)."""
    operands = tuple(o if o.opcode == "constant" and not o.dims else
                     Instruction(f"param_{n}", "parameter", o.shape, parameter_number=n)
                     for n, o in enumerate(inst.operands))
    inside = tuple(dict.fromkeys(operands))  # a constant used twice is there once
    return Computation(f"{inst.name}.body", inside + (inst.replace(operands=operands),))


def _tuple_rooted(comp: Computation) -> Computation:
    """`comp` with a root that is a tuple instruction where its root makes a tuple of
    values otherwise (a sort with its indices, a variadic reduce): each value is then a
    root of its own, that the plan splits and the runtime returns."""
    root = comp.root
    if not root.shape.is_tuple or root.opcode == "tuple":
        return comp
    parts = tuple(Instruction(f"{root.name}.{k}", "get-tuple-element", e, (root,),
                              (("index", k),)) for k, e in enumerate(root.shape.elements))
    top = Instruction(f"{root.name}.values", "tuple", root.shape, parts)
    return Computation(comp.name, comp.instructions + parts + (top,))


def plan_kernel(module: Module, inst: Instruction, operand_splits: list) -> tuple:
    """(steps, result splits, result names) of one kernel; Unsplittable when it cannot be
    split."""
    comp = _tuple_rooted(module.computation(inst.attr("calls")) if inst.opcode == "fusion"
                         else _as_computation(inst))
    splits, level, _ = _propagate_all(module, inst, comp, operand_splits, ())
    # A variance over the batch: each chunk's M2 about its own mean (passes/moments.py).
    comp, stats = per_chunk_statistics(
        module, inst, comp, lambda i: splits[i.name].dim if i.name in splits
        and _batched(splits[i.name]) else None)
    if stats:
        splits, level, _ = _propagate_all(module, inst, comp, operand_splits, stats)
    roots = list(comp.root.operands) if comp.root.opcode == "tuple" else [comp.root]
    steps = []
    for k in range(max(level.values(), default=0) + 1):
        members = [i for i in comp.instructions if level.get(i.name) == k
                   and i.opcode != "parameter"]
        if not members:
            continue
        steps.append(_step(module, comp, members, splits, level, k, roots, stats))
    return tuple(steps), tuple(splits[r.name] for r in roots), tuple(r.name for r in roots)


def _propagate_all(module, inst, comp, operand_splits, stats) -> tuple:
    """(splits, levels, the broadcasts made per chunk) of `comp`'s instructions."""
    # Broadcasts made per chunk (`_per_chunk_broadcasts`), found by propagating until no
    # new one turns up, so that every user of one sees it batched from the start.
    forced: dict[str, Split] = {}
    while True:
        splits, level, more = _propagate(module, inst, comp, operand_splits, forced, stats)
        if not more:
            return splits, level, forced
        forced.update(more)


def _propagate(module, inst, comp, operand_splits, forced, stats) -> tuple:
    """Every instruction's split and combine level in `comp`, and broadcasts to make per
    chunk that `forced` does not hold yet. `stats`' local instructions read their chunk's
    own sum, at its level; their M2 is a partial merged by Chan's formula."""
    splits: dict[str, Split] = {}
    level: dict[str, int] = {}
    local = {n: s.sum for s in stats for n in s.local}
    moments = {s.m2 for s in stats}
    for i in comp.instructions:
        if i.name in local:
            splits[i.name], level[i.name] = LOCAL, level[local[i.name]]
            continue
        if i.opcode == "parameter":
            split = operand_splits[i.parameter_number]
            if isinstance(split, tuple):
                raise Unsplittable(f"{inst.name} takes a tuple")
            splits[i.name], level[i.name] = split, 0
            continue
        if i.opcode == "tuple" and i is comp.root:
            continue
        ops = [splits[o.name] for o in i.operands]
        # A partial operand is read after its combine: one step later, as a whole value.
        level[i.name] = max([level[o.name] + (s.kind == "partial")
                             for o, s in zip(i.operands, ops)], default=0)
        more = _per_chunk_broadcasts(i, ops, splits, forced)
        if more:  # propagate again from the start, these made per chunk
            return splits, level, more
        splits[i.name] = forced.get(i.name) or propagate(
            module, i, [REPLICATED if s.kind == "partial" else s for s in ops])
        if i.name in moments:
            splits[i.name] = replace(splits[i.name], reducer="moments")
    return splits, level, {}


def _per_chunk_broadcasts(inst: Instruction, ops: list[Split], splits: dict[str, Split],
                          forced: dict[str, Split]) -> dict[str, Split]:
    """A whole value broadcast along the batch axis (x - mean: the mean made an array of
    the batch's shape), or an iota along another axis (argmax's indices), read beside
    batched values of its shape, is made per chunk instead, at the chunk's shape: it does not
    vary along the batch axis, so every chunk's part of it is alike."""
    batched = [(o, s) for o, s in zip(inst.operands, ops) if _batched(s)]
    if not batched or not (elementwise_like(inst.opcode) or inst.opcode == "reduce"):
        return {}
    like, split = batched[0]
    d = split.dim
    return {o.name: split for o, s in zip(inst.operands, ops)
            if not _batched(s) and o.dims == like.dims and o.name not in forced
            and ((o.opcode == "broadcast" and d not in o.attr("dimensions")
                  and not _batched(splits[o.operands[0].name]))
                 or (o.opcode == "iota" and o.attr("iota_dimension") != d))}


def _step(module, comp, members, splits, level, k, roots, stats) -> Step:
    """The instructions at combine level `k` as a computation of their own."""
    names = {i.name for i in members}
    inputs: list[Instruction] = []
    for i in members:
        for o in i.operands:
            if o.name not in names and o not in inputs:
                inputs.append(o)
    later = [i for i in comp.instructions if level.get(i.name, 0) > k]
    means = {s.mean for s in stats}  # a chunk's mean goes to its M2's merge
    outputs = [i for i in members if i in roots or i.name in means
               or any(o is i for u in later for o in u.operands)]
    params = {o.name: Instruction(f"in.{n}", "parameter", o.shape, parameter_number=n)
              for n, o in enumerate(inputs)}
    rebuilt: dict[str, Instruction] = dict(params)
    body = []
    for i in members:
        new = i.replace(operands=tuple(rebuilt[o.name] for o in i.operands))
        rebuilt[i.name] = new
        body.append(new)
    root = Instruction("step.root", "tuple", TupleShape(tuple(o.shape for o in outputs)),
                       tuple(rebuilt[o.name] for o in outputs))
    step_splits = {f"in.{n}": (REPLICATED if splits[o.name].kind == "partial"
                               else splits[o.name]) for n, o in enumerate(inputs)}
    step_splits.update((i.name, splits[i.name]) for i in members)
    computation = Computation(f"{comp.name}.step{k}", tuple(params.values()) + tuple(body)
                              + (root,))
    input_names = tuple(f"operand.{o.parameter_number}" if o.opcode == "parameter"
                        and o in comp.parameters else o.name for o in inputs)
    return Step(computation, called_by(module, body), input_names,
                tuple(o.name for o in outputs), step_splits,
                any(_batched(s) for s in step_splits.values()),
                tuple(s for s in stats if s.m2 in names))


def chunk_module(step: Step, rows: int, name: str) -> Module:
    """`step` as a module of its own with every batched axis `rows` long: what one chunk
    runs, compiled by the cpu backend from its text."""
    rebuilt: dict[str, Instruction] = {}
    out = []
    counts = {s.count: s.per_row * rows for s in step.statistics}
    for i in step.computation.instructions:
        split = step.splits.get(i.name)
        shape = i.shape
        attrs = i.attrs
        if i.name in counts:  # a chunk's mean divides by its own count
            i = replace(i, literal=np.asarray(counts[i.name], i.dtype))
        if split is not None and _batched(split):
            shape = _rows(i.shape, split.dim, rows)
            if i.opcode == "slice":
                spec = list(i.attr("slice"))
                spec[split.dim] = (0, rows, 1)
                attrs = tuple((k, tuple(spec) if k == "slice" else v) for k, v in attrs)
        operands = tuple(rebuilt[o.name] for o in i.operands)
        if i.opcode == "tuple":
            shape = TupleShape(tuple(o.shape for o in operands))
        new = replace(i, shape=shape, operands=operands, attrs=attrs)
        rebuilt[i.name] = new
        out.append(new)
    return Module(name, Computation(f"{name}.entry", tuple(out)), step.computations)


def _rows(shape, dim: int, rows: int):
    """`shape` (each element of a tuple) with axis `dim` `rows` long."""
    if shape.is_tuple:
        return TupleShape(tuple(_rows(e, dim, rows) for e in shape.elements))
    dims = list(shape.dims)
    dims[dim] = rows
    return Shape(shape.dtype, tuple(dims))


class Partition(Pass):
    """Decides, per kernel, how its work splits over the chunks of the batch axis
    (`chunks`: the leading axis's chunk lengths, None when nothing is split), and why."""

    name = "partitioning"

    def __init__(self, chunks: tuple[int, ...] | None, parameters: tuple[Split, ...]):
        self.chunks, self.parameters = chunks, parameters

    def run(self, module: Module) -> PassResult:
        plan = partition(module, self.chunks, self.parameters)
        notes: list[Note] = [PartitionDecision(
            f"{p.kernel}: {p.mark}. {p.reason}. {p.tasks} tasks; the kernel reads and writes "
            f"{p.kernel_bytes:,} bytes, about {p.moved_bytes:,} of them between workers",
            rule=p.mark, instructions=(p.kernel,), kernel=p.kernel, mark=p.mark)
            for p in plan.kernels.values()]
        notes += [Note(
            f"{m2}: one pass per chunk, partial statistics (count, mean, M2) combined by "
            f"Chan's formula. A variance's sum of squared deviations over the batch (in "
            f"{p.kernel}): each chunk takes it about its own mean, so no chunk waits for the "
            "total mean or is read again, and every term stays a deviation from a mean (the "
            "naive sum of squares minus n mean^2 would lose a large mean's digits)",
            rule="partial-statistics", instructions=(m2, p.kernel))
            for p in plan.kernels.values() for m2 in p.statistics]
        n = len(self.chunks or (1,))
        notes.append(Note(
            f"Dask graph: {plan.tasks} tasks over {n} chunk{'s' * (n > 1)}, besides the "
            f"arguments' own; about {plan.moved_bytes:,} bytes moved between workers "
            "(estimated from the chunks: partials to their combine, whole values to every "
            f"chunk's task, rechunks), against {sum(p.kernel_bytes for p in plan.kernels.values()):,}"
            " bytes the kernels read and write", rule="graph"))
        return PassResult(module, False, tuple(notes), plan)


def partition(module: Module, chunks: tuple[int, ...] | None,
              parameters: tuple[Split, ...]) -> Partitioning:
    """The plan for `module` (fused) whose parameters lie as `parameters` say."""
    n = len(chunks) if chunks else 1
    env: dict[str, object] = {}
    for p in module.entry.parameters:
        env[p.name] = parameters[p.parameter_number] if chunks else REPLICATED
    kernels: dict[str, KernelPlan] = {}
    constants = 0
    for inst in module.entry.instructions:
        if inst.opcode == "parameter":
            continue
        if inst.opcode == "get-tuple-element":
            env[inst.name] = env[inst.operands[0].name][inst.attr("index")]  # type: ignore
            continue
        if inst.opcode == "tuple":
            env[inst.name] = tuple(env[o.name] for o in inst.operands)
            continue
        if not is_kernel(inst) and not inst.operands:
            env[inst.name] = REPLICATED  # a constant: one block of its own
            constants += 1
            continue
        ops = [env[o.name] for o in inst.operands]
        plan = _kernel_plan(module, inst, ops, n)
        kernels[inst.name] = plan
        results = [REPLICATED if r.kind == "partial" else r for r in plan.results]
        env[inst.name] = tuple(results) if inst.shape.is_tuple else results[0]
    return Partitioning(chunks, parameters, kernels,
                        constants + sum(p.tasks for p in kernels.values()),
                        sum(p.moved_bytes for p in kernels.values()))


def _nbytes(shape) -> int:
    if shape.is_tuple:
        return sum(_nbytes(e) for e in shape.elements)
    return shape.nbytes


def _kernel_plan(module: Module, inst: Instruction, ops: list, n: int) -> KernelPlan:
    kernel_bytes = _nbytes(inst.shape) + sum(_nbytes(o.shape) for o in inst.operands)
    try:
        steps, results, roots = plan_kernel(module, inst, ops)
    except Unsplittable as e:
        batched = [o for o, s in zip(inst.operands, ops) if isinstance(s, Split) and _batched(s)]
        steps, results, roots = plan_kernel(module, inst, [REPLICATED] * len(ops))
        gathered = len(batched) if n > 1 else 0
        moved = sum(_nbytes(o.shape) for o in batched) if n > 1 else 0
        return KernelPlan(inst.name, "rechunk", f"{e}: its batched operands are rechunked "
                          "to one chunk and it runs once on the whole arrays", steps, results,
                          roots, True, gathered + sum(step_tasks(st, 1) for st in steps), moved,
                          kernel_bytes)
    tasks = sum(step_tasks(st, n if st.per_chunk else 1) for st in steps)
    moved = 0
    for st in steps:
        if not st.per_chunk:
            continue
        # A whole input goes to every chunk's task; a partial output to its combine.
        moved += sum(_nbytes(i.shape) for i in st.computation.parameters
                     if st.splits[i.name] == REPLICATED and i.dims) * (n - 1)
        moved += sum(_nbytes(st.computation.get(o).shape) for o in st.outputs
                     if st.splits[o].kind in ("partial", "local")) * (n - 1)
    partials = [st.splits[o] for st in steps for o in st.outputs
                if st.splits[o].kind == "partial"]
    reducers = sorted({"Chan's formula on (count, mean, M2)" if p.reducer == "moments"
                       else p.reducer for p in partials})
    combine = (f"a tree combine ({', '.join(reducers)}, fan-in "
               f"{SPLIT_EVERY}) of the {n} partials gives the total: the all-reduce")
    if not any(st.per_chunk for st in steps):
        mark, reason = "replicated", "every operand is whole (no batch axis): it runs once"
    elif partials and len(steps) > 1:
        mark = "partial-reduce, combine"
        reason = (f"{len(steps)} steps: each chunk reduces its rows to a partial, {combine}; "
                  "what reads the total runs after it"
                  + (", per chunk again" if steps[-1].per_chunk else ", once"))
    elif partials:
        mark = "partial-reduce"
        reason = f"it reduces over the batch axis: each chunk computes its partial, then {combine}"
    else:
        mark = "per-chunk"
        split = ", ".join(str(r) for r in results)
        reason = f"each chunk runs the kernel on its own rows (result {split})"
    return KernelPlan(inst.name, mark, reason, steps, results, roots, False, tasks, moved,
                      kernel_bytes, tuple(t.m2 for st in steps for t in st.statistics))


def step_tasks(step: Step, n: int) -> int:
    """The tasks one step adds to the Dask graph over `n` chunks (1: run once), as
    runtime/dask.py makes them: a run per chunk, then per output a getter per block it has,
    or a combine tree and its final block."""
    tasks = n
    for o in step.outputs:
        split = step.splits[o]
        if split.kind == "local":  # read by its M2's merge, no task of its own
            continue
        if split.kind == "partial" and n > 1:
            tasks += _tree_tasks(n) + 1
        else:
            tasks += n if split.kind == "batched" else 1
    return tasks


def _tree_tasks(n: int) -> int:
    """Tasks of a tree combine of n partials with fan-in SPLIT_EVERY."""
    tasks = 0
    while n > 1:
        n = -(-n // SPLIT_EVERY)
        tasks += n
    return tasks
