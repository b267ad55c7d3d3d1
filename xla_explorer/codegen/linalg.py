"""The library routines behind np.linalg's library calls (ir/library.py), for the CPU.

XLA's CPU backend runs a linear-algebra custom-call by calling LAPACK. Here each call's kernel
calls one routine of this module, which calls Numba's own `np.linalg` (Numba implements it
over SciPy's LAPACK: `?gesv`, `?potrf`, `?syevd`, `?gesdd`, ...). Like codegen/gemm.py's
routines, each is written once, compiled once per element type and cached beside this file,
not per program: a program's kernel only reshapes its buffers and calls it.

Every routine takes its operands and results with the batch flattened into one leading axis
(`a` is (B, m, n)), loops over the batch, writes its results in place and returns a status:
OK, NONFINITE (an operand holds NaN or inf, which Numba's bindings refuse: NumPy's LAPACK
would return NaN there, or raise), FAILED (LAPACK failed where NumPy raises its LinAlgError:
a singular matrix, one not positive definite, no convergence) or SHAPE (lstsq's residuals
have another length than traced). The kernel turns a status into the error, naming the
function and the user's line; a routine cannot, being shared by every program.
"""
from __future__ import annotations

import numpy as np
from numba import njit

OK, NONFINITE, FAILED, SHAPE = 0, 1, 2, 3

__all__ = ["OK", "NONFINITE", "FAILED", "SHAPE", "solve", "inv", "cholesky", "qr", "eigh",
           "eigvalsh", "svd", "svdvals", "det", "slogdet", "lstsq"]


@njit(cache=True)
def _finite(a) -> bool:
    for v in a.ravel():
        if not np.isfinite(v):
            return False
    return True


@njit(cache=True)
def _from_lower(a):
    """The symmetric matrix of a's lower triangle: all that LAPACK's symmetric routines read
    (NumPy's eigh ignores what the upper triangle holds, NaN included; Numba's checks it)."""
    n = a.shape[0]
    out = np.empty((n, n), a.dtype)
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = a[i, j]
            out[j, i] = a[i, j]
    return out


@njit(cache=True)
def solve(a, b, x):
    """x[i] = solve(a[i], b[i]): LU with partial pivoting, then two triangular solves."""
    if not (_finite(a) and _finite(b)):
        return NONFINITE
    try:
        for i in range(a.shape[0]):
            x[i] = np.linalg.solve(a[i], b[i])
    except Exception:  # Numba raises LinAlgError for a singular matrix
        return FAILED
    return OK


@njit(cache=True)
def inv(a, out):
    if not _finite(a):
        return NONFINITE
    try:
        for i in range(a.shape[0]):
            out[i] = np.linalg.inv(a[i])
    except Exception:
        return FAILED
    return OK


@njit(cache=True)
def cholesky(a, out):
    """The lower factor, from the lower triangle: ?potrf fails (NumPy raises) where a is not
    positive definite, NaN included, so no check of its own."""
    try:
        for i in range(a.shape[0]):
            out[i] = np.linalg.cholesky(a[i])
    except Exception:
        return FAILED
    return OK


@njit(cache=True)
def qr(a, q, r):
    if not _finite(a):
        return NONFINITE
    try:
        for i in range(a.shape[0]):
            qi, ri = np.linalg.qr(a[i])
            q[i] = qi
            r[i] = ri
    except Exception:
        return FAILED
    return OK


@njit(cache=True)
def eigh(a, w, v):
    for i in range(a.shape[0]):
        if not _finite(_from_lower(a[i])):
            return NONFINITE
    try:
        for i in range(a.shape[0]):
            wi, vi = np.linalg.eigh(_from_lower(a[i]))
            w[i] = wi
            v[i] = vi
    except Exception:
        return FAILED
    return OK


@njit(cache=True)
def eigvalsh(a, w):
    for i in range(a.shape[0]):
        if not _finite(_from_lower(a[i])):
            return NONFINITE
    try:
        for i in range(a.shape[0]):
            w[i] = np.linalg.eigvalsh(_from_lower(a[i]))
    except Exception:
        return FAILED
    return OK


@njit(cache=True)
def svd(a, u, s, vt, full_matrices):
    if not _finite(a):
        return NONFINITE
    try:
        for i in range(a.shape[0]):
            ui, si, vti = np.linalg.svd(a[i], full_matrices)
            u[i] = ui
            s[i] = si
            vt[i] = vti
    except Exception:
        return FAILED
    return OK


@njit(cache=True)
def svdvals(a, s):
    """The singular values alone. Numba's svd has no compute_uv: the reduced one is made and
    its vectors dropped (LAPACK's values do not depend on whether vectors are asked for, up
    to rounding)."""
    if not _finite(a):
        return NONFINITE
    try:
        for i in range(a.shape[0]):
            s[i] = np.linalg.svd(a[i], False)[1]
    except Exception:
        return FAILED
    return OK


@njit(cache=True)
def det(a, out):
    """A singular matrix's determinant is 0, as NumPy's: no failure."""
    if not _finite(a):
        return NONFINITE
    for i in range(a.shape[0]):
        out[i] = np.linalg.det(a[i])
    return OK


@njit(cache=True)
def slogdet(a, sign, logabsdet):
    if not _finite(a):
        return NONFINITE
    for i in range(a.shape[0]):
        si, li = np.linalg.slogdet(a[i])
        sign[i] = si
        logabsdet[i] = li
    return OK


@njit(cache=True)
def lstsq(a, b, x, residuals, rank, s, rcond):
    """One problem, a (m, n) and b (m, k): ?gelsd. Its residuals are empty unless a has full
    column rank n < m, as NumPy's: a length other than the traced one is SHAPE."""
    if not (_finite(a) and _finite(b)):
        return NONFINITE
    try:
        xi, ri, ranki, si = np.linalg.lstsq(a, b, rcond)
    except Exception:
        return FAILED
    if ri.shape[0] != residuals.shape[0]:
        return SHAPE
    x[:] = xi
    residuals[:] = ri
    rank[0] = ranki
    s[:] = si
    return OK
