"""Types: conversion (x.astype, np.astype), np.result_type, and arithmetic between Python
scalars, which stay weak (NEP 50) as they do in NumPy.
"""
from __future__ import annotations

import numpy as np

from ...ir.shape import is_supported_dtype
from ..scalars import Const, python_op
from ..context import active_builder, at_user_site, dtype_error
from ..tracer import Tracer, node_of, value_of
from .registry import lowers, static
from .util import eager, is_python_scalar, wrap


# -- conversion: x.astype, np.astype -----------------------------------------------------------


def astype(x: Tracer, dtype) -> Tracer:
    """x.astype(dtype) (also how a value is converted before it is stacked or combined)."""
    b = active_builder()
    with at_user_site(b, "astype"):
        value = eager(lambda v: np.asarray(v).astype(dtype), "astype", x.value)
        if not is_supported_dtype(value.dtype):
            raise dtype_error("astype", value.dtype)
        if isinstance(x.value, np.generic):
            value = value[()]
        return wrap(b.convert(x.node, value.dtype), value, "astype")


@lowers(np.astype)
def _np_astype(value, x, dtype, /, *, copy=True, device=None):
    return active_builder().convert(node_of(x), np.asarray(value).dtype)


# -- types -------------------------------------------------------------------------------------


def _promotion_key(x):
    """What np.result_type wants for x: a Python scalar stays one (weak, NEP 50)."""
    if is_python_scalar(x):
        return x.value if isinstance(x, Tracer) else x
    if isinstance(x, Tracer):
        return x.dtype
    return x


@static(np.result_type)
def _result_type(*a):
    return np.result_type(*(_promotion_key(x) for x in a))


# -- arithmetic between Python scalars ---------------------------------------------------------


# Python keeps bool for these between bools; all other arithmetic on bools gives int.
_PY_BOOL_RESULT = {"bitwise_and", "bitwise_or", "bitwise_xor", "less", "less_equal", "greater",
                   "greater_equal", "equal", "not_equal"}


def python_scalar_op(ufunc, operands):
    """An operator between Python scalars: the operands take Python's common type (bool <
    int < float, bools becoming ints for arithmetic), NumPy computes at that type, and the
    result is a weak Python scalar again."""
    b = active_builder()
    name = ufunc.__name__
    with at_user_site(b, name) as site:
        python = python_op(name, [value_of(x) for x in operands], site)
        ref = b.scalars.op(name, tuple(x._ref if isinstance(x, Tracer) else Const(x)
                                       for x in operands), type(python), site)
    kinds = {type(value_of(x)) for x in operands}
    if float in kinds:
        dt = np.dtype(np.float64)
    elif kinds == {bool} and name in _PY_BOOL_RESULT:
        dt = np.dtype(np.bool_)
    else:
        dt = np.dtype(np.int64)
        if name == "power" and value_of(operands[1]) < 0:
            dt = np.dtype(np.float64)  # Python: 2 ** -1 == 0.5 (NumPy refuses it for ints)
    with at_user_site(b, name):
        strong = [astype(x, dt) if isinstance(x, Tracer) else np.asarray(x, dt)[()]
                  for x in operands]
    result = ufunc(*strong)
    # Python's value, not NumPy's at the traced type: they differ only where python_op refused.
    result._weak, result._value, result._ref = True, python, ref
    return result
