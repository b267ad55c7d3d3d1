"""More NumPy functions lowered as compositions at the values where a composition
most easily differs from NumPy, on every backend: NaN, +-inf, +-0, denormals and values near
overflow for np.fix, np.modf, np.frexp, np.logaddexp2, np.ldexp and the identities of a real array;
np.nanargmax's all-NaN slice; np.histogram's edges computed in the program from new data; and
the functions that write into an argument, through a view too. Records in
`op_records.COMPOSED_MORE` cover the shapes, types and keyword forms.
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import BACKENDS

from .test_composed import assert_special_values_match, specials

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32, F64 = np.float32, np.float64
UNARY = {"fix": np.fix, "modf_frac": lambda x: np.modf(x)[0],
         "modf_whole": lambda x: np.modf(x)[1], "conjugate": np.conjugate, "real": np.real,
         "imag": np.imag, "real_if_close": np.real_if_close,
         "frexp_mantissa": lambda x: np.frexp(x)[0], "frexp_exponent": lambda x: np.frexp(x)[1]}
BINARY = {"logaddexp2": np.logaddexp2}
# Largest distance from NumPy's result in representable values; the rest are exact.
ULPS = {"logaddexp2": 2}
EXPONENTS = np.array([0, 1, -1, 7, -30, 200, -200, 1023, 1024, -1022, -1074, -1075, -1100,
                      2000, -2000, 100000, -100000], dtype=np.int64)


def every_function(x, p, q, e, n):
    out = {name: f(x) for name, f in UNARY.items()}
    out.update({name: f(p, q) for name, f in BINARY.items()})
    out["ldexp"] = np.ldexp(e, n)
    return out


@pytest.fixture(scope="module", params=[(d, b) for d in (F32, F64) for b in BACKENDS],
                ids=[f"{d}-{b}" for d in ("f32", "f64") for b in BACKENDS])
def computed(request):
    dtype, backend = request.param
    x = specials(dtype)
    n = len(x)
    p, q = np.repeat(x, n), np.tile(x, n)  # every pair
    e = np.repeat(x, len(EXPONENTS))
    k = np.tile(EXPONENTS, n).astype(np.int32 if dtype == F32 else np.int64)
    with np.errstate(all="ignore"):
        want = every_function(x, p, q, e, k)
    got = xe.jit(every_function, backend=backend)(x, p, q, e, k)
    return got, want


@pytest.mark.parametrize("name", list(UNARY) + list(BINARY) + ["ldexp"])
def test_special_values_are_numpys(computed, name):
    got, want = computed
    assert_special_values_match(got[name], want[name], ULPS.get(name, 0), name)


@pytest.mark.parametrize("backend", BACKENDS)
def test_modf_and_fix_keep_the_sign_of_zero(backend):
    x = np.array([-0.5, -0.0, 0.0, -2.0, 2.0, -np.inf, np.inf, -1e-300], dtype=F64)
    frac, whole = xe.jit(np.modf, backend=backend)(x)
    assert np.array_equal(np.signbit(frac), np.signbit(np.modf(x)[0]))
    assert np.array_equal(np.signbit(whole), np.signbit(np.modf(x)[1]))
    assert frac[0] == -0.5 and np.signbit(whole[0])  # modf(-0.5) == (-0.5, -0.0)
    assert np.array_equal(np.signbit(xe.jit(np.fix, backend=backend)(x)), np.signbit(np.fix(x)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_nanargmax_of_an_all_nan_slice(backend):
    # NumPy raises ValueError; tracing on such an input raises it too. A compiled program
    # cannot raise: given one later, it answers 0 for that slice (and NumPy's index elsewhere).
    def f(x):
        return np.nanargmax(x, axis=1), np.nanargmin(x, axis=1)
    bad = np.array([[np.nan, np.nan], [1.0, np.nan]])
    with pytest.raises(ValueError, match="All-NaN slice"):
        xe.jit(f)(bad)
    good = np.array([[np.nan, 2.0], [1.0, np.nan]])
    run = xe.jit(f, backend=backend)
    np.testing.assert_array_equal(run(good)[0], np.nanargmax(good, axis=1))
    top, bottom = run(bad)
    assert top.tolist() == [0, 0] and bottom.tolist() == [0, 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_histogram_edges_follow_new_data(backend):
    # Without range=, the edges are computed in the program from the data's min and max.
    run = xe.jit(lambda x: np.histogram(x, bins=5), backend=backend)
    for x in (np.array([0.0, 1.0, 2.5, 2.5, 3.0]), np.array([-7.0, 1e-3, 4.0, 4.0, 9.0]),
              np.array([2.0, 2.0, 2.0, 2.0, 2.0]), np.linspace(-1, 1, 5) ** 3):
        counts, edges = run(x)
        want_counts, want_edges = np.histogram(x, bins=5)
        np.testing.assert_array_equal(counts, want_counts)
        np.testing.assert_array_equal(edges, want_edges)
        assert counts.dtype == want_counts.dtype and edges.dtype == want_edges.dtype


@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_into_an_argument_reach_the_caller(backend):
    def f(x, y):
        np.copyto(x[1], y[0])  # through a view of x: x itself changes
        np.fill_diagonal(y[:, :3], -1.0)
        np.putmask(x, x > 5, [100.0, 200.0])
        return x.sum()

    def make():
        return np.arange(12.0).reshape(3, 4), np.linspace(0, 1, 16).reshape(4, 4)
    x, y = make()
    want = f(x, y)
    xr, yr = make()
    got = xe.jit(f, backend=backend)(xr, yr)
    assert got == want
    np.testing.assert_array_equal(xr, x)
    np.testing.assert_array_equal(yr, y)
