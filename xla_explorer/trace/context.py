"""The trace in progress and the user's line: what every lowering and error message asks.

One trace runs at a time per thread: `tracing(builder)` makes its Builder the active one (and
enters the scopes lowering modules registered with `while_tracing`), `active_builder()` finds
it. An error or an emitted instruction names the user's line, the innermost frame outside this
package and NumPy (`user_site`, `at_user_site`, `located`). Nothing here knows what a traced
array is: `tracer.py` builds on it, as do the lowerings.
"""
from __future__ import annotations

import contextlib
import os
import sys
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
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_PACKAGE_DIR) or path.startswith(_NUMPY_DIR)
                or path in _SKIP_FILES):
            return frame
        frame = frame.f_back
    return None


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
