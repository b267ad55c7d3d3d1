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
@pytest.mark.parametrize("value", [0, 1, -1, 2**31 - 1, 2**31, -2**31 - 1, 2**40, 2**62, True,
                                   0.5, -1e300])
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
