"""`exprs.scalar_expr` against the op table: every ELEMENTWISE and COMPARE_SELECT row, for every
element type its kinds allow, on random values and edge cases (zeros of both signs, infinities,
NaN, integer limits, division by zero, shift amounts past the width, floats at the edge of
float -> integer saturation), compiled by Numba with the flags the CPU backend uses.

The reference is each row's `impl`. Integer and pred results must be equal; float results
within the case's ulp bound, with NaN and Inf in the same places; and the expression's type in
Numba must be the instruction's element type exactly (Numba widens small integers to int64,
and a stored value would be cast back silently, so the type is read from Numba's typemap).

Compiling is what costs here, so every case of one element type runs in ONE kernel: one loop
that computes every case's element into its own output, then one loop per reducer.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numba
import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.codegen import exprs
from xla_explorer.codegen.cpu import FASTMATH
from xla_explorer.ir.module import Instruction, Metadata
from xla_explorer.ir.ops import COMPARISONS, OPS, Group, op
from xla_explorer.ir.shape import Shape

# pred, signed and unsigned integers of every width, floats. A float16 kernel takes and
# writes its arrays as bits (uint16), loaded with f16_load and stored with f16_bits, as the
# CPU backend's kernels do.
DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                                np.float64)]
F16 = np.dtype(np.float16)
N_RANDOM = 600

# Float tolerance in ulps per op. Everything not listed is correctly rounded in both NumPy and
# Numba (or exact): 0 ulps. The transcendental functions are NumPy's SIMD (SVML) ones against
# libm or fastmath.py's polynomials. rsqrt: 1 / sqrt(x) rounds twice; under fastmath's `arcp`
# LLVM made a float32 one an estimate plus one Newton step (up to 3 ulp), the bound kept here.
ULPS = {"rsqrt": 3,
    "exponential": 4, "exponential-minus-one": 4, "log": 4, "log-plus-one": 4, "cbrt": 4,
    "sine": 4, "cosine": 4, "tan": 4, "tanh": 4, "logistic": 6, "power": 4, "atan2": 4,
}

_REDUCERS = ("add", "multiply", "maximum", "minimum", "and", "or", "xor")


# -- the cases --------------------------------------------------------------------------------


@dataclass
class Case:
    """One instruction on named input arrays, judged against `reference` (default: impl)."""

    name: str
    inst: Instruction
    inputs: tuple[str, ...]
    reference: Callable | None = None
    ulps: int = 0
    reducer: bool = False  # a reduce loop of reducer_update over inputs[0], not an element op

    def expected(self, arrays):
        args = [arrays[n] for n in self.inputs]
        if self.reducer:
            ufunc = _UFUNCS[self.inst.opcode]
            with np.errstate(all="ignore"):
                return np.asarray(ufunc.reduce(args[0])).astype(self.inst.dtype).reshape(1)
        if self.reference is not None:
            return self.reference(args)
        return op(self.inst.opcode).impl(self.inst, args, None)


_UFUNCS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
           "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor}


def instruction(opcode, result_dtype, operand_dtypes, attrs=()):
    params = tuple(Instruction(f"p{k}", "parameter", Shape(d, (1,)), parameter_number=k)
                   for k, d in enumerate(operand_dtypes))
    return Instruction(f"{opcode}.1", opcode, Shape(result_dtype, (1,)), params, tuple(attrs),
                       Metadata(op_name=opcode))


def _result_dtype(row, dtype):
    return {"same": dtype, "pred": np.dtype(np.bool_), "operand1": dtype}[row.result]


def _power_negative_reference(args):
    # np.power refuses negative integer exponents; XLA gives 1 for a base of 1, else 0.
    x, y = args
    with np.errstate(all="ignore"):
        pos = np.power(x, np.where(y < 0, 0, y))
    return np.where(y < 0, (x == 1).astype(x.dtype), pos).astype(x.dtype)


def cases_for(dtype: np.dtype) -> list[Case]:
    out = []
    kind = dtype.kind
    for name, row in OPS.items():
        if row.group not in (Group.ELEMENTWISE, Group.COMPARE_SELECT) or kind not in row.kinds:
            continue
        ulps = ULPS.get(name, 0) if kind == "f" else 0
        if name == "convert":
            for to in DTYPES:
                out.append(Case(f"convert-to-{to.name}", instruction(name, to, [dtype]), ("x",)))
        elif name == "compare":
            for direction in COMPARISONS:
                inst = instruction(name, np.bool_, [dtype, dtype], [("direction", direction)])
                out.append(Case(f"compare-{direction}", inst, ("x", "y")))
        elif name == "select":
            inst = instruction(name, dtype, [np.bool_, dtype, dtype])
            out.append(Case(name, inst, ("p", "x", "y")))
        else:
            inst = instruction(name, _result_dtype(row, dtype), [dtype] * row.arity)
            inputs = ("x", "y", "z")[:row.arity]
            if kind in "iu" and name.startswith("shift"):
                inputs = ("x", "s")  # amounts around the width, in and out of range
            if kind == "u" and name == "power":
                inputs = ("x", "e")
            if kind == "i" and name == "power":
                inputs = ("x", "e")  # non-negative exponents: np.power raises on negative ones
                out.append(Case("power-negative-exponent", inst, ("x", "y"),
                                _power_negative_reference))
            out.append(Case(name, inst, inputs, ulps=ulps))
    for name in _REDUCERS:
        if kind in op(name).kinds:
            inst = instruction(name, dtype, [dtype, dtype])
            out.append(Case(f"reduce-{name}", inst, ("r",), reducer=True))
            if name in ("maximum", "minimum") and kind == "f":  # NaN propagates
                out.append(Case(f"reduce-{name}-nan", inst, ("x",), reducer=True))
    return out


CASES = {dt.name: cases_for(dt) for dt in DTYPES}


# -- the inputs -------------------------------------------------------------------------------


def _edges(dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return np.array([False, True])
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        bits = info.bits
        vals = [0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, bits - 1, bits, bits + 1,
                info.min, info.min + 1, info.max, info.max - 1]
        if bits == 64:  # to float32 in one rounding; through float64 it would round to 2**62
            vals += [2 ** 62 + 2 ** 38 + 1, -(2 ** 62 + 2 ** 38 + 1)]
        return np.unique(np.clip(vals, info.min, info.max).astype(dtype))
    if dtype.kind == "u":  # around 0, the width, the middle (the signed limits) and the top
        info = np.iinfo(dtype)
        bits, top, mid = info.bits, int(info.max), int(info.max) // 2
        vals = [0, 1, 2, 3, 7, 100, 200, bits - 1, bits, bits + 1, mid, mid + 1, mid + 2,
                top, top - 1, top - 2]
        if bits == 64:  # to float32 and float64 in one rounding
            vals += [2 ** 63 + 2 ** 39 + 1, 2 ** 64 - 2 ** 11 + 1, 2 ** 64 - 2 ** 10]
        return np.unique(np.array([v for v in vals if v <= top], dtype=dtype))
    f = dtype.type
    big = [2.0 ** 31, -2.0 ** 31, 2.0 ** 63, -2.0 ** 63, 127.9, -128.5, 128.0, -129.0, 1e10,
           np.nextafter(f(2.0 ** 31), f(0)), np.nextafter(f(2.0 ** 63), f(0)),
           2.0 ** 24 + 1, 2.0 ** 53 + 1]
    # where exp overflows or goes subnormal (float32, float64), small and near-1 arguments
    transcendental = [88.72, 88.73, -87.34, -103.97, 709.78, 709.79, -708.4, -745.1, 1e-5,
                      -1e-7, 0.999999, 1.000001, 9.0, -20.0]
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, -3.0,
            np.nextafter(f(0.5), f(0)), 100.0, -100.0, 1e30, -1e30, np.finfo(dtype).max,
            -np.finfo(dtype).max, np.finfo(dtype).tiny, np.finfo(dtype).smallest_subnormal,
            np.inf, -np.inf, np.nan] + big + transcendental
    return np.array(vals, dtype=np.float64).astype(dtype)


def _random(dtype: np.dtype, rng, n: int) -> np.ndarray:
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        wide = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        small = rng.integers(-100 if dtype.kind == "i" else 0, 101, n).astype(dtype)
        return np.where(rng.random(n) < 0.5, wide, small)
    normal = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 4, n)
    halves = rng.integers(-40, 41, n) / 2.0  # ties for the roundings
    return np.where(rng.random(n) < 0.8, normal, halves).astype(dtype)


def inputs_for(dtype: np.dtype) -> dict[str, np.ndarray]:
    """x and y hold every pair of edge values, then random values; z, p, s, e, r as named."""
    rng = np.random.default_rng(list(DTYPES).index(dtype))
    edges = _edges(dtype)
    k = len(edges)
    n = k * k + N_RANDOM
    arrays = {
        "x": np.concatenate([np.repeat(edges, k), _random(dtype, rng, N_RANDOM)]),
        "y": np.concatenate([np.tile(edges, k), _random(dtype, rng, N_RANDOM)]),
        "z": np.concatenate([rng.permutation(np.repeat(edges, k)), _random(dtype, rng, N_RANDOM)]),
        "p": rng.random(n) < 0.5,
    }
    if dtype.kind in "iu":
        bits = np.iinfo(dtype).bits
        info = np.iinfo(dtype)
        s = rng.integers(-3 if dtype.kind == "i" else 0, bits + 4, n).astype(dtype)
        s[:8] = np.array([info.min, info.max, info.max - 1 if dtype.kind == "u" else -1, 0, 1,
                          bits - 1, bits, bits + 1], dtype=dtype)
        arrays["s"] = s
        arrays["e"] = rng.integers(0, 70, n).astype(dtype)
        arrays["e"][:5] = [0, 1, bits - 1, bits, min(info.max, 100)]
        # products wrap, both sides alike
        arrays["r"] = rng.integers(-3 if dtype.kind == "i" else 0, 4, n).astype(dtype)
    elif dtype.kind == "f":
        # powers of two and halves: sums and products are exact in any order
        arrays["r"] = rng.choice([0.5, 1.0, 2.0, -1.0, -0.5, -2.0, 1.0, 1.0], n).astype(dtype)
    else:
        arrays["r"] = rng.random(n) < 0.9
    for name in ("s", "e"):
        arrays.setdefault(name, arrays["x"])
    return {name: a.astype(dtype) if name != "p" else a for name, a in arrays.items()}


# -- one kernel per element type --------------------------------------------------------------

_ARRAYS = ("x", "y", "z", "p", "s", "e", "r")


def kernel_source(dtype: np.dtype, cases: list[Case]) -> str:
    outs = [f"out{k}" for k in range(len(cases))]
    lines = [exprs.PRELUDE + "from numba import njit", "",
             f"@njit(fastmath={{{', '.join(map(repr, sorted(FASTMATH)))}}}, error_model='numpy')",
             f"def kernel_{dtype.name}({', '.join(_ARRAYS)}, {', '.join(outs)}):",
             "    for i in range(x.shape[0]):"]
    def load(a, i):
        return f"f16_load({a}[{i}])" if dtype == F16 and a != "p" else f"{a}[{i}]"

    def store(value, case):
        return f"f16_bits({value})" if case.inst.dtype == F16 else value

    lines += [f"        {a}_i = {load(a, 'i')}" for a in _ARRAYS]
    for k, case in enumerate(cases):
        if case.reducer:
            continue
        expr = exprs.scalar_expr(case.inst, [f"{a}_i" for a in case.inputs])
        lines += [f"        # {case.name}", f"        r{k} = {expr}",
                  f"        out{k}[i] = {store(f'r{k}', case)}"]
    for k, case in enumerate(cases):
        if not case.reducer:
            continue
        (a,) = case.inputs
        update = exprs.reducer_update(case.inst.opcode, f"acc{k}", load(a, "i"), dtype)
        lines += [f"    # {case.name}", f"    acc{k} = {load(a, '0')}",
                  f"    for i in range(1, {a}.shape[0]):", f"        acc{k} = {update}",
                  f"    out{k}[0] = {store(f'acc{k}', case)}"]
    return "\n".join(lines) + "\n"


_COMPILED: dict[str, tuple[dict, list, dict]] = {}


def compiled(dtype_name: str, tmp_path_factory):
    """Run the element type's kernel once: (inputs, outputs, Numba type of each case)."""
    if dtype_name not in _COMPILED:
        dtype = np.dtype(dtype_name)
        cases = CASES[dtype_name]
        source = kernel_source(dtype, cases)
        path = tmp_path_factory.mktemp("kernels") / f"exprs_kernel_{dtype_name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kernel = getattr(module, f"kernel_{dtype_name}")
        arrays = inputs_for(dtype)
        n = len(arrays["x"])
        outs = [np.zeros(1 if c.reducer else n, dtype=c.inst.dtype) for c in cases]

        def bits(a):
            return a.view(np.uint16) if a.dtype == F16 else a
        kernel(*(bits(arrays[a]) for a in _ARRAYS), *(bits(o) for o in outs))
        typemap = kernel.overloads[kernel.signatures[0]].type_annotation.typemap
        types = {}
        for var, ty in typemap.items():
            m = re.fullmatch(r"(?:r|acc)(\d+)(?:\.\d+)?", var)
            if m:
                types.setdefault(int(m.group(1)), set()).add(str(ty))
        _COMPILED[dtype_name] = (arrays, outs, types)
    return _COMPILED[dtype_name]


