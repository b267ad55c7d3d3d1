"""The narrow and unsigned integer types (int8, int16, uint8 ... uint64) at the edges where they
differ from int32 and int64: wrap-around, NumPy 2's promotion (NEP 50), the exact uint64 /
int64 comparisons, division by zero and the types of reductions; on every backend, each
result compared with NumPy's in value, type and shape."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import BACKENDS

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

U64_TOP = np.array([2**64 - 1, 2**64 - 2, 2**63, 2**63 - 1, 0, 5], np.uint64)
I64_MIXED = np.array([-1, 2**63 - 1, -2**63, 2**62, 0, 5], np.int64)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def _check(f, *args, backend):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        want = f(*[np.copy(a) for a in args])
        got = xe.explore(f, *args, backend=backend).run(*[np.copy(a) for a in args])
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    else:
        _same(got, want)


CASES = {
    # uint8: 200 + 100 wraps to 44, with an array, a weak Python int, or a NumPy scalar
    "uint8 wraps": (lambda x, y: (x + y, x + 100, x * 3, x - y, 200 - x, -x),
                    np.array([200, 255, 0, 17], np.uint8), np.array([100, 1, 1, 250], np.uint8)),
    # int8: -(-128) and abs(-128) are -128; 127 + 1 is -128
    "int8 wraps": (lambda x: (-x, np.abs(x), x + 1, x * x, x // -1, x % -1, np.sign(x)),
                   np.array([-128, -1, 0, 1, 127], np.int8)),
    "int16 wraps": (lambda x: (x * 300, x - 32767, ~x), np.array([-32768, -3, 200], np.int16)),
    "uint16 wraps": (lambda x: (x * 300, x + 65535, ~x, x >> 3, x << 9),
                     np.array([0, 3, 65535], np.uint16)),
    "uint32 wraps": (lambda x: (x * x, x + np.uint32(2**31), x - np.uint32(1)),
                     np.array([0, 65536, 2**32 - 1], np.uint32)),
    # uint64 near 2**64, where int64 and float64 cannot hold the values
    "uint64 near the top": (lambda x: (x + 1, x * 2, x - np.uint64(1), x // np.uint64(3),
                                       x % np.uint64(10), x >> 1, x ^ np.uint64(2**63),
                                       np.maximum(x, np.uint64(2**63))), U64_TOP),
    # NumPy 2's promotion: uint8 + int8 is int16, uint32 + int32 int64, uint64 + int64 float64
    "promotion": (lambda a, b, c, d, e: (a + b, c + d, e + d, a * 2.5, a + np.int16(1)),
                  np.array([200, 255], np.uint8), np.array([-128, 127], np.int8),
                  np.array([2**32 - 1, 1], np.uint32), np.array([-5, 2**40], np.int64),
                  np.array([2**64 - 1, 1], np.uint64)),
    # uint64 against int64 compares exactly (NumPy has its own loop; float64 would round)
    "uint64 vs int64 comparisons": (
        lambda u, i: (u > i, u >= i, u == i, u != i, u < i, u <= i, i < u, u < 2**63 + 1,
                      u >= -1, u == 2**64 - 1, u > 2**64), U64_TOP, I64_MIXED),
    # unsigned division by zero: NumPy's 0 for // and %
    "unsigned division by zero": (lambda x, y: (x // y, x % y, np.fmod(x, y), np.divmod(x, y)),
                                  np.array([7, 200, 0, 255], np.uint8),
                                  np.array([0, 3, 0, 255], np.uint8)),
    # shifts: logical for unsigned, amounts of the width or more give 0
    "unsigned shifts": (lambda x, s: (x >> s, x << s, np.right_shift(x, np.uint8(1))),
                        np.array([200, 255, 1, 128], np.uint8), np.array([1, 7, 8, 0], np.uint8)),
    # reductions: sum and prod of small ints in int64 / uint64, mean in float64
    "reduction types": (lambda a, b, c: (np.sum(a), np.sum(b), np.prod(b), np.mean(b), a.max(),
                                         b.min(), np.sum(c), c.max(), np.sum(a, axis=0),
                                         np.prod(a, axis=1, dtype=np.int8)),
                        np.array([[-128, 127], [-1, -128]], np.int8),
                        np.array([[200, 255], [1, 100]], np.uint8),
                        np.array([2**64 - 1, 2], np.uint64)),
    # integer -> integer wraps; float -> integer within the target's range (beyond it C, and
    # so NumPy, leave the result undefined, and XLA saturates)
    "conversions": (lambda x, f: (x.astype(np.int8), x.astype(np.uint16), x.astype(np.float32),
                                  f.astype(np.uint8), f.astype(np.int16), x.astype(np.bool_)),
                    np.array([2**64 - 1, 2**63, 300, 0], np.uint64),
                    np.array([0.0, 255.9, 17.5, 127.25], np.float64)),
}


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("name", list(CASES))
def test_narrow_and_unsigned_integers_match_numpy(name, backend):
    f, *args = CASES[name]
    _check(f, *args, backend=backend)


def test_a_numpy_uint8_scalar_plus_a_python_int_stays_uint8():
    got = xe.jit(lambda a: a + 100)(np.uint8(200))
    assert type(got) is np.uint8 and got == 44


def test_a_python_int_beyond_the_type_is_numpys_overflow_error():
    """NEP 50: int8 array + 300 is an OverflowError in NumPy 2, at trace time here."""
    x = np.array([1, 2], np.int8)
    with pytest.raises(OverflowError):
        x + 300
    with pytest.raises(OverflowError, match="300"):
        xe.explore(lambda x: x + 300, x)
    with pytest.raises(OverflowError):
        xe.explore(lambda u: u // -3, np.array([1, 2], np.uint8))


def test_unsigned_types_print_and_parse_back():
    def f(a, b, c, d, e, g):
        return a + 1, b * 2, c - 1, d ^ 3, e >> 1, g + 1
    args = [np.ones(3, t) for t in (np.int8, np.int16, np.uint8, np.uint16, np.uint32,
                                    np.uint64)]
    ex = xe.explore(f, *args)
    text = ex.hlo()
    for name in ("s8[3]", "s16[3]", "u8[3]", "u16[3]", "u32[3]", "u64[3]"):
        assert name in text
    assert xe.parse_hlo(text).to_text() == text
