"""How NumPy's calls on traced arrays reach the lowerings: `call_ufunc` (what
`__array_ufunc__` gets) and `call_function` (what `__array_function__` gets), both reading the
tables in `registry`; and writing a result into an existing array (out=, `x += y`).

The dispatcher computes NumPy's own result on the eager values (the reference, and the ground
truth for shapes and types), asks the row for the HLO, and checks that the HLO's shape and type
are NumPy's. Element types follow NumPy exactly: a ufunc's loop types come from
`ufunc.resolve_dtypes`, which applies NEP 50 (Python scalars are weak), and the operands are
converted to them before the op.
"""
from __future__ import annotations

import numpy as np

from ...errors import TraceError, UnsupportedOpError
from ...ir.shape import is_supported_dtype
from ..context import active_builder, at_user_site, dtype_error, located
from ..tracer import Tracer, node_of, read_shape, value_of
from .elementwise_functions import frexp_parts, modf_parts
from .indexing import view_write_back
from .opaque import opaque_call, runs_eagerly
from .registry import (EAGER, FUNCTIONS, GUFUNCS, IN_PLACE, STATIC, UFUNC_AT, UFUNC_REDUCE,
                       UFUNCS, VIEWS)
from .scans import accumulate
from .util import eager, is_python_scalar, offering_autocluster, unsupported, wrap


# -- ufuncs ------------------------------------------------------------------------------------


def dtype_key(x):
    """What `resolve_dtypes` wants for x: a dtype, or the Python type of a weak scalar."""
    if is_python_scalar(x):
        v = x.value if isinstance(x, Tracer) else x
        # NumPy types a Python bool as np.bool_ (the lowest type, so it never widens
        # anything); resolve_dtypes takes only int, float and complex as weak Python types.
        return np.dtype(np.bool_) if isinstance(v, bool) else type(v)
    if isinstance(x, Tracer):
        return x.dtype
    return np.asarray(x).dtype


