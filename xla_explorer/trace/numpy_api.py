"""NumPy functions -> HLO: the rows that say how each supported NumPy call lowers.

Every call on a Tracer comes here. The dispatcher computes NumPy's own result on the eager
values (the reference, and the ground truth for shapes and types), asks the row for the HLO,
and checks that the HLO's shape and type are NumPy's. Element types follow NumPy exactly: a
ufunc's loop types come from `ufunc.resolve_dtypes`, which applies NEP 50 (Python scalars are
weak), and the operands are converted to them before the op.
"""
from __future__ import annotations

import contextlib
import decimal
import difflib
import math
import operator
import sys
from typing import Callable

import numpy as np

from ..errors import TraceError, UnsupportedOpError, as_python_class
from ..ir.module import Instruction
from ..ir.ops import register_opaque
from ..ir.shape import Shape, TupleShape, is_supported_dtype
from .builder import REDUCERS
from .scalars import Const, python_op
from .tracer import Tracer, _dtype_error, active_builder, at_user_site, located

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# -- operands ----------------------------------------------------------------------------------


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)


def value_of(x):
    """The eager NumPy value of x (Tracers unwrapped, containers recursively)."""
    if isinstance(x, Tracer):
        return x.value
    if isinstance(x, (list, tuple)):
        return type(x)(value_of(v) for v in x)
    return x


def _weak(x) -> bool:
    return (isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)) or (
        isinstance(x, Tracer) and x._weak)


def is_python_scalar(x) -> bool:
    """A Python bool, int or float, or a Tracer standing for one (a scalar argument)."""
    return _weak(x)


# Python keeps bool for these between bools; all other arithmetic on bools gives int.
_PY_BOOL_RESULT = {"bitwise_and", "bitwise_or", "bitwise_xor", "less", "less_equal", "greater",
                   "greater_equal", "equal", "not_equal"}


def python_scalar_op(ufunc, operands):
    """An operator between Python scalars: the operands take Python's common type (bool <
    int < float, bools becoming ints for arithmetic), NumPy computes at that type, and the
    result is a weak Python scalar again."""
    b = active_builder()
    name = ufunc.__name__
    with at_user_site(b, name) as site:
        python = python_op(name, [value_of(x) for x in operands], site)
        ref = b.scalars.op(name, tuple(x._ref if isinstance(x, Tracer) else Const(x)
                                       for x in operands), type(python), site)
    kinds = {type(value_of(x)) for x in operands}
    if float in kinds:
        dt = np.dtype(np.float64)
    elif kinds == {bool} and name in _PY_BOOL_RESULT:
        dt = np.dtype(np.bool_)
    else:
        dt = np.dtype(np.int64)
        if name == "power" and value_of(operands[1]) < 0:
            dt = np.dtype(np.float64)  # Python: 2 ** -1 == 0.5 (NumPy refuses it for ints)
    with at_user_site(b, name):
        strong = [astype(x, dt) if isinstance(x, Tracer) else np.asarray(x, dt)[()]
                  for x in operands]
    result = ufunc(*strong)
    # Python's value, not NumPy's at the traced type: they differ only where python_op refused.
    result._weak, result._value, result._ref = True, python, ref
    return result


def dtype_key(x):
    """What `resolve_dtypes` wants for x: a dtype, or the Python type of a weak scalar."""
    if _weak(x):
        v = x.value if isinstance(x, Tracer) else x
        # NumPy types a Python bool as np.bool_ (the lowest type, so it never widens
        # anything); resolve_dtypes takes only int, float and complex as weak Python types.
        return np.dtype(np.bool_) if isinstance(v, bool) else type(v)
    if isinstance(x, Tracer):
        return x.dtype
    return np.asarray(x).dtype


def _promotion_key(x):
    """What np.result_type wants for x: a Python scalar stays one (weak, NEP 50)."""
    if _weak(x):
        return x.value if isinstance(x, Tracer) else x
    if isinstance(x, Tracer):
        return x.dtype
    return x


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
            raise _dtype_error("a constant", arr.dtype)
        if dtype is not None:
            with np.errstate(all="ignore"):
                arr = arr.astype(dtype)
        node = b.literal(arr)
    return b.convert(node, dtype) if dtype is not None else node


def wrap(node: Instruction, value, what: str) -> Tracer:
    """A Tracer for node with eager value; the two must agree in shape and type."""
    b = active_builder()
    shape = np.shape(value)
    dtype = np.asarray(value).dtype if not isinstance(value, np.generic) else value.dtype
    if not is_supported_dtype(dtype):
        raise _dtype_error(what, dtype)
    if node.dims != tuple(shape) or node.dtype != dtype:
        raise located(TraceError, f"internal error: {what} lowered to {node.shape} but NumPy "
                                  f"gives {dtype}{list(shape)}", what,
                      "Please report this with the line above.")
    return Tracer(b, node, value)


def _eager(fn, what: str, *args, **kwargs):
    """Run NumPy itself; its errors become the user's error at the user's line."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    except (TraceError, UnsupportedOpError):
        raise
    except Exception as e:  # NumPy's own complaint, at the user's line, of NumPy's class too
        raise located(as_python_class(type(e)), f"{what} failed in NumPy: {e}", what) from e


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(int(a) % ndim for a in axis)) if ndim else ()
    return (int(axis) % ndim,) if ndim else ()


# -- ufuncs ------------------------------------------------------------------------------------
# Each lowering gets the builder and the operands already converted to the ufunc loop's input
# types and broadcast to one shape; it returns an instruction of the loop's output type.


def _direct(opcode):
    return lambda b, *xs: b.ew(opcode, *xs)


def _by_kind(**rows):
    """Pick a lowering by the operands' element kind: b(ool), i(nt) or f(loat)."""
    def lower(b, *xs):
        return rows[xs[0].dtype.kind](b, *xs)
    return lower


def _const(b, value, like):
    return b.scalar_like(value, like)


def _identity(b, x):
    return x


def _scalar_source(x: Instruction) -> Instruction | None:
    """The rank-0 value `x` broadcasts, or x itself if rank 0; None for a real array."""
    if x.shape.rank == 0:
        return x
    if x.opcode == "broadcast" and x.operands[0].shape.rank == 0:
        return x.operands[0]
    return None


def _power(b, shape, inputs, types):
    # NumPy computes a float array to a scalar power by its fast paths: x ** 0.5 is sqrt
    # (nan at -inf, -0.0 at -0.0, where C's pow gives +inf and +0.0), ** 2 is x * x, ** -1
    # is 1 / x, ** 1 is x. A constant exponent picks one at trace time; for a value known
    # only at run time, only 0.5's results differ from pow's beyond rounding.
    x = b.broadcast_to(node_of(inputs[0], types[0]), shape)
    known = inputs[1] if not isinstance(inputs[1], Tracer) else None
    fast = {0.5: lambda: b.ew("sqrt", x), 2.0: lambda: b.ew("multiply", x, x),
            -1.0: lambda: b.ew("divide", _const(b, 1, x), x), 1.0: lambda: x}
    if x.dtype.kind == "f" and np.ndim(known) == 0 and known is not None \
            and float(known) in fast:
        return fast[float(known)]()
    y = node_of(inputs[1], types[1])
    scalar = _scalar_source(y) is not None
    y = b.broadcast_to(y, shape)
    if x.dtype.kind != "f" or not scalar or known is not None:
        return b.ew("power", x, y)
    return b.select(b.compare(y, _const(b, 0.5, y), "EQ"), b.ew("sqrt", x), b.ew("power", x, y))


_power.takes_inputs = True  # sees the exponent as given: a constant one makes no instruction


def _compare(direction):
    return lambda b, x, y: b.compare(x, y, direction)


def _isnan(b, x):
    return b.compare(x, x, "NE")


def _floor_divide_int(b, x, y):
    # HLO divides toward zero; NumPy floors, and gives 0 for a zero divisor.
    zero = _const(b, 0, x)
    q = b.ew("divide", x, y)
    r = b.ew("remainder", x, y)
    signs_differ = b.compare(b.compare(r, zero, "LT"), b.compare(y, zero, "LT"), "NE")
    fix = b.ew("and", b.compare(r, zero, "NE"), signs_differ)
    q = b.ew("subtract", q, b.convert(fix, x.dtype))
    return b.select(b.compare(y, zero, "EQ"), zero, q)


