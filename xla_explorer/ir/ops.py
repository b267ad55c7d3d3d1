"""THE op table: one row per HLO opcode the explorer knows.

A row gives the opcode's HLO name, its group, its arity, which element types it takes, its
result-type rule, its NumPy implementation (HLO semantics, used by the reference interpreter),
its cost class, and for element-wise and compare/select ops its scalar expressions for the code
generators, one per element kind (the `_SCALAR` block; `codegen/exprs.py` only fills in their
placeholders) and the symbol a reader knows a binary op by (`×`, `≤`; the graph viewer's
labels). Passes and code generators ask this table about groups, costs and expressions; they
never list opcode names of their own.

Shape inference lives here too, one function per row that needs one, so the tracer, the parser
and the verifier agree on what every instruction produces.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from math import prod
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import IndexOutOfRangeError
from .library import is_library_call
from .shape import TupleShape, kind


class Group(enum.Enum):
    ELEMENTWISE = "elementwise"
    COMPARE_SELECT = "compare-select"
    REDUCE = "reduce"
    DATA_MOVEMENT = "data-movement"
    DOT = "dot"
    LEAF = "leaf"  # parameter, constant, iota: no operands
    STRUCTURAL = "structural"  # tuple, get-tuple-element: no computation of their own
    CALL = "call"  # call, fusion: run another computation of the module
    NOT_COMPILABLE = "not-compilable"  # value-dependent shapes; run eagerly
    # A custom-call to a library routine (ir/library.py): compiled, a kernel of its own, as
    # XLA runs LAPACK's. No opcode has this group: `instruction_group` gives it to those calls.
    LIBRARY = "library"


class Cost(enum.Enum):
    """Whether a producer may be duplicated into several consumers, as XLA decides."""

    CHEAP = "cheap"
    EXPENSIVE = "expensive"
    # XLA counts integer division and remainder as expensive, floating ones as cheap.
    EXPENSIVE_FOR_INTEGERS = "expensive-for-integers"


# Element kinds, NumPy style: b = pred, i = signed integer, u = unsigned integer,
# f = floating point.
ANY = "biuf"
NUMERIC = "iuf"
FLOAT = "f"
INTEGRAL = "biu"
INTEGER = "iu"


@dataclass(frozen=True)
class OpDef:
    name: str
    group: Group
    arity: int | None  # None: variadic
    kinds: str  # element kinds the operands may have
    result: str  # "same" (operand 0's type), "pred", "operand1" (select), "declared"
    impl: Callable[..., Any]  # impl(instr, operand_values, ctx) -> np.ndarray | tuple
    cost: Cost = Cost.CHEAP
    infer: Callable[..., Any] | None = None  # infer(operand_shapes, attrs) -> shape
    doc: str = ""
    # Per element kind, the scalar expression code generators emit: the row's entry in _SCALAR
    # (a dict, so left out of the row's hash).
    scalar: dict[str, str] | None = field(default=None, hash=False)
    symbol: str | None = None  # a binary op's infix symbol for readers ("×"); see infix_symbol

    def is_expensive(self, dtype) -> bool:
        if self.cost is Cost.EXPENSIVE_FOR_INTEGERS:
            return kind(dtype) != "f"
        return self.cost is Cost.EXPENSIVE


OPS: dict[str, OpDef] = {}


def _op(name, group, arity, kinds, result, impl, cost=Cost.CHEAP, infer=None, doc="",
        symbol=None):
    OPS[name] = OpDef(name, group, arity, kinds, result, impl, cost, infer, doc,
                      _SCALAR.get(name), symbol)


def op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"opcode {name!r} is not in the op table") from None


def group_of(opcode: str) -> Group:
    return op(opcode).group


def in_group(opcode: str, *groups: Group) -> bool:
    return opcode in OPS and OPS[opcode].group in groups


def instruction_group(inst) -> Group | None:
    """The group of one instruction: its opcode's, but LIBRARY for a custom-call to a library
    routine, which compiles where other custom-calls run eagerly; None for an opcode the
    table lacks (from JAX's text)."""
    if is_library_call(inst):
        return Group.LIBRARY
    row = OPS.get(inst.opcode)
    return row.group if row else None


def is_expensive(instr) -> bool:
    """XLA's test for what must not be duplicated into several consumers."""
    shape = instr.shape
    dtype = shape.elements[0].dtype if shape.is_tuple else shape.dtype
    return op(instr.opcode).is_expensive(dtype)


# ----------------------------------------------------------------------------------------------
# NumPy implementations with HLO semantics. Each takes (instr, operand values, ctx) and returns a
# value of exactly the instruction's shape and type.


def _ew(fn):
    """An element-wise implementation: apply `fn` and cast to the instruction's type."""

    def impl(instr, args, ctx):
        with np.errstate(all="ignore"):
            out = fn(*args)
        return np.asarray(out).astype(instr.dtype, copy=False)

    return impl


def _int_divide(a, b):
    # HLO integer division truncates toward zero; x / 0 is -1 (all ones), as XLA defines it.
    if kind(a.dtype) not in INTEGER:
        return np.true_divide(a, b)
    safe = np.where(b == 0, 1, b)
    if kind(a.dtype) == "u":  # floor is truncation; all ones is the type's largest value
        return np.where(b == 0, np.iinfo(a.dtype).max, np.floor_divide(a, safe))
    q = np.floor_divide(a, safe)
    q = q + ((q < 0) & (q * safe != a))
    return np.where(b == 0, -1, q)


def _remainder(a, b):
    # HLO remainder takes the dividend's sign (C fmod); an integer x % 0 is x.
    if kind(a.dtype) not in INTEGER:
        return np.fmod(a, b)
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, a, np.fmod(a, safe))


