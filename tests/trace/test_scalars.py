"""Python scalar arguments: a value, not a constant, whose value still decides what NumPy and
Python decide with it (overflow, Python's exact arithmetic, shapes and branches), on every
call and on every backend, including calls that hit the compile cache."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.api import BACKENDS

A32 = np.arange(3, dtype=np.int32)


def line_of(f, text: str) -> int:
    lines, start = inspect.getsourcelines(f)
    return start + next(i for i, line in enumerate(lines) if text in line)


def numpy_or_error(f, *args):
    """NumPy's answer for f(*args), or the class of the error NumPy raises."""
    try:
        return f(*args)
    except Exception as e:
        return type(e)


def scale(a, n):
    return a * n


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_python_int_that_overflows_the_array_type_raises_on_a_cache_hit(backend):
    j = xe.jit(scale, backend=backend)
    np.testing.assert_array_equal(j(A32, 2), A32 * 2)
    with pytest.raises(OverflowError, match="out of bounds for int32") as info:
        j(A32, 2**40)
    assert info.value.source_line == line_of(scale, "a * n")
    assert isinstance(info.value, xe.TraceError)
    assert j.cache_info().misses == 1  # checked against the cached program, not retraced
    with pytest.raises(OverflowError):
        scale(A32, 2**40)  # NumPy 2 raises here too
    np.testing.assert_array_equal(j(A32, -7), A32 * -7)  # and the program still runs


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_ints_keep_pythons_arithmetic(backend):
    square = xe.jit(lambda n: n * n, backend=backend)
    assert square(3) == 9 and type(square(3)) is int
    assert square(2**31) == 2**62
    with pytest.raises(OverflowError, match="beyond int64"):
        square(2**40)  # Python gives 2**80, which the program's int64 cannot hold
    half = xe.jit(lambda a, n: a * (n / 2), backend=backend)
    np.testing.assert_array_equal(half(A32, 3), A32 * 1.5)
    with pytest.raises(ZeroDivisionError):
        xe.jit(lambda a, n: a + 1 // n, backend=backend)(A32, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_power_whose_result_type_depends_on_the_exponent_retraces(backend):
    j = xe.jit(lambda a, n: a + 2 ** n, backend=backend)
    x = np.ones(3)
    np.testing.assert_array_equal(j(x, 3), x + 8)
    np.testing.assert_array_equal(j(x, -1), x + 0.5)  # an int, then a float: two programs
    assert j.cache_info().misses == 2


def test_an_int_beyond_int64_is_refused_by_name():
    with pytest.raises(OverflowError, match="argument 'n' is the Python int") as info:
        xe.jit(lambda x, n: x + n)(np.ones(3), 2**70)
    assert "astype" not in str(info.value) and "float(" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_ints_that_fix_a_shape_are_static_values(backend):
    def f(x, n):
        acc = np.zeros(n) + np.arange(n)
        for _ in range(n):
            acc = acc + x[:n]
        return acc

    j = xe.jit(f, backend=backend)
    x = np.linspace(0, 1, 6)
    for n in (3, 5, 3):
        np.testing.assert_allclose(j(x, n), f(x, n))
    assert (j.cache_info().misses, j.cache_info().hits) == (2, 1)
    assert j.cache_info().static == ({1: 3}, {1: 5})  # n, the argument that decided each


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_python_int_index_and_branch(backend):
    def f(v, i):
        if i > 1:
            return v[i] * 2
        return v[i:i + 2].sum()

    j = xe.jit(f, backend=backend)
    v = np.arange(5.0) ** 2
    for i in (0, 3, 1, 4):
        assert j(v, i) == f(v, i)


def test_an_exploration_refuses_a_value_that_decided_its_program():
    ex = xe.explore(lambda v, i: v[i], np.arange(4.0), 2)
    assert ex.run(np.arange(4.0), 2) == 2.0
    with pytest.raises(TypeError, match="traced with the Python value 2"):
        ex.run(np.arange(4.0), 3)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", [0, -1, 2**31, -2**31 - 1, 2**62, True, 0.5] + [
    pytest.param(v, marks=pytest.mark.deep) for v in (1, 2**31 - 1, 2**40, -1e300)])
