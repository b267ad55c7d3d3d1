"""The trace in progress and the user's line: what every lowering and error message asks.

One trace runs at a time per thread: `tracing(builder)` makes its Builder the active one (and
enters the scopes lowering modules registered with `while_tracing`), `active_builder()` finds
it. An error or an emitted instruction names the user's line, the innermost frame outside this
package and NumPy (`user_site`, `at_user_site`, `located`). Nothing here knows what a traced
array is: `tracer.py` builds on it, as do the lowerings.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import linecache
import os
import re
import sys
import textwrap
import threading
from typing import Callable

import numpy as np

from ..errors import TraceError, UnsupportedOpError
from ..ir.module import Metadata
from ..ir.shape import SUPPORTED_NAMES
from .builder import Builder

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_SKIP_FILES = {os.path.abspath(contextlib.__file__)}
_state = threading.local()


def active_builder() -> Builder | None:
    return getattr(_state, "builder", None)


def user_frame(depth: int = 1):
    """The innermost frame outside this package and NumPy: the user's line."""
    frame = sys._getframe(depth)
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=1024)
def _is_user_file(filename: str) -> bool:
    """Whether code in `filename` is the user's: asked for every frame of every traced op,
    and os.path.abspath is not free (a 200-step loop's tracing spent a sixth of its time
    there)."""
    path = os.path.abspath(filename)
    return not (path.startswith(_PACKAGE_DIR) or path.startswith(_NUMPY_DIR)
                or path in _SKIP_FILES)


def user_site() -> tuple[str | None, int | None]:
    frame = user_frame(2)
    if frame is None:
        return None, None
    return frame.f_code.co_filename, frame.f_lineno


@contextlib.contextmanager
def at_user_site(b: Builder, op_name: str):
    """Tag what is emitted inside with the user's source line and the NumPy name."""
    if b is None:
        raise leaked_error()
    saved = b.site
    if not saved.source_line:  # the outermost NumPy call names the site
        file, line = user_site()
        b.site = Metadata(f"{b.name}/{op_name}", file or "", line or 0)
    try:
        yield b.site
    finally:
        b.site = saved


# Python builtins that read an array's elements as Python values (max(a) compares them with
# `>`), and what computes the same inside the program.
_BUILTIN_ALTERNATIVES = {
    "max": "np.max(a) (or np.maximum(a, b) for two arrays)",
    "min": "np.min(a) (or np.minimum(a, b) for two arrays)",
    "sorted": "np.sort(a)", "any": "np.any(a)", "all": "np.all(a)"}


def builtin_hint() -> str | None:
    """A hint for a traced array's value asked for by a Python builtin the user's line calls
    (`max(a)`, not `np.max(a)`), or None: the builtin runs no Python frame of its own, so
    the line's text tells."""
    file, line = user_site()
    code = linecache.getline(file, line) if file and line else ""
    for name in re.findall(r"(?<![\w.])(max|min|sorted|any|all)\s*\(", code):
        return (f"Python's {name}() reads the elements as Python values, which a traced "
                f"array does not have: {_BUILTIN_ALTERNATIVES[name]} computes it in the "
                "program.")
    return None


def inside_numpy(kind: type) -> bool:
    """Whether a method of a NumPy object of class `kind` (np.vectorize's __call__) runs
    between here and the user's line."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path.startswith(_NUMPY_DIR):
            if isinstance(frame.f_locals.get("self"), kind):
                return True
        elif not path.startswith(_PACKAGE_DIR) and path not in _SKIP_FILES:
            return False
        frame = frame.f_back
    return False


def vectorize_error() -> UnsupportedOpError:
    return located(UnsupportedOpError,
                   "np.vectorize is not supported: it calls a Python function on each "
                   "element's value, and a traced array's values are known only when the "
                   "compiled program runs", "np.vectorize",
                   "Write the function with NumPy's element-wise operations, which apply to "
                   "whole arrays (np.where for a choice), and call it on the array itself.")


def refuse_unreturnable(f, leaves) -> None:
    """A function returning a string, a dtype or a type (`x.dtype.name`) is refused naming
    what it returns and where: the program's outputs are arrays and numbers."""
    for v in leaves:
        kind = getattr(getattr(v, "dtype", None), "kind", "")
        if isinstance(v, (str, bytes, np.dtype, type)) or (
                isinstance(v, (np.ndarray, np.generic)) and kind in "USOV"):
            what = type(v).__name__
            file, line = _return_line(f)
            raise UnsupportedOpError(
                f"{getattr(f, '__name__', 'the function')} returns a {what} ({v!r:.40}): a "
                "compiled function's outputs are arrays and numbers (and tuples, lists and "
                "dicts of them)", op="return", source_file=file, source_line=line,
                hint=f"Compute the {what} outside the compiled function (x.dtype.name of "
                     "its argument or result), or return it from a plain Python function "
                     "that calls the compiled one.")


def _return_line(f) -> tuple[str | None, int | None]:
    """The file and line of f's return statement, when its source has one (else its def)."""
    code = getattr(f, "__code__", None)
    if code is None:
        return None, None
    try:
        lines, first = inspect.getsourcelines(f)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return code.co_filename, code.co_firstlineno
    returns = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Return)]
    nested = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))][1:]
    if len(returns) == 1 and not nested:
        return code.co_filename, first + returns[0] - 1
    return code.co_filename, code.co_firstlineno


def leaked_error() -> TraceError:
    return located(TraceError, "a traced array was used after the trace that made it ended: it "
                               "was kept outside the traced function (in a global, a list or a "
                               "closure) while tracing", "tracing",
                   "Return the value from the function instead: a compiled call returns NumPy "
                   "arrays.")


def located(cls, message: str, op: str, hint: str | None = None):
    b = active_builder()
    if b is not None and b.site.source_line:
        file, line = b.site.source_file, b.site.source_line
    else:
        file, line = user_site()
    return cls(message, op=op, source_file=file, source_line=line, hint=hint)


def dtype_error(op: str, dtype) -> UnsupportedOpError:
    return located(UnsupportedOpError,
                   f"{op} produces {np.dtype(dtype)}, a type the explorer does not support",
                   op, f"Supported types are {SUPPORTED_NAMES}; "
                       "convert with .astype(np.float32) or similar.")



# Context managers entered around every trace: NumPy patches that a lowering module needs
# while tracing (np.zeros & co. take no traced argument for NumPy to dispatch on).
_TRACING_SCOPES: list[Callable[[], contextlib.AbstractContextManager]] = []


def while_tracing(scope: Callable[[], contextlib.AbstractContextManager]):
    """Register `scope` (a context manager factory) to be entered around every trace."""
    _TRACING_SCOPES.append(scope)
    return scope


@contextlib.contextmanager
def not_tracing():
    """No trace active on this thread inside: NumPy computes on arrays as it would anywhere
    (the tracing scopes' patches call NumPy when no trace is)."""
    previous = active_builder()
    _state.builder = None
    try:
        yield
    finally:
        _state.builder = previous


@contextlib.contextmanager
def tracing(b: Builder):
    previous = active_builder()
    _state.builder = b
    try:
        with contextlib.ExitStack() as scopes:
            for scope in _TRACING_SCOPES:
                scopes.enter_context(scope())
            yield
    finally:
        _state.builder = previous
