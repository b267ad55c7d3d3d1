"""What the op records cannot say for issue 39's functions: np.partition's promise (the kth
element in place, none larger before it, none smaller after) checked as a property, since
NumPy leaves the rest of the arrangement open; np.nextafter on every special value against
NumPy's bits; np.gcd over whole int64 ranges; the one-bool comparisons as 0-d outputs."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import BACKENDS

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _assert_partitioned(part, x, kth, axis):
    """part is a partition of x along axis at every k of kth, as NumPy defines one."""
    want = np.partition(x, kth, axis=axis)
    p, w = np.moveaxis(part, axis, -1), np.moveaxis(want, axis, -1)
    np.testing.assert_array_equal(np.sort(p, axis=-1), np.sort(w, axis=-1))
    for k in np.atleast_1d(kth):
        np.testing.assert_array_equal(p[..., k], w[..., k])  # the kth value is defined
        key = np.where(np.isnan(p), np.inf, p)  # NaN sorts last
        kv = key[..., k:k + 1]
        assert (key[..., :k] <= kv).all() and (key[..., k + 1:] >= kv).all()


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_partition_and_argpartition_keep_numpys_promise(backend):
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, (4, 9)).astype(np.float32)  # ties
    x[1, 2] = x[2, 5] = np.nan
    kth, axis = (1, 6), 1

    def f(x):
        return np.partition(x, kth, axis=axis), np.argpartition(x, kth, axis=axis)
    part, index = xe.jit(f, backend=backend)(x.copy())
    _assert_partitioned(part, x, kth, axis)
    np.testing.assert_array_equal(np.sort(index, axis=axis),
                                  np.broadcast_to(np.arange(9), (4, 9)))
    _assert_partitioned(np.take_along_axis(x, index, axis=axis), x, kth, axis)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nextafter_on_special_values_is_numpys_bits(dtype):
    info = np.finfo(dtype)
    pool = np.array([0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal,
                     info.smallest_normal, -info.smallest_normal, info.max, -info.max,
                     np.inf, -np.inf, np.nan, 1.0, -1.0, 0.75, 2.0, 3 * info.smallest_subnormal,
                     info.eps, 1e4], dtype)
    x, y = np.meshgrid(pool, pool)
    got = xe.explore(np.nextafter, x, y, backend="interpreter").run(x, y)
    want = np.nextafter(x, y)
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                  np.where(np.isnan(want), got, want).view(f"u{got.itemsize}"))
    assert np.isnan(got[np.isnan(want)]).all()


def test_gcd_and_lcm_over_the_whole_int64_range():
    rng = np.random.default_rng(1)
    a = rng.integers(-2**62, 2**62, 64)
    b = rng.integers(-2**62, 2**62, 64) // rng.integers(1, 2**40, 64)
    fib = np.array([7540113804746346429, 4660046610375530309])  # F(92), F(91): the most steps
    a, b = np.concatenate([a, fib, [0, 0, 12]]), np.concatenate([b, fib[::-1], [0, 5, 0]])
    got = xe.explore(lambda a, b: (np.gcd(a, b), np.lcm(a % 10**6, b % 10**6)), a, b,
                     backend="interpreter").run(a, b)
    np.testing.assert_array_equal(got[0], np.gcd(a, b))
    np.testing.assert_array_equal(got[1], np.lcm(a % 10**6, b % 10**6))


def test_whole_array_comparisons_are_0d_bools():
    x = np.array([1.0, np.nan, 3.0], np.float32)

    def f(x):
        return (np.allclose(x, x, equal_nan=True), np.array_equal(x, x),
                np.array_equal(x, x, equal_nan=True), np.array_equiv(x[:1], x[:1] * 1))
    got = xe.jit(f, backend="interpreter")(x)
    assert [bool(g) for g in got] == [True, False, True, True]
    assert all(np.asarray(g).shape == () and np.asarray(g).dtype == np.bool_ for g in got)


def test_ix_of_a_traced_mask_is_refused_by_name():
    def f(x):
        return x[np.ix_(x[:, 0] > 0, [0, 1])]
    with pytest.raises(xe.UnsupportedOpError, match=r"np\.ix_ .*traced boolean"):
        xe.jit(f)(np.ones((3, 2)))