def call_ufunc(ufunc, method: str, inputs, kwargs):
    """`ufunc.method(*inputs, **kwargs)` with a traced input: its row in UFUNCS (or GUFUNCS,
    or the reduction UFUNC_REDUCE names), an opaque call under autocluster, or an error."""
    name = ufunc.__name__
    b = active_builder()
    with at_user_site(b, name):
        if method == "reduce" and name in UFUNC_REDUCE:
            axis = kwargs.pop("axis", 0)
            keepdims = kwargs.pop("keepdims", False)
            if kwargs:
                error = unsupported(f"{name}.reduce", f" with {', '.join(kwargs)}")
                return _eager_or_refuse(error, ufunc.reduce, f"{name}.reduce", inputs,
                                        dict(kwargs, axis=axis, keepdims=keepdims))
            return call_function(UFUNC_REDUCE[name], (inputs[0],),
                                 {"axis": axis, "keepdims": keepdims})
        if method == "outer" and ufunc.nin == 2 and name in UFUNCS:
            return _outer(ufunc, inputs, kwargs)
        if method == "at" and name in UFUNC_AT:  # np.add.at & co. (indexing.py)
            return UFUNC_AT[name](ufunc, *inputs, **kwargs)
        # -- scans: ufunc.accumulate as a reduce-window over a growing window
        if method == "accumulate":
            scanned = accumulate(ufunc, inputs, kwargs)
            if scanned is not None:
                return scanned
        if method != "__call__":
            return _eager_or_refuse(unsupported(f"{name}.{method}"), getattr(ufunc, method),
                                    f"{name}.{method}", inputs, kwargs)
        if name == "divmod" and not kwargs:
            return np.floor_divide(*inputs), np.remainder(*inputs)
        if name in ("modf", "frexp") and not kwargs:  # two outputs: compositions of one-output ops
            return (modf_parts if name == "modf" else frexp_parts)(inputs[0])
        if name in GUFUNCS:
            if set(kwargs) - {"out"}:
                return _eager_or_refuse(unsupported(name, f" with {', '.join(kwargs)}="), ufunc,
                                        name, inputs, kwargs)
            out = kwargs.pop("out", None)
            return _finish_out(GUFUNCS[name](*inputs), out)
        if name not in UFUNCS:
            return _eager_or_refuse(unsupported(name), ufunc, name, inputs, kwargs)
        rest = [k for k, v in kwargs.items() if k not in ("out", "dtype") and not (
            k == "casting" and v == "same_kind" or k == "where" and v is True)]
        if rest:
            return _eager_or_refuse(unsupported(name, f" with {', '.join(k + '=' for k in rest)}"),
                                    ufunc, name, inputs, kwargs)
        out = kwargs.pop("out", None)
        dtype = kwargs.pop("dtype", None)
        value = eager(ufunc, f"np.{name}", *value_of(list(inputs)),
                      **({"dtype": dtype} if dtype is not None else {}))
        keys = tuple(dtype_key(x) for x in inputs) + (None,) * ufunc.nout
        sig = None if dtype is None else (None,) * ufunc.nin + (np.dtype(dtype),)
        try:
            loop = (ufunc.resolve_dtypes(keys) if sig is None
                    else ufunc.resolve_dtypes(keys, signature=sig, casting="unsafe"))
        except Exception as e:
            raise located(TraceError, f"np.{name} has no loop for these types: {e}", name) from e
        in_types, out_type = loop[:ufunc.nin], loop[ufunc.nin]
        for t in in_types:
            if not is_supported_dtype(t):
                raise dtype_error(f"np.{name}", t)
        shape = np.broadcast_shapes(*(np.shape(value_of(x)) for x in inputs))
        if name in _COMPARISONS and in_types[0].kind in "iu":
            exact = _compare_python_int(b, inputs, in_types, value, shape)
            if exact is not None:
                return _finish_out(wrap(exact, value, f"np.{name}"), out)
            in_types = _exact_comparison_types(inputs, in_types)
        lower = UFUNCS[name]
        if name in _COMPARISONS and len(set(in_types)) > 1:
            lower = _mixed_sign_comparison(_COMPARISONS[name])
        if _F16 in in_types:
            # NumPy's float16 loops compute in float32 and round the result once: so does
            # the lowering, on the operands converted to float16 (a Python float rounds
            # there first, as NumPy converts it) and then to float32.
            if getattr(lower, "takes_inputs", False):
                inputs = [float(np.float16(x)) if is_python_scalar(x) and isinstance(x, float)
                          else x for x in inputs]
                node = lower(b, shape, inputs, tuple(_F32 if t == _F16 else t
                                                     for t in in_types))
            else:
                node = lower(b, *(b.broadcast_to(b.convert(node_of(x, t), _F32), shape)
                                  for x, t in zip(inputs, in_types)))
        elif getattr(lower, "takes_inputs", False):
            node = lower(b, shape, inputs, in_types)
        else:
            node = lower(b, *(b.broadcast_to(node_of(x, t), shape)
                              for x, t in zip(inputs, in_types)))
        if name == "power" and out_type.kind in "iu" and isinstance(inputs[1], Tracer) \
                and inputs[1]._ref is not None:
            # NumPy's ValueError, on each call; after the conversion's OverflowError (node_of's
            # check), which NumPy raises first (int32 ** -2**40).
            b.scalars.nonnegative(inputs[1]._ref, b.site)
        node = b.convert(node, out_type)
        return _finish_out(wrap(node, value, f"np.{name}"), out)


def _outer(ufunc, inputs, kwargs):
    """`ufunc.outer(a, c)` is the ufunc of a, given c's dimensions as trailing ones, and c.
    NumPy makes Python scalars arrays first (strong types, not NEP 50's weak ones)."""
    def strong(x):
        v = np.asarray(value_of(x))
        if isinstance(x, Tracer):
            return x if not x._weak else wrap(node_of(x, v.dtype), v, f"np.{ufunc.__name__}")
        return v
    a, c = strong(inputs[0]), strong(inputs[1])
    return ufunc(np.reshape(a, np.shape(a) + (1,) * np.ndim(c)), c, **kwargs)


