"""Element-wise maximum, minimum and clamp give NumPy's bits, the sign of zero included, on
every backend.

np.maximum(a, b) is `a if (a > b or a is NaN) else b`: where a and b compare equal it is b,
so np.maximum(-0.0, +0.0) is +0.0 and np.maximum(+0.0, -0.0) is -0.0. The cpu kernels used
LLVM's llvm.maximum with nsz, which may give either zero: np.maximum(x, 0.0), a relu, was -0.0
at x = -0.0 (NumPy: +0.0), and 1 / relu(x) -inf (NumPy: +inf). np.clip(x, lo, hi) with scalar
bounds keeps x where it equals a bound (np.clip(+0.0, -0.0, 1) is +0.0); HLO's clamp, which
the interpreter and the cpu both ran as minimum(maximum(x, lo), hi), gave the bound.

Reductions (np.max over an axis) keep LLVM's llvm.maximum: NumPy's own reductions leave the
sign of a zero maximum to their SIMD loops, and docs/floating-point.md says so.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.passes.base import Pipeline
from xla_explorer.passes.buffer_assignment import BufferAssignment
from xla_explorer.passes.pipeline import default_passes
from xla_explorer.backends import BACKENDS
from xla_explorer.runtime.reference import run_module

from .test_exact_arithmetic import DTYPES, F32, F64, IDS, X86, bit_mismatches
from .test_exact_arithmetic import kernel_cache  # noqa: F401 (its autouse fixture, shared)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def values(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    return np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5,
                     float(info.max), float(info.smallest_subnormal)], dtype)


def pairs(dtype, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of values(dtype), repeated to n elements (so that the vector loop and its
    scalar remainder both see every pair)."""
    s = values(dtype)
    a, b = (np.resize(v.ravel(), n) for v in np.meshgrid(s, s, indexing="ij"))
    return a.copy(), b.copy()


def element_wise(a, b):
    zero = a.dtype.type(0)
    return {
        "maximum(a, b)": np.maximum(a, b),
        "maximum(b, a)": np.maximum(b, a),
        "minimum(a, b)": np.minimum(a, b),
        "minimum(b, a)": np.minimum(b, a),
        "relu": np.maximum(a, zero),
        "1 / relu": 1 / np.maximum(a, zero),
        "maximum(0, a)": np.maximum(zero, a),
        "minimum(a, -0.0)": np.minimum(a, -zero),
        "max(a * 1, b)": np.maximum(a * 1, b),  # fused with arithmetic before it
    }


def test_numpy_gives_the_second_operand_on_a_tie():
    """What the tests below hold the backends to, at lengths that take NumPy's SIMD loops
    and their scalar remainders."""
    for dtype in DTYPES:
        for n in (1, 3, 8, 17, 1001):
            neg, pos = np.full(n, -0.0, dtype), np.zeros(n, dtype)
            assert not np.signbit(np.maximum(neg, pos)).any()
            assert np.signbit(np.maximum(pos, neg)).all()
            assert np.signbit(np.minimum(pos, neg)).all()
            assert not np.signbit(np.minimum(neg, pos)).any()
            assert not np.signbit(np.maximum(neg, dtype(0))).any()
            assert not np.signbit(np.clip(pos, dtype(-0.0), dtype(1))).any()  # x kept
            assert np.signbit(np.clip(neg, dtype(0.0), dtype(1))).all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [121, 4099])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_element_wise_maximum_and_minimum_are_numpys_bits(backend, dtype, n):
    a, b = pairs(dtype, n)
    got = xe.jit(element_wise, backend=backend)(a, b)
    with np.errstate(all="ignore"):
        want = element_wise(a, b)
    assert bit_mismatches(got, want) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_relu_of_negative_zero_is_positive_zero(backend):
    x = np.array([-0.0, 0.0, -1.0, 2.0] * 5, F32)
    got = xe.jit(lambda x: 1 / np.maximum(x, F32(0)), backend=backend)(x)
    np.testing.assert_array_equal(got[:4], [np.inf, np.inf, np.inf, 0.5])


# -- HLO clamp -----------------------------------------------------------------------------

def clamp_module(dtype: str, n: int, scalar_bounds: bool) -> xe.Module:
    bounds = "[]" if scalar_bounds else f"[{n}]"
    return xe.verify(xe.parse_hlo(f"""\
HloModule m

ENTRY main {{
  lo = {dtype}{bounds} parameter(0)
  x = {dtype}[{n}] parameter(1)
  hi = {dtype}{bounds} parameter(2)
  ROOT c = {dtype}[{n}] clamp(lo, x, hi)
}}
"""))


