"""The dispatch table: which lowering each NumPy ufunc and function has.

The tables start empty. Each lowering module fills them where it defines a lowering, with the
decorators below, when `xla_explorer.trace.numpy` imports it; `dispatch` reads them. This
module imports nothing of the tracer, so every lowering module can import it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

# ufunc name -> lowering(builder, *operands): the operands already converted to the ufunc
# loop's input types and broadcast to one shape; it returns an instruction of the loop's
# output type. A lowering with `takes_inputs` gets (builder, shape, inputs, types) instead.
UFUNCS: dict[str, Callable] = {}
# generalised ufuncs (np.matmul): name -> lowering(*operands as given) -> Tracer
GUFUNCS: dict[str, Callable] = {}
# ufunc name -> the NumPy function its .reduce is (np.add.reduce is np.sum)
UFUNC_REDUCE: dict[str, Callable] = {}
# NumPy function -> lowering(eager value, *the call's arguments) -> instruction or tuple
FUNCTIONS: dict[Callable, Callable] = {}
# the functions whose result NumPy may make a view of their first argument
VIEWS: set[Callable] = set()
# NumPy function -> what runs eagerly in its place (np.empty_like's contents are arbitrary)
EAGER: dict[Callable, Callable] = {}
# NumPy function -> its answer from the arguments, at trace time, with no instruction
STATIC: dict[Callable, Callable] = {}
# the functions that write into their first argument and return None (np.copyto, np.place)
IN_PLACE: set[Callable] = set()


def _claim(table, key, what: str) -> None:
    # Two modules lowering one function would make the result depend on import order.
    if key in table:
        raise ValueError(f"{what} already has a lowering")


def lowers(*funcs: Callable, view: bool = False, eager: Callable | None = None,
           in_place: bool = False):
    """Decorator: the lowering of NumPy functions `funcs` (reached by __array_function__).
    `view`: NumPy may return a view of the first argument; `eager`: what to run eagerly;
    `in_place`: the function writes into its first argument and returns None, and the
    lowering gives that argument's new contents."""
    def register(lowering: Callable) -> Callable:
        for func in funcs:
            _claim(FUNCTIONS, func, f"np.{func.__name__}")
            FUNCTIONS[func] = lowering
            if view:
                VIEWS.add(func)
            if eager is not None:
                EAGER[func] = eager
            if in_place:
                IN_PLACE.add(func)
                EAGER[func] = _on_a_copy(func)
        return lowering
    return register


def _on_a_copy(func: Callable) -> Callable:
    """func run eagerly on a copy of its first argument: the copy, changed, is the value the
    lowering's result must have (the argument itself changes only once that is checked)."""
    def run(dst, *args, **kwargs):
        dst = np.array(dst, copy=True)
        func(dst, *args, **kwargs)
        return dst
    return run


def _by_ufunc_name(table: dict, ufuncs) -> Callable:
    def register(lowering: Callable) -> Callable:
        for ufunc in ufuncs:
            _claim(table, ufunc.__name__, f"np.{ufunc.__name__}")
            table[ufunc.__name__] = lowering
        return lowering
    return register


def lowers_ufunc(*ufuncs: np.ufunc):
    """Decorator: the element-wise lowering of `ufuncs` (reached by __array_ufunc__)."""
    return _by_ufunc_name(UFUNCS, ufuncs)


def lowers_gufunc(*ufuncs: np.ufunc):
    """Decorator: the lowering of generalised ufuncs, which takes their operands as given."""
    return _by_ufunc_name(GUFUNCS, ufuncs)


def reduces_as(ufunc: np.ufunc, func: Callable) -> None:
    """`ufunc.reduce(a, axis, keepdims)` lowers as `func(a, axis=, keepdims=)` does."""
    _claim(UFUNC_REDUCE, ufunc.__name__, f"np.{ufunc.__name__}.reduce")
    UFUNC_REDUCE[ufunc.__name__] = func


# -- ufunc.at ------------------------------------------------------------------------
# ufunc name -> lowering(ufunc, a, indices, b): np.add.at & co., in place on a traced `a`.
UFUNC_AT: dict[str, Callable] = {}


def lowers_ufunc_at(*ufuncs: np.ufunc):
    """Decorator: the lowering of `ufunc.at` for `ufuncs` (reached by __array_ufunc__)."""
    return _by_ufunc_name(UFUNC_AT, ufuncs)


def static(func: Callable):
    """Decorator: `func` is answered at trace time (np.shape), with no instruction."""
    def register(answer: Callable) -> Callable:
        _claim(STATIC, func, f"np.{func.__name__}")
        STATIC[func] = answer
        return answer
    return register