def _divmod_float(b, x, y):
    # NumPy's npy_divmod, step by step, so results agree to the last bit.
    zero = _const(b, 0, x)
    mod = b.ew("remainder", x, y)
    div = b.ew("divide", b.ew("subtract", x, mod), y)
    signs_differ = b.compare(b.compare(y, zero, "LT"), b.compare(mod, zero, "LT"), "NE")
    fix = b.ew("and", b.compare(mod, zero, "NE"), signs_differ)
    one = _const(b, 1, x)
    div = b.select(fix, b.ew("subtract", div, one), div)
    mod = b.select(fix, b.ew("add", mod, y), mod)
    # A zero remainder takes the divisor's sign, a zero quotient that of x / y (-0.0 // 3 is
    # -0.0): npy_divmod's copysign(0, ...), as selects (1 / q < 0 tells -0.0 from +0.0).
    neg_zero = _const(b, -0.0, x)
    mod = b.select(b.compare(mod, zero, "EQ"),
                   b.select(b.compare(y, zero, "LT"), neg_zero, zero), mod)
    floor = b.ew("floor", div)
    round_up = b.compare(b.ew("subtract", div, floor), _const(b, 0.5, x), "GT")
    floor = b.select(round_up, b.ew("add", floor, one), floor)
    negative = b.compare(b.ew("divide", one, b.ew("divide", x, y)), zero, "LT")
    floor = b.select(b.compare(div, zero, "EQ"), b.select(negative, neg_zero, zero), floor)
    by_zero = b.compare(y, zero, "EQ")
    return b.select(by_zero, b.ew("divide", x, y), floor), b.select(by_zero, b.ew("remainder", x, y), mod)


def _remainder_int(b, x, y):
    zero = _const(b, 0, x)
    r = b.ew("remainder", x, y)
    signs_differ = b.compare(b.compare(r, zero, "LT"), b.compare(y, zero, "LT"), "NE")
    fix = b.ew("and", b.compare(r, zero, "NE"), signs_differ)
    r = b.select(fix, b.ew("add", r, y), r)
    return b.select(b.compare(y, zero, "EQ"), zero, r)


def _trunc(b, x):
    return b.select(b.compare(x, _const(b, 0, x), "LT"), b.ew("ceil", x), b.ew("floor", x))


def _in_float64(f):
    """A float32 lowering that computes f in float64 and rounds once: for the functions whose
    float32 formula loses more than rounding (a rounded argument or constant), at the cost of
    a float64 function in the loop."""
    def lower(b, x):
        if x.dtype == np.float64:
            return f(b, x)
        return b.convert(f(b, b.convert(x, np.float64)), x.dtype)
    return lower


def _exp2_float64(b, x):
    # Not exp(x ln 2): the rounding of x ln 2 is amplified by |x ln 2| (722 ulp at 1024), and
    # exp2(k) would miss 2**k. power(2, x) is exact at whole x, as NumPy's exp2 is.
    return b.ew("power", _const(b, 2, x), x)


def _exp2_float32(b, x):
    # In float64 x ln 2 is rounded far below float32's precision.
    w = b.convert(x, np.float64)
    return b.convert(b.ew("exponential", b.ew("multiply", w, _const(b, _LN2, w))), x.dtype)


def _exp2(b, x):
    return (_exp2_float64 if x.dtype == np.float64 else _exp2_float32)(b, x)


def _ln2_rounded_up(bits: int) -> tuple[float, float]:
    """ln 2 rounded up to a multiple of 2**-bits, and e^(that - ln 2), from 60 digits."""
    ctx = decimal.Context(prec=60)
    ln2 = ctx.ln(decimal.Decimal(2))
    hi = decimal.Decimal(math.ceil(ctx.multiply(ln2, 2 ** bits))) / 2 ** bits
    return float(hi), float(ctx.exp(hi - ln2))


# Per float type: (H, C, BIG) for sinh and cosh. e^a / 2 = e^(a - H) C, where a - H is exact
# for the a it is used on (a >= BIG: a below 2**8 in float32 and 2**21 in float64, where H has
# 15 and 32 bits); exp(a - ln 2) would be off by the rounding of a - ln 2 times a (25 ulp in
# float32, 496 in float64), and e^a overflows before e^a / 2 does. H is rounded up so that
# e^(a - H) overflows only where e^a / 2 does.
_HALF_EXP = {np.dtype(np.float32): (*_ln2_rounded_up(15), 88.0),
             np.dtype(np.float64): (*_ln2_rounded_up(32), 709.0)}
# Below this |x|, sinh(x) and arcsinh(x) round to x (x^3 / 6 is below half an ulp of x); taking
# x itself there keeps the sign of -0.0, which a select on x < 0 loses.
_TINY = {np.dtype(np.float32): 2.0 ** -12, np.dtype(np.float64): 2.0 ** -26}


def _half_exp(b, a):
    """e^a / 2 for a >= BIG, without overflowing before it."""
    hi, c, _ = _HALF_EXP[a.dtype]
    return b.ew("multiply", b.ew("exponential", b.ew("subtract", a, _const(b, hi, a))),
                _const(b, c, a))


def _sinh(b, x):
    # sinh|x| = (E + E / (E + 1)) / 2 with E = expm1|x|: no cancellation near 0 (where
    # e^x - e^-x cancels) and one expm1; above BIG, e^|x| / 2 without overflowing early (expm1
    # overflows at 88.7 in float32, sinh at 89.4).
    _, _, big = _HALF_EXP[x.dtype]
    a = b.ew("abs", x)
    e = b.ew("exponential-minus-one", a)
    small = b.ew("multiply", _const(b, 0.5, x),
                 b.ew("add", e, b.ew("divide", e, b.ew("add", e, _const(b, 1, x)))))
    mag = b.select(b.compare(a, _const(b, big, x), "GT"), _half_exp(b, a), small)
    signed = b.select(b.compare(x, _const(b, 0, x), "LT"), b.ew("negate", mag), mag)
    return b.select(b.compare(a, _const(b, _TINY[x.dtype], x), "LT"), x, signed)


def _cosh(b, x):
    # e^|x| / 2 + (1 / 2) / e^|x|, and above BIG (where e^-|x| no longer counts) e^|x| / 2
    # without overflowing early.
    _, _, big = _HALF_EXP[x.dtype]
    a = b.ew("abs", x)
    e = b.ew("exponential", a)
    half = _const(b, 0.5, x)
    small = b.ew("add", b.ew("multiply", half, e), b.ew("divide", half, e))
    return b.select(b.compare(a, _const(b, big, x), "GT"), _half_exp(b, a), small)


def _one_minus_sq(b, x):
    one = _const(b, 1, x)
    return b.ew("multiply", b.ew("subtract", one, x), b.ew("add", one, x))  # (1-x)(1+x): exact near 1


def _arcsin(b, x):
    return b.ew("atan2", x, b.ew("sqrt", _one_minus_sq(b, x)))


def _arccos(b, x):
    return b.ew("atan2", b.ew("sqrt", _one_minus_sq(b, x)), x)


def _arctan(b, x):
    return b.ew("atan2", x, _const(b, 1, x))


def _arcsinh(b, x):
    # asinh|x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), and log|x| + ln 2 once x^2 overflows.
    a = b.ew("abs", x)
    one = _const(b, 1, x)
    sq = b.ew("multiply", a, a)
    small = b.ew("log-plus-one", b.ew("add", a, b.ew("divide", sq, b.ew("add", one, b.ew(
        "sqrt", b.ew("add", one, sq))))))
    large = b.ew("add", b.ew("log", a), _const(b, _LN2, x))
    big = b.compare(a, _const(b, 1e8 if x.dtype == np.float64 else 1e4, x), "GT")
    mag = b.select(big, large, small)
    signed = b.select(b.compare(x, _const(b, 0, x), "LT"), b.ew("negate", mag), mag)
    return b.select(b.compare(a, _const(b, _TINY[x.dtype], x), "LT"), x, signed)


