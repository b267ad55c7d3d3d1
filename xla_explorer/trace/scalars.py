"""Python scalar arguments: traced as values, with what their value decides checked per call.

A Python int or float argument is a weak parameter (NEP 50): the compiled program takes it as
a value, so a new value runs the same program. What a Python scalar's value decides, beyond
its type, a compiled program must not get wrong silently:

- Arithmetic between Python scalars is Python's (`n * n` is 2**80 for n = 2**40), which the
  program computes in int64 or float64. Each such operation is recorded and repeated in Python
  on every call, and a result the program cannot hold (an int beyond int64, a complex power)
  is an error at the user's line, at trace time and at call time alike.
- NumPy raises OverflowError when a Python int meets an array of a narrower integer type
  (`int32_array * 2**40`), and ValueError for an integer array to a negative Python int
  power; an int argument must fit the int64 parameter. A Python number written into an
  integer array (`x[i] = v`, `np.asarray(v, np.int32)`) is converted as Python's int(v) is,
  which refuses NaN and inf, and must then fit. Each is checked on every call, and only where
  NumPy checks: `np.where` converts a Python int unchecked (wrapping), `np.clip` drops a bound
  beyond the array's type on its own side.
- A value read as a Python value (`range(n)`, `np.zeros(n)`, `if n > 0:`, `v[i]`) decides
  the program itself, as JAX's static arguments do. That reading is recorded as a guard; a
  call where it reads differently needs a program traced for it (`JitFunction` traces one).

`ScalarProgram.replay(args)` does all of these in recorded order, so a check recorded under a
guard is only made when the guard holds. A program with no Python scalar arguments records
nothing and its calls pay nothing.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import XlaExplorerError, as_python_class
from ..ir.module import Metadata

INT64 = np.iinfo(np.int64)

# NumPy's operators as Python computes them between Python scalars.
PYTHON_OPS = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "true_divide": operator.truediv, "divide": operator.truediv,
    "floor_divide": operator.floordiv, "remainder": operator.mod, "power": operator.pow,
    "bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
    "left_shift": operator.lshift, "right_shift": operator.rshift,
    "less": operator.lt, "less_equal": operator.le, "greater": operator.gt,
    "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne,
    "negative": operator.neg, "positive": operator.pos, "absolute": abs,
    "invert": operator.invert, "maximum": max, "minimum": min,
}


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class _Op:
    out: int  # the index of the value it makes
    name: str
    operands: tuple  # indices of earlier values, or Const
    kind: type  # the Python type of the result when traced: bool, int or float
    site: Metadata


@dataclass(frozen=True)
class _Fits:
    ref: int
    dtype: np.dtype
    site: Metadata


@dataclass(frozen=True)
class _Assigned:
    """A Python number written into an array of `dtype` (x[i] = v)."""
    ref: int
    dtype: np.dtype
    site: Metadata


@dataclass(frozen=True)
class _Argument:
    ref: int
    name: str
    site: Metadata


@dataclass(frozen=True)
class _NonNegative:
    """NumPy refuses an integer array to a negative integer power."""
    ref: int
    site: Metadata


@dataclass(frozen=True)
class _Guard:
    ref: int
    value: Any
    site: Metadata


class GuardFailed(XlaExplorerError):
    """A value read as a Python value differs from the traced one: another program is needed."""

    def __init__(self, site: Metadata, traced, given):
        super().__init__(f"traced with {traced!r}, called with {given!r}")
        self.site, self.traced, self.given = site, traced, given


def _error(cls, message: str, site: Metadata, hint: str | None = None):
    op = site.op_name.split("/")[-1] if site.op_name else None
    return as_python_class(cls)(message, op=op, source_file=site.source_file or None,
                                source_line=site.source_line or None, hint=hint)


def python_op(name: str, values: list, site: Metadata):
    """Python's `name` of `values`, or the error Python gives, at the user's line; an int
    result must fit the int64 the compiled program computes it in."""
    try:
        result = PYTHON_OPS[name](*values)
    except Exception as e:  # ZeroDivisionError, OverflowError: Python's own, at the line
        raise _error(type(e), f"{name} of the Python scalars {values}: {e}", site) from e
    if isinstance(result, complex):
        raise _error(ValueError, f"{name} of the Python scalars {values} is the complex "
                                 f"number {result}, which the compiled program cannot hold",
                     site, "Use np.power on float arrays, which gives nan there.")
    if type(result) is int and not INT64.min <= result <= INT64.max:
        raise _error(OverflowError, f"{name} of the Python ints {values} is {result}, "
                                    "beyond int64, the widest integer the compiled program "
                                    "computes Python ints in", site,
                     "Make the values floats (float(n)) or NumPy arrays of the type you want.")
    return result


def check_argument(value, name: str, site: Metadata) -> None:
    """A Python int argument is an int64 parameter: one beyond int64 cannot be passed."""
    if type(value) is int and not INT64.min <= value <= INT64.max:
        raise _error(OverflowError, f"argument {name!r} is the Python int {value}, beyond "
                                    "int64, the widest integer the compiled program holds",
                     site, f"Pass it as a float ({name}=float(...)) or as a NumPy array of the "
                           "type you want.")


def check_fits(value, dtype: np.dtype, site: Metadata) -> None:
    """NumPy's check when a Python int meets an array of an integer type."""
    if type(value) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise _error(OverflowError, f"Python integer {value} out of bounds for {dtype} "
                                        "(NumPy raises this too)", site,
                         f"Use a value that fits {dtype}, or widen the array first "
                         "(x.astype(np.int64)).")


