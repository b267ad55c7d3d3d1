"""exp, expm1, log, log1p, tanh and logistic that vectorize inside Numba kernels: one function
per (function, dtype), `exp_f32`, `exp_f64`, ..., written the way XLA's CPU backend writes its
own (range reduction, a polynomial, the exponent put in by bits).

Why: without Intel's SVML (docs/machine-facts.md) Numba lowers `np.exp`, `np.log` and
`np.tanh` to calls into the C library, one element at a time, so a loop calling them does not
vectorize (benchmarks/fastmath_vectorize.py times both; docs/performance.md). These are
branch-free (each special case is a select on values already computed), so LLVM vectorizes
the calling loop. Each converts its argument to its own dtype and computes only in it (every
constant is typed).

  exp, expm1  x = n ln2 + r, |r| <= ln2/2 (Cody-Waite: ln 2 in two parts, the first short
              enough that n * hi is exact), e^r - 1 = r + r^2 E(r), E minimax (degree 5 / 10).
              exp = (1 + r + r^2 E) 2^n with 1 + r summed exactly (Fast2Sum); expm1 =
              ((2^a - 2^-b) + r 2^a + (c + r^2 E) 2^a) 2^b, again with an exact first sum and
              with c, the rounding error of r, so its cancellation near x = ln 2 costs
              nothing. In exp (and tanh and logistic) 2^n is an ldexp, rounded once,
              where LLVM makes a vector ldexp one instruction (AVX-512's vscalef);
              elsewhere (AVX2, NEON: a libm call per element there) and in expm1 it is
              2^a 2^b (a + b = n, each a normal float). Either way results overflow, and
              underflow through the denormals to 0, exactly where NumPy's do, with the
              same largest errors (below); where it is one instruction, the ldexp saves
              a multiply and the exponent arithmetic (docs/performance.md). The
              argument is clamped first to where
              the result is already inf / 0 / -1.
  log, log1p  x = 2^k m, m in [sqrt(1/2), sqrt(2)) from the bits (denormal inputs scaled by
              2^23 / 2^54 first), f = m - 1, s = f / (2 + f), z = s^2:
              log(1 + f) = f - (f^2/2 - s (f^2/2 + z L(z))), L minimax (degree 3 / 6), k ln 2
              in two parts, f added last. log1p takes m from u = 1 + x and adds the rounding
              error of that sum back as c / u (c computed exactly).
  tanh        |x| < 0.625: x + x^3 T(x^2), T minimax (degree 5 / 11); above, 1 - 2 / (e + 1)
              with e = exp(2|x|), corrected for the rounding of e + 1. Both are computed and
              one is selected; the sign is copied from x by bits (tanh(-0.0) = -0.0 under nsz).
  logistic    z = exp(-|x|); 1 / (1 + z) for x >= 0, z / (1 + z) below, so the far left tail
              gives its tiny and denormal values (1 / (1 + exp(-x)) gives 0 there); the
              rounding of 1 + z is corrected for.

Coefficients: Remez exchange in mpmath (50 digits) on the reduced ranges, then rounded to the
dtype; their approximation errors are below 0.02 ulp, so what is left is rounding.

Special values are NumPy's, bit for bit (sign of zero included): exp(-inf) = 0, exp(inf) = inf,
NaN in NaN out everywhere, overflow to inf and underflow to denormals and then 0 at NumPy's
thresholds; log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, denormal inputs to the bound
below; tanh(+-inf) = +-1, and +-1 exactly from |x| = 10 (float32) / 19.1 (float64) on, as
NumPy's; tanh(+-0) = +-0; tanh, expm1 and log1p of tiny x are x; log1p(-1) = -inf,
log1p(x < -1) = NaN; logistic(-inf, 0, inf) = 0, 0.5, 1.

Maximum error in ulp (tests/codegen/test_fastmath.py checks the bounds):

                     float32               float64
               vs exact   vs NumPy   vs exact   vs NumPy
  exp            0.78        2         0.80        1
  expm1          1.05        3         1.10        1
  log            0.86        4         0.87        1
  log1p          0.88        2         0.87        1
  tanh           1.09        2         1.09        1
  logistic       1.97        -         1.92        -

vs exact: |result - exact| / ulp(exact rounded to the dtype), the exact value from float64 for
float32 (over all 2**32 float32 inputs) and from long double for float64 (over 60 million
points spread over each function's whole range, plus edges). vs NumPy: distance in
representable values from NumPy's result; for float32 that is mostly NumPy's own error (its
float32 exp, expm1 and log are up to 2.5, 2.6 and 3.8 ulp from the exact value). NumPy has no
logistic (scipy.special.expit gives 0 where the true value is a denormal).

fastmath flags: `FLAGS = {"nsz", "contract", "afn"}`, what every public function is compiled
with. The others, added one at a time (max ulp against the exact value, same sweeps):
  reassoc     the kernels' accumulations carry it (scalar.add_reassoc). It undoes every exact sum above: exp gives 0 or
              inf at 146 wrong inputs (the scaling order), log1p is 1.7e7 ulp off
              (x - ((1 + x) - 1) -> 0), expm1 4.5 and logistic 4.4 (float32), logistic 213
              (float64), log 2.0.
  nnan, ninf  (fastmath=True) LLVM may assume no NaN or Inf: `x != x` folds to False and the
              Inf selects vanish; NaN and Inf come out wrong in exp, expm1 and logistic.
  arcp        x / d -> x * (1 / d): logistic goes from 1.6 to 2.1 ulp (the others do not
              change); the kernels leave it out too (cpu/driver.py, FASTMATH).
  contract (fused multiply-add) only removes roundings here, and nsz concerns only the sign
  of zero, which these functions set by bits or select wherever NumPy's result has one.

Decoration: `@njit(fastmath=FLAGS, error_model="numpy", forceinline=True, cache=True)`, each
compiled as a function of its own, not `inline="always"`:
  - Numba's `inline="always"` pastes the body into the caller before typing, so the caller's
    flags would apply: a kernel compiled with reassoc gave the measurements above.
  - Compiled on its own, every instruction keeps its own flags; `forceinline=True` marks the
    LLVM function `alwaysinline`, so LLVM inlines it into the calling loop and vectorizes
    that. Without it LLVM's inliner left tanh_f64 (too big) as a call in a plain loop, which
    then did not vectorize (docs/performance.md).
  - `cache=True`: a kernel compiled with `cache=True` carries them in its own cache entry;
    theirs saves compiling them again when a new kernel needs them. Numba keys a kernel's
    cache on the kernel's own file only, so that file must change when this one does
    (exprs.PRELUDE names a digest of it).
The private helpers are `inline="always"`: they paste into the public functions, where FLAGS
apply.
"""
from __future__ import annotations

