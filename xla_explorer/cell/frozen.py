"""What the functions and methods a cell calls read besides their arguments: the state a trace
freezes into the compiled program (as jax.jit does), read again on every run so that a change
compiles the cell again instead of running it with the old value.

A function's globals and closure variables are read (`trace/captured.py`), and through a
bound method its object's attributes that the code names (`self.w`), through an object among
those (a config object, `self.cfg.scale`) its attributes too, and the methods called on
either in turn. Arrays are keyed by identity, shape, type and a digest of their contents (a
change made in place counts), dask arrays by their name token (never computed), numbers by
value, functions by identity and what they read. Properties are not run, and modules are
not followed (`np` is not state): what is read through them stays frozen, and a mismatch it
causes says so (`cell/run.py`).
"""
from __future__ import annotations

import hashlib
import inspect
import types

import numpy as np

from ..trace.captured import free_values

# How deep objects are followed from a function (self, then self.cfg, ...): each level is
# read on every run of the cell.
DEPTH = 3


def state_read(objects) -> tuple:
    """The state that the callables among `objects` read, as a comparable key."""
    return _functions(objects, set(), DEPTH)


def _functions(objects, seen: set, depth: int) -> tuple:
    out = []
    for f in objects:
        f = _callable_code(f)
        code = getattr(f, "__code__", None)
        key = _identity(f)
        if code is None or key in seen:
            continue
        seen.add(key)
        values = dict(free_values(f))
        owner = getattr(f, "__self__", None)
        if owner is not None and not isinstance(owner, (types.ModuleType, type)):
            values.update((f"self.{n}", v) for n, v in _attributes(owner, code.co_names))
        names = code.co_names
        out.append((key, tuple(_value(n, v, names, seen, depth) for n, v in
                               sorted(values.items(), key=lambda item: item[0]))))
    return tuple(out)


def _callable_code(f):
    """A function or bound method as it is; an object called as a function, its bound
    `__call__` when the class defines one in Python."""
    if isinstance(f, (types.FunctionType, types.MethodType)) or isinstance(f, type):
        return f
    call = inspect.getattr_static(type(f), "__call__", None)
    if isinstance(call, types.FunctionType):
        return types.MethodType(call, f)
    return f


def _identity(f) -> tuple:
    if isinstance(f, types.MethodType):  # made afresh by each attribute read
        return ("method", id(f.__func__), id(f.__self__))
    return ("id", id(f))


def _attributes(obj, names) -> list:
    """(name, value) of the attributes of `obj` named in `names`, read without running code:
    the instance's own, and its class's plain values and methods (bound); properties and
    other descriptors are left out."""
    out = []
    for n in dict.fromkeys(names):
        try:
            raw = inspect.getattr_static(obj, n)
        except AttributeError:
            continue
        if isinstance(raw, types.FunctionType):
            out.append((n, types.MethodType(raw, obj)))
        elif not _is_descriptor(raw):
            out.append((n, raw))
    return out


def _is_descriptor(raw) -> bool:
    return isinstance(raw, (property, staticmethod, classmethod)) or (
        hasattr(type(raw), "__get__") and not callable(raw))


def _value(name: str, v, names, seen: set, depth: int):
    if isinstance(v, np.ndarray):
        return (name, "array", id(v), v.shape, v.dtype.str, _digest(v))
    if hasattr(type(v), "__dask_graph__") and hasattr(v, "name"):
        # A dask array (or another dask collection) is never computed to digest it: its name
        # is a token of its graph, which changes with its content.
        return (name, "dask", id(v), str(v.name))
    if isinstance(v, (bool, int, float, complex, str, bytes, np.generic)) or v is None:
        return (name, type(v).__name__, repr(v))
    if isinstance(v, (list, tuple)) and depth > 0:
        return (name, type(v).__name__, id(v),
                tuple(_value(f"{name}[{k}]", x, names, seen, depth - 1)
                      for k, x in enumerate(v)))
    if isinstance(v, dict) and depth > 0:
        return (name, "dict", id(v), tuple(_value(f"{name}[{k!r}]", x, names, seen, depth - 1)
                                           for k, x in v.items()))
    if isinstance(v, types.ModuleType) or depth <= 0:
        return (name, "ref", id(v))
    if callable(v) and not isinstance(v, type):
        return (name, "function", _identity(v), _functions((v,), seen, depth - 1))
    if isinstance(v, type):
        return (name, "class", id(v))
    # an object: the attributes of it that the code names
    return (name, "object", id(v), tuple(_value(f"{name}.{n}", x, names, seen, depth - 1)
                                         for n, x in _attributes(v, names)))


def _digest(a: np.ndarray) -> bytes:
    """A digest of the array's contents: a change made in place shows."""
    if a.dtype.hasobject:
        return b""
    return hashlib.blake2b(np.ascontiguousarray(a).view(np.uint8).reshape(-1).data,
                           digest_size=16).digest()