_COMPARISONS = {"less": "LT", "less_equal": "LE", "greater": "GT", "greater_equal": "GE",
                "equal": "EQ", "not_equal": "NE"}


def _exact_comparison_types(inputs, in_types):
    """NumPy 2 compares an integer array with a Python int exactly, even one outside the
    array's type (int32 array < -2**34 is all False), where converting the int would wrap:
    compare in int64, which holds every Python int argument."""
    def python_int(x):
        return is_python_scalar(x) and isinstance(value_of(x), int) \
            and not isinstance(value_of(x), bool)

    if any(python_int(x) for x in inputs):
        if _U64 in in_types:
            # uint64 holds values int64 does not: the array stays uint64, the int is int64
            # (or uint64 where it is beyond int64), and the two compare exactly.
            return tuple(_U64 if not python_int(x) or value_of(x) > _I64.max else _I64.dtype
                         for x in inputs)
        return (np.dtype(np.int64),) * len(in_types)
    return in_types


_U64, _I64 = np.dtype(np.uint64), np.iinfo(np.int64)
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
# A negative int64 against any uint64: the answer of each direction, as `left < right` is
# True when the left side is the negative one.
_NEGATIVE_LEFT = {"EQ": False, "NE": True, "LT": True, "LE": True, "GT": False, "GE": False}
_NEGATIVE_RIGHT = {"EQ": False, "NE": True, "LT": False, "LE": False, "GT": True, "GE": True}


def _mixed_sign_comparison(direction):
    """NumPy 2 compares uint64 with int64 exactly (its own loop, no float64): a negative
    int64 is below every uint64, and any other converts to uint64 without change."""
    def lower(b, x, y):
        signed, unsigned = (x, y) if x.dtype.kind == "i" else (y, x)
        answers = _NEGATIVE_LEFT if signed is x else _NEGATIVE_RIGHT
        negative = b.compare(signed, b.scalar_like(0, signed), "LT")
        as_unsigned = b.convert(signed, unsigned.dtype)
        pair = (as_unsigned, unsigned) if signed is x else (unsigned, as_unsigned)
        answer = b.full(answers[direction], np.bool_, x.dims)
        return b.select(negative, answer, b.compare(*pair, direction))
    return lower


def _compare_python_int(b, inputs, in_types, value, shape):
    """A comparison with a Python int literal beyond int64 (beyond uint64 for a uint64 array)
    has the same answer for every integer array element; None when there is no such
    literal."""
    hi = np.iinfo(np.uint64).max if _U64 in in_types else _I64.max
    for x in inputs:
        v = value_of(x)
        if is_python_scalar(x) and type(v) is int and not isinstance(x, Tracer) and \
                not _I64.min <= v <= hi:
            answer = bool(np.asarray(value).flat[0]) if np.size(value) else False
            for y in inputs:  # the answer takes their shape without reading them
                read_shape(y)
            return b.full(answer, np.bool_, shape)
    return None


# -- writing a result into an existing array: out=, x += y ------------------------------------


def _finish_out(result: Tracer, out):
    if out is None:
        return result
    target = out[0] if isinstance(out, tuple) else out
    if not isinstance(target, Tracer):
        raise located(TraceError, "out= must be a traced array (an input or an array made in "
                                  "the function)", "out=", "Drop out= and assign the result.")
    return assign_inplace(target, result, "out=")


# The in-place ufuncs' operators, for the hint that says how to write them out of place.
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "divide": "/",
              "floor_divide": "//", "remainder": "%", "power": "**", "bitwise_and": "&",
              "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<", "right_shift": ">>",
              "matmul": "@"}


