"""The CPU backend: each kernel generated as Numba source (`codegen/cpu/`, one module per
kernel shape) and run over one arena laid out by the buffer assignment
(`runtime/executable.py`). `CpuBackend(options=CodegenOptions(...))` compiles with other
tuning values (parallel thresholds, prefetching) than the measured defaults."""
from __future__ import annotations

from ..codegen.options import DEFAULT_OPTIONS, CodegenOptions
from ..ir.module import Module
from ..passes.buffer_assignment import BufferAssignment
from ..runtime.base import Executable
from .base import Backend


class CpuBackend(Backend):
    name = "cpu"
    needs_assignment = True
    dump_name = "cpu"

    def __init__(self, options: CodegenOptions = DEFAULT_OPTIONS):
        self.options = options  # the code generator's tuning values, for every compile

    def compile_key(self) -> tuple:
        return (self.name, self.options)

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        # Imported here: Numba takes a while to import, and `import xla_explorer` should not.
        from ..runtime.executable import CpuExecutable

        return CpuExecutable(module, assignment, self.options)