def _arccosh(b, x):
    # acosh x = log1p(t + sqrt(t) sqrt(x + 1)) with t = x - 1: exact near 1, and NaN below 1
    # (sqrt(t (x + 1)) would be a real number again for x < -1).
    one = _const(b, 1, x)
    t = b.ew("subtract", x, one)
    root = b.ew("multiply", b.ew("sqrt", t), b.ew("sqrt", b.ew("add", x, one)))
    small = b.ew("log-plus-one", b.ew("add", t, root))
    large = b.ew("add", b.ew("log", x), _const(b, _LN2, x))
    big = b.compare(x, _const(b, 1e8 if x.dtype == np.float64 else 1e4, x), "GT")
    return b.select(big, large, small)


def _arctanh(b, x):
    # (log1p(x) - log1p(-x)) / 2: both arguments exact and the two logs of opposite signs, so
    # nothing cancels; log1p(2x / (1 - x)) / 2 loses everything as x -> -1, where 1 - x rounds
    # (arctanh(-0.99999994) was 3.6e5 ulp off). Odd by construction, -0.0 included.
    return b.ew("multiply", _const(b, 0.5, x), b.ew("subtract", b.ew("log-plus-one", x),
                                                     b.ew("log-plus-one", b.ew("negate", x))))


def _fmax_fmin(opcode):
    def lower(b, x, y):
        if x.dtype.kind != "f":
            return b.ew(opcode, x, y)
        m = b.ew(opcode, x, y)
        return b.select(_isnan(b, y), x, b.select(_isnan(b, x), y, m))
    return lower


def _truth(b, x):
    return x if x.dtype == np.bool_ else b.compare(x, _const(b, 0, x), "NE")


def _logical(opcode):
    return lambda b, x, y: b.ew(opcode, _truth(b, x), _truth(b, y))


def _false_like(b, x):
    return b.full(False, np.bool_, x.dims)


def _true_like(b, x):
    return b.full(True, np.bool_, x.dims)


def _log_base(factor):
    """log(x) * factor (1 / ln 2, 1 / ln 10), float32 computed in float64 and rounded once.
    A result within 1.25 * 2**-52 * k of a whole number k becomes k, so that log2(2**k) and
    log10(10**k) are k, as NumPy's are: the product alone misses 364 of the float64 powers of
    two and 21 of the 23 exact powers of ten (floor(log10(1000.0)) was 2), by up to 1.07 *
    2**-52 * k. Near whole numbers the snap costs 0.5 ulp at most (log2: 1.7 -> 2.2 ulp)."""
    def lower(b, x):
        y = b.ew("multiply", b.ew("log", x), _const(b, factor, x))
        whole = b.ew("round-nearest-even", y)
        near = b.compare(b.ew("abs", b.ew("subtract", y, whole)),
                         b.ew("multiply", b.ew("abs", whole), _const(b, 1.25 * 2.0 ** -52, x)),
                         "LE")
        return b.select(near, whole, y)
    return _in_float64(lower)


UFUNCS: dict[str, Callable] = {
    # arithmetic; on bools NumPy's add is `or` and multiply is `and`
    "add": _by_kind(b=_direct("or"), i=_direct("add"), f=_direct("add")),
    "subtract": _direct("subtract"),
    "multiply": _by_kind(b=_direct("and"), i=_direct("multiply"), f=_direct("multiply")),
    "divide": _direct("divide"),
    "floor_divide": _by_kind(i=_floor_divide_int, f=lambda b, x, y: _divmod_float(b, x, y)[0]),
    "remainder": _by_kind(i=_remainder_int, f=lambda b, x, y: _divmod_float(b, x, y)[1]),
    "power": _power,
    "negative": _direct("negate"),
    "positive": _identity,
    "absolute": _by_kind(b=_identity, i=_direct("abs"), f=_direct("abs")),
    "sign": _direct("sign"),
    "square": lambda b, x: b.ew("multiply", x, x),
    "reciprocal": lambda b, x: b.ew("divide", _const(b, 1, x), x),
    "maximum": _by_kind(b=_direct("or"), i=_direct("maximum"), f=_direct("maximum")),
    "minimum": _by_kind(b=_direct("and"), i=_direct("minimum"), f=_direct("minimum")),
    "fmax": _fmax_fmin("maximum"),
    "fmin": _fmax_fmin("minimum"),
    # exponentials and logarithms
    "exp": _direct("exponential"),
    "exp2": _exp2,
    "expm1": _direct("exponential-minus-one"),
    "log": _direct("log"),
    "log2": _log_base(1 / _LN2),
    "log10": _log_base(1 / _LN10),
    "log1p": _direct("log-plus-one"),
    "sqrt": _direct("sqrt"),
    "cbrt": _direct("cbrt"),
    # trigonometric and hyperbolic
    "sin": _direct("sine"),
    "cos": _direct("cosine"),
    "tan": _direct("tan"),
    "arcsin": _arcsin,
    "arccos": _arccos,
    "arctan": _arctan,
    "arctan2": _direct("atan2"),
    "sinh": _sinh,
    "cosh": _cosh,
    "tanh": _direct("tanh"),
    "arcsinh": _arcsinh,
    "arccosh": _arccosh,
    "arctanh": _arctanh,
    # rounding; NumPy keeps integers as they are
    "floor": _by_kind(i=_identity, b=_identity, f=_direct("floor")),
    "ceil": _by_kind(i=_identity, b=_identity, f=_direct("ceil")),
    "trunc": _by_kind(i=_identity, b=_identity, f=_trunc),
    "rint": _by_kind(i=_identity, b=_identity, f=_direct("round-nearest-even")),
    # comparisons and logic
    "greater": _compare("GT"),
    "greater_equal": _compare("GE"),
    "less": _compare("LT"),
    "less_equal": _compare("LE"),
    "equal": _compare("EQ"),
    "not_equal": _compare("NE"),
    "logical_and": _logical("and"),
    "logical_or": _logical("or"),
    "logical_xor": lambda b, x, y: b.compare(_truth(b, x), _truth(b, y), "NE"),
    "logical_not": lambda b, x: b.ew("not", _truth(b, x)),
    "isnan": _by_kind(b=_false_like, i=_false_like, f=_isnan),
    "isinf": _by_kind(b=_false_like, i=_false_like,
                      f=lambda b, x: b.compare(b.ew("abs", x), _const(b, np.inf, x), "EQ")),
    "isfinite": _by_kind(b=_true_like, i=_true_like, f=_direct("is-finite")),
    # bits
    "bitwise_and": _direct("and"),
    "bitwise_or": _direct("or"),
    "bitwise_xor": _direct("xor"),
    "invert": _direct("not"),
    "left_shift": _direct("shift-left"),
    "right_shift": _direct("shift-right-arithmetic"),
}

# NumPy names that mean a supported one, for the error's suggestion.
ALTERNATIVES = {
    "fabs": "np.abs", "fix": "np.trunc",
    "nanmax": "np.max(np.where(np.isnan(x), -np.inf, x))",
    "nanmin": "np.min(np.where(np.isnan(x), np.inf, x))",
    "nansum": "np.sum(np.where(np.isnan(x), 0, x))", "average": "np.mean",
    "amax": "np.max", "outer": "x[:, None] * y[None, :]", "inner": "np.dot",
    "tensordot": "np.einsum", "float_power": "np.power on float64 arrays",
    "cumsum": None, "sinc": "np.sin(np.pi * x) / (np.pi * x)",
    "deg2rad": "x * (np.pi / 180)", "rad2deg": "x * (180 / np.pi)", "hypot": "np.sqrt(x*x + y*y)",
    "logaddexp": "np.maximum(a, b) + np.log1p(np.exp(-np.abs(a - b)))",
    "copysign": "np.where(y < 0, -np.abs(x), np.abs(x)) (which counts -0.0 as positive)", "heaviside": "np.where",
    "take": "slicing", "ndarray.sort": "np.sort",
}


