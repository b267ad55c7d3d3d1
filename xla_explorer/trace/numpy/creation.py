"""Array creation: np.zeros_like & co. (dispatched on their array argument); np.zeros,
np.ones, np.empty, np.full, np.arange, np.linspace, np.eye and np.identity called by user code
while tracing (they take no array for NumPy to dispatch on, so NumPy's functions are patched
for the length of a trace); np.array / np.asarray of traced arrays; and matrices built from
traced arrays: np.tril, np.triu, np.diag and np.meshgrid.
"""
from __future__ import annotations

import contextlib
import linecache
import re
import sys

import numpy as np
import numpy.random  # noqa: F401  (imported now: its import calls np.zeros from compiled code)

from ...errors import TraceError
from ...ir.shape import is_supported_dtype
from ..context import active_builder, at_user_site, dtype_error, located, while_tracing
from ..tracer import Tracer, assigned_node, node_of, read_shape, value_of
from .opaque import opaque_call
from .registry import lowers
from .types import astype
from .util import eager, unsupported, wrap


# -- the *_like functions ----------------------------------------------------------------------


def _like(fill):
    def lower(value, a, *args, **kw):
        read_shape(a)  # the result takes a's shape but does not read a: keep a's shape checked
        v = np.asarray(value)
        return active_builder().full(fill if fill is not None else 0, v.dtype, v.shape)
    return lower


lowers(np.zeros_like)(_like(0))
lowers(np.ones_like)(_like(1))
# np.empty_like's contents are arbitrary; traced code gets zeros, so eager must agree.
lowers(np.empty_like, eager=np.zeros_like)(_like(None))


