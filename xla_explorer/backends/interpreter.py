"""The reference backend: every instruction evaluated by NumPy, op by op.

It runs everything the IR can say (custom-calls included: it is how auto-clustering runs the
ops it leaves eager), so it is the oracle the compiled backends are tested against. With a
buffer assignment it keeps every temporary in one arena laid out by it, so a wrong
assignment gives a wrong answer here too (`runtime/interpreted.py`).
"""
from __future__ import annotations

from ..ir.module import Module
from ..passes.buffer_assignment import BufferAssignment
from ..runtime.base import Executable
from ..runtime.interpreted import InterpretedExecutable
from .base import Backend


class InterpreterBackend(Backend):
    name = "interpreter"
    runs_eager_ops = True
    generates_code = False

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        return InterpretedExecutable(module, assignment)