def unsupported(name: str, detail: str = "") -> UnsupportedOpError:
    supported = sorted(set(UFUNCS) | {f.__name__ for f in FUNCTIONS})
    eagerly = "run it eagerly between compiled clusters: %%xla --autocluster (autocluster=True)."
    if name in ALTERNATIVES:  # listed as None: nothing supported comes close
        alt = ALTERNATIVES[name]
        lead = f"A supported alternative: {alt}." if alt else None
    elif detail:  # the function is supported, this form of it is not: no other name helps
        lead = f"Use a form of np.{name} that is supported."
    else:
        close = difflib.get_close_matches(name, sorted(set(supported) - {name}), n=1,
                                          cutoff=0.75)
        lead = f"A supported function with a similar name: np.{close[0]}." if close else None
    hint = (f"{lead} Or {eagerly}" if lead else "It has no compilable equivalent here; "
            f"compute it outside the traced function, or {eagerly}")
    return located(UnsupportedOpError, f"np.{name} is not supported{detail}", f"np.{name}", hint)


def call_ufunc(ufunc, method: str, inputs, kwargs):
    name = ufunc.__name__
    b = active_builder()
    with at_user_site(b, name):
        if method == "reduce" and name in _UFUNC_REDUCE:
            axis = kwargs.pop("axis", 0)
            keepdims = kwargs.pop("keepdims", False)
            if kwargs:
                raise unsupported(f"{name}.reduce", f" with {', '.join(kwargs)}")
            return _reduce_call(_UFUNC_REDUCE[name], inputs[0], axis, keepdims, f"{name}.reduce")
        if method != "__call__":
            if b.autocluster:
                return opaque_call(getattr(ufunc, method), f"{name}.{method}", inputs, kwargs)
            raise unsupported(f"{name}.{method}")
        if name == "divmod" and not kwargs:
            return np.floor_divide(*inputs), np.remainder(*inputs)
        if name == "matmul":
            out = kwargs.pop("out", None)
            if kwargs:
                raise unsupported(name, f" with {', '.join(kwargs)}=")
            return _finish_out(matmul(*inputs), out)
        if name not in UFUNCS:
            if b.autocluster:
                return opaque_call(ufunc, name, inputs, kwargs)
            raise unsupported(name)
        out = kwargs.pop("out", None)
        dtype = kwargs.pop("dtype", None)
        for k in list(kwargs):
            if k == "casting" and kwargs[k] == "same_kind" or k == "where" and kwargs[k] is True:
                kwargs.pop(k)
        if kwargs:
            raise unsupported(name, f" with {', '.join(k + '=' for k in kwargs)}")
        value = _eager(ufunc, f"np.{name}", *value_of(list(inputs)),
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
                raise _dtype_error(f"np.{name}", t)
        shape = np.broadcast_shapes(*(np.shape(value_of(x)) for x in inputs))
        if name in _COMPARISONS and in_types[0].kind in "iu":
            exact = _compare_python_int(b, inputs, in_types, value, shape)
            if exact is not None:
                return _finish_out(wrap(exact, value, f"np.{name}"), out)
            in_types = _exact_comparison_types(inputs, in_types)
        if name == "power" and out_type.kind in "iu" and isinstance(inputs[1], Tracer) \
                and inputs[1]._ref is not None:
            b.scalars.nonnegative(inputs[1]._ref, b.site)  # NumPy's ValueError, on each call
        lower = UFUNCS[name]
        if getattr(lower, "takes_inputs", False):
            node = lower(b, shape, inputs, in_types)
        else:
            node = lower(b, *(b.broadcast_to(node_of(x, t), shape)
                              for x, t in zip(inputs, in_types)))
        node = b.convert(node, out_type)
        return _finish_out(wrap(node, value, f"np.{name}"), out)


_COMPARISONS = {"less": "LT", "less_equal": "LE", "greater": "GT", "greater_equal": "GE",
                "equal": "EQ", "not_equal": "NE"}


def _exact_comparison_types(inputs, in_types):
    """NumPy 2 compares an integer array with a Python int exactly, even one outside the
    array's type (int32 array < -2**34 is all False), where converting the int would wrap:
    compare in int64, which holds every Python int argument."""
    if any(_weak(x) and isinstance(value_of(x), int) and not isinstance(value_of(x), bool)
           for x in inputs):
        return (np.dtype(np.int64),) * len(in_types)
    return in_types


def _compare_python_int(b, inputs, in_types, value, shape):
    """A comparison with a Python int literal beyond int64 has the same answer for every
    integer array element; None when there is no such literal."""
    for x in inputs:
        v = value_of(x)
        if _weak(x) and type(v) is int and not isinstance(x, Tracer) and \
                not np.iinfo(np.int64).min <= v <= np.iinfo(np.int64).max:
            answer = bool(np.asarray(value).flat[0]) if np.size(value) else False
            return b.full(answer, np.bool_, shape)
    return None


def _finish_out(result: Tracer, out):
    if out is None:
        return result
    target = out[0] if isinstance(out, tuple) else out
    if not isinstance(target, Tracer):
        raise located(TraceError, "out= must be a traced array (an input or an array made in "
                                  "the function)", "out=", "Drop out= and assign the result.")
    return assign_inplace(target, result, "out=")


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
                          f"Write x = x {what.split()[0]} ... to make a new array instead.")
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


# -- reductions --------------------------------------------------------------------------------
# NumPy's `where=` masks elements out (they count as the reduction's identity) and `initial=`
# joins the result once; both are lowered rather than ignored.


def _keep(b, node, x_dims, axes, keepdims):
    if not keepdims:
        return node
    return b.reshape(node, [1 if i in axes else n for i, n in enumerate(x_dims)])


def _sum_type(dtype, requested):
    if requested is not None:
        return np.dtype(requested)
    dtype = np.dtype(dtype)
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 8):
        return np.dtype(np.int64)
    return dtype


def _mean_type(dtype, requested):
    if requested is not None:
        return np.dtype(requested)
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)


def _masked(b, x: Instruction, where, opcode) -> Instruction:
    """x with the elements `where` leaves out replaced by the reducer's identity."""
    if where is True:
        return x
    mask = b.broadcast_to(_truth(b, node_of(where)), x.dims)
    return b.select(mask, x, b.full(REDUCERS[opcode](x.dtype), x.dtype, x.dims))


def _reduce_node(b, x, axes, opcode, dtype, keepdims, initial=np._NoValue, where=True):
    x = node_of(x)
    dims = x.dims
    node = b.reduce(_masked(b, b.convert(x, dtype), where, opcode), axes, opcode)
    if initial is not np._NoValue and initial is not None:
        node = b.ew(opcode, node, b.full(initial, node.dtype, node.dims))
    return _keep(b, node, dims, axes, keepdims)


def _count(x, axes, where=True) -> int | Instruction:
    """How many elements each result reduces: a number, or an instruction under where=."""
    shape = node_of(x).dims
    if where is True:
        return int(np.prod([shape[a] for a in axes], dtype=np.int64))
    b = active_builder()
    mask = b.convert(b.broadcast_to(_truth(b, node_of(where)), shape), np.int64)
    return b.reduce(mask, axes, "add")


def _sum(value, a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
         where=True):
    b = active_builder()
    axes = _axes(axis, np.ndim(value_of(a)))
    dt = _sum_type(np.asarray(value_of(a)).dtype, dtype)
    return _reduce_node(b, a, axes, "or" if dt == np.bool_ else "add", dt, keepdims, initial,
                        where)


def _prod(value, a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
          where=True):
    b = active_builder()
    axes = _axes(axis, np.ndim(value_of(a)))
    dt = _sum_type(np.asarray(value_of(a)).dtype, dtype)
    return _reduce_node(b, a, axes, "and" if dt == np.bool_ else "multiply", dt, keepdims,
                        initial, where)