import llvmlite.binding as ll
import llvmlite.ir as lir
import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .target import cpu_features

FLAGS = frozenset({"nsz", "contract", "afn"})
_JIT = dict(fastmath=set(FLAGS), error_model="numpy", forceinline=True, cache=True)
_INLINE = dict(inline="always")

__all__ = ["exp_f32", "exp_f64", "expm1_f32", "expm1_f64", "log_f32", "log_f64",
           "log1p_f32", "log1p_f64", "tanh_f32", "tanh_f64", "logistic_f32", "logistic_f64"]

_F = np.float32
_D = np.float64


def _bitcast(src, dst):
    """A reinterpretation of src's bits as dst (LLVM `bitcast`). NumPy's scalar `.view` does
    the same in Numba but fails to compile on a variable assigned more than once."""
    @intrinsic
    def cast(typingctx, v):
        if v != src:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(dst))
        return dst(src), codegen
    return cast


_bits32 = _bitcast(types.float32, types.int32)
_f32 = _bitcast(types.int32, types.float32)
_bits64 = _bitcast(types.float64, types.int64)
_f64 = _bitcast(types.int64, types.float64)


@intrinsic
def _ldexp(typingctx, y, k):
    """y 2**k rounded once, overflow and denormals included (LLVM `llvm.ldexp`)."""
    if not isinstance(y, types.Float) or k != types.int32:
        return None

    def codegen(context, builder, sig, args):
        fty = context.get_value_type(sig.args[0])
        fn = cgutils.get_or_insert_function(
            builder.module, lir.FunctionType(fty, [fty, lir.IntType(32)]),
            f"llvm.ldexp.{fty.intrinsic_name}.i32")
        return builder.call(fn, args)
    return y(y, k), codegen


