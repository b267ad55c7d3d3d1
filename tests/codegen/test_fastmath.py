"""fastmath.py's exp, expm1, log, log1p, tanh and logistic, per dtype: errors in ulps over dense
sweeps of each function's whole range (against the exact value and against NumPy), NumPy's
special values, and the same bits inside a parallel kernel compiled with the generated
kernels' own flags as from the function called alone."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from numba import njit, prange, types

from xla_explorer.codegen import fastmath as fm
from xla_explorer.codegen.cpu import FASTMATH

F32, F64 = np.float32, np.float64
NAMES = ["exp", "expm1", "log", "log1p", "tanh", "logistic"]


# -- the kernels under test: every function in one parallel loop, as a generated kernel -------

@njit(fastmath=FASTMATH, error_model="numpy", parallel=True)
def kernel_f32(x, out):
    for i in prange(x.size):
        v = x[i]
        out[0, i] = fm.exp_f32(v)
        out[1, i] = fm.expm1_f32(v)
        out[2, i] = fm.log_f32(v)
        out[3, i] = fm.log1p_f32(v)
        out[4, i] = fm.tanh_f32(v)
        out[5, i] = fm.logistic_f32(v)


@njit(fastmath=FASTMATH, error_model="numpy", parallel=True)
def kernel_f64(x, out):
    for i in prange(x.size):
        v = x[i]
        out[0, i] = fm.exp_f64(v)
        out[1, i] = fm.expm1_f64(v)
        out[2, i] = fm.log_f64(v)
        out[3, i] = fm.log1p_f64(v)
        out[4, i] = fm.tanh_f64(v)
        out[5, i] = fm.logistic_f64(v)


def run(x: np.ndarray) -> dict[str, np.ndarray]:
    """All six functions of x, from the parallel kernel of x's dtype."""
    out = np.empty((len(NAMES), x.size), dtype=x.dtype)
    (kernel_f32 if x.dtype == F32 else kernel_f64)(x, out)
    return dict(zip(NAMES, out))


# -- references -----------------------------------------------------------------------------

def _logistic(x):
    return 1 / (1 + np.exp(-x))


# The exact value, from a wider type: float64 for float32, long double (64-bit mantissa on
# x86) for float64. NumPy has no logistic (scipy.special.expit gives 0 where the true value
# is a denormal), so it is checked against the exact value only.
EXACT = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
         "logistic": _logistic}
NUMPY = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh}
WIDE = {F32: np.float64, F64: np.longdouble}

# The bounds fastmath.py's docstring documents: max ulp against the exact value (measured
# there, rounded up) and max distance in representable values from NumPy's result, which
# NumPy's own float32 error dominates (its exp, expm1 and log are up to 2.5-3.8 ulp off).
BOUND_EXACT = {"exp": 1.0, "expm1": 1.25, "log": 1.0, "log1p": 1.0, "tanh": 1.25,
               "logistic": 2.0}
BOUND_NUMPY = {(F32, "exp"): 2, (F32, "expm1"): 3, (F32, "log"): 4, (F32, "log1p"): 2,
               (F32, "tanh"): 2, (F64, "exp"): 1, (F64, "expm1"): 1, (F64, "log"): 1,
               (F64, "log1p"): 1, (F64, "tanh"): 1}


def ulps_exact(got: np.ndarray, exact: np.ndarray) -> float:
    """Largest |got - exact| in units of the last place of exact rounded to got's dtype; inf
    and NaN must match exactly."""
    with np.errstate(over="ignore"):
        rounded = exact.astype(got.dtype)
    assert np.array_equal(np.isnan(got), np.isnan(rounded))
    inf = np.isinf(rounded) | np.isinf(got)
    assert np.array_equal(got[inf], rounded[inf])
    ok = np.isfinite(rounded)
    wide = exact.dtype.type
    err = np.abs(got[ok].astype(wide) - exact[ok]) / np.spacing(np.abs(rounded[ok])).astype(wide)
    return float(err.max()) if err.size else 0.0


def _ordered(a: np.ndarray) -> np.ndarray:
    """Bits as integers that count representable values, monotone across zero."""
    ints = np.int32 if a.dtype == F32 else np.int64
    b = a.view(ints).astype(np.int64)
    return np.where(b < 0, np.int64(np.iinfo(ints).min) - b, b)


def ulps_numpy(got: np.ndarray, want: np.ndarray) -> int:
    """Largest distance in representable values between got and NumPy's want; NaN must meet
    NaN."""
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    return int(np.abs(_ordered(got[ok]) - _ordered(want[ok])).max())


