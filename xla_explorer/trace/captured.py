"""What a function reads from outside its arguments: the values of the globals and closure
variables its code names. Tracing freezes them into the program as constants (as jax.jit
does), so `ex.check` uses them to explain a mismatch and `%%xla` to notice a rebound global."""
from __future__ import annotations

import contextlib


def free_values(f) -> dict:
    """{name: value} of the globals and closure variables `f`'s code reads (empty for an
    object without Python code). Names it reads as attributes are included when a global of
    that name exists; a closure cell not yet filled is left out."""
    code = getattr(f, "__code__", None)
    if code is None:
        return {}
    globals_ = getattr(f, "__globals__", {})
    values = {n: globals_[n] for n in code.co_names if n in globals_}
    for n, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
        with contextlib.suppress(ValueError):  # a cell not filled yet
            values[n] = cell.cell_contents
    return values
