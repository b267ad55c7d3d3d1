"""The op table's element-wise ops as Numba scalar expressions, shared by the code generators.

`scalar_expr(inst, operands)` gives the Python expression that computes one element of an
ELEMENTWISE or COMPARE_SELECT instruction from its operands' elements (names of scalar locals).
The expression has exactly the instruction's element type in Numba and the op table's NumPy
semantics (`impl`): bit-exact for integers and bools, within a few ulp for float functions,
NaN and Inf as in NumPy. Where Python's operators differ from HLO (NaN and signed zeros in
max/min/clamp, integer division and remainder, shifts past the width, saturating float->int
conversion) the expression calls a helper from `scalar.py`.

Two facts of Numba's typing shape the table below: it computes int8/int16/int32 arithmetic in
int64 (so integer results are cast back with `{T}(...)`: the cast wraps, as NumPy does), and a
float32 combined with a Python float is computed in float64 (so float constants are typed,
`np.float32(1)`). The kernels must be compiled with `error_model="numpy"` (a float x / 0 is
inf, not ZeroDivisionError) and without fastmath's `nnan`/`ninf` flags (NaN and Inf are values).
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from ..errors import UnsupportedOpError
from ..ir.ops import COMPARISONS, elementwise_like, op
from . import scalar

# -- the prelude a kernel file starts with --------------------------------------------------


def _helpers_digest() -> str:
    """A digest of the helper sources. Numba's on-disk cache keys a kernel on its own file
    only, yet inlined helpers are compiled into it: naming the digest in every kernel file
    changes the file (and its cache) whenever a helper changes."""
    h = hashlib.sha256()
    for name in ("scalar.py", "fastmath.py", "gemm.py", "parallel.py", "target.py"):
        path = Path(__file__).with_name(name)
        if path.exists():
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


PRELUDE = ("import numpy as np\n"
           f"from xla_explorer.codegen.scalar import *  # helpers {_helpers_digest()}\n")

# The names PRELUDE binds: a generated local must not take one (a local `maximum` would hide
# the helper from every expression after it).
RESERVED_NAMES = frozenset(["np", *scalar.__all__])

# Element types the generator handles: pred, the signed integers, float32 and float64.
_SUPPORTED = {np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64,
                                    np.float32, np.float64)}


def np_type(dtype) -> str:
    """`np.float32`, `np.bool_`: the NumPy scalar type named in generated code."""
    dtype = np.dtype(dtype)
    return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


# -- constants ------------------------------------------------------------------------------


def literal(value, dtype) -> str:
    """A scalar constant of exactly `dtype`: `np.float32(0.5)`, `np.int32(-3)`, `True`.
    Floats round-trip exactly, Inf and NaN included."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return repr(bool(value))
    if dtype.kind in "iu":
        return f"{np_type(dtype)}({int(dtype.type(value))})"
    if dtype.kind == "f":
        return f"{np_type(dtype)}({_float_text(dtype.type(value))})"
    raise UnsupportedOpError(f"no scalar constant of type {dtype} in generated code",
                             op="constant")


def _float_text(v: np.floating) -> str:
    if np.isnan(v):
        return "np.nan"
    if np.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    short = str(v)  # NumPy's shortest text that reads back as the same value of v's type
    # ... read back through float64 here (np.float32(0.1) parses 0.1 as a float64 first); where
    # that double rounding lands elsewhere, use the float64 text of v itself, which is exact.
    return short if type(v)(float(short)) == v else repr(float(v))


def zero_like(dtype) -> str:
    return literal(0, dtype)


# -- the expressions ------------------------------------------------------------------------
# Per opcode, per element kind (b: pred, i: signed integer, f: float; "if" for both): the
# expression, with {0} {1} {2} the operands, {T} the result's NumPy type, {one} a 1 of that
# type, {inf} an infinity of the operands' type, and {exp} {expm1} {log} {log1p} {tanh}
# {logistic} fastmath.py's functions of the type.