def _vector_ldexp_is_one_instruction() -> bool:
    """Whether LLVM compiles a vectorized `llvm.ldexp` to one instruction for the CPU Numba
    compiles for: AVX-512's vscalef on x86-64. Elsewhere (AVX2, NEON) it becomes a libm call
    per element, far slower than the two multiplies used there instead (docs/performance.md)."""
    return ll.get_process_triple().startswith("x86_64") and "avx512f" in cpu_features()


_LDEXP_IS_ONE_INSTRUCTION = _vector_ldexp_is_one_instruction()

# ============================================================================================
# float32
# ============================================================================================

_LOG2E_F = _F(1.4426950408889634)
_LN2_HI_F = _F(0.693145751953125)  # ln 2 to 15 bits: n * hi is exact for |n| < 2**9
_LN2_LO_F = _F(1.4286068e-06)  # ln 2 - hi
_EXP_HI_F = _F(88.72283935546875)  # the least x with exp(x) = inf in float32
_EXP_LO_F = _F(-103.97208404541016)  # the greatest x with exp(x) = 0 (below 2**-150)
_EXPM1_LO_F = _F(-20.0)  # expm1 = -1 from -17.32 on
_FLT_MIN = _F(1.1754943508222875e-38)  # smallest normal
_FLT_MAX = _F(3.4028234663852886e38)
_TINY_F = _F(2.9802322387695312e-08)  # 2**-25: below, expm1(x) and log1p(x) round to x
# expm1(r) = r + r^2 E(r), |r| <= ln2/2: minimax, error 1.4e-9 in E
_E0F, _E1F, _E2F = _F(0.5), _F(0.16666666757502320), _F(0.041666463359423856)
_E3F, _E4F, _E5F = _F(0.0083332856417223411), _F(0.0013933822722284201), _F(0.00019907839993408737)
# log(1+f) = f - f^2/2 + s (f^2/2 + z L(z)), z = s^2 <= 0.0295: minimax, error 1.1e-9 in L
_L0F, _L1F = _F(0.66666666552604144), _F(0.40000123091765030)
_L2F, _L3F = _F(0.28550698925849167), _F(0.23333418803688425)
# tanh(a) = a + a^3 T(a^2) below _TANH_SPLIT_F: minimax, relative error 5.9e-10 in tanh
_TANH_SPLIT_F = _F(0.625)
_TANH_HI_F = _F(10.0)  # tanh = 1 from 9.01 on (and from 10.0 in NumPy's)
_T0F, _T1F, _T2F = _F(-0.33333333183275743), _F(0.13333304970005694), _F(-0.053959547192488687)
_T3F, _T4F, _T5F = _F(0.021770970298084828), _F(-0.0083499238755892298), _F(0.0022988452742783412)


@njit(**_INLINE)
def _pow2_f32(k):
    """2**k for an integer k in [-126, 127], from its exponent bits."""
    return _f32(np.int32((k + 127) << 23))


@njit(**_INLINE)
def _clamp_f32(x, lo, hi):
    """x limited to [lo, hi]; NaN -> lo (callers select NaN back at the end)."""
    x = x if x > lo else lo
    return x if x < hi else hi


if _LDEXP_IS_ONE_INSTRUCTION:
    @njit(**_INLINE)
    def _scale_f32(y, k):
        """y 2**k for y in [0.5, 2] and an integer k in [-150, 128], rounded once."""
        return _ldexp(y, k)
