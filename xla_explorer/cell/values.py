"""What a value of the namespace can be to a compiled cell, and the cell's errors.

A cell reads values from the notebook's namespace; each is an input (an array or a number: a
parameter of the function), a module, a constant (keyed by value), a callable (keyed by
identity, traced through), a container used whole (`containers.py`), or an object the cell
may only reach into by attributes. The markers for the last line's value live here too: every
module of the package names them.
"""
from __future__ import annotations

import enum
import inspect
import types

import numpy as np

from ..errors import TraceError
from ..ir.shape import is_supported_dtype
from ..trace.tracer import Tracer

LAST = "__xla_last"  # the value of a last line that is an expression
NO_VALUE = type("NoValue", (), {"__repr__": lambda self: "NO_VALUE"})()  # no last-line value


class CellError(TraceError):
    """A cell the explorer cannot turn into a function: a statement that only makes sense at
    module level (`import`, `global`, `del`, `return`, `yield`, `await`), or a value of the
    namespace that cannot be an input."""


class CellSyntaxError(CellError):
    """The cell is not valid Python (its `__cause__` is Python's SyntaxError)."""


def is_chunked(value) -> bool:
    """A dask array, known by Dask's protocol and an array's attributes without importing
    Dask: its shape, dtype, chunks and name token are read, its values never (reading them
    would compute it)."""
    return (hasattr(type(value), "__dask_graph__") and hasattr(value, "chunks")
            and hasattr(value, "dtype") and hasattr(value, "shape"))


def is_input_value(value) -> bool:
    """What a cell takes as an input: an array (a dask array too, for --backend dask), a
    NumPy number or bool, a Python number."""
    if isinstance(value, np.ndarray) or is_chunked(value):
        return True
    if isinstance(value, (np.number, np.bool_)):
        return True
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


def is_output_value(value) -> bool:
    """What a cell can return: a traced array, or a value the tracer turns into a constant."""
    if isinstance(value, Tracer):
        return True
    if isinstance(value, (np.ndarray, np.number, np.bool_)) or is_chunked(value):
        return is_supported_dtype(np.dtype(value.dtype))
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


# -- values of the namespace: what each can be to a compiled cell -------------------------------

INPUT, MODULE, STATIC, CALLABLE, TREE, OBJECT = ("input", "module", "static", "callable", "tree",
                                                 "object")
_STATIC_TYPES = (str, bytes, complex, type(None), type(Ellipsis), range, slice, np.dtype,
                 enum.Enum)


def path_text(root: str, steps) -> str:
    """A path as the cell writes it: `model.layers[0].w`."""
    return root + "".join(f".{key}" if kind == "attr" else f"[{key!r}]" for kind, key in steps)


def take(value, step):
    """The value one step of a path reaches: an attribute, or an item."""
    kind, key = step
    return getattr(value, key) if kind == "attr" else value[key]


def is_static(value) -> bool:
    """A constant that cannot change behind the cell's back: immutable, keyed by value."""
    if isinstance(value, _STATIC_TYPES) or (is_input_value(value)
                                            and not isinstance(value, np.ndarray)):
        return True
    if isinstance(value, (tuple, frozenset)):  # a shape, a set of names
        return all(is_static(v) for v in value)
    return False


def is_tree(value) -> bool:
    """A container the cell may use whole: passed leaf by leaf, its structure in the key."""
    return type(value) in (dict, list, tuple) or (isinstance(value, tuple)
                                                  and hasattr(value, "_fields"))


def kind_of(value) -> str:
    """What a value the cell reads is to the compiled program (one of the constants above)."""
    if is_input_value(value):
        return INPUT
    if isinstance(value, types.ModuleType):
        return MODULE
    if is_static(value):
        return STATIC
    if is_tree(value):
        return TREE
    return CALLABLE if callable(value) else OBJECT


def descends(value, step) -> bool:
    """Whether a path goes on through `value` to find the cell's input: into containers by
    constant subscripts, into objects and classes by attributes. Arrays, numbers, constants,
    modules and functions end it (`x.T`, `np.pi`, `f.__name__` are read by the trace)."""
    kind = kind_of(value)
    if kind == TREE:
        return step[0] == "item"  # lst.append, params.items: the container is used whole
    if kind == OBJECT:
        return True
    return kind == CALLABLE and step[0] == "attr" and not inspect.isroutine(value)


def describe(value) -> str:
    """A value's type for a message: `a dict`, `an object of type Config`."""
    if type(value) in (dict, list, tuple) or isinstance(value, types.ModuleType):
        return f"a {type(value).__name__}"
    return f"an object of type {type(value).__name__}"


def identity(value):
    """What keys a function or object by identity; a bound method is made afresh on each
    attribute read, so it is keyed by its function and its object."""
    if isinstance(value, types.MethodType):
        return ("method", id(value.__func__), id(value.__self__))
    return ("id", id(value))


def static_key(value):
    """A constant's value as a cache key: by type too (1, 1.0 and True are equal in Python but
    trace differently), floats by repr (-0.0 and nan apart)."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, np.generic):
        return ("np", value.dtype.str, value.tobytes())
    if isinstance(value, (tuple, frozenset)):
        keys = (static_key(v) for v in value)
        return (type(value).__qualname__, id(type(value)),
                frozenset(keys) if isinstance(value, frozenset) else tuple(keys))
    if isinstance(value, slice):
        return ("slice", static_key((value.start, value.stop, value.step)))
    return (type(value).__qualname__, value)