def _round_afz(x):
    # Half away from zero, exactly: x + 0.5 would itself round (0.49999997 + 0.5 is 1 in f32).
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _logistic(x):
    return 1 / (1 + np.exp(-x))


def _not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _and(a, b):
    return np.bitwise_and(a, b)


def _shift_left(a, b):
    bits = a.dtype.itemsize * 8
    return np.where((b < 0) | (b >= bits), 0, np.left_shift(a, np.clip(b, 0, bits - 1)))


def _shift_right_arith(a, b):
    # Shift amounts are unsigned in XLA: a negative one is as large as any, filling with the sign.
    # An unsigned operand is shifted as the signed integer of its bits, as XLA's evaluator does.
    if kind(a.dtype) == "u":
        signed = np.dtype(f"i{a.dtype.itemsize}")
        # (an amount of 2**63 or more wraps negative there: out of range either way)
        return _shift_right_arith(a.view(signed), b.astype(signed)).astype(
            signed, copy=False).view(a.dtype)
    bits = a.dtype.itemsize * 8
    return np.where((b < 0) | (b >= bits), np.where(a < 0, -1, 0),
                    np.right_shift(a, np.clip(b, 0, bits - 1)))


def _shift_right_logical(a, b):
    bits = a.dtype.itemsize * 8
    unsigned = a.view(np.dtype(f"u{a.dtype.itemsize}"))
    out = np.right_shift(unsigned, np.clip(b, 0, bits - 1).astype(unsigned.dtype))
    return np.where((b < 0) | (b >= bits), 0, out.view(a.dtype))


def _infer_elementwise(shapes, attrs):
    return shapes[0]


def _infer_pred(shapes, attrs):
    return shapes[0].with_dtype(np.bool_)


# Element-wise unary and binary ops.                            NumPy (HLO semantics)     reader
_EW = [
    # name                     arity kinds    cost                         impl               symbol
    ("negate",                     1, NUMERIC, Cost.CHEAP,                 np.negative,       None),
    ("abs",                        1, NUMERIC, Cost.CHEAP,                 np.abs,            None),
    ("sign",                       1, NUMERIC, Cost.CHEAP,                 np.sign,           None),
    ("floor",                      1, FLOAT,   Cost.CHEAP,                 np.floor,          None),
    ("ceil",                       1, FLOAT,   Cost.CHEAP,                 np.ceil,           None),
    ("round-nearest-even",         1, FLOAT,   Cost.CHEAP,                 np.rint,           None),
    ("round-nearest-afz",          1, FLOAT,   Cost.CHEAP,                 _round_afz,        None),
    ("not",                        1, INTEGRAL, Cost.CHEAP,                _not,              None),
    ("exponential",                1, FLOAT,   Cost.EXPENSIVE,             np.exp,            None),
    ("exponential-minus-one",      1, FLOAT,   Cost.EXPENSIVE,             np.expm1,          None),
    ("log",                        1, FLOAT,   Cost.EXPENSIVE,             np.log,            None),
    ("log-plus-one",               1, FLOAT,   Cost.EXPENSIVE,             np.log1p,          None),
    ("sqrt",                       1, FLOAT,   Cost.EXPENSIVE,             np.sqrt,           None),
    ("rsqrt",                      1, FLOAT,   Cost.EXPENSIVE,             lambda x: 1 / np.sqrt(x), None),
    ("cbrt",                       1, FLOAT,   Cost.EXPENSIVE,             np.cbrt,           None),
    ("sine",                       1, FLOAT,   Cost.EXPENSIVE,             np.sin,            None),
    ("cosine",                     1, FLOAT,   Cost.EXPENSIVE,             np.cos,            None),
    ("tan",                        1, FLOAT,   Cost.EXPENSIVE,             np.tan,            None),
    ("tanh",                       1, FLOAT,   Cost.EXPENSIVE,             np.tanh,           None),
    ("logistic",                   1, FLOAT,   Cost.EXPENSIVE,             _logistic,         None),
    ("add",                        2, ANY,     Cost.CHEAP,                 np.add,            "+"),
    ("subtract",                   2, NUMERIC, Cost.CHEAP,                 np.subtract,       "−"),
    ("multiply",                   2, ANY,     Cost.CHEAP,                 np.multiply,       "×"),
    ("divide",                     2, NUMERIC, Cost.EXPENSIVE_FOR_INTEGERS, _int_divide,      "÷"),
    ("remainder",                  2, NUMERIC, Cost.EXPENSIVE_FOR_INTEGERS, _remainder,       None),
    ("power",                      2, NUMERIC, Cost.EXPENSIVE,             np.power,          "^"),
    ("atan2",                      2, FLOAT,   Cost.EXPENSIVE,             np.arctan2,        None),
    ("maximum",                    2, ANY,     Cost.CHEAP,                 np.maximum,        None),
    ("minimum",                    2, ANY,     Cost.CHEAP,                 np.minimum,        None),
    ("and",                        2, INTEGRAL, Cost.CHEAP,                _and,              "&"),
    ("or",                         2, INTEGRAL, Cost.CHEAP,                np.bitwise_or,     "|"),
    ("xor",                        2, INTEGRAL, Cost.CHEAP,                np.bitwise_xor,    "^"),
    ("shift-left",                 2, INTEGER, Cost.CHEAP,                 _shift_left,       None),
    ("shift-right-arithmetic",     2, INTEGER, Cost.CHEAP,                 _shift_right_arith, None),
    ("shift-right-logical",        2, INTEGER, Cost.CHEAP,                 _shift_right_logical, None),
]