else:
    @njit(**_INLINE)
    def _scale_f32(y, k):
        """y 2**k for y in [0.5, 2] and an integer k in [-150, 128], as y 2**a 2**b with
        a + b = k, each a normal float: rounded once (twice into denormals)."""
        a = k >> 1
        return (y * _pow2_f32(a)) * _pow2_f32(k - a)


@njit(**_INLINE)
def _exp_reduce_f32(x):
    """(r, c, k) with x = k ln2 + r + c, |r| <= ln2/2, c the rounding error of r, for x in
    [_EXP_LO_F, _EXP_HI_F]; k an int32."""
    n = np.rint(x * _LOG2E_F)
    hi = x - n * _LN2_HI_F  # exact
    lo = n * _LN2_LO_F
    r = hi - lo
    return r, (hi - r) - lo, np.int32(n)


@njit(**_INLINE)
def _expm1_poly_f32(r):
    """expm1(r) - r for |r| <= ln2/2."""
    return r * r * (_E0F + r * (_E1F + r * (_E2F + r * (_E3F + r * (_E4F + r * _E5F)))))


@njit(**_INLINE)
def _exp_finish_f32(r, k):
    """exp(r) 2**k: 1 + r with its rounding error kept (Fast2Sum, |r| < 1), then scaled.
    The error c of r moves exp by well under 0.1 ulp and is left out."""
    s = _F(1) + r
    e = r - (s - _F(1))
    return _scale_f32(s + (e + _expm1_poly_f32(r)), k)


@njit(**_INLINE)
def _expm1_finish_f32(r, c, k):
    """exp(r + c) 2**k - 1 as ((2**a - 2**-b) + r 2**a + (c + E-part) 2**a) 2**b with a + b =
    k, each a normal float, the first sum exact as a Fast2Sum pair: 2**a - 2**-b is exact for
    k <= 24, and it outweighs r 2**a (or is 0, for k = 0). c counts here: near x = ln 2 the
    result cancels to a third of r."""
    a = k >> 1
    b = k - a
    pa = _pow2_f32(a)
    big = pa - _pow2_f32(-b)
    small = r * pa
    s = big + small
    e = small - (s - big)
    return (s + (e + (c + _expm1_poly_f32(r)) * pa)) * _pow2_f32(b)


@njit(**_INLINE)
def _log_tail_f32(f):
    """t with log(1 + f) = f - t, for f in [sqrt(1/2) - 1, sqrt(2) - 1]: the caller adds
    f last, so the only rounding at f's size is its own."""
    s = f / (_F(2) + f)
    z = s * s
    hfsq = _F(0.5) * f * f
    return hfsq - s * (hfsq + z * (_L0F + z * (_L1F + z * (_L2F + z * _L3F))))


@njit(**_JIT)
def exp_f32(x):
    x = _F(x)
    r, _, k = _exp_reduce_f32(_clamp_f32(x, _EXP_LO_F, _EXP_HI_F))
    y = _exp_finish_f32(r, k)
    return x if x != x else y


@njit(**_JIT)
def expm1_f32(x):
    x = _F(x)
    r, c, k = _exp_reduce_f32(_clamp_f32(x, _EXPM1_LO_F, _EXP_HI_F))
    y = _expm1_finish_f32(r, c, k)
    y = x if abs(x) < _TINY_F else y  # tiny x and -0.0 exactly
    return x if x != x else y


@njit(**_JIT)
def log_f32(x):
    x = _F(x)
    tiny = x < _FLT_MIN  # denormal (also zero and negative, selected away below)
    xs = x * _F(8388608.0) if tiny else x  # 2**23
    # Adding 1 - sqrt(1/2) in the bits moves the cut between binades to sqrt(1/2).
    ix = _bits32(xs) + (0x3F800000 - 0x3F3504F3)
    k = _F((ix >> 23) - 127 - (23 if tiny else 0))
    f = _f32(np.int32((ix & 0x007FFFFF) + 0x3F3504F3)) - _F(1)
    y = k * _LN2_HI_F + (f - (_log_tail_f32(f) - k * _LN2_LO_F))
    y = x if x > _FLT_MAX else y  # inf
    y = _F(-np.inf) if x == _F(0) else y
    return y if x >= _F(0) else _F(np.nan)  # negative or NaN


