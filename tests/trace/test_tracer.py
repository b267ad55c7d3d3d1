"""The tracer's own semantics: views, in-place updates of inputs (and their aliasing in the
HLO header), source lines in metadata, the shapes of return values, and scalar arguments."""
from __future__ import annotations

import inspect
import re
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xla_explorer as xe

from .test_errors import line_of
from .test_numpy_ops import assert_matches_numpy, assert_tree_same, check_stages

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

X = np.arange(20, dtype=np.float32).reshape(4, 5) - 7.5
V = np.arange(8, dtype=np.int64) * 3 - 10


def fresh(*arrays):
    return lambda: [a.copy() for a in arrays]


# -- views: NumPy's storage sharing ------------------------------------------------------------


def view_write_changes_base(x):
    y = x[1:3]
    y += 1
    return x


def base_write_shows_through_view(x):
    y = x[1:3]
    x[2] = 100
    return y


def both_directions(x):
    y = x[:, 1]
    y *= 2  # changes x's column 1
    x[0] = -1  # shows through y's first element
    z = y + 0  # a copy: later writes do not reach it
    x[3, 1] = 50
    return y, z, x


def view_of_a_view(x):
    y = x[1:]
    z = y[::2, ::-1]
    z[0] = 9  # x[1, ::-1] = 9
    y[-1, 0] = -9  # x[3, 0]
    return x, z


def integer_row_view(x):
    row = x[2]
    row -= 100
    return x


def element_is_a_copy(x):
    e = x[1, 1]  # a NumPy scalar: immutable
    e += 1000
    return e, x


def transpose_reads_see_writes(x):
    t = x.T
    r = x.reshape(-1)
    f = np.flip(x, 0)
    x[0, 0] = 77
    return t, r, f


def setitem_through_view(x):
    inner = x[1:3, 1:4]
    inner[...] = 0
    inner[0, ::2] = 5
    return x


def negative_step_view(x):
    y = x[::-1, ::-2]
    y[0] = 1
    y += 2
    return x, y


def chain_of_updates(x):
    for i in range(3):
        x[i] += x[i + 1]
    return x.sum()


def created_array_setitem(x):
    z = np.zeros((3, 5), dtype=x.dtype)
    z[1] = x[0]
    z[::2, 1:3] = x[1:3, :2] * 2
    z[-1, -1] += 1
    return z


def writes_through_reshape_transpose_flip(x):
    r = x.reshape(-1)
    r[::3] = 0  # through a reshape
    t = x.T
    t[1] += 10  # through a transpose: x[:, 1]
    f = np.flip(x, 1)
    f[0] = -1  # through a flip: x[0, ::-1]
    s = np.swapaxes(x, 0, 1)[::2]
    s *= 3  # a slice of a transpose
    m = np.moveaxis(x[None], 0, -1)
    m[..., 0] -= 1  # expand_dims-like view, then moveaxis
    e = np.expand_dims(x, 0)
    e[0, 3] = 42
    q = np.squeeze(x[None, 1:2])
    q += 0.5
    v = np.ravel(x)[-4:]
    v[...] = 7
    return x, r, t


def writes_through_views_of_views(x):
    a = x.T[1:, ::-1].reshape(-1)
    a[1] = 99
    return x


@pytest.mark.parametrize("f", [
    view_write_changes_base, base_write_shows_through_view, both_directions, view_of_a_view,
    integer_row_view, element_is_a_copy, transpose_reads_see_writes, setitem_through_view,
    negative_step_view, chain_of_updates, created_array_setitem,
    writes_through_reshape_transpose_flip, writes_through_views_of_views,
], ids=lambda f: f.__name__)
def test_view_semantics_match_numpy(f):
    assert_matches_numpy(f, fresh(X))


def test_view_write_reaches_the_caller():
    x = X.copy()
    ex = xe.explore(view_write_changes_base, x)
    np.testing.assert_array_equal(x, X)  # tracing does not change it
    out = ex.run(x)
    want = X.copy()
    want[1:3] += 1
    np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(out, want)


# -- in-place updates of inputs ----------------------------------------------------------------


