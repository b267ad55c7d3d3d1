"""One record per supported NumPy function, in the style of JAX's `lax_test_util.op_record`
and lightning-thunder's OpInfo.

A record says how to call the function (`fn`), how many arrays it takes, how to make inputs
inside its domain (one generator per argument), which element types it is tested with, and
which argument shapes and keyword variants to try. `test_numpy_ops.py` expands every record
into cases and compares the explorer's compiled result with NumPy's own, in value, shape and
type. Adding an op means adding its record here.
"""
from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .linalg_records import (GENERAL, IDENTITY, NEAR_SINGULAR, SPD, SPD_LOWER_JUNK,
                             SPD_UPPER_JUNK, WELL, eigh_defined, qr_defined, svd_defined)

BOOL, I32, I64, F32, F64 = (np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32,
                                                   np.float64))
I8, I16, U8, U16, U32, U64 = (np.dtype(t) for t in (np.int8, np.int16, np.uint8, np.uint16,
                                                    np.uint32, np.uint64))
F16 = np.dtype(np.float16)
# The narrow and unsigned integers come after the first type (the fast and layout tests take
# the first and last of a record's types). With int8 supported, NumPy's bool loops that compute
# in int8 (np.floor_divide, np.power, np.left_shift...) are supported too.
SMALL_INTS = (I8, I16, U8, U16, U32, U64)
ALL = (BOOL, I32, I64, *SMALL_INTS, F16, F32, F64)
NUMERIC = (I32, I64, *SMALL_INTS, F16, F32, F64)
FLOATS = (F16, F32, F64)
INTS = (I32, I64, *SMALL_INTS)
INTEGRAL = (BOOL, I32, I64, *SMALL_INTS)
UNSIGNED = (U8, U16, U32, U64)
_SIGNED_ALL = tuple(d for d in ALL if d not in UNSIGNED)

