"""Refusals people meet first, each naming what the user wrote, at the user's line, with what
to write instead (issue 39): np.vectorize, a reshape to a traced shape, a string returned,
builtin max(), and np.random.default_rng in a compiled function."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import xla_explorer as xe

X = np.linspace(-1, 1, 12).reshape(3, 4).astype(np.float32)


def line_of(f, text: str) -> int:
    lines, start = inspect.getsourcelines(f)
    return start + next(i for i, line in enumerate(lines) if text in line)


def vectorized(x):
    return np.vectorize(lambda t: t + 1)(x)


def test_np_vectorize_is_named_in_its_refusal():
    # Once "converting a traced array to a NumPy array (np.asarray, ...)": np.vectorize was
    # never named.
    with pytest.raises(xe.UnsupportedOpError, match=r"^np\.vectorize is not supported") as info:
        xe.jit(vectorized)(X)
    assert info.value.source_line == line_of(vectorized, "np.vectorize")
    assert "element-wise operations" in str(info.value)


def reshaped(a, s):
    return a.reshape(s)


def broadcast(a, s):
    return np.broadcast_to(a, shape=s)


@pytest.mark.parametrize("f,name", [(reshaped, "np.reshape"), (broadcast, "np.broadcast_to")])
def test_a_shape_held_in_a_traced_array_says_shapes_are_static(f, name):
    # Once NumPy's "only integer scalar arrays can be converted to a scalar index".
    with pytest.raises(xe.TraceError) as info:
        xe.jit(f)(X.reshape(-1), np.array([4, 3]))
    text = str(info.value)
    assert text.startswith(f"{name}'s shape is a traced array") and "static" in text, text
    assert "scalar index" not in text
    assert info.value.source_line == line_of(f, "return")
    # Python ints stay static, as do numbers read from a shape
    np.testing.assert_array_equal(xe.jit(lambda a, m, n: a.reshape(m, n))(X.reshape(-1), 4, 3),
                                  X.reshape(-1).reshape(4, 3))


def dtype_name(x):
    y = x * 2
    return y.dtype.name


def test_returning_a_string_names_the_function_and_its_return_line():
    # Once "a constant produces <U7, a type the explorer does not support" at the def line,
    # advising .astype.
    with pytest.raises(xe.CompileError) as info:
        xe.jit(dtype_name)(X)
    text = str(info.value)
    assert text.startswith("dtype_name returns a str ('float32')"), text
    assert "outputs are arrays and numbers" in text and ".astype" not in text
    assert info.value.source_line == line_of(dtype_name, "return y.dtype.name")


def builtin_max(x):
    return max(x.sum(axis=0))


def builtin_min(x):
    return min(x[0])


@pytest.mark.parametrize("f,want", [(builtin_max, "np.max(a)"), (builtin_min, "np.min(a)")])
def test_builtin_max_suggests_np_max(f, want):
    # Once the hint was np.where, for a max.
    with pytest.raises(xe.TraceError) as info:
        xe.jit(f)(X)
    text = str(info.value)
    assert f"Python's {f.__name__[8:]}()" in text and want in text, text
    assert "np.where" not in text
    assert info.value.source_line == line_of(f, "return")


def seeded_noise(x):
    rng = np.random.default_rng(0)
    return x + rng.standard_normal(x.shape).astype(np.float32)


def unseeded_noise(x):
    rng = np.random.default_rng()
    return x + rng.standard_normal(x.shape).astype(np.float32)


@pytest.mark.parametrize("autocluster", [False, True])
def test_a_generator_seeded_in_the_function_draws_numpys_numbers_on_every_call(autocluster):
    # `rng = np.random.default_rng(0)` in an --autocluster cell was refused, though the guide
    # says auto-clustering runs draws eagerly: a seeded Generator draws the same numbers on
    # every call, in NumPy as in the program.
    f = xe.jit(seeded_noise, autocluster=autocluster)
    for _ in range(2):
        np.testing.assert_array_equal(f(X), seeded_noise(X))
    with pytest.raises(xe.TraceError, match=r"np\.random\.default_rng inside") as info:
        xe.jit(unseeded_noise, autocluster=autocluster)(X)
    assert "seed the Generator with a number" in str(info.value)
    assert info.value.source_line == line_of(unseeded_noise, "default_rng()")


def test_a_seeded_generator_in_an_autocluster_cell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    assert sh.run_cell("%reload_ext xla_explorer").success
    sh.user_ns.update(np=np, x=np.arange(4.0))
    result = sh.run_cell("%%xla --autocluster --quiet\nrng = np.random.default_rng(0)\n"
                         "y = x + rng.standard_normal(4)\n")
    assert result.success, result.error_in_exec
    np.testing.assert_array_equal(sh.user_ns["y"],
                                  np.arange(4.0) + np.random.default_rng(0).standard_normal(4))
    for name in ("x", "y", "rng", "_xla"):
        sh.user_ns.pop(name, None)