def _alias_header(text):
    first = text.splitlines()[0]
    m = re.search(r"input_output_alias=\{ (.*?) \}, ", first)
    return m.group(1) if m else None


def test_in_place_add_on_an_input_changes_the_caller_and_is_aliased():
    def f(x, y):
        x += 1
        return y * 2

    x, y = X.copy(), V.copy()
    ex = xe.explore(f, x, y)
    header = _alias_header(ex.hlo(0))
    assert header == "{1}: (0, {}, may-alias)", ex.hlo(0).splitlines()[0]
    assert _alias_header(ex.hlo()) == header
    out = ex.run(x, y)
    np.testing.assert_array_equal(x, X + 1)
    np.testing.assert_array_equal(y, V)
    np.testing.assert_array_equal(out, V * 2)
    assert ex.check(X.copy(), V.copy()).ok
    assert any("in place" in o.name for o in ex.check(X.copy(), V.copy()).outputs)


def test_only_changed_inputs_are_aliased():
    def f(a, b, c):
        b[0] = 0
        c = c + 1  # a new array: the caller's c is untouched
        return a + c

    args = [X.copy(), V.copy(), X.copy()]
    ex = xe.explore(f, *args)
    assert _alias_header(ex.hlo()) == "{1}: (1, {}, may-alias)"
    assert_matches_numpy(f, fresh(X, V, X))


def test_no_alias_without_in_place_updates():
    ex = xe.explore(lambda x: x * 2, X)
    assert "input_output_alias" not in ex.hlo(0)


@pytest.mark.parametrize("f", [
    lambda x: np.add(x, 1, out=x),
    lambda x: np.multiply(x[1:], 2, out=x[1:]),
    lambda x: np.negative(x, out=x) + 0,
    lambda x: np.matmul(x[:, :4], x[:4, :4].T, out=x[:, :4]),
], ids=["out=x", "out=view", "out-unary", "matmul-out"])
def test_out_argument_writes_in_place(f):
    ex = assert_matches_numpy(f, fresh(X))
    assert "input_output_alias" in ex.hlo()


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "//=", "%=", "**="])
def test_in_place_operators_on_inputs(op):
    ns = {"np": np}
    exec(f"def f(x, y):\n    x {op} y\n    return x\n", ns)
    f = ns["f"]
    y = np.abs(X[:1]) + 1  # broadcasts along x's rows; positive for // % **
    assert_matches_numpy(f, fresh(X, y))
    x = X.copy()
    xe.explore(f, x, y).run(x, y.copy())
    want = X.copy()
    exec(f"want {op} y", {"want": want, "y": y})
    np.testing.assert_allclose(x, want, rtol=2e-5)


def test_in_place_on_zero_d_and_integer_inputs():
    def f(s, i):
        s += 2
        i <<= 1
        i[0] = 7
        return s * 1, i
    s = np.array(1.5, dtype=np.float32)
    assert_matches_numpy(f, fresh(s, V))


def test_boolean_mask_assignment_on_an_input():
    def f(x):
        x[x > 0] = 0
        x[x < -5] = -5.5
        return x.sum()
    assert_matches_numpy(f, fresh(X))
    ex = xe.explore(f, X)
    assert "custom-call" not in ex.hlo()  # x[mask] = scalar is a select, compilable


def test_mask_assignment_forms():
    mask = X > 0

    def numpy_mask(x):
        x[mask] = -1  # a NumPy boolean array, not a traced one
        return x

    def row_mask(x):
        x[x[:, 0] > 0] = 0  # a mask over the leading axis sets whole rows
        return x

    def zero_d_mask(x):
        x[x.sum() > 0] = 3  # one boolean for the whole array
        return x

    for f in (numpy_mask, row_mask, zero_d_mask):
        assert_matches_numpy(f, fresh(X))


def test_reductions_with_traced_where_and_initial():
    def f(x):
        return (np.sum(x, where=x > 0), np.mean(x, axis=0, where=x > 0),
                np.max(x, axis=1, where=x < 0, initial=-100), np.prod(x, initial=0.5, axis=1),
                np.any(x > 3, where=x < 5), np.all(x > -20, axis=0, where=x > 0, keepdims=True))
    assert_matches_numpy(f, fresh(X))
    with pytest.raises(xe.UnsupportedOpError, match="np.var is not supported with where="):
        xe.explore(lambda x: np.var(x, where=x > 0), X)