# The scalar expressions code generators emit (codegen/exprs.py fills in the placeholders), per
# opcode, per element kind of the type the op computes in (its operands'; select's data
# operands'): b pred, i signed integer, u unsigned integer, f float, several letters for several kinds; convert's
# keys are "from>to" kinds, the first that matches taken. {0} {1} {2} are the operands, {T} the
# result's NumPy type (a float16 is computed in float32; a convert to it is scalar.f16_from), {one} a 1 of that type, {inf} an infinity of the operands' type, {op}
# compare's Python operator (COMPARISONS), and {exp} {expm1} {log} {log1p} {tanh} {logistic}
# codegen/fastmath.py's functions of the type.
# Each has exactly the result's element type in Numba and the row's `impl` semantics: bit-exact
# for integers and bools, within a few ulp for float functions, NaN and Inf as in NumPy. Where
# Python's operators differ from HLO (NaN and signed zeros in max/min/clamp, integer division
# and remainder, shifts past the width, saturating float -> int conversion) it calls a helper
# from codegen/scalar.py. Two facts of Numba's typing shape them: it computes int8/int16/int32
# arithmetic in int64 and uint8/uint16/uint32 in uint64 or int64 (so integer results are cast
# back with `{T}(...)`: the cast wraps, as NumPy does), and a float32 combined with a Python float is computed in float64 (so float
# constants are typed, `np.float32(1)`).
_SCALAR: dict[str, dict[str, str]] = {
    "negate":                 {"iu": "{T}(-{0})", "f": "(-{0})"},
    # abs(INT_MIN) wraps to INT_MIN, as np.abs; an unsigned value is its own absolute value
    "abs":                    {"if": "abs({0})", "u": "{0}"},
    "sign":                   {"iuf": "sign({0})"},
    "floor":                  {"f": "np.floor({0})"},
    "ceil":                   {"f": "np.ceil({0})"},
    "round-nearest-even":     {"f": "np.rint({0})"},
    "round-nearest-afz":      {"f": "round_afz({0})"},
    "not":                    {"b": "(not {0})", "iu": "{T}(~{0})"},
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
    "add":                    {"b": "({0} | {1})", "iu": "{T}({0} + {1})", "f": "({0} + {1})"},
    "subtract":               {"iu": "{T}({0} - {1})", "f": "({0} - {1})"},
    "multiply":               {"b": "({0} & {1})", "iu": "{T}({0} * {1})", "f": "({0} * {1})"},
    "divide":                 {"i": "int_divide({0}, {1})", "u": "uint_divide({0}, {1})",
                               "f": "({0} / {1})"},
    "remainder":              {"i": "int_remainder({0}, {1})", "u": "uint_remainder({0}, {1})",
                               "f": "np.fmod({0}, {1})"},
    "power":                  {"iu": "int_power({0}, {1})", "f": "np.power({0}, {1})"},
    "atan2":                  {"f": "np.arctan2({0}, {1})"},
    "maximum":                {"b": "({0} | {1})", "iuf": "maximum({0}, {1})"},
    "minimum":                {"b": "({0} & {1})", "iuf": "minimum({0}, {1})"},
    "and":                    {"b": "({0} & {1})", "iu": "{T}({0} & {1})"},
    "or":                     {"b": "({0} | {1})", "iu": "{T}({0} | {1})"},
    "xor":                    {"b": "({0} ^ {1})", "iu": "{T}({0} ^ {1})"},
    "shift-left":             {"iu": "shift_left({0}, {1})"},
    "shift-right-arithmetic": {"i": "shift_right_arithmetic({0}, {1})",
                               "u": "uint_shift_right_arithmetic({0}, {1})"},
    "shift-right-logical":    {"iu": "shift_right_logical({0}, {1})"},
    # NaN converts to True, as NumPy's astype(bool); float -> integer saturates, NaN to 0. The
    # other casts are LLVM's: integers wrap, int -> float and float -> float round to nearest
    # (int64 -> float32 in one rounding), float overflow gives Inf; as NumPy's astype.
    "convert":                {"biuf>b": "({0} != 0)", "f>iu": "float_to_int({0}, {T})",
                               "biuf>iuf": "{T}({0})"},
    # Python's float comparisons are IEEE's: false with a NaN operand, except !=.
    "compare":                {"biuf": "({0} {op} {1})"},
    "select":                 {"biuf": "({1} if {0} else {2})"},
    "clamp":                  {"iuf": "clamp({0}, {1}, {2})"},  # clamp(lo, x, hi)
}

for _name, _arity, _kinds, _cost, _fn, _symbol in _EW:
    _op(_name, Group.ELEMENTWISE, _arity, _kinds, "same", _ew(_fn), _cost, _infer_elementwise,
        symbol=_symbol)