@lowers(np.full_like)
def _full_like(value, a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    b = active_builder()
    read_shape(a)
    v = np.asarray(value)
    if isinstance(fill_value, Tracer):
        return b.broadcast_to(node_of(fill_value, v.dtype), v.shape)
    return b.full(fill_value, v.dtype, v.shape)


# -- np.zeros & co., patched while tracing -----------------------------------------------------


def _traced_creation(name, original):
    """np.zeros & co. called from user code while tracing: broadcasts and iotas."""

    def creation(*args, **kwargs):
        b = active_builder()
        frame = sys._getframe(1)
        caller = frame.f_globals.get("__name__", "")
        if (b is None or caller.partition(".")[0] in ("numpy", "xla_explorer")
                or not _calls(frame, name)):
            return original(*args, **kwargs)
        with at_user_site(b, name):
            if name == "full" and len(args) > 1:
                args = (_static(args[0], name), *args[1:])
            args = tuple(_static(a, name) for a in args) if name != "full" else args
            kwargs = {k: v if k == "fill_value" else _static(v, name) for k, v in kwargs.items()}
            if name == "full" and any(isinstance(a, Tracer) for a in (*args, *kwargs.values())):
                return _full_traced(b, *args, **kwargs)
            value = eager(_EAGER_CREATION.get(name, original), f"np.{name}", *args, **kwargs)
            step = None
            if name == "linspace" and kwargs.get("retstep"):
                value, step = value
                kwargs["retstep"] = False
            if not is_supported_dtype(value.dtype):
                raise dtype_error(f"np.{name}", value.dtype)
            node = _CREATION[name](b, value, *args, **kwargs)
            result = wrap(node, value, f"np.{name}")
            return result if step is None else (result, step)

    creation.__wrapped__ = original
    creation._xla_explorer_traced = True
    creation.__name__ = name
    return creation


def _calls(frame, name: str) -> bool:
    """Whether the call `frame` is making is a call of `name`. NumPy's compiled functions
    (np.random.normal) call np.empty too, with no frame of their own: the frame is then the
    user's, mid-call to np.random.normal, and a traced array handed to compiled code would
    crash it. The source span of the frame's current call names the function it calls; with
    no source to read, the call is taken to be the user's."""
    code = frame.f_code
    positions = list(code.co_positions())
    k = frame.f_lasti // 2
    if k >= len(positions) or None in positions[k]:
        return True
    line, end_line, col, end_col = positions[k]
    lines = [linecache.getline(code.co_filename, n, frame.f_globals)
             for n in range(line, end_line + 1)]
    if not all(lines):
        return True
    lines[-1] = lines[-1][:end_col]
    lines[0] = lines[0][col:]
    return re.match(rf"(?:[A-Za-z_]\w*\s*\.\s*)*{name}\s*\(", "".join(lines)) is not None


def _static(x, name: str):
    """A Python scalar argument where NumPy needs a Python value (a shape, an end point): its
    value decides the program, so it is guarded (see trace/scalars.py)."""
    if isinstance(x, (tuple, list)):
        return type(x)(_static(v, name) for v in x)
    if isinstance(x, Tracer) and x._weak:
        return x._static(f"np.{name}")
    return x


def _full_traced(b, shape, fill_value, dtype=None, order="C", **kw):
    dt = np.dtype(dtype) if dtype is not None else fill_value.dtype
    value = np.full(shape, fill_value.value, dtype=dt)
    return wrap(b.broadcast_to(node_of(fill_value, dt), value.shape), value, "np.full")


def _arange_node(b, value, *args, **kw):
    n = value.shape[0]
    if n == 0:
        return b.literal(value)
    start = float(value[0]) if value.dtype.kind == "f" else int(value[0])
    if n == 1:
        return b.full(start, value.dtype, (1,))
    # NumPy fills start + i * delta, with delta the difference of its first two values.
    wide = np.float64 if value.dtype.kind == "f" else np.int64
    delta = np.asarray(value[1], wide) - np.asarray(value[0], wide)
    ramp = b.iota(wide, (n,), 0)
    node = b.ew("add", b.ew("multiply", ramp, b.full(delta, wide, (n,))), b.full(start, wide, (n,)))
    return b.convert(node, value.dtype)


def _linspace_node(b, value, start, stop, num=50, endpoint=True, retstep=False, dtype=None,
                   axis=0, **kw):
    if retstep or axis != 0 or np.ndim(start) or np.ndim(stop):
        raise unsupported("linspace", " with axis or array end points")
    n = int(num)
    if n == 0:
        return b.literal(value)
    div = (n - 1) if endpoint else n
    step = (float(stop) - float(start)) / div if div > 0 else 0.0
    ramp = b.iota(np.float64, (n,), 0)
    node = b.ew("add", b.ew("multiply", ramp, b.full(step, np.float64, (n,))),
                b.full(float(start), np.float64, (n,)))
    if endpoint and n > 1:
        last = b.compare(ramp, b.full(n - 1, np.float64, (n,)), "EQ")
        node = b.select(last, b.full(float(stop), np.float64, (n,)), node)
    if value.dtype.kind in "iu":
        node = b.ew("floor", node)
    return b.convert(node, value.dtype)


def _eye_node(b, value, N, M=None, k=0, dtype=float, **kw):
    dims = value.shape
    rows = b.iota(np.int64, dims, 0)
    cols = b.iota(np.int64, dims, 1)
    diag = b.compare(b.ew("add", rows, b.full(int(k), np.int64, dims)), cols, "EQ")
    return b.convert(diag, value.dtype)


_CREATION = {
    "zeros": lambda b, v, *a, **k: b.full(0, v.dtype, v.shape),
    "ones": lambda b, v, *a, **k: b.full(1, v.dtype, v.shape),
    "empty": lambda b, v, *a, **k: b.full(0, v.dtype, v.shape),
    "full": lambda b, v, *a, **k: b.literal(v),
    "arange": _arange_node,
    "linspace": _linspace_node,
    "eye": _eye_node,
    "identity": lambda b, v, n, dtype=None, **k: _eye_node(b, v, n),
}
# np.empty's contents are arbitrary; traced code gets zeros, so eager must agree.
_EAGER_CREATION = {"empty": np.zeros}


# -- np.array and np.asarray of traced arrays --------------------------------------------------


def _holds_tracer(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_holds_tracer(o) for o in obj)
    return isinstance(obj, Tracer)


def _stacked(obj, dtype):
    """Nested lists of traced arrays and numbers as one array of `dtype`: np.stack level by
    level, each leaf converted first, so nothing rounds through another type on the way."""
    if isinstance(obj, (list, tuple)):
        return np.stack([_stacked(o, dtype) for o in obj])
    if isinstance(obj, Tracer) and obj._weak:  # a Python number: NumPy converts it checked
        value = eager(lambda v: np.asarray(v, dtype), "np.array", obj.value)
        return wrap(assigned_node(obj, dtype), value, "np.array")
    return astype(obj, dtype) if isinstance(obj, Tracer) else np.asarray(obj, dtype)


def _traced_array(name, original):
    """np.array / np.asarray of traced arrays, or of lists holding them: stacks, as NumPy
    builds the array (NumPy's own would ask each traced array for its value)."""

    def array(obj, *args, **kwargs):
        b = active_builder()
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if (b is None or caller.partition(".")[0] in ("numpy", "xla_explorer")
                or not _holds_tracer(obj)):
            return original(obj, *args, **kwargs)
        with at_user_site(b, name):
            value = eager(original, f"np.{name}", value_of(obj), *args, **kwargs)
            if isinstance(obj, Tracer) and not obj._weak and value.dtype == obj.dtype:
                return obj if name == "asarray" else np.copy(obj)
            return _stacked(obj, value.dtype)

    array._xla_explorer_traced = True
    array.__wrapped__ = original
    array.__name__ = name
    return array


@while_tracing
@contextlib.contextmanager
def creation_functions_traced():
    """While tracing, np.zeros & co. called by user code make traced arrays, and np.array /
    np.asarray of traced arrays stack them.

    They take no array argument NumPy dispatches on; the wrapper checks the calling thread
    is tracing and the caller is user code, and otherwise calls NumPy."""
    saved = {name: getattr(np, name) for name in (*_CREATION, "array", "asarray")}
    for name, fn in saved.items():
        # NumPy's own functions may have __wrapped__ too (np.linspace does): test for ours.
        if not getattr(fn, "_xla_explorer_traced", False):
            wrapper = _traced_array if name in ("array", "asarray") else _traced_creation
            setattr(np, name, wrapper(name, fn))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(np, name, fn)



# NumPy's random functions whose numbers a traced program would freeze (the module-level
# ones and the Generator factory; a Generator made outside the function is not seen).
_RANDOM = ("default_rng", "rand", "randn", "random", "random_sample", "normal", "uniform",
           "randint", "integers", "choice", "permutation", "shuffle", "standard_normal",
           "binomial", "poisson", "exponential", "beta", "gamma", "seed")
# Those that return new numbers and change nothing the program holds.
_DRAWS_ARRAYS = frozenset(_RANDOM) - {"default_rng", "seed", "shuffle"}


def _refuse_random(name, original):
    def draw(*args, **kwargs):
        b = active_builder()
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if b is None or caller.partition(".")[0] in ("numpy", "xla_explorer"):
            return original(*args, **kwargs)
        if b.autocluster and name in _DRAWS_ARRAYS:  # run eagerly on every call, as NumPy
            return opaque_call(original, f"random.{name}", args, kwargs)
        if name == "default_rng" and _fixed_seed(args, kwargs):
            # A Generator seeded here draws the same numbers on every call, as NumPy's run of
            # the function does: what it draws may be constants of the program.
            return original(*args, **kwargs)
        hint = ("Draw the random numbers outside the function and pass them in as an argument"
                + (", or let auto-clustering run the draw eagerly on every call: %%xla "
                   "--autocluster (autocluster=True)." if name in _DRAWS_ARRAYS else
                   ", or seed the Generator with a number (np.random.default_rng(0)): its "
                   "numbers are then the same on every call, in NumPy and in the program; "
                   "with --autocluster, np.random's own functions (np.random.normal(...)) run "
                   "eagerly on every call." if name == "default_rng" else "."))
        with at_user_site(b, f"np.random.{name}"):
            raise located(TraceError, f"np.random.{name} inside a compiled function would draw "
                                      "its numbers once, while tracing, and every call would "
                                      "reuse them", f"np.random.{name}", hint)

    draw._xla_explorer_traced = True
    draw.__wrapped__ = original
    draw.__name__ = name
    return draw


def _fixed_seed(args, kwargs) -> bool:
    """default_rng's seed is a number or numbers written in the function (not None, which
    draws fresh entropy on every call; not a traced value; not a generator made outside,
    whose state goes on from call to call)."""
    seed = args[0] if args else kwargs.get("seed")
    seeds = seed if isinstance(seed, (list, tuple)) else [seed]
    return seed is not None and all(
        isinstance(s, (int, np.integer)) and not isinstance(s, (bool, Tracer)) for s in seeds)


@while_tracing
@contextlib.contextmanager
def random_functions_refused():
    """While tracing, np.random's functions called by user code are a TraceError: NumPy draws
    new numbers on every call, a compiled program would replay the ones drawn at trace time."""
    saved = {n: getattr(np.random, n) for n in _RANDOM if hasattr(np.random, n)}
    for n, fn in saved.items():
        if not getattr(fn, "_xla_explorer_traced", False):
            setattr(np.random, n, _refuse_random(n, fn))
    try:
        yield
    finally:
        for n, fn in saved.items():
            setattr(np.random, n, fn)


# -- building matrices from arrays: np.tril, np.triu, np.diag, np.meshgrid ---------------------


def _triangle(keep: str):
    """The lower (tril) or upper (triu) triangle of the last two axes: iotas, a compare and a
    select. A 1-D argument is NumPy's too: its rows, repeated."""
    def lower(value, m, k=0):
        b = active_builder()
        dims = np.shape(value)
        x = b.broadcast_to(node_of(m), dims)
        r = len(dims)
        offset = b.ew("subtract", b.iota(np.int64, dims, r - 1), b.iota(np.int64, dims, r - 2))
        mask = b.compare(offset, b.full(int(k), np.int64, dims), keep)
        return b.select(mask, x, b.full(0, x.dtype, dims))
    return lower


lowers(np.tril)(_triangle("LE"))
lowers(np.triu)(_triangle("GE"))


@lowers(np.diag)
def _diag(value, v, k=0):
    b = active_builder()
    x = node_of(v)
    k = int(k)
    dims = np.shape(value)
    if x.shape.rank == 1:
        # out[i, i + k] = v[i]: v along the rows (k >= 0) or the columns, kept on the diagonal
        n = dims[0]
        padded = b.pad(x, b.constant(0, x.dtype), [(0, n - x.dims[0], 0)])
        along = b.broadcast(padded, dims, (0,) if k >= 0 else (1,))
        offset = b.ew("subtract", b.iota(np.int64, dims, 1), b.iota(np.int64, dims, 0))
        mask = b.compare(offset, b.full(k, np.int64, dims), "EQ")
        return b.select(mask, along, b.full(0, x.dtype, dims))
    if x.shape.rank != 2:
        raise unsupported("diag", " of an array of more than two dimensions")
    # The diagonal is a strided slice of the flattened matrix: exact, data movement only.
    rows, cols = x.dims
    length = dims[0]
    flat = b.reshape(x, (rows * cols,))
    if length == 0:
        return b.slice(flat, [(0, 0, 1)])
    start = k if k >= 0 else -k * cols
    return b.slice(flat, [(start, start + (length - 1) * (cols + 1) + 1, cols + 1)])


@lowers(np.meshgrid)
def _meshgrid(value, *xi, copy=True, sparse=False, indexing="xy"):
    if not copy:
        raise unsupported("meshgrid", " with copy=False (read-only views)")
    b = active_builder()
    out = []
    n = len(xi)
    for i, (x, v) in enumerate(zip(xi, value)):
        node = node_of(x)
        node = b.reshape(node, (node.shape.size,))
        axis = i
        if indexing == "xy" and n > 1 and i < 2:
            axis = 1 - i
        shape = np.shape(v)
        if sparse:
            out.append(b.reshape(node, shape))
        else:
            out.append(b.broadcast(node, shape, (axis,)))
    return tuple(out)