# Argument shapes. Element-wise records use these; others list their own.
UNARY_SHAPES = (((),), ((0,),), ((7,),), ((2, 3, 4),))
BINARY_SHAPES = (((3, 4), (3, 4)), ((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((), (3,)),
                 ((0, 3), (3,)))
TERNARY_SHAPES = (((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), ()), ((4,), (2, 3, 4), (1, 4)),
                  ((), (), ()), ((0, 2), (2,), ()))


# -- input generators: (rng, shape, dtype) -> an array of exactly that shape and type -----------


def _make(values, shape, dtype) -> np.ndarray:
    return np.asarray(values).astype(dtype).reshape(shape)


def _ints(rng, shape, dtype, lo, hi):
    """Integers in [lo, hi]; booleans at random."""
    if dtype == BOOL:
        return _make(rng.random(shape) < 0.5, shape, dtype)
    return _make(rng.integers(lo, hi + 1, shape), shape, dtype)


def _domain(lo, hi, *, int_lo=None, int_hi=None, exclude_zero=False, quarters=False):
    """Floats uniform in [lo, hi] (or on the quarter grid, to hit exact halves and integers);
    integers in [int_lo, int_hi]; optionally never zero."""
    int_lo = int(np.ceil(lo)) if int_lo is None else int_lo
    int_hi = int(np.floor(hi)) if int_hi is None else int_hi

    def gen(rng, shape, dtype):
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            if quarters:
                v = rng.integers(int(lo * 4), int(hi * 4) + 1, shape) / 4
            else:
                v = rng.uniform(lo, hi, shape)
            if exclude_zero:
                v = np.where(np.abs(v) < 0.25, 0.5, v)
            return _make(v, shape, dtype)
        if dtype == BOOL and exclude_zero:
            return np.ones(shape, BOOL)
        v = _ints(rng, shape, dtype, int_lo, int_hi)
        if exclude_zero and dtype != BOOL:
            v = np.where(v == 0, 1, v).astype(dtype)
        return v

    return gen


def boolean(rng, shape, dtype=None):
    return _make(rng.random(shape) < 0.5, shape, BOOL)


def shift_amount(rng, shape, dtype):
    """Shifts in [0, bits of the type)."""
    dtype = np.dtype(dtype)
    bits = 1 if dtype == BOOL else dtype.itemsize * 8
    return _ints(rng, shape, dtype, 0, bits - 1)


ANY = _domain(-3, 3, int_lo=-9, int_hi=9)
QUARTERS = _domain(-3, 3, int_lo=-9, int_hi=9, quarters=True)
NONZERO = _domain(-3, 3, int_lo=-9, int_hi=9, exclude_zero=True)
POSITIVE = _domain(0.1, 5, int_lo=1, int_hi=9)
UNIT = _domain(-1, 1)  # arcsin, arccos: [-1, 1]
OPEN_UNIT = _domain(-0.95, 0.95, int_lo=0, int_hi=0)  # arctanh: (-1, 1)
AT_LEAST_ONE = _domain(1, 5)  # arccosh
BASE = _domain(0.1, 3, int_lo=-3, int_hi=3)  # power: positive float bases
EXPONENT = _domain(-2, 2, int_lo=0, int_hi=4)  # power: small, non-negative for integers
TAN = _domain(-1.3, 1.3, int_lo=-9, int_hi=9)  # away from the poles at +-pi/2
_CASTS_UNSIGNED = _domain(0, 3, int_lo=-9, int_hi=9, quarters=True)  # floats >= 0


def _uint64_below_2_63(base):
    """base's values, with uint64's wrapped negatives (just under 2**64) moved just under 2**63:
    for ops that compute through float64 and cast back (a pad's mean, round to tens), where
    2**64 - k rounds to 2**64 and the cast back to uint64 is undefined (0 on x86)."""
    def gen(rng, shape, dtype):
        v = base(rng, shape, dtype)
        if np.dtype(dtype) == U64:
            v = np.where(v >= 2**63, v - np.uint64(2**63), v).astype(U64)
        return v
    return gen


# -- the record --------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpRecord:
    name: str  # as the user writes it: "np.add", "x @ y", "x.sum"
    fn: Callable[..., Any]  # fn(*arrays, **variant) is the NumPy program traced
    arity: int | None  # arrays it takes; None: as many as the case's shapes
    domains: tuple  # one input generator per argument (the last repeats)
    dtypes: tuple  # element types it is tested with
    shapes: tuple = ()  # argument shapes: one tuple of shapes per case
    variants: tuple = ({},)  # keyword arguments, crossed with `shapes`
    cases: tuple = ()  # explicit (shapes, variant) pairs, added to the cross product
    group: str = "elementwise"
    tol: float = 1.0  # times xla_explorer.api.tolerance(dtype)
    values: bool = True  # False: NumPy's values are arbitrary (np.empty), compare shape/type only
    meta: dict = field(default_factory=dict)

    def all_cases(self):
        out = [(s, v) for s, v in itertools.product(self.shapes, self.variants)]
        return out + list(self.cases)

    def make_args(self, rng, shapes, dtype) -> list:
        doms = self.domains or (ANY,)
        return [doms[min(i, len(doms) - 1)](rng, s, dtype) for i, s in enumerate(shapes)]


def _result_supported(ufunc, dtype) -> bool:
    """Whether NumPy's loop for `dtype` gives a type the explorer has."""
    loop = ufunc.resolve_dtypes((dtype,) * ufunc.nin + (None,) * ufunc.nout)
    return all(t in ALL for t in loop)


def ufunc_record(ufunc, dtypes, domains=(ANY,), *, name=None, tol=1.0, shapes=None):
    arity = ufunc.nin
    dtypes = tuple(d for d in dtypes if _result_supported(ufunc, d))
    return OpRecord(name or f"np.{ufunc.__name__}", ufunc, arity, tuple(domains), tuple(dtypes),
                    shapes or (UNARY_SHAPES if arity == 1 else BINARY_SHAPES), tol=tol,
                    meta={"ufunc": ufunc})


U = ufunc_record
ELEMENTWISE = [
    # arithmetic
    U(np.add, ALL),
    U(np.subtract, NUMERIC),
    U(np.multiply, ALL),
    U(np.divide, ALL, (ANY, NONZERO)),
    U(np.true_divide, ALL, (ANY, NONZERO), name="np.true_divide"),
    U(np.floor_divide, ALL, (QUARTERS, NONZERO)),
    U(np.remainder, ALL, (QUARTERS, NONZERO)),
    U(np.power, ALL, (BASE, EXPONENT)),
    U(np.negative, NUMERIC),
    U(np.positive, NUMERIC),
    U(np.absolute, ALL),
    U(np.sign, NUMERIC),
    U(np.square, ALL),
    U(np.reciprocal, ALL, (NONZERO,)),
    U(np.divmod, ALL, (QUARTERS, NONZERO)),
    U(np.maximum, ALL),
    U(np.minimum, ALL),
    U(np.fmax, ALL),
    U(np.fmin, ALL),
    # exponentials and logarithms
    U(np.exp, ALL),
    U(np.exp2, ALL),
    U(np.expm1, ALL),
    U(np.log, ALL, (POSITIVE,)),
    U(np.log2, ALL, (POSITIVE,)),
    U(np.log10, ALL, (POSITIVE,)),
    U(np.log1p, ALL, (POSITIVE,)),
    U(np.sqrt, ALL, (POSITIVE,)),
    U(np.cbrt, ALL),
    # trigonometric and hyperbolic
    U(np.sin, ALL),
    U(np.cos, ALL),
    U(np.tan, ALL, (TAN,)),
    U(np.arcsin, ALL, (UNIT,)),
    U(np.arccos, ALL, (UNIT,)),
    U(np.arctan, ALL),
    U(np.arctan2, ALL),
    U(np.sinh, ALL),
    U(np.cosh, ALL),
    U(np.tanh, ALL),
    U(np.arcsinh, ALL),
    U(np.arccosh, ALL, (AT_LEAST_ONE,)),
    U(np.arctanh, ALL, (OPEN_UNIT,)),
    # rounding
    U(np.floor, ALL, (QUARTERS,)),
    U(np.ceil, ALL, (QUARTERS,)),
    U(np.trunc, ALL, (QUARTERS,)),
    U(np.rint, ALL, (QUARTERS,)),
    # comparisons and logic
    U(np.greater, ALL),
    U(np.greater_equal, ALL),
    U(np.less, ALL),
    U(np.less_equal, ALL),
    U(np.equal, ALL),
    U(np.not_equal, ALL),
    U(np.logical_and, ALL),
    U(np.logical_or, ALL),
    U(np.logical_xor, ALL),
    U(np.logical_not, ALL),
    U(np.isnan, ALL),
    U(np.isinf, ALL),
    U(np.isfinite, ALL),
    # bits
    U(np.bitwise_and, INTEGRAL),
    U(np.bitwise_or, INTEGRAL),
    U(np.bitwise_xor, INTEGRAL),
    U(np.invert, INTEGRAL),
    U(np.left_shift, INTEGRAL, (ANY, shift_amount)),
    U(np.right_shift, INTEGRAL, (ANY, shift_amount)),
]

SELECTION = [
    OpRecord("np.where", np.where, 3, (boolean, ANY), ALL, TERNARY_SHAPES, group="selection"),
    OpRecord("np.clip", np.clip, 3, (ANY, _domain(-3, -0.5, int_lo=-9, int_hi=-1),
                                       _domain(0.5, 3, int_lo=1, int_hi=9)),
             NUMERIC, TERNARY_SHAPES, group="selection"),
    # np.round to whole numbers: halves to even for floats, the same integers for ints
    OpRecord("np.round", np.round, 1, (QUARTERS,), NUMERIC, UNARY_SHAPES),
    OpRecord("np.around", np.around, 1, (QUARTERS,), NUMERIC, UNARY_SHAPES),
    # to decimals: NumPy scales by 10**decimals, rints and scales back; so does the lowering
    OpRecord("np.round decimals", np.round, 1, (ANY,), NUMERIC, UNARY_SHAPES,
             ({"decimals": 2}, {"decimals": 1}), group="selection"),
    OpRecord("np.round decimals<0", np.round, 1, (ANY,), FLOATS, UNARY_SHAPES,
             ({"decimals": -1},), group="selection"),
]


# -- reductions --------------------------------------------------------------------------------

_REDUCE_CASES = (
    (((2, 3, 4),), {}),
    (((2, 3, 4),), {"axis": 0}),
    (((2, 3, 4),), {"axis": -1}),
    (((2, 3, 4),), {"axis": (0, 2)}),
    (((2, 3, 4),), {"axis": (-1, 0), "keepdims": True}),
    (((2, 3, 4),), {"axis": None, "keepdims": True}),
    (((2, 3, 4),), {"axis": 1, "keepdims": True}),
    (((5,),), {}),
    (((5,),), {"axis": 0}),
    (((),), {}),
    (((0, 3),), {"axis": 1}),
)
# Reductions with an identity also take an empty axis.
_EMPTY_CASES = ((((0, 3),), {"axis": 0}), (((0,),), {}))
_ARG_CASES = tuple(c for c in _REDUCE_CASES if not isinstance(c[1].get("axis"), tuple))


def reduction(name, fn, dtypes, extra=(), *, empty=True, cases=_REDUCE_CASES, domains=(ANY,),
              tol=1.0):
    all_cases = tuple(cases) + (_EMPTY_CASES if empty else ()) + tuple(extra)
    return OpRecord(name, fn, 1, domains, dtypes, cases=all_cases, group="reduction", tol=tol)


_DT = (
    (((2, 3, 4),), {"axis": 1, "dtype": np.float64}),
    (((2, 3, 4),), {"dtype": np.float32}),
    (((2, 3, 4),), {"axis": (0, 1), "dtype": np.int64, "keepdims": True}),
)
_DDOF = (
    (((2, 3, 4),), {"axis": 1, "ddof": 1}),
    (((2, 3, 4),), {"ddof": 2, "keepdims": True}),
    (((2, 3, 4),), {"axis": 0, "dtype": np.float64}),
    (((2, 3, 4),), {"axis": -1, "dtype": np.float32, "ddof": 1}),
    (((2, 3, 4),), {"axis": 0, "correction": 1}),
    (((5,),), {"ddof": 5}),  # no degrees of freedom left: NumPy divides by zero
)
_WHERE = np.array([True, False, True])[:, None]  # broadcasts against (2, 3, 4)
_MASKED = (
    (((2, 3, 4),), {"initial": 5}),
    (((2, 3, 4),), {"axis": 1, "where": _WHERE}),
    (((2, 3, 4),), {"axis": (0, 2), "where": _WHERE, "initial": 1, "keepdims": True}),
    (((0, 3),), {"axis": 0, "initial": 2}),
)
_MASKED_EXTREME = (
    (((2, 3, 4),), {"initial": 1}),
    (((2, 3, 4),), {"axis": 1, "where": _WHERE, "initial": 3}),
    (((0, 3),), {"axis": 0, "initial": 0}),
)
REDUCTIONS = [
    reduction("np.sum", np.sum, ALL, _DT + _MASKED),
    reduction("np.prod", np.prod, ALL, _DT + _MASKED, domains=(_domain(-2, 2),)),
    reduction("np.mean", np.mean, ALL, (_DT[0], _DT[1], (((2, 3, 4),), {"axis": 1, "where": _WHERE}),
                                        (((2, 3, 4),), {"where": _WHERE, "keepdims": True}),
                                        (((2, 3, 4),), {"axis": ()}))),
    reduction("np.max", np.max, ALL, _MASKED_EXTREME, empty=False),
    reduction("np.min", np.min, ALL, _MASKED_EXTREME, empty=False),
    reduction("np.amax", np.amax, ALL, empty=False),
    reduction("np.amin", np.amin, ALL, empty=False),
    reduction("np.argmax", np.argmax, ALL, empty=False, cases=_ARG_CASES,
              domains=(_domain(-2, 2, int_lo=-2, int_hi=2, quarters=True),)),  # ties: first wins
    reduction("np.argmin", np.argmin, ALL, empty=False, cases=_ARG_CASES,
              domains=(_domain(-2, 2, int_lo=-2, int_hi=2, quarters=True),)),
    reduction("np.all", np.all, ALL, _MASKED[1:2], domains=(_domain(-1, 1, int_lo=0, int_hi=3),)),
    reduction("np.any", np.any, ALL, _MASKED[1:2], domains=(_domain(-1, 1, int_lo=-1, int_hi=0),)),
    reduction("np.var", np.var, ALL, _DDOF, empty=False, tol=10),
    reduction("np.std", np.std, ALL, _DDOF, empty=False, tol=10),
]


# -- dot, matmul, einsum -----------------------------------------------------------------------

_PRODUCT_SHAPES = (
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (2, 4, 5)),
)
_SMALL_INTS = _domain(-2, 2, int_lo=-3, int_hi=3)


def _einsum(*operands, subscripts):
    return np.einsum(subscripts, *operands)


PRODUCTS = [
    OpRecord("np.dot", np.dot, 2, (_SMALL_INTS,), ALL, _PRODUCT_SHAPES + (
        ((2, 3), (2, 3, 4)), ((), (3,)), ((2, 3), ()), ((2, 3, 4), (5, 4, 2))), group="dot",
        tol=5),
    OpRecord("np.matmul", np.matmul, 2, (_SMALL_INTS,), ALL, _PRODUCT_SHAPES + (
        ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((0, 3), (3, 2)),
        ((2, 0), (0, 3))), group="dot", tol=5),
    OpRecord("x @ y", operator.matmul, 2, (_SMALL_INTS,), ALL, _PRODUCT_SHAPES + (
        ((1, 3, 4), (2, 4, 2)),), group="dot", tol=5),
    OpRecord("np.einsum", _einsum, None, (_SMALL_INTS,), ALL, cases=(
        (((2, 3), (3, 4)), {"subscripts": "ij,jk->ik"}),
        (((2, 2, 3), (2, 3, 4)), {"subscripts": "bij,bjk->bik"}),
        (((5,), (5,)), {"subscripts": "i,i->"}),
        (((2, 3),), {"subscripts": "ij->ji"}),
        (((2, 3),), {"subscripts": "ij->i"}),
        (((2, 3), (3, 4)), {"subscripts": "ij,jk"}),
        (((2, 3), (4, 3)), {"subscripts": "ij,kj->ki"}),
        (((2, 3), (3,)), {"subscripts": "ij,j->i"}),
        (((2, 3), (2, 3)), {"subscripts": "ij,ij->ij"}),
        (((3,), (4,)), {"subscripts": "i,j->ij"}),
        (((2, 3), (3, 4)), {"subscripts": "ij,jk->"}),
        (((2, 3, 4),), {"subscripts": "abc->cb"}),
    ), group="dot", tol=5),
]


# -- data movement -----------------------------------------------------------------------------


def _variadic(fn):
    def call(*arrays, **kw):
        return fn(arrays, **kw)
    call.__name__ = fn.__name__
    return call


def _index(x, index):
    return x[index]


def _astype(x, dtype):
    return x.astype(dtype)


_IDX = np.s_
_INDEX_CASES = tuple((((2, 3, 4),), {"index": i}) for i in (
    _IDX[1], _IDX[-1], _IDX[1:3], _IDX[::2], _IDX[::-1], _IDX[:, ::-2], _IDX[1, ::-2, 1:],
    _IDX[None, ..., 0], _IDX[..., -2:], _IDX[:, None, 1:], _IDX[0, 1, 2], _IDX[-1, -3:-1],
    _IDX[5:1:-1], _IDX[:, 2:0:-1, ::3], _IDX[..., None], _IDX[1:1], _IDX[0, ..., 1::2],
    _IDX[:, -1, None],
)) + tuple((((7,),), {"index": i}) for i in (
    _IDX[2:6:3], _IDX[-2::-3], _IDX[100:], _IDX[-100:2], _IDX[::-1], _IDX[3],
)) + ((((),), {"index": _IDX[...]}), (((),), {"index": _IDX[None]}))

DATA_MOVEMENT = [
    OpRecord("np.reshape", np.reshape, 1, (ANY,), ALL, cases=(
        (((2, 3, 4),), {"shape": (6, 4)}), (((2, 3, 4),), {"shape": (-1,)}),
        (((2, 3, 4),), {"shape": (4, -1, 2)}), (((),), {"shape": (1, 1)}),
        (((0, 3),), {"shape": (3, 0)}), (((6,),), {"shape": (2, 3)}),
        (((1, 1),), {"shape": ()}),
    ), group="data-movement"),
    OpRecord("np.ravel", np.ravel, 1, (ANY,), ALL, (((2, 3, 4),), ((),), ((3, 1),), ((0, 2),)),
             group="data-movement"),
    OpRecord("np.transpose", np.transpose, 1, (ANY,), ALL, cases=(
        (((2, 3, 4),), {}), (((2, 3, 4),), {"axes": (1, 0, 2)}),
        (((2, 3, 4),), {"axes": (-1, 0, 1)}), (((),), {}), (((3,),), {}), (((0, 2),), {}),
    ), group="data-movement"),
    OpRecord("np.swapaxes", np.swapaxes, 1, (ANY,), ALL, cases=(
        (((2, 3, 4),), {"axis1": 0, "axis2": 2}), (((2, 3, 4),), {"axis1": -1, "axis2": -2}),
        (((2, 3),), {"axis1": 1, "axis2": 1}),
    ), group="data-movement"),
    OpRecord("np.moveaxis", np.moveaxis, 1, (ANY,), ALL, cases=(
        (((2, 3, 4),), {"source": 0, "destination": -1}),
        (((2, 3, 4),), {"source": (0, 1), "destination": (2, 0)}),
        (((2, 3, 4, 5),), {"source": -1, "destination": 1}),
    ), group="data-movement"),
    OpRecord("np.squeeze", np.squeeze, 1, (ANY,), ALL, cases=(
        (((1, 3, 1),), {}), (((1, 3, 1),), {"axis": 0}), (((1, 3, 1),), {"axis": (0, 2)}),
        (((1, 3, 1),), {"axis": -1}), (((1,),), {}), (((),), {}),
    ), group="data-movement"),
    OpRecord("np.expand_dims", np.expand_dims, 1, (ANY,), ALL, cases=(
        (((2, 3),), {"axis": 0}), (((2, 3),), {"axis": -1}), (((2, 3),), {"axis": (0, 2)}),
        (((),), {"axis": 0}),
    ), group="data-movement"),
    OpRecord("np.broadcast_to", np.broadcast_to, 1, (ANY,), ALL, cases=(
        (((3, 1),), {"shape": (2, 3, 4)}), (((),), {"shape": (2, 2)}),
        (((4,),), {"shape": (3, 4)}), (((1,),), {"shape": (0,)}),
    ), group="data-movement"),
    OpRecord("np.concatenate", _variadic(np.concatenate), None, (ANY,), ALL, cases=(
        (((2, 3), (4, 3)), {}), (((2, 3), (2, 1)), {"axis": 1}),
        (((2, 3), (3,)), {"axis": None}), (((2, 3), (2, 3), (2, 3)), {"axis": -1}),
        (((2, 3),), {"axis": 0}), (((0, 3), (2, 3)), {}),
    ), group="data-movement"),
    OpRecord("np.stack", _variadic(np.stack), None, (ANY,), ALL, cases=(
        (((2, 3), (2, 3)), {}), (((2, 3), (2, 3)), {"axis": 1}),
        (((2, 3), (2, 3), (2, 3)), {"axis": -1}), (((), ()), {}),
    ), group="data-movement"),
    OpRecord("np.hstack", _variadic(np.hstack), None, (ANY,), ALL, cases=(
        (((2, 3), (2, 1)), {}), (((3,), (2,)), {}), (((), ()), {}),
        (((2, 3, 1), (2, 1, 1)), {}),
    ), group="data-movement"),
    OpRecord("np.vstack", _variadic(np.vstack), None, (ANY,), ALL, cases=(
        (((2, 3), (1, 3)), {}), (((3,), (3,)), {}), (((3,), (2, 3)), {}), (((), ()), {}),
        (((2, 3, 1), (1, 3, 1)), {}),
    ), group="data-movement"),
    OpRecord("np.flip", np.flip, 1, (ANY,), ALL, cases=(
        (((2, 3, 4),), {}), (((2, 3, 4),), {"axis": 0}), (((2, 3, 4),), {"axis": -1}),
        (((2, 3, 4),), {"axis": (0, 2)}), (((),), {}),
    ), group="data-movement"),
    OpRecord("np.pad", np.pad, 1, (ANY,), ALL, cases=(
        (((2, 3),), {"pad_width": 1}), (((2, 3),), {"pad_width": ((0, 1), (2, 0))}),
        (((4,),), {"pad_width": (1, 2), "constant_values": 7}), (((),), {"pad_width": 1}),
    ), group="data-movement"),
    OpRecord("np.copy", np.copy, 1, (ANY,), ALL, UNARY_SHAPES, group="data-movement"),
    OpRecord("x[index]", _index, 1, (ANY,), ALL, cases=_INDEX_CASES, group="data-movement"),
    OpRecord("x.astype", _astype, 1, (QUARTERS,), ALL, UNARY_SHAPES,
             tuple({"dtype": d} for d in _SIGNED_ALL), group="data-movement"),
    OpRecord("np.astype", lambda x, dtype: np.astype(x, dtype), 1, (QUARTERS,), ALL, (((2, 3),),),
             tuple({"dtype": d} for d in _SIGNED_ALL), group="data-movement"),
    # A negative float converted to an unsigned type is undefined in C, so in NumPy: the
    # records to unsigned types convert non-negative floats (and integers of either sign).
    OpRecord("x.astype unsigned", _astype, 1, (_CASTS_UNSIGNED,), ALL, UNARY_SHAPES,
             tuple({"dtype": d} for d in UNSIGNED), group="data-movement"),
]


# -- creation inside traced code ---------------------------------------------------------------
# `dtype` in a variant that is the DTYPE marker is replaced by the case's type.

DTYPE = "<the case's dtype>"


def _creation(name, fn, arity, cases, dtypes=ALL, values=True):
    return OpRecord(name, fn, arity, (ANY,), dtypes, cases=cases, group="creation",
                    values=values)


def _zeros(shape, dtype):
    return np.zeros(shape, dtype)


def _ones(shape, dtype):
    return np.ones(shape, dtype=dtype)


def _full(shape, fill, dtype):
    return np.full(shape, fill, dtype)


def _empty(shape, dtype):
    return np.empty(shape, dtype)


def _arange(*args, **kw):
    return np.arange(*kw.pop("args"), **kw)


def _linspace(**kw):
    return np.linspace(**kw)


def _eye(**kw):
    return np.eye(**kw)


_SHAPES = ((2, 3), (), (0,), 4, (1, 2, 1))
CREATION = [
    _creation("np.zeros", _zeros, 0, tuple(((), {"shape": s, "dtype": DTYPE}) for s in _SHAPES)),
    _creation("np.ones", _ones, 0, tuple(((), {"shape": s, "dtype": DTYPE}) for s in _SHAPES)),
    _creation("np.full", _full, 0, tuple(((), {"shape": s, "fill": 1, "dtype": DTYPE})
                                         for s in _SHAPES) + (
        ((), {"shape": (2, 3), "fill": np.nan, "dtype": np.float32}),
        ((), {"shape": 3, "fill": -0.0, "dtype": np.float64}),
        ((), {"shape": (2, 2), "fill": -7, "dtype": np.int32}))),
    _creation("np.empty", _empty, 0, tuple(((), {"shape": s, "dtype": DTYPE}) for s in _SHAPES),
              values=False),
    _creation("np.zeros_like", np.zeros_like, 1, tuple(
        ((s,), kw) for s in ((2, 3), (), (0,)) for kw in ({}, {"dtype": np.float32}))),
    _creation("np.ones_like", np.ones_like, 1, tuple(
        ((s,), kw) for s in ((2, 3), (), (0,)) for kw in ({}, {"dtype": np.int32}))),
    _creation("np.full_like", np.full_like, 1, tuple(
        ((s,), kw) for s in ((2, 3), (), (0,)) for kw in (
            {"fill_value": 1}, {"fill_value": 2.5, "dtype": np.float64},
            {"fill_value": True, "dtype": np.bool_})) + ((((2, 3),), {"fill_value": np.nan,
                                                          "dtype": np.float32}),)),
    _creation("np.empty_like", np.empty_like, 1, tuple(
        ((s,), kw) for s in ((2, 3), (), (0,)) for kw in ({}, {"dtype": np.int64})),
              values=False),
    _creation("np.arange", _arange, 0, (
        ((), {"args": (5,)}), ((), {"args": (2, 11, 3)}), ((), {"args": (0.5, 3.0, 0.5)}),
        ((), {"args": (5,), "dtype": np.float32}), ((), {"args": (10, 0, -2)}),
        ((), {"args": (0,)}), ((), {"args": (1,)}), ((), {"args": (-1.0, 1.0, 0.1)}),
        ((), {"args": (3,), "dtype": np.int32}), ((), {"args": (0, 1, 0.25), "dtype": np.float32}),
        ((), {"args": (2, 5)}),
    ), dtypes=(F64,)),
    _creation("np.linspace", _linspace, 0, (
        ((), {"start": 0, "stop": 1, "num": 5}),
        ((), {"start": -1, "stop": 2, "num": 7, "endpoint": False}),
        ((), {"start": 0, "stop": 10, "num": 4, "dtype": np.int32}),
        ((), {"start": 2, "stop": 3, "num": 1}),
        ((), {"start": 0, "stop": 1, "num": 0}),
        ((), {"start": 1, "stop": -1, "num": 9, "dtype": np.float32}),
        ((), {"start": -5, "stop": 5, "num": 6, "dtype": np.int64}),
    ), dtypes=(F64,)),
    _creation("np.eye", _eye, 0, (
        ((), {"N": 3}), ((), {"N": 3, "M": 4, "k": 1}), ((), {"N": 4, "k": -2, "dtype": np.int32}),
        ((), {"N": 2, "dtype": np.bool_}), ((), {"N": 1}), ((), {"N": 3, "k": 5}),
        ((), {"N": 3, "dtype": DTYPE}),
    )),
    _creation("np.identity", lambda n, dtype: np.identity(n, dtype), 0, (
        ((), {"n": 3, "dtype": DTYPE}), ((), {"n": 1, "dtype": DTYPE}),
        ((), {"n": 0, "dtype": DTYPE}))),
]


# -- not compilable: value-dependent output shapes ---------------------------------------------


def _mask(x):
    return x[x > 0]


def _where1(x):
    return np.where(x)


NOT_COMPILABLE = [
    OpRecord("np.unique", np.unique, 1, (_domain(-2, 2, int_lo=-2, int_hi=2, quarters=True),),
             ALL, UNARY_SHAPES, group="not-compilable"),
    OpRecord("np.nonzero", np.nonzero, 1, (_domain(-1, 1, int_lo=-1, int_hi=1, quarters=True),),
             ALL, UNARY_SHAPES[1:] + (((3, 4),),), group="not-compilable"),
    OpRecord("np.where(cond)", _where1, 1, (_domain(-1, 1, int_lo=-1, int_hi=1, quarters=True),),
             ALL, (((3, 4),),), group="not-compilable"),
    OpRecord("np.argwhere", np.argwhere, 1, (_domain(-1, 1, int_lo=-1, int_hi=1, quarters=True),),
             ALL, UNARY_SHAPES + (((3, 4),),), group="not-compilable"),
    OpRecord("x[x > 0]", _mask, 1, (ANY,), NUMERIC, UNARY_SHAPES + (((3, 4),),),
             group="not-compilable"),
]


# -- Python operators --------------------------------------------------------------------------


def _op_record(name, fn, dtypes, domains=(ANY,), arity=2):
    return OpRecord(name, fn, arity, tuple(domains), tuple(dtypes),
                    UNARY_SHAPES if arity == 1 else BINARY_SHAPES, group="operator")


OPERATORS = [
    _op_record("x + y", operator.add, ALL),
    _op_record("x - y", operator.sub, NUMERIC),
    _op_record("x * y", operator.mul, ALL),
    _op_record("x / y", operator.truediv, ALL, (ANY, NONZERO)),
    _op_record("x // y", operator.floordiv, ALL, (QUARTERS, NONZERO)),
    _op_record("x % y", operator.mod, ALL, (QUARTERS, NONZERO)),
    _op_record("x ** y", operator.pow, ALL, (BASE, EXPONENT)),
    _op_record("divmod(x, y)", divmod, ALL, (QUARTERS, NONZERO)),
    _op_record("x & y", operator.and_, INTEGRAL),
    _op_record("x | y", operator.or_, INTEGRAL),
    _op_record("x ^ y", operator.xor, INTEGRAL),
    _op_record("x << y", operator.lshift, INTEGRAL, (ANY, shift_amount)),
    _op_record("x >> y", operator.rshift, INTEGRAL, (ANY, shift_amount)),
    _op_record("x < y", operator.lt, ALL),
    _op_record("x <= y", operator.le, ALL),
    _op_record("x > y", operator.gt, ALL),
    _op_record("x >= y", operator.ge, ALL),
    _op_record("x == y", operator.eq, ALL),
    _op_record("x != y", operator.ne, ALL),
    _op_record("-x", operator.neg, NUMERIC, arity=1),
    _op_record("+x", operator.pos, NUMERIC, arity=1),
    _op_record("~x", operator.invert, INTEGRAL, arity=1),
    _op_record("abs(x)", abs, ALL, arity=1),
]

# In-place operators on an input: the caller's array changes, as in NumPy. fn(x, y) returns x.


def _inplace(sym):
    op = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
          "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow,
          "&": operator.iand, "|": operator.ior, "^": operator.ixor, "<<": operator.ilshift,
          ">>": operator.irshift, "@": operator.imatmul}[sym]

    def fn(x, y):
        x = op(x, y)
        return x
    fn.__name__ = f"i{op.__name__}"
    return fn


