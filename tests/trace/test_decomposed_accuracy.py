"""NumPy's float functions as the tracer lowers them (trace/numpy/elementwise.py; sinh, cosh,
exp2, log2, log10, arcsin, arccos, arctan, arcsinh, arccosh and arctanh are formulas of other
ops), on both backends: errors in ulps over each function's range, across its overflow and
underflow points, against the exact value and against NumPy; special values; and the
whole-number results NumPy gives exactly (exp2(k), log2(2**k), log10(10**k)).

The exact value comes from a wider type: float64 for float32, long double for float64 (x86's
64-bit mantissa; where long double is no wider than float64 the float64 checks against the
exact value are skipped). Each backend and dtype computes every function in one program, so
the cpu backend compiles one program per dtype.
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32, F64 = np.float32, np.float64
BACKENDS = ["interpreter", "cpu"]
UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos",
         "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
         "arctanh", "reciprocal", "square"]
BINARY = ["power", "arctan2"]
NAMES = UNARY + BINARY
WIDE = {F32: np.float64, F64: np.longdouble}
LONG_DOUBLE_IS_WIDER = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps

# Largest error against the exact value, in ulps of the exact value rounded to the dtype,
# for either backend: what this file's inputs and denser sweeps (2-6 million points per
# function) measure, rounded up. The comment gives NumPy's own largest error over this file's
# inputs, then ours. The interpreter computes each op with NumPy's own float32 function, so
# its float32 errors include NumPy's (its float32 exp, expm1, log, tan, arcsin are 2.2-3.1 ulp
# off); the cpu backend's exp, expm1, log, log1p, tanh are fastmath.py's, its other functions
# the C library's.
BOUND_EXACT = {
    # name          float32 float64      NumPy f32, f64; ours f32, f64
    "exp":          (2.5,   1.0),    # 2.2, 0.7; 2.2, 0.7
    "exp2":         (0.6,   1.0),    # 2.8, 0.8; 0.5, 0.8 (float32 computed in float64)
    "expm1":        (2.5,   1.0),    # 2.5, 0.5; 2.5, 1.0
    "log":          (4.0,   1.0),    # 3.0, 0.6; 3.0, 0.8 (NumPy's float32 log: 3.8 at worst)
    "log2":         (0.6,   2.5),    # 2.0, 0.5; 0.5, 2.2 (float32 computed in float64)
    "log10":        (0.6,   3.5),    # 3.2, 0.6; 0.5, 3.0 (float64: log(x) by a rounded 1/ln 10)
    "log1p":        (2.0,   1.0),    # 1.7, 0.6; 1.7, 0.8
    "sqrt":         (0.5,   0.5),    # correctly rounded
    "cbrt":         (2.0,   3.5),    # 1.9, 0.6; 1.9, 3.2 (cpu float64: the C library's cbrt)
    "sin":          (1.5,   1.0),    # 1.4, 0.5; 1.4, 0.5
    "cos":          (1.5,   1.0),    # 1.4, 0.5; 1.4, 0.5
    "tan":          (3.5,   1.0),    # 3.1, 0.6; 3.1, 0.6
    "arcsin":       (4.5,   2.0),    # 3.0, 0.8; 4.0, 1.7 (atan2(x, sqrt((1 - x)(1 + x))))
    "arccos":       (4.0,   2.0),    # 2.0, 0.8; 3.6, 1.5
    "arctan":       (3.0,   1.0),    # 1.9, 0.6; 2.8, 0.7 (atan2(x, 1))
    "sinh":         (3.0,   2.0),    # 1.4, 0.8; 2.8, 1.9
    "cosh":         (3.0,   2.0),    # 2.4, 0.8; 2.8, 1.8
    "tanh":         (1.5,   1.5),    # 1.4, 1.2; 1.4, 1.2
    "arcsinh":      (2.5,   2.0),    # 0.8, 0.7; 2.0, 1.5
    "arccosh":      (4.0,   3.5),    # 1.2, 0.7; 3.5, 3.1 (log1p(t + sqrt(t) sqrt(x + 1)), t = x-1)
    "arctanh":      (2.5,   1.5),    # 1.3, 0.6; 1.9, 1.4
    "reciprocal":   (0.5,   0.5),    # correctly rounded
    "square":       (0.5,   0.5),    # correctly rounded
    "power":        (1.5,   1.0),    # 1.0, 0.8; 1.0, 0.8
    "arctan2":      (3.5,   1.0),    # 2.9, 0.7; 2.9, 0.7
}
# Largest distance in representable values from NumPy's result, for either backend.
BOUND_NUMPY = {
    "exp": (2, 1), "exp2": (3, 1), "expm1": (3, 1), "log": (4, 1), "log2": (2, 2),
    "log10": (3, 3), "log1p": (2, 1), "sqrt": (0, 0), "cbrt": (2, 3), "sin": (1, 1),
    "cos": (1, 1), "tan": (3, 1), "arcsin": (4, 2), "arccos": (4, 2), "arctan": (3, 1),
    "sinh": (3, 2), "cosh": (4, 2), "tanh": (2, 1), "arcsinh": (2, 2), "arccosh": (4, 3),
    "arctanh": (2, 1), "reciprocal": (0, 0), "square": (0, 0), "power": (1, 1),
    "arctan2": (3, 1),
}


# -- inputs ---------------------------------------------------------------------------------

# Where results overflow or underflow, per dtype: sinh and cosh overflow at +-89.416 /
# +-710.476, exp2 at 128 / 1024 and reaches 0 at -150 / -1075.
EDGES = {F32: [89.41598629223294, -89.41598629223294, 88.7228, 128.0, -126.0, -150.0],
         F64: [710.4758600739439, -710.4758600739439, 709.7827, 1024.0, -1022.0, -1075.0]}


def specials(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    den, tiny, big = float(info.smallest_subnormal), float(info.tiny), float(info.max)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, den,
                     -den, tiny, -tiny, big, -big, float(info.eps), -float(info.eps)], dtype)


def unary_inputs(dtype, n: int = 20_000) -> np.ndarray:
    """Every function's range: linear across the overflow and underflow points of exp2,
    sinh and cosh, dense across each such point, near 0, near +-1 from both sides (the arc
    functions), log-spaced magnitudes of both signs from the smallest denormal to the
    largest float, then the special values (last, see specials)."""
    rng = np.random.default_rng(0)
    info = np.finfo(dtype)
    wide = 160.0 if dtype == F32 else 1100.0
    mags = np.exp(rng.uniform(np.log(float(info.smallest_subnormal)), np.log(float(info.max)),
                              2 * n))
    near_one = np.exp(rng.uniform(np.log(float(info.epsneg)), 0.0, n))  # 1 - x in (eps, 1)
    parts = [rng.uniform(-wide, wide, 2 * n), rng.uniform(-3, 3, n), rng.uniform(0.5, 2.0, n),
             mags, -mags[:n], 1 - near_one, near_one - 1, 1 + near_one[: n // 2]]
    parts += [e + rng.uniform(-0.75, 0.75, n // 4) for e in EDGES[dtype]]
    parts.append(np.arange(-20, 21) / 4)  # whole and quarter numbers
    # a few ulps around powers of 2 and 10, where log2 and log10 give (nearly) whole numbers
    powers = np.concatenate([2.0 ** np.arange(info.minexp, info.maxexp, 5),
                             2.0 ** np.arange(-8, 9), 10.0 ** np.arange(0, 23)]).astype(dtype)
    steps = np.arange(-8, 9) * float(info.eps) / 2
    parts.append((powers[:, None] * (1 + steps[None, :]).astype(dtype)).ravel())
    x = np.concatenate(parts).astype(dtype)
    return np.concatenate([x, specials(dtype)])


def binary_inputs(dtype, n: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """Pairs for power (positive bases over the whole range, exponents that keep most results
    finite, then overflow and underflow) and arctan2 (both signs, every magnitude), then
    every pair of special values."""
    rng = np.random.default_rng(1)
    info = np.finfo(dtype)
    top = np.log(float(info.max))
    base = np.exp(rng.uniform(-top, top, n))
    exponent = rng.uniform(-1, 1, n) * top / np.maximum(np.abs(np.log(base)), 1.0) * 1.2
    small = rng.uniform(0, 4, n), rng.uniform(-30, 30, n)
    s = specials(dtype)
    sx, sy = (a.ravel() for a in np.meshgrid(s, s, indexing="ij"))
    p = np.concatenate([base, small[0], rng.standard_normal(n) * 1e3, sx]).astype(dtype)
    q = np.concatenate([exponent, small[1], rng.standard_normal(n), sy]).astype(dtype)
    return p, q


def every_function(x, p, q):
    out = {name: getattr(np, name)(x) for name in UNARY}
    out.update({name: getattr(np, name)(p, q) for name in BINARY})
    return out


# -- ulps -----------------------------------------------------------------------------------


def _ordered(a: np.ndarray) -> np.ndarray:
    """Bits as integers that count representable values, monotone across zero (and inf one
    past the largest float)."""
    ints = np.int32 if a.dtype == F32 else np.int64
    b = a.view(ints).astype(np.int64)
    return np.where(b < 0, np.int64(np.iinfo(ints).min) - b, b)


def ulps_exact(got: np.ndarray, exact: np.ndarray) -> float:
    """Largest |got - exact| in ulps of exact rounded to got's dtype; where either is
    infinite, the distance in representable values (inf is one past the largest float).
    NaN must meet NaN."""
    with np.errstate(over="ignore"):
        rounded = exact.astype(got.dtype)
    nan = np.isnan(got)
    assert np.array_equal(nan, np.isnan(rounded)), "NaN where the exact value has none, or not"
    finite = np.isfinite(got) & np.isfinite(rounded)
    wide = exact.dtype.type
    err = np.abs(got[finite].astype(wide) - exact[finite]) / np.spacing(
        np.abs(rounded[finite])).astype(wide)
    inf = ~finite & ~nan
    worst = float(err.max()) if err.size else 0.0
    if inf.any():
        worst = max(worst, float(np.abs(_ordered(got[inf]) - _ordered(rounded[inf])).max()))
    return worst


def ulps_numpy(got: np.ndarray, want: np.ndarray) -> int:
    """Largest distance in representable values from NumPy's result; NaN must meet NaN."""
    assert np.array_equal(np.isnan(got), np.isnan(want)), "NaN where NumPy has none, or not"
    ok = ~np.isnan(want)
    return int(np.abs(_ordered(got[ok]) - _ordered(want[ok])).max())


