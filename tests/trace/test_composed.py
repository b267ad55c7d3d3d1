"""NumPy functions lowered as compositions of other ops (hypot, logaddexp, copysign, fabs,
signbit, heaviside, deg2rad, rad2deg, float_power, fmod, sinc, nan_to_num, isclose, select, and
the NaN-ignoring reductions), at special values on both backends: NaN, +-inf, +-0, tiny and
denormal values, and values near overflow, compared with NumPy within a few ulp (exactly where
NumPy's result is exact). Each backend and dtype computes every function in one program, so the
cpu backend compiles one program per dtype.
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import BACKENDS

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32, F64 = np.float32, np.float64


def specials(dtype) -> np.ndarray:
    fi = np.finfo(dtype)
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30,
                     -7e3, 1e30, fi.max, -fi.max, fi.max / 2, fi.max / 3, fi.tiny,
                     -fi.smallest_subnormal, fi.smallest_subnormal * 3, 1 / fi.eps, 88.5,
                     -745.0, 700.0, 360.0, -180.0], dtype=dtype)


UNARY = {"fabs": np.fabs, "signbit": np.signbit, "deg2rad": np.deg2rad,
         "rad2deg": np.rad2deg, "sinc": np.sinc, "nan_to_num": np.nan_to_num,
         "nan_to_num_kw": lambda x: np.nan_to_num(x, nan=-1.0, posinf=7.0, neginf=-7.0)}
BINARY = {"hypot": np.hypot, "logaddexp": np.logaddexp, "copysign": np.copysign,
          "heaviside": np.heaviside, "fmod": np.fmod, "float_power": np.float_power,
          "isclose": np.isclose,
          "isclose_nan": lambda p, q: np.isclose(p, q, rtol=0.5, atol=1.0, equal_nan=True),
          "select": lambda p, q: np.select([p < q, np.isnan(p)], [p, q], default=-3.0)}
# Largest distance from NumPy's result in representable values; the rest are exact.
ULPS = {"hypot": 2, "logaddexp": 2, "float_power": 2, "sinc": 4}


def every_function(x, p, q):
    out = {name: f(x) for name, f in UNARY.items()}
    out.update({name: f(p, q) for name, f in BINARY.items()})
    return out


def _ordered(a: np.ndarray) -> np.ndarray:
    ints = np.int32 if a.dtype == F32 else np.int64
    b = a.view(ints).astype(np.int64)
    return np.where(b < 0, np.int64(np.iinfo(ints).min) - b, b)


@pytest.fixture(scope="module", params=[(d, b) for d in (F32, F64) for b in BACKENDS],
                ids=[f"{d}-{b}" for d in ("f32", "f64") for b in BACKENDS])
def computed(request):
    dtype, backend = request.param
    x = specials(dtype)
    n = len(x)
    p, q = np.repeat(x, n), np.tile(x, n)  # every pair
    with np.errstate(all="ignore"):
        want = every_function(x, p, q)
    got = xe.jit(every_function, backend=backend)(x, p, q)
    return dtype, backend, got, want


@pytest.mark.parametrize("name", list(UNARY) + list(BINARY))
def test_special_values_are_numpys(computed, name):
    dtype, backend, got, want = computed
    assert_special_values_match(got[name], want[name], ULPS.get(name, 0), name)


def assert_special_values_match(got, want, ulps: int, name: str) -> None:
    """got is NumPy's want: type and shape, NaN where NumPy has NaN, every other value within
    `ulps` representable values, and zeros signed as NumPy's."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape
    if w.dtype.kind != "f":
        np.testing.assert_array_equal(g, w)
        return
    assert np.array_equal(np.isnan(g), np.isnan(w)), "NaN where NumPy has none, or not"
    ok = ~np.isnan(w)
    worst = int(np.abs(_ordered(g[ok]) - _ordered(w[ok])).max()) if ok.any() else 0
    assert worst <= ulps, f"{name}: {worst} ulp"
    zero = ok & (w == 0) & (g == 0)
    assert np.array_equal(np.signbit(g[zero]), np.signbit(w[zero])), f"{name}: sign of zero"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_hypot_and_logaddexp_near_overflow(backend, dtype):
    """hypot scales by the larger magnitude: finite where x^2 overflows, inf only where the
    result does; logaddexp of huge values is the larger (plus ln 2 where they are equal)."""
    fi = np.finfo(dtype)
    big = np.array([fi.max, fi.max / 1.5, fi.max * 0.7, 1e19 if dtype == F32 else 1e154,
                    fi.tiny, fi.smallest_subnormal], dtype)
    p, q = np.repeat(big, len(big)), np.tile(big, len(big))

    def f(p, q):
        return np.hypot(p, q), np.hypot(-p, q), np.logaddexp(p, q), np.logaddexp(-p, -q)
    got = xe.jit(f, backend=backend)(p, q)
    with np.errstate(all="ignore"):
        want = f(p, q)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert np.array_equal(np.isinf(g), np.isinf(w))
        fin = np.isfinite(w)
        assert np.abs(_ordered(g[fin]) - _ordered(w[fin])).max() <= 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_signbit_and_copysign_read_the_sign_of_zero(backend):
    x = np.array([-0.0, 0.0, -1.0, 1.0, -np.inf, np.inf, np.nan])

    def f(x):
        return np.signbit(x), np.copysign(1.0, x), np.copysign(x, -1.0)
    got = xe.jit(f, backend=backend)(x)
    want = f(x)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(np.signbit(got[2][:-1]), np.signbit(want[2][:-1]))


