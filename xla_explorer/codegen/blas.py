"""NumPy's own BLAS, callable from the generated kernels.

A kernel's dot calls the `cblas_?gemm` of the BLAS that NumPy itself was built with, found
through NumPy's extension module, rather than Numba's `np.dot` (which calls the BLAS bundled
with SciPy, a second library). One BLAS per process means one pool of BLAS threads, where two
pools would spin on the same cores after each other's products; and a compiled product is
NumPy's product, bit for bit.

The functions are declared to Numba as external symbols that LLVM resolves by name when a
kernel is linked, which is what lets Numba cache the kernels on disk (a ctypes pointer would
be baked into the code as an address). Where NumPy's BLAS is not the 64-bit-integer OpenBLAS
that NumPy's wheels ship, `GEMM` is empty and kernels fall back to `np.dot`.
"""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types

ROW_MAJOR, NO_TRANS = 101, 111

# cblas ?gemm with 64-bit integers (ILP64): layout, transa, transb, m, n, k, alpha, a, lda,
# b, ldb, beta, c, ldc.
_NAMES = {"f": "sgemm", "d": "dgemm"}
_SYMBOLS = ("scipy_cblas_{}64_", "cblas_{}64_")


def _find(lib: ctypes.CDLL, routine: str):
    for pattern in _SYMBOLS:
        fn = getattr(lib, pattern.format(routine), None)
        if fn is not None:
            return fn
    return None


def _numpy_library() -> ctypes.CDLL | None:
    """NumPy's extension module: dlsym on it finds its BLAS's symbols too."""
    try:
        from numpy._core import _multiarray_umath as numpy_core
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as numpy_core
    try:
        return ctypes.CDLL(numpy_core.__file__)
    except OSError:
        return None


def core() -> str | None:
    """The kernels NumPy's OpenBLAS chose for this CPU ("Haswell", "SkylakeX", ...; the
    environment variable OPENBLAS_CORETYPE overrides its choice), or None if not OpenBLAS."""
    lib = _numpy_library()
    for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_",
                 "openblas_get_corename"):
        get = getattr(lib, name, None)
        if get is not None:
            get.restype = ctypes.c_char_p
            return get().decode()
    return None


def _declare() -> dict[str, types.ExternalFunction]:
    lib = _numpy_library()
    if lib is None:
        return {}
    gemm = {}
    for char, routine in _NAMES.items():
        fn = _find(lib, routine)
        if fn is None:
            continue
        name = f"xla_explorer_cblas_{routine}"
        llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
        t = types.float32 if char == "f" else types.float64
        i32, i64, ptr = types.int32, types.int64, types.voidptr
        sig = types.void(i32, i32, i32, i64, i64, i64, t, ptr, i64, ptr, i64, t, ptr, i64)
        gemm[np.dtype(char).name] = types.ExternalFunction(name, sig)
    return gemm


# {dtype name: cblas gemm}: what the kernels may call.
GEMM = _declare()
gemm_float32 = GEMM.get("float32")
gemm_float64 = GEMM.get("float64")


@njit
def keep_alive(a, b, c):
    """Nothing. Called after a BLAS call, it keeps the arrays whose addresses the call was
    given alive until the call has returned: Numba frees an array after its last use in the
    code, which without this would be the `.ctypes.data` read before the call."""
    return None
