"""Passes, the pipeline that runs them, and the Stages it records for the viewer.

A pass is small and honest about change: `run(module) -> PassResult(module, changed, notes)`.
The pipeline checks the claim against the module's fingerprint, verifies every module a pass
changed, and records a Stage per pass: the viewer draws Stages, it never re-runs passes.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import XlaExplorerError
from ..ir.module import Module
from ..ir.verify import verify


@dataclass(frozen=True)
class Note:
    """One decision a pass made, in a sentence a student can read, and the rule that fired."""

    message: str
    rule: str = ""
    instructions: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class PassResult:
    module: Module
    changed: bool
    notes: tuple[Note, ...] = ()
    # What an analysis pass computed beside the module (the buffer assignment, ...).
    artifact: Any = None


@dataclass(frozen=True)
class Stage:
    """The module after one pass (or after tracing), with what changed and why."""

    name: str
    module: Module
    changed: bool
    notes: tuple[Note, ...] = ()
    seconds: float = 0.0
    artifact: Any = None

    def hlo(self) -> str:
        return self.module.to_text()


class Pass:
    """A module-to-module transformation with a stable kebab-case name."""

    name: str = ""

    def run(self, module: Module) -> PassResult:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


class PassClaimError(XlaExplorerError, AssertionError):
    """A pass said it changed nothing but did (or the reverse)."""


@dataclass
class Pipeline:
    passes: Sequence[Pass]
    verify_each: bool = True
    stages: list[Stage] = field(default_factory=list)

    def run(self, module: Module, *, initial_stage: str | None = "trace") -> Module:
        if initial_stage:
            self.stages.append(Stage(initial_stage, module, True))
        for p in self.passes:
            before = module.fingerprint()
            start = time.perf_counter()
            result = p.run(module)
            seconds = time.perf_counter() - start
            after = result.module.fingerprint()
            if result.changed != (before != after):
                raise PassClaimError(
                    f"pass {p.name} claimed changed={result.changed}, but the module "
                    f"{'changed' if before != after else 'did not change'}")
            if result.changed and self.verify_each:
                verify(result.module)
            self.stages.append(Stage(p.name, result.module, result.changed, result.notes, seconds,
                                     result.artifact))
            module = result.module
        return module
