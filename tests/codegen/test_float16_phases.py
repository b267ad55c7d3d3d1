"""float16 in the CPU kernels that run as phases of their own: scatter, scan and sort read
float16 elements through f16_load and write them through f16_bits (codegen/scalar.py), as every
other kernel does. NumPy's float16 accumulate and add.at round to float16 after every step, and
so do the kernels, so the results are NumPy's to the bit; a sort compares the values as floats
(NaN last) and moves the bits, so a NaN's sign and a zero's sign come through as NumPy's."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.codegen.options import DEFAULT_OPTIONS
from xla_explorer.codegen.cpu.outline import runs_on_threads

F16 = np.float16
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    assert a.dtype == F16
    return a.view(np.uint16)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _same_values(got, want):
    """The bits of every number, and NaN where NumPy has NaN, whatever its bits: NumPy's
    float16 sort (its default kind, vectorized) writes a NaN of its own in place of each NaN
    it moves, where the kernel moves the NaN's bits as they are."""
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    _same_bits(np.where(np.isnan(want), F16(0), got), np.where(np.isnan(want), F16(0), want))


def _run(f, *args):
    ex = xe.explore(f, *args, backend="cpu")
    with np.errstate(all="ignore"):
        return ex, ex.run(*[np.copy(a) for a in args]), f(*[np.copy(a) for a in args])


def test_a_float16_cumsum_rounds_the_running_sum_at_every_step_as_numpy_does():
    # 2048 + 1 is a tie in float16 (its spacing there is 2) and rounds back to 2048 every time;
    # a sum kept in float32 and rounded once per prefix would reach 2052.
    x = np.array([2048, 1, 1, 1, 1, 0.1, 0.3, 3, -0.0, 1e-7], F16)
    ex, got, want = _run(lambda x: np.cumsum(x), x)
    _same_bits(got, want)
    assert want[4] == 2048
    assert "f16_load(" in "".join(ex.kernels.values())


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "maximum", "minimum"])
def test_float16_scans_along_each_axis_are_numpys_to_the_bit(name):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((5, 6, 7)) * 3).astype(F16)
    x[1, 2, 3] = np.nan
    x[3, 0, :] = [65504, 65504, -65504, 0.5, 2, -0.0, 0.0]  # an overflow to inf, and back
    ops = {"cumsum": np.cumsum, "cumprod": np.cumprod, "maximum": np.maximum.accumulate,
           "minimum": np.minimum.accumulate}
    for axis in range(3):
        _, got, want = _run(lambda x: ops[name](x, axis=axis), x)
        _same_bits(got, want)


def test_a_float16_scan_fused_with_arithmetic_after_it_rounds_each_prefix():
    # the scan's result is then a float32 temporary in the kernel, which holds each prefix
    # rounded to float16
    x = np.array([2048, 1, 1, 1, 3, 0.1, 0.3], F16)
    _, got, want = _run(lambda x: np.cumsum(x * F16(2), axis=0) + F16(1), x)
    _same_bits(got, want)


@pytest.mark.deep  # the parallel copies of the serial cases above, on a million elements
def test_many_float16_rows_scan_and_sort_in_parallel_with_numpys_bits():
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((64, DEFAULT_OPTIONS.parallel_threshold // 64)) * 4).astype(F16)
    x[rng.random(x.shape) < 0.01] = np.nan

    def f(x):
        return np.cumsum(x, axis=1), np.sort(x[:, :4096], axis=1)
    ex, got, want = _run(f, x)
    phases = [s for s in ex.kernels.values() if " sort(" in s or " reduce-window(" in s]
    assert len(phases) == 2 and all(runs_on_threads(s) for s in phases)
    _same_bits(got[0], want[0])
    _same_values(got[1], want[1])


def test_a_float16_sort_puts_nan_last_and_keeps_ties_in_input_order():
    x = np.array([3, -np.nan, 1, 0.0, np.nan, -0.0, 1, -np.inf, 65504, 6e-8, 0.0, -1, np.inf,
                  1], F16)
    assert np.signbit(x[1]) and np.isnan(x[1])
    _, (values, order), (want_values, want_order) = _run(
        lambda x: (np.sort(x, kind="stable"), np.argsort(x, kind="stable")), x)
    np.testing.assert_array_equal(order, want_order)
    _same_bits(values, want_values)  # equal zeros in input order; the negative NaN's bits kept
    _same_bits(values, x[want_order])


def test_float16_sorts_of_rows_and_median_match_numpy():
    rng = np.random.default_rng(6)
    x = rng.integers(-4, 5, (9, 31)).astype(F16) / F16(4)
    x[rng.random(x.shape) < 0.1] = np.nan
    _, (values, order), (want_values, want_order) = _run(
        lambda x: (np.sort(x, axis=0), np.argsort(x, axis=1, kind="stable")), x)
    np.testing.assert_array_equal(order, want_order)
    _same_values(values, want_values)
    _same_bits(values, np.take_along_axis(x, np.argsort(x, axis=0, kind="stable"), axis=0))
    y = np.array([5, 1, 2.5, 7, 0.125, 3, 9, 4], F16)
    # Numba's warnings are about its own IR; a user who sees them thinks the program is wrong.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, got, want = _run(lambda y: (np.median(y * 2 + 1), np.percentile(y, 30)), y)
    assert not [w for w in caught if "numba" in type(w.message).__module__], [
        str(w.message)[:200] for w in caught]
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype == F16
        np.testing.assert_allclose(np.float64(g), np.float64(w), rtol=1e-3)


def test_float16_add_at_with_duplicates_rounds_after_each_update_as_numpy_does():
    # every 1 added to 2048 rounds away (a tie, to even), one at a time as np.add.at adds
    x = np.array([2048, 0, 0.1, 65504, 0], F16)
    i = np.array([0, 0, 0, 0, 2, 2, 2, 3, 1, 4, 4])
    v = np.array([1, 1, 1, 1, 0.1, 0.2, 0.3, 32, -0.0, np.nan, 1], F16)

    def f(x, i, v):
        np.add.at(x, i, v)
        return x
    _, got, want = _run(f, x, i, v)
    _same_bits(got, want)
    assert want[0] == 2048 and np.isinf(want[3])


@pytest.mark.parametrize("ufunc", [np.multiply, np.maximum, np.minimum, np.subtract])
def test_other_float16_ufunc_at_with_duplicates_match_numpy_to_the_bit(ufunc):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 3)) * 2).astype(F16)
    i = np.array([0, 5, 0, 2, 2, 2, 5, 1])
    v = (rng.standard_normal((8, 3)) * 2).astype(F16)
    v[3, 1] = np.nan

    def f(x, i, v):
        ufunc.at(x, i, v)
        return x
    _, got, want = _run(f, x, i, v)
    _same_bits(got, want)


def test_float16_index_assignment_and_put_along_axis_move_values_exactly():
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], F16)
    v = np.array([[0.1, -np.nan], [65504, -0.0], [6e-8, np.inf]], F16)
    idx = np.array([[3, 0], [1, 2], [0, 0]])

    def put(x, idx, v):
        np.put_along_axis(x, idx, v, axis=1)
        return x

    def assign(x, v):
        x[np.array([2, 0])] = v[:2, :1]
        x[np.array([1, 1])] += F16(0.1)
        return x
    for f, args in ((put, (x, idx, v)), (assign, (x, v))):
        _, got, want = _run(f, *args)
        _same_bits(got, want)