def _out_of_place(what: str) -> str:
    """`x + ...` for "add (in place)", `np.sort(x)` for "ndarray.sort", ...; the
    expression that makes a new array instead of writing into x."""
    name = what.split()[0]
    if name in _OPERATORS:
        return f"x {_OPERATORS[name]} ..."
    if name == "ndarray.sort":
        return "np.sort(x)"
    return f"np.{name}(x, ...)" if name.isidentifier() else "..."


def assign_inplace(target: Tracer, result, what: str) -> Tracer:
    """`target op= ...`: NumPy writes the result into target's storage (same shape, type)."""
    b = active_builder()
    with at_user_site(b, what):
        if not isinstance(target.value, np.ndarray):
            # A 0-d NumPy scalar is immutable: Python rebinds the name to the new value.
            return result
        rvalue = value_of(result)
        if not np.can_cast(np.result_type(rvalue), target.dtype, "same_kind"):
            raise located(TraceError, f"{what}: cannot cast {np.result_type(rvalue)} to "
                                      f"{target.dtype} in place (NumPy's same_kind rule)", what,
                          f"Write x = {_out_of_place(what)} to make a new array instead.")
        try:
            fits = np.broadcast_shapes(np.shape(rvalue), target.shape) == target.shape
        except ValueError:
            fits = False
        if not fits:
            raise located(TraceError, f"{what}: a result of shape {np.shape(rvalue)} does not "
                                      f"fit in place into shape {target.shape}", what)
        node = b.broadcast_to(b.convert(node_of(result), target.dtype), target.shape)
        target._set_node(node, what)
        target.value[...] = rvalue
        return target


# -- array functions ---------------------------------------------------------------------------


def _public_name(func) -> str:
    """The name under `np.` that the user wrote: "cumsum", "fft.fft", "linalg.inv"."""
    name = getattr(func, "__name__", str(func))
    module = getattr(func, "__module__", None) or "numpy"
    parts = module.split(".")[1:] if module.startswith("numpy") else []
    public = []
    for part in parts:  # numpy.linalg keeps "linalg"; numpy._core.fromnumeric keeps nothing
        if part.startswith("_"):
            break
        public.append(part)
    return ".".join(public + [name])


def _eager_or_refuse(error: UnsupportedOpError, func, name: str, args, kwargs):
    """A call with no lowering: under auto-clustering, an opaque call run eagerly between
    compiled clusters; otherwise `error`, offering auto-clustering where it would run the call
    (not for a call that writes into an argument, nor one whose result the explorer cannot
    hold, such as np.fft.fft's complex numbers)."""
    if kwargs.get("out") is None and func not in IN_PLACE:
        if active_builder().autocluster:
            return opaque_call(func, name, args, kwargs)
        if runs_eagerly(func, name, args, kwargs):
            raise offering_autocluster(error)
    raise error


# Functions whose argument is a shape: (its position, its keywords).
_SHAPE_ARGUMENTS = {np.reshape: (1, ("shape", "newshape")), np.broadcast_to: (1, ("shape",))}


def _refuse_traced_shape(func, args, kwargs) -> None:
    """A shape holding a traced array (`a.reshape(s)`, s an argument) would give each run a
    shape of its own; say so, rather than pass on NumPy's complaint about the eager value."""
    if func not in _SHAPE_ARGUMENTS:
        return
    at, keywords = _SHAPE_ARGUMENTS[func]
    given = [args[at]] if len(args) > at else [kwargs[k] for k in keywords if k in kwargs]
    for shape in given:
        parts = shape if isinstance(shape, (tuple, list)) else [shape]
        if any(isinstance(p, Tracer) and not is_python_scalar(p) for p in parts):
            name = _public_name(func)
            raise located(TraceError, f"np.{name}'s shape is a traced array, whose values are "
                                      "known only when the compiled program runs; a compiled "
                                      "program's shapes are static", f"np.{name}",
                          "Give the shape as Python ints (numbers from x.shape, or int "
                          "arguments); for a shape held in an array, close over it as a tuple: "
                          "xe.jit(lambda a: f(a, tuple(int(n) for n in s))).")


