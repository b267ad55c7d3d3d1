"""NumPy functions with no HLO op of their own, composed at trace time of slices, pads,
products and reductions: np.convolve and np.correlate (unrolled over the shorter operand),
np.polyval (Horner's rule), np.cov and np.corrcoef, np.gradient, np.interp and np.trapezoid.
"""
from __future__ import annotations

import numpy as np

from ...ir.shape import is_supported_dtype
from ..tracer import Tracer, active_builder, dtype_error, node_of, value_of
from .registry import lowers
from .util import unsupported

# np.convolve and np.correlate emit one slice, product and sum per element of the shorter
# operand: beyond this many the program grows past what the passes and viewers handle well.
MAX_TAPS = 64


def _result_type(value, name):
    dt = np.asarray(value).dtype
    if not is_supported_dtype(dt):
        raise dtype_error(f"np.{name}", dt)
    return dt


def _slice(b, x, axis, start, stop, step=1):
    spec = [(0, d, 1) for d in x.dims]
    spec[axis] = (start, stop, step)
    return b.slice(x, spec)


def _sum_op(dt):
    return ("and", "or") if dt == np.bool_ else ("multiply", "add")


# -- np.convolve, np.correlate -----------------------------------------------------------------


def _correlation(b, name, value, longer, shorter, mode, inverted):
    """NumPy's correlation loop (multiarray's _pyarray_correlate): out[i] = sum over j of
    longer[i - left + j] * shorter[j], zero outside `longer`, with `left` set by the mode;
    reversed when NumPy swapped the operands to put the longer first."""
    dt = _result_type(value, name)
    mul, add = _sum_op(dt)
    x, v = node_of(longer, dt), node_of(shorter, dt)
    x, v = b.reshape(x, (x.shape.size,)), b.reshape(v, (v.shape.size,))
    n_long, n = x.dims[0], v.dims[0]
    if n > MAX_TAPS:
        raise unsupported(name, f" with a shorter operand of {n} elements: it is unrolled "
                                f"into one product per element, at most {MAX_TAPS}. Compute "
                                "it as a product with a Toeplitz matrix, or by FFT outside "
                                "the traced function")
    mode = ("valid", "same", "full")[mode] if isinstance(mode, int) else mode  # NumPy's codes
    left = {"valid": 0, "same": n // 2, "full": n - 1}[mode]
    length = int(np.size(value))
    right = length + n - 1 - left - n_long
    zero = b.constant(0, dt)
    xp = b.pad(x, zero, [(left, right, 0)])
    total = None
    for j in range(n):
        tap = b.broadcast(b.reshape(_slice(b, v, 0, j, j + 1), ()), (length,), ())
        term = b.ew(mul, _slice(b, xp, 0, j, j + length), tap)
        total = term if total is None else b.ew(add, total, term)
    return b.reverse(total, (0,)) if inverted else total


@lowers(np.convolve)
def _convolve(value, a, v, mode="full"):
    b = active_builder()
    if np.size(value_of(v)) > np.size(value_of(a)):  # NumPy puts the longer first; a convolution is symmetric
        a, v = v, a
    return _correlation(b, "convolve", value, a, _reversed(b, v, value), mode, False)


def _reversed(b, v, value):
    node = node_of(v, _result_type(value, "convolve"))
    node = b.reshape(node, (node.shape.size,))
    return b.reverse(node, (0,))


@lowers(np.correlate)
def _correlate(value, a, v, mode="valid"):
    b = active_builder()
    if np.size(value_of(a)) < np.size(value_of(v)):
        return _correlation(b, "correlate", value, v, a, mode, True)
    return _correlation(b, "correlate", value, a, v, mode, False)
