"""Traced arrays: stand-ins for NumPy arrays that record every operation as HLO.

A Tracer holds an HLO instruction (what the compiled program computes) and the NumPy value that
eager execution gives at the same point (the reference for checks, and the concrete shape of
value-dependent ops). NumPy hands every ufunc and array function applied to a Tracer to
`__array_ufunc__` / `__array_function__`; those, indexing, `.astype` and the operators are
installed on the class by `trace/numpy/array_methods.py`, beside the lowerings they call (the
lowerings import this module, so this one imports none of them). The trace in progress and
the user's line are `context.py`'s.

Views follow NumPy: `y = x[1:3]` shares x's storage, so `y += 1` changes x, and a later write to
x shows through y. A view keeps its base and re-derives its instruction whenever the base's
changes; writes through an index view become writes to the base.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import TraceError, UnsupportedOpError, as_python_class
from ..ir.module import Instruction, Metadata, Module
from ..ir.shape import SUPPORTED_NAMES, Shape, is_supported_dtype
from ..tree import flatten
from .builder import Builder
from .context import (active_builder, builtin_hint, dtype_error, inside_numpy, leaked_error,
                      located, refuse_unreturnable, tracing, user_site, vectorize_error)
from .arguments import (argument_names, check_plain_array, dtype_refusal, read_only_view,
                        sanitize, wrote_to_argument)
from .scalars import ScalarProgram, check_argument


class Tracer:
    """A traced NumPy array."""

    __array_priority__ = 1000
    __slots__ = ("_b", "_node", "_value", "_weak", "_ref", "_base", "_derive", "_write_back",
                 "_base_node", "__weakref__")

    def __init__(self, b: Builder, node: Instruction, value: Any, *, weak: bool = False,
                 base: Tracer | None = None, derive: Callable | None = None,
                 write_back: Callable | None = None):
        self._b = b
        self._node = node
        self._value = value
        self._weak = weak  # a Python scalar argument: promotes like one (NEP 50)
        self._ref = None  # a weak scalar's value in its builder's ScalarProgram
        self._base = base
        self._derive = derive
        self._write_back = write_back
        self._base_node = base.node if base is not None else None

    # -- the instruction, kept in step with the base of a view ------------------------------

    @property
    def node(self) -> Instruction:
        if self._base is not None:
            base_node = self._base.node
            if base_node is not self._base_node:
                self._node = self._derive(base_node)
                self._base_node = base_node
        return self._node

    def _set_node(self, new: Instruction, what: str) -> None:
        """Replace what this array holds (an in-place update), writing through views."""
        if self._base is None:
            self._node = new
            return
        if self._write_back is None:
            eager = self._value
            if isinstance(eager, np.ndarray) and not eager.flags.writeable:
                raise located(TraceError, f"{what} writes through a read-only view (one made "
                                          "by np.broadcast_to); NumPy refuses that write too",
                              what, "Take a copy first: y = np.broadcast_to(x, shape).copy().")
            raise located(TraceError, f"{what} writes through a view made in several steps "
                                      "(np.rot90 by a quarter turn: a flip and a transpose); "
                                      "the explorer writes back through views of one step "
                                      "only (a slice, reshape, transpose or flip)",
                          what, "Take a copy, update it, and assign it back to the array the "
                                "view came from.")
        self._base._set_node(self._write_back(self._base.node, new), what)

    @property
    def value(self):
        return self._value

    # -- static properties ------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        # A Python value the program may depend on: where it comes from np.unique & co.,
        # every run must check it (Builder.read_shape).
        self._b.read_shape(self._node)
        return self._node.dims

    @shape.setter
    def shape(self, value):
        raise located(TraceError, "assigning to .shape reshapes an array in place, which a "
                                  "traced program does not do", "ndarray.shape",
                      f"Reshape to a new name instead: a = a.reshape({value!r}).")

    @property
    def dtype(self) -> np.dtype:
        return self._node.dtype

    @property
    def is_python_number(self) -> bool:
        """Whether this stands for a Python bool, int or float argument (a weak type)."""
        return self._weak

    @property
    def ndim(self) -> int:
        return len(self._node.dims)  # the rank of a value-dependent result does not vary

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def T(self):
        return np.transpose(self)

    @property
    def mT(self):
        return np.swapaxes(self, -1, -2)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        return f"Tracer({self._node.name}: {self._node.shape})"

    def __format__(self, spec: str) -> str:
        # f"{loss:.3f}" formats the value the trace saw (a Python scalar argument's is
        # guarded); a cell's printed text comes from its eager run.
        if not spec:
            return repr(self)
        value = self._static("format()") if self._weak and self._ref is not None else self._value
        return format(value, spec)

    def __getattr__(self, name: str):
        # Only names the class lacks get here: say what the user wrote, about an ndarray.
        if name.startswith("_"):  # protocols and private names: a plain miss
            raise AttributeError(name)
        if hasattr(np.ndarray, name):
            raise located(as_python_class(AttributeError, UnsupportedOpError),
                          f"ndarray.{name} is not supported on traced arrays", f"ndarray.{name}",
                          _METHOD_HINTS.get(name, f"Use the NumPy function (np.{name}(x)) if "
                                                  "there is one; the supported functions are "
                                                  "listed in the README."))
        close = difflib.get_close_matches(name, dir(np.ndarray), n=1)
        raise located(as_python_class(AttributeError), f"ndarray has no attribute {name!r}",
                      f"ndarray.{name}", f"Did you mean .{close[0]}?" if close else None)

    # -- what tracing cannot do -------------------------------------------------------------

    def _concrete(self, what: str):
        if self._b is not active_builder():
            raise leaked_error()
        if self._weak and self._ref is not None:
            return self._static(what)
        raise located(TraceError, f"{what} of a traced array needs its value, which is only "
                                  "known when the compiled program runs", what,
                      builtin_hint() or "Shapes are static but values are not: express the "
                      "choice with np.where(condition, a, b) instead of Python if/int()/float().")

    def _static(self, what: str):
        """A Python scalar argument read as a Python value: it decides the program (a shape,
        an index, a branch), so the value is guarded, as a JAX static argument would be."""
        file, line = user_site()
        self._b.scalars.guard(self._ref, self._value,
                              Metadata(f"{self._b.name}/{what}", file or "", line or 0))
        return self._value

    def __bool__(self):
        return bool(self._concrete("bool()"))

    def __int__(self):
        return int(self._concrete("int()"))

    def __float__(self):
        return float(self._concrete("float()"))

    def __complex__(self):
        return complex(self._concrete("complex()"))

    def __index__(self):
        value = self._concrete("int() (as an index, in range(), as a count)")
        if isinstance(value, float):
            raise TypeError("'float' object cannot be interpreted as an integer")
        return int(value)

    def __round__(self, ndigits=None):
        raise located(TraceError, "round() of a traced array needs its value, which is only "
                                  "known when the compiled program runs", "round()",
                      "np.round(x) rounds inside the compiled program (an array, not a Python "
                      "number).")

    def item(self, *args):
        return self._concrete(".item()")

    def tolist(self):
        return self._concrete(".tolist()")

    def __array__(self, dtype=None, copy=None):
        # NumPy asks for a concrete array when it meets a traced one it cannot dispatch on:
        # np.asarray(x), np.float32(x), or a list holding traced arrays (np.sum([x, y])).
        if self._weak and self._ref is not None and self._b is active_builder():
            # np.float32(n), np.int32(n) of a Python number argument cast its value, which
            # then decides the program (guarded, as float(n) is).
            what = f"np.{np.dtype(dtype).name}()" if dtype is not None else "np.asarray()"
            return np.asarray(self._static(what), dtype=dtype)
        node = self._node if self._b is active_builder() else None
        name = node.metadata.op_name if node is not None and node.opcode == "parameter" else ""
        if dtype is not None and name:
            typename = np.dtype(dtype).name
            raise located(TraceError, f"np.{typename}({name}) (or np.asarray({name}, "
                                      f"np.{typename})) of the argument {name!r}, a traced "
                                      f"{self.dtype} array of shape {self.shape}, needs its "
                                      "value, which is only known when the compiled program "
                                      "runs", f"np.{typename}()",
                          f"Change its type with {name}.astype(np.{typename}).")
        if inside_numpy(np.vectorize):
            raise vectorize_error()
        raise located(TraceError, "converting a traced array to a NumPy array (np.asarray, "
                                  "np.array, np.float32(x), or a list of traced arrays passed "
                                  "to NumPy) needs its value, which is only known when the "
                                  "compiled program runs", "np.asarray()",
                      "Combine traced arrays with np.stack([...]) or np.concatenate, and change "
                      "types with x.astype(...); a choice between values is np.where.")

    # -- methods, as NumPy's functions --------------------------------------------------------
    # NumPy's protocols (__array_ufunc__, __array_function__), indexing, .astype and the
    # operators are set on the class by trace/numpy/array_methods.py.

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return np.reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return np.transpose(self, axes or None)

    def swapaxes(self, a, b):
        return np.swapaxes(self, a, b)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return np.max(self, axis=axis, out=out, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return np.min(self, axis=axis, out=out, keepdims=keepdims)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return np.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return np.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def argmax(self, axis=None, out=None, keepdims=False):
        return np.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, keepdims=False):
        return np.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return np.all(self, axis=axis, out=out, keepdims=keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return np.any(self, axis=axis, out=out, keepdims=keepdims)

    def ravel(self, order="C"):
        return np.ravel(self, order=order)

    def flatten(self, order="C"):
        return np.ravel(self, order=order).copy()

    def squeeze(self, axis=None):
        return np.squeeze(self, axis=axis)

    def clip(self, min=None, max=None, out=None):
        return np.clip(self, min, max, out=out)

    def dot(self, other):
        return np.dot(self, other)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def copy(self, order="C"):
        copied = np.copy(self)
        # A NumPy scalar's .copy() is a NumPy scalar; np.copy makes it a 0-d array.
        return copied[()] if isinstance(self._value, np.generic) else copied

    def round(self, decimals=0):
        return np.round(self, decimals)

    def cumsum(self, *a, **k):
        return np.cumsum(self, *a, **k)

    def cumprod(self, *a, **k):
        return np.cumprod(self, *a, **k)

    def nonzero(self):
        return np.nonzero(self)

    # .sort() (in place) and .argsort() are set by trace/numpy/sorting.py.


_METHOD_HINTS = {
    "view": "Reinterpreting an array's bits is not supported; to convert values use "
            "x.astype(np.int64).",
    "fill": "Arrays are filled by assignment: x[...] = value.",
}


# -- operands: what a lowering, or the end of a trace, makes of a value ----------------------


def value_of(x):
    """The eager NumPy value of x (Tracers unwrapped, containers recursively)."""
    if isinstance(x, Tracer):
        return x.value
    if isinstance(x, (list, tuple)):
        return type(x)(value_of(v) for v in x)
    return x


def read_shape(x) -> None:
    """Note that the trace reads x's shape as a Python value (see Builder.read_shape): for a
    lowering whose result takes x's shape without reading x (np.zeros_like, np.shape)."""
    if isinstance(x, Tracer):
        x._b.read_shape(x._node)