def _ordered(a: np.ndarray) -> np.ndarray:
    """Floats as integers in the same order, one apart per ulp (+0 and -0 both 0)."""
    signed = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = a.view(signed).astype(np.int64)
    return np.where(i < 0, -(i & np.int64(2 ** (8 * a.dtype.itemsize - 1) - 1)), i)


def assert_close(got, want, ulps, what):
    assert got.dtype == want.dtype, f"{what}: result type {got.dtype}, expected {want.dtype}"
    if got.dtype.kind != "f":
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (f"{what}: {bad.size} differ, first at {bad[:5]}: "
                               f"got {got[bad[:5]]}, want {want[bad[:5]]}")
        return
    nan = np.isnan(want)
    bad = np.flatnonzero(np.isnan(got) != nan)
    assert bad.size == 0, (f"{what}: NaN at different places {bad[:5]}: "
                           f"got {got[bad[:5]]}, want {want[bad[:5]]}")
    g, w = got[~nan], want[~nan]
    bad = np.flatnonzero(np.isinf(g) != np.isinf(w))
    assert bad.size == 0, f"{what}: Inf at different places: got {g[bad[:5]]}, want {w[bad[:5]]}"
    dist = np.abs(_ordered(g) - _ordered(w))
    tiny = np.finfo(got.dtype).tiny  # below the normal range, ulps count subnormal steps
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
        near_zero = (ulps > 0) & (np.abs(g - w) <= tiny)
    bad = np.flatnonzero((dist > ulps) & ~near_zero)
    assert bad.size == 0, (f"{what}: {bad.size} beyond {ulps} ulp (max {dist.max()}): "
                           f"got {g[bad[:5]]!r}, want {w[bad[:5]]!r}")


