"""Numba CUDA code generation: every kernel of a scheduled module becomes one `@cuda.jit`
kernel from the same fused computations and the same elemental core as the CPU's, one module
per kernel shape (loop, rows, reduce, dot, one_block), assembled by kernel.py and launched in
schedule order by the driver that driver.py renders from the program as data."""
from .driver import HEADER, CudaProgram, generate_cuda_program
from .kernel import CudaKernel
from .loop import launch_for_loop

__all__ = ["HEADER", "CudaKernel", "CudaProgram", "generate_cuda_program", "launch_for_loop"]