def node_of(x, dtype=None) -> Instruction:
    """The instruction for x: a Tracer's, or a constant for a Python or NumPy value."""
    b = active_builder()
    if isinstance(x, Tracer):
        if x._b is not b:
            raise located(TraceError, "a traced array from another trace was used here",
                          "tracing", "Do not keep traced arrays across calls (globals, closures).")
        node = x.node
        if x._ref is not None and dtype is not None and np.dtype(dtype).kind in "iu" \
                and np.dtype(dtype) != np.int64:  # NumPy's overflow check, on each call
            b.scalars.fits(x._ref, dtype, b.site)
    elif isinstance(x, Instruction):
        node = x
    else:
        arr = np.asarray(x)
        if dtype is None and not is_supported_dtype(arr.dtype):
            raise dtype_error("a constant", arr.dtype)
        if dtype is not None:
            with np.errstate(all="ignore"):
                arr = arr.astype(dtype)
        node = b.literal(arr)
    return b.convert(node, dtype) if dtype is not None else node


def assigned_node(x, dtype) -> Instruction:
    """node_of(x, dtype) for a value written into an array of `dtype` (x[i] = v,
    np.asarray(v, dtype)): NumPy converts a Python number there as int(v) does, refusing NaN,
    inf and a float beyond the type, which a Python scalar argument is checked for on each
    call (an int's check is node_of's)."""
    if isinstance(x, Tracer) and x._ref is not None and type(x.value) is float \
            and np.dtype(dtype).kind in "iu":
        b = active_builder()
        b.scalars.assigned(x._ref, dtype, b.site)
    return node_of(x, dtype)