# Every expression on the types of `make test` (between them they take every row: a kernel a
# type, compiled once); the other types' kernels, float16's the slowest to compile, in
# `make test-deep`.
TEST_TYPES = ("float32", "int32", "uint8", "bool")


@pytest.mark.parametrize("dtype_name,case", [
    pytest.param(dt, c, id=f"{dt}-{c.name}",
                 marks=() if dt in TEST_TYPES else pytest.mark.deep)
    for dt, cs in CASES.items() for c in cs])
def test_scalar_expr_matches_impl(dtype_name, case, tmp_path_factory):
    arrays, outs, types = compiled(dtype_name, tmp_path_factory)
    k = CASES[dtype_name].index(case)
    # a float16 value is computed in a float32
    want_type = "float32" if case.inst.dtype == F16 else str(numba.from_dtype(case.inst.dtype))
    assert types[k] == {want_type}, f"Numba types the expression as {types[k]}"
    assert_close(outs[k], case.expected(arrays), case.ulps, f"{case.name} on {dtype_name}")


def test_the_types_of_make_test_take_every_expression():
    every = {c.name for cs in CASES.values() for c in cs}
    assert every == {c.name for dt in TEST_TYPES for c in CASES[dt]}


def test_every_row_is_covered():
    """Every element-wise and compare/select row has an expression for each kind it takes."""
    rows = [n for n, r in OPS.items() if r.group in (Group.ELEMENTWISE, Group.COMPARE_SELECT)]
    for name in rows:
        for kind in OPS[name].kinds:
            assert any(c.inst.opcode == name for dt in DTYPES if dt.kind == kind
                       for c in CASES[dt.name]), (name, kind)


