"""Numba's start in a process, without SciPy's linear algebra.

A process's first compile, or first load of a kernel from the disk cache, loads Numba's
implementations of NumPy (`numba.np.arraymath`), which imports `scipy.linalg` to see whether
a BLAS is there for `np.correlate` and `np.convolve` (`numba.np.arraymath._HAVE_BLAS`): 0.12 s
of every process's first answer here, kernels on disk included (docs/performance.md). No
kernel of ours calls those two; the linear algebra we do call (`np.linalg`, codegen/linalg.py)
imports SciPy's LAPACK when it compiles, as before. So arraymath is imported here first, told
that there is no BLAS: Numba's `np.correlate` and `np.convolve` then use their own loop.
Imported by every module whose import compiles or loads Numba code; it also has Numba keep
each cached function's object code, for kernel images (codegen/objects.py).
"""
from __future__ import annotations

import sys

from . import objects


def _start() -> None:
    if "numba.np.arraymath" in sys.modules:
        return  # Numba is already running in this process
    from numba.np import linalg

    real = getattr(linalg, "ensure_blas", None)

    def no_blas():
        raise ImportError("not looked for: xla_explorer.codegen.numba_start")

    linalg.ensure_blas = no_blas
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if real is not None:
            linalg.ensure_blas = real


objects.install()  # before Numba makes its code generator
_start()
