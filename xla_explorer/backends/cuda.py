"""The CUDA backend: each kernel generated as Numba CUDA source (`codegen/cuda/`, one module
per kernel shape) from the same fusions, elemental core and buffer assignment as the CPU
backend, run over one device arena (`runtime/cuda.py`). It needs a GPU, or Numba's simulator
(NUMBA_ENABLE_CUDASIM=1).

It compiles what the CPU backend compiles but while loops and library calls (np.linalg.solve &
co., which XLA hands to cuSOLVER), and inherits the rest of `unsupported` (custom-calls are
NumPy run eagerly). What its code generator cannot lay out on the GPU yet (a scatter, sort or scan
fused with a reduction, a reduction read at other elements in the same kernel) is a
CompileError naming the op, raised when the program is compiled."""
from __future__ import annotations

from ..errors import CompileError, UnsupportedOpError
from ..ir.module import Instruction, Module
from ..passes.buffer_assignment import BufferAssignment
from ..runtime.base import Executable
from .base import Backend


class CudaBackend(Backend):
    name = "cuda"
    needs_assignment = True
    runs_loops = False  # an unrolled loop stays unrolled here

    def unsupported(self, inst: Instruction) -> CompileError | None:
        if inst.opcode == "while":
            md = inst.metadata
            return UnsupportedOpError(
                f"the cuda backend does not compile while loops yet ({inst.name}, made by "
                "xe.fori_loop)", op="while", source_file=md.source_file or None,
                source_line=md.source_line or None,
                hint="Run it with backend='cpu', or write the loop as a Python loop (it "
                     "unrolls while tracing).")
        return self.refuse_library_call(inst, "XLA's GPU backend hands it to cuSOLVER, "
                                               "which the explorer's CUDA kernels do not call"
                                        ) or super().unsupported(inst)

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        # Imported here: numba.cuda is imported only when a program is compiled for it.
        from ..runtime.cuda import CudaExecutable, EmptyArrayExecutable, has_empty_array

        if has_empty_array(module):
            return EmptyArrayExecutable(module, assignment)
        return CudaExecutable(module, assignment)