_EXPRS: dict[str, dict[str, str]] = {
    "negate":                 {"i": "{T}(-{0})", "f": "(-{0})"},
    "abs":                    {"if": "abs({0})"},  # abs(INT_MIN) wraps to INT_MIN, as np.abs
    "sign":                   {"if": "sign({0})"},
    "floor":                  {"f": "np.floor({0})"},
    "ceil":                   {"f": "np.ceil({0})"},
    "round-nearest-even":     {"f": "np.rint({0})"},
    "round-nearest-afz":      {"f": "round_afz({0})"},
    "not":                    {"b": "(not {0})", "i": "{T}(~{0})"},
    "exponential":            {"f": "{exp}({0})"},
    "exponential-minus-one":  {"f": "{expm1}({0})"},
    "log":                    {"f": "{log}({0})"},
    "log-plus-one":           {"f": "{log1p}({0})"},
    "sqrt":                   {"f": "np.sqrt({0})"},
    "rsqrt":                  {"f": "rsqrt({0})"},
    "cbrt":                   {"f": "np.cbrt({0})"},
    "sine":                   {"f": "np.sin({0})"},
    "cosine":                 {"f": "np.cos({0})"},
    "tan":                    {"f": "np.tan({0})"},
    "tanh":                   {"f": "{tanh}({0})"},
    "logistic":               {"f": "{logistic}({0})"},
    # Not np.isfinite: Numba lowers it to "x - x is not NaN", which reassoc and nsz fold to
    # True whenever x is itself a sum or product. abs and < fold under no flag but ninf,
    # which no kernel has, and vectorize.
    "is-finite":              {"f": "(abs({0}) < {inf})"},
    # pred arithmetic is logical: add and maximum are or, multiply and minimum are and
    "add":                    {"b": "({0} | {1})", "i": "{T}({0} + {1})", "f": "({0} + {1})"},
    "subtract":               {"i": "{T}({0} - {1})", "f": "({0} - {1})"},
    "multiply":               {"b": "({0} & {1})", "i": "{T}({0} * {1})", "f": "({0} * {1})"},
    "divide":                 {"i": "int_divide({0}, {1})", "f": "({0} / {1})"},
    "remainder":              {"i": "int_remainder({0}, {1})", "f": "np.fmod({0}, {1})"},
    "power":                  {"i": "int_power({0}, {1})", "f": "np.power({0}, {1})"},
    "atan2":                  {"f": "np.arctan2({0}, {1})"},
    "maximum":                {"b": "({0} | {1})", "if": "maximum({0}, {1})"},
    "minimum":                {"b": "({0} & {1})", "if": "minimum({0}, {1})"},
    "and":                    {"b": "({0} & {1})", "i": "{T}({0} & {1})"},
    "or":                     {"b": "({0} | {1})", "i": "{T}({0} | {1})"},
    "xor":                    {"b": "({0} ^ {1})", "i": "{T}({0} ^ {1})"},
    "shift-left":             {"i": "shift_left({0}, {1})"},
    "shift-right-arithmetic": {"i": "shift_right_arithmetic({0}, {1})"},
    "shift-right-logical":    {"i": "shift_right_logical({0}, {1})"},
    "select":                 {"bif": "({1} if {0} else {2})"},
    "clamp":                  {"if": "clamp({0}, {1}, {2})"},  # clamp(lo, x, hi)
}

# Reducers that are one binary op of their two parameters: the accumulate expression.
_REDUCERS = ("add", "multiply", "maximum", "minimum", "and", "or", "xor")
# ... where it is not the element-wise op's: a float max or min accumulates with LLVM's
# llvm.maximum / llvm.minimum under nsz (scalar.maximum_nsz), which vectorizes as a reduction;
# the sign of a zero maximum is left open there, as in NumPy's reductions.
_REDUCER_STEPS = {"maximum": {"f": "maximum_nsz({0}, {1})"},
                  "minimum": {"f": "minimum_nsz({0}, {1})"}}


def _template(opcode: str, kind: str) -> str | None:
    for kinds, text in _EXPRS.get(opcode, {}).items():
        if kind in kinds:
            return text
    return None


def _float_functions(dtype: np.dtype) -> dict[str, str]:
    """fastmath.py's vectorizable functions for `dtype` (HLO's floats are f32 and f64)."""
    suffix = "f32" if dtype == np.float32 else "f64"
    return {f: f"{f}_{suffix}" for f in scalar.FLOAT_FUNCTIONS}


def _fill(text: str, dtype: np.dtype, operands, src: np.dtype | None = None) -> str:
    src = dtype if src is None else src
    inf = literal(np.inf, src) if src.kind == "f" else None
    return text.format(*operands, T=np_type(dtype), one=literal(1, dtype), inf=inf,
                       **_float_functions(dtype))