def _extreme(which):
    def lower(value, a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
        b = active_builder()
        axes = _axes(axis, np.ndim(value_of(a)))
        dt = np.asarray(value_of(a)).dtype
        if dt == np.bool_:
            opcode = "or" if which == "maximum" else "and"
        else:
            opcode = which
        return _reduce_node(b, a, axes, opcode, dt, keepdims, initial, where)
    return lower


def _mean_node(b, a, axes, dt, keepdims, where=True):
    total = _reduce_node(b, a, axes, "add", dt, keepdims, where=where)
    count = _count(a, axes, where)
    if isinstance(count, Instruction):
        count = b.convert(_keep(b, count, node_of(a).dims, axes, keepdims), dt)
        return b.ew("divide", total, count)
    return b.ew("divide", total, b.scalar_like(count, total))


def _mean(value, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    b = active_builder()
    axes = _axes(axis, np.ndim(value_of(a)))
    return _mean_node(b, a, axes, _mean_type(np.asarray(value_of(a)).dtype, dtype), keepdims,
                      where)


def _var_node(b, a, axes, dtype, ddof, keepdims, where=True, mean=np._NoValue,
              correction=np._NoValue):
    if where is not True or mean is not np._NoValue:
        raise unsupported("var", " with where= or mean=")
    if correction is not np._NoValue:
        ddof = correction  # NumPy 2's name for ddof
    dt = _mean_type(np.asarray(value_of(a)).dtype, dtype)
    x = b.convert(node_of(a), dt)
    mean = _mean_node(b, a, axes, dt, True)
    centered = b.ew("subtract", x, b.broadcast_to(mean, x.dims))
    total = _reduce_node(b, b.ew("multiply", centered, centered), axes, "add", dt, keepdims)
    n = max(_count(a, axes) - ddof, 0)
    return b.ew("divide", total, b.scalar_like(n, total))


def _var(value, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    b = active_builder()
    return _var_node(b, a, _axes(axis, np.ndim(value_of(a))), dtype, ddof, keepdims, **kw)


def _std(value, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    b = active_builder()
    return b.ew("sqrt", _var_node(b, a, _axes(axis, np.ndim(value_of(a))), dtype, ddof,
                                  keepdims, **kw))


def _arg(which):
    def lower(value, a, axis=None, out=None, keepdims=False):
        b = active_builder()
        x = node_of(a)
        if axis is None:
            flat = b.reshape(x, (x.shape.size,))
            node = b.arg_reduce(flat, 0, which)
            return b.reshape(node, (1,) * x.shape.rank) if keepdims else node
        ax = int(axis) % x.shape.rank
        return _keep(b, b.arg_reduce(x, ax, which), x.dims, (ax,), keepdims)
    return lower


def _all_any(opcode):
    def lower(value, a, axis=None, out=None, keepdims=False, *, where=True):
        b = active_builder()
        x = _truth(b, node_of(a))
        axes = _axes(axis, x.shape.rank)
        return _keep(b, b.reduce(_masked(b, x, where, opcode), axes, opcode), x.dims, axes,
                     keepdims)
    return lower


_UFUNC_REDUCE = {"add": np.sum, "multiply": np.prod, "maximum": np.max, "minimum": np.min,
                 "logical_and": np.all, "logical_or": np.any}


def _reduce_call(func, a, axis, keepdims, what):
    return call_function(func, (a,), {"axis": axis, "keepdims": keepdims})


# -- dot, matmul, einsum -----------------------------------------------------------------------


def _promote_pair(a, c, value):
    # NumPy's result type is the operands' common type (a Python scalar operand of np.dot is
    # a 0-d float64 array there, not a weak scalar, so take the type from NumPy's answer).
    b = active_builder()
    dt = np.asarray(value).dtype
    if not is_supported_dtype(dt):
        raise _dtype_error("the product", dt)
    return b, node_of(a, dt), node_of(c, dt)


def matmul(a, c):
    b = active_builder()
    value = _eager(np.matmul, "np.matmul", value_of(a), value_of(c))
    _, x, y = _promote_pair(a, c, value)
    if x.shape.rank == 0 or y.shape.rank == 0:
        raise located(TraceError, "np.matmul does not take scalars", "np.matmul", "Use *.")
    xv = x if x.shape.rank > 1 else b.reshape(x, (1,) + x.dims)
    yv = y if y.shape.rank > 1 else b.reshape(y, y.dims + (1,))
    batch = np.broadcast_shapes(xv.dims[:-2], yv.dims[:-2])
    xv = b.broadcast_to(xv, batch + xv.dims[-2:])
    yv = b.broadcast_to(yv, batch + yv.dims[-2:])
    nb = len(batch)
    node = b.dot(xv, yv, tuple(range(nb)), (nb + 1,), tuple(range(nb)), (nb,))
    node = b.reshape(node, np.shape(value))
    return wrap(node, value, "np.matmul")


def _dot(value, a, c, out=None):
    b, x, y = _promote_pair(a, c, value)
    if x.shape.rank == 0 or y.shape.rank == 0:
        return b.ew("multiply", b.broadcast_to(x, np.shape(value)), b.broadcast_to(y, np.shape(value)))
    rc = 0 if y.shape.rank == 1 else y.shape.rank - 2
    return b.dot(x, y, (), (x.shape.rank - 1,), (), (rc,))


def _einsum(value, subscripts, *operands, **kw):
    if kw.get("optimize") not in (None, False, True, "greedy", "optimal") or set(kw) - {"optimize"}:
        raise unsupported("einsum", f" with {', '.join(kw)}")
    if not isinstance(subscripts, str) or "..." in subscripts:
        raise unsupported("einsum", " in this form (use explicit subscripts without '...')")
    b = active_builder()
    spec = subscripts.replace(" ", "")
    ins, _, out = spec.partition("->")
    terms = ins.split(",")
    if "->" not in spec:
        letters = "".join(terms)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(terms) != len(operands) or len(terms) > 2:
        raise unsupported("einsum", " with more than two operands")
    dt = np.asarray(value).dtype
    nodes = [node_of(o, dt) for o in operands]
    for t in terms:
        if len(set(t)) != len(t):
            raise unsupported("einsum", f" with a repeated index in {t!r} (a diagonal or trace)")
    # First sum away indices that appear in one operand only and not in the output.
    for k, t in enumerate(terms):
        others = "".join(terms[:k] + terms[k + 1:]) + out
        gone = [i for i, c in enumerate(t) if c not in others]
        if gone:
            nodes[k] = b.reduce(nodes[k], gone, "or" if dt == np.bool_ else "add")
            terms[k] = "".join(c for c in t if c in others)
    if len(terms) == 1:
        (t,) = terms
        return b.transpose(nodes[0], [t.index(c) for c in out])
    (ta, tb), (x, y) = terms, nodes
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    node = b.dot(x, y, [ta.index(c) for c in batch], [ta.index(c) for c in contract],
                 [tb.index(c) for c in batch], [tb.index(c) for c in contract])
    got = batch + [c for c in ta if c not in tb] + [c for c in tb if c not in ta]
    return b.transpose(node, [got.index(c) for c in out])


# -- data movement -----------------------------------------------------------------------------


def _reshape(value, a, *args, **kw):
    order = kw.get("order", args[1] if len(args) > 1 else "C")
    if order not in ("C", None):
        raise unsupported("reshape", f" with order={order!r} (only C order)")
    return active_builder().reshape(node_of(a), np.shape(value))


def _ravel(value, a, order="C"):
    if order not in ("C", None):
        raise unsupported("ravel", f" with order={order!r} (only C order)")
    return active_builder().reshape(node_of(a), np.shape(value))


def _same_shape_reshape(value, a, *args, **kw):
    return active_builder().reshape(node_of(a), np.shape(value))


def _transpose(value, a, axes=None):
    x = node_of(a)
    perm = tuple(reversed(range(x.shape.rank))) if axes is None else tuple(
        int(p) % x.shape.rank for p in axes)
    return active_builder().transpose(x, perm)


def _swapaxes(value, a, axis1, axis2):
    x = node_of(a)
    perm = list(range(x.shape.rank))
    i, j = int(axis1) % x.shape.rank, int(axis2) % x.shape.rank
    perm[i], perm[j] = perm[j], perm[i]
    return active_builder().transpose(x, perm)


def _moveaxis(value, a, source, destination):
    x = node_of(a)
    n = x.shape.rank
    src = [int(s) % n for s in np.atleast_1d(source)]
    dst = [int(d) % n for d in np.atleast_1d(destination)]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return active_builder().transpose(x, order)


def _broadcast_to(value, a, shape, subok=False):
    return active_builder().broadcast_to(node_of(a), np.shape(value))


def _concat_nodes(value, arrays):
    b = active_builder()
    dt = np.asarray(value).dtype  # NumPy's common type, or the dtype= asked for
    return b, [node_of(x, dt) for x in arrays]


def _concatenate(value, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    b, nodes = _concat_nodes(value, arrays)
    if axis is None:
        nodes = [b.reshape(n, (n.shape.size,)) for n in nodes]
        axis = 0
    return b.concatenate(nodes, int(axis) % nodes[0].shape.rank)


def _stack(value, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    b, nodes = _concat_nodes(value, arrays)
    ax = int(axis) % (nodes[0].shape.rank + 1)
    nodes = [b.reshape(n, n.dims[:ax] + (1,) + n.dims[ax:]) for n in nodes]
    return b.concatenate(nodes, ax)


def _hstack(value, tup, dtype=None, casting="same_kind"):
    b, nodes = _concat_nodes(value, tup)
    nodes = [n if n.shape.rank else b.reshape(n, (1,)) for n in nodes]
    return b.concatenate(nodes, 0 if nodes[0].shape.rank == 1 else 1)


def _vstack(value, tup, dtype=None, casting="same_kind"):
    b, nodes = _concat_nodes(value, tup)
    nodes = [n if n.shape.rank >= 2 else b.reshape(n, (1,) * (2 - n.shape.rank) + n.dims) for n in nodes]
    return b.concatenate(nodes, 0)


def _flip(value, m, axis=None):
    x = node_of(m)
    return active_builder().reverse(x, _axes(axis, x.shape.rank))


def _pad(value, array, pad_width, mode="constant", **kw):
    """np.pad with a constant is HLO's pad (edges only, no interior padding)."""
    fill = kw.pop("constant_values", 0)
    if mode != "constant" or kw or np.ndim(fill) != 0 or isinstance(fill, Tracer):
        raise unsupported("pad", " except mode='constant' with one constant value")
    x = node_of(array)
    if x.shape.rank == 0:  # NumPy pads a 0-d array to itself
        return x
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.shape.rank, 2))
    b = active_builder()
    return b.pad(x, b.constant(fill, x.dtype), [(int(lo), int(hi), 0) for lo, hi in widths])


def _copy(value, a, *args, **kw):
    return node_of(a)


def _where(value, condition, x=None, y=None):
    if x is None and y is None:
        return _nonzero(value, condition)
    b = active_builder()
    dt = np.asarray(value).dtype  # x and y promoted together, Python scalars weakly
    shape = np.shape(value)
    cond = b.broadcast_to(_truth(b, node_of(condition)), shape)
    return b.select(cond, b.broadcast_to(node_of(x, dt), shape), b.broadcast_to(node_of(y, dt), shape))


def _clip(value, a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
          max=np._NoValue, **kw):
    lo = a_min if a_min is not np._NoValue else min
    hi = a_max if a_max is not np._NoValue else max
    given = [v for v in (lo, hi) if v is not None and v is not np._NoValue]
    if len(given) == 2 and all(np.ndim(value_of(v)) == 0 for v in given):
        # Two scalar bounds: NumPy keeps x where it equals a bound (clip(+0.0, -0.0, 1) is
        # +0.0), which HLO's clamp does and maximum-then-minimum does not.
        b, dt = active_builder(), np.asarray(value).dtype
        x = b.broadcast_to(node_of(a, dt), np.shape(value))
        return b.emit("clamp", (node_of(lo, dt), x, node_of(hi, dt)))
    result = a
    if lo is not None and lo is not np._NoValue:
        result = np.maximum(result, lo)
    if hi is not None and hi is not np._NoValue:
        result = np.minimum(result, hi)
    return active_builder().convert(node_of(result), np.asarray(value).dtype)


def _round(value, a, decimals=0, out=None):
    """np.round is np.rint (halves to even, as NumPy rounds); to `decimals` places NumPy
    scales by 10**decimals, rints and scales back, and so does this, to the same bits."""
    decimals = operator.index(decimals)
    kind = np.asarray(value).dtype.kind
    if out is not None or (decimals < 0 and kind != "f"):
        raise unsupported("round", " with out= or, for integers, negative decimals")
    if kind != "f":  # whole numbers already, and NumPy keeps the type
        return node_of(a)
    if decimals == 0:
        return node_of(np.rint(a))
    f = np.asarray(10.0 ** abs(decimals), np.asarray(value).dtype)[()]
    return node_of(np.rint(a * f) / f if decimals > 0 else np.rint(a / f) * f)


def astype(x: Tracer, dtype) -> Tracer:
    b = active_builder()
    with at_user_site(b, "astype"):
        value = _eager(lambda v: np.asarray(v).astype(dtype), "astype", x.value)
        if not is_supported_dtype(value.dtype):
            raise _dtype_error("astype", value.dtype)
        if isinstance(x.value, np.generic):
            value = value[()]
        return wrap(b.convert(x.node, value.dtype), value, "astype")


def _np_astype(value, x, dtype, /, *, copy=True, device=None):
    return active_builder().convert(node_of(x), np.asarray(value).dtype)


# -- creation ----------------------------------------------------------------------------------


def _like(fill):
    def lower(value, a, *args, **kw):
        v = np.asarray(value)
        return active_builder().full(fill if fill is not None else 0, v.dtype, v.shape)
    return lower


def _full_like(value, a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    b = active_builder()
    v = np.asarray(value)
    if isinstance(fill_value, Tracer):
        return b.broadcast_to(node_of(fill_value, v.dtype), v.shape)
    return b.full(fill_value, v.dtype, v.shape)


def _traced_creation(name, original):
    """np.zeros & co. called from user code while tracing: broadcasts and iotas."""

    def creation(*args, **kwargs):
        b = active_builder()
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if b is None or caller.partition(".")[0] in ("numpy", "xla_explorer"):
            return original(*args, **kwargs)
        with at_user_site(b, name):
            if name == "full" and len(args) > 1:
                args = (_static(args[0], name), *args[1:])
            args = tuple(_static(a, name) for a in args) if name != "full" else args
            kwargs = {k: v if k == "fill_value" else _static(v, name) for k, v in kwargs.items()}
            if name == "full" and any(isinstance(a, Tracer) for a in (*args, *kwargs.values())):
                return _full_traced(b, *args, **kwargs)
            value = _eager(_EAGER_CREATION.get(name, original), f"np.{name}", *args, **kwargs)
            step = None
            if name == "linspace" and kwargs.get("retstep"):
                value, step = value
                kwargs["retstep"] = False
            if not is_supported_dtype(value.dtype):
                raise _dtype_error(f"np.{name}", value.dtype)
            node = _CREATION[name](b, value, *args, **kwargs)
            result = wrap(node, value, f"np.{name}")
            return result if step is None else (result, step)

    creation.__wrapped__ = original
    creation._xla_explorer_traced = True
    creation.__name__ = name
    return creation


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


def _holds_tracer(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_holds_tracer(o) for o in obj)
    return isinstance(obj, Tracer)


def _stacked(obj, dtype):
    """Nested lists of traced arrays and numbers as one array of `dtype`: np.stack level by
    level, each leaf converted first, so nothing rounds through another type on the way."""
    if isinstance(obj, (list, tuple)):
        return np.stack([_stacked(o, dtype) for o in obj])
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
            value = _eager(original, f"np.{name}", value_of(obj), *args, **kwargs)
            if isinstance(obj, Tracer) and not obj._weak and value.dtype == obj.dtype:
                return obj if name == "asarray" else np.copy(obj)
            return _stacked(obj, value.dtype)

    array._xla_explorer_traced = True
    array.__wrapped__ = original
    array.__name__ = name
    return array


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


# -- not compilable: value-dependent shapes ----------------------------------------------------


def _custom_call(target: str, operands, value, config: str = "") -> Instruction | tuple:
    b = active_builder()
    values = value if isinstance(value, tuple) else (value,)
    shapes = tuple(Shape(np.asarray(v).dtype, np.shape(v)) for v in values)
    shape = TupleShape(shapes) if isinstance(value, tuple) else shapes[0]
    attrs = [("custom_call_target", target)]
    if config:
        attrs.append(("backend_config", config))
    node = b.emit("custom-call", tuple(node_of(o) for o in operands), shape=shape, attrs=attrs)
    if isinstance(value, tuple):
        return tuple(b.emit("get-tuple-element", (node,), attrs=[("index", i)])
                     for i in range(len(values)))
    return node


def _unique(value, ar, return_index=False, return_inverse=False, return_counts=False,
            axis=None, **kw):
    if return_index or return_inverse or return_counts or axis is not None or kw:
        raise unsupported("unique", " with return_index/return_inverse/return_counts/axis")
    return _custom_call("numpy.unique", (ar,), value)


def _nonzero(value, a):
    return _custom_call("numpy.nonzero", (a,), tuple(value))


def _argwhere(value, a):
    return _custom_call("numpy.argwhere", (a,), value)


def _sort(value, a, axis=-1, kind=None, order=None, **kw):
    if axis is None:
        return _custom_call("numpy.sort", (a,), value, '"axis=None"')
    return _custom_call("numpy.sort", (a,), value, f'"axis={int(axis)}"')


def opaque_call(func: Callable, name: str, args, kwargs):
    """`func` (a NumPy function the op table lacks) as an opaque custom-call that runs
    eagerly between compiled clusters: its traced array arguments are the operands, and
    everything else in the call is kept in a registered closure that rebuilds the call."""
    leaves: list = []
    template = _template((tuple(args), dict(kwargs)), leaves)
    before = [np.array(value_of(t), copy=True) for t in leaves]
    value = _eager(func, f"np.{name}", *value_of(list(args)),
                   **{k: value_of(v) for k, v in kwargs.items()})
    if any(not np.array_equal(b, value_of(t), equal_nan=b.dtype.kind == "f")
           for b, t in zip(before, leaves)):
        raise located(TraceError, f"np.{name} changed its argument in place, which an eager "
                                  "call between compiled clusters cannot do", f"np.{name}",
                      "Use a form that returns a new array.")
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if not isinstance(v, (np.ndarray, np.generic, bool, int, float)):
            raise located(TraceError, f"np.{name} returned a {type(v).__name__}; only arrays "
                                      "and numbers can flow between compiled clusters",
                          f"np.{name}", "Convert its result with np.asarray, or compute it "
                                        "outside the cell.")
    value = tuple(np.asarray(v) for v in values) if isinstance(value, tuple) else value

    def call(operands):
        (a, k) = _fill(template, list(operands))
        return func(*a, **k)

    key = register_opaque(name, repr(template), call)
    nodes = _custom_call(f"numpy.{name}", leaves, value, f'"{key}"')
    if isinstance(nodes, tuple):
        return tuple(wrap(n, v, f"np.{name}") for n, v in zip(nodes, value))
    return wrap(nodes, value, f"np.{name}")


class _Slot:
    """Where the n-th traced argument goes when an opaque call is rebuilt."""

    def __init__(self, n: int):
        self.n = n

    def __repr__(self) -> str:
        return f"<operand {self.n}>"


def _template(x, leaves: list):
    """x with every Tracer replaced by a _Slot (the Tracers appended to `leaves`)."""
    if isinstance(x, Tracer):
        leaves.append(x)
        return _Slot(len(leaves) - 1)
    if isinstance(x, (list, tuple)):
        return type(x)(_template(v, leaves) for v in x)
    if isinstance(x, dict):
        return {k: _template(v, leaves) for k, v in x.items()}
    return x


def _fill(x, operands: list):
    if isinstance(x, _Slot):
        return operands[x.n]
    if isinstance(x, (list, tuple)):
        return type(x)(_fill(v, operands) for v in x)
    if isinstance(x, dict):
        return {k: _fill(v, operands) for k, v in x.items()}
    return x


# -- static queries: answered at trace time, no instruction -------------------------------------

STATIC = {
    np.shape: lambda a: np.shape(value_of(a)),
    np.ndim: lambda a: np.ndim(value_of(a)),
    np.size: lambda a, axis=None: np.size(value_of(a), axis),
    np.result_type: lambda *a: np.result_type(*(_promotion_key(x) for x in a)),
}


# -- the function table ------------------------------------------------------------------------
# NumPy function -> lowering(eager value, *the call's arguments). `VIEWS` are the functions
# whose result NumPy may make a view of their first argument.

FUNCTIONS: dict[Callable, Callable] = {
    np.sum: _sum, np.prod: _prod, np.mean: _mean, np.var: _var, np.std: _std,
    np.max: _extreme("maximum"), np.amax: _extreme("maximum"),
    np.min: _extreme("minimum"), np.amin: _extreme("minimum"),
    np.argmax: _arg("argmax"), np.argmin: _arg("argmin"),
    np.all: _all_any("and"), np.any: _all_any("or"),
    np.dot: _dot, np.einsum: _einsum,
    np.reshape: _reshape, np.ravel: _ravel, np.transpose: _transpose, np.swapaxes: _swapaxes,
    np.moveaxis: _moveaxis, np.squeeze: _same_shape_reshape, np.expand_dims: _same_shape_reshape,
    np.broadcast_to: _broadcast_to, np.concatenate: _concatenate, np.stack: _stack,
    np.hstack: _hstack, np.vstack: _vstack, np.flip: _flip, np.pad: _pad, np.copy: _copy,
    np.where: _where, np.clip: _clip, np.astype: _np_astype, np.round: _round,
    np.around: _round,
    np.zeros_like: _like(0), np.ones_like: _like(1), np.empty_like: _like(None),
    np.full_like: _full_like,
    np.unique: _unique, np.nonzero: _nonzero, np.argwhere: _argwhere, np.sort: _sort,
}
VIEWS = {np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.squeeze,
         np.expand_dims, np.broadcast_to, np.flip}
_EAGER_FUNCTIONS = {np.empty_like: np.zeros_like}


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


def call_function(func, args, kwargs):
    b = active_builder()
    name = getattr(func, "__name__", str(func))
    with at_user_site(b, name):
        if func in STATIC:
            return STATIC[func](*args, **kwargs)
        if func not in FUNCTIONS:
            if b.autocluster:
                return opaque_call(func, _public_name(func), args, kwargs)
            raise unsupported(_public_name(func))
        if kwargs.get("out") is not None:
            raise unsupported(name, " with out=")
        eager_fn = _EAGER_FUNCTIONS.get(func, func)
        value = _eager(eager_fn, f"np.{name}", *value_of(list(args)),
                       **{k: value_of(v) for k, v in kwargs.items()})
        lower = FUNCTIONS[func]
        try:
            nodes = lower(value, *args, **kwargs)
        except UnsupportedOpError:  # an argument the lowering lacks (np.unique(return_counts))
            if not b.autocluster:
                raise
            return opaque_call(func, _public_name(func), args, kwargs)
        if isinstance(nodes, tuple):
            return tuple(wrap(n, v, f"np.{name}") for n, v in zip(nodes, value))
        result = wrap(nodes, value, f"np.{name}")
        base = args[0] if args else None
        if (func in VIEWS and isinstance(base, Tracer) and isinstance(value, np.ndarray)
                and isinstance(base.value, np.ndarray) and np.shares_memory(value, base.value)):
            # NumPy made a view: re-derive it whenever the base changes, and write through it
            # by undoing the one data-movement op that made it.
            rest = args[1:]
            return Tracer(b, nodes, value, base=base,
                          derive=lambda n: lower(value, n, *rest, **kwargs),
                          write_back=_view_write_back(nodes, base.node))
        return result


def _view_write_back(view: Instruction, base: Instruction):
    """base_node, new value of the view -> new value of the base; None where NumPy's view is
    read-only (np.broadcast_to) or not one op."""
    if view is base:
        return lambda base_node, new: new
    if len(view.operands) != 1 or view.operands[0] is not base:
        return None
    if view.opcode == "reshape":
        return lambda base_node, new: active_builder().reshape(new, base_node.dims)
    if view.opcode == "transpose":
        inverse = tuple(int(i) for i in np.argsort(view.attr("dimensions")))
        return lambda base_node, new: active_builder().transpose(new, inverse)
    if view.opcode == "reverse":
        axes = tuple(view.attr("dimensions"))
        return lambda base_node, new: active_builder().reverse(new, axes)
    return None


# -- indexing ----------------------------------------------------------------------------------


def _expand_index(index, ndim):
    """Normalise a basic index into a list with Ellipsis expanded."""
    if not isinstance(index, tuple):
        index = (index,)
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(i)
    if Ellipsis not in index:
        out.extend([slice(None)] * (ndim - n_real))
    return out


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, slice) or (
        isinstance(i, (int, np.integer)) and not isinstance(i, bool)) for i in items)


def _index_plan(index, dims):
    """(slice spec, reversed axes, result dims) for a basic index over `dims`."""
    spec, flips, out_dims = [], [], []
    axis = 0
    for item in _expand_index(index, len(dims)):
        if item is None:
            out_dims.append(1)
            continue
        n = dims[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            count = len(range(start, stop, step))
            if step < 0:
                flips.append(axis)
                start, step = n - 1 - start, -step
            spec.append((start, start + (count - 1) * step + 1 if count else start, step))
            out_dims.append(count)
        else:
            i = int(item)
            if not -n <= i < n:
                raise located(TraceError, f"index {i} is out of bounds for axis {axis} with "
                                          f"size {n}", "indexing")
            i %= n
            spec.append((i, i + 1, 1))
        axis += 1
    return spec, flips, tuple(out_dims)


def lower_index(node: Instruction, index) -> Instruction:
    b = active_builder()
    spec, flips, out_dims = _index_plan(index, node.dims)
    x = b.reverse(node, flips)
    x = b.slice(x, spec)
    return b.reshape(x, out_dims)


def lower_index_update(node: Instruction, index, update: Instruction) -> Instruction:
    """node with node[index] = update (update already of the indexed shape and type)."""
    b = active_builder()
    spec, flips, out_dims = _index_plan(index, node.dims)
    inner = tuple(hi - lo and -(-(hi - lo) // st) for lo, hi, st in spec)
    upd = b.reshape(update, inner)
    if any(n == 0 for n in inner):
        return node
    if all(st == 1 for _, _, st in spec):
        x = b.reverse(node, flips)
        # upd is in x[index]'s order, which is the reversed array's order already.
        x = b.dynamic_update_slice(x, upd, [lo for lo, _, _ in spec])
        return b.reverse(x, flips)
    # A strided window: spread the update out with interior padding, select it in by a mask.
    x = b.reverse(node, flips)
    zero = b.constant(0, x.dtype)
    cfg = [(lo, n - (lo + (k - 1) * st + 1), st - 1) for (lo, _, st), k, n in zip(spec, inner, x.dims)]
    spread = b.pad(upd, zero, cfg)
    mask = b.pad(b.full(True, np.bool_, inner), b.constant(False, np.bool_), cfg)
    return b.reverse(b.select(mask, spread, x), flips)


def _static_index(index):
    """A Python int argument in an index is read as a Python value (guarded, so each value
    compiles its own program): `v[i]`, `v[i:i + 2]`, `v[:, i]`."""
    def one(i):
        if isinstance(i, Tracer) and i._weak and not isinstance(i.value, float):
            return i.__index__()
        if isinstance(i, slice):
            return slice(one(i.start), one(i.stop), one(i.step))
        return i
    return tuple(one(i) for i in index) if isinstance(index, tuple) else one(index)


def _describe_index(index) -> str:
    """An index as the user wrote it, with traced arrays by type and shape, not repr."""
    def one(i):
        if isinstance(i, Tracer):
            return f"a traced {i.dtype}{list(i.shape)} array"
        if isinstance(i, np.ndarray):
            return f"a {i.dtype}{list(i.shape)} array"
        if isinstance(i, slice):
            return ":".join("" if p is None else str(p) for p in (i.start, i.stop, i.step)
                            ).rstrip(":") or ":"
        return "..." if i is Ellipsis else repr(i)
    items = index if isinstance(index, tuple) else (index,)
    return "[" + ", ".join(one(i) for i in items) + "]"


_INDEX_HINT = ("Index with slices, Python ints, None and ..., or with a boolean mask; "
               "pick elements by value with np.where.")


def _unsupported_index(index, what: str = "indexing"):
    items = index if isinstance(index, tuple) else (index,)
    arrays = [i for i in items if isinstance(i, (Tracer, np.ndarray, list))]
    if arrays and all(np.ndim(value_of(i)) == 0 for i in arrays):
        message = (f"{what} x{_describe_index(index)} uses a traced integer as an index, whose "
                   "value is only known when the compiled program runs")
        hint = ("Pass the index as a Python int argument (it is then a static value: each "
                "value compiles its own program), or select with np.where.")
    elif arrays:
        message = (f"{what} x{_describe_index(index)} is integer-array (fancy) indexing, "
                   "which is not supported")
        hint = _INDEX_HINT
    else:
        message, hint = f"{what} x{_describe_index(index)} is not supported", _INDEX_HINT
    return located(UnsupportedOpError, message, what, hint)


def getitem(x: Tracer, index):
    b = active_builder()
    with at_user_site(b, "indexing"):
        index = _static_index(index)
        if isinstance(index, Tracer) or (isinstance(index, np.ndarray)):
            if np.asarray(value_of(index)).dtype == np.bool_:
                value = _eager(lambda v, m: v[m], "boolean-mask indexing", x.value, value_of(index))
                node = _custom_call("numpy.boolean_mask", (x, index), value)
                return wrap(node, value, "boolean-mask indexing")
            raise _unsupported_index(index)
        if not _is_basic(index):
            raise _unsupported_index(index)
        value = _eager(lambda v: v[index], "indexing", x.value)
        node = lower_index(x.node, index)
        if isinstance(value, np.ndarray):
            return Tracer(b, node, value, base=x, derive=lambda n: lower_index(n, index),
                          write_back=lambda base, new: lower_index_update(base, index, new))
        return wrap(node, value, "indexing")


def setitem(x: Tracer, index, v):
    b = active_builder()
    with at_user_site(b, "assignment"):
        index = _static_index(index)
        if not isinstance(x.value, np.ndarray):  # a NumPy scalar, e.g. from x.sum()
            raise located(TraceError, f"'{type(x.value).__name__}' object does not support "
                                      "item assignment (NumPy scalars are immutable)",
                          "assignment")
        if (isinstance(index, (Tracer, np.ndarray))
                and np.asarray(value_of(index)).dtype == np.bool_):
            # x[mask] = scalar is np.where(mask, scalar, x): compilable.
            if np.ndim(value_of(v)) != 0:
                raise located(UnsupportedOpError, "assigning an array through a boolean mask is "
                                                  "not supported", "assignment",
                              "Use x = np.where(mask, values, x) with values of x's shape.")
            new_value = x.value.copy()
            _eager(new_value.__setitem__, "assignment", value_of(index), value_of(v))
            # A mask covers x's leading dimensions: x[rows] = 0 sets whole rows.
            m = node_of(index)
            m = b.reshape(m, m.dims + (1,) * (x.ndim - m.shape.rank))
            mask = b.broadcast_to(m, x.shape)
            fill = b.broadcast_to(node_of(v, x.dtype), x.shape)
            x._set_node(b.select(mask, fill, x.node), "assignment")
            x.value[...] = new_value
            return
        if not _is_basic(index):
            raise _unsupported_index(index, "assignment")
        _, _, out_dims = _index_plan(index, x.shape)
        trial = x.value.copy() if isinstance(x.value, np.ndarray) else np.asarray(x.value)
        _eager(trial.__setitem__, "assignment", index, value_of(v))
        update = b.broadcast_to(node_of(v, x.dtype), out_dims)
        x._set_node(lower_index_update(x.node, index, update), "assignment")
        x.value[index] = value_of(v)