# -- tracing a function ----------------------------------------------------------------------


@dataclass
class Traced:
    """What tracing a function gives: the module, and NumPy's own answer for the same call."""

    module: Module
    eager_outputs: list  # NumPy's values, one per output leaf (np.generic for scalars)
    treedef: Any  # how to rebuild the function's return value from the leaves
    # Leaves of the return value; the root tuple then holds updated inputs (`aliases`), then
    # the value-dependent results whose shape the trace read (Builder.read_shape).
    num_outputs: int
    aliases: tuple  # (output index, parameter number) for inputs the function changed
    arg_names: list[str]
    eager_args: list  # the inputs after eager execution (in-place updates applied)
    scalars: ScalarProgram  # what the trace read of its Python scalar arguments

    def update_sites(self) -> dict[int, tuple]:
        """{parameter number: (file, line)} for each argument the function updates in place,
        at its last write (the line the output carrying it back was made at)."""
        root = self.module.entry.root
        return {p: (root.operands[out].metadata.source_file or None,
                    root.operands[out].metadata.source_line or None)
                for out, p in self.aliases}


def make_parameter(b: Builder, number: int, arg, name: str, copy: bool = True) -> Tracer:
    """A parameter Tracer for one argument. Tracing never changes the caller's arrays: the
    Tracer's value is a copy, or, without `copy`, a read-only view, which an in-place
    update refuses (`trace` then traces again with copies)."""
    if isinstance(arg, Tracer):
        raise TypeError("nested tracing is not supported: pass NumPy arrays")
    check_plain_array(arg, name)
    weak = isinstance(arg, (bool, int, float)) and not isinstance(arg, np.generic)
    if weak:
        check_argument(arg, name, b.site)
        value = arg
        dtype = np.dtype(bool if isinstance(arg, bool) else int if isinstance(arg, int) else float)
        dims = ()
    elif isinstance(arg, (np.ndarray, np.generic)):
        value = ((np.array(arg, copy=True) if copy else read_only_view(arg))
                 if isinstance(arg, np.ndarray) else arg)
        dtype, dims = arg.dtype, np.shape(arg)
    elif isinstance(arg, complex):
        raise located(as_python_class(TypeError),
                      f"argument {name!r} is the Python complex {arg!r}: complex numbers are "
                      f"not supported (the explorer's types are {SUPPORTED_NAMES})", name,
                      "Pass the real and imaginary parts as two floats.")
    else:
        raise located(as_python_class(TypeError),
                      f"argument {name!r} is a {type(arg).__name__}; expected a NumPy array, "
                      "a NumPy scalar or a Python number", name,
                      "Other values (None, strings, tuples) cannot be arguments of a compiled "
                      f"program: close over them instead (xe.jit(lambda x: f(x, {name}=...))).")
    if not is_supported_dtype(dtype):
        message, hint = dtype_refusal(name, np.dtype(dtype))
        raise located(as_python_class(TypeError), message, name, hint)
    node = b.parameter(number, Shape(dtype, dims), sanitize(name))
    tracer = Tracer(b, node, value, weak=weak)
    if weak:
        tracer._ref = b.scalars.argument(number, arg, name, b.site)
    return tracer