# -- the programs, once per dtype and backend -------------------------------------------------


# float64 on every backend is a second copy of the sweep (one program of every function,
# about 7 s to compile on the CPU): `make test-deep`.
@pytest.fixture(scope="module", params=[
    pytest.param((d, b), marks=[pytest.mark.deep] if d == F64 else [])
    for d in (F32, F64) for b in BACKENDS],
                ids=[f"{d}-{b}" for d in ("f32", "f64") for b in BACKENDS])
def computed(request):
    """(dtype, backend, inputs, {name: result}, {name: NumPy's result}) over this file's
    inputs."""
    dtype, backend = request.param
    x = unary_inputs(dtype)
    p, q = binary_inputs(dtype)
    with np.errstate(all="ignore"):
        want = every_function(x, p, q)
    got = xe.jit(every_function, backend=backend)(x, p, q)
    return dtype, backend, (x, p, q), got, want


def _exact(name, dtype, x, p, q):
    f = getattr(np, name)
    w = WIDE[dtype]
    with np.errstate(all="ignore"):
        return f(p.astype(w), q.astype(w)) if name in BINARY else f(x.astype(w))


@pytest.mark.parametrize("name", NAMES)
def test_error_against_the_exact_value(computed, name):
    dtype, _, (x, p, q), got, _ = computed
    if dtype == F64 and not LONG_DOUBLE_IS_WIDER:
        pytest.skip("long double is float64 here: no exact float64 reference")
    bound = BOUND_EXACT[name][dtype == F64]
    assert ulps_exact(got[name], _exact(name, dtype, x, p, q)) <= bound


