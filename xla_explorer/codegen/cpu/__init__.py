"""Numba CPU code generation: every kernel of a scheduled module becomes one `@njit`
function, one module per kernel shape (loop, rows, reduce, dot; scatter, sort and scan in
codegen/phases/; a library call's, library.py; a while loop's), assembled by kernel.py and called in schedule order by the driver that
driver.py renders from the program as data."""
from ..options import CACHE_LINE, DEFAULT_OPTIONS, CodegenOptions
from .driver import FASTMATH, GEMM_IMPORT, HEADER, PARALLEL_IMPORT, Program, generate_program

__all__ = ["CACHE_LINE", "DEFAULT_OPTIONS", "FASTMATH", "GEMM_IMPORT", "HEADER",
           "PARALLEL_IMPORT", "CodegenOptions", "Program", "generate_program"]