# -- inputs ---------------------------------------------------------------------------------

def edges(dtype) -> np.ndarray:
    """Special values, the ends of the range, and each function's thresholds +-3 values."""
    info = np.finfo(dtype)
    tiny, den, big = float(info.tiny), float(info.smallest_subnormal), float(info.max)
    base = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0,
            den, -den, 2 * den, tiny, -tiny, tiny / 2, tiny * (1 - 2.0 ** -20), big, -big,
            float(info.eps), -float(info.eps), float(info.epsneg) / 4]
    if dtype == F32:  # exp = inf, exp = 0, expm1 = -1, tanh = 1 (here, and in NumPy)
        thresholds = [88.72283935546875, -103.97208404541016, -17.317848, 9.01, 10.0,
                      -87.33654, 2.0 ** -12, 0.625]
    else:
        thresholds = [709.7827128933841, -745.1332191019412, -37.42994775023704, 19.06,
                      -708.3964185322641, 2.0 ** -27, 0.625]
    around = []
    for t in thresholds:
        v = dtype(t)
        for _ in range(3):
            v = np.nextafter(v, dtype(np.inf))
        for _ in range(7):
            around += [v, -v]
            v = np.nextafter(v, dtype(-np.inf))
    return np.concatenate([np.array(base, dtype=dtype), np.array(around, dtype=dtype)])


def sweep(dtype, n: int = 150_000) -> np.ndarray:
    """Dense samples of every function's whole useful range (each function sees all of them;
    inputs outside its domain test the NaN cases): linear over the exp / tanh / logistic
    ranges past their overflow, underflow and saturation points, linear near 0 and 1, and
    log-spaced magnitudes of both signs from the smallest denormal to the largest float."""
    rng = np.random.default_rng(0)
    info = np.finfo(dtype)
    lo, hi = (-110.0, 95.0) if dtype == F32 else (-760.0, 720.0)
    mags = np.exp(rng.uniform(np.log(float(info.smallest_subnormal)), np.log(float(info.max)),
                              4 * n))
    parts = [rng.uniform(lo, hi, 2 * n), rng.uniform(-25, 25, n), rng.uniform(-1.5, 1.5, n),
             rng.uniform(0.5, 2.0, n), mags, -mags[: n]]
    x = np.concatenate(parts).astype(dtype)
    return np.concatenate([x, edges(dtype)])


@pytest.fixture(scope="module", params=[F32, F64], ids=["f32", "f64"])
def swept(request):
    """(dtype, x, the kernel's outputs) over the sweep, computed once per dtype."""
    dtype = request.param
    x = sweep(dtype)
    return dtype, x, run(x)


# -- tests ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_error_against_the_exact_value(swept, name):
    dtype, x, out = swept
    with np.errstate(all="ignore"):
        exact = EXACT[name](x.astype(WIDE[dtype]))
    assert ulps_exact(out[name], exact) <= BOUND_EXACT[name]