def test_operators_between_python_scalars_follow_python():
    def f(x, lr, n, flag):
        step = lr * 0.5  # a Python float: x stays float32
        return (x - step * x, x * (n // 2), n + n, flag + flag, flag & flag, -flag, n / 2,
                lr > n, 2 ** -n, divmod(n, 2), x * abs(-lr))
    ex = assert_matches_numpy(f, lambda: [X.copy(), 0.1, 3, True])
    assert "f64[4,5]" not in ex.hlo(0)
    for args in [(X, 0.25, 5, False), (X, -1.5, 2, True)]:
        assert_tree_same(ex.run(*args), f(*args))


def test_full_with_traced_fill_values():
    def f(x):
        return (np.full((2, 3), x[0, 1]), np.full_like(x, x.max()), np.full(4, x.min(), np.int32),
                np.full_like(x, x[1, 1], dtype=np.float64))
    ex = assert_matches_numpy(f, fresh(X))
    assert "constant({" not in ex.hlo(0)


def test_in_place_on_a_python_scalar_argument_is_local():
    def f(x, s):
        s += 1
        return x * s
    x = X.copy()
    ex = xe.explore(f, x, 2.0)
    assert "input_output_alias" not in ex.hlo()
    np.testing.assert_array_equal(ex.run(x, 2.0), X * 3)


# -- metadata: the user's source lines ---------------------------------------------------------


def two_lines(x):
    y = np.tanh(x) * 2
    return helper(y).sum(axis=0)


def helper(y):
    return np.maximum(y, 0)


def test_metadata_names_the_user_line_of_each_instruction():
    ex = xe.explore(two_lines, X)
    text = ex.hlo(0, metadata=True)
    file = inspect.getsourcefile(two_lines)
    expect = {
        "tanh(": ("two_lines/tanh", line_of(two_lines, "np.tanh")),
        "multiply(": ("two_lines/multiply", line_of(two_lines, "np.tanh")),
        "maximum(": ("two_lines/maximum", line_of(helper, "np.maximum")),
        "reduce(": ("two_lines/sum", line_of(two_lines, ".sum(axis=0)")),
    }
    for needle, (op_name, line) in expect.items():
        inst = next(li for li in text.splitlines() if f" {needle}" in li)
        assert f'op_name="{op_name}"' in inst, inst
        assert f'source_file="{file}"' in inst, inst
        assert f"source_line={line}" in inst, inst
    root = next(li for li in text.splitlines() if "ROOT" in li and "tuple(" in li)
    assert f"source_line={two_lines.__code__.co_firstlineno}" in root
    # Every instruction of the entry but the parameters carries a source line.
    entry = text[text.index("ENTRY"):]
    for li in entry.splitlines()[1:-1]:
        if "parameter(" not in li:
            assert "source_line=" in li, li


def test_metadata_survives_the_pipeline_and_the_parser():
    ex = xe.explore(two_lines, X)
    final = xe.parse_hlo(ex.hlo(metadata=True))
    # Fused instructions keep their metadata inside their fused computations.
    lines = {i.metadata.source_line for c in (final.entry, *final.computations)
             for i in c.instructions if i.opcode != "parameter" and i.metadata}
    assert line_of(two_lines, "np.tanh") in lines and line_of(helper, "np.maximum") in lines


def test_module_and_parameter_names():
    def my_func(alpha, beta_2):
        return alpha + beta_2
    ex = xe.explore(my_func, X, X)
    text = ex.hlo(0)
    assert text.startswith("HloModule my_func")
    assert re.search(r"alpha\.\d+ = f32\[4,5\] parameter\(0\)", text)
    assert re.search(r"beta_2\.\d+ = f32\[4,5\] parameter\(1\)", text)
    ex = xe.explore(lambda *xs: xs[0] - xs[1], X, X)
    assert ex.hlo(0).startswith("HloModule lambda")
    check_stages(ex)


# -- what a function returns -------------------------------------------------------------------


@pytest.mark.parametrize("f", [
    lambda x: x + 1,
    lambda x: (x + 1, x * 2),
    lambda x: [x.sum(), x.max(axis=0)],
    lambda x: {"mean": x.mean(), "rows": x[1:], "nested": (x.T, [x[0, 0]])},
    lambda x: (x, x),  # an input returned as it is, twice
    lambda x: (x * 2,),
    lambda x: x[0, 0],  # a NumPy scalar
    lambda x: ((x + 1, (x - 1,)), []),
], ids=["array", "tuple", "list", "dict", "input-twice", "one-tuple", "scalar", "nested"])
def test_outputs_keep_their_structure(f):
    assert_matches_numpy(f, fresh(X))


def test_none_in_outputs():
    def f(x):
        return x + 1, None, {"n": None}
    ex = xe.explore(f, X)
    out = ex.run(X.copy())
    assert out[1] is None and out[2] == {"n": None}
    np.testing.assert_array_equal(out[0], X + 1)


def test_static_values_in_outputs():
    def f(x):
        return x.shape[0] * np.ones(3), x.ndim + x
    assert_matches_numpy(f, fresh(X))


# -- Python scalars and NumPy scalars as arguments ---------------------------------------------


def test_python_scalar_arguments_are_weak_and_not_baked_in():
    def f(x, a, n, flag):
        return np.where(flag, x * a, x) + n
    ex = xe.explore(f, X, 2.5, 3, True)
    assert ex.run(X, 2.5, 3, True).dtype == np.float32  # weak, like NumPy
    for args in [(X, 2.5, 3, True), (X, -1.0, 0, False), (X, 0.5, 7, True)]:
        got = ex.run(*args)
        want = f(*args)
        assert_tree_same(got, want, tol=1.0)
    text = ex.hlo(0)
    assert "f64[] parameter(1)" in text and "s64[] parameter(2)" in text
    assert "pred[] parameter(3)" in text


@pytest.mark.parametrize("scalar", [np.float32(1.5), np.float64(-2.0), np.int32(3),
                                    np.int64(-4), np.bool_(True), 2, 1.25, False],
                         ids=lambda s: f"{type(s).__name__}({s})")
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.bool_], ids=lambda d: d.__name__)
def test_scalar_arguments_promote_like_numpy(scalar, dtype):
    x = (np.arange(6) - 2).astype(dtype)

    def f(x, s):
        return x * s, s + s, np.maximum(x, s)
    assert_matches_numpy(f, lambda: [x.copy(), scalar])