def test_a_negative_nan_reads_as_positive():
    """The IR has no op that reads a NaN's sign bit: signbit(-nan) is False here, True in
    NumPy (the documented difference; +nan, the NaN arithmetic makes, agrees)."""
    x = np.array([-np.nan])
    assert np.signbit(x)[0]
    assert not xe.jit(np.signbit, backend="interpreter")(x)[0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_nan_reductions_of_special_values(backend, dtype):
    """All-NaN slices: nanmax and nanmin NaN, nansum 0, nanmean NaN; infinities kept."""
    a = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, -np.inf], [np.inf, 2.0, -0.0],
                  [np.inf, -np.inf, np.nan]], dtype)

    def f(a):
        return (np.nanmax(a, axis=1), np.nanmin(a, axis=1), np.nansum(a, axis=1),
                np.nanmean(a, axis=1), np.nanmax(a, axis=0, keepdims=True), np.nanmean(a),
                np.count_nonzero(a, axis=0), np.ptp(a, axis=1))
    got = xe.jit(f, backend=backend)(a)
    with np.errstate(all="ignore"):
        want = f(a)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


def test_average_with_weights_of_an_integer_array():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    w = np.array([1, 0, 2, 5], np.int64)

    def f(a, w):
        return np.average(a, axis=1, weights=w, returned=True)
    got = xe.jit(f, backend="interpreter")(a, w)
    want = f(a, w)
    for g, v in zip(got, want):
        assert g.dtype == v.dtype == np.float64
        np.testing.assert_allclose(g, v, rtol=1e-15)


@pytest.mark.parametrize("f,what", [
    (lambda x: np.nanmax(x, initial=0.0), "np.nanmax is not supported with initial= or where="),
    (lambda x: np.nansum(x, where=x > 0), "np.nansum is not supported with initial= or where="),
    (lambda x: np.nan_to_num(x, nan=x[0]),
     "np.nan_to_num is not supported with a traced or array nan=, posinf= or neginf="),
], ids=["nanmax-initial", "nansum-where", "nan_to_num-traced-fill"])
def test_forms_not_supported_are_refused(f, what):
    with pytest.raises(xe.UnsupportedOpError, match=what):
        xe.explore(f, np.array([1.0, np.nan, 3.0]))


# -- np.round to decimals and np.interp: NumPy's own sequence of operations, to the bit --------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [F32, F64])
def test_round_to_decimals_is_numpys_bits(backend, dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([specials(dtype), rng.uniform(-1e3, 1e3, 300).astype(dtype),
                        (rng.integers(-4000, 4000, 300) / 8).astype(dtype),
                        np.array([1.005, 2.675, 0.125, -0.375, 1e22, 123456.5], dtype)])

    def f(x):
        return tuple(np.round(x, k) for k in (-23, -3, -1, 1, 2, 5, 9, 23, 25)) + (x.round(3),)

    with np.errstate(all="ignore"):
        want = f(x)
        got = xe.explore(f, x, backend=backend).run(x)
    bits = f"u{np.dtype(dtype).itemsize}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(bits), w.view(bits), err_msg=f"case {k}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_interp_takes_numpys_branch_for_every_kind_of_point(backend):
    xp = np.array([-1.0, 0.0, 0.0, 2.0, 3.0, 5.0])
    fp = np.array([1.0, np.inf, 3.0, 3.0, -np.inf, 7.0])
    x = np.concatenate([specials(F64), xp, (xp[1:] + xp[:-1]) / 2, [-1.5, 5.5, 2.5]])

    def f(x, xp, fp):
        return (np.interp(x, xp, fp), np.interp(x, xp, fp, left=-10.0, right=np.nan),
                np.interp(x, xp[:1], fp[:1]), np.interp(x, xp[3:], fp[3:]))

    with np.errstate(all="ignore"):
        want = f(x, xp, fp)
        got = xe.explore(f, x, xp, fp, backend=backend).run(x, xp, fp)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=1e-15, atol=0, equal_nan=True)