def test_every_expression_is_the_op_tables(monkeypatch):
    """An op's scalar expression is written in its op-table row and nowhere else: mark every
    row's expressions and every expression rendered is marked, and exprs.py holds no template
    of its own but the reducer steps (the accumulate expressions that differ from the op's)."""
    with_expr = {n for n, r in OPS.items() if r.scalar}
    assert with_expr == {n for n, r in OPS.items()
                         if r.group in (Group.ELEMENTWISE, Group.COMPARE_SELECT)}
    for name in with_expr:
        marked = {k: f"marked({t})" for k, t in OPS[name].scalar.items()}
        monkeypatch.setitem(OPS, name, dataclasses.replace(OPS[name], scalar=marked))
    for dtype_name, cases in CASES.items():
        dtype = np.dtype(dtype_name)
        for case in cases:
            opcode = case.inst.opcode
            if case.reducer:
                if opcode in ("maximum", "minimum") and dtype.kind == "f":
                    continue  # exprs' own reducer step
                text = exprs.reducer_update(opcode, "acc", "x", dtype)
            elif opcode == "convert" and case.inst.dtype == dtype:
                continue  # a convert to its operand's own type is the operand
            else:
                text = exprs.scalar_expr(case.inst, [f"a{k}" for k in range(len(case.inputs))])
            assert text.startswith("marked("), (dtype_name, case.name, text)
    tree = ast.parse(Path(exprs.__file__).read_text())
    steps = next(n.value for n in tree.body if isinstance(n, ast.AnnAssign | ast.Assign)
                 and "_REDUCER_STEPS" in ast.unparse(n.targets[0] if isinstance(n, ast.Assign)
                                                     else n.target))
    allowed = {id(n) for n in ast.walk(steps)}
    templates = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                 and isinstance(n.value, str) and "{0}" in n.value and id(n) not in allowed]
    assert templates == [], "scalar expressions belong in the op table (ir/ops.py)"


