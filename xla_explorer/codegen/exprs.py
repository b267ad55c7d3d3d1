"""The op table's scalar expressions rendered as Numba code, shared by the code generators.

`scalar_expr(inst, operands)` gives the Python expression that computes one element of an
ELEMENTWISE or COMPARE_SELECT instruction from its operands' elements (names of scalar locals).
The expressions themselves are the op table's (`OpDef.scalar`, per element kind, in
`ir/ops.py`): this module picks the one for the instruction's types, fills in its placeholders
(operands, the result type, typed constants, fastmath.py's functions of the type), and writes
literals and the accumulate steps of reductions that differ from the element-wise op's. An op's
expression is written there only, so every code generator shares the one definition.

The kernels must be compiled with `error_model="numpy"` (a float x / 0 is inf, not
ZeroDivisionError) and without fastmath's `nnan`/`ninf` flags (NaN and Inf are values).
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

# Element types the generator handles: pred, the signed and unsigned integers, float16,
# float32 and float64.
_SUPPORTED = {np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                    np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                                    np.float64)}
F16 = np.dtype(np.float16)


def np_type(dtype) -> str:
    """`np.float32`, `np.bool_`: the NumPy scalar type named in generated code. A float16
    value is computed in a float32 (Numba has no float16 arithmetic; scalar.py's f16 helpers
    round it where it is stored or converted)."""
    dtype = np.dtype(dtype)
    if dtype == F16:
        return "np.float32"
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
    if dtype == F16:  # the float16 value, held in a float32 (exactly)
        return f"np.float32({_float_text(np.float32(np.float16(value)))})"
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
# The op table holds them, per opcode and element kind; its comment above `_SCALAR` says what
# the placeholders filled here mean.

# Reducers that are one binary op of their two parameters: the accumulate expression.
_REDUCERS = ("add", "multiply", "maximum", "minimum", "and", "or", "xor")
# ... where it is not the element-wise op's: a float max or min accumulates with LLVM's
# llvm.maximum / llvm.minimum under nsz (scalar.maximum_nsz), which vectorizes as a reduction;
# the sign of a zero maximum is left open there, as in NumPy's reductions.
_REDUCER_STEPS = {"maximum": {"f": "maximum_nsz({0}, {1})"},
                  "minimum": {"f": "minimum_nsz({0}, {1})"}}


def _template(opcode: str, kind: str, result_kind: str = "") -> str | None:
    """The op table's expression of `opcode` computing in element kind `kind`; a convert's
    keys also name the result's kinds (`"f>i"`)."""
    for kinds, text in (op(opcode).scalar or {}).items():
        src, _, dst = kinds.partition(">")
        if kind in src and (not dst or result_kind in dst):
            return text
    return None


def _float_functions(dtype: np.dtype) -> dict[str, str]:
    """fastmath.py's vectorizable functions for `dtype` (HLO's floats are f32 and f64)."""
    suffix = "f64" if dtype == np.float64 else "f32"  # float16 computes in float32
    return {f: f"{f}_{suffix}" for f in scalar.FLOAT_FUNCTIONS}


def _fill(text: str, dtype: np.dtype, operands, src: np.dtype | None = None,
          **more: str) -> str:
    src = dtype if src is None else src
    inf = literal(np.inf, src) if src.kind == "f" else None
    more.setdefault("T", np_type(dtype))
    return text.format(*operands, one=literal(1, dtype), inf=inf, **_float_functions(dtype),
                       **more)


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
    dst = np.dtype(inst.dtype)
    more = {}
    if opcode == "convert" and src == dst:
        return args[0]  # a convert to the operand's own type changes nothing
    if opcode == "compare":
        more["op"] = _comparison(inst, src)
    text = _template(opcode, src.kind, dst.kind)
    if text is None:
        raise _unsupported(inst, f"no scalar expression for element type {src}")
    if opcode == "convert" and dst == F16:
        # to float16: the convert's {T}(x) is scalar.f16_from, one rounding from x's own value
        more["T"] = "f16_from"
    if opcode == "convert" and src == F16:
        # from float16: round first, in case the value was computed in float32 unrounded
        args = [f"f16_round({args[0]})"]
    return _fill(text, dst, args, src, **more)


def _comparison(inst, src: np.dtype) -> str:
    """The Python operator of a compare's direction."""
    direction = inst.attr("direction")
    if direction not in COMPARISONS:
        raise _unsupported(inst, f"unknown comparison direction {direction!r}")
    if str(inst.attr("type", "")).strip('"').upper() == "TOTALORDER" and src.kind == "f":
        # A total order (-NaN < -Inf < ... < -0 < +0 < ... < NaN) is not what < computes.
        raise _unsupported(inst, "type=TOTALORDER float comparisons are not supported")
    return COMPARISONS[direction][1]


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