def run_hlo(module: xe.Module, backend: str, *args):
    if backend == "interpreter":
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no NumPy warnings from HLO's defined cases
            (out,) = run_module(module, list(args))
        return out
    pipeline = Pipeline(default_passes())
    pipeline.run(module)
    (stage,) = [s for s in pipeline.stages if isinstance(s.artifact, BufferAssignment)]
    (out,) = BACKENDS["cpu"].compile(stage.module, stage.artifact)(*args)
    return out


def clip_with_scalar_bounds(x, lo, hi):
    """np.clip(x, lo, hi) element by element, each bound a scalar (NumPy's path that keeps x
    on a tie; with array bounds it gives the bound there)."""
    return np.array([np.clip(np.array([v]), lo_, hi_)[0] for v, lo_, hi_ in zip(x, lo, hi)],
                    x.dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_clamp_is_clip_with_scalar_bounds(backend, dtype):
    """clamp(lo, x, hi) at every triple of zeros of both signs, NaN, +-1 and +-inf: NaN if any
    is NaN, x where it equals a bound, hi where lo > hi, as np.clip(x, lo, hi) with scalar
    bounds."""
    s = np.array([np.nan, -0.0, 0.0, 1.0, -1.0, np.inf, -np.inf], dtype)
    lo, x, hi = (v.ravel().copy() for v in np.meshgrid(s, s, s, indexing="ij"))
    name = {F32: "f32", F64: "f64"}[dtype]
    got = run_hlo(clamp_module(name, x.size, scalar_bounds=False), backend, lo, x, hi)
    with np.errstate(all="ignore"):
        want = clip_with_scalar_bounds(x, lo, hi)
    assert np.signbit(want[(x == 0) & (lo == 0) & (hi > 0) & ~np.signbit(x)]).sum() == 0
    assert bit_mismatches({"clamp": got}, {"clamp": want}) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_clamp_with_scalar_bounds_keeps_x_on_a_tie(backend):
    x = np.array([0.0, -0.0, 0.5, -2.0, 3.0, np.nan] * 7, F32)
    lo, hi = np.array(-0.0, F32), np.array(1.0, F32)
    got = run_hlo(clamp_module("f32", x.size, scalar_bounds=True), backend, lo, x, hi)
    with np.errstate(all="ignore"):
        want = np.clip(x, lo[()], hi[()])
    assert np.signbit(want[0]) == 0 and np.signbit(want[1]) == 1
    assert bit_mismatches({"clamp": got}, {"clamp": want}) == []


def test_clamp_of_integers():
    for backend in BACKENDS:
        x = np.array([-5, -1, 0, 3, 9, 2], np.int32)
        lo, hi = np.array([-1] * 5 + [4], np.int32), np.array([2] * 5 + [1], np.int32)
        got = run_hlo(xe.verify(xe.parse_hlo("""\
HloModule m

ENTRY main {
  lo = s32[6] parameter(0)
  x = s32[6] parameter(1)
  hi = s32[6] parameter(2)
  ROOT c = s32[6] clamp(lo, x, hi)
}
""")), backend, lo, x, hi)
        np.testing.assert_array_equal(got, [-1, -1, 0, 2, 2, 1])  # lo > hi: hi


# -- the kernels still vectorize -------------------------------------------------------------

def _kernel_asm(f, *args) -> str:
    ex = xe.explore(f, *args, backend="cpu")
    ex.run(*args)
    (kernel,) = ex.kernels
    fn = getattr(ex.executable._py, kernel)
    return fn.inspect_asm(fn.signatures[0])


@pytest.mark.skipif(not X86, reason="reads x86 assembly")
@pytest.mark.parametrize("name, f", [
    ("maximum", lambda x, y: np.maximum(x, y)),
    ("relu", lambda x, y: np.maximum(x + y, F32(0))),
    ("minimum", lambda x, y: np.minimum(x, y)),
])
def test_element_wise_maximum_still_vectorizes(name, f):
    """A compare, an unordered test and a select per element: packed vcmpps (then a blend or
    a masked move) on vector registers, not one element at a time."""
    x, y = (np.random.default_rng(0).standard_normal(4096).astype(F32) for _ in range(2))
    asm = _kernel_asm(f, x, y)
    packed = re.findall(r"\bv(?:cmp\w*ps|maxps|minps)\s+[^\n]*%[yz]mm", asm)
    assert len(packed) >= 2, f"{name}: no packed compare on ymm/zmm registers"
