"""The vectorizable exp, log and tanh, against NumPy: errors in ulps over their whole ranges,
NumPy's special values, and the same answers inside a kernel compiled with the kernels'
own flags (which allow reassociation) and in a parallel loop."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit, prange

from xla_explorer.codegen import fastmath
from xla_explorer.codegen.numba_cpu import FASTMATH

F32, F64 = np.float32, np.float64


def ulps(got, want) -> float:
    """The largest error in units in the last place of want; NaN must meet NaN."""
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(
        got[np.isinf(want)], want[np.isinf(want)])
    ok = np.isfinite(want)
    g, w = got[ok].astype(np.float64), want[ok].astype(np.float64)
    spacing = np.spacing(np.abs(want[ok])).astype(np.float64)
    return float(np.max(np.abs(g - w) / spacing)) if g.size else 0.0


def kernel(f, parallel=False):
    @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
    def k(x, out):
        for i in prange(x.size):
            out[i] = f(x[i])
    return k


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]


def cases(dtype, lo, hi, log_spaced=False, n=400_000):
    rng = np.random.default_rng(0)
    x = np.exp(rng.uniform(lo, hi, n)) if log_spaced else rng.uniform(lo, hi, n)
    info = np.finfo(dtype)
    edges = [info.max, info.tiny, info.smallest_subnormal, -info.max]
    x = np.clip(x, -float(info.max), float(info.max))  # exp of the sampled range may be inf
    return np.concatenate([x.astype(dtype), np.array(SPECIAL + edges, dtype=dtype)])


# (function, NumPy, type, sampled range, log-spaced, ulp bound measured here)
RECORDS = [
    ("exp_f32", np.exp, F32, (-110, 95), False, 2),
    ("exp_f64", np.exp, F64, (-750, 715), False, 1),
    ("log_f32", np.log, F32, (-104, 89), True, 4),
    ("log_f64", np.log, F64, (-745, 709), True, 2),
    ("tanh_f32", np.tanh, F32, (-12, 12), False, 2),
    ("tanh_f64", np.tanh, F64, (-25, 25), False, 2),  # the C library's, against NumPy's SIMD one
]


@pytest.mark.parametrize("name, ref, dtype, span, log_spaced, bound", RECORDS,
                         ids=[r[0] for r in RECORDS])
def test_accuracy_and_special_values(name, ref, dtype, span, log_spaced, bound):
    x = cases(dtype, *span, log_spaced=log_spaced)
    out = np.empty_like(x)
    kernel(getattr(fastmath, name))(x, out)
    with np.errstate(all="ignore"):
        want = ref(x)
    assert out.dtype == dtype
    assert ulps(out, want) <= bound


@pytest.mark.parametrize("name", ["exp_f32", "log_f32", "tanh_f32"])
def test_the_same_in_a_parallel_loop(name):
    x = cases(F32, -3, 3, n=20_000)
    a, b = np.empty_like(x), np.empty_like(x)
    kernel(getattr(fastmath, name))(x, a)
    kernel(getattr(fastmath, name), parallel=True)(x, b)
    np.testing.assert_array_equal(a, b)


def test_exp_reaches_denormals_and_overflows_where_numpy_does():
    x = np.array([-87.3, -100.0, -103.2, -104.0, 88.7, 88.73, 709.0], dtype=F32)
    out = np.empty_like(x)
    kernel(fastmath.exp_f32)(x, out)
    with np.errstate(all="ignore"):
        want = np.exp(x)
    assert out[1] > 0 and out[1] < np.finfo(F32).tiny  # a denormal, as NumPy's
    assert ulps(out, want) <= 2
