"""NaN and Inf tests on computed values, on both backends, against NumPy.

The cpu backend once compiled its kernels with fastmath's reassoc and nsz. Under them LLVM
folds an expression of a value with itself (x - x to 0) when that value is a sum or product
computed in the same kernel, so a NaN or Inf test written that way is right on a kernel's
parameters and wrong on anything it computes: np.isfinite(x * 2) was True for NaN and Inf. Every test here is therefore applied to values computed in the same program
(x * 2, x + y, x - y, x * y, x / y, exp(x), ...) from inputs that make them NaN, +-Inf, +-0,
denormal and large, rather than to the inputs themselves.

Each program computes every case at once, so each dtype and backend compiles one program.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import xla_explorer as xe

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BACKENDS = ["interpreter", "cpu"]
DTYPES = [np.float32, np.float64]


def specials(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    den, tiny, big = float(info.smallest_subnormal), float(info.tiny), float(info.max)
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, 0.5, den, -den,
                     tiny / 3, tiny, big, -big, big / 3, 100.0, 800.0, -800.0, 1e-30,
                     float(info.eps)], dtype)


def pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every (x, y) of specials(dtype), as two 1-D arrays."""
    s = specials(dtype)
    x, y = np.meshgrid(s, s, indexing="ij")
    return x.ravel().copy(), y.ravel().copy()


def computed(x, y) -> dict:
    """Values made inside the program: NaN from inf - inf, 0 * inf and 0 / 0; Inf from
    overflow and x / 0; denormals from underflow. Sums and products are what LLVM may
    reassociate; exp is a call, which it does not see into."""
    return {"x*2": x * 2, "x+y": x + y, "x-y": x - y, "x*y+x": x * y + x, "x/y": x / y,
            "exp(x)": np.exp(x)}


def checks_of(v, y) -> dict:
    """Every NaN or Inf test and NaN-aware op the tracer supports, of v. The tests give bools,
    packed into one integer per element so the program stays small (it compiles faster)."""
    bits = (np.isnan(v) * 1 + np.isinf(v) * 2 + np.isfinite(v) * 4 + (v != v) * 8
            + (v == v) * 16 + (np.isnan(v) | np.isinf(v)) * 32)
    return {"tests": bits, "where(isfinite)": np.where(np.isfinite(v), v, 0.0),
            "where(isnan)": np.where(np.isnan(v), -1.0, v),
            "fmax": np.fmax(v, y), "fmin": np.fmin(y, v),
            "maximum": np.maximum(v, y), "minimum": np.minimum(y, v), "sign": np.sign(v)}


def elementwise(x, y):
    return {f"{check}({name})": out for name, v in computed(x, y).items()
            for check, out in checks_of(v, y).items()}


def reductions(x, y):
    """Row reductions (rows of the pairs grid: one x against every y) that skip NaN (written
    as NumPy's nanmax and nanmin are suggested to be), that propagate it, and that count NaN
    and Inf."""
    n = int(round(np.sqrt(x.shape[0])))
    out = {}
    for name, v in computed(x, y).items():
        if name not in ("x*2", "x-y", "exp(x)"):  # three, to keep the program small
            continue
        v = v.reshape(n, n)
        out.update({
            f"nanmax({name})": np.max(np.where(np.isnan(v), -np.inf, v), axis=1),
            f"nanmin({name})": np.min(np.where(np.isnan(v), np.inf, v), axis=1),
            f"max({name})": np.max(v, axis=1), f"min({name})": np.min(v, axis=1),
            f"counts({name})": np.sum(np.isnan(v) * 1 + np.isfinite(v) * 100, axis=1),
            f"any isinf({name})": np.any(np.isinf(v), axis=1),
            f"all isfinite({name})": np.all(np.isfinite(v), axis=1),
        })
    return out


def _ordered(a: np.ndarray) -> np.ndarray:
    """Bits as integers that count representable values, monotone across zero."""
    ints = np.int32 if a.dtype == np.float32 else np.int64
    b = a.view(ints).astype(np.int64)
    return np.where(b < 0, np.int64(np.iinfo(ints).min) - b, b)


# exp is fastmath.py's on the cpu backend, up to 2 values from NumPy's in float32 (see
# tests/codegen/test_fastmath.py); everything else here is exact.
ULPS = 2


def mismatches(got: dict, want: dict) -> list[str]:
    """What differs: bools and integers exactly; floats with NaN and +-Inf where NumPy has
    them and finite values within ULPS."""
    assert got.keys() == want.keys()
    bad = []
    for key, w in want.items():
        g, w = np.asarray(got[key]), np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            bad.append(f"{key}: {g.dtype}{g.shape} where NumPy gives {w.dtype}{w.shape}")
            continue
        if w.dtype.kind != "f":
            wrong = g != w
        else:
            finite = np.isfinite(g) & np.isfinite(w)
            wrong = (np.isnan(g) != np.isnan(w)) | (np.isinf(g) != np.isinf(w))
            wrong |= np.isinf(w) & (g != w)
            wrong[finite] |= np.abs(_ordered(g[finite]) - _ordered(w[finite])) > ULPS
        if wrong.any():
            bad.append(f"{key}: {int(wrong.sum())} of {wrong.size} wrong")
    return bad


@pytest.mark.parametrize("program", [elementwise, reductions])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [DTYPES[0], pytest.param(DTYPES[1], marks=pytest.mark.deep)],
                         ids=["f32", "f64"])
def test_nan_and_inf_tests_of_computed_values(program, backend, dtype):
    x, y = pairs(dtype)
    with np.errstate(all="ignore"):
        want = program(x, y)
    got = xe.jit(program, backend=backend)(x, y)
    assert mismatches(got, want) == []


def test_isfinite_of_a_product_in_where():
    """The reported case."""
    x = np.array([np.nan, np.inf, -np.inf, 1.0])
    for backend in BACKENDS:
        got = xe.jit(lambda x: np.where(np.isfinite(x * 2), x, 0.0), backend=backend)(x)
        np.testing.assert_array_equal(got, [0.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["signbit", "nan_to_num", "nanmax", "nanmin", "nansum",
                                  "isclose"])
def test_nan_functions_of_computed_values_match_numpy(name, backend):
    """The NumPy NaN/Inf functions, applied to a computed value (where flags that assume
    finite values would fold them), give NumPy's answer on NaN, infinities and signed zeros."""
    f = getattr(np, name)
    x = np.array([np.nan, np.inf, -np.inf, 1.0, -0.0, 0.0])

    def program(v):
        return f(v * 2, v) if name == "isclose" else f(v * 2)

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = program(x)
    got = xe.jit(program, backend=backend)(x)
    np.testing.assert_array_equal(got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
def test_infinity_tests_compile_and_agree_with_numpy(name):
    """np.isposinf and np.isneginf, refused once, are lowered now (trace/numpy/numeric.py):
    each infinity told from the other and from NaN, as NumPy tells them."""
    f = getattr(np, name)
    x = np.array([np.nan, np.inf, -np.inf, 1.0, -0.0])
    got = xe.jit(lambda v: f(v * 2), backend="cpu")(x)
    np.testing.assert_array_equal(got, f(x * 2))