_op("is-finite", Group.ELEMENTWISE, 1, FLOAT, "pred", _ew(np.isfinite), Cost.CHEAP, _infer_pred)


def _convert_impl(instr, args, ctx):
    with np.errstate(all="ignore"):  # f64 -> f32 overflow is inf, as in XLA
        return _convert(instr, args[0])


def _convert(instr, x):
    if instr.dtype == np.bool_:
        return np.asarray(x != 0)  # an array even for 0-d x, where != gives a NumPy scalar
    if kind(instr.dtype) in INTEGER and kind(x.dtype) == "f":
        # XLA saturates float -> integer conversions and maps NaN to 0 (NumPy leaves those
        # cases undefined).
        info = np.iinfo(instr.dtype)
        t = np.trunc(np.where(np.isnan(x), 0, x))
        hi, lo = t >= float(info.max), t <= float(info.min)
        out = np.where(hi | lo, 0, t).astype(instr.dtype)
        out[hi], out[lo] = info.max, info.min
        return out
    return x.astype(instr.dtype)


def _infer_convert(shapes, attrs):
    return shapes[0].with_dtype(attrs["new_dtype"])


_op("convert", Group.ELEMENTWISE, 1, ANY, "declared", _convert_impl, Cost.CHEAP,
    _infer_convert, "change the element type; the target type is the instruction's own")


# Compare and select.

# Per direction: NumPy's function, Python's operator (compare's {op}), the symbol for readers.
COMPARISONS = {
    "EQ": (np.equal,         "==", "=="),
    "NE": (np.not_equal,     "!=", "≠"),
    "LT": (np.less,          "<",  "<"),
    "LE": (np.less_equal,    "<=", "≤"),
    "GT": (np.greater,       ">",  ">"),
    "GE": (np.greater_equal, ">=", "≥"),
}


def _compare_impl(instr, args, ctx):
    fn = COMPARISONS[instr.attr("direction")][0]
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args))


def _select_impl(instr, args, ctx):
    pred, on_true, on_false = args
    return np.asarray(np.where(pred, on_true, on_false)).astype(instr.dtype, copy=False)


def _clamp_impl(instr, args, ctx):
    """np.clip(x, lo, hi) with scalar bounds, which keeps x where it equals a bound
    (np.clip(+0.0, -0.0, 1) is +0.0): NaN if any operand is NaN, hi where lo > hi. Not
    np.minimum(np.maximum(x, lo), hi), which gives the bound on a tie (-0.0 there), as
    np.clip itself does with array bounds."""
    lo, x, hi = args
    with np.errstate(all="ignore"):
        t = np.where((lo > x) | (lo != lo), lo, x)
        return np.asarray(np.where((hi < t) | (hi != hi), hi, t)).astype(instr.dtype, copy=False)


_op("compare", Group.COMPARE_SELECT, 2, ANY, "pred", _compare_impl, Cost.CHEAP, _infer_pred,
    "attribute direction=EQ|NE|LT|LE|GT|GE")
_op("select", Group.COMPARE_SELECT, 3, ANY, "operand1", _select_impl, Cost.CHEAP,
    lambda s, a: s[1], "select(pred, on_true, on_false)")
_op("clamp", Group.COMPARE_SELECT, 3, NUMERIC, "operand1", _clamp_impl, Cost.CHEAP,
    lambda s, a: s[1], "clamp(min, x, max)")


def infix_symbol(instr) -> str | None:
    """The symbol a reader knows a binary instruction's op by (`×`, `≤`), or None: its row's,
    or for a compare its direction's."""
    if instr.opcode == "compare":
        return COMPARISONS.get(str(instr.attr("direction")), (None, None, "?"))[2]
    row = OPS.get(instr.opcode)
    return row.symbol if row is not None else None


# Reductions. `to_apply` names the reducer computation; the interpreter runs known reducers
# (one binary op of the two parameters) with NumPy's own ufunc.reduce, any other as a tree.


def _reduce_impl(instr, args, ctx):
    n = len(args) // 2
    operands, inits = args[:n], args[n:]
    axes = tuple(instr.attr("dimensions"))
    return ctx.reduce(instr.attr("to_apply"), operands, inits, axes, instr.shape)


def _infer_reduce(shapes, attrs):
    axes = set(attrs["dimensions"])
    n = len(shapes) // 2
    outs = [s.with_dims([d for i, d in enumerate(s.dims) if i not in axes]) for s in shapes[:n]]
    return outs[0] if n == 1 else TupleShape(tuple(outs))


_op("reduce", Group.REDUCE, None, ANY, "same", _reduce_impl, Cost.EXPENSIVE, _infer_reduce,
    "reduce(operands..., inits...), dimensions={...}, to_apply=reducer")


def _reduce_window_impl(instr, args, ctx):
    return ctx.reduce_window(instr, args)


_op("reduce-window", Group.REDUCE, None, ANY, "same", _reduce_window_impl, Cost.EXPENSIVE,
    None, "windowed reduction (XLA's CPU backend splits big sums into one)")


# -- scans: the growing window of np.cumsum and ufunc.accumulate ---------------------


