"""float16: NumPy computes each float16 ufunc in float32 and rounds the result once; the
tracer lowers it so (convert to f32, the op, convert back), the interpreter runs the HLO in
NumPy, and the CPU backend's kernels take float16 buffers as their bits, widen them on load
and round on store (codegen/scalar.py's f16 helpers). Each result is compared with NumPy's in
type and shape, and in value to the bit or within float16's tolerance."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer import compiler
from xla_explorer.api import tolerance
from xla_explorer.backends import BACKENDS, get_backend

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
F16 = np.float16

X = np.array([0.1, 1.5, -2.25, 65504, 6e-8, 300.7, -0.0, np.inf, np.nan, 1e-4], F16)
Y = np.array([3.0, 0.5, 7.1, 32, -6e-8, -1, 0.0, 1.0, 2.0, 3e-3], F16)


def _run(f, args, backend):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        want = f(*[np.copy(a) for a in args])
        got = xe.explore(f, *args, backend=backend).run(*[np.copy(a) for a in args])
    return got, want


def _bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_array_equal(np.where(np.isnan(got), 0, got), np.where(np.isnan(want), 0,
                                                                            want))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


# Correctly rounded in float32, so one rounding to float16 gives NumPy's bits exactly.
EXACT = {
    "add": lambda x, y: x + y,  # 65504 + 32 overflows to inf
    "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y,
    "divide": lambda x, y: x / y,
    "python float": lambda x, y: x * 0.1 + 2.5,  # 0.1 rounds to float16 first, as in NumPy
    "sqrt": lambda x, y: np.sqrt(np.abs(x)),
    # (not -0.0 against +0.0: NumPy's float16 loop keeps the first where its float32 loop
    # gives the second, and the explorer computes float16 in float32)
    "maximum": lambda x, y: (np.maximum(x[:6], y[:6]), np.minimum(x[7:], y[7:])),
    "compare": lambda x, y: (x > y, x == y, np.isnan(x), np.isinf(x)),
    "where": lambda x, y: np.where(x > 1, x, y),
    "data movement": lambda x, y: (x[::-1], np.concatenate([x, y]), x.reshape(2, 5).T,
                                   np.pad(x, 1)),
    "to float32 and back": lambda x, y: ((x.astype(np.float32) * 3).astype(F16),
                                         x.astype(np.float64), y.astype(np.float32)),
    "to integers": lambda x, y: (np.nan_to_num(x, nan=0, posinf=0)[:7].astype(np.int32),
                                 y[:3].astype(np.uint8)),
    "from integers": lambda x, y: (np.arange(10, dtype=np.int16) * np.int16(2049)).astype(F16),
    "mixed": lambda x, y: (x + np.float32(1), x + np.int8(3), x * np.ones(10, np.uint8)),
    "iota": lambda x, y: np.arange(2040, 2060, dtype=F16) + x[:1],
}


def _sweep(names, on_every_backend):
    """(name, backend) pairs: every function on the interpreter; on a compiling backend, those
    in `on_every_backend` (one of each kind), the rest under `make test-deep` (a Numba compile
    each)."""
    return [pytest.param(name, backend, marks=[] if not get_backend(backend).generates_code
                         or name in on_every_backend else [pytest.mark.deep])
            for name in names for backend in BACKENDS]


@pytest.mark.parametrize("name,backend", _sweep(EXACT, {
    "add", "divide", "python float", "compare", "data movement", "to integers", "mixed"}))
def test_float16_matches_numpy_to_the_bit(name, backend):
    got, want = _run(EXACT[name], [X, Y], backend)
    for g, w in (zip(got, want) if isinstance(want, tuple) else [(got, want)]):
        _bits_equal(g, w)


# Functions NumPy computes with its own float32 routines: within float16's tolerance.
CLOSE = {
    "sin": lambda x, y: np.sin(x[:6]) * y[:6],
    "exp": lambda x, y: np.exp(y),
    "arcsinh": lambda x, y: np.arcsinh(x),
    "power": lambda x, y: np.abs(y) ** 1.7,
    "sum": lambda x, y: (np.sum(y), np.sum(y.reshape(2, 5), axis=1), np.sum(y, dtype=np.float32)),
    "mean": lambda x, y: (np.mean(y), y.reshape(2, 5).mean(axis=0)),
    "max and argmax": lambda x, y: (np.max(y), np.argmax(y), np.min(y)),
    "var": lambda x, y: np.var(y[:6]),
    "dot": lambda x, y: (y[:4] @ y[4:8], y.reshape(2, 5) @ y.reshape(5, 2)),
}


@pytest.mark.parametrize("name,backend", _sweep(CLOSE, {"exp", "sum", "max and argmax", "dot"}))
def test_float16_functions_match_numpy_within_tolerance(name, backend):
    got, want = _run(CLOSE[name], [X, Y], backend)
    rtol, atol = tolerance(F16)
    for g, w in (zip(got, want) if isinstance(want, tuple) else [(got, want)]):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=name)


def test_float64_to_float16_rounds_once():
    """Halfway between two float16s plus a little: rounding through float32 first would make
    it a tie and round it to even, the wrong way."""
    lo = np.float64(1.0)
    step = 2.0 ** -10
    x = np.array([lo + step / 2 + 2.0 ** -40, lo + step / 2, lo + 3 * step / 2,
                  lo + step / 2 - 2.0 ** -40, 65519.999, 65520.0, 2.0 ** -25, 2.0 ** -25 + 2.0 ** -60])
    for backend in BACKENDS:
        got, want = _run(lambda x: x.astype(F16), [x], backend)
        _bits_equal(got, want)


def test_the_cpu_kernel_takes_float16_as_bits():
    ex = xe.explore(lambda x, y: x * y + 1, X, Y, backend="cpu")
    source = "\n".join(ex.kernels.values())
    assert "f16_load(" in source and "f16_bits(" in source
    assert "f16[10]" in ex.hlo(0) and "f32[10]" in ex.hlo(0)  # computed in float32
    assert ex.buffers.module.entry.root is not None
    sizes = [b.size for b in ex.buffers.buffers if b.shape.dtype == F16]
    assert sizes and all(size == 2 * 10 for size in sizes)  # two bytes an element


def test_a_float16_reduce_in_hlo_is_refused_by_the_cpu_backend_with_a_reason():
    text = """\
HloModule r

add_f16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  ROOT s = f16[] add(a, b)
}

ENTRY main {
  x = f16[8] parameter(0)
  zero = f16[] constant(0)
  ROOT r = f16[] reduce(x, zero), dimensions={0}, to_apply=add_f16
}
"""
    module = xe.parse_hlo(text)
    x = np.arange(8, dtype=F16)
    done = compiler.compile(module, "interpreter")
    assert done.executable(x)[0] == np.sum(x)
    with pytest.raises(xe.UnsupportedOpError, match="float16 reduce.*convert"):
        compiler.compile(module, "cpu").executable(x)


def test_float16_arguments_and_numpy_scalars():
    f = xe.jit(lambda x, s: x * s + np.float16(0.5))
    got = f(Y, np.float16(3.3))
    want = Y * np.float16(3.3) + np.float16(0.5)
    _bits_equal(got, want)
    got = f(Y, 2.2)  # a weak Python float
    _bits_equal(got, Y * 2.2 + np.float16(0.5))