@pytest.mark.parametrize("name", [n for n in NAMES if n in NUMPY])
def test_error_against_numpy(swept, name):
    dtype, x, out = swept
    with np.errstate(all="ignore"):
        want = NUMPY[name](x)
    assert ulps_numpy(out[name], want) <= BOUND_NUMPY[(dtype, name)]


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_special_values_are_numpys(dtype):
    """NumPy's results bit for bit where they are special (inf, NaN, 0, +-1, x itself), and
    the sign of every number, zero included."""
    info = np.finfo(dtype)
    den, big = float(info.smallest_subnormal), float(info.max)
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.0, big, -big, den, -den],
                 dtype=dtype)
    out = run(x)
    with np.errstate(all="ignore"):
        for name, ref in NUMPY.items():
            want = ref(x)
            got = out[name]
            num = ~np.isnan(want)  # (NumPy's NaN from log(-1) has its sign bit set; no matter)
            assert np.array_equal(np.signbit(got[num]), np.signbit(want[num])), name
            special = (np.isinf(want) | np.isnan(want) | (want == 0) | (np.abs(want) == 1)
                       | (want == x))
            np.testing.assert_array_equal(got[special], want[special], err_msg=name)
    np.testing.assert_array_equal(out["logistic"][:5], np.array([0.5, 0.5, 1, 0, np.nan], dtype))
    assert out["exp"][9] == 1 and out["log"][9] < 0  # exp and log of the smallest denormal


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_overflow_underflow_and_saturation(dtype):
    info = np.finfo(dtype)
    # exp = inf from hi, exp = 0 up to zero, tanh = 1 from sat; exp(denormal) is a denormal
    if dtype == F32:
        hi, zero, sat, denormal, tiny = 88.72283935546875, -103.97208404541016, 10.0, -100.0, 2e-9
    else:
        hi, zero, sat, denormal, tiny = 709.7827128933841, -745.1332191019412, 19.1, -740.0, 1e-18
    x = np.array([hi, np.nextafter(dtype(hi), dtype(0)), zero, np.nextafter(dtype(zero), dtype(0)),
                  sat, -sat, 1e30, -1e30, denormal], dtype=dtype)
    out = run(x)
    assert out["exp"][0] == np.inf and np.isfinite(out["exp"][1])  # NumPy's thresholds
    assert out["exp"][2] == 0 and out["exp"][3] == info.smallest_subnormal
    assert out["expm1"][0] == np.inf and out["expm1"][2] == -1
    np.testing.assert_array_equal(out["tanh"][4:8], np.array([1, -1, 1, -1], dtype))
    assert 0 < out["exp"][8] < info.tiny and 0 < out["logistic"][8] < info.tiny  # denormals
    # tiny x: tanh, expm1 and log1p give x itself
    small = np.array([tiny, -tiny / 2 ** 10, float(info.smallest_subnormal), float(info.tiny)],
                     dtype=dtype)
    t = run(small)
    for name in ("tanh", "expm1", "log1p"):
        np.testing.assert_array_equal(t[name], small, err_msg=name)


def test_the_same_results_called_alone(swept):
    """Each function called from Python, one element at a time, gives the bits it gives
    inlined into a parallel kernel compiled as the generated ones are."""
    dtype, x, out = swept
    n_edges = len(edges(dtype))
    pick = np.concatenate([np.arange(len(x) - n_edges, len(x)),
                           np.random.default_rng(1).integers(0, len(x), 1000)])
    suffix = "f32" if dtype == F32 else "f64"
    for name in NAMES:
        f = getattr(fm, f"{name}_{suffix}")
        alone = np.array([f(v) for v in x[pick]], dtype=dtype)
        np.testing.assert_array_equal(alone, out[name][pick], err_msg=name)
        num = ~np.isnan(alone)
        assert np.array_equal(np.signbit(alone[num]), np.signbit(out[name][pick][num])), name


def test_each_computes_in_its_own_dtype():
    """A float64 argument to a float32 function is converted, not computed in float64."""
    fm.exp_f32(1.0)
    fm.exp_f64(np.float32(1.0))
    assert fm.exp_f32.overloads[(types.float64,)].signature.return_type == types.float32
    assert fm.exp_f64.overloads[(types.float32,)].signature.return_type == types.float64


def test_flags_leave_nan_inf_and_reassociation_out():
    assert not {"nnan", "ninf", "reassoc", "arcp", "fast"} & fm.FLAGS


def test_exp_scales_by_one_vector_instruction_where_it_can():
    """Where fastmath.py finds a vector ldexp to be one instruction (AVX-512 here), the
    compiled loop holds it packed (not scalarized into libm calls, 5x slower), for both
    dtypes; elsewhere it holds no ldexp at all."""
    run(np.ones(64, F32))
    run(np.ones(64, F64))
    for kernel in (kernel_f32, kernel_f64):
        asm = kernel.inspect_asm(kernel.signatures[0])
        assert "ldexp" not in asm
        if fm._LDEXP_IS_ONE_INSTRUCTION:
            assert "vscalefp" in asm


# What Numba targets for a laptop's AVX2 CPU, where exp scales by two multiplies instead.
AVX2 = {"NUMBA_CPU_NAME": "haswell",
        "NUMBA_CPU_FEATURES": "+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+lzcnt,+movbe,+popcnt,+sse4.2"}


@pytest.mark.slow  # this file's tests, compiled again in a subprocess
@pytest.mark.deep  # every bound again, for a second target
@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the AVX2 CPU named is an x86-64 one")
def test_the_same_bounds_compiled_for_a_cpu_without_avx512(tmp_path):
    """This file's tests again, in a process where Numba compiles for an AVX2 CPU."""
    code = ("import sys, pytest; from xla_explorer.codegen import fastmath as fm; "
            "assert not fm._LDEXP_IS_ONE_INSTRUCTION; "
            f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {__file__!r}, "
            "'-k', 'not without_avx512']))")
    env = dict(os.environ, **AVX2, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
