"""A traced function's arguments: their names, what is refused as an argument and why, and
the read-only views a trace reads them through (trace/tracer.py's `trace`)."""
from __future__ import annotations

import inspect

import numpy as np

from ..errors import as_python_class
from ..ir.shape import SUPPORTED_NAMES, is_supported_dtype
from .context import located

__all__ = ["argument_names", "check_plain_array", "dtype_refusal", "read_only_view",
           "sanitize", "subclass_refusal", "wrote_to_argument"]


def argument_names(f, n: int) -> list[str]:
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(n):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        elif params and params[-1].kind == params[-1].VAR_POSITIONAL:
            names.append(f"{params[-1].name}{i}")
        else:
            names.append(f"arg{i}")
    return names


def sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"p_{out}"



# Per dtype kind the explorer refuses: what it is called, and what to pass instead ({name}: the
# argument's name).
_REFUSED_KINDS = {
    "c": ("complex numbers are", "Pass the real and imaginary parts as two float arrays "
                                 "({name}.real, {name}.imag)."),
    "M": ("dates and times (datetime64) are", "Pass them as numbers: {name}.astype(np.int64) "
                                              "counts the dtype's units since 1970-01-01."),
    "m": ("time spans (timedelta64) are", "Pass them as numbers: {name}.astype(np.int64) "
                                          "counts the dtype's units."),
    "U": ("strings are", "Pass numbers that stand for them, e.g. the codes "
                         "np.unique({name}, return_inverse=True)[1]."),
    "S": ("bytes are", "Pass numbers that stand for them, e.g. the codes "
                       "np.unique({name}, return_inverse=True)[1]."),
    "V": ("structured and void arrays are", "Pass each field as an array of its own: "
                                            "{name}['field']."),
    "O": ("object arrays are", "Convert it to a number type first: {name}.astype(np.float64)."),
}

def subclass_refusal(arg, name: str) -> tuple[str, str] | None:
    """Why an ndarray subclass (np.matrix, np.ma.MaskedArray, ...) `name` is refused ("is a
    numpy.matrix, ..."), and what to pass instead; None for anything else. The trace sees a plain array, so what the subclass
    changes (`*` as a matrix product, a mask) would be lost, and the compiled answer would
    differ from NumPy's silently."""
    if not isinstance(arg, np.ndarray) or type(arg) is np.ndarray:
        return None
    cls = type(arg)
    if isinstance(arg, np.ma.MaskedArray):
        lost = "its mask would be ignored"
        fix = (f"{name}.filled(v), with v the value a masked entry should count as (0 for a "
               f"sum), or np.asarray({name}) to drop the mask")
    elif isinstance(arg, np.matrix):
        lost = "* and ** would be element-wise instead of matrix products"
        fix = f"np.asarray({name}), and write @ for a matrix product"
    else:
        lost = "what the subclass changes would be lost"
        fix = f"np.asarray({name})"
    return (f"is a {cls.__module__}.{cls.__qualname__}, a subclass of np.ndarray; the "
            f"explorer traces plain arrays, so {lost}", fix)


def check_plain_array(arg, name: str) -> None:
    """A TypeError, at the user's line, for an ndarray subclass passed as argument `name`."""
    refusal = subclass_refusal(arg, name)
    if refusal is not None:
        why, fix = refusal
        raise located(as_python_class(TypeError), f"argument {name!r} {why}", name,
                      f"Pass {fix}.")


def dtype_refusal(name: str, dtype: np.dtype) -> tuple[str, str]:
    """Why an argument's dtype is refused, and what to pass instead."""
    if not dtype.isnative and is_supported_dtype(dtype.newbyteorder("=")):
        order = "big" if dtype.byteorder == ">" else "little"
        return (f"argument {name!r} has dtype {dtype.str}, {dtype.newbyteorder('=')} in "
                f"{order}-endian byte order, not this machine's, which the explorer does not "
                "support",
                f"Pass {name}.astype({name}.dtype.newbyteorder('=')).")
    if dtype.kind in _REFUSED_KINDS:
        what, hint = _REFUSED_KINDS[dtype.kind]
        return (f"argument {name!r} has dtype {dtype}: {what} not supported "
                f"(the explorer's types are {SUPPORTED_NAMES})", hint.format(name=name))
    return (f"argument {name!r} has dtype {dtype}; supported are {SUPPORTED_NAMES}",
            f"Convert it first: {name}.astype(np.float64) or similar.")


def read_only_view(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def wrote_to_argument(e: BaseException, args) -> bool:
    """Whether `e` (or an error it was raised from) is a write into a read-only array
    refused, NumPy's or the tracer's, where an argument is an array: perhaps an update of
    an argument's read-only view."""
    while e is not None:
        if "read-only" in str(e) and any(isinstance(a, np.ndarray) for a in args):
            return True
        e = e.__cause__ or e.__context__
    return False