_INPLACE_SHAPES = (((3, 4), (3, 4)), ((3, 4), (1, 4)), ((2, 3), ()), ((), ()))
INPLACE = [
    OpRecord(f"x {sym}= y", _inplace(sym), 2, tuple(doms), tuple(dts), _INPLACE_SHAPES,
             group="in-place")
    for sym, dts, doms in (
        ("+", ALL, (ANY,)), ("-", NUMERIC, (ANY,)), ("*", ALL, (ANY,)),
        ("/", FLOATS, (ANY, NONZERO)), ("//", NUMERIC, (QUARTERS, NONZERO)),
        ("%", NUMERIC, (QUARTERS, NONZERO)), ("**", NUMERIC, (BASE, EXPONENT)),
        ("&", INTEGRAL, (ANY,)), ("|", INTEGRAL, (ANY,)), ("^", INTEGRAL, (ANY,)),
        ("<<", INTS, (ANY, shift_amount)), (">>", INTS, (ANY, shift_amount)),
    )
] + [OpRecord("x @= y", _inplace("@"), 2, (_SMALL_INTS,), ALL, (((3, 3), (3, 3)),),
              group="in-place")]


# -- __setitem__ -------------------------------------------------------------------------------


def _setitem(x, index, value):
    x[index] = value
    return x


def _setitem_array(x, y, index):
    x[index] = y
    return x


def _setitem_mask(x, value):
    x[x > 0] = value
    return x


SETITEM = [
    OpRecord("x[index] = scalar", _setitem, 1, (ANY,), ALL, cases=tuple(
        (((4, 5),), {"index": i, "value": 1}) for i in (
            _IDX[1], _IDX[-1], _IDX[1:3], _IDX[::2], _IDX[::-1], _IDX[:, ::-2], _IDX[1, 2],
            _IDX[-1, -1], _IDX[1:4:2, 3:0:-2], _IDX[..., 1], _IDX[None, 0], _IDX[...],
            _IDX[3:1], _IDX[:, 1::3],
        )) + ((((),), {"index": _IDX[...], "value": 0}),), group="setitem"),
    OpRecord("x[index] = y", _setitem_array, 2, (ANY,), ALL, cases=(
        (((4, 5), (2, 5)), {"index": _IDX[1:3]}),
        (((4, 5), (5,)), {"index": _IDX[1:3]}),
        (((4, 5), (2, 3)), {"index": _IDX[::2, 4:1:-1]}),
        (((4, 5), (4,)), {"index": _IDX[::-1, 2]}),
        (((4, 5), ()), {"index": _IDX[2, 3]}),
        (((4, 5), (2, 1)), {"index": _IDX[-2:, ::2]}),
        (((6,), (3,)), {"index": _IDX[5::-2]}),
    ), group="setitem"),
    OpRecord("x[x > 0] = scalar", _setitem_mask, 1, (ANY,), NUMERIC, cases=(
        (((3, 4),), {"value": 0}), (((5,),), {"value": 2}), (((),), {"value": 7}),
    ), group="setitem"),
]


# -- methods and attributes of ndarray ---------------------------------------------------------


def _method(name, call, dtypes, cases, domains=(ANY,), arity=1, tol=1.0):
    return OpRecord(name, call, arity, tuple(domains), tuple(dtypes), cases=tuple(cases),
                    group="method", tol=tol)


_X234 = ((2, 3, 4),)


def _c(*variants, shapes=_X234):
    return tuple((shapes, v) for v in variants)


METHODS = [
    _method(".T", lambda x: x.T, ALL, _c({}) + _c({}, shapes=((),)) + _c({}, shapes=((3,),))),
    _method(".shape .ndim .size", lambda x: np.zeros(x.shape, np.int64) + x.ndim * 10 + x.size,
            ALL, _c({}) + _c({}, shapes=((),))),
    _method(".dtype", lambda x: np.ones(x.shape, x.dtype) + x, ALL, _c({})),
    _method(".reshape", lambda x, shape: x.reshape(shape), ALL,
            _c({"shape": (6, 4)}, {"shape": (-1,)}, {"shape": (4, 3, 2)})),
    _method(".reshape(*dims)", lambda x: x.reshape(4, -1), ALL, _c({})),
    _method(".transpose", lambda x, *axes: x.transpose(*axes), ALL, _c({})),
    _method(".transpose(axes)", lambda x: x.transpose(2, 0, 1), ALL, _c({})),
    _method(".transpose((axes))", lambda x: x.transpose((1, 2, 0)), ALL, _c({})),
    _method(".astype", lambda x, dtype: x.astype(dtype), ALL,
            _c(*({"dtype": d} for d in _SIGNED_ALL))),
    _method(".astype unsigned", lambda x, dtype: x.astype(dtype), ALL,
            _c(*({"dtype": d} for d in UNSIGNED)), domains=(_CASTS_UNSIGNED,)),
    _method(".sum", lambda x, **kw: x.sum(**kw), ALL,
            _c({}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"dtype": np.float64})),
    _method(".mean", lambda x, **kw: x.mean(**kw), ALL,
            _c({}, {"axis": -1}, {"axis": 0, "keepdims": True}, {"dtype": np.float32})),
    _method(".max", lambda x, **kw: x.max(**kw), ALL, _c({}, {"axis": 1}, {"keepdims": True})),
    _method(".min", lambda x, **kw: x.min(**kw), ALL, _c({}, {"axis": -2}, {"axis": (0, 1)})),
    _method(".prod", lambda x, **kw: x.prod(**kw), ALL, _c({"axis": 0}, {"axis": 2, "dtype": np.float64}),
            domains=(_domain(-2, 2),)),
    _method(".var", lambda x, **kw: x.var(**kw), ALL, _c({}, {"axis": 1, "ddof": 1}), tol=10),
    _method(".std", lambda x, **kw: x.std(**kw), ALL, _c({}, {"axis": (0, 2), "keepdims": True}),
            tol=10),
    _method(".argmax", lambda x, **kw: x.argmax(**kw), ALL, _c({}, {"axis": 1}),
            domains=(_domain(-2, 2, int_lo=-2, int_hi=2, quarters=True),)),
    _method(".argmin", lambda x, **kw: x.argmin(**kw), ALL, _c({}, {"axis": -1, "keepdims": True}),
            domains=(_domain(-2, 2, int_lo=-2, int_hi=2, quarters=True),)),
    _method(".all", lambda x, **kw: x.all(**kw), ALL, _c({}, {"axis": 0}),
            domains=(_domain(-1, 1, int_lo=0, int_hi=3),)),
    _method(".any", lambda x, **kw: x.any(**kw), ALL, _c({}, {"axis": (1, 2), "keepdims": True}),
            domains=(_domain(-1, 1, int_lo=-1, int_hi=0),)),
    _method(".ravel", lambda x: x.ravel(), ALL, _c({}) + _c({}, shapes=((),))),
    _method(".squeeze", lambda x, **kw: x.squeeze(**kw), ALL,
            _c({}, {"axis": 0}, shapes=((1, 3, 1),))),
    _method(".clip", lambda x, **kw: x.clip(**kw), NUMERIC,
            _c({"min": -1, "max": 1}, {"min": 0}, {"max": 0.5})),
    _method(".dot", lambda x, y: x.dot(y), ALL, _c({}, shapes=((3, 4), (4,))) +
            _c({}, shapes=((3, 4), (4, 2))), domains=(_SMALL_INTS,), arity=2, tol=5),
    _method(".copy", lambda x: x.copy(), ALL, _c({}) + _c({}, shapes=((),))),
    _method(".trace", lambda x, **kw: x.trace(**kw), ALL,
            _c({}, {"offset": 1}, shapes=((3, 4),)) + _c({"offset": -1}, shapes=((4, 3),)),
            domains=(_SMALL_INTS,), tol=5),
]


# -- shape and linear-algebra functions composed of existing ops at trace time -----------------


def _meshgrid(*xs, **kw):
    return np.meshgrid(*xs, **kw)


def _dm(name, fn, arity, cases, dtypes=ALL, domains=(ANY,), group="data-movement", tol=1.0):
    return OpRecord(name, fn, arity, domains, dtypes, cases=cases, group=group, tol=tol)