@njit(**_JIT)
def log1p_f32(x):
    x = _F(x)
    u = _F(1) + x
    ix = _bits32(u) + (0x3F800000 - 0x3F3504F3)
    ki = (ix >> 23) - 127
    k = _F(ki)
    f = _f32(np.int32((ix & 0x007FFFFF) + 0x3F3504F3)) - _F(1)
    # The rounding error of u = 1 + x, exactly, relative to u: log1p(x) = log(u) + c / u.
    c = (_F(1) - (u - x)) if ki >= 2 else (x - (u - _F(1)))
    c = c / u if ki < 25 else _F(0)
    y = k * _LN2_HI_F + (f - (_log_tail_f32(f) - (k * _LN2_LO_F + c)))
    y = x if abs(x) < _TINY_F else y  # tiny x and -0.0 exactly
    y = x if x > _FLT_MAX else y  # inf
    y = _F(-np.inf) if x == _F(-1) else y
    return y if x >= _F(-1) else _F(np.nan)  # below -1 or NaN


@njit(**_JIT)
def tanh_f32(x):
    x = _F(x)
    ax = abs(x)
    z = ax * ax
    small = ax + ax * z * (_T0F + z * (_T1F + z * (_T2F + z * (_T3F + z * (_T4F + z * _T5F)))))
    r, _, k = _exp_reduce_f32(_F(2) * min(ax, _TANH_HI_F))
    e2 = _exp_finish_f32(r, k)  # exp(2|x|), >= 3.49 where it is used
    d = e2 + _F(1)
    w = _F(2) / d
    w = w - _F(0.5) * w * w * (_F(1) - (d - e2))  # 2 / (e2 + 1) for the exact sum
    big = _F(1) - w
    y = small if ax < _TANH_SPLIT_F else big
    y = _f32(np.int32(_bits32(y) | (_bits32(x) & np.int32(-0x80000000))))  # copysign
    return x if x != x else y


@njit(**_JIT)
def logistic_f32(x):
    x = _F(x)
    r, _, k = _exp_reduce_f32(_clamp_f32(-abs(x), _EXP_LO_F, _F(0)))  # e^-|x|
    z = _exp_finish_f32(r, k)
    d = _F(1) + z
    y = _F(1) / d if x >= _F(0) else z / d
    y = y - y * ((z - (d - _F(1))) / d)  # 1 + z is d (1 + that) exactly: its rounding undone
    return x if x != x else y


# ============================================================================================
# float64
# ============================================================================================

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 to 32 bits: n * hi is exact for |n| < 2**21
_LN2_LO = 1.9082149292705877e-10  # ln 2 - hi
_EXP_HI = 709.7827128933841  # the least x with exp(x) = inf
_EXP_LO = -745.1332191019412  # the greatest x with exp(x) = 0 (below 2**-1075)
_EXPM1_LO = -40.0  # expm1 = -1 from -37.43 on
_DBL_MIN = 2.2250738585072014e-308
_DBL_MAX = 1.7976931348623157e308
_TINY = 5.551115123125783e-17  # 2**-54: below, expm1(x) and log1p(x) round to x
# expm1(r) = r + r^2 E(r), |r| <= ln2/2: minimax, error 1.4e-18 in E
_E0, _E1, _E2 = 0.5, 0.16666666666666671074, 0.041666666666666684125
_E3, _E4, _E5 = 0.0083333333333260244189, 0.0013888888888874175932, 0.00019841269875206665670
_E6, _E7, _E8 = 2.4801587347865320874e-05, 2.7557254911728995292e-06, 2.7557252405432212597e-07
_E9, _E10 = 2.5105419840132526874e-08, 2.0921760457742887801e-09
# log(1+f) = f - f^2/2 + s (f^2/2 + z L(z)), z = s^2 <= 0.0295: minimax, error 3e-16 in L
_L0, _L1, _L2 = 0.66666666666666697487, 0.39999999999897885478, 0.28571428626652053595
_L3, _L4, _L5 = 0.22222211031687186516, 0.18182896210091250137, 0.15331497729160093843
_L6 = 0.14619097031884902244
# tanh(a) = a + a^3 T(a^2) below _TANH_SPLIT: minimax, relative error 1.4e-18 in tanh
_TANH_SPLIT = 0.625
_TANH_HI = 20.0  # tanh = 1 from 19.06 on
_T0, _T1, _T2 = -0.33333333333333332965, 0.13333333333333058316, -0.053968253967914033039
_T3, _T4, _T5 = 0.021869488519686255816, -0.0088632351170767203347, 0.003592121915913430266
_T6, _T7, _T8 = -0.0014557766353529381527, 0.00058966649154284765978, -0.00023760852273922495835
_T9, _T10, _T11 = 0.00009260516589038907181, -0.000031237664461954776512, 6.5021414582624554619e-6


