"""The reference backend: every instruction evaluated by NumPy, op by op.

It runs everything the IR can say (custom-calls included: it is how auto-clustering runs the
ops it leaves eager), so it is the oracle the compiled backends are tested against. With a
buffer assignment it keeps every temporary in one arena laid out by it, so a wrong
assignment gives a wrong answer here too.
"""
from __future__ import annotations

from ..ir.module import Module
from ..passes.buffer_assignment import BufferAssignment
from ..runtime.arena import run_in_arena
from ..runtime.reference import run_module
from .base import Backend, Executable


class Interpreted(Executable):
    def __init__(self, module: Module, assignment: BufferAssignment | None):
        self.module, self.assignment = module, assignment
        self.arena_bytes = assignment.peak_bytes if assignment is not None else 0

    def __call__(self, *args) -> list:
        if self.assignment is None:
            return run_module(self.module, args)
        return run_in_arena(self.module, self.assignment, args)


class InterpreterBackend(Backend):
    name = "interpreter"
    runs_eager_ops = True

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        return Interpreted(module, assignment)