_ATOM = re.compile(r"[\w.]+")


def _atom(expr: str) -> str:
    """`expr` as an operand: parenthesized unless it is a name, a number, or one call or
    subscript (`np.float32(0.5)`, `p0[i]`) that spans all of it."""
    expr = expr.strip()
    if _ATOM.fullmatch(expr):
        return expr
    head = _ATOM.match(expr)
    if head and expr[head.end():head.end() + 1] in ("(", "[") and expr[-1] in ")]":
        depth = 0
        for n, ch in enumerate(expr[head.end():], head.end()):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if depth == 0:
                if n == len(expr) - 1:
                    return expr
                break
    return f"({expr})"


def _unsupported(inst, why: str) -> UnsupportedOpError:
    md = inst.metadata
    return UnsupportedOpError(f"{inst.opcode} ({inst.name}): {why}", op=inst.opcode,
                              source_file=md.source_file or None,
                              source_line=md.source_line or None)


def scalar_expr(inst, operands: list[str]) -> str:
    """The expression computing one element of `inst` from its operands' elements."""
    opcode = inst.opcode
    row = op(opcode)
    if not elementwise_like(opcode):
        raise _unsupported(inst, "not an element-wise op")
    if row.arity is not None and len(operands) != row.arity:
        raise _unsupported(inst, f"takes {row.arity} operands, given {len(operands)}")
    # The type the op computes in: select's is its data operands' (operand 0 is the pred).
    src = np.dtype(inst.operands[1 if row.result == "operand1" else 0].dtype)
    for dtype in (src, np.dtype(inst.dtype)):
        if dtype not in _SUPPORTED:
            raise _unsupported(inst, f"element type {dtype} is not supported by the Numba "
                                     f"code generators")
    if src.kind not in row.kinds:
        raise _unsupported(inst, f"element type {src} is not one the op takes")
    args = [_atom(x) for x in operands]
    if opcode == "convert":
        return _convert(args[0], src, np.dtype(inst.dtype))
    if opcode == "compare":
        return _compare(inst, args, src)
    text = _template(opcode, src.kind)
    if text is None:
        raise _unsupported(inst, f"no scalar expression for element type {src}")
    return _fill(text, np.dtype(inst.dtype), args, src)


def _compare(inst, args, src: np.dtype) -> str:
    direction = inst.attr("direction")
    if direction not in COMPARISONS:
        raise _unsupported(inst, f"unknown comparison direction {direction!r}")
    if str(inst.attr("type", "")).strip('"').upper() == "TOTALORDER" and src.kind == "f":
        # A total order (-NaN < -Inf < ... < -0 < +0 < ... < NaN) is not what < computes.
        raise _unsupported(inst, "type=TOTALORDER float comparisons are not supported")
    # Python's float comparisons are IEEE's: false with a NaN operand, except !=.
    return f"({args[0]} {COMPARISONS[direction][1]} {args[1]})"


def _convert(x: str, src: np.dtype, dst: np.dtype) -> str:
    if src == dst:
        return x
    if dst == np.bool_:
        return f"({x} != 0)"  # NaN converts to True, as NumPy's astype(bool)
    if dst.kind == "i" and src.kind == "f":
        return f"float_to_int({x}, {np_type(dst)})"  # saturating, NaN -> 0
    # The remaining casts are LLVM's: integers wrap, int -> float and float -> float round to
    # nearest (int64 -> float32 in one rounding), float overflow gives Inf; as NumPy's astype.
    return f"{np_type(dst)}({x})"


def reducer_update(opcode: str, acc: str, x: str, dtype) -> str | None:
    """The accumulate expression `acc op x` of a reducer that is the single binary op
    `opcode` of its parameters, typed to `dtype`; maximum and minimum propagate NaN like the
    interpreter's np.maximum.reduce (the sign of a zero result open, see _REDUCER_STEPS).
    None for any other reducer."""
    dtype = np.dtype(dtype)
    if opcode not in _REDUCERS or dtype not in _SUPPORTED or dtype.kind not in op(opcode).kinds:
        return None
    text = _REDUCER_STEPS.get(opcode, {}).get(dtype.kind) or _template(opcode, dtype.kind)
    return None if text is None else _fill(text, dtype, [_atom(acc), _atom(x)])