COMPOSED_SHAPES = [
    _dm("np.outer", np.outer, 2, (
        (((3,), (4,)), {}), (((2, 3), (2,)), {}), (((), (3,)), {}), (((0,), (3,)), {}),
        (((1,), (1,)), {})), domains=(_SMALL_INTS,), group="dot"),
    _dm("np.tril", np.tril, 1, (
        (((3, 4),), {}), (((3, 4),), {"k": 1}), (((4, 3),), {"k": -2}), (((2, 3, 3),), {}),
        (((4,),), {}), (((0, 3),), {}), (((1, 1),), {"k": -1}))),
    _dm("np.triu", np.triu, 1, (
        (((3, 4),), {}), (((3, 4),), {"k": 2}), (((4, 3),), {"k": -1}), (((2, 3, 3),), {}),
        (((4,),), {"k": 1}), (((3, 0),), {}), (((1, 1),), {}))),
    _dm("np.diag", np.diag, 1, (
        (((3,),), {}), (((3,),), {"k": 2}), (((3,),), {"k": -1}), (((0,),), {}),
        (((1,),), {"k": 1}), (((3, 4),), {}), (((3, 4),), {"k": 1}), (((3, 4),), {"k": -2}),
        (((4, 3),), {"k": 5}), (((0, 2),), {}), (((1, 1),), {}))),
    _dm("np.trace", np.trace, 1, (
        (((3, 4),), {}), (((3, 4),), {"offset": 1}), (((4, 3),), {"offset": -2}),
        (((3, 3),), {"offset": 9}), (((0, 0),), {}), (((1, 1),), {})),
        group="reduction", tol=5),
    _dm("np.fliplr", np.fliplr, 1, (
        (((3, 4),), {}), (((2, 3, 4),), {}), (((0, 2),), {}), (((2, 1),), {}))),
    _dm("np.flipud", np.flipud, 1, (
        (((3, 4),), {}), (((5,),), {}), (((0, 2),), {}), (((1, 3),), {}))),
    _dm("np.rot90", np.rot90, 1, (
        (((3, 4),), {}), (((3, 4),), {"k": 2}), (((3, 4),), {"k": 3}), (((3, 4),), {"k": -1}),
        (((3, 4),), {"k": 4}), (((2, 3, 4),), {"axes": (1, 2)}),
        (((2, 3, 4),), {"k": 1, "axes": (2, 0)}), (((0, 2),), {}), (((1, 1),), {}))),
    _dm("np.atleast_1d", np.atleast_1d, 1, (
        (((),), {}), (((3,),), {}), (((2, 3),), {}), (((0,),), {}))),
    _dm("np.atleast_2d", np.atleast_2d, 1, (
        (((),), {}), (((3,),), {}), (((2, 3),), {}), (((0,),), {}), (((1, 2, 3),), {}))),
    _dm("np.atleast_3d", np.atleast_3d, 1, (
        (((),), {}), (((3,),), {}), (((2, 3),), {}), (((0,),), {}), (((1, 2, 3),), {}))),
    _dm("np.column_stack", _variadic(np.column_stack), None, (
        (((3,), (3,)), {}), (((3,), (3, 2)), {}), (((2, 2), (2, 1), (2,)), {}),
        (((), ()), {}), (((0,), (0, 2)), {}))),
    _dm("np.dstack", _variadic(np.dstack), None, (
        (((3,), (3,)), {}), (((2, 3), (2, 3)), {}), (((2, 3, 1), (2, 3, 2)), {}),
        (((), ()), {}), (((0, 2), (0, 2)), {}))),
    _dm("np.diff", np.diff, 1, (
        (((5,),), {}), (((3, 4),), {}), (((3, 4),), {"axis": 0}), (((3, 4),), {"n": 2}),
        (((3, 4),), {"n": 0}), (((3, 4),), {"n": 5}), (((2, 3, 4),), {"axis": -2}),
        (((0,),), {}), (((1,),), {}), (((4,),), {"prepend": 0}),
        (((3, 4),), {"append": 1, "axis": 0}), (((3, 4),), {"prepend": 0, "append": 2, "n": 2}))),
    _dm("np.tile", np.tile, 1, (
        (((3,),), {"reps": 2}), (((2, 3),), {"reps": (2, 1)}), (((2, 3),), {"reps": (2, 1, 3)}),
        (((2, 3, 1),), {"reps": 2}), (((),), {"reps": 3}), (((0, 2),), {"reps": 2}),
        (((2,),), {"reps": 0}), (((1, 1),), {"reps": (1, 1)}))),
    _dm("np.repeat", np.repeat, 1, (
        (((3,),), {"repeats": 2}), (((2, 3),), {"repeats": 2}),
        (((2, 3),), {"repeats": 3, "axis": 1}), (((2, 3),), {"repeats": 2, "axis": -2}),
        (((),), {"repeats": 4}), (((0, 2),), {"repeats": 2, "axis": 0}),
        (((2, 3),), {"repeats": 0, "axis": 0}), (((1,),), {"repeats": 1}))),
    _dm("np.roll", np.roll, 1, (
        (((5,),), {"shift": 2}), (((5,),), {"shift": -7}), (((2, 3),), {"shift": 4}),
        (((2, 3),), {"shift": 1, "axis": 1}), (((2, 3, 4),), {"shift": (1, -1), "axis": (0, 2)}),
        (((2, 3),), {"shift": (1, 1), "axis": (1, 1)}), (((0, 3),), {"shift": 1, "axis": 0}),
        (((1,),), {"shift": 3}))),
    _dm("np.meshgrid", _meshgrid, None, (
        (((3,), (4,)), {}), (((3,), (4,)), {"indexing": "ij"}), (((3,), (4,), (2,)), {}),
        (((3,), (4,), (2,)), {"indexing": "ij"}), (((3,),), {}), (((0,), (2,)), {}),
        (((3,), (4,)), {"sparse": True}), (((3,), (1,)), {"indexing": "ij", "sparse": True}))),
    _dm("np.kron", np.kron, 2, (
        (((3,), (2,)), {}), (((2, 3), (2, 2)), {}), (((2, 3), (3,)), {}), (((), (3,)), {}),
        (((0, 2), (2, 1)), {}), (((1, 1), (2, 3, 1)), {})), domains=(_SMALL_INTS,),
        group="dot"),
    _dm("np.vdot", np.vdot, 2, (
        (((4,), (4,)), {}), (((2, 3), (3, 2)), {}), (((0,), (0,)), {}), (((1,), (1,)), {})),
        domains=(_SMALL_INTS,), group="dot", tol=5),
    _dm("np.inner", np.inner, 2, (
        (((4,), (4,)), {}), (((2, 3), (3,)), {}), (((2, 3), (4, 3)), {}),
        (((2, 2, 3), (4, 3)), {}), (((), (3,)), {}), (((2, 0), (3, 0)), {}),
        (((1, 1), (1,)), {})), domains=(_SMALL_INTS,), group="dot", tol=5),
    _dm("np.cross", np.cross, 2, (
        (((3,), (3,)), {}), (((4, 3), (3,)), {}), (((2, 1, 3), (4, 3)), {}),
        (((2,), (2,)), {}), (((4, 2), (4, 2)), {}), (((0, 3), (3,)), {})),
        dtypes=NUMERIC, domains=(_SMALL_INTS,), group="dot"),
    _dm("np.tensordot", np.tensordot, 2, (
        (((2, 3, 4), (3, 4, 5)), {}), (((2, 3), (3, 4)), {"axes": 1}),
        (((2, 3), (4, 5)), {"axes": 0}), (((2, 3, 4), (4, 3)), {"axes": ([1, 2], [1, 0])}),
        (((2, 3), (2, 4)), {"axes": (0, 0)}), (((0, 3), (3, 2)), {"axes": 1}),
        (((1, 1), (1, 1)), {})), domains=(_SMALL_INTS,), group="dot", tol=5),
    _dm("np.norm", np.linalg.norm, 1, (
        (((4,),), {}), (((2, 3, 4),), {}), (((4,),), {"ord": 1}), (((4,),), {"ord": np.inf}),
        (((4,),), {"ord": -np.inf}), (((3, 4),), {}), (((3, 4),), {"ord": "fro"}),
        (((3, 4),), {"axis": 1}), (((3, 4),), {"axis": 0, "ord": 1, "keepdims": True}),
        (((2, 3, 4),), {"axis": (0, 2)}), (((2, 3, 4),), {"axis": -1, "ord": np.inf}),
        (((2, 3, 4),), {"axis": (1, 2), "keepdims": True}), (((0,),), {}), (((),), {}),
        (((1, 1),), {"ord": 2, "axis": 0})), group="reduction", tol=5),
]


# -- compositions of existing ops (elementwise.py, reductions.py): hypot ... average ------------


def _with_nonfinite(base):
    """base's values, with NaN, inf and -inf in about a quarter of a float array's elements."""
    def gen(rng, shape, dtype):
        v = base(rng, shape, dtype)
        if np.dtype(dtype).kind != "f":
            return v
        pick = rng.random(shape)
        special = np.select([pick < 0.15, pick < 0.2, pick < 0.25], [np.nan, np.inf, -np.inf],
                            0.0)
        return np.where(pick < 0.25, special, v).astype(dtype)
    return gen


