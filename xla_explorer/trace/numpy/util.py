"""Helpers every lowering module shares: Python scalars, wrapping a result, running NumPy
eagerly, axes, and the error for what is not supported (with its suggested alternatives).

`node_of` and `value_of`, the other half of every lowering, live in `trace/tracer.py`: the end
of a trace needs them too.
"""
from __future__ import annotations

import difflib

import numpy as np

from ...errors import TraceError, UnsupportedOpError, as_python_class
from ...ir.module import Instruction
from ...ir.shape import is_supported_dtype
from ..context import active_builder, dtype_error, located
from ..tracer import Tracer, node_of
from .registry import FUNCTIONS, UFUNCS


def concat_nodes(value, arrays):
    """The builder, and `arrays` as nodes of NumPy's result type (the common type, or the
    dtype= asked for): what a lowering that joins arrays concatenates."""
    b = active_builder()
    dt = np.asarray(value).dtype
    return b, [node_of(x, dt) for x in arrays]


def axis_slice(b, x, axis, start, stop):
    """Node `x` from `start` to `stop` along `axis`, whole along the others."""
    spec = [(0, d, 1) for d in x.dims]
    spec[axis] = (start, stop, 1)
    return b.slice(x, spec)


def is_python_scalar(x) -> bool:
    """A Python bool, int or float, or a Tracer standing for one (a scalar argument)."""
    return (isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)) or (
        isinstance(x, Tracer) and x._weak)


def wrap(node: Instruction, value, what: str) -> Tracer:
    """A Tracer for node with eager value; the two must agree in shape and type."""
    b = active_builder()
    shape = np.shape(value)
    dtype = np.asarray(value).dtype if not isinstance(value, np.generic) else value.dtype
    if not is_supported_dtype(dtype):
        raise dtype_error(what, dtype)
    if node.dims != tuple(shape) or node.dtype != dtype:
        raise located(TraceError, f"internal error: {what} lowered to {node.shape} but NumPy "
                                  f"gives {dtype}{list(shape)}", what,
                      "Please report this with the line above.")
    return Tracer(b, node, value)


def eager(fn, what: str, *args, **kwargs):
    """Run NumPy itself; its errors become the user's error at the user's line."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    except (TraceError, UnsupportedOpError):
        raise
    except Exception as e:  # NumPy's own complaint, at the user's line, of NumPy's class too
        raise located(as_python_class(type(e)), f"{what} failed in NumPy: {e}", what) from e


def canonical_axes(axis, ndim: int) -> tuple[int, ...]:
    """`axis` (None, an int or a sequence, negatives allowed) as sorted axes of `ndim`."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(int(a) % ndim for a in axis)) if ndim else ()
    return (int(axis) % ndim,) if ndim else ()


# NumPy names that mean a supported one, for the error's suggestion.
ALTERNATIVES = {
    "amax": "np.max",
    "bincount": "np.sum(x[..., None] == np.arange(m), axis=0) for a length m you know",
    "flatnonzero": "np.where(x != 0, np.arange(x.size), -1) keeps the shape",
    "extract": "np.where(condition, x, fill) keeps the shape",
    "compress": "np.where(condition, x, fill) keeps the shape",
}

# Why the functions people reach for most stay refused (docs/numpy-coverage.md lists them);
# any other function gets the default reason.
_VALUE_SHAPE = "the shape of its result depends on the values of its input"
_LAPACK = ("XLA hands it to LAPACK, and the explorer calls LAPACK for np.linalg's solve, inv, "
           "cholesky, qr, eigh, eigvalsh, svd, det, slogdet, lstsq and pinv only")
_COMPLEX = "an FFT works on complex numbers, a type the explorer does not have"
WHY_REFUSED = {
    "bincount": f"{_VALUE_SHAPE} (its length is x.max() + 1)",
    "flatnonzero": _VALUE_SHAPE, "extract": _VALUE_SHAPE, "compress": _VALUE_SHAPE,
    "trim_zeros": _VALUE_SHAPE,
    # eig's eigenvalues are complex in general; matrix_rank's tolerance is its own
    **{f"linalg.{f}": _LAPACK for f in ("eig", "eigvals", "matrix_rank")},
    **{f"fft.{f}": _COMPLEX for f in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft",
                                      "irfft", "rfft2", "irfft2", "rfftn", "irfftn")},
    "polyfit": "it solves a least-squares problem with a scaled Vandermonde matrix; write it "
               "with np.linalg.lstsq, which compiles",
    "lexsort": "a sort on several keys is not lowered yet (np.argsort sorts by one key)",
    "apply_along_axis": "it calls a Python function once per slice, which tracing cannot see "
                        "through; write the function on whole arrays",
    "piecewise": "it calls Python functions on masked parts, whose shapes depend on the "
                 "values; use np.select or np.where",
}
_DEFAULT_WHY = "it has no lowering to HLO here"


_NO_EQUIVALENT = "It has no compilable equivalent here; compute it outside the traced function"
EAGERLY = "run it eagerly between compiled clusters: %%xla --autocluster (autocluster=True)."


def unsupported(name: str, detail: str = "") -> UnsupportedOpError:
    """`np.name` (in the form `detail` says) has no lowering. The hint offers a supported
    alternative; the dispatcher adds auto-clustering only where it would run the call."""
    supported = sorted(set(UFUNCS) | {f.__name__ for f in FUNCTIONS})
    if name in ALTERNATIVES:  # listed as None: nothing supported comes close
        alt = ALTERNATIVES[name]
        lead = f"A supported alternative: {alt}." if alt else None
    elif detail:  # the function is supported, this form of it is not: no other name helps
        lead = f"Use a form of np.{name} that is supported."
    else:
        close = difflib.get_close_matches(name, sorted(set(supported) - {name}), n=1,
                                          cutoff=0.75)
        lead = f"A supported function with a similar name: np.{close[0]}." if close else None
    hint = lead or f"{_NO_EQUIVALENT}."
    why = "" if detail else f": {WHY_REFUSED.get(name, _DEFAULT_WHY)}"
    return located(UnsupportedOpError, f"np.{name} is not supported{detail}{why}", f"np.{name}",
                   hint)


def offering_autocluster(error: UnsupportedOpError) -> UnsupportedOpError:
    """`error` with auto-clustering offered in its hint: for a call an eager run between
    compiled clusters would compute."""
    hint = (f"{_NO_EQUIVALENT}, or {EAGERLY}" if error.hint == f"{_NO_EQUIVALENT}."
            else f"{error.hint} Or {EAGERLY}")
    return UnsupportedOpError(error.message, op=error.op, source_file=error.source_file,
                              source_line=error.source_line, hint=hint)