def call_function(func, args, kwargs):
    """`func(*args, **kwargs)` with a traced argument: its row in FUNCTIONS (a view of the
    first argument where NumPy makes one), STATIC, an opaque call under autocluster, or an
    error."""
    b = active_builder()
    name = getattr(func, "__name__", str(func))
    with at_user_site(b, name):
        if func in STATIC:
            return STATIC[func](*args, **kwargs)
        if func not in FUNCTIONS:
            return _eager_or_refuse(unsupported(_public_name(func)), func, _public_name(func),
                                    args, kwargs)
        if kwargs.get("out") is not None:
            raise unsupported(name, " with out=")
        _refuse_traced_shape(func, args, kwargs)
        eager_fn = EAGER.get(func, func)
        # NumPy's own refusal names the function as the user wrote it (np.linalg.solve)
        value = eager(eager_fn, f"np.{_public_name(func)}", *value_of(list(args)),
                      **{k: value_of(v) for k, v in kwargs.items()})
        lower = FUNCTIONS[func]
        try:
            nodes = lower(value, *args, **kwargs)
        except UnsupportedOpError as e:  # an argument the lowering lacks (np.unique(...))
            return _eager_or_refuse(e, func, _public_name(func), args, kwargs)
        if isinstance(nodes, tuple):
            # Several results (np.split's list, np.broadcast_arrays' tuple), each possibly a
            # view of one argument; a list stays a list, as NumPy returns it.
            parts = [_result(b, func, lower, n, v, value, args, kwargs, name, k)
                     for k, (n, v) in enumerate(zip(nodes, value))]
            if isinstance(value, list):
                return parts
            # np.linalg's results are named tuples (EighResult): the same type, fields named
            return type(value)(*parts) if hasattr(value, "_fields") else tuple(parts)
        if func in IN_PLACE:  # np.copyto & co.: the new contents go into the first argument
            return _write_into(args[0], wrap(nodes, value, f"np.{name}"), name)
        return _result(b, func, lower, nodes, value, value, args, kwargs, name, None)


def _result(b, func, lower, node, value, whole, args, kwargs, name, k):
    """The Tracer for one result; where NumPy made it a view of an argument, a view: it is
    re-derived whenever that argument changes, and written through by undoing the one
    data-movement op that made it (read-only where there is no such op)."""
    result = wrap(node, value, f"np.{name}")
    if func not in VIEWS or not isinstance(value, np.ndarray):
        return result
    for i, base in enumerate(args if k is not None else args[:1]):
        if (isinstance(base, Tracer) and isinstance(base.value, np.ndarray)
                and np.shares_memory(value, base.value)):
            def derive(n, i=i):
                made = lower(whole, *args[:i], n, *args[i + 1:], **kwargs)
                return made if k is None else made[k]
            return Tracer(b, node, value, base=base, derive=derive,
                          write_back=view_write_back(node, base.node) or _slice_write_back(
                              node, base.node))
    return result


def _slice_write_back(view, base):
    """A contiguous slice of the base (np.split's pieces) writes back as an update of that
    block of the base; None for any other view."""
    if view.opcode != "slice" or view.operands[0] is not base or any(
            step != 1 for _, _, step in view.attr("slice")):
        return None
    starts = [lo for lo, _, _ in view.attr("slice")]
    return lambda base_node, new: active_builder().dynamic_update_slice(base_node, new, starts)


def _write_into(target, result: Tracer, name: str) -> None:
    """What np.copyto, np.place, np.putmask and np.fill_diagonal do: change their first
    argument (and, through it, the array it is a view of), returning None."""
    if not isinstance(target, Tracer) or not isinstance(target.value, np.ndarray):
        raise located(TraceError, f"np.{name} writes into an array that is not traced (a NumPy "
                                  "array made outside the function)", f"np.{name}",
                      "Write into a traced array: an argument, or one made in the function.")
    target._set_node(result.node, f"np.{name}")
    target.value[...] = result.value
    return None
