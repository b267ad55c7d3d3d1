"""The registry of eager ops: what a custom-call's `custom_call_target` and `backend_config`
name, and how the runtime runs it with NumPy.

A target `numpy.<path>` is the public NumPy function at that path (`numpy.unique`,
`numpy.random.normal`). Its `backend_config`, when there is one, is the call's other
arguments as JSON, as XLA's custom-calls carry their opaque config: `{"args": [...],
"kwargs": {...}}`, where `{"operand": n}` stands for the custom-call's n-th operand. With no
config the operands are the positional arguments. So HLO text names everything its eager ops
need, and a dumped module runs in a process that never traced it.

A call whose arguments JSON cannot hold (a Python function, a set) is kept in this process
only (`{"process_local": key}`); anywhere else it is an error that names it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import types
import warnings
from typing import Any, Callable

import numpy as np

from ...errors import CompileError, XlaExplorerError
from ...ir.module import Instruction


class NotWritable(XlaExplorerError, TypeError):
    """A call argument that JSON cannot hold."""


# -- arguments as JSON ------------------------------------------------------------------------


def encode(x) -> Any:
    """`x` as JSON data: operands are `Operand`s; tuples, dicts, NumPy values and dtypes are
    tagged so that `decode` gives them back exactly."""
    if isinstance(x, Operand):
        return {"operand": x.n}
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, np.ndarray):
        return {"array": [_number(v) for v in x.ravel().tolist()], "dtype": _dtype_name(x.dtype),
                "shape": list(x.shape)}
    if isinstance(x, np.generic):
        return {"scalar": _number(x.item()), "dtype": _dtype_name(x.dtype)}
    if isinstance(x, float) and not np.isfinite(x):
        return {"float": str(x)}
    if isinstance(x, (int, float)):
        return x
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, tuple):
        return {"tuple": [encode(v) for v in x]}
    if isinstance(x, dict) and all(isinstance(k, str) for k in x):
        return {"dict": {k: encode(v) for k, v in x.items()}}
    if isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic)):
        return {"dtype": _dtype_name(np.dtype(x))}
    if x is bool or x is int or x is float:
        return {"type": x.__name__}
    raise NotWritable(f"a {type(x).__name__} argument cannot be written as JSON")


def decode(x, operands):
    """The value `encode` wrote, with each `{"operand": n}` replaced by operands[n]."""
    if isinstance(x, list):
        return [decode(v, operands) for v in x]
    if not isinstance(x, dict):
        return x
    if "operand" in x:
        return operands[x["operand"]]
    if "array" in x:
        values = [float(v) if isinstance(v, str) else v for v in x["array"]]
        return np.array(values, dtype=x["dtype"]).reshape(x["shape"])
    if "scalar" in x:
        v = x["scalar"]
        return np.dtype(x["dtype"]).type(float(v) if isinstance(v, str) else v)
    if "tuple" in x:
        return tuple(decode(v, operands) for v in x["tuple"])
    if "dict" in x:
        return {k: decode(v, operands) for k, v in x["dict"].items()}
    if "dtype" in x:
        return np.dtype(x["dtype"])
    if "float" in x:
        return float(x["float"])
    if "type" in x:
        return {"bool": bool, "int": int, "float": float}[x["type"]]
    raise ValueError(f"unknown argument {x!r}")


class Operand:
    """The n-th operand of a custom-call, where it goes among the call's arguments."""

    def __init__(self, n: int):
        self.n = n

    def __repr__(self) -> str:
        return f"<operand {self.n}>"


def _number(v):
    # An element of an array or NumPy scalar. JSON has no NaN or infinity: those are written
    # as the strings float() reads back.
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    if isinstance(v, complex):
        raise NotWritable("a complex number cannot be written as JSON")
    return v


def _dtype_name(dtype: np.dtype) -> str:
    if dtype.kind not in "biuf":
        raise NotWritable(f"a {dtype} value cannot be written as JSON")
    return dtype.name


def config_of(args: tuple, kwargs: dict) -> str:
    """The backend_config of a call with these arguments (Operands where the operands go),
    one line of JSON; NotWritable where an argument cannot be written."""
    data = {"args": [encode(a) for a in args], "kwargs": {k: encode(v) for k, v in kwargs.items()}}
    return json.dumps(data, separators=(",", ":"), allow_nan=False)


# -- calls kept in this process ---------------------------------------------------------------

_PROCESS_LOCAL: dict[str, Callable] = {}


def keep_local(name: str, arguments: str, call: Callable) -> str:
    """The backend_config of a call whose arguments JSON cannot hold: a key to `call`, kept in
    this process. The key is the name and a digest of the arguments, so tracing the same call
    again gives the same HLO text."""
    key = f"{name}/{hashlib.sha256(arguments.encode()).hexdigest()[:12]}"
    _PROCESS_LOCAL[key] = call
    return json.dumps({"process_local": key}, separators=(",", ":"))


# -- resolving a target -----------------------------------------------------------------------


