"""Auto-clustered programs: compiled clusters, with eager NumPy between them.

This is how TensorFlow runs a graph that `--tf_xla_auto_jit` clustered: each cluster becomes
an HLO module of its own, compiled once per concrete input shapes, and the ops left out
(np.unique, NumPy functions the op table lacks, clusters too small to pay) run as NumPy in
between. Values cross between segments as NumPy arrays.

A cluster after a value-dependent shape (np.unique's length) was traced for the length seen
at trace time. When an eager op gives another shape, `ShapeChanged` says so; the exploration
then traces again for the new shapes, and the clusters that did not change come back from
the driver's cluster cache (`compiler.compile_cluster`) without compiling again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..ir.library import runs_eagerly
from ..ir.module import Computation, Instruction, Module, called_by
from ..ir.shape import TupleShape
from ..passes.autocluster import EAGER, cluster_of
from .base import Executable
from .reference import ShapeChanged, instruction_evaluator, shape_of


@dataclass(frozen=True)
class Segment:
    """One step of the program: a compiled cluster, or one instruction run eagerly."""

    name: str  # the cluster's name, or the eager instruction's
    instructions: tuple[Instruction, ...]  # of the whole module's entry, in schedule order
    inputs: tuple[Instruction, ...]  # values it reads that other segments (or parameters) make
    outputs: tuple[Instruction, ...]  # values of its own that others read
    module: Module | None = None  # a cluster's own module; None for an eager step

    @property
    def compiled(self) -> bool:
        return self.module is not None


class ClusteredProgram(Executable):
    """`module` (auto-clustered, fused, scheduled) as segments run in dependency order; each
    cluster compiled by `compile_cluster` (the driver's, which caches them)."""

    def __init__(self, module: Module, compile_cluster: Callable[[Module], Executable]):
        self.module = module
        self.segments = plan(module)
        self.programs = {s.name: compile_cluster(s.module) for s in self.segments
                         if s.compiled}
        self._call = self._write_call()

    def _write_call(self) -> Callable:
        """The program as a Python function of straight-line calls, one local variable per
        value: worked out once, so that a call allocates little beside the arrays NumPy's
        own run would (at notebook 03's 16 elements, a dict of values or a loop's iterators
        weigh as much as the arrays, and the memory benchmark holds a clustered call to
        eager NumPy's peak)."""
        entry = self.module.entry
        slot = {id(i): f"v{n}" for n, i in enumerate(entry.instructions)}
        names = {"np": np, "programs": self.programs, "evaluate": instruction_evaluator(self.module),
                 "handed_back": _handed_back, "changed": _changed, "insts": [], "consts": [],
                 "dtypes": [p.dtype for p in entry.parameters]}
        lines = ["def call(args):"]
        for n, p in enumerate(entry.parameters):
            lines.append(f"    {slot[id(p)]} = np.asarray(args[{p.parameter_number}], "
                         f"dtype=dtypes[{n}])")
        for i in entry.instructions:
            if i.opcode == "constant":
                lines.append(f"    {slot[id(i)]} = consts[{len(names['consts'])}]")
                names["consts"].append(i.literal.reshape(i.dims))
        ran: list[Instruction] = []  # eager ops so far: a ShapeChanged reports their shapes
        for seg in self.segments:
            reads = ", ".join(slot[id(i)] for i in seg.inputs)
            if seg.compiled:
                writes = "".join(f"{slot[id(i)]}, " for i in seg.outputs)
                lines.append(f"    {writes or '_'} = programs[{seg.name!r}]({reads})")
                continue
            for inst in seg.instructions:
                k = len(names["insts"])
                names["insts"].append(inst)
                operands = ", ".join(slot[id(o)] for o in inst.operands)
                so_far = "".join(f"({r.name!r}, {slot[id(r)]}), " for r in ran)
                lines += ["    try:",
                          f"        {slot[id(inst)]} = evaluate(insts[{k}], [{operands}])",
                          "    except ShapeChanged as e:",
                          f"        changed(insts[{k}], e, ({so_far}))"]
                if runs_eagerly(inst):
                    ran.append(inst)
        root = entry.root
        parts = root.operands if root.opcode == "tuple" else (root,)
        made = {id(i) for seg in self.segments if seg.compiled for i in seg.outputs}
        names["owned"] = [id(p) in made for p in parts]  # what a cluster returned: the caller's
        lines.append(f"    return handed_back([{', '.join(slot[id(p)] for p in parts)}], owned)")
        names["ShapeChanged"] = ShapeChanged
        exec(compile("\n".join(lines), f"<{self.module.name} clusters>", "exec"), names)
        return names["call"]

    def compile_driver(self) -> float | None:
        """Each compiled cluster's driver, where its first call left one to compile."""
        times = [t for t in (p.compile_driver() for p in self.programs.values())
                 if t is not None]
        return sum(times) if times else None

    @property
    def kernels(self) -> dict[str, str]:
        """Every cluster's kernels, named `<cluster>/<kernel>`."""
        return {f"{name}/{k}": src for name, p in self.programs.items()
                for k, src in p.kernels.items()}

    @property
    def kernel_of(self) -> dict[str, str]:
        """{HLO instruction: its `kernels` key}, over every cluster."""
        return {inst: f"{name}/{k}" for name, p in self.programs.items()
                for inst, k in p.kernel_of.items()}

    @property
    def sources(self) -> dict[str, str]:
        """Each compiled cluster's generated file, by cluster name."""
        return {name: text for name, p in self.programs.items() for text in p.sources.values()}

    @property
    def driver(self) -> str:
        """Each compiled cluster's driver, under its name (the eager ops between them run in
        Python, as the cluster graph shows)."""
        return "\n".join(f"# {name}\n{p.driver}" for name, p in self.programs.items()
                         if p.driver)

    @property
    def arena_bytes(self) -> int:
        return sum(p.arena_bytes for p in self.programs.values())

    @property
    def compile_seconds(self) -> float | None:
        times = [p.compile_seconds for p in self.programs.values()]
        return None if any(t is None for t in times) else sum(times)

    def __call__(self, *args) -> list:
        return self._call(args)


def _changed(inst: Instruction, error: ShapeChanged, so_far: tuple) -> None:
    """Raise `error` again for `inst`, with the shapes of the eager ops run before it: the
    variant to run must agree on all of them."""
    observed = {name: shape_of(value) for name, value in so_far}
    raise ShapeChanged(inst, {**observed, **error.observed}) from None


def _handed_back(values: list, owned: list[bool]) -> list:
    """The outputs as the caller's own arrays: a parameter, a constant, a view an eager op
    made, or a value returned twice is copied (a cluster's outputs are already the
    caller's, `Executable`'s contract)."""
    out = []
    for value, mine in zip(values, owned):
        if isinstance(value, np.ndarray) and (not mine or any(v is value for v in out)):
            value = np.array(value, copy=True)
        out.append(value)
    return out


# -- planning -----------------------------------------------------------------------------------

def plan(module: Module) -> list[Segment]:
    """The module's segments in an order that runs every value's maker before its users."""
    entry = module.entry
    group: dict[Instruction, str] = {}
    members: dict[str, list[Instruction]] = {}
    clusters: set[str] = set()
    for inst in entry.instructions:
        if inst.opcode in ("parameter", "constant") or (inst is entry.root
                                                        and inst.opcode == "tuple"):
            continue
        if inst.opcode == "get-tuple-element" and inst.operands[0] in group:
            key = group[inst.operands[0]]  # an element goes with what made the tuple
        elif inst.opcode == "tuple" and (user := _cluster_using(entry, inst)):
            key = user  # a while loop's state is made where the loop runs
            clusters.add(key)
        else:
            c = cluster_of(inst)
            key = c if c not in (None, EAGER) else inst.name
            if key == c:
                clusters.add(c)
        group[inst] = key
        members.setdefault(key, []).append(inst)
    # A root that is not a tuple is read by the caller (a tuple's elements are read by it).
    users_outside: dict[Instruction, bool] = {entry.root: True}
    for inst in entry.instructions:
        for o in inst.operands:
            if o in group and (inst not in group or group[inst] != group[o]):
                users_outside[o] = True
    segments = []
    for key in _dependency_order(members, group):
        insts = members[key]
        inside = set(insts)
        inputs = _unique([o for i in insts for o in i.operands
                          if o not in inside and o.opcode != "constant"])
        outputs = tuple(i for i in insts if users_outside.get(i))
        if key not in clusters:  # one eager instruction (and the elements of its tuple)
            segments.append(Segment(key, tuple(insts), inputs, outputs))
            continue
        segments.append(Segment(key, tuple(insts), inputs, outputs,
                                extract(module, key, insts, inputs, outputs)))
    return segments


def _cluster_using(entry, inst: Instruction) -> str | None:
    """The cluster of every instruction that reads `inst`, if they are all in one."""
    users = {cluster_of(i) for i in entry.instructions if any(o is inst for o in i.operands)}
    return users.pop() if len(users) == 1 and not users & {None, EAGER} else None


def _unique(insts) -> tuple[Instruction, ...]:
    seen, out = set(), []
    for i in insts:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return tuple(out)


def _dependency_order(members: dict[str, list[Instruction]],
                      group: dict[Instruction, str]) -> list[str]:
    """Segments topologically sorted, ties broken by schedule position (auto-clustering
    made the segment graph acyclic, so this always finishes)."""
    first = {k: n for n, k in enumerate(members)}
    preds: dict[str, set[str]] = {k: set() for k in members}
    for key, insts in members.items():
        for i in insts:
            for o in i.operands:
                if o in group and group[o] != key:
                    preds[key].add(group[o])
    done: list[str] = []
    ready = sorted((k for k, p in preds.items() if not p), key=first.get)
    while ready:
        k = ready.pop(0)
        done.append(k)
        for other, p in preds.items():
            if k in p:
                p.discard(k)
                if not p and other not in done and other not in ready:
                    ready.append(other)
        ready.sort(key=first.get)
    if len(done) != len(members):
        raise ValueError("the clusters of this module depend on each other in a cycle; "
                         "auto-clustering should have kept them apart")
    return done


def extract(module: Module, name: str, insts: Sequence[Instruction],
            inputs: Sequence[Instruction], outputs: Sequence[Instruction]) -> Module:
    """The cluster as a module of its own: a parameter per input, the constants it uses, its
    instructions, and a root tuple of the values other segments read."""
    new: dict[Instruction, Instruction] = {}
    body: list[Instruction] = []
    for n, i in enumerate(inputs):
        new[i] = Instruction(i.name, "parameter", i.shape, parameter_number=n,
                             metadata=i.metadata)
        body.append(new[i])
    for inst in insts:
        for o in inst.operands:
            if o.opcode == "constant" and o not in new:
                new[o] = o
                body.append(o)
        new[inst] = inst.replace(operands=tuple(new[o] for o in inst.operands))
        body.append(new[inst])
    root = Instruction(f"{name}.root", "tuple", _tuple_shape(outputs),
                       tuple(new[o] for o in outputs))
    entry = Computation(name, tuple(body) + (root,))
    called = called_by(module, insts)
    return Module(f"{module.name}.{name}", entry, called, is_scheduled=True)


def _tuple_shape(outputs):
    return TupleShape(tuple(o.shape for o in outputs))
