"""Scans: np.cumsum, np.cumprod, np.nancumsum, np.nancumprod and ufunc.accumulate (add, multiply, maximum, minimum,
logical_and, logical_or), lowered as XLA lowers them: a reduce-window over a growing window.

Output element i along the axis is the reduction of elements 0..i: a window as long as the
axis, padded by n - 1 identities before the array and none after, moved one element at a
time. The CPU code generator recognises that window (`ir.ops.scan_axis`) and runs it as one
sequential pass with a running accumulator, which is also the order NumPy adds in, so a
float cumsum matches NumPy's exactly.
"""
from __future__ import annotations

import numpy as np

from ...ir.module import Instruction
from ...ir.ops import growing_window
from ..builder import REDUCERS
from ..context import active_builder
from ..tracer import node_of, value_of
from .elementwise import truth
from .registry import lowers
from .util import eager, unsupported, wrap

# ufunc -> (the reducer on numbers, the reducer on bools). A bool sum that stays bool is an
# or, a bool product an and, as NumPy's bool loops compute them.
_SCAN_OPS = {
    "add": ("add", "or"),
    "multiply": ("multiply", "and"),
    "maximum": ("maximum", "or"),
    "minimum": ("minimum", "and"),
    "logical_and": ("and", "and"),
    "logical_or": ("or", "or"),
}


def _identity(opcode: str, dtype: np.dtype):
    # -0.0 is the identity of a float sum (-0.0 + x is x, -0.0 included), where +0.0 would turn
    # a leading -0.0 into +0.0 and so differ from NumPy's cumsum.
    if opcode == "add" and dtype.kind == "f":
        return -0.0
    return REDUCERS[opcode](dtype)


def scan(b, x: Instruction, axis: int, opcode: str) -> Instruction:
    """out[..., i, ...] = reduce(x[..., 0..i, ...]) along `axis`, with the element-wise
    `opcode`: a reduce-window over a growing window."""
    if x.shape.size == 0 or x.dims[axis] <= 1:
        return x  # nothing to accumulate (and a window cannot have size 0)
    init = b.constant(_identity(opcode, np.dtype(x.dtype)), x.dtype)
    return b.emit("reduce-window", (x, init), shape=x.shape,
                  attrs=[("window", growing_window(x.dims, axis)),
                         ("to_apply", b.reducer(opcode, x.dtype))])


def _accumulate_node(b, a, axis, name: str, out_dtype) -> Instruction:
    x = node_of(a)
    if axis is None:
        x = b.reshape(x, (x.shape.size,))
        axis = 0
    if x.shape.rank == 0:
        raise unsupported(name, " of a 0-d array with an axis")
    axis = int(axis) % x.shape.rank
    out_dtype = np.dtype(out_dtype)
    numbers, bools = _SCAN_OPS[name]
    if name in ("logical_and", "logical_or"):
        return b.convert(scan(b, truth(b, x), axis, numbers), out_dtype)
    opcode = bools if out_dtype == np.bool_ else numbers
    return scan(b, b.convert(x, out_dtype), axis, opcode)


def _cumulative(ufunc_name: str):
    def lower(value, a, axis=None, dtype=None, out=None):
        return _accumulate_node(active_builder(), a, axis, ufunc_name, np.asarray(value).dtype)
    return lower


lowers(np.cumsum)(_cumulative("add"))
lowers(np.cumprod)(_cumulative("multiply"))


def _nan_cumulative(func, fill):
    # NumPy's own definition: NaN replaced by the identity (0 for a sum, 1 for a product),
    # then the plain scan; integers and bools have no NaN and go straight through.
    def lower(value, a, axis=None, dtype=None, out=None):
        if out is not None:
            raise unsupported(func.__name__, " with out=")
        if np.asarray(value_of(a)).dtype.kind == "f":
            a = np.where(np.isnan(a), fill, a)
        return node_of(func(a, axis=axis, dtype=dtype))
    return lower


lowers(np.nancumsum)(_nan_cumulative(np.cumsum, 0))
lowers(np.nancumprod)(_nan_cumulative(np.cumprod, 1))


def accumulate(ufunc: np.ufunc, inputs, kwargs):
    """`ufunc.accumulate(array, axis=0, dtype=None)` for the ufuncs in _SCAN_OPS; None for
    another ufunc (the caller says it is unsupported)."""
    name = ufunc.__name__
    if name not in _SCAN_OPS or len(inputs) != 1:
        return None
    kwargs = dict(kwargs)
    axis = kwargs.pop("axis", 0)
    dtype = kwargs.pop("dtype", None)
    if kwargs.pop("out", None) is not None or kwargs:
        raise unsupported(f"{name}.accumulate", f" with {', '.join(kwargs) or 'out'}=")
    if axis is None:
        raise unsupported(f"{name}.accumulate", " with axis=None (NumPy refuses it too)")
    (a,) = inputs
    value = eager(ufunc.accumulate, f"np.{name}.accumulate", value_of(a), axis=axis,
                  **({"dtype": dtype} if dtype is not None else {}))
    node = _accumulate_node(active_builder(), a, axis, name, np.asarray(value).dtype)
    return wrap(node, value, f"np.{name}.accumulate")