def trace(f: Callable, args, *, name: str | None = None, autocluster: bool = False) -> Traced:
    """Run `f` on Tracers for `args`; record HLO and the eager NumPy result. With
    `autocluster`, NumPy functions the op table lacks become opaque custom-calls.

    The arguments' values are read-only views of the caller's arrays: copying them cost
    the first answer as much as a pass over the inputs (3 ms of a 1e6-element sum's 37 ms
    from its kernel image). A function that updates an argument in place is traced again,
    from copies."""
    try:
        return _trace(f, args, name, autocluster, copy=False)
    except Exception as e:  # noqa: BLE001  (NumPy's refusal, or ours: TraceError)
        if not wrote_to_argument(e, args):
            raise
    # A write the read-only views refused: from copies, a write NumPy would refuse too (one
    # through np.broadcast_to's view) is refused again, with its own message.
    return _trace(f, args, name, autocluster, copy=True)


def _trace(f: Callable, args, name: str | None, autocluster: bool, copy: bool) -> Traced:
    name = sanitize(name or getattr(f, "__name__", "f"))
    if name == "_lambda_":
        name = "lambda"
    b = Builder(name, autocluster)
    arg_names = argument_names(f, len(args))
    params = []
    def_file, def_line = _return_site(f)
    for i, (a, n) in enumerate(zip(args, arg_names)):
        # A parameter's metadata names the argument and the function's `def` line, as JAX's do.
        b.site = Metadata(n, def_file, def_line)
        params.append(make_parameter(b, i, a, n, copy))
    b.site = Metadata()
    originals = [p.node for p in params]
    with tracing(b):
        out = f(*params)
        leaves, treedef = flatten(out)
        refuse_unreturnable(f, leaves)
        b.site = Metadata(f"{name}/return", *_return_site(f))
        nodes = [node_of(leaf) for leaf in leaves]
        eager = [_snapshot(value_of(leaf)) for leaf in leaves]
        aliases = []
        for p, original in zip(params, originals):
            if p.node is not original and not p._weak:
                aliases.append((len(nodes), original.parameter_number))
                nodes.append(p.node)
    for n in nodes:
        if not is_supported_dtype(n.dtype):
            raise dtype_error("the return value", n.dtype)
    # The value-dependent results whose shape the trace read go out last (unflatten drops
    # them): as outputs they run on every call, where a new shape stops the program.
    returned = set(nodes)
    nodes += [n for n in b.shape_reads if n not in returned]
    module = b.module(name, nodes, aliases)
    return Traced(module, eager, treedef, len(leaves), tuple(aliases), arg_names,
                  [p.value for p in params], b.scalars)


def _return_site(f):
    code = getattr(f, "__code__", None)
    if code is None:
        return "", 0
    return code.co_filename, code.co_firstlineno


def _snapshot(v):
    return v.copy() if isinstance(v, np.ndarray) else v
