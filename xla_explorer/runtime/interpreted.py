"""The reference backend's executable: the module evaluated by NumPy, op by op.

With a buffer assignment every temporary lives in one arena laid out by it
(`runtime/arena.py`), so a wrong assignment gives a wrong answer here too; without one each
value is a NumPy array of its own (`runtime/reference.py`).
"""
from __future__ import annotations

from ..ir.module import Module
from ..passes.buffer_assignment import BufferAssignment
from .arena import run_in_arena
from .base import Executable
from .reference import run_module


class InterpretedExecutable(Executable):
    def __init__(self, module: Module, assignment: BufferAssignment | None):
        self.module, self.assignment = module, assignment
        self.arena_bytes = assignment.peak_bytes if assignment is not None else 0

    def __call__(self, *args) -> list:
        if self.assignment is None:
            return run_module(self.module, args)
        return run_in_arena(self.module, self.assignment, args)
