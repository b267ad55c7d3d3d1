"""What the op records of np.linalg's library calls (xla_explorer/ir/library.py): solve, inv,
cholesky, qr, eigh, eigvalsh, svd, det, slogdet, lstsq, pinv and the matrix norms of ord 2,
-2 and 'nuc', on well-conditioned matrices, batched and not, and on the special ones: the
identity, 1 x 1, near-singular, a tall least-squares problem (the records themselves are
LINALG in op_records.py).

The compiled side calls Numba's LAPACK (SciPy's build), NumPy its own: the two may differ in
the last bits, and where a result is not unique (the sign of an eigenvector or a singular
vector, an eigenvector of a repeated eigenvalue) in more. So a record returns what is
defined: the vectors with their signs normalised (each flipped to make its dot with a fixed
positive vector positive; R's diagonal positive for QR) and the reconstruction from them
(V diag(w) V^T, U diag(s) V^T, QR), which does not depend on the signs at all; both sides
compute those in the traced program and in NumPy alike.
"""
from __future__ import annotations

import numpy as np



def _matrices(make):
    """A generator of (..., n, n) or (..., m, n) matrices from make(rng, batch, m, n)."""
    def gen(rng, shape, dtype):
        *batch, m, n = shape
        out = make(rng, tuple(batch), m, n, np.dtype(dtype))
        return np.asarray(out).astype(dtype).reshape(shape)
    return gen


def _entries(rng, shape, dtype):
    if dtype.kind == "f":
        return rng.uniform(-1, 1, shape)
    return rng.integers(-2, 3, shape)


@_matrices
def SPD(rng, batch, m, n, dtype):
    """Symmetric positive definite, its eigenvalues at least n: A A^T + n I."""
    a = _entries(rng, batch + (m, n), dtype)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=a.dtype)


def _junk(base, upper: bool):
    """base's matrices with the triangle LAPACK does not read (strictly above the diagonal,
    or below) overwritten: np.linalg's symmetric routines read one triangle alone."""
    @_matrices
    def make(rng, batch, m, n, dtype):
        a = base(rng, batch + (m, n), dtype).astype(np.float64)
        rows, cols = np.triu_indices(n, 1) if upper else np.tril_indices(n, -1)
        a[..., rows, cols] = 7
        return a
    return make


@_matrices
def WELL(rng, batch, m, n, dtype):
    """Diagonally dominant, not symmetric: well conditioned for solve, inv and det."""
    return _entries(rng, batch + (m, n), dtype) + 3 * n * np.eye(m, n)


SPD_UPPER_JUNK = _junk(SPD, upper=True)  # read as UPLO='L' (the default)
SPD_LOWER_JUNK = _junk(SPD, upper=False)  # read as UPLO='U', upper=True


@_matrices
def GENERAL(rng, batch, m, n, dtype):
    """Any shape, entries in [-1, 1] (a random matrix's singular values are apart)."""
    return _entries(rng, batch + (m, n), dtype)


@_matrices
def IDENTITY(rng, batch, m, n, dtype):
    return np.broadcast_to(np.eye(m, n), batch + (m, n))


@_matrices
def NEAR_SINGULAR(rng, batch, m, n, dtype):
    """All ones but a small diagonal: condition number about 4n / 1e-2."""
    return np.ones(batch + (m, n)) + 1e-2 * np.eye(m, n) + 1e-3 * rng.uniform(0, 1, batch + (m, n))


def _signs(v):
    """+-1 per column of v (per vector): the sign of its dot with a fixed positive vector."""
    n = v.shape[-2]
    weights = np.linspace(1.0, 2.0, n).reshape(n, 1)
    return np.sign(np.sum(v * weights, axis=-2, keepdims=True))


def _mT(x):
    return np.swapaxes(x, -1, -2)


def eigh_defined(a, vectors=True, **kw):
    w, v = np.linalg.eigh(a, **kw)
    rebuilt = (v * w[..., None, :]) @ _mT(v)
    return (w, v * _signs(v), rebuilt) if vectors else (w, rebuilt)


def svd_defined(a, full_matrices=True, **kw):
    u, s, vt = np.linalg.svd(a, full_matrices=full_matrices, **kw)
    k = s.shape[-1]
    rebuilt = (u[..., :k] * s[..., None, :]) @ vt[..., :k, :]
    signs = _signs(u[..., :k])
    return s, u[..., :k] * signs, vt[..., :k, :] * _mT(signs), rebuilt


def qr_defined(a, mode="reduced"):
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        return r * _diagonal_signs(r)[..., :, None]
    q, r = np.linalg.qr(a)
    d = _diagonal_signs(r)
    return q * d[..., None, :], r * d[..., :, None], q @ r


def _diagonal_signs(r):
    k, n = r.shape[-2:]
    return np.sign(np.sum(r * np.eye(k, n), axis=-1))  # (np.diagonal of a stack is not traced)
