"""Programs built on scans and sorts, traced, compiled and run on every backend
against NumPy: a running mean, top-k, an empirical CDF and a median filter over rows."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import BACKENDS


def running_mean(x):
    return np.cumsum(x) / np.arange(1, x.shape[0] + 1)


def top_k(x):
    return np.sort(x)[-5:]


def empirical_cdf(data, grid):
    return np.searchsorted(np.sort(data), grid, side="right") / data.shape[0]


def median_filter_rows(x):
    # Each element's median with its two neighbours along the row.
    windows = np.stack([x[:, :-2], x[:, 1:-1], x[:, 2:]])
    return np.median(windows, axis=0)


def robust_scale(x):
    q1, q3 = np.percentile(x, [25, 75], axis=1, keepdims=True)
    return (x - np.median(x, axis=1, keepdims=True)) / (q3 - q1)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(200)
    m = np.round(rng.standard_normal((6, 40)) * 4) / 4  # ties
    m[1, 3] = np.nan
    return x, m


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("name", ["running_mean", "top_k", "empirical_cdf",
                                  "median_filter_rows", "robust_scale"])
def test_program_matches_numpy(name, backend):
    x, m = _data()
    f, args = {
        "running_mean": (running_mean, (x.astype(np.float32),)),
        "top_k": (top_k, (x,)),
        "empirical_cdf": (empirical_cdf, (x, np.linspace(-3, 3, 25))),
        "median_filter_rows": (median_filter_rows, (m,)),
        "robust_scale": (robust_scale, (m[[0, 2, 3]],)),
    }[name]
    got = xe.jit(f, backend=backend)(*args)
    want = f(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    if name == "running_mean":  # a sequential float32 sum, then one division: exact
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
    # a second call, with other values, runs the same program
    x2, m2 = _data(1)
    args2 = {"running_mean": (x2.astype(np.float32),), "top_k": (x2,),
             "empirical_cdf": (x2, args[1] if len(args) > 1 else None),
             "median_filter_rows": (m2,), "robust_scale": (m2[[0, 2, 3]],)}[name]
    np.testing.assert_allclose(xe.jit(f, backend=backend)(*args2), f(*args2), rtol=1e-6,
                               equal_nan=True)
