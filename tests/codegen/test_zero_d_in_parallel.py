"""0-d values read inside a parallel loop: a full reduction's result that a later parallel
reduction of the same kernel reads, a 0-d argument, a clamp's scalar bounds.

`x.std(), x.argmax()` on 2**19 elements raised CompileError: the multi-output fusion reduced x
to its sum into a 0-d array, then read it as `reduce[()]` in the next sum's prange loop, and
Numba hands a 0-d array to a prange body as a scalar (`getitem(float64, Tuple())`). Now a 0-d
array is read into a scalar before the loop. The thresholds are lowered so the loops go
parallel at a few thousand elements; each test checks that the kernel has a prange loop.
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.codegen.cpu.outline import runs_on_threads

from .test_exact_arithmetic import bit_mismatches, sum_tolerance
from .test_signed_zero_min_max import clamp_module, run_hlo

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32, F64 = np.float32, np.float64
N = 3 * 4096 + 3


@pytest.fixture(autouse=True)
def small_parallel_loops(tmp_path_factory, monkeypatch, codegen_options):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))
    codegen_options(parallel_threshold=4096, parallel_threshold_expensive=4096)


def std_and_argmax(x):
    return x.std(), x.argmax()


def centred_sum_and_argmax(x):
    return (x - x.mean()).sum(), np.argmax(x)


def five(x, y):
    return np.exp(x) * y + np.tanh(y), (x * y).sum(), x.max(), np.argmax(x), (x - x.mean()).var()


def explored(f, *args):
    ex = xe.explore(f, *args, backend="cpu")
    assert any(runs_on_threads(src) for src in ex.kernels.values()), "no parallel loop: no test"
    return ex, ex.run(*args)


@pytest.mark.parametrize("dtype", [F32, pytest.param(F64, marks=pytest.mark.deep)],
                         ids=["f32", "f64"])
def test_a_sum_read_by_a_parallel_sum_beside_an_argmax(rng, dtype):
    x = rng.standard_normal(N).astype(dtype)
    _, (std, arg) = explored(std_and_argmax, x)
    assert arg == np.argmax(x)
    np.testing.assert_allclose(std, x.std(), rtol=1e-5 if dtype == F32 else 1e-12)
    _, (total, arg) = explored(centred_sum_and_argmax, x)
    assert arg == np.argmax(x)
    d = (x - x.mean()).astype(F64)
    assert abs(float(total) - float((x - x.mean()).sum())) <= 2 * sum_tolerance(d.astype(dtype))


@pytest.mark.parametrize("dtype", [F32, pytest.param(F64, marks=pytest.mark.deep)],
                         ids=["f32", "f64"])
def test_five_outputs_with_a_mean_read_in_parallel(rng, dtype):
    x, y = (rng.standard_normal(N).astype(dtype) for _ in range(2))
    _, got = explored(five, x, y)
    want = five(x, y)
    tol = 1e-5 if dtype == F32 else 1e-12
    np.testing.assert_allclose(got[0], want[0], rtol=4 * tol, atol=4 * tol)  # exp, tanh: ulps
    np.testing.assert_allclose(got[1], want[1], atol=sum_tolerance(x * y))
    exact = {"max": 2, "argmax": 3}
    assert bit_mismatches({k: got[i] for k, i in exact.items()},
                          {k: want[i] for k, i in exact.items()}) == []
    np.testing.assert_allclose(got[4], want[4], rtol=tol)


def test_a_0d_argument_read_in_parallel_loops(rng):
    def f(x, s):
        return (x * s).sum(), x * s - s

    x, s = rng.standard_normal(N), np.array(1.5)
    _, (total, scaled) = explored(f, x, s)
    assert bit_mismatches({"x * s - s": scaled}, {"x * s - s": x * s - s}) == []
    assert abs(total - (x * s).sum()) <= sum_tolerance(x * s)


def test_clamp_with_0d_bounds_in_a_parallel_loop():
    x = np.array([0.0, -0.0, 0.5, -2.0, 3.0, np.nan, 1.0, -1.0] * (N // 8 + 1), F32)
    lo, hi = np.array(-0.0, F32), np.array(1.0, F32)
    got = run_hlo(clamp_module("f32", x.size, scalar_bounds=True), "cpu", lo, x, hi)
    assert bit_mismatches({"clamp": got}, {"clamp": np.clip(x, lo[()], hi[()])}) == []