def check_assigned(value, dtype: np.dtype, site: Metadata) -> None:
    """NumPy's check when a Python number is written into an array of `dtype` (x[i] = v,
    np.asarray(v, dtype)): into an integer type a float converts as int(v) does (NaN and inf
    refused, the fraction dropped), and the int must fit."""
    if dtype.kind not in "iu" or type(value) not in (int, float):
        return
    if type(value) is float:
        if value != value or value in (float("inf"), float("-inf")):
            cls, what = ((ValueError, "NaN") if value != value else (OverflowError, "infinity"))
            raise _error(cls, f"cannot convert float {what} to integer, writing it into a "
                              f"{dtype} array (NumPy raises this too)", site,
                         "Check the value first, or write into a float array.")
        value = int(value)
    check_fits(value, dtype, site)


@dataclass
class ScalarProgram:
    """What a trace read of its Python scalar arguments, to replay on each call."""

    args: dict[int, int] = field(default_factory=dict)  # argument number -> value index
    steps: list = field(default_factory=list)  # _Op (makes a value), _Fits, _Guard
    _values: int = 0

    def __bool__(self) -> bool:
        return bool(self.steps)

    def argument(self, number: int, value, name: str, site: Metadata) -> int:
        """A Python scalar argument; an int one is checked to fit int64 on each call."""
        ref = self.args[number] = self._values
        self._values += 1
        if type(value) is int:
            self.steps.append(_Argument(ref, name, site))
        return ref

    def op(self, name: str, operands: tuple, kind: type, site: Metadata) -> int:
        self.steps.append(_Op(self._values, name, operands, kind, site))
        self._values += 1
        return self._values - 1

    def fits(self, ref: int, dtype, site: Metadata) -> None:
        self.steps.append(_Fits(ref, np.dtype(dtype), site))

    def assigned(self, ref: int, dtype, site: Metadata) -> None:
        self.steps.append(_Assigned(ref, np.dtype(dtype), site))

    def nonnegative(self, ref: int, site: Metadata) -> None:
        self.steps.append(_NonNegative(ref, site))

    def guard(self, ref: int, value, site: Metadata) -> None:
        self.steps.append(_Guard(ref, value, site))

    def static_arguments(self) -> dict[int, Any]:
        """{argument number: value} for the arguments read as Python values (guarded)."""
        numbers = {ref: n for n, ref in self.args.items()}
        return {numbers[s.ref]: s.value for s in self.steps
                if isinstance(s, _Guard) and s.ref in numbers}

    def replay(self, args) -> None:
        """Repeat the recorded steps on a call's arguments: raises the error NumPy or Python
        would give, or GuardFailed where the call needs another program."""
        if not self.steps:
            return
        values = [None] * self._values
        for number, ref in self.args.items():
            values[ref] = args[number]
        for step in self.steps:
            if isinstance(step, _Op):
                ins = [v.value if isinstance(v, Const) else values[v] for v in step.operands]
                result = python_op(step.name, ins, step.site)
                if type(result) is not step.kind:  # 2 ** n: an int, or a float for n < 0
                    raise GuardFailed(step.site, step.kind, type(result))
                values[step.out] = result
            elif isinstance(step, _Argument):
                check_argument(values[step.ref], step.name, step.site)
            elif isinstance(step, _Fits):
                check_fits(values[step.ref], step.dtype, step.site)
            elif isinstance(step, _Assigned):
                check_assigned(values[step.ref], step.dtype, step.site)
            elif isinstance(step, _NonNegative):
                if values[step.ref] < 0:
                    raise _error(ValueError, "Integers to negative integer powers are not "
                                             "allowed (NumPy raises this too)", step.site,
                                 "Make the array float first: x.astype(np.float64) ** n.")
            elif values[step.ref] != step.value or type(values[step.ref]) is not type(step.value):
                raise GuardFailed(step.site, step.value, values[step.ref])


def guard_error(failed: GuardFailed, name: str) -> TypeError:
    """For a single Exploration, which holds one program: the call needs another."""
    return _error(TypeError, f"this exploration of {name} was traced with the Python value "
                             f"{failed.traced!r} here, which decided the program (a shape, an "
                             f"index or a branch); it was called with {failed.given!r}",
                  failed.site, "Explore again with the new value, or use xe.jit, which "
                               "compiles a program for each value that decides one.")
