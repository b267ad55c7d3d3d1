"""The compiler driver: a module in, the backend's pass pipeline run, its executable out.

Every way into the compiler comes through here: `xe.explore`, `xe.jit`, the `%%xla` magic
(through jit), auto-clustered programs (each cluster compiled by `compile_cluster`) and the
fuzzer. So what a compilation is (must-compile's check, the pipeline, the buffer
assignment a backend needs, the compile cache of clusters) is written once, and a backend
only turns a finished module into an `Executable` (`runtime/base.py`).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

from .backends import Backend, PassOptions, get_backend
from .ir.module import Module
from .ir.verify import verify
from .passes.autocluster import Clustering
from .passes.base import Pass, Pipeline, Stage
from .passes.buffer_assignment import BufferAssignment
from .passes.kinds import Decision
from .runtime.base import Executable


@dataclass(frozen=True)
class Compilation:
    """What compiling a module gives, and the record every viewer reads: every stage of the
    pipeline, the buffer assignment, the fusion decisions, and the backend's executable.
    It needs no Python function: a module parsed from HLO text compiles to one too.

    Stages are found by what they did (the artifact they left, the decisions they
    recorded, the kernels they made), never by the name of the pass that made them, so a
    backend's own pipeline is read the same way."""

    backend: Backend
    stages: tuple[Stage, ...]
    executable: Executable
    autocluster: bool = False

    @property
    def module(self) -> Module:
        return self.stages[-1].module

    @property
    def assignment(self) -> BufferAssignment | None:
        return assignment_of(self.stages)

    @property
    def clustering(self) -> Clustering | None:
        """Auto-clustering's plan (what compiles, what runs eagerly); None without it."""
        return next((s.artifact for s in self.stages if isinstance(s.artifact, Clustering)),
                    None)

    @property
    def decisions(self) -> list[Decision]:
        """Every fusion decision, taken or refused, in pass order."""
        return [n for s in self.stages for n in s.notes if isinstance(n, Decision)]

    @property
    def fusion_stage(self) -> int | None:
        """The index of the first stage that fused (recorded a fusion decision or made a
        fusion), which is where a viewer opens; None if none did."""
        for n, s in enumerate(self.stages):
            made = _fusions(s.module) > _fusions(self.stages[max(n - 1, 0)].module)
            if made or any(isinstance(note, Decision) for note in s.notes):
                return n
        return None

    @property
    def opening_stage(self) -> int:
        """Where a viewer opens (the extension too): the stage that fused; where none did
        (a program whose work is a while loop's body, compiled as a program of its own), the
        fusion pass's stage all the same; 0 without one."""
        if self.fusion_stage is not None:
            return self.fusion_stage
        return next((n for n, s in enumerate(self.stages) if s.name == "fusion"), 0)

    @property
    def unfused(self) -> Module:
        """The program before fusion: the module of the stage before the fusion stage; the
        final module if no stage fused."""
        n = self.fusion_stage
        return self.module if n is None else self.stages[max(n - 1, 0)].module


def _fusions(module: Module) -> int:
    return sum(i.opcode == "fusion" for i in module.entry.instructions)


def assignment_of(stages: Sequence[Stage]) -> BufferAssignment | None:
    """The last buffer assignment the pipeline made (None without a buffer-assignment pass)."""
    for s in reversed(stages):
        if isinstance(s.artifact, BufferAssignment):
            return s.artifact
    return None


def check_compilable(module: Module, backend: Backend) -> None:
    """Must-compile (`jit_compile=True`): the first instruction the backend cannot compile is a
    CompileError at its source line; nothing falls back to NumPy silently."""
    for inst in module.entry.instructions:
        error = backend.unsupported(inst)
        if error is not None:
            raise error


def compile(module: Module, backend: str | Backend = "cpu", *, autocluster: bool = False,
            passes: Sequence[Pass] | None = None, must_compile: bool = True,
            run_on: Backend | None = None) -> Compilation:
    """Run the pipeline on `module` (the backend's passes, or `passes`) and compile the result.

    With `autocluster` what the backend cannot compile runs eagerly between compiled clusters;
    otherwise, with `must_compile`, it is a CompileError before any pass runs. With `run_on`
    (the interpreter), that backend's executable runs what `backend`'s pipeline made: a
    tiered call's first answer, while `backend`'s own executable is made and compiled."""
    backend = get_backend(backend) if isinstance(backend, str) else backend
    if must_compile and not autocluster:
        check_compilable(module, backend)
    if passes is None:
        passes = backend.passes(PassOptions(autocluster=autocluster))
    pipeline = Pipeline(passes)
    pipeline.run(module)
    stages = tuple(pipeline.stages)
    final, assignment = stages[-1].module, assignment_of(stages)
    if assignment is not None and assignment.module is not final:
        assignment = None  # passes after buffer assignment changed the module
    if backend.needs_assignment and assignment is None:
        raise ValueError(f"the {backend.name} backend needs a pipeline that ends in "
                         "buffer-assignment")
    if autocluster:
        # Imported here: the clustered runner calls back into compile_cluster.
        from .runtime.clustered import ClusteredProgram

        executable = ClusteredProgram(final, lambda cluster: compile_cluster(cluster, backend))
    else:
        executable = (run_on or backend).compile(final, assignment)
    return Compilation(run_on or backend, stages, executable, autocluster)


# Cluster fingerprint -> its executable, shared by every compilation in the process: XLA's
# compilation cache plays this part for TensorFlow's clusters, so a program traced again for
# a new value-dependent shape recompiles only the clusters that shape changed.
_CLUSTERS: dict[tuple[tuple, str], Executable] = {}
_LOCK = threading.Lock()
CLUSTER_CACHE = {"hits": 0, "misses": 0}


def compile_cluster(module: Module, backend: Backend) -> Executable:
    """One auto-clustered cluster, already fused and scheduled with its program: verified,
    given a buffer assignment of its own, compiled (or found in the cache)."""
    key = (backend.compile_key(), module.fingerprint())
    with _LOCK:
        executable = _CLUSTERS.get(key)
        CLUSTER_CACHE["hits" if executable is not None else "misses"] += 1
    if executable is None:
        verify(module)
        check_compilable(module, backend)  # a library call on a target without LAPACK
        executable = backend.compile(module, backend.assign_buffers(module))
        with _LOCK:
            executable = _CLUSTERS.setdefault(key, executable)
    return executable
