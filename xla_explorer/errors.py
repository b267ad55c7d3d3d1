"""The explorer's errors. Each names the NumPy function or HLO op and the user's source line,
quotes that line, and says what to do instead."""
from __future__ import annotations

import linecache

import numpy as np


class XlaExplorerError(Exception):
    """The base of every error the package raises, so `except xe.XlaExplorerError` catches
    them all; each subclass is also the built-in class a caller would expect (ValueError for
    bad HLO text, ...)."""


class _Located:
    def _locate(self, message: str, op: str | None, source_file: str | None,
                source_line: int | None, hint: str | None) -> str:
        self.op = op
        self.source_file = source_file
        self.source_line = source_line
        self.hint = hint
        self.message = message
        text = message
        if source_file and source_line:
            code = linecache.getline(source_file, source_line).strip()
            text += f"\n  at {source_file}:{source_line}"
            if code:
                text += f": {code}"
        if hint:
            text += f"\n  {hint}"
        return text


class CompileError(_Located, XlaExplorerError):
    """The program cannot be compiled as asked (must-compile semantics)."""

    def __init__(self, message: str, *, op: str | None = None, source_file: str | None = None,
                 source_line: int | None = None, hint: str | None = None):
        super().__init__(self._locate(message, op, source_file, source_line, hint))


# Custom-call targets that are not NumPy functions, as the user wrote them.
_NOT_COMPILABLE_NAMES = {"numpy.boolean_mask": "boolean-mask indexing (x[mask])"}


def not_compilable(target: str, source_file: str | None, source_line: int | None,
                   op_name: str = "") -> CompileError:
    """Must-compile meeting a non-compilable op (custom_call_target `numpy.unique`, ...).
    `op_name` (the instruction's metadata) ends in the function the user called, which is
    named first when it is not the one that runs (`np.where(c)` runs as `np.nonzero(c)`)."""
    name = _NOT_COMPILABLE_NAMES.get(target, "np." + target.removeprefix("numpy."))
    called = op_name.rsplit("/", 1)[-1]
    if target not in _NOT_COMPILABLE_NAMES and called.isidentifier() and f"np.{called}" != name:
        name = f"np.{called} (computed as {name})"
    return CompileError(
        f"{name} is not compilable: the shape of its result depends on the values of its "
        "input", op=name, source_file=source_file or None, source_line=source_line or None,
        hint="Run it eagerly between compiled clusters: %%xla --autocluster, or "
             "autocluster=True in xe.jit / xe.explore.")


class UnsupportedOpError(CompileError):
    """A NumPy function, method, argument or op the explorer does not support."""


class TraceError(_Located, XlaExplorerError):
    """Tracing needed something a traced array cannot give: a concrete value, a view write..."""

    def __init__(self, message: str, *, op: str | None = None, source_file: str | None = None,
                 source_line: int | None = None, hint: str | None = None):
        super().__init__(self._locate(message, op, source_file, source_line, hint))


def as_python_class(cls: type[BaseException], base: type = None) -> type:
    """A `base` error (TraceError by default) that is also `cls`'s nearest built-in class
    (OverflowError, ValueError, AttributeError, ...) or public NumPy class
    (`numpy.exceptions.AxisError`, itself a ValueError and an IndexError), so that NumPy's or
    Python's own error, raised while tracing or found at call time, is still caught by
    `except OverflowError` or `except np.exceptions.AxisError` while it names the user's
    line."""
    base = base or TraceError
    builtin = next(c for c in cls.__mro__ if c.__module__ in _PYTHONS_AND_NUMPYS)
    if builtin in (Exception, BaseException) or not issubclass(builtin, Exception):
        return base
    if (base, builtin) not in _BOTH:
        name = base.__name__.removesuffix("Error") + builtin.__name__
        both = type(name, (base, builtin), {
            "__module__": __name__,
            "__doc__": f"A {base.__name__} that is also Python's {builtin.__name__}."})
        globals()[name] = _BOTH[base, builtin] = both  # importable by name, so it pickles
    return _BOTH[base, builtin]


_BOTH: dict[tuple[type, type], type] = {}
# The modules whose exception classes a caller may catch by name: Python's built-ins and
# NumPy's public exceptions (its private ones, such as _UFuncNoLoopError, give their base),
# np.linalg.LinAlgError among them.
_PYTHONS_AND_NUMPYS = ("builtins", "numpy.exceptions", "numpy.linalg")


class HloParseError(XlaExplorerError, ValueError):
    """HLO text the parser cannot read; says which line and why."""

    def __init__(self, message: str, line_number: int | None = None, line: str | None = None):
        text = message
        if line_number is not None:
            text = f"line {line_number}: {message}"
            if line is not None:
                text += f"\n  {line.strip()}"
        super().__init__(text)
        self.line_number = line_number


class VerifyError(XlaExplorerError, ValueError):
    """An HLO module breaks an invariant (shapes, types, operand order, names)."""


class IndexOutOfRangeError(_Located, XlaExplorerError, IndexError):
    """A gather or scatter index out of range in the reference interpreter, at the user's line
    (compiled code clamps a gather's start and skips a scatter's update, as XLA does)."""

    def __init__(self, message: str, *, op: str | None = None, source_file: str | None = None,
                 source_line: int | None = None, hint: str | None = None):
        super().__init__(self._locate(message, op, source_file, source_line, hint))


class LinAlgError(_Located, XlaExplorerError, np.linalg.LinAlgError):
    """NumPy's LinAlgError at the user's line: a library call (np.linalg.solve of a singular
    matrix, np.linalg.cholesky of one that is not positive definite) failed where NumPy's own
    function raises, in a compiled program or in the interpreter. Its arguments may all be
    positional: a compiled kernel raises it with constants alone."""

    def __init__(self, message: str, op: str | None = None, source_file: str | None = None,
                 source_line: int | None = None, hint: str | None = None):
        super().__init__(self._locate(message, op, source_file, source_line, hint))


class MismatchError(XlaExplorerError):
    """A `%%xla` cell whose compiled results differ from eager NumPy's beyond the tolerance of
    their types: nothing is written, so a wrong answer never reaches the namespace."""


class DumpError(XlaExplorerError, ValueError):
    """A dump that cannot be replayed: a manifest that is not the JSON it should be, a file it
    names that is missing or truncated, arrays that do not match the argument signature. Names
    the file, and what to do."""

    def __init__(self, path, message: str, hint: str | None = None):
        text = f"{path}: {message}"
        if hint:
            text += f"\n  {hint}"
        super().__init__(text)
        self.path = str(path)