@njit(**_INLINE)
def _pow2_f64(k):
    """2**k for an integer k in [-1022, 1023], from its exponent bits."""
    return _f64(np.int64((k + 1023) << 52))


@njit(**_INLINE)
def _clamp_f64(x, lo, hi):
    """x limited to [lo, hi]; NaN -> lo (callers select NaN back at the end)."""
    x = x if x > lo else lo
    return x if x < hi else hi


if _LDEXP_IS_ONE_INSTRUCTION:
    @njit(**_INLINE)
    def _scale_f64(y, k):
        """y 2**k for y in [0.5, 2] and an integer k in [-1075, 1024], rounded once."""
        return _ldexp(y, k)
else:
    @njit(**_INLINE)
    def _scale_f64(y, k):
        """y 2**k as _scale_f32, for k in [-1075, 1024]."""
        a = np.int64(k) >> 1
        return (y * _pow2_f64(a)) * _pow2_f64(np.int64(k) - a)


@njit(**_INLINE)
def _exp_reduce_f64(x):
    """(r, c, k) as _exp_reduce_f32, for x in [_EXP_LO, _EXP_HI]."""
    n = np.rint(x * _LOG2E)
    hi = x - n * _LN2_HI  # exact
    lo = n * _LN2_LO
    r = hi - lo
    return r, (hi - r) - lo, np.int32(n)


@njit(**_INLINE)
def _expm1_poly_f64(r):
    """expm1(r) - r for |r| <= ln2/2."""
    return r * r * (_E0 + r * (_E1 + r * (_E2 + r * (_E3 + r * (_E4 + r * (_E5 + r * (
        _E6 + r * (_E7 + r * (_E8 + r * (_E9 + r * _E10))))))))))


@njit(**_INLINE)
def _exp_finish_f64(r, k):
    """exp(r) 2**k, as _exp_finish_f32."""
    s = 1.0 + r
    e = r - (s - 1.0)
    return _scale_f64(s + (e + _expm1_poly_f64(r)), k)


@njit(**_INLINE)
def _expm1_finish_f64(r, c, k):
    """exp(r + c) 2**k - 1, as _expm1_finish_f32 (exact first sum for k <= 53)."""
    a = np.int64(k >> 1)
    b = np.int64(k) - a
    pa = _pow2_f64(a)
    big = pa - _pow2_f64(-b)
    small = r * pa
    s = big + small
    e = small - (s - big)
    return (s + (e + (c + _expm1_poly_f64(r)) * pa)) * _pow2_f64(b)


@njit(**_INLINE)
def _log_tail_f64(f):
    """t with log(1 + f) = f - t, as _log_tail_f32."""
    s = f / (2.0 + f)
    z = s * s
    hfsq = 0.5 * f * f
    return hfsq - s * (hfsq + z * (_L0 + z * (_L1 + z * (_L2 + z * (_L3 + z * (
        _L4 + z * (_L5 + z * _L6)))))))


