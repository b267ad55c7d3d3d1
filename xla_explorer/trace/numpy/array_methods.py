"""NumPy's behaviour of a traced array, set on the Tracer class: the protocols NumPy hands
ufuncs and array functions to, indexing, .astype, and the Python operators (with Python's own
arithmetic between Python scalar arguments). As JAX's array methods are, they are set here
rather than defined in the class so that `tracer` need not import the lowerings, which import
it.
"""
from __future__ import annotations

import numpy as np

from ..tracer import Tracer
from .dispatch import assign_inplace, call_function, call_ufunc
from .indexing import getitem, setitem
from .types import astype, python_scalar_op
from .util import is_python_scalar


# -- NumPy's protocols, indexing, astype -------------------------------------------------------


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return call_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    return call_function(func, args, kwargs)


def _astype(self, dtype, copy=True):
    return astype(self, dtype)


Tracer.__array_ufunc__ = _array_ufunc
Tracer.__array_function__ = _array_function
Tracer.__getitem__ = getitem
Tracer.__setitem__ = setitem
Tracer.astype = _astype


# -- operators ---------------------------------------------------------------------------------


def _operator(ufunc, *operands):
    """`a + b` and friends. Between Python scalars only (scalar arguments are weak Tracers),
    Python's arithmetic applies and the result is again a weak Python scalar, so `lr * 0.5`
    keeps a float32 array float32 as it does eagerly."""
    if all(is_python_scalar(x) for x in operands):
        return python_scalar_op(ufunc, operands)
    return ufunc(*operands)


def _binary(ufunc):
    return (lambda self, other: _operator(ufunc, self, other),
            lambda self, other: _operator(ufunc, other, self),
            lambda self, other: _inplace(self, ufunc, other))


def _inplace(self: Tracer, ufunc, other):
    result = _operator(ufunc, self, other)
    return assign_inplace(self, result, f"{ufunc.__name__} (in place)")


for _name, _uf in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                   ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
                   ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                   ("lshift", np.left_shift), ("rshift", np.right_shift)]:
    _f, _r, _i = _binary(_uf)
    setattr(Tracer, f"__{_name}__", _f)
    setattr(Tracer, f"__r{_name}__", _r)
    setattr(Tracer, f"__i{_name}__", _i)


def _pow(self, other):
    """`x ** n`: NumPy's operator squares (np.square) an array to the Python int 2, which
    for a bool array gives int8 where np.power gives int64; the value decides the type, so a
    Python int argument is read as a value there."""
    if self.dtype == np.bool_ and not self._weak:
        n = other._static("**") if isinstance(other, Tracer) and other._weak else other
        if type(n) is int and n == 2:
            return np.square(self)
    return _operator(np.power, self, other)


Tracer.__pow__ = _pow
Tracer.__divmod__ = lambda self, other: (self // other, self % other)
Tracer.__rdivmod__ = lambda self, other: (other // self, other % self)

for _name, _uf in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                   ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)]:
    setattr(Tracer, f"__{_name}__",
            (lambda uf: lambda self, other: _operator(uf, self, other))(_uf))
Tracer.__hash__ = object.__hash__

for _name, _uf in [("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                   ("invert", np.invert)]:
    setattr(Tracer, f"__{_name}__", (lambda uf: lambda self: _operator(uf, self))(_uf))