def test_zero_d_arrays_are_strong():
    x = np.ones(3, np.float32)
    assert_matches_numpy(lambda x, s: x * s, lambda: [x.copy(), np.array(2.5)])


# -- Python control flow unrolls; static shape queries -----------------------------------------


def test_python_control_flow_unrolls():
    def f(x):
        acc = np.zeros(x.shape[1], x.dtype)
        for row in x:  # iterates over the first axis, as NumPy does
            acc = acc + row * len(x)
        if x.shape[0] > 2 and x.ndim == 2 and x.dtype == np.float32:
            acc = acc * 2
        return acc, np.shape(x), np.ndim(x), np.size(x)
    ex = assert_matches_numpy(f, fresh(X))
    assert "while" not in ex.hlo()


def test_creation_is_traced_in_user_modules_named_like_numpy():
    mod = types.ModuleType("numpy_helpers")  # a user module, though its name starts "numpy"
    exec("import numpy as np\ndef make(n):\n    return np.zeros(n) + np.arange(n)\n",
         mod.__dict__)
    ex = xe.explore(lambda x: mod.make(3) * x, np.ones(3))
    assert "iota(" in ex.hlo(0) and "constant({" not in ex.hlo(0)
    np.testing.assert_array_equal(ex.run(np.ones(3)), np.arange(3.0))


def test_explore_with_no_arguments():
    def f():
        return np.arange(6).reshape(2, 3) * np.ones((2, 1))
    ex = xe.explore(f)
    np.testing.assert_array_equal(ex.run(), f())
    assert ex.check().ok


def test_explore_does_not_change_its_arguments_and_run_defaults_to_them():
    x = X.copy()

    def f(x):
        x[0] = 0
        return x * 2
    ex = xe.explore(f, x)
    np.testing.assert_array_equal(x, X)
    out = ex.run()  # with the traced arguments, copied
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(out, f(X.copy()))