def growing_window(dims, axis: int) -> str:
    """The window of a scan along `axis`, as XLA prints it: as long as the axis, padded by one
    element fewer before the array and none after, so output i reduces elements 0..i."""
    n = dims[axis]
    size = "x".join(str(n) if d == axis else "1" for d in range(len(dims)))
    pad = "x".join(f"{n - 1}_0" if d == axis else "0_0" for d in range(len(dims)))
    return "{" + f"size={size} pad={pad}" + "}"


def scan_axis(instr) -> int | None:
    """The axis a reduce-window scans along when its window is a growing one (output i
    reduces elements 0..i of that axis, stride 1, no dilation), else None."""
    if instr.opcode != "reduce-window" or len(instr.operands) != 2:
        return None
    x = instr.operands[0]
    if x.shape.is_tuple or instr.shape.is_tuple or instr.dims != x.dims or not x.dims:
        return None
    fields = dict(re.findall(r"(\w+)=([^\s{}]+)", str(instr.attr("window", ""))))
    try:
        size = [int(v) for v in fields["size"].split("x")]
        stride = [int(v) for v in fields.get("stride", "x".join(["1"] * len(size))).split("x")]
        pad = [tuple(int(p) for p in v.split("_"))
               for v in fields.get("pad", "x".join(["0_0"] * len(size))).split("x")]
        dilate = set(fields.get("lhs_dilate", "1").split("x")) | set(
            fields.get("rhs_dilate", "1").split("x"))
    except (KeyError, ValueError):
        return None
    if len(size) != len(x.dims) or set(stride) != {1} or dilate != {"1"}:
        return None
    axes = [d for d, k in enumerate(size) if k != 1 or pad[d] != (0, 0)]
    if len(axes) != 1:
        return None
    (d,) = axes
    n = x.dims[d]
    return d if size[d] == n and pad[d] == (n - 1, 0) else None


# -- sort ---------------------------------------------------------------------------
# XLA's sort: operands of one shape sorted together along `dimensions={d}`, ordered by the
# comparator `to_apply` (2n scalar parameters: lhs and rhs of operand 0, of operand 1, ...;
# it returns pred, true where lhs goes first); a tuple of the sorted operands when n > 1.


def _sort_impl(instr, args, ctx):
    return ctx.sort(instr, args)


def _infer_sort(shapes, attrs):
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


_op("sort", Group.REDUCE, None, ANY, "same", _sort_impl, Cost.EXPENSIVE, _infer_sort,
    "sort(operands...), dimensions={d}, is_stable=true, to_apply=comparator")


def comparator_signature(comp) -> str:
    """A comparator's root as an expression of its parameters, `or(compare.LT(p0,p1),...)`:
    how the interpreter and code generators recognise the comparators they have fast paths
    for, whatever the instructions are named."""
    def sig(inst) -> str:
        if inst.opcode == "parameter":
            return f"p{inst.parameter_number}"
        head = inst.opcode
        if inst.opcode == "compare":
            head += "." + str(inst.attr("direction"))
        return head + "(" + ",".join(sig(o) for o in inst.operands) + ")"
    return sig(comp.root)


# The comparators np.sort's lowering emits, by the element kind of operand 0, as signatures:
# ascending, NaN after everything else (NumPy's order); -0.0 and 0.0 compare equal, so a
# stable sort keeps them in input order.
ASCENDING_COMPARATORS = {
    "f": "or(compare.LT(p0,p1),and(compare.NE(p1,p1),compare.EQ(p0,p0)))",
    "i": "compare.LT(p0,p1)",
    "b": "compare.LT(p0,p1)",
}


# Data movement: these change where elements live, not their values.


def _broadcast_impl(instr, args, ctx):
    (x,) = args
    dims = instr.attr("dimensions")
    out_dims = instr.shape.dims
    # Put the operand's dimensions where `dimensions` says, with size 1 elsewhere.
    view_shape = [1] * len(out_dims)
    for src, dst in enumerate(dims):
        view_shape[dst] = x.shape[src]
    order = np.argsort(dims) if len(dims) else []
    x = np.transpose(x, order) if len(dims) else x
    return np.broadcast_to(x.reshape(view_shape), out_dims).copy()


def _infer_broadcast(shapes, attrs):
    return shapes[0].with_dims(attrs["out_dims"])


def _reshape_impl(instr, args, ctx):
    return np.ascontiguousarray(args[0]).reshape(instr.shape.dims)


def _transpose_impl(instr, args, ctx):
    return np.ascontiguousarray(np.transpose(args[0], instr.attr("dimensions")))


def _infer_transpose(shapes, attrs):
    return shapes[0].with_dims([shapes[0].dims[d] for d in attrs["dimensions"]])


def _slice_impl(instr, args, ctx):
    spec = instr.attr("slice")
    return np.ascontiguousarray(args[0][tuple(slice(a, b, c) for a, b, c in spec)])


