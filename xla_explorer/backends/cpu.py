"""The CPU backend: each kernel generated as Numba source (`codegen/numba_cpu.py`) and run
over one arena laid out by the buffer assignment (`runtime/executable.py`)."""
from __future__ import annotations

from ..ir.module import Module
from ..passes.buffer_assignment import BufferAssignment
from ..runtime.base import Executable
from .base import Backend


class CpuBackend(Backend):
    name = "cpu"
    needs_assignment = True
    dump_name = "cpu"

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        # Imported here: Numba takes a while to import, and `import xla_explorer` should not.
        from ..runtime.executable import CpuExecutable

        return CpuExecutable(module, assignment)