@njit(**_JIT)
def exp_f64(x):
    x = _D(x)
    r, _, k = _exp_reduce_f64(_clamp_f64(x, _EXP_LO, _EXP_HI))
    y = _exp_finish_f64(r, k)
    return x if x != x else y


@njit(**_JIT)
def expm1_f64(x):
    x = _D(x)
    r, c, k = _exp_reduce_f64(_clamp_f64(x, _EXPM1_LO, _EXP_HI))
    y = _expm1_finish_f64(r, c, k)
    y = x if abs(x) < _TINY else y  # tiny x and -0.0 exactly
    return x if x != x else y


@njit(**_JIT)
def log_f64(x):
    x = _D(x)
    tiny = x < _DBL_MIN  # denormal (also zero and negative, selected away below)
    xs = x * 1.8014398509481984e16 if tiny else x  # 2**54
    # Adding 1 - sqrt(1/2) in the bits moves the cut between binades to sqrt(1/2).
    ix = _bits64(xs) + (0x3FF0000000000000 - 0x3FE6A09E667F3BCD)
    k = _D((ix >> 52) - 1023 - (54 if tiny else 0))
    f = _f64(np.int64((ix & 0x000FFFFFFFFFFFFF) + 0x3FE6A09E667F3BCD)) - 1.0
    y = k * _LN2_HI + (f - (_log_tail_f64(f) - k * _LN2_LO))
    y = x if x > _DBL_MAX else y  # inf
    y = -np.inf if x == 0.0 else y
    return y if x >= 0.0 else np.nan  # negative or NaN


@njit(**_JIT)
def log1p_f64(x):
    x = _D(x)
    u = 1.0 + x
    ix = _bits64(u) + (0x3FF0000000000000 - 0x3FE6A09E667F3BCD)
    ki = (ix >> 52) - 1023
    k = _D(ki)
    f = _f64(np.int64((ix & 0x000FFFFFFFFFFFFF) + 0x3FE6A09E667F3BCD)) - 1.0
    # The rounding error of u = 1 + x, exactly, relative to u: log1p(x) = log(u) + c / u.
    c = (1.0 - (u - x)) if ki >= 2 else (x - (u - 1.0))
    c = c / u if ki < 54 else 0.0
    y = k * _LN2_HI + (f - (_log_tail_f64(f) - (k * _LN2_LO + c)))
    y = x if abs(x) < _TINY else y  # tiny x and -0.0 exactly
    y = x if x > _DBL_MAX else y  # inf
    y = -np.inf if x == -1.0 else y
    return y if x >= -1.0 else np.nan  # below -1 or NaN


@njit(**_JIT)
def tanh_f64(x):
    x = _D(x)
    ax = abs(x)
    z = ax * ax
    small = ax + ax * z * (_T0 + z * (_T1 + z * (_T2 + z * (_T3 + z * (_T4 + z * (_T5 + z * (
        _T6 + z * (_T7 + z * (_T8 + z * (_T9 + z * (_T10 + z * _T11)))))))))))
    r, _, k = _exp_reduce_f64(2.0 * min(ax, _TANH_HI))
    e2 = _exp_finish_f64(r, k)  # exp(2|x|), >= 3.49 where it is used
    d = e2 + 1.0
    w = 2.0 / d
    w = w - 0.5 * w * w * (1.0 - (d - e2))  # 2 / (e2 + 1) for the exact sum
    big = 1.0 - w
    y = small if ax < _TANH_SPLIT else big
    y = _f64(np.int64(_bits64(y) | (_bits64(x) & np.int64(-0x8000000000000000))))  # copysign
    return x if x != x else y


@njit(**_JIT)
def logistic_f64(x):
    x = _D(x)
    r, _, k = _exp_reduce_f64(_clamp_f64(-abs(x), _EXP_LO, 0.0))  # e^-|x|
    z = _exp_finish_f64(r, k)
    d = 1.0 + z
    y = 1.0 / d if x >= 0.0 else z / d
    y = y - y * ((z - (d - 1.0)) / d)  # 1 + z is d (1 + that) exactly: its rounding undone
    return x if x != x else y
