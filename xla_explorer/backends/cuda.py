"""The CUDA backend: each kernel generated as Numba CUDA source (`codegen/numba_cuda.py`)
from the same fusions and buffer assignment as the CPU backend, run over one device arena
(`runtime/cuda.py`). It needs a GPU, or Numba's simulator (NUMBA_ENABLE_CUDASIM=1)."""
from __future__ import annotations

from ..errors import CompileError
from ..ir.module import Instruction, Module
from ..passes.buffer_assignment import BufferAssignment
from .base import Backend, Executable

# Ops the CUDA code generator does not compile yet, and why (must-compile names them).
NOT_YET = {
    "convolution": "convolutions",
    "scatter": "scatters (x[idx] = v, np.add.at)",
    "sort": "sorts (np.sort, np.argsort, np.median, np.percentile)",
    "reduce-window": "scans (np.cumsum, ufunc.accumulate)",
}


class CudaBackend(Backend):
    name = "cuda"
    needs_assignment = True

    def unsupported(self, inst: Instruction) -> CompileError | None:
        error = super().unsupported(inst)
        if error is not None:
            return error
        if inst.opcode in NOT_YET:
            md = inst.metadata
            return CompileError(
                f"{inst.opcode}: the cuda backend does not compile {NOT_YET[inst.opcode]} yet",
                op=inst.opcode, source_file=md.source_file or None,
                source_line=md.source_line or None,
                hint="compile this program with backend='cpu' for now")
        return None

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        # Imported here: numba.cuda is imported only when a program is compiled for it.
        from ..runtime.cuda import CudaExecutable

        return CudaExecutable(module, assignment)
