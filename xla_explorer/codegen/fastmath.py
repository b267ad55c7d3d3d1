"""exp, log and tanh that vectorize inside Numba kernels, as XLA's CPU backend writes its own.

Numba's `np.exp`, `np.log` and `np.tanh` are calls into the C library here (no SVML), one
element at a time, so a fused kernel calling them is several times slower than NumPy, whose
own loops are SIMD. These are branch-free polynomials (every special case is a select), so
LLVM vectorizes the loop that calls them:

  exp   Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, a Taylor polynomial in r, then a
        scale by 2**n built from exponent bits in two halves (so results down to the smallest
        denormal are right). float32: degree 7; float64: degree 13.
  log   x = 2**e * m with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s), s = (m-1)/(m+1),
        as an odd series in s. Denormal inputs are scaled up first.
  tanh  float32: a fitted polynomial in x**2 for |x| < 0.625, else 1 - 2 / (exp(2|x|) + 1).
        float64 keeps Numba's `np.tanh`: a fit to 1e-16 over the small range needs more terms
        than it gains.

Special values follow NumPy: exp(-inf) = 0, exp(inf) = inf, exp(nan) = nan, overflow to inf,
underflow to 0; log(0) = -inf, log(x < 0) = nan, log(inf) = inf; tanh(+-inf) = +-1. They are
compiled with the kernels' fastmath flags, which leave out `nnan`/`ninf` (so those selects
survive) and `arcp`. Measured errors against NumPy over the full ranges: tests/codegen/
test_fastmath.py.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

# Compiled as functions of their own, with fastmath flags that leave out `reassoc`: the
# kernels that call them allow reassociation (reductions vectorize with it), which would
# undo the Cody-Waite split of ln 2 and the order of the exponent scaling here. LLVM inlines
# them into the calling loop and keeps each instruction's own flags, so the loop still
# vectorizes.
_FLAGS = dict(fastmath={"nsz", "contract", "afn"}, error_model="numpy", cache=True)

__all__ = ["exp_f32", "exp_f64", "log_f32", "log_f64", "tanh_f32", "tanh_f64"]


# -- reading and writing float bits ----------------------------------------------------------


def _bitcast(src, dst):
    @intrinsic
    def cast(typingctx, x):
        if x != src:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(dst))
        return dst(src), codegen
    return cast


f32_from_bits = _bitcast(types.int32, types.float32)
bits_of_f32 = _bitcast(types.float32, types.int32)
f64_from_bits = _bitcast(types.int64, types.float64)
bits_of_f64 = _bitcast(types.float64, types.int64)


# -- float32 ---------------------------------------------------------------------------------

_F = np.float32
_LOG2E_32 = _F(1.44269504088896341)
_LN2_HI_32 = _F(0.693359375)  # few mantissa bits, so n * _LN2_HI_32 is exact
_LN2_LO_32 = _F(-2.12194440e-4)
_EXP_HI_32 = _F(88.72283935546875)  # above: inf
_EXP_LO_32 = _F(-103.97207708)  # below: 0 (half the smallest denormal)


@njit(inline="always")
def _pow2_f32(n):
    """(2**a, 2**b) with a + b = n, each a normal float32, for n in [-150, 128]."""
    a = n >> 1
    b = n - a
    return f32_from_bits(np.int32((a + 127) << 23)), f32_from_bits(np.int32((b + 127) << 23))


@njit(**_FLAGS)
def exp_f32(x):
    xc = min(max(x, _EXP_LO_32), _EXP_HI_32)
    n = np.floor(xc * _LOG2E_32 + _F(0.5))
    r = xc - n * _LN2_HI_32 - n * _LN2_LO_32
    p = _F(1) + r * (_F(1) + r * (_F(0.5) + r * (_F(1 / 6) + r * (
        _F(1 / 24) + r * (_F(1 / 120) + r * (_F(1 / 720) + r * _F(1 / 5040)))))))
    sa, sb = _pow2_f32(np.int32(n))
    y = (p * sa) * sb  # in this order: p * 2**a never overflows, and rounds at most once
    y = np.float32(np.inf) if x > _EXP_HI_32 else y
    y = _F(0) if x < _EXP_LO_32 else y
    return x if x != x else y


_SQRT2_32 = _F(1.41421356237309505)
_LN2_32 = _F(0.693147180559945309)


@njit(**_FLAGS)
def log_f32(x):
    tiny = x < _F(1.1754943508222875e-38)  # denormal (or zero, negative): scale by 2**23
    xs = x * _F(8388608.0) if tiny else x
    bits = bits_of_f32(xs)
    e = np.float32(((bits >> 23) & 0xFF) - 127 - (23 if tiny else 0))
    m = f32_from_bits(np.int32((bits & 0x7FFFFF) | 0x3F800000))
    big = m > _SQRT2_32
    m = m * _F(0.5) if big else m
    e = e + _F(1) if big else e
    s = (m - _F(1)) / (m + _F(1))
    z = s * s
    lm = _F(2) * s * (_F(1) + z * (_F(1 / 3) + z * (_F(1 / 5) + z * (_F(1 / 7) + z * _F(1 / 9)))))
    y = e * _LN2_32 + lm
    y = np.float32(np.inf) if x == np.float32(np.inf) else y
    y = np.float32(-np.inf) if x == _F(0) else y
    return np.float32(np.nan) if (x < _F(0) or x != x) else y


# tanh(x) / x as a polynomial in x*x on |x| < 0.625 (a least-squares fit at Chebyshev
# points; relative error 5e-9 there).
_T0, _T1, _T2 = _F(1.0), _F(-0.33333277336168343), _F(0.13331413255738084)
_T3, _T4, _T5 = _F(-0.0537395150250148), _F(0.020641381690148584), _F(-0.005709126874878759)


@njit(**_FLAGS)
def tanh_f32(x):
    a = abs(x)
    z = x * x
    small = x * (_T0 + z * (_T1 + z * (_T2 + z * (_T3 + z * (_T4 + z * _T5)))))
    big = _F(1) - _F(2) / (exp_f32(_F(2) * a) + _F(1))
    big = big if x >= _F(0) else -big
    y = small if a < _F(0.625) else big
    return x if x != x else y


# -- float64 ---------------------------------------------------------------------------------

_D = np.float64
_LOG2E_64 = 1.4426950408889634
_LN2_HI_64 = 6.93147180369123816490e-01  # ln 2 with its last 32 bits zero
_LN2_LO_64 = 1.90821492927058770002e-10
_EXP_HI_64 = 709.782712893384
_EXP_LO_64 = -745.1332191019412


@njit(inline="always")
def _pow2_f64(n):
    a = n >> 1
    b = n - a
    return f64_from_bits(np.int64((a + 1023) << 52)), f64_from_bits(np.int64((b + 1023) << 52))


@njit(**_FLAGS)
def exp_f64(x):
    xc = min(max(x, _EXP_LO_64), _EXP_HI_64)
    n = np.floor(xc * _LOG2E_64 + 0.5)
    r = (xc - n * _LN2_HI_64) - n * _LN2_LO_64
    p = 1.0 + r * (1.0 + r * (1 / 2 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (
        1 / 720 + r * (1 / 5040 + r * (1 / 40320 + r * (1 / 362880 + r * (
            1 / 3628800 + r * (1 / 39916800 + r * (1 / 479001600 + r / 6227020800))))))))))))
    sa, sb = _pow2_f64(np.int64(n))
    y = (p * sa) * sb
    y = np.inf if x > _EXP_HI_64 else y
    y = 0.0 if x < _EXP_LO_64 else y
    return x if x != x else y


@njit(**_FLAGS)
def log_f64(x):
    tiny = x < 2.2250738585072014e-308
    xs = x * 4503599627370496.0 if tiny else x  # 2**52
    bits = bits_of_f64(xs)
    e = _D(((bits >> 52) & 0x7FF) - 1023 - (52 if tiny else 0))
    m = f64_from_bits(np.int64((bits & 0xFFFFFFFFFFFFF) | 0x3FF0000000000000))
    big = m > 1.4142135623730951
    m = m * 0.5 if big else m
    e = e + 1.0 if big else e
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    lm = 2.0 * s * (1.0 + z * (1 / 3 + z * (1 / 5 + z * (1 / 7 + z * (1 / 9 + z * (
        1 / 11 + z * (1 / 13 + z * (1 / 15 + z * (1 / 17 + z * (1 / 19 + z / 21))))))))))
    y = e * _LN2_HI_64 + (lm + e * _LN2_LO_64)
    y = np.inf if x == np.inf else y
    y = -np.inf if x == 0.0 else y
    return np.nan if (x < 0.0 or x != x) else y


@njit(**_FLAGS)
def tanh_f64(x):
    return np.tanh(x)