@pytest.mark.parametrize("name", NAMES)
def test_error_against_numpy(computed, name):
    dtype, _, _, got, want = computed
    assert ulps_numpy(got[name], want[name]) <= BOUND_NUMPY[name][dtype == F64]


def test_special_values_are_numpys(computed):
    """At the special values (the last inputs of the unary functions), wherever NumPy's
    result is special (NaN, +-Inf, +-0, +-1, or a tiny or denormal input itself) ours is the
    same, the sign of zero included (the interpreter's; the cpu's too, checked in
    tests/codegen/test_exact_arithmetic.py)."""
    dtype, backend, (x, _, _), got, want = computed
    n = len(specials(dtype))
    xs = x[-n:]
    itself = np.abs(xs) <= np.finfo(dtype).tiny
    wrong = []
    for name in UNARY:
        g, w = got[name][-n:], want[name][-n:]
        special = (np.isnan(w) | np.isinf(w) | (w == 0) | (np.abs(w) == 1)
                   | ((w == xs) & itself))
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        zero = special & (w == 0) & (g == 0)
        sign_differs = zero & (np.signbit(g) != np.signbit(w))
        if not same[special].all() or (backend == "interpreter" and sign_differs.any()):
            wrong.append(f"{name}: {xs[special & ~same]} -> {g[special & ~same]}, NumPy "
                         f"{w[special & ~same]}; zero signs differ at {xs[sign_differs]}")
    assert wrong == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_sinh_and_cosh_overflow_where_numpy_does(backend):
    """The reported case: float32 sinh gave inf from 88.72 (where e^x does) instead of 89.42,
    float64 from 709.78 instead of 710.48; and cosh near those points."""
    f = xe.jit(lambda v: (np.sinh(v), np.cosh(v)), backend=backend)
    for dtype, lo, hi in ((F32, -89.0, 89.0), (F64, -710.4, 710.4)):
        x = np.concatenate([np.linspace(lo, hi, 20_001),
                            [88.75, 89.0, 89.4, 709.9, 710.2, 710.4]]).astype(dtype)
        x = x[np.abs(x) <= hi]
        with np.errstate(over="ignore"):
            want = np.sinh(x), np.cosh(x)
        got = f(x)
        for g, w in zip(got, want):
            assert np.array_equal(np.isinf(g), np.isinf(w))
            assert np.isfinite(w).all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_whole_number_results_are_exact(backend, dtype):
    """exp2(k) is 2**k and log2(2**k), log10(10**k) are k, as NumPy gives them (so that
    floor(log10(1000.0)) is 3): over every power of two of the dtype, denormals included, and
    every power of ten the dtype holds exactly."""
    info = np.finfo(dtype)
    k2 = np.arange(int(np.log2(float(info.smallest_subnormal))), info.maxexp).astype(dtype)
    k10 = np.arange(0, 11 if dtype == F32 else 23).astype(dtype)
    powers2 = np.ldexp(dtype(1), k2.astype(np.int32))
    powers10 = (10.0 ** k10.astype(np.float64)).astype(dtype)
    f = xe.jit(lambda a, b, c: (np.exp2(a), np.log2(b), np.log10(c)), backend=backend)
    e2, l2, l10 = f(k2, powers2, powers10)
    np.testing.assert_array_equal(e2, powers2)
    np.testing.assert_array_equal(l2, k2)
    np.testing.assert_array_equal(l10, k10)
    np.testing.assert_array_equal(np.floor(l10), k10)