# -- the rest of the API ----------------------------------------------------------------------


def test_literals_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    values = {}
    for dt in (np.float32, np.float64):
        v = np.concatenate([rng.standard_normal(40) * 10.0 ** rng.integers(-40, 38, 40),
                            [0.1, 1 / 3, -0.0, np.inf, -np.inf, np.finfo(dt).max,
                             np.finfo(dt).tiny, np.finfo(dt).smallest_subnormal, 16777217.0]])
        values[dt] = v.astype(dt)
    ints = {np.int8: [-128, 127, 0], np.int32: [-2 ** 31, 2 ** 31 - 1],
            np.int64: [-2 ** 63, 2 ** 63 - 1, -1]}
    lines = [exprs.PRELUDE + "from numba import njit", "", "@njit",
             "def literals(f32, f64, i8, i32, i64, b):"]
    for name, dt, vals in [("f32", np.float32, values[np.float32]),
                           ("f64", np.float64, values[np.float64]),
                           *[(n, d, ints[d]) for n, d in [("i8", np.int8), ("i32", np.int32),
                                                          ("i64", np.int64)]]]:
        for k, v in enumerate(vals):
            lines.append(f"    {name}[{k}] = {exprs.literal(v, dt)}")
    lines += [f"    b[0] = {exprs.literal(True, np.bool_)}",
              f"    b[1] = {exprs.literal(np.False_, np.bool_)}",
              f"    return {exprs.zero_like(np.float32)}, {exprs.literal(np.nan, np.float64)}"]
    path = tmp_path / "literals_kernel.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    got = {np.float32: np.zeros(len(values[np.float32]), np.float32),
           np.float64: np.zeros(len(values[np.float64]), np.float64)}
    gi = {d: np.zeros(len(v), d) for d, v in ints.items()}
    b = np.zeros(2, np.bool_)
    zero, nan = module.literals(got[np.float32], got[np.float64], gi[np.int8], gi[np.int32],
                                gi[np.int64], b)
    for dt in (np.float32, np.float64):
        assert got[dt].tobytes() == values[dt].tobytes()  # bit for bit, -0.0 included
    for d, v in ints.items():
        np.testing.assert_array_equal(gi[d], np.array(v, d))
    assert b.tolist() == [True, False] and zero == 0 and np.isnan(nan)
    sig = module.literals.overloads[module.literals.signatures[0]].signature
    assert str(sig.return_type) == "Tuple(float32, float64)"
    assert exprs.literal(0.5, np.float32) == "np.float32(0.5)"
    assert exprs.literal(np.inf, np.float32) == "np.float32(np.inf)"
    assert exprs.literal(np.nan, np.float64) == "np.float64(np.nan)"
    assert exprs.literal(-3, np.int32) == "np.int32(-3)"
    assert exprs.literal(1, np.bool_) == "True"


