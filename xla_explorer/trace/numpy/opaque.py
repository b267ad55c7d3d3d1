"""Not compilable: custom calls for what has a value-dependent shape (np.unique, np.nonzero,
np.argwhere, boolean-mask indexing), and opaque calls that run a NumPy function the
table lacks eagerly between compiled clusters (autocluster). What each runs is named in
the HLO text, and looked up in `eager_calls`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...errors import TraceError
from ...ir.module import Instruction
from ...ir.shape import Shape, TupleShape, is_supported_dtype
from ..context import active_builder, located
from ..tracer import Tracer, node_of, value_of
from .eager_calls import NotWritable, Operand, config_of, keep_local, numpy_function
from .registry import lowers
from .util import eager, unsupported, wrap


# -- value-dependent shapes: custom calls the runtime computes with NumPy ----------------------


def custom_call(target: str, operands, value, config: str = "") -> Instruction | tuple:
    """A custom-call to `target` on `operands`, shaped as NumPy's `value` (a tuple of values
    gives one get-tuple-element per value)."""
    b = active_builder()
    values = value if isinstance(value, tuple) else (value,)
    shapes = tuple(Shape(np.asarray(v).dtype, np.shape(v)) for v in values)
    shape = TupleShape(shapes) if isinstance(value, tuple) else shapes[0]
    attrs = [("custom_call_target", target)]
    if config:
        attrs.append(("backend_config", config))
    node = b.emit("custom-call", tuple(node_of(o) for o in operands), shape=shape, attrs=attrs)
    if isinstance(value, tuple):
        return tuple(b.emit("get-tuple-element", (node,), attrs=[("index", i)])
                     for i in range(len(values)))
    return node


@lowers(np.unique)
def _unique(value, ar, return_index=False, return_inverse=False, return_counts=False,
            axis=None, **kw):
    if return_index or return_inverse or return_counts or axis is not None or kw:
        raise unsupported("unique", " with return_index/return_inverse/return_counts/axis")
    return custom_call("numpy.unique", (ar,), value)


@lowers(np.nonzero)
def lower_nonzero(value, a):
    return custom_call("numpy.nonzero", (a,), tuple(value))


@lowers(np.argwhere)
def _argwhere(value, a):
    return custom_call("numpy.argwhere", (a,), value)


# -- autocluster: a NumPy function the table lacks, run eagerly --------------------------------


def opaque_call(func: Callable, name: str, args, kwargs):
    """`func` (a NumPy function the op table lacks) as an opaque custom-call that runs
    eagerly between compiled clusters: its traced array arguments are the operands, and
    everything else in the call is written into its backend_config."""
    leaves: list = []
    template = _template((tuple(args), dict(kwargs)), leaves)
    value = _eager_result(func, name, args, kwargs, leaves)
    nodes = custom_call(f"numpy.{name}", leaves, value, _config(func, name, template))
    if isinstance(nodes, tuple):
        return tuple(wrap(n, v, f"np.{name}") for n, v in zip(nodes, value))
    return wrap(nodes, value, f"np.{name}")


def _config(func: Callable, name: str, template) -> str:
    """The call's arguments as JSON where `numpy.<name>` names `func` in any process;
    otherwise a key to a rebuilding closure kept in this one."""
    (a, k) = template
    named = numpy_function(f"numpy.{name}")
    # == as a ufunc's methods are new objects on each access; np.random's may be wrapped.
    if named is not None and func in (named, getattr(named, "__wrapped__", None)):
        try:
            return config_of(a, k)
        except NotWritable:
            pass

    def call(operands):
        (a, k) = _fill(template, list(operands))
        return func(*a, **k)

    return keep_local(name, repr(template), call)


def runs_eagerly(func: Callable, name: str, args, kwargs) -> bool:
    """Whether auto-clustering would run this call eagerly: it changes no argument and
    returns arrays or numbers of types the explorer has (np.fft.fft's complex ones it has
    not)."""
    leaves: list = []
    _template((tuple(args), dict(kwargs)), leaves)
    try:
        value = _eager_result(func, name, args, kwargs, leaves)
    except Exception:
        return False
    values = value if isinstance(value, tuple) else (value,)
    return all(is_supported_dtype(np.asarray(v).dtype) for v in values)


def _eager_result(func: Callable, name: str, args, kwargs, leaves: list):
    """NumPy's result of the call on the traced arguments' values, checked to be what can
    flow between compiled clusters: arrays and numbers, with every argument unchanged."""
    before = [np.array(value_of(t), copy=True) for t in leaves]
    value = eager(func, f"np.{name}", *value_of(list(args)),
                  **{k: value_of(v) for k, v in kwargs.items()})
    if any(not np.array_equal(b, value_of(t), equal_nan=b.dtype.kind == "f")
           for b, t in zip(before, leaves)):
        raise located(TraceError, f"np.{name} changed its argument in place, which an eager "
                                  "call between compiled clusters cannot do", f"np.{name}",
                      "Use a form that returns a new array.")
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if not isinstance(v, (np.ndarray, np.generic, bool, int, float)):
            raise located(TraceError, f"np.{name} returned a {type(v).__name__}; only arrays "
                                      "and numbers can flow between compiled clusters",
                          f"np.{name}", "Convert its result with np.asarray, or compute it "
                                        "outside the cell.")
    return tuple(np.asarray(v) for v in values) if isinstance(value, tuple) else value


def _template(x, leaves: list):
    """x with every Tracer replaced by an Operand (the Tracers appended to `leaves`)."""
    if isinstance(x, Tracer):
        leaves.append(x)
        return Operand(len(leaves) - 1)
    if isinstance(x, (list, tuple)):
        return type(x)(_template(v, leaves) for v in x)
    if isinstance(x, dict):
        return {k: _template(v, leaves) for k, v in x.items()}
    return x


def _fill(x, operands: list):
    if isinstance(x, Operand):
        return operands[x.n]
    if isinstance(x, (list, tuple)):
        return type(x)(_fill(v, operands) for v in x)
    if isinstance(x, dict):
        return {k: _fill(v, operands) for k, v in x.items()}
    return x

