"""Immutable HLO: instructions, computations and modules.

Instructions refer to their operands directly, so a module is a DAG of frozen objects and a pass
that changes one corner shares everything else with its input. That makes the before/after
snapshots the viewer shows free, and lets a pass compare instructions by identity.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from .shape import Shape, TupleShape

# The attributes whose value names another computation of the module (a reducer, a fusion's body).
# Attributes that name a computation of the module: a reducer or a call's (to_apply), a fusion's
# (calls), a while loop's (condition, body).
COMPUTATION_ATTRS = ("to_apply", "calls", "condition", "body")


@dataclass(frozen=True)
class Metadata:
    """Where an instruction came from: `metadata={op_name=... source_file=... source_line=N}`."""

    op_name: str = ""
    source_file: str = ""
    source_line: int = 0
    # Fields other printers add (source_column, stack_frame_id, ...), kept verbatim.
    extra: str = ""

    def __bool__(self) -> bool:
        return bool(self.op_name or self.source_file or self.source_line or self.extra)


@dataclass(frozen=True, eq=False)
class Instruction:
    """One HLO instruction. Frozen; compared by identity.

    `attrs` holds the attributes printed after the operand list, in print order, as
    (key, value) pairs: typed values for the keys the explorer understands (dimensions as
    tuples of ints, comparison direction as a string, ...) and verbatim strings for keys from
    other printers (backend_config, sharding, ...).
    """

    name: str
    opcode: str
    shape: Shape | TupleShape
    operands: tuple[Instruction, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()
    metadata: Metadata = field(default_factory=Metadata)
    parameter_number: int | None = None
    literal: np.ndarray | None = None

    def attr(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def callees(self) -> tuple[str, ...]:
        """The names of the computations this instruction calls (COMPUTATION_ATTRS)."""
        return tuple(v for k, v in self.attrs if k in COMPUTATION_ATTRS)

    def with_attr(self, key: str, value: Any) -> Instruction:
        attrs = tuple((k, value if k == key else v) for k, v in self.attrs)
        if key not in dict(self.attrs):
            attrs += ((key, value),)
        return replace(self, attrs=attrs)

    def replace(self, **changes) -> Instruction:
        return replace(self, **changes)

    @property
    def dtype(self) -> np.dtype:
        return self.shape.dtype

    @property
    def dims(self) -> tuple[int, ...]:
        return self.shape.dims

    def __repr__(self) -> str:
        ops = ", ".join(o.name for o in self.operands)
        return f"<{self.name} = {self.shape} {self.opcode}({ops})>"


@dataclass(frozen=True, eq=False)
class Computation:
    """A named list of instructions in def-before-use order; the root is the last one."""

    name: str
    instructions: tuple[Instruction, ...]

    @property
    def root(self) -> Instruction:
        return self.instructions[-1]

    @property
    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda p: p.parameter_number)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def get(self, name: str) -> Instruction:
        for inst in self.instructions:
            if inst.name == name:
                return inst
        raise KeyError(name)

    def users(self) -> dict[Instruction, list[Instruction]]:
        """Each instruction's users, in instruction order (an operand used twice counts twice)."""
        out: dict[Instruction, list[Instruction]] = {i: [] for i in self.instructions}
        for inst in self.instructions:
            for op in inst.operands:
                out[op].append(inst)
        return out