# Where an eager op's function may come from, and what it may not be: HLO text can come from
# anywhere, and running it must not read or write files (np.load can unpickle).
NAMESPACES = frozenset({(), ("random",), ("linalg",), ("fft",)})
TOUCH_FILES = frozenset({"load", "save", "savez", "savez_compressed", "loadtxt", "savetxt",
                         "genfromtxt", "fromfile", "fromregex", "memmap"})
UFUNC_METHODS = frozenset({"reduce", "accumulate", "reduceat", "outer"})


# Names in those namespaces that compute nothing from their arguments: they read or change
# the process's state (print options, error handling, the global random state) or run other
# code (NumPy's own test suite), which a stranger's HLO text must not reach.
NOT_EAGER = frozenset({
    "test", "info", "show_config", "show_runtime", "get_include", "set_printoptions",
    "get_printoptions", "printoptions", "seterr", "geterr", "seterrcall", "geterrcall",
    "setbufsize", "getbufsize", "random.seed", "random.set_state", "random.get_state",
    "random.set_bit_generator", "random.get_bit_generator",
})
# What a registered function is: NumPy's Python and C functions, its ufuncs, the global
# RandomState's methods. Not any callable (`np.test` is a callable object that runs pytest).
FUNCTION_KINDS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, np.ufunc,
                  type(np.concatenate), type(np.random.default_rng))


@functools.cache
def registered() -> dict[str, Callable]:
    """Every function an eager op may run, by the `custom_call_target` that names it
    (`numpy.unique`, `numpy.random.normal`, `numpy.add.reduce`): the public NumPy functions
    of the main, random, linalg and fft namespaces and the ufuncs' methods, none that
    touches files or the process's state. Made once, from NumPy's own namespaces; a target
    is looked up here and never followed as a path, so HLO text from anywhere reaches
    nothing else."""
    table: dict[str, Callable] = {}
    with warnings.catch_warnings():  # dir(np) lists names whose access is deprecated
        warnings.simplefilter("ignore")
        for space in sorted(NAMESPACES):
            owner: Any = np
            for part in space:
                owner = getattr(owner, part)
            for name in dir(owner):
                key = ".".join((*space, name))
                if name.startswith("_") or name in TOUCH_FILES or key in NOT_EAGER:
                    continue
                obj = getattr(owner, name, None)
                if not isinstance(obj, FUNCTION_KINDS):
                    continue
                table[f"numpy.{key}"] = obj
                if isinstance(obj, np.ufunc):
                    for method in UFUNC_METHODS:
                        table[f"numpy.{key}.{method}"] = getattr(obj, method)
    return table


def numpy_function(target: str) -> Callable | None:
    """The registered NumPy function `target` names (`registered`), or None."""
    return registered().get(target)


def _sort(args, config: str):
    # numpy.sort custom-calls come from HLO text older than the sort op: backend_config="axis=0"
    axis = config.strip('"').partition("=")[2]
    return np.sort(args[0], axis=None if axis == "None" else int(axis or -1))


# Targets that are not a NumPy function of their operands.
SPECIAL: dict[str, Callable] = {
    "numpy.boolean_mask": lambda args, config: args[0][args[1]],
    "numpy.sort": _sort,
}


@functools.lru_cache(maxsize=256)
def _config(config: str) -> Any:
    """An eager op's backend_config parsed, once per text (each call of a clustered program
    runs its eager ops again: parsing them then would allocate beside NumPy's own work).
    Not to be modified: every call shares it."""
    try:
        return json.loads(config) if config else {}
    except ValueError:
        return None


def run_eager(inst: Instruction, operands) -> Any:
    """The NumPy result of the eager op `inst` on `operands`."""
    target = str(inst.attr("custom_call_target", ""))
    config = str(inst.attr("backend_config", "") or "")
    if target in SPECIAL:
        return SPECIAL[target](operands, config)
    data = _config(config)
    if not isinstance(data, dict):
        raise _unknown(inst, target, f"its backend_config is not a JSON object: {config}")
    if "process_local" in data:
        call = _PROCESS_LOCAL.get(data["process_local"])
        if call is None:
            raise _unknown(inst, target, "its arguments could not be written into the HLO "
                                         "text, so it runs only in the process that traced it")
        return call(operands)
    func = numpy_function(target)
    if func is None:
        raise _unknown(inst, target, "it names no public NumPy function")
    if not data:  # the operands are the arguments
        return func(*operands)
    args = decode(data.get("args", []), operands)
    kwargs = {k: decode(v, operands) for k, v in data.get("kwargs", {}).items()}
    return func(*args, **kwargs)


def _unknown(inst: Instruction, target: str, why: str) -> CompileError:
    line = inst.metadata.source_line
    where = f"line {line}" if line else "no source line"
    return CompileError(f"eager op {inst.name} (custom_call_target=\"{target}\", {where}) cannot "
                        f"run: {why}", op=target, source_file=inst.metadata.source_file or None,
                        source_line=line or None,
                        hint="Trace the function again in this process to run it.")