def _slice_len(start, limit, stride):
    return max(0, -(-(limit - start) // stride))


def _infer_slice(shapes, attrs):
    return shapes[0].with_dims([_slice_len(*s) for s in attrs["slice"]])


def _concat_impl(instr, args, ctx):
    return np.concatenate(args, axis=instr.attr("dimensions")[0])


def _infer_concat(shapes, attrs):
    (axis,) = attrs["dimensions"]
    dims = list(shapes[0].dims)
    dims[axis] = sum(s.dims[axis] for s in shapes)
    return shapes[0].with_dims(dims)


def _reverse_impl(instr, args, ctx):
    return np.ascontiguousarray(np.flip(args[0], axis=tuple(instr.attr("dimensions"))))


def _pad_impl(instr, args, ctx):
    x, value = args
    out = np.full(instr.shape.dims, value, dtype=instr.dtype)
    cfg = instr.attr("padding")
    # Interior padding spreads the operand out; negative edge padding crops.
    index = []
    spread = np.full([(n - 1) * (i + 1) + 1 if n else 0 for n, (_, _, i) in zip(x.shape, cfg)],
                     value, dtype=instr.dtype)
    spread[tuple(slice(None, None, i + 1) for (_, _, i) in cfg)] = x
    for (lo, hi, _), n in zip(cfg, spread.shape):
        index.append((lo, hi, n))
    src = tuple(slice(max(0, -lo), n - max(0, -hi)) for lo, hi, n in index)
    dst = tuple(slice(max(0, lo), max(0, lo) + (n - max(0, -lo) - max(0, -hi)))
                for lo, hi, n in index)
    out[dst] = spread[src]
    return out


def _infer_pad(shapes, attrs):
    x = shapes[0]
    dims = [lo + hi + n + max(0, n - 1) * i for n, (lo, hi, i) in zip(x.dims, attrs["padding"])]
    return x.with_dims(dims)


def _start_indices(x, starts, sizes):
    # XLA clamps dynamic start indices so the window stays inside the operand.
    return [int(min(max(int(s), 0), n - k)) for s, n, k in zip(starts, x.shape, sizes)]


def _dynamic_slice_impl(instr, args, ctx):
    x, *starts = args
    sizes = instr.attr("dynamic_slice_sizes")
    st = _start_indices(x, starts, sizes)
    return np.ascontiguousarray(x[tuple(slice(s, s + k) for s, k in zip(st, sizes))])


def _infer_dynamic_slice(shapes, attrs):
    return shapes[0].with_dims(attrs["dynamic_slice_sizes"])


def _dus_impl(instr, args, ctx):
    x, update, *starts = args
    st = _start_indices(x, starts, update.shape)
    out = x.copy()
    out[tuple(slice(s, s + k) for s, k in zip(st, update.shape))] = update
    return out


_DM = Group.DATA_MOVEMENT
_op("broadcast", _DM, 1, ANY, "same", _broadcast_impl, infer=_infer_broadcast,
    doc="dimensions={...} maps each operand dimension to an output dimension")
_op("reshape", _DM, 1, ANY, "same", _reshape_impl, infer=lambda s, a: s[0].with_dims(a["out_dims"]))
_op("bitcast", _DM, 1, ANY, "same", _reshape_impl, infer=lambda s, a: s[0].with_dims(a["out_dims"]),
    doc="a reshape that moves no data (row-major layouts only here)")
_op("transpose", _DM, 1, ANY, "same", _transpose_impl, infer=_infer_transpose)
_op("copy", _DM, 1, ANY, "same", lambda i, a, c: a[0].copy(), infer=_infer_elementwise)
_op("slice", _DM, 1, ANY, "same", _slice_impl, infer=_infer_slice,
    doc="slice={[start:limit:stride], ...}")
_op("concatenate", _DM, None, ANY, "same", _concat_impl, infer=_infer_concat)
_op("reverse", _DM, 1, ANY, "same", _reverse_impl, infer=_infer_elementwise)
_op("pad", _DM, 2, ANY, "same", _pad_impl, infer=_infer_pad,
    doc="padding=lo_hi_interior x ... per dimension")
_op("dynamic-slice", _DM, None, ANY, "same", _dynamic_slice_impl, infer=_infer_dynamic_slice)
_op("dynamic-update-slice", _DM, None, ANY, "same", _dus_impl, infer=_infer_elementwise,
    doc="dynamic-update-slice(operand, update, start indices...)")


# -- gather and scatter --------------------------------------------------------------
# XLA's general gather and scatter, with their dimension numbers as XLA's operation semantics
# define them. The indices' `index_vector_dim` holds the start-index vectors; every other
# dimension of the indices is a batch dimension. Out-of-range start indices are an error here
# (IndexError at the user's line, so the reference is never silently wrong); compiled code
# does what XLA does: gather clamps each start into [0, dim - slice_size], scatter skips an
# update whose window would leave the operand. NumPy's negative indices are wrapped by the
# lowering (`select(i < 0, i + n, i)`) before they reach either op.


def _index_vectors(idx, index_vector_dim):
    """The indices with the index vector as the last dimension (a size-1 one added when
    index_vector_dim is the indices' rank, XLA's implicit trailing 1)."""
    idx = np.asarray(idx)
    if index_vector_dim == idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, index_vector_dim, -1)


def out_of_range(instr, what, value, lo, hi):
    """The reference interpreter's error for a start index compiled code would clamp (gather)
    or skip (scatter): an IndexError at the user's line."""
    src = instr.metadata
    fate = "clamps it" if instr.opcode == "gather" else "skips this update"
    return IndexOutOfRangeError(
        f"{instr.opcode} {instr.name}: {what} index {value} is outside [{lo}, {hi}]",
        op=instr.opcode, source_file=src.source_file or None,
        source_line=src.source_line or None,
        hint=f"Compiled code {fate} (as XLA does); NumPy would raise IndexError. Check the "
             "index values, or clip them with np.clip / np.take(..., mode='clip').")


def _gather_impl(instr, args, ctx):
    x, idx = args
    offset_dims = tuple(instr.attr("offset_dims", ()))
    collapsed = set(instr.attr("collapsed_slice_dims", ()))
    start_map = tuple(instr.attr("start_index_map", ()))
    sizes = tuple(instr.attr("slice_sizes", ()))
    vec = _index_vectors(idx, instr.attr("index_vector_dim")).astype(np.int64)
    for k, d in enumerate(start_map):
        s = vec[..., k]
        bad = (s < 0) | (s > x.shape[d] - sizes[d])
        if bad.any():
            where = tuple(int(v) for v in np.argwhere(bad)[0])
            raise out_of_range(instr, f"the start (operand dimension {d}) at indices position "
                                      f"{where}:", int(s[where]), 0, x.shape[d] - sizes[d])
    out_dims = instr.shape.dims
    grid = np.indices(out_dims, dtype=np.int64) if out_dims else np.zeros((0,), np.int64)
    batch_out = [d for d in range(len(out_dims)) if d not in offset_dims]
    batch = vec[tuple(grid[d] for d in batch_out)] if out_dims else vec[()]
    window_dims = [d for d in range(x.ndim) if d not in collapsed]
    index = []
    for d in range(x.ndim):
        at = np.zeros(out_dims, np.int64)
        if d in start_map:
            at = at + batch[..., start_map.index(d)]
        if d in window_dims:
            at = at + grid[offset_dims[window_dims.index(d)]]
        index.append(at)
    return np.array(x[tuple(index)], dtype=instr.dtype)


def _infer_gather(shapes, attrs):
    x, idx = shapes
    offset_dims = tuple(attrs["offset_dims"])
    collapsed = set(attrs.get("collapsed_slice_dims", ()))
    ivd = attrs["index_vector_dim"]
    sizes = tuple(attrs["slice_sizes"])
    batch = [n for d, n in enumerate(idx.dims) if d != ivd]
    window = [sizes[d] for d in range(x.rank) if d not in collapsed]
    rank = len(batch) + len(offset_dims)
    dims, b, w = [], iter(batch), iter(window)
    for d in range(rank):
        dims.append(next(w) if d in offset_dims else next(b))
    return x.with_dims(dims)


def _scatter_impl(instr, args, ctx):
    return ctx.scatter(instr, args)


def scatter_indices(instr, x_shape, idx, upd_shape):
    """For each update element (row-major over the updates), its operand index (one array per
    operand dimension, of the updates' shape) and whether its window fits the operand: the
    scatter's dimension numbers applied, as XLA's semantics give them."""
    window_dims = tuple(instr.attr("update_window_dims", ()))
    inserted = set(instr.attr("inserted_window_dims", ()))
    to_operand = tuple(instr.attr("scatter_dims_to_operand_dims", ()))
    vec = _index_vectors(idx, instr.attr("index_vector_dim")).astype(np.int64)
    rank = len(upd_shape)
    grid = np.indices(upd_shape, dtype=np.int64) if rank else np.zeros((0,), np.int64)
    scatter_dims = [d for d in range(rank) if d not in window_dims]
    batch = vec[tuple(grid[d] for d in scatter_dims)] if rank else vec[()]
    operand_window = [d for d in range(len(x_shape)) if d not in inserted]
    index, fits = [], np.ones(upd_shape, bool)
    for d, n in enumerate(x_shape):
        start = batch[..., to_operand.index(d)] if d in to_operand else np.zeros(upd_shape, np.int64)
        size = upd_shape[window_dims[operand_window.index(d)]] if d in operand_window else 1
        fits &= (start >= 0) & (start <= n - size)
        offset = grid[window_dims[operand_window.index(d)]] if d in operand_window else 0
        index.append(start + offset)
    return index, fits


def _infer_scatter(shapes, attrs):
    return shapes[0]


_op("gather", _DM, 2, ANY, "same", _gather_impl, infer=_infer_gather,
    doc="gather(operand, start_indices), offset_dims, collapsed_slice_dims, start_index_map, "
        "index_vector_dim, slice_sizes: XLA's general gather. Compiled code clamps each start "
        "into [0, dim - slice_size]; the reference interpreter raises IndexError instead")
# A scatter runs its combiner (to_apply) once per update element, in order, so it is grouped
# with the ops that call a reducer: it is a kernel of its own, never inside another.
_op("scatter", Group.REDUCE, 3, ANY, "same", _scatter_impl, Cost.EXPENSIVE, _infer_scatter,
    doc="scatter(operand, scatter_indices, updates), update_window_dims, inserted_window_dims, "
        "scatter_dims_to_operand_dims, index_vector_dim, to_apply: XLA's general scatter, "
        "applied in update order. Compiled code skips an update whose window leaves the "
        "operand; the reference interpreter raises IndexError instead")


# Dot: a general contraction with batch and contracting dimensions.


def _dot_impl(instr, args, ctx):
    a, b = args
    lb, lc = instr.attr("lhs_batch_dims", ()), instr.attr("lhs_contracting_dims", ())
    rb, rc = instr.attr("rhs_batch_dims", ()), instr.attr("rhs_contracting_dims", ())
    lf = [d for d in range(a.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(b.ndim) if d not in rb and d not in rc]
    # Move to (batch, free, contracting) and (batch, contracting, free), then matmul.
    at = np.transpose(a, [*lb, *lf, *lc])
    bt = np.transpose(b, [*rb, *rc, *rf])
    bs = [a.shape[d] for d in lb]
    m, k, n = prod(a.shape[d] for d in lf), prod(a.shape[d] for d in lc), prod(b.shape[d] for d in rf)
    at = at.reshape(*bs, m, k)
    bt = bt.reshape(*bs, k, n)
    if instr.dtype == np.bool_:
        out = np.matmul(at.astype(np.int64), bt.astype(np.int64)) != 0
    else:
        out = np.matmul(at, bt)
    return out.reshape(instr.shape.dims).astype(instr.dtype, copy=False)


def _infer_dot(shapes, attrs):
    a, b = shapes
    lb, lc = attrs.get("lhs_batch_dims", ()), attrs.get("lhs_contracting_dims", ())
    rb, rc = attrs.get("rhs_batch_dims", ()), attrs.get("rhs_contracting_dims", ())
    dims = [a.dims[d] for d in lb]
    dims += [n for d, n in enumerate(a.dims) if d not in lb and d not in lc]
    dims += [n for d, n in enumerate(b.dims) if d not in rb and d not in rc]
    return a.with_dims(dims)


_op("dot", Group.DOT, 2, ANY, "same", _dot_impl, Cost.EXPENSIVE, _infer_dot,
    "lhs/rhs_batch_dims and lhs/rhs_contracting_dims; result dims: batch, lhs free, rhs free")


# Leaves.


def _iota_impl(instr, args, ctx):
    dims = instr.shape.dims
    axis = instr.attr("iota_dimension")
    ramp = np.arange(dims[axis], dtype=instr.dtype if instr.dtype != np.bool_ else np.int64)
    shape = [1] * len(dims)
    shape[axis] = dims[axis]
    return np.broadcast_to(ramp.reshape(shape), dims).astype(instr.dtype)


_op("parameter", Group.LEAF, 0, ANY, "declared", lambda i, a, c: c.parameter(i.parameter_number))
_op("constant", Group.LEAF, 0, ANY, "declared", lambda i, a, c: i.literal.copy())
_op("iota", Group.LEAF, 0, ANY, "declared", _iota_impl, doc="iota_dimension=d counts 0, 1, ... along d")


# Structural.

_op("tuple", Group.STRUCTURAL, None, ANY, "declared", lambda i, a, c: tuple(a),
    infer=lambda s, a: TupleShape(tuple(s)))
_op("get-tuple-element", Group.STRUCTURAL, 1, ANY, "declared", lambda i, a, c: a[0][i.attr("index")],
    infer=lambda s, a: s[0].elements[a["index"]])


# Calls of other computations: `call` (to_apply=) and `fusion` (calls=, kind=kLoop|kInput|kOutput).

_op("call", Group.CALL, None, ANY, "declared", lambda i, a, c: c.call(i.attr("to_apply"), a))
_op("fusion", Group.CALL, None, ANY, "declared", lambda i, a, c: c.call(i.attr("calls"), a),
    doc="kind=kLoop|kInput|kOutput, calls=the fused computation")
# XLA's loop: the state (its one operand, a tuple) goes through body= while condition= says
# so; the result is the last state.
_op("while", Group.CALL, 1, ANY, "declared",
    lambda i, a, c: c.loop(i.attr("condition"), i.attr("body"), a[0]),
    doc="condition=state -> pred[], body=state -> state")


# Not compilable: NumPy functions whose output shape depends on input values. They are
# custom-calls carrying the concrete shape seen at trace time; the interpreter runs NumPy.
# A custom-call to a library routine (ir/library.py) is the exception: it compiles, as a
# kernel of its own (its group is LIBRARY: `instruction_group`).

_op("custom-call", Group.NOT_COMPILABLE, None, ANY, "declared",
    lambda i, a, c: c.library_call(i, a) if is_library_call(i) else c.custom_call(i, a),
    Cost.EXPENSIVE,
    doc="custom_call_target names the NumPy function run eagerly, or a library routine")


# The custom-calls the tracer makes for value-dependent shapes (and numpy.sort, read in HLO
# text from before np.sort traced to the sort op). Every other numpy.* target is an opaque
# call: a NumPy function the op table lacks. How each runs is the tracer's business
# (trace/numpy/eager_calls.py), named in the HLO text so that any process can run it.
CUSTOM_CALLS = frozenset({"numpy.unique", "numpy.nonzero", "numpy.argwhere", "numpy.sort",
                          "numpy.boolean_mask"})


# Custom-calls whose shape is their operand's, whatever its values: a trace that reads the
# shape of their result depends on no value (opaque calls may return any shape).
SHAPE_KEEPING = frozenset({"numpy.sort"})


def elementwise_like(opcode: str) -> bool:
    """Ops whose output element i depends only on operand elements i."""
    return in_group(opcode, Group.ELEMENTWISE, Group.COMPARE_SELECT)


def infer_shape(opcode: str, operand_shapes: Sequence, attrs: dict) -> Any:
    """The shape an instruction produces, from its operands' shapes and its attributes."""
    row = op(opcode)
    if row.infer is None:
        raise ValueError(f"{opcode} has no shape rule: its shape must be declared")
    return row.infer(list(operand_shapes), attrs)