@dataclass(frozen=True, eq=False)
class Module:
    """An HLO module: the entry computation and the computations it calls (reducers, ...).

    `input_output_alias` lists (output index, parameter number) pairs: the output at that
    index of the root tuple is the new value of that parameter, as for `x += 1` on an input,
    printed as XLA's `input_output_alias={ {0}: (1, {}, may-alias) }`.
    """

    name: str
    entry: Computation
    computations: tuple[Computation, ...] = ()
    input_output_alias: tuple[tuple[int, int], ...] = ()
    # The entry's instruction order is the execution order (set by the schedule pass),
    # printed as XLA's `is_scheduled=true`.
    is_scheduled: bool = False

    def computation(self, name: str) -> Computation:
        if name == self.entry.name:
            return self.entry
        for comp in self.computations:
            if comp.name == name:
                return comp
        raise KeyError(f"no computation named {name!r} in module {self.name}")

    @property
    def all_computations(self) -> tuple[Computation, ...]:
        return self.computations + (self.entry,)

    def with_entry(self, entry: Computation) -> Module:
        return replace(self, entry=entry)

    def replace(self, **changes) -> Module:
        return replace(self, **changes)

    def instruction_count(self) -> int:
        return len(self.entry)

    def to_text(self, *, metadata: bool = True) -> str:
        # Printed once each way per module (modules are immutable): the explorer shows every
        # stage's text, and the pipeline and the diff of stages read it too.
        if metadata not in self._texts:
            from .printer import print_module

            self._texts[metadata] = print_module(self, metadata=metadata)
        return self._texts[metadata]

    @cached_property
    def _texts(self) -> dict[bool, str]:
        return {}

    def fingerprint(self) -> str:
        """A structural hash: equal for modules that print alike, ignoring metadata."""
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        # Once per module (modules are immutable): the pipeline asks before and after every
        # pass, and printing a module of thousands of instructions is not free.
        return hashlib.sha256(self.to_text(metadata=False).encode()).hexdigest()[:16]

    def __str__(self) -> str:
        return self.to_text()


def called_by(module: Module, insts: Iterable[Instruction]) -> tuple[Computation, ...]:
    """The computations `insts` call, directly or through others, in module order."""
    wanted: set[str] = set()
    stack = list(insts)
    while stack:
        for callee in stack.pop().callees():
            if callee not in wanted:
                wanted.add(callee)
                stack.extend(module.computation(callee).instructions)
    return tuple(c for c in module.computations if c.name in wanted)


def known_trip_count(inst: Instruction) -> int | None:
    """A while loop's trip count as XLA's WhileLoopTripCountAnnotator writes it in the
    backend_config (`{"known_trip_count":{"n":"200"}}`, as `xe.fori_loop` does too); None
    when it is not there."""
    try:
        return int(json.loads(inst.attr("backend_config") or "{}")["known_trip_count"]["n"])
    except (KeyError, TypeError, ValueError):
        return None


def trip_count_config(n: int) -> str:
    """The backend_config that says a while loop runs `n` times, as XLA's
    WhileLoopTripCountAnnotator writes it (read back by `known_trip_count`)."""
    return json.dumps({"known_trip_count": {"n": str(n)}}, separators=(",", ":"))


def post_order(roots: Iterable[Instruction]) -> list[Instruction]:
    """The instructions reachable from `roots`, each after its operands."""
    seen: set[int] = set()
    order: list[Instruction] = []
    for root in roots:
        stack: list[tuple[Instruction, bool]] = [(root, False)]
        while stack:
            inst, expanded = stack.pop()
            if id(inst) in seen:
                continue
            if expanded:
                seen.add(id(inst))
                order.append(inst)
                continue
            stack.append((inst, True))
            for op in reversed(inst.operands):
                if id(op) not in seen:
                    stack.append((op, False))
    return order


def root_last(name: str, instructions: Sequence[Instruction], root: Instruction) -> Computation:
    """A computation of `instructions` (def-before-use order) whose root is `root`.

    A pass that replaces the root by an earlier instruction moves it to the end; whatever used
    it there was dead (nothing but the root is live after the root) and goes.
    """
    insts = list(instructions)
    if insts and insts[-1] is root:
        return Computation(name, tuple(insts))
    at = next((n for n, i in enumerate(insts) if i is root), None)
    if at is None:
        return Computation(name, tuple(insts) + (root,))
    dependents = {id(root)}
    kept = insts[:at]
    for inst in insts[at + 1:]:
        if any(id(o) in dependents for o in inst.operands):
            dependents.add(id(inst))
        else:
            kept.append(inst)
    return Computation(name, tuple(kept) + (root,))