# -- random basic indices, read and written ----------------------------------------------------

_BASE = np.arange(60, dtype=np.float64).reshape(4, 5, 3)


def _slices(n):
    bound = st.integers(-n - 2, n + 2) | st.none()
    step = st.sampled_from([None, 1, 2, 3, -1, -2, -3])
    return st.builds(slice, bound, bound, step)


@st.composite
def basic_indices(draw):
    items, axis = [], 0
    used_ellipsis = False
    while axis < 3 and draw(st.booleans()):
        kind = draw(st.sampled_from(["slice", "int", "none", "ellipsis"]))
        n = _BASE.shape[axis]
        if kind == "slice":
            items.append(draw(_slices(n)))
            axis += 1
        elif kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
            axis += 1
        elif kind == "none":
            items.append(None)
        elif not used_ellipsis:
            items.append(Ellipsis)
            used_ellipsis = True
            axis = 3
    return tuple(items)


@settings(max_examples=150, deadline=None)
@given(index=basic_indices(), scalar_value=st.booleans())
def test_random_basic_indices_read_and_write(index, scalar_value):
    want_read = _BASE[index]

    def read(x):
        return x[index] * 2

    def write(x, v):
        x[index] = v
        view = x[index]
        view += 1  # and in place through the view
        return x

    assert_matches_numpy(read, fresh(_BASE))
    v = np.float64(-1.5) if scalar_value else -np.arange(want_read.size,
                                                         dtype=np.float64).reshape(want_read.shape)
    assert_matches_numpy(write, lambda: [_BASE.copy(), np.array(v)])


@pytest.mark.parametrize("backend", xe.api.BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_scalar_power_takes_numpys_fast_paths(backend, dtype):
    # NumPy's x ** 0.5 is sqrt: nan at -inf and -0.0 at -0.0, where pow gives +inf and +0.0.
    x = np.array([-np.inf, -0.0, 0.0, 4.0, np.nan, 2.5, -3.0, np.inf, 1e-40], dtype)
    for e in (0.5, 2, -1, 1, 3, -0.5):
        with np.errstate(all="ignore"):
            want = x ** e
            constant = xe.jit(lambda x: x ** e, backend=backend)(x)
            argument = xe.jit(lambda x, e: x ** e, backend=backend)(x, e)
        for got in (constant, argument):  # within rounding, and the same specials and signs
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=0,
                                       err_msg=f"x ** {e}")
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"x ** {e}")


@pytest.mark.parametrize("backend", xe.api.BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floor_divide_and_remainder_give_numpys_zeros(backend, dtype):
    # npy_divmod: a zero remainder has the divisor's sign, a zero quotient that of a / b.
    a = np.array([-6.0, 0.0, -0.0, 6.0, 5.0, -5.0, np.inf, 1.0, 0.0, -0.0, 7.5], dtype)
    b = np.array([3.0, -3.0, 3.0, -3.0, 0.0, 0.0, 2.0, np.inf, -np.inf, np.inf, -2.5], dtype)

    def f(a, b):
        return a % b, a // b

    with np.errstate(all="ignore"):
        for got, want in zip(xe.jit(f, backend=backend)(a, b), f(a, b)):
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        assert xe.jit(f, backend=backend)(-0.0, 2.0) == (0.0, -0.0)  # Python's, bit for bit
        assert np.signbit(xe.jit(f, backend=backend)(-0.0, 2.0)[1])


@pytest.mark.parametrize("backend", xe.api.BACKENDS)
def test_clip_with_scalar_bounds_keeps_x_where_it_equals_a_bound(backend):
    # NumPy's clip with two scalar bounds keeps x on a tie: clip(+0.0, -0.0, 1) is +0.0.
    x = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, 0.5, 2.0])
    for f in (lambda x: np.clip(x, -0.0, 0.0), lambda x: np.clip(x, -0.0, 1.0),
              lambda x: x.clip(-1, None), lambda x: np.clip(x, np.zeros(7), 1.0)):
        got, want = xe.jit(f, backend=backend)(x), f(x)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