def test_parsed_instructions():
    """Attributes as the parser gives them: direction of compare, declared type of convert."""
    text = """HloModule m

ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  lt = pred[4] compare(a, b), direction=LT
  c = s32[4] convert(a)
  s = f32[4] select(lt, a, b)
  ROOT t = (pred[4], s32[4], f32[4]) tuple(lt, c, s)
}
"""
    m = xe.parse_hlo(text)
    lt, c, s = m.entry.root.operands
    assert exprs.scalar_expr(lt, ["a", "b"]) == "(a < b)"
    assert exprs.scalar_expr(c, ["a"]) == "float_to_int(a, np.int32)"
    assert exprs.scalar_expr(s, ["p", "a", "b"]) == "(a if p else b)"
    # an operand that is itself an expression keeps its meaning
    neg = instruction("negate", np.int32, [np.int32])
    assert exprs.scalar_expr(neg, ["x + y"]) == "np.int32(-(x + y))"
    assert exprs.scalar_expr(neg, ["np.int32(3)"]) == "np.int32(-np.int32(3))"


def test_unsupported():
    with pytest.raises(xe.UnsupportedOpError, match="add") as err:
        exprs.scalar_expr(instruction("add", np.complex64, [np.complex64, np.complex64]), ["a", "b"])
    assert err.value.op == "add"
    with pytest.raises(xe.UnsupportedOpError, match="shift-left"):
        exprs.scalar_expr(instruction("shift-left", np.float32, [np.float32] * 2), ["a", "b"])
    with pytest.raises(xe.UnsupportedOpError, match="TOTALORDER"):
        inst = instruction("compare", np.bool_, [np.float32] * 2,
                           [("direction", "LT"), ("type", "TOTALORDER")])
        exprs.scalar_expr(inst, ["a", "b"])
    with pytest.raises(xe.UnsupportedOpError, match="reshape"):
        exprs.scalar_expr(instruction("reshape", np.float32, [np.float32]), ["a"])
    assert exprs.reducer_update("add", "acc", "x", np.float32) == "(acc + x)"
    assert exprs.reducer_update("maximum", "acc", "x", np.bool_) == "(acc | x)"
    assert exprs.reducer_update("subtract", "acc", "x", np.float32) is None
    assert exprs.reducer_update("and", "acc", "x", np.float32) is None