_NONFINITE = _with_nonfinite(QUARTERS)
_WEIGHTS = _domain(0.1, 5, int_lo=1, int_hi=9, exclude_zero=True)  # never summing to zero
_NAN_CASES = (
    (((2, 3, 4),), {"axis": 1, "keepdims": True}),
    (((2, 3, 4),), {"axis": (0, 2)}),
)
COMPOSED_ELEMENTWISE = [
    U(np.hypot, NUMERIC),
    U(np.logaddexp, NUMERIC),
    U(np.copysign, NUMERIC, (ANY, QUARTERS)),
    U(np.fabs, NUMERIC),
    U(np.signbit, NUMERIC, (QUARTERS,)),
    U(np.heaviside, NUMERIC, (QUARTERS, ANY)),
    U(np.deg2rad, NUMERIC),
    U(np.rad2deg, NUMERIC),
    U(np.radians, NUMERIC),
    U(np.degrees, NUMERIC),
    U(np.float_power, ALL, (BASE, EXPONENT)),
    U(np.fmod, NUMERIC, (QUARTERS, NONZERO)),
    OpRecord("np.sinc", np.sinc, 1, (QUARTERS,), ALL, UNARY_SHAPES),
    OpRecord("np.nan_to_num", np.nan_to_num, 1, (_NONFINITE,), ALL, UNARY_SHAPES,
             ({}, {"nan": 5.0, "posinf": 1e3, "neginf": -1e3}, {"posinf": 1e300})),
    OpRecord("np.isclose", np.isclose, 2, (_NONFINITE, QUARTERS), ALL, BINARY_SHAPES,
             ({}, {"rtol": 0.1, "atol": 0.3, "equal_nan": True})),
    OpRecord("np.select", lambda c1, c2, x, y, **kw: np.select([c1, c2], [x, y], **kw), 4,
             (boolean, boolean, ANY), ALL,
             (((3, 4), (3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (), (1, 4)),
              ((), (), (2, 3), ())),
             ({}, {"default": 7}, {"default": 2.5})),
    reduction("np.nansum", np.nansum, ALL, _DT[:2] + _NAN_CASES, domains=(_NONFINITE,)),
    reduction("np.nanmax", np.nanmax, ALL, _NAN_CASES, empty=False, domains=(_NONFINITE,)),
    reduction("np.nanmin", np.nanmin, ALL, _NAN_CASES, empty=False, domains=(_NONFINITE,)),
    reduction("np.nanmean", np.nanmean, ALL, _DT[:2] + _NAN_CASES, domains=(_NONFINITE,)),
    reduction("np.count_nonzero", np.count_nonzero, ALL, domains=(QUARTERS,)),
    reduction("np.ptp", np.ptp, NUMERIC, empty=False),
    reduction("np.average", np.average, ALL,  # (NumPy divides by an empty result's size)
              ((((2, 3, 4),), {"axis": 1, "returned": True}),), empty=False,
              cases=tuple(c for c in _REDUCE_CASES if c[0] != ((0, 3),))),
    OpRecord("np.average weights", lambda a, w, **kw: np.average(a, weights=w, **kw), 2,
             (ANY, _WEIGHTS), ALL, group="reduction", cases=(
                 (((3, 4), (3, 4)), {}),
                 (((3, 4), (4,)), {"axis": 1}),
                 (((2, 3, 4), (3,)), {"axis": 1, "keepdims": True}),
                 (((2, 3, 4), (2, 3, 4)), {"axis": (0, 2), "returned": True}),
                 (((3, 4), (3,)), {"axis": 0, "returned": True}),
             )),
]


# -- more compositions at trace time: pad modes, convolve, split, ufunc.outer ... ---


def _pad_cases():
    cases = []
    for mode in ("edge", "reflect", "symmetric", "wrap"):
        cases += [(((2, 3),), {"pad_width": 1, "mode": mode}),
                  (((5,),), {"pad_width": (2, 7), "mode": mode}),
                  (((3, 4),), {"pad_width": ((0, 5), (3, 1)), "mode": mode}),
                  (((2, 3, 2),), {"pad_width": ((1,), (2,), (0,)), "mode": mode}),
                  (((1, 2),), {"pad_width": (3,), "mode": mode}),
                  (((0, 2),), {"pad_width": ((0, 0), (1, 1)), "mode": mode})]
    return tuple(cases) + (
        (((2, 3),), {"pad_width": ((1, 2), (2, 1)), "constant_values": ((1, 2), (3, 4))}),
        (((2, 3),), {"pad_width": 1, "constant_values": (5, -6)}),
        (((0, 3),), {"pad_width": 2, "constant_values": 2.75}),
        (((3,),), {"pad_width": 2, "mode": "reflect", "reflect_type": "even"}),
        (((2, 3),), {"pad_width": {1: (1, 2)}, "mode": "wrap"}),
        (((2, 3),), {"pad_width": {0: 2, -1: (0, 1)}, "constant_values": -1}))


def _conv_cases():
    cases = []
    for shapes in (((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((6,), (2,)), ((2,), (7,)),
                   ((1,), (1,)), ((1,), (4,)), ((5,), (4,))):
        for mode in ("full", "same", "valid"):
            cases.append((shapes, {"mode": mode}))
    return tuple(cases) + ((((4,), (2,)), {"mode": 1}),)


COMPOSED_FUNCTIONS = [
    _dm("np.pad modes", np.pad, 1, _pad_cases()),
    _dm("np.pad statistics", np.pad, 1, tuple(
        (shapes, dict(kw, mode=mode)) for mode in ("maximum", "minimum", "mean")
        for shapes, kw in ((((3, 5),), {"pad_width": 1}),
                           (((3, 5),), {"pad_width": ((1, 2), (3, 0))}),
                           (((3, 5),), {"pad_width": 2, "stat_length": 2}),
                           (((3, 5),), {"pad_width": (1, 3), "stat_length": ((1, 2), (4, 9))}),
                           (((4,),), {"pad_width": {0: 2}, "stat_length": 3}))),
        domains=(_uint64_below_2_63(_domain(-3, 3, int_lo=-9, int_hi=9)),), tol=5),
    OpRecord("np.pad empty", np.pad, 1, (ANY,), ALL, cases=(
        (((2, 3),), {"pad_width": 2, "mode": "empty"}),), group="data-movement", values=False),
    _dm("np.convolve", np.convolve, 2, _conv_cases() + ((((3,), ()), {}),),
        domains=(_SMALL_INTS,), group="dot",
        tol=5),
    _dm("np.correlate", np.correlate, 2, _conv_cases() + ((((5,), (3,)), {}),),
        domains=(_SMALL_INTS,), group="dot", tol=5),
    _dm("np.split", np.split, 1, (
        (((4, 6),), {"indices_or_sections": 2}), (((4, 6),), {"indices_or_sections": 3, "axis": 1}),
        (((4, 6),), {"indices_or_sections": [1, 3], "axis": -1}),
        (((7,),), {"indices_or_sections": [-2, 10, 1]}), (((5,),), {"indices_or_sections": []}),
        (((0, 2),), {"indices_or_sections": 2, "axis": 1}), (((6,),), {"indices_or_sections": 1}))),
    _dm("np.array_split", np.array_split, 1, (
        (((7,),), {"indices_or_sections": 3}), (((2, 5),), {"indices_or_sections": 4, "axis": 1}),
        (((3,),), {"indices_or_sections": 5}), (((4, 3),), {"indices_or_sections": [2, 2, 9]}),
        (((2, 3, 4),), {"indices_or_sections": (1,), "axis": 2}))),
    _dm("np.hsplit", np.hsplit, 1, (
        (((2, 6),), {"indices_or_sections": 3}), (((6,),), {"indices_or_sections": [2]}),
        (((2, 4, 3),), {"indices_or_sections": 2}))),
    _dm("np.vsplit", np.vsplit, 1, (
        (((4, 3),), {"indices_or_sections": 2}), (((3, 2, 2),), {"indices_or_sections": [1]}))),
    _dm("np.dsplit", np.dsplit, 1, ((((2, 1, 4),), {"indices_or_sections": 2}),
                                   (((1, 2, 3),), {"indices_or_sections": [1, 1]}))),
    _dm("np.broadcast_arrays", lambda *xs: np.broadcast_arrays(*xs), None, (
        (((3, 1), (4,)), {}), (((2, 3),), {}), (((), (2, 2), (1, 2)), {}), (((0, 1), (3,)), {}))),
    _dm("np.ravel order=F", np.ravel, 1, (
        (((2, 3, 4),), {"order": "F"}), (((3,),), {"order": "F"}), (((),), {"order": "F"}),
        (((0, 2),), {"order": "F"}))),
    _dm("x.ravel('F')", lambda x: x.ravel("F"), 1, ((((3, 4),), {}),)),
    _dm("x.flatten(order=F)", lambda x, **kw: x.flatten(**kw), 1, (
        (((3, 4),), {"order": "F"}), (((2, 3),), {"order": "C"}), (((2, 1, 3),), {"order": "F"}))),
    _dm("np.reshape order=F", np.reshape, 1, (
        (((2, 3, 4),), {"shape": (4, 6), "order": "F"}), (((6,),), {"shape": (2, 3), "order": "F"}),
        (((2, 6),), {"shape": (3, -1, 2), "order": "F"}),
        (((2, 3),), {"shape": (6,), "order": "F"}),
        (((0, 3),), {"shape": (3, 0), "order": "F"}))),
    _dm("x.reshape order=F", lambda x: x.reshape((4, 3, 2), order="F"), 1, ((((2, 3, 4),), {}),)),
] + [
    # ufunc.outer: every binary ufunc has it; one of each kind
    OpRecord(f"np.{u.__name__}.outer", u.outer, 2, (dom,), dts, (
        ((3,), (4,)), ((2, 3), (2,)), ((), (3,)), ((0,), (2, 2)), ((2,), ())), tol=tol)
    for u, dts, dom, tol in (
        (np.add, ALL, ANY, 1), (np.subtract, NUMERIC, ANY, 1), (np.multiply, ALL, ANY, 1),
        (np.divide, NUMERIC, NONZERO, 1), (np.maximum, ALL, ANY, 1), (np.minimum, ALL, ANY, 1),
        (np.power, FLOATS, POSITIVE, 2), (np.arctan2, FLOATS, ANY, 2), (np.less, ALL, ANY, 1),
        (np.equal, ALL, ANY, 1), (np.greater_equal, ALL, ANY, 1), (np.logical_xor, ALL, ANY, 1),
        (np.bitwise_and, INTEGRAL, ANY, 1), (np.hypot, FLOATS, ANY, 1),
        (np.floor_divide, NUMERIC, NONZERO, 1))
] + [
    # to decimals exactly as NumPy: times 10**k in the array's type, rint, divided back
    OpRecord("x.round(k)", lambda x, **kw: x.round(**kw), 1, (_uint64_below_2_63(
        _domain(-2e3, 2e3, int_lo=-999, int_hi=999)),),
             NUMERIC, UNARY_SHAPES, ({"decimals": 3}, {"decimals": -2}, {"decimals": 0}),
             group="selection"),
    OpRecord("np.round decimals far", np.round, 1, (_domain(-1e6, 1e6),), FLOATS,
             (((64,),),), ({"decimals": 25}, {"decimals": -23}, {"decimals": 12}),
             group="selection"),
    OpRecord("np.einsum more", _einsum, None, (_SMALL_INTS,), ALL, cases=(
        (((3, 3),), {"subscripts": "ii->i"}), (((3, 3),), {"subscripts": "ii"}),
        (((2, 3, 3),), {"subscripts": "bii->bi"}), (((3, 2, 3),), {"subscripts": "iji->ij"}),
        (((2, 2, 2),), {"subscripts": "iii->i"}), (((2, 2), (3, 3)), {"subscripts": "ii,jj->ij"}),
        (((2, 3, 4), (4, 5)), {"subscripts": "...ij,...jk->...ik"}),
        (((2, 1, 3, 4), (5, 4, 2)), {"subscripts": "...ij,...jk"}),
        (((3, 2, 4),), {"subscripts": "i...->..."}), (((2, 3),), {"subscripts": "..."}),
        (((2, 3, 4, 5),), {"subscripts": "i...j->j..."}),
        (((3, 1), (4,)), {"subscripts": "...,...->..."}),
        (((2, 3), (3, 4), (4, 5)), {"subscripts": "ij,jk,kl->il"}),
        (((2, 3), (3, 4), (4, 5)), {"subscripts": "ij,jk,kl"}),
        (((4,), (4,), (4,)), {"subscripts": "i,i,i->"}),
        (((2, 3), (2, 3), (1, 3)), {"subscripts": "ij,ij,ij->i"}),
        (((2, 3), (3, 2), (2, 2), (2, 3)), {"subscripts": "ab,bc,cd,de->ae"}),
        (((2,), (3,), (2,)), {"subscripts": "i,j,k->ijk"}),
        (((2, 1, 3), (4, 3)), {"subscripts": "ijk,jk->ik"}),
        (((0, 3), (3, 2)), {"subscripts": "ij,jk->ik"}),
        (((2, 0), (0, 3)), {"subscripts": "ij,jk"}),
    ), group="dot", tol=5),
]

_STATS = _domain(-3, 3, int_lo=-5, int_hi=5)


def _cov_cases():
    return tuple((s, v) for s, v in (
        (((3, 5),), {}), (((3, 5),), {"rowvar": False}), (((3, 5),), {"bias": True}),
        (((3, 5),), {"ddof": 2}), (((3, 5),), {"ddof": 5}), (((3, 5),), {"ddof": 7}),
        (((5,),), {}), (((1, 4),), {}), (((0, 3),), {}), (((2, 1),), {}),
        (((2, 5), (5,)), {}), (((4, 2), (4, 3)), {"rowvar": False}), (((4,), (4,)), {"bias": True}),
        (((2, 4),), {"dtype": np.float32})))


def _increasing(rng, shape, dtype):
    """Increasing points (np.interp's xp), some of them equal, from about -3; from 1 for
    unsigned types, where points below 0 would wrap round to the top and leave xp unsorted
    (np.interp's result is then undefined), and an x of 0 still falls left of them."""
    kind = np.dtype(dtype).kind
    steps = rng.integers(0, 3, shape) if kind in "iu" else rng.uniform(0, 2, shape)
    if np.size(steps) > 2:
        steps[1] = 0  # a repeated point
    return _make(np.cumsum(steps) + (1 if kind == "u" else -3), shape, dtype)


def _polyval(p, x):
    return np.polyval(p, x)


COMPOSED_STATS = [
    _dm("np.cov", lambda *a, **kw: np.cov(*a, **kw), None, _cov_cases(), NUMERIC, (_STATS,),
        group="dot", tol=10),
    _dm("np.corrcoef", lambda *a, **kw: np.corrcoef(*a, **kw), None, tuple(
        c for c in _cov_cases() if "ddof" not in c[1] and "bias" not in c[1]
        and c[0] != ((0, 3),)), NUMERIC, (_STATS,), group="dot", tol=10),
    _dm("np.polyval", _polyval, 2, (
        (((3,), (4,)), {}), (((1,), (2, 3)), {}), (((4,), ()), {}), (((0,), (3,)), {}),
        (((5,), (0,)), {})), NUMERIC, (_SMALL_INTS,), group="elementwise", tol=5),
    _dm("np.polyval list", lambda x: np.polyval([2.0, -1, 0.5], x), 1, (
        (((4,),), {}), (((),), {})), ALL, (_SMALL_INTS,), group="elementwise"),
    _dm("np.trapezoid", np.trapezoid, 1, (
        (((5,),), {}), (((3, 4),), {"axis": 0}), (((3, 4),), {"dx": 0.5}), (((1,),), {}),
        (((2, 3, 4),), {"axis": 1, "dx": 2})), NUMERIC, (_STATS,), group="reduction", tol=5),
    _dm("np.trapezoid x", lambda y, x, **kw: np.trapezoid(y, x, **kw), 2, (
        (((5,), (5,)), {}), (((3, 4), (4,)), {}), (((3, 4), (3, 4)), {"axis": 0})),
        NUMERIC, (_STATS,), group="reduction", tol=5),
    _dm("np.gradient", np.gradient, 1, (
        (((5,),), {}), (((3, 4),), {}), (((3, 4),), {"axis": 1}), (((3, 4),), {"axis": (1, 0)}),
        (((4, 5),), {"edge_order": 2}), (((2, 3),), {"axis": -1, "edge_order": 2}),
        (((2,),), {}), (((3, 0),), {"axis": 0}), (((2, 3, 4),), {"axis": (0, 2)})),
        NUMERIC, (_STATS,), group="elementwise", tol=5),
    _dm("np.gradient spacing", lambda f, **kw: np.gradient(f, *kw.pop("h"), **kw), 1, (
        (((5,),), {"h": (0.5,)}), (((3, 4),), {"h": (2.0,)}), (((3, 4),), {"h": (2.0, 3)}),
        (((3, 4),), {"h": (0.25, 4), "edge_order": 2}),
        (((6,),), {"h": (np.arange(6) * 0.5,), "edge_order": 2}),
        (((4,),), {"h": (np.arange(4, dtype=np.int32) * 3,)}),
        (((3, 4),), {"h": (np.float32(0.5),), "axis": 1}),
        (((5,),), {"h": (np.array([0.0, 0.5, 1.5, 1.75, 3.0]),)}),
        (((5,),), {"h": (np.array([0.0, 0.5, 1.5, 1.75, 3.0]),), "edge_order": 2}),
        (((3, 4),), {"h": (np.array([0, 1, 3], np.int32), np.array([0.0, 1, 3, 4], np.float32)),
                     "edge_order": 2})),
        NUMERIC, (_STATS,), group="elementwise", tol=5),
    _dm("np.interp", np.interp, 3, (
        (((7,), (4,), (4,)), {}), (((2, 5), (3,), (3,)), {}), (((), (4,), (4,)), {}),
        (((9,), (1,), (1,)), {}), (((8,), (4,), (4,)), {"left": -7.0, "right": 7.5}),
        (((0,), (3,), (3,)), {})), NUMERIC, (_with_nonfinite(_STATS), _increasing, _STATS),
        group="selection",
        tol=5),
    _dm("np.interp at the points", lambda x: np.interp(x, [-1.0, 0, 0, 2], [1.0, np.inf, 3, 3]),
        1, ((((9,),), {}),), FLOATS, (QUARTERS,), group="selection"),
]


# -- gather and scatter: integer-array indexing, np.take & co., ufunc.at ------------


def _index_array(lo, hi):
    """int64 indices in [lo, hi] whatever the record's type (negatives wrap as in NumPy)."""
    def gen(rng, shape, dtype):
        return rng.integers(lo, hi + 1, shape).astype(np.int64)
    return gen


IN_RANGE = _index_array(-3, 2)  # in range for every axis of at least 3 elements
ANY_INDEX = _index_array(-9, 9)  # for np.take's 'wrap' and 'clip' modes

_FANCY = {
    "x[i]": lambda x, i: x[i],
    "x[:, i]": lambda x, i: x[:, i],
    "x[i, :, 1]": lambda x, i: x[i, :, 1],
    "x[i, 1:3]": lambda x, i: x[i, 1:3],
    "x[-1, i]": lambda x, i: x[-1, i],
    "x[i, ..., i]": lambda x, i: x[i, ..., i],
    "x[::-1, i]": lambda x, i: x[::-1, i],
    "x[i[:, None], i[None, :]]": lambda x, i: x[i[:, None], i[None, :]],
    "x[i.astype(int32)]": lambda x, i: x[i.astype(np.int32)],
    "x[[0, 2, -1]]": lambda x, i: x[[0, 2, -1]] + 0 * i.sum(),
    "x[const[[1], [0]], 1:]": lambda x, i: x[np.array([[1], [0]]), 1:] + 0 * i.sum(),
}


def _fancy(x, i, form):
    return _FANCY[form](x, i)


def _fancy_set(x, i, v, form):
    x = x.copy()
    if form == "x[i] = v":
        x[i] = v
    elif form == "x[i] += v":
        x[i] += v
    elif form == "x[:, i] = v":
        x[:, i] = v
    elif form == "x[i, 1:3] = v":
        x[i, 1:3] = v
    elif form == "x[::-1, i] += v":
        x[::-1, i] += v
    else:  # "x[i, j] = scalar"
        x[i, i] = 1
    return x


def _ufunc_at(ufunc):
    def call(x, i, v):
        x = x.copy()
        ufunc.at(x, i, v)
        return x
    call.__name__ = f"{ufunc.__name__}_at"
    return call


def _put_along_axis(x, i, v, axis):
    x = x.copy()
    np.put_along_axis(x, i, v, axis=axis)
    return x


GATHER_SCATTER = [
    OpRecord("x[index array]", _fancy, 2, (ANY, IN_RANGE), ALL, cases=tuple(
        (((4, 5, 3), (4,)), {"form": form}) for form in _FANCY) + (
        (((4, 5, 3), (2, 3)), {"form": "x[i]"}), (((4, 5, 3), ()), {"form": "x[:, i]"}),
        (((4, 5, 3), (0,)), {"form": "x[i]"}), (((6,), (3, 2)), {"form": "x[i]"}),
    ), group="data-movement"),
    OpRecord("np.take", np.take, 2, (ANY, IN_RANGE), ALL, cases=(
        (((4, 5), (6,)), {}), (((4, 5), (2, 3)), {"axis": 0}), (((4, 5), (3,)), {"axis": 1}),
        (((4, 5), ()), {"axis": -1}), (((7,), (4,)), {"mode": "raise"}),
    ), group="data-movement"),
    OpRecord("np.take(mode=wrap|clip)", np.take, 2, (ANY, ANY_INDEX), ALL, cases=(
        (((4, 5), (8,)), {"mode": "wrap"}), (((4, 5), (8,)), {"mode": "clip"}),
        (((4, 5), (2, 4)), {"axis": 1, "mode": "wrap"}),
        (((4, 5), (2, 4)), {"axis": 0, "mode": "clip"}),
    ), group="data-movement"),
    OpRecord("np.take_along_axis", np.take_along_axis, 2, (ANY, IN_RANGE), ALL, cases=(
        (((3, 4), (3, 2)), {"axis": 1}), (((3, 4), (2, 4)), {"axis": 0}),
        (((3, 4), (5,)), {"axis": None}), (((3, 4, 5), (1, 4, 2)), {"axis": -1}),
    ), group="data-movement"),
    OpRecord("np.put_along_axis", _put_along_axis, 3, (ANY, IN_RANGE, ANY), ALL, cases=(
        (((3, 4), (3, 2), (3, 2)), {"axis": 1}), (((3, 4), (2, 4), ()), {"axis": 0}),
    ), group="setitem"),
    OpRecord("x[index array] = v", _fancy_set, 3, (ANY, IN_RANGE, ANY), ALL, cases=(
        (((5, 4), (6,), (6, 4)), {"form": "x[i] = v"}),
        (((5, 4), (6,), (4,)), {"form": "x[i] = v"}),
        (((5, 4), (2, 3), ()), {"form": "x[i] = v"}),
        (((5, 4), (6,), (5, 6)), {"form": "x[:, i] = v"}),
        (((5, 4), (6,), ()), {"form": "x[i, j] = scalar"}),
        (((5, 4), (6,), (6, 2)), {"form": "x[i, 1:3] = v"}),
    ), group="setitem"),
    OpRecord("x[index array] += v", _fancy_set, 3, (ANY, IN_RANGE, ANY), NUMERIC, cases=(
        (((5, 4), (6,), (6, 4)), {"form": "x[i] += v"}),
        (((5,), (7,), (7,)), {"form": "x[i] += v"}),
        (((5, 4), (3,), (5, 3)), {"form": "x[::-1, i] += v"}),
    ), group="setitem"),
    OpRecord("np.add.at", _ufunc_at(np.add), 3, (ANY, IN_RANGE, ANY), ALL, cases=(
        (((5, 4), (8,), (8, 4)), {}), (((5,), (9,), ()), {}), (((5, 4), (2, 3), (4,)), {}),
    ), group="setitem"),
    OpRecord("np.subtract.at", _ufunc_at(np.subtract), 3, (ANY, IN_RANGE, ANY), NUMERIC,
             cases=((((5,), (9,), (9,)), {}),), group="setitem"),
    OpRecord("np.multiply.at", _ufunc_at(np.multiply), 3, (ANY, IN_RANGE, ANY), ALL,
             cases=((((5,), (9,), (9,)), {}),), group="setitem"),
    OpRecord("np.maximum.at", _ufunc_at(np.maximum), 3, (ANY, IN_RANGE, ANY), ALL,
             cases=((((5, 3), (9,), (9, 3)), {}),), group="setitem"),
    OpRecord("np.minimum.at", _ufunc_at(np.minimum), 3, (ANY, IN_RANGE, ANY), ALL,
             cases=((((5, 3), (9,), (3,)), {}),), group="setitem"),
]


# -- more compositions: fix ... histogram, and the functions that write in place ----


def _exponents(rng, shape, dtype):
    """ldexp's exponents: int32 beside float32 and int32, int64 beside the others; mostly small,
    some past every type's range (results 0 or inf, and subnormal ones)."""
    kind = np.int32 if np.dtype(dtype) in (F32, I32) else np.int64
    small = rng.integers(-20, 21, shape)
    big = rng.choice([-1100, -1074, -1040, -160, -140, 130, 1030, 5000], shape)
    return np.where(rng.random(shape) < 0.3, big, small).astype(kind).reshape(shape)


def _in_place(func):
    """A function that writes into its first argument (and returns None), as the program
    `func(a, ...); return a`."""
    def f(a, *rest, **kw):
        assert func(a, *rest, **kw) is None
        return a
    return f


def _nan_but_never_all(rng, shape, dtype):
    """_NONFINITE's values, with NaN only where the index sum is odd: every slice along an axis
    of two or more has a number (NumPy's nanargmax refuses a slice of NaN only)."""
    v = _NONFINITE(rng, shape, dtype)
    odd = np.indices(shape).sum(axis=0) % 2 == 1 if shape else np.zeros((), bool)
    return np.where(np.isnan(v) & ~odd, 1.5, v).astype(dtype) if v.dtype.kind == "f" else v


_NANARG_CASES = tuple(c for c in _ARG_CASES if 0 not in c[0][0]) + (
    (((2, 3, 4),), {"axis": 1, "keepdims": True}),)
_NANVAR_CASES = _DDOF + _NAN_CASES + ((((0, 3),), {"axis": 1}),)
_EDGES = (-1, -0.5, 0, 0.75, 2)  # on the quarter grid: ties at the edges
COMPOSED_MORE = [
    OpRecord("np.fix", np.fix, 1, (_with_nonfinite(QUARTERS),), ALL, UNARY_SHAPES),
    OpRecord("np.real", np.real, 1, (_NONFINITE,), ALL, UNARY_SHAPES),
    OpRecord("np.imag", np.imag, 1, (_NONFINITE,), ALL, UNARY_SHAPES),
    OpRecord("np.real_if_close", np.real_if_close, 1, (_NONFINITE,), ALL, UNARY_SHAPES),
    U(np.conjugate, NUMERIC, (_NONFINITE,)),
    U(np.logaddexp2, NUMERIC, (_NONFINITE, QUARTERS)),
    OpRecord("np.ldexp", np.ldexp, 2, (_NONFINITE, _exponents), NUMERIC, BINARY_SHAPES),
    OpRecord("np.modf", np.modf, 1, (_NONFINITE,), NUMERIC, UNARY_SHAPES),
    OpRecord("np.frexp", np.frexp, 1, (_with_nonfinite(_domain(-1e5, 1e5)),), NUMERIC,
             UNARY_SHAPES),
    reduction("np.nanprod", np.nanprod, ALL, _DT[:2] + _NAN_CASES, domains=(_NONFINITE,)),
    reduction("np.nanvar", np.nanvar, ALL, _NANVAR_CASES, domains=(_NONFINITE,), tol=5),
    reduction("np.nanstd", np.nanstd, ALL, _NANVAR_CASES, domains=(_NONFINITE,), tol=5),
    reduction("np.nanargmax", np.nanargmax, ALL, empty=False, cases=_NANARG_CASES,
              domains=(_nan_but_never_all,)),
    reduction("np.nanargmin", np.nanargmin, ALL, empty=False, cases=_NANARG_CASES,
              domains=(_nan_but_never_all,)),
    _dm("np.append", np.append, 2, (
        (((3, 4), (3, 4)), {}), (((3, 4), (2, 4)), {"axis": 0}), (((3, 4), (3, 1)), {"axis": 1}),
        (((), (3,)), {}), (((0,), (2, 2)), {}), (((0, 2), (1, 2)), {"axis": -2}))),
    _dm("np.ediff1d", np.ediff1d, 1, (
        (((5,),), {}), (((3, 4),), {}), (((0,),), {}), (((1,),), {}), (((),), {}),
        (((4,),), {"to_begin": np.uint8(1)}), (((4,),), {"to_end": np.array([7, 8], U8)}),
        (((2, 2),), {"to_begin": np.array([[1], [2]], U8), "to_end": np.uint8(3)})),
        dtypes=NUMERIC, domains=(_NONFINITE,)),
    # Python ints are int64 to to_begin and to_end, which NumPy refuses beside an unsigned array
    # (int64 does not cast to it under 'same_kind'): signed types only.
    _dm("np.ediff1d python ints", np.ediff1d, 1, (
        (((4,),), {"to_begin": -1}), (((4,),), {"to_end": [7, 8]}),
        (((2, 2),), {"to_begin": [[1], [2]], "to_end": 3}), (((0,),), {"to_end": 1})),
        dtypes=tuple(d for d in NUMERIC if d not in UNSIGNED), domains=(_NONFINITE,)),
    _dm("np.delete", np.delete, 1, (
        (((5,),), {"obj": 1}), (((5,),), {"obj": -1}), (((3, 4),), {"obj": 2}),
        (((3, 4),), {"obj": [0, 2], "axis": 1}), (((3, 4),), {"obj": slice(0, 3, 2), "axis": 0}),
        (((3, 4),), {"obj": [3, 0, 0, -1], "axis": -1}),
        (((3, 4),), {"obj": np.array([True, False, True]), "axis": 0}),
        (((3, 4),), {"obj": [], "axis": 1}), (((2, 3),), {"obj": slice(None), "axis": 1}),
        (((0, 3),), {"obj": 1, "axis": 1}))),
    _dm("np.insert", np.insert, 1, (
        (((5,),), {"obj": 1, "values": 9}), (((5,),), {"obj": 5, "values": [7, 8]}),
        (((3, 4),), {"obj": -1, "values": 2.5}), (((3, 4),), {"obj": 1, "values": [1, 2, 3],
                                                            "axis": 1}),
        (((3, 4),), {"obj": [1], "values": [[1], [2], [3]], "axis": 1}),
        (((3, 4),), {"obj": [0, 4, 4], "values": 7, "axis": 1}),
        (((3, 4),), {"obj": [2, 0], "values": [[5, 6, 7, 8]], "axis": 0}),
        (((3, 4),), {"obj": slice(0, 4, 2), "values": 0, "axis": -1}),
        (((3, 4),), {"obj": [], "values": 1, "axis": 0}),
        (((0,),), {"obj": 0, "values": [1, 2]}))),
    _dm("np.insert traced values", lambda a, v, **kw: np.insert(a, values=v, **kw), 2, (
        (((3, 4), (3,)), {"obj": 2, "axis": 1}), (((3, 4), (2, 4)), {"obj": [1, 3], "axis": 0}),
        (((3, 4), ()), {"obj": [0, 2]}), (((5,), (2,)), {"obj": 5}))),
    _dm("np.block", lambda a, b, c: np.block([[a, b], [c]]), 3, (
        (((2, 2), (2, 3), (1, 5)), {}), (((2,), (3,), (5,)), {}), (((), (), (2,)), {}),
        (((0, 2), (0, 1), (1, 3)), {}))),
    _dm("np.block flat", lambda a, b: np.block([a, b, 1]), 2, (
        (((3,), (2,)), {}), (((1, 2), (1, 1)), {}), (((0,), ()), {}))),
    _dm("np.resize", np.resize, 1, (
        (((5,),), {"new_shape": 12}), (((2, 3),), {"new_shape": (4, 4)}),
        (((2, 3),), {"new_shape": 2}), (((3,),), {"new_shape": (2, 0)}),
        (((0,),), {"new_shape": (2, 3)}), (((),), {"new_shape": (3,)}))),
    _dm("np.vander", np.vander, 1, (
        (((4,),), {}), (((4,),), {"N": 3}), (((3,),), {"N": 5, "increasing": True}),
        (((4,),), {"N": 0}), (((4,),), {"N": 1}), (((0,),), {"N": 2})),
        domains=(_SMALL_INTS,), group="elementwise"),
    _dm("np.isin", lambda x, **kw: np.isin(x, [1, -0.0, 2.5, np.nan, 1], **kw), 1, (
        (((3, 4),), {}), (((3, 4),), {"invert": True}), (((),), {}), (((0,),), {}),
        (((7,),), {"assume_unique": True})), domains=(_NONFINITE,), group="elementwise"),
    _dm("np.isin traced", np.isin, 2, (
        (((3, 4), (5,)), {}), (((3, 4), (2, 2)), {"invert": True}), (((0,), (3,)), {}),
        (((4,), (0,)), {}), (((), (3,)), {})), domains=(_NONFINITE,), group="elementwise"),
    _dm("np.digitize", lambda x, **kw: np.digitize(x, **kw), 1, tuple(
        (((3, 4),), dict(bins=bins, **kw)) for bins in (_EDGES, _EDGES[::-1], (0.5,), ())
        for kw in ({}, {"right": True})) + ((((0,),), {"bins": _EDGES}),),
        dtypes=NUMERIC, domains=(_with_nonfinite(QUARTERS),), group="elementwise"),
    _dm("np.histogram", np.histogram, 1, (
        (((20,),), {"bins": 4}), (((3, 4),), {"bins": 6, "range": (-1, 2)}),
        (((20,),), {"bins": 3, "range": (0, 1)}), (((1,),), {}), (((0,),), {"bins": 3}),
        (((20,),), {"bins": list(_EDGES)}), (((0,),), {"bins": [0, 1]}),
        (((2, 3, 4),), {"bins": 1, "range": (-3, 3)}), (((20,),), {"bins": 4, "density": True}),
        (((3, 4),), {"bins": 6, "range": (-1, 2), "density": True}),
        (((20,),), {"bins": list(_EDGES), "density": True})),
        dtypes=ALL, domains=(QUARTERS,), group="reduction"),
    _dm("np.histogram nonfinite", np.histogram, 1, (
        (((30,),), {"bins": 4, "range": (-1, 2)}), (((30,),), {"bins": list(_EDGES)})),
        dtypes=FLOATS, domains=(_NONFINITE,), group="reduction"),
    _dm("np.copyto", _in_place(np.copyto), 2, (
        (((3, 4), (3, 4)), {}), (((3, 4), (4,)), {}), (((3, 4), ()), {}), (((0, 2), (2,)), {}),
        (((2, 3), (2, 3)), {"where": np.array([True, False, True])}))),
    _dm("np.copyto where", lambda d, s, m: _in_place(np.copyto)(d, s, where=m > 0), 3, (
        (((3, 4), (3, 4), (3, 4)), {}), (((3, 4), (), (4,)), {}), (((), (), ()), {}))),
    _dm("np.putmask", lambda a, m, **kw: _in_place(np.putmask)(a, m > 0, **kw), 2, (
        (((3, 4), (3, 4)), {"values": 5}), (((3, 4), (3, 4)), {"values": [10, 20, 30]}),
        (((2, 3), (2, 3)), {"values": list(range(8))}), (((0,), (0,)), {"values": 1}),
        (((3,), (3,)), {"values": []}))),
    _dm("np.putmask traced", lambda a, m, v: _in_place(np.putmask)(a, m > 0, v), 3, (
        (((3, 4), (3, 4), (5,)), {}), (((3, 4), (3, 4), ()), {}), (((2, 3), (2, 3), (2, 3)), {}))),
    _dm("np.place", lambda a, m, **kw: _in_place(np.place)(a, m > 0, **kw), 2, (
        (((3, 4), (3, 4)), {"vals": 5}), (((3, 4), (3, 4)), {"vals": [2]}),
        (((0, 2), (0, 2)), {"vals": 1}), (((), ()), {"vals": 3}))),
    _dm("np.fill_diagonal", _in_place(np.fill_diagonal), 1, (
        (((3, 4),), {"val": 5}), (((5, 3),), {"val": 5}), (((7, 3),), {"val": 1, "wrap": True}),
        (((3, 3),), {"val": [1, 2]}), (((4, 4),), {"val": np.arange(6)}),
        (((3, 3, 3),), {"val": 3}), (((0, 0),), {"val": 1}), (((1, 1),), {"val": 2}))),
    # NumPy refuses to write the Python int -1 into an unsigned array (OverflowError).
    _dm("np.fill_diagonal negative", _in_place(np.fill_diagonal), 1, (
        (((3, 3, 3),), {"val": -1}), (((3, 4),), {"val": -2.5})), dtypes=_SIGNED_ALL),
    _dm("np.fill_diagonal traced", lambda a, v, **kw: _in_place(np.fill_diagonal)(a, v, **kw),
        2, ((((4, 3), ()), {}), (((3, 3), (2,)), {}), (((7, 3), (3,)), {"wrap": True}))),
]


# -- scans and sorts: cumsum, cumprod, ufunc.accumulate; sort, argsort, median ... ----

_SCAN_CASES = (
    (((7,),), {}),
    (((2, 3, 4),), {}),  # axis=None flattens
    (((2, 3, 4),), {"axis": 0}),
    (((2, 3, 4),), {"axis": 1}),
    (((2, 3, 4),), {"axis": -1}),
    (((3, 1),), {"axis": 1}),
    (((),), {}),
    (((0, 3),), {"axis": 0}),
    (((0, 3),), {"axis": 1}),
    (((2, 3),), {"axis": 1, "dtype": np.float64}),
    (((2, 3),), {"axis": 0, "dtype": np.int64}),
    (((2, 3),), {"dtype": np.float32}),
)
_ACCUMULATE_CASES = (
    (((7,),), {}),
    (((2, 3, 4),), {}),
    (((2, 3, 4),), {"axis": 1}),
    (((2, 3, 4),), {"axis": -1}),
    (((0, 3),), {"axis": 1}),
    (((2, 3),), {"axis": 1, "dtype": np.float64}),
)


def _accumulate(ufunc):
    return lambda x, **kw: ufunc.accumulate(x, **kw)


def _scan(name, fn, dtypes, cases, domains=(ANY,)):
    return OpRecord(name, fn, 1, domains, dtypes, cases=cases, group="scan")


SCANS = [
    _scan("np.cumsum", np.cumsum, ALL, _SCAN_CASES, (QUARTERS,)),
    _scan("np.cumsum nonfinite", np.cumsum, FLOATS, _SCAN_CASES[:5], (_NONFINITE,)),
    _scan("np.cumprod", np.cumprod, ALL, _SCAN_CASES, (_domain(-2, 2, int_lo=-2, int_hi=2),)),
    _scan("np.add.accumulate", _accumulate(np.add), ALL, _ACCUMULATE_CASES, (QUARTERS,)),
    _scan("np.multiply.accumulate", _accumulate(np.multiply), ALL, _ACCUMULATE_CASES,
          (_domain(-2, 2, int_lo=-2, int_hi=2),)),
    _scan("np.maximum.accumulate", _accumulate(np.maximum), ALL, _ACCUMULATE_CASES[:5],
          (_NONFINITE,)),
    _scan("np.minimum.accumulate", _accumulate(np.minimum), ALL, _ACCUMULATE_CASES[:5],
          (_NONFINITE,)),
    _scan("np.logical_and.accumulate", _accumulate(np.logical_and), ALL,
          _ACCUMULATE_CASES[:5], (_domain(-1, 1, int_lo=0, int_hi=3),)),
    _scan("np.logical_or.accumulate", _accumulate(np.logical_or), ALL, _ACCUMULATE_CASES[:5],
          (_domain(-1, 1, int_lo=-1, int_hi=0),)),
    _method(".cumsum", lambda x, **kw: x.cumsum(**kw), ALL,
            _c({}, {"axis": 1}, {"axis": 0, "dtype": np.float64})),
    _method(".cumprod", lambda x, **kw: x.cumprod(**kw), ALL, _c({}, {"axis": -1}),
            domains=(_domain(-2, 2, int_lo=-2, int_hi=2),)),
]



def _distinct(rng, shape, dtype):
    """Values with no ties (argsort's default, unstable kind leaves the order of ties open)."""
    n = int(np.prod(shape, dtype=np.int64))
    v = rng.permutation(n) - n // 2
    return _make(v / 4 if np.dtype(dtype).kind == "f" else v, shape, dtype)


def _sorted_1d(rng, shape, dtype):
    """A sorted array (NaN last, as np.sort puts it) with ties, for np.searchsorted."""
    return np.sort(_NONFINITE(rng, shape, dtype))


def _in_place_sort(x, **kw):
    y = x.copy()
    y.sort(**kw)
    return y


_SORT_CASES = (
    (((7,),), {}),
    (((3, 4),), {}),
    (((3, 4),), {"axis": 0}),
    (((3, 4),), {"axis": None}),
    (((2, 3, 4),), {"axis": 1}),
    (((2, 3, 4),), {"axis": -3}),
    (((1, 5),), {"axis": 0}),
    (((0,),), {}),
    (((3, 0),), {"axis": 0}),
    (((),), {"axis": None}),
    (((17,),), {"kind": "stable"}),
)
_MEDIAN_CASES = (
    (((7,),), {}),
    (((6,),), {}),
    (((3, 4),), {"axis": 1}),
    (((3, 4),), {"axis": 0, "keepdims": True}),
    (((2, 3, 4),), {}),
    (((2, 3, 5),), {"axis": (0, 2)}),
    (((2, 3, 4),), {"axis": -1, "keepdims": True}),
    (((1,),), {}),
)
_Q_CASES = (
    (((7,),), {}),
    (((3, 4),), {"axis": 1}),
    (((3, 4),), {"axis": 0, "keepdims": True}),
    (((2, 3, 4),), {"axis": (0, 2)}),
    (((1,),), {}),
)


def _with_q(q, cases):
    return tuple((sh, {**kw, "q": q}) for sh, kw in cases)


SORTS = [
    OpRecord("np.sort", np.sort, 1, (_NONFINITE,), ALL, cases=_SORT_CASES, group="sort"),
    OpRecord("np.argsort", np.argsort, 1, (_NONFINITE,), ALL, group="sort", cases=tuple(
        (sh, {**kw, "kind": "stable"}) for sh, kw in _SORT_CASES)),
    OpRecord("np.argsort distinct", np.argsort, 1, (_distinct,), NUMERIC, group="sort",
             cases=_SORT_CASES[:7]),
    _method(".sort", _in_place_sort, ALL, _c({}, {"axis": 0}, {"axis": 1, "kind": "stable"}),
            domains=(_NONFINITE,)),
    _method(".argsort", lambda x, **kw: x.argsort(**kw), ALL,
            _c({"kind": "stable"}, {"axis": 0, "kind": "stable"}), domains=(_NONFINITE,)),
    OpRecord("np.median", np.median, 1, (_NONFINITE,), ALL, cases=_MEDIAN_CASES,
             group="sort"),
    OpRecord("np.median ties", np.median, 1, (QUARTERS,), ALL, cases=_MEDIAN_CASES,
             group="sort"),
    OpRecord("np.nanmedian", np.nanmedian, 1, (_NONFINITE,), ALL, cases=_MEDIAN_CASES,
             group="sort"),
    OpRecord("np.percentile", np.percentile, 1, (_NONFINITE,), NUMERIC, group="sort",
             cases=_with_q(30, _Q_CASES) + _with_q([0, 25.0, 50, 99.5, 100], _Q_CASES[:3])
             + _with_q(np.float64(75), _Q_CASES[1:2]) + _with_q(12.5, _Q_CASES[:1])),
    OpRecord("np.quantile", np.quantile, 1, (QUARTERS,), NUMERIC, group="sort",
             cases=_with_q(0.5, _Q_CASES) + _with_q([0.1, 0.5, 1.0], _Q_CASES[:3])
             + _with_q(0.0, _Q_CASES[:2]) + _with_q(1.0, _Q_CASES[1:2])),
    OpRecord("np.searchsorted", np.searchsorted, 2, (_sorted_1d, _NONFINITE), ALL,
             group="sort", cases=(
                 (((6,), (3, 4)), {}), (((6,), (3, 4)), {"side": "right"}),
                 (((6,), ()), {}), (((5,), (7,)), {"side": "right"}), (((0,), (3,)), {}),
                 (((1,), (2, 2)), {"side": "left"}))),
]


# -- issue 39: gcd ... ix_, the functions people reach for next --------------------------


def _full_range(rng, shape, dtype):
    """Integers over the type's whole range, its most negative value (whose absolute value
    wraps) included; booleans at random; floats as ANY."""
    dtype = np.dtype(dtype)
    if dtype == BOOL or dtype.kind == "f":
        return ANY(rng, shape, dtype)
    info = np.iinfo(dtype)
    v = rng.integers(int(info.min), int(info.max), shape, dtype=dtype, endpoint=True)
    v = np.where(rng.random(shape) < 0.1, info.min, v)
    small = rng.integers(-9 if dtype.kind == "i" else 0, 10, shape).astype(dtype)
    return np.where(rng.random(shape) < 0.3, small, v).astype(dtype).reshape(shape)


def _neighbours(rng, shape, dtype):
    """Floats where nextafter is interesting: zeros of both signs, subnormals, the largest
    finite value, powers of two, infinities and NaN, beside ordinary values."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return ANY(rng, shape, dtype)
    info = np.finfo(dtype)
    pool = np.array([0.0, -0.0, float(info.smallest_subnormal), -float(info.smallest_subnormal),
                     float(info.smallest_normal), float(info.max), -float(info.max), 1.0, -2.0,
                     0.5, 4.0, np.inf, -np.inf, np.nan, 3 * float(info.smallest_subnormal)],
                    dtype)
    v = QUARTERS(rng, shape, dtype)
    return np.where(rng.random(shape) < 0.6, rng.choice(pool, shape), v).astype(dtype)


_BITS = _domain(0, 1, int_lo=0, int_hi=1, quarters=True)  # two arrays often alike
_UNWRAP = _domain(-10, 10, int_lo=-20, int_hi=20)
_NAN_SCAN_CASES = _SCAN_CASES[:9] + ((((2, 3),), {"axis": 1, "dtype": np.float64}),)
_PUT_CASES = (
    (((3, 4),), {"ind": [0, 5, -1], "v": [7, 8, 9]}),
    (((3, 4),), {"ind": [1, 1, 2], "v": 4}),
    (((3, 4),), {"ind": [0, 13, -20], "v": [1, 2], "mode": "wrap"}),
    (((3, 4),), {"ind": [0, 13, -20], "v": [1, 2, 3], "mode": "clip"}),
    (((5,),), {"ind": np.array([[0, 1], [2, 3]]), "v": [5]}),
    (((0,),), {"ind": [], "v": [1]}),
)


def _partition_method(x, kth, axis=-1):
    """x.partition(kth) in place, then what it defines: the kth elements and the sorted
    slices."""
    y = x.copy()
    y.partition(kth, axis=axis)
    return np.take(y, np.atleast_1d(kth), axis=axis), np.sort(y, axis=axis)


def _partition_defined(x, kth, axis=-1):
    """What np.partition defines: the kth elements, and each slice's elements (sorted); the
    arrangement of the rest is NumPy's introselect's (tests/trace/test_issue39.py checks
    the partition property itself)."""
    p = np.partition(x, kth, axis=axis)
    return np.take(p, np.atleast_1d(kth), axis=axis), np.sort(p, axis=axis)


def _argpartition_defined(x, kth, axis=-1):
    """The values at the kth places, and the indices as a set (sorted: 0 ... n - 1)."""
    i = np.argpartition(x, kth, axis=axis)
    v = np.take_along_axis(x, i, axis=axis) if axis is not None else x.ravel()[i]
    return np.take(v, np.atleast_1d(kth), axis=axis), np.sort(i, axis=axis)


_PARTITION_CASES = (
    (((7,),), {"kth": 3}), (((7,),), {"kth": -1}), (((7,),), {"kth": [1, 4]}),
    (((3, 5),), {"kth": 2}), (((3, 5),), {"kth": 1, "axis": 0}),
    (((2, 3, 4),), {"kth": (0, 3), "axis": -1}), (((3, 4),), {"kth": 5, "axis": None}),
    (((1,),), {"kth": 0}),
)

ISSUE_39 = [
    OpRecord("np.allclose", np.allclose, 2, (_NONFINITE, QUARTERS), ALL, BINARY_SHAPES,
             ({}, {"atol": 10}, {"atol": 10, "equal_nan": True}), group="reduction"),
    OpRecord("np.allclose self", lambda x, **kw: np.allclose(x, x * 1, **kw), 1,
             (_NONFINITE,), ALL, UNARY_SHAPES, ({}, {"equal_nan": True}), group="reduction"),
    OpRecord("np.array_equal", np.array_equal, 2, (_BITS,), ALL, cases=(
        (((2,), (2,)), {}), (((3, 4), (3, 4)), {}), (((3,), (4,)), {}), (((), ()), {}),
        (((0, 2), (0, 2)), {}), (((2,), (2,)), {"equal_nan": True})), group="reduction"),
    OpRecord("np.array_equal self", lambda x, **kw: np.array_equal(x, np.copy(x), **kw), 1,
             (_NONFINITE,), ALL, UNARY_SHAPES, ({}, {"equal_nan": True}), group="reduction"),
    OpRecord("np.array_equiv", np.array_equiv, 2, (_BITS,), ALL, cases=(
        (((2,), (2,)), {}), (((3, 2), (2,)), {}), (((3, 4), (3,)), {}), (((), (3,)), {}),
        (((1,), (2, 2)), {}), (((0,), (2,)), {})), group="reduction"),
    U(np.gcd, INTS, (_full_range,)),
    U(np.lcm, INTS, (_domain(-3, 3, int_lo=-60, int_hi=60),)),
    U(np.bitwise_count, INTEGRAL, (_full_range,)),
    U(np.nextafter, ALL, (_neighbours,)),
    OpRecord("np.i0", np.i0, 1, (_with_nonfinite(_domain(-20, 20, int_lo=-20, int_hi=20)),),
             ALL, UNARY_SHAPES, tol=4),
    OpRecord("np.angle", np.angle, 1, (_NONFINITE,), ALL, UNARY_SHAPES,
             ({}, {"deg": True})),
    OpRecord("np.isposinf", np.isposinf, 1, (_NONFINITE,), ALL, UNARY_SHAPES),
    OpRecord("np.isneginf", np.isneginf, 1, (_NONFINITE,), ALL, UNARY_SHAPES),
    OpRecord("np.isreal", np.isreal, 1, (_NONFINITE,), ALL, UNARY_SHAPES),
    OpRecord("np.iscomplex", np.iscomplex, 1, (_NONFINITE,), ALL, UNARY_SHAPES),
    OpRecord("np.isrealobj", lambda x: (np.isrealobj(x), x + 0), 1, (ANY,), ALL,
             UNARY_SHAPES),
    _scan("np.nancumsum", np.nancumsum, ALL, _NAN_SCAN_CASES, (_NONFINITE,)),
    _scan("np.nancumprod", np.nancumprod, ALL, _NAN_SCAN_CASES,
          (_with_nonfinite(_domain(-2, 2, int_lo=-2, int_hi=2)),)),
    _dm("np.unwrap", np.unwrap, 1, (
        (((7,),), {}), (((3, 5),), {"axis": 0}), (((3, 5),), {"discont": 4.0}),
        (((8,),), {"period": 6}), (((3, 5),), {"period": 6, "axis": -1}),
        (((3, 5),), {"period": 5}), (((1,),), {}), (((0,),), {})),
        dtypes=tuple(d for d in NUMERIC if d not in UNSIGNED), domains=(_UNWRAP,),
        group="elementwise", tol=4),  # NumPy refuses an int period's negatives on unsigned
    _dm("np.put", _in_place(np.put), 1, _PUT_CASES),
    _dm("np.put traced", lambda a, i, v, **kw: _in_place(np.put)(a, i, v, **kw), 3, (
        (((3, 4), (5,), (5,)), {}), (((3, 4), (4,), (2,)), {"mode": "wrap"}),
        (((3, 4), (2, 2), ()), {"mode": "clip"})), domains=(ANY, IN_RANGE, ANY)),
    _dm("np.ix_", lambda x, i, j: x[np.ix_(i, j)], 3, (
        (((4, 5), (3,), (2,)), {}), (((4, 5), (0,), (2,)), {}), (((3, 3), (1,), (3,)), {})),
        domains=(ANY, IN_RANGE)),
    _dm("np.ix_ constant", lambda x, i, **kw: x[np.ix_(i, *kw["more"])], 2, (
        (((4, 5), (2,)), {"more": ([True, False, True, True, False],)}),
        (((3, 3, 4), (3,)), {"more": ([0, 2], np.array([3, 1, 1]))})),
        domains=(ANY, IN_RANGE)),
    OpRecord("np.partition", _partition_defined, 1, (_NONFINITE,), ALL, cases=_PARTITION_CASES,
             group="sort"),
    OpRecord("np.argpartition", _argpartition_defined, 1, (_NONFINITE,), ALL,
             cases=_PARTITION_CASES, group="sort"),
    _method(".partition", _partition_method, ALL, _c({"kth": 1}, {"kth": [0, 1], "axis": 0}),
            domains=(_NONFINITE,)),
]


# -- issue 39, group 3: quantile methods, nan quantiles, pad modes, histograms, norms -----

_QUANTILE_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                     "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
                     "normal_unbiased", "lower", "higher", "midpoint", "nearest")
_METHOD_CASES = tuple(
    (sh, {**kw, "method": m}) for m in _QUANTILE_METHODS for sh, kw in (
        (((7,),), {"q": 0.3}), (((3, 4),), {"q": [0.0, 0.25, 0.5, 0.9, 1.0], "axis": 1}),
        (((2, 3, 4),), {"q": 0.5, "axis": (0, 2), "keepdims": True})))
_NANQ_CASES = (
    (((7,),), {"q": 0.3}), (((3, 4),), {"q": [0.0, 0.25, 0.5, 0.9, 1.0], "axis": 1}),
    (((3, 4),), {"q": 0.5, "axis": 0, "keepdims": True}),
    (((2, 3, 4),), {"q": 0.75, "axis": (0, 2)}), (((1,),), {"q": 0.5}),
    (((3, 4),), {"q": [0.1, 0.6], "axis": 1, "method": "nearest"}),
    (((3, 4),), {"q": 0.4, "axis": 1, "method": "hazen"}),
    (((3, 4),), {"q": 0.4, "axis": 1, "method": "inverted_cdf"}),
    (((3, 4),), {"q": 0.5, "axis": 1, "method": "midpoint"}))


def _percent(cases):
    return tuple((sh, {**kw, "q": np.asarray(kw["q"]) * 100.0}) for sh, kw in cases)


def _pad_mode_cases():
    cases = []
    for kw in ({"mode": "linear_ramp"}, {"mode": "linear_ramp", "end_values": (2, 7)},
               {"mode": "median"}, {"mode": "median", "stat_length": 2},
               {"mode": "reflect", "reflect_type": "odd"},
               {"mode": "symmetric", "reflect_type": "odd"}):
        cases += [(((2, 3),), {"pad_width": ((1, 2), (2, 1)), **kw}),
                  (((5,),), {"pad_width": ((2, 7),), **kw}),
                  (((1, 3),), {"pad_width": ((1, 1), (0, 4)), **kw})]
    return tuple(cases) + ((((2, 3),), {"pad_width": ((1, 2), (2, 1)), "mode": "linear_ramp",
                                        "end_values": ((1, 2), (3, 4))}),)


_NORM_CASES = tuple(
    (sh, {"ord": o, **kw}) for o in (1, -1, np.inf, -np.inf) for sh, kw in (
        (((3, 4),), {}), (((2, 3, 4),), {"axis": (2, 0)}),
        (((2, 3, 4),), {"axis": (1, 2), "keepdims": True})))

ISSUE_39_GROUP_3 = [
    OpRecord("np.quantile methods", np.quantile, 1, (QUARTERS,), NUMERIC, group="sort",
             cases=_METHOD_CASES),
    OpRecord("np.percentile methods", np.percentile, 1, (_NONFINITE,), NUMERIC, group="sort",
             cases=_percent(_METHOD_CASES[::3])),
    OpRecord("np.nanquantile", np.nanquantile, 1, (_NONFINITE,), NUMERIC, group="sort",
             cases=_NANQ_CASES),
    OpRecord("np.nanpercentile", np.nanpercentile, 1, (_NONFINITE,), NUMERIC, group="sort",
             cases=_percent(_NANQ_CASES)),
    _dm("np.pad ramp median odd", np.pad, 1, _pad_mode_cases(),
        dtypes=tuple(d for d in NUMERIC if d not in UNSIGNED)),
    _dm("np.histogram weights", lambda a, w, **kw: np.histogram(a, weights=w, **kw), 2, (
        (((20,), (20,)), {"bins": 4}), (((3, 4), (3, 4)), {"bins": 6, "range": (-1, 2)}),
        (((20,), (20,)), {"bins": list(_EDGES)}), (((0,), (0,)), {"bins": 3})),
        dtypes=NUMERIC, domains=(QUARTERS, _WEIGHTS), group="reduction", tol=5),
    # float32 weights' total is NumPy's float32 sum, which rounds where the explorer's (in
    # float64) does not, and the density is float64: weights of the other types here.
    _dm("np.histogram weights density", lambda a, w, **kw: np.histogram(a, weights=w, **kw), 2,
        ((((20,), (20,)), {"bins": 4, "density": True}),
         (((20,), (20,)), {"bins": list(_EDGES), "density": True})),
        dtypes=(F64, I32, I64), domains=(QUARTERS, _WEIGHTS), group="reduction", tol=5),
    _dm("np.histogram2d", np.histogram2d, 2, (
        (((20,), (20,)), {}), (((20,), (20,)), {"bins": (3, 4)}),
        (((20,), (20,)), {"bins": [list(_EDGES), [-1, 0, 1]], "density": True}),
        (((20,), (20,)), {"bins": 3, "range": [[-1, 1], [0, 2]]}), (((0,), (0,)), {"bins": 2})),
        dtypes=NUMERIC, domains=(QUARTERS,), group="reduction", tol=5),
    _dm("np.histogram2d weights", lambda x, y, w, **kw: np.histogram2d(x, y, weights=w, **kw),
        3, ((((20,), (20,), (20,)), {"bins": 3}),
            (((20,), (20,), (20,)), {"bins": (2, 5), "density": True})),
        dtypes=NUMERIC, domains=(QUARTERS, QUARTERS, _WEIGHTS), group="reduction", tol=5),
    _dm("np.norm matrix", np.linalg.norm, 1, _NORM_CASES, domains=(_NONFINITE,),
        group="reduction", tol=5),
]


# -- np.linalg's library calls (the generators and what is compared: linalg_records.py) ----

_LAPACK_TYPES = (F32, F64, I64)  # integers are float64 in np.linalg, as NumPy computes them


def _rec(name, fn, arity, cases, domains, dtypes=_LAPACK_TYPES, tol=1.0):
    return OpRecord(name, fn, arity, domains, dtypes, cases=cases, group="library", tol=tol)


_SQUARE = (((4, 4),), ((2, 3, 3),), ((1, 1),), ((2, 1, 5, 5),))

LINALG = [
    _rec("np.linalg.solve", np.linalg.solve, 2, (
        (((4, 4), (4,)), {}), (((2, 3, 3), (2, 3, 2)), {}), (((4, 4), (4, 3)), {}),
        (((2, 3, 3), (3,)), {}), (((1, 1), (1,)), {}), (((3, 3), (2, 3, 1)), {})),
        (WELL, ANY)),
    _rec("np.linalg.solve near-singular", np.linalg.solve, 2, (
        (((4, 4), (4,)), {}), (((2, 3, 3), (2, 3, 2)), {})), (NEAR_SINGULAR, ANY),
        dtypes=(F32, F64), tol=100),
    _rec("np.linalg.inv", np.linalg.inv, 1, tuple((s, {}) for s in _SQUARE), (WELL,)),
    _rec("np.linalg.inv identity", np.linalg.inv, 1, (
        (((3, 3),), {}), (((2, 1, 1),), {})), (IDENTITY,)),
    _rec("np.linalg.cholesky", np.linalg.cholesky, 1, tuple((s, {}) for s in _SQUARE),
         (SPD_UPPER_JUNK,), tol=10),
    _rec("np.linalg.cholesky upper", np.linalg.cholesky, 1, (
        (((4, 4),), {"upper": True}), (((2, 3, 3),), {"upper": True})), (SPD_LOWER_JUNK,),
        tol=10),
    _rec("np.linalg.qr", qr_defined, 1, (
        (((5, 3),), {}), (((3, 5),), {}), (((2, 4, 4),), {}), (((1, 1),), {}),
        (((4, 3),), {"mode": "r"})), (GENERAL,), tol=10),
    _rec("np.linalg.eigh", eigh_defined, 1, tuple((s, {}) for s in _SQUARE),
         (SPD_UPPER_JUNK,), tol=10),
    _rec("np.linalg.eigh upper", eigh_defined, 1, (
        (((4, 4),), {"UPLO": "U"}), (((2, 3, 3),), {"UPLO": "U"})), (SPD_LOWER_JUNK,),
        tol=10),
    _rec("np.linalg.eigh identity", eigh_defined, 1, (
        (((3, 3),), {"vectors": False}), (((2, 2, 2),), {"vectors": False})), (IDENTITY,)),
    _rec("np.linalg.eigvalsh", np.linalg.eigvalsh, 1, tuple((s, {}) for s in _SQUARE) + (
        (((4, 4),), {"UPLO": "u"}),), (SPD,), tol=10),
    _rec("np.linalg.svd", svd_defined, 1, (
        (((5, 3),), {}), (((3, 5),), {"full_matrices": False}), (((2, 4, 4),), {}),
        (((1, 1),), {}), (((2, 3, 2),), {"full_matrices": False})), (GENERAL,), tol=10),
    _rec("np.linalg.svd values", np.linalg.svd, 1, (
        (((5, 3),), {"compute_uv": False}), (((2, 3, 4),), {"compute_uv": False})),
        (GENERAL,), tol=10),
    _rec("np.linalg.svdvals", np.linalg.svdvals, 1, (
        (((5, 3),), {}), (((2, 3, 4),), {})), (GENERAL,), tol=10),
    _rec("np.linalg.det", np.linalg.det, 1, tuple((s, {}) for s in _SQUARE), (WELL,), tol=10),
    _rec("np.linalg.det singular", np.linalg.det, 1, (
        (((3, 3),), {}),), (lambda rng, shape, dtype: np.ones(shape, dtype),)),
    _rec("np.linalg.slogdet", np.linalg.slogdet, 1, tuple((s, {}) for s in _SQUARE),
         (GENERAL,), tol=10),
    _rec("np.linalg.lstsq", np.linalg.lstsq, 2, (
        (((6, 3), (6,)), {}), (((6, 3), (6, 2)), {}), (((3, 5), (3,)), {}),
        (((4, 4), (4, 1)), {"rcond": 1e-6}), (((1, 1), (1,)), {})), (GENERAL, ANY), tol=10),
    _rec("np.linalg.pinv", np.linalg.pinv, 1, (
        (((4, 3),), {}), (((2, 3, 5),), {}), (((1, 1),), {}), (((3, 3),), {"rcond": 1e-3}),
        (((4, 3),), {"rtol": None})), (GENERAL,), dtypes=(F32, F64), tol=20),
    _rec("np.linalg.norm 2 -2 nuc", np.linalg.norm, 1, (
        (((4, 3),), {"ord": 2}), (((4, 3),), {"ord": -2}), (((4, 3),), {"ord": "nuc"}),
        (((2, 3, 4),), {"ord": 2, "axis": (2, 0)}),
        (((2, 3, 4),), {"ord": "nuc", "axis": (1, 2), "keepdims": True})), (GENERAL,),
        tol=10),
]

# `make test` runs each record's first case on the interpreter; every other case, type and
# compile is `make test-deep`'s (a program with a library call compiles in a second or two;
# tests/test_linalg.py compiles one in `make test`, and every case under test-deep).
for _r in LINALG:
    _r.meta["normal_cases"] = 1
    _r.meta["compiled_deep"] = True


# Issue 39's records keep `make test` short (its added time under half a minute on one core):
# there, each runs its first two cases on the interpreter, and only these few compile on the
# cpu and the cuda simulator (a while loop, a sort, a gather by count, a product); every other
# case, type and backend is `make test-deep`'s.
_ISSUE_39_COMPILED = {"np.gcd", "np.partition", "np.nanquantile", "np.histogram2d"}
for _r in ISSUE_39 + ISSUE_39_GROUP_3:
    _r.meta["normal_cases"] = 2
    _r.meta["compiled_deep"] = _r.name not in _ISSUE_39_COMPILED


RECORDS: list[OpRecord] = (ELEMENTWISE + SELECTION + REDUCTIONS + PRODUCTS + DATA_MOVEMENT
                           + CREATION + NOT_COMPILABLE + OPERATORS + INPLACE + SETITEM + METHODS
                           + COMPOSED_SHAPES + COMPOSED_ELEMENTWISE + COMPOSED_FUNCTIONS
                           + COMPOSED_STATS + GATHER_SCATTER + COMPOSED_MORE + SCANS
                           + SORTS + ISSUE_39 + ISSUE_39_GROUP_3 + LINALG)
BY_NAME = {r.name: r for r in RECORDS}
assert len(BY_NAME) == len(RECORDS), "record names must be unique"
