"""Library calls: the custom-calls that compile, each a call of a library routine.

XLA lowers linear algebra to a `custom-call` whose `custom_call_target` names a routine of a
library (on the CPU, LAPACK's: `lapack_sgetrf_ffi`, `lapack_dsyevd_ffi`), and runs each as a
kernel of its own, never fused. This registry says which targets are such calls here: one per
NumPy function, `linalg.solve` ... `linalg.pinv`, with what it computes. Every other
custom-call is an eager op (`numpy.unique`, an opaque NumPy call), which runs in NumPy between
compiled clusters. Passes, code generators and viewers ask `is_library_call` and
`runs_eagerly`; none lists targets of its own.

A call's operands and results are shaped as NumPy's are, batch dimensions first
(`linalg.svd(f32[2,5,3]) -> (f32[2,5,3], f32[2,3], f32[2,3,3])`), in float32 or float64;
its options (`full_matrices`, `rcond`) are JSON in its `backend_config`, as XLA's
custom-calls carry theirs. What the tracer can say in HLO around a call it does (`UPLO='U'`
is a transpose, `upper=True` a transpose of the result, a vector `b` a reshape), so each
target computes one thing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class LibraryCall:
    """One target: the NumPy function it is, the LAPACK routines behind it, and NumPy's
    answer (what the interpreter runs: `numpy(operands, config)`)."""

    target: str  # `linalg.solve`
    function: str  # as the user wrote it: `np.linalg.solve`
    routines: str  # the LAPACK routines it calls (`?` is s or d), for readers
    numpy: Callable[[list, dict], Any]
    how: str  # what they do, in a few words
    # NumPy's LinAlgError message where the routine fails (a singular matrix), or "" where
    # NumPy never raises one for finite input.
    failure: str = ""
    # Whether a result's shape depends on the input's values (lstsq's residuals: on its
    # rank): the program holds the shape seen when tracing, and another is an error.
    value_shaped: bool = False


def _lstsq(ops: list, config: dict):
    x, residuals, rank, s = np.linalg.lstsq(ops[0], ops[1], rcond=config["rcond"])
    return x, residuals, np.asarray(rank, np.int32), s


_CALLS = (
    LibraryCall("linalg.solve", "np.linalg.solve", "?gesv",
                lambda ops, c: np.linalg.solve(ops[0], ops[1]),
                "LU with partial pivoting, then two triangular solves", "Singular matrix"),
    LibraryCall("linalg.inv", "np.linalg.inv", "?getrf, ?getri",
                lambda ops, c: np.linalg.inv(ops[0]), "LU, then the inverse from it",
                "Singular matrix"),
    LibraryCall("linalg.cholesky", "np.linalg.cholesky", "?potrf",
                lambda ops, c: np.linalg.cholesky(ops[0]), "Cholesky, of the lower triangle",
                "Matrix is not positive definite"),
    LibraryCall("linalg.qr", "np.linalg.qr", "?geqrf, ?orgqr",
                lambda ops, c: tuple(np.linalg.qr(ops[0])), "Householder QR, then Q"),
    LibraryCall("linalg.eigh", "np.linalg.eigh", "?syevd",
                lambda ops, c: tuple(np.linalg.eigh(ops[0])),
                "symmetric eigensolver, of the lower triangle", "Eigenvalues did not converge"),
    LibraryCall("linalg.eigvalsh", "np.linalg.eigvalsh", "?syevd",
                lambda ops, c: np.linalg.eigvalsh(ops[0]),
                "symmetric eigenvalues, of the lower triangle", "Eigenvalues did not converge"),
    LibraryCall("linalg.svd", "np.linalg.svd", "?gesdd",
                lambda ops, c: tuple(np.linalg.svd(ops[0], full_matrices=c["full_matrices"])),
                "divide-and-conquer SVD", "SVD did not converge"),
    LibraryCall("linalg.svdvals", "np.linalg.svd", "?gesdd",
                lambda ops, c: np.linalg.svd(ops[0], compute_uv=False),
                "singular values", "SVD did not converge"),
    LibraryCall("linalg.det", "np.linalg.det", "?getrf",
                lambda ops, c: np.asarray(np.linalg.det(ops[0])),
                "LU; the product of its diagonal"),
    LibraryCall("linalg.slogdet", "np.linalg.slogdet", "?getrf",
                lambda ops, c: tuple(np.asarray(v) for v in np.linalg.slogdet(ops[0])),
                "LU; the signs and logarithms of its diagonal"),
    LibraryCall("linalg.lstsq", "np.linalg.lstsq", "?gelsd", _lstsq,
                "least squares by divide-and-conquer SVD",
                "SVD did not converge in Linear Least Squares", value_shaped=True),
)
LIBRARY_CALLS: dict[str, LibraryCall] = {c.target: c for c in _CALLS}


def shape_changed(function: str, line: int | None) -> str:
    """Why lstsq's residuals cannot be returned: their length depends on a's rank, and the
    program holds the one seen when tracing."""
    at = f" (line {line})" if line else ""
    return (f"{function}{at}: the rank of a differs from the traced call's, and NumPy returns "
            "residuals only at full column rank, so their length is not the one the program "
            "was compiled for. Trace it with arguments of this rank (xe.explore), or compute "
            "the residuals from the solution: np.sum((a @ x - b) ** 2, axis=0).")


def library_call(inst) -> LibraryCall | None:
    """The library call `inst` is, or None (any other instruction, an eager op included)."""
    if inst.opcode != "custom-call":
        return None
    return LIBRARY_CALLS.get(str(inst.attr("custom_call_target", "")))


def is_library_call(inst) -> bool:
    """A custom-call to a library routine: compiled, as a kernel of its own."""
    return library_call(inst) is not None


def runs_eagerly(inst) -> bool:
    """A custom-call NumPy runs between compiled clusters (np.unique, an opaque call): every
    custom-call but a library call."""
    return inst.opcode == "custom-call" and not is_library_call(inst)


def config_of(inst) -> dict:
    """A library call's options, from its backend_config (JSON); {} when it has none."""
    text = str(inst.attr("backend_config", "") or "")
    return json.loads(text) if text else {}


def run_library_call(inst, operands: list):
    """NumPy's answer for a library call, in the instruction's element types: what the
    interpreter runs. NumPy's LinAlgError passes through (the caller names the line)."""
    call = LIBRARY_CALLS[str(inst.attr("custom_call_target"))]
    with np.errstate(all="ignore"):
        out = call.numpy(list(operands), config_of(inst))
    if inst.shape.is_tuple:
        return tuple(np.asarray(v).astype(s.dtype, copy=False)
                     for v, s in zip(out, inst.shape.elements))
    return np.asarray(out).astype(inst.dtype, copy=False)