def test_scalars_of_every_size_through_a_warm_cache(backend, value):
    fs = [lambda a, n: a * n, lambda a, n: a + n, lambda a, n: n - a, lambda a, n: a // (n or 1)]
    arrays = (A32, np.arange(3, dtype=np.int64), np.arange(3.0, dtype=np.float32))
    for f in fs:
        for a in arrays:
            j = xe.jit(f, backend=backend)
            j(a, 2 if isinstance(value, int) else 2.0)  # warm: the value below hits the cache
            with np.errstate(all="ignore"):
                want = numpy_or_error(f, a, value)
                if isinstance(want, type):
                    with pytest.raises(want):
                        j(a, value)
                    continue
                got = j(a, value)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


# -- a Python number written into, or clipping, an array of a narrower type -----------------
# Each case: compiled with the small value, then called with the big one (a cache hit) and,
# in a fresh jit function, first with the big one; both must give NumPy 2's values and dtype,
# or raise NumPy's error class. NumPy checks a Python number where it converts it as a Python
# value (x[i] = v: int(v), so NaN, inf and floats beyond the type fail), wraps it unchecked
# in np.where, and drops a np.clip bound beyond the array type on its own side.

def _set_first(x, v):
    x[0] = v
    return x


def _set_tail(x, v):
    x[1:] = v
    return x


def _set_strided(x, v):
    x[::2] = v
    return x


def _set_masked(x, v):
    x[x > 0] = v
    return x


def _set_derived(x, v):
    x[0] = v * 2
    return x


I32 = np.array([-3, 0, 1, 2], np.int32)
I64 = np.array([-3, 0, 1, 2], np.int64)
NARROW_CASES = {  # name: (function, array, small value, big value)
    "x[0] = 1e10 (int32)": (_set_first, I32, 2.7, 1e10),
    "x[0] = nan (int32)": (_set_first, I32, 2.7, float("nan")),
    "x[0] = inf (int32)": (_set_first, I32, 2.7, float("inf")),
    "x[0] = -inf (int64)": (_set_first, I64, 2.7, -float("inf")),
    "x[0] = 1e19 (int64)": (_set_first, I64, 2.7, 1e19),
    "x[1:] = 1e10": (_set_tail, I32, -2.5, 1e10),
    "x[::2] = -1e10": (_set_strided, I32, -2.5, -1e10),
    "x[x > 0] = nan": (_set_masked, I32, 0.5, float("nan")),
    "x[0] = v * 2, v = 2**31 - 0.5": (_set_derived, I32, 1.25, 2147483647.5),
    "np.asarray(v, int32), v = 2**40": (lambda x, v: x + np.asarray(v, dtype=np.int32), I32,
                                        5, 2**40),
    "np.asarray(v, int32), v = nan": (lambda x, v: x + np.asarray(v, dtype=np.int32), I32,
                                      2.5, float("nan")),
    "np.clip(x, 0, 2**40)": (lambda x, v: np.clip(x, 0, v), I32, 5, 2**40),
    "np.clip(x, 0, 2**31)": (lambda x, v: np.clip(x, 0, v), I32, 5, 2**31),
    "np.clip(x, -2**40, 10)": (lambda x, v: np.clip(x, v, 10), I32, -1, -2**40),
    "np.clip(x, -v, v), v = 2**40": (lambda x, v: np.clip(x, -v, v), I32, 1, 2**40),
    "np.clip(x, None, 2**40)": (lambda x, v: np.clip(x, None, v), I32, 1, 2**40),
    "np.clip(x, min=-2**40)": (lambda x, v: np.clip(x, min=v), I32, 1, -2**40),
    "x.clip(0, 2**63 - 1)": (lambda x, v: x.clip(0, v), I32, 5, 2**63 - 1),
    "np.clip(x, -2**40, v), v = 2**40": (lambda x, v: np.clip(x, -2**40, v), I32, 1, 2**40),
    "np.clip(x, v, 2**40), v = inf": (lambda x, v: np.clip(x, v, 2**40), I32, 0.5, float("inf")),
    "np.clip(x, inf, v), v = 2**40": (lambda x, v: np.clip(x, np.inf, v), I32, 5, 2**40),
    "np.where(x > 0, x, 2**40 + 7)": (lambda x, v: np.where(x > 0, x, v), I32, 5, 2**40 + 7),
    "np.where(x > 0, -2**31 - 1, x)": (lambda x, v: np.where(x > 0, v, x), I32, 5,
                                       -2**31 - 1),
    "x ** -2**40 (int32)": (lambda x, v: x ** v, I32, 2, -2**40),
}


def _outcome(f, *args):
    """f(*args): (dtype, values), or the class of NumPy's built-in error it raises."""
    try:
        with np.errstate(all="ignore"):
            got = np.asarray(f(*args))
    except xe.XlaExplorerError as e:  # a TraceError that is also OverflowError, ValueError...
        return next(c for c in type(e).__mro__ if c.__module__ == "builtins")
    except Exception as e:
        return type(e)
    return got.dtype, got.tolist()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", NARROW_CASES)
def test_a_python_number_meeting_a_narrower_array_is_numpys_on_every_call(backend, case):
    f, x, small, big = NARROW_CASES[case]
    j = xe.jit(f, backend=backend)
    assert _outcome(j, x.copy(), small) == _outcome(f, x.copy(), small)
    want = _outcome(f, x.copy(), big)
    assert _outcome(j, x.copy(), big) == want  # the program traced with the small value
    assert _outcome(xe.jit(f, backend=backend), x.copy(), big) == want  # traced with the big one


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpys_own_overflow_errors_stay_on_a_cache_hit(backend):
    """What NumPy does refuse: a clip bound beyond the array's type on the other side, and a
    Python int written into an int32 array."""
    for f, small, big in [(lambda x, v: np.clip(x, v, None), 1, 2**40),
                          (lambda x, v: np.clip(x, 0, v), 5, -2**40),
                          (_set_first, 5, 2**31)]:
        j = xe.jit(f, backend=backend)
        j(I32.copy(), small)
        with pytest.raises(OverflowError):
            f(I32.copy(), big)
        with pytest.raises(OverflowError, match="out of bounds for int32"):
            j(I32.copy(), big)
