"""What tracing refuses, and how: the error names the NumPy function and the user's line,
quotes the line, suggests what to write instead, and leaves nothing behind."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import xla_explorer as xe


def line_of(f, text: str) -> int:
    """The file line number of the first line of f's source that contains text."""
    lines, start = inspect.getsourcelines(f)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in the source of {f.__name__}")


X = np.linspace(-1, 1, 12).reshape(3, 4).astype(np.float32)


def uses_lexsort(x):
    y = x * 2
    return np.lexsort(y)


def uses_fft(x):
    return np.fft.fft(x)


def uses_matrix_rank(x):
    a = x[:, :3]
    return np.linalg.matrix_rank(a)


def uses_bincount(x):
    return np.bincount(x.astype(np.int64).ravel()) + 1


def uses_round_method(x):
    return x.round(2)


def uses_spacing(x):
    return np.spacing(x)


def uses_accumulate(x):
    return np.logaddexp.accumulate(x)


def uses_fancy_index(x):
    return x[np.array([0, 2]), None]


def uses_histogramdd(x):
    return np.histogramdd(x)[0]


@pytest.mark.parametrize("f,name,call,alternative", [
    (uses_lexsort, "np.lexsort", "np.lexsort(", None),
    (uses_fft, "np.fft.fft", "np.fft.fft(", None),
    (uses_matrix_rank, "np.linalg.matrix_rank", "np.linalg.matrix_rank(", None),
    (uses_bincount, "np.bincount", "np.bincount(",
     "np.sum(x[..., None] == np.arange(m), axis=0) for a length m you know"),
    (uses_spacing, "np.spacing", "np.spacing(", None),
    (uses_accumulate, "np.logaddexp.accumulate", "np.logaddexp.accumulate(", None),
    (uses_histogramdd, "np.histogramdd", "np.histogramdd(", None),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_unsupported_function_names_itself_and_the_line(f, name, call, alternative):
    with pytest.raises(xe.UnsupportedOpError) as info:
        xe.explore(f, X)
    err = info.value
    line = line_of(f, call)
    message = str(err)
    assert f"{name} is not supported" in message, message
    assert err.op == name
    assert err.source_line == line
    assert err.source_file == inspect.getsourcefile(f)
    assert f":{line}: " in message and call in message.splitlines()[1], message  # quotes the line
    if alternative:
        assert f"alternative: {alternative}" in message, message
    assert isinstance(err, xe.CompileError)


def test_no_alternative_says_so():
    with pytest.raises(xe.UnsupportedOpError, match="no compilable equivalent"):
        xe.explore(uses_lexsort, X)


def test_index_arrays_beside_none_are_refused_with_a_hint():
    # Integer-array indexing is a gather; NumPy's placement of None beside index
    # arrays is not implemented, and says so.
    with pytest.raises(xe.UnsupportedOpError, match=r"None \(np.newaxis\) beside index "
                                                    "arrays") as info:
        xe.explore(uses_fancy_index, X)
    assert info.value.source_line == line_of(uses_fancy_index, "x[np.array")
    assert "Split it in steps" in str(info.value)


def test_unsupported_keyword_is_named():
    def f(x):
        return np.add(x, 1, where=x > 0)
    with pytest.raises(xe.UnsupportedOpError, match="np.add is not supported with where=") as info:
        xe.explore(f, X)
    assert info.value.source_line == line_of(f, "np.add(")


# -- values a trace does not have --------------------------------------------------------------


def branches(x):
    if x.sum() > 0:
        return x
    return -x


def to_bool(x):
    return x * bool(x[0, 0])


def to_int(x):
    n = int(x.max())
    return x + n


def to_float(x):
    return x + float(x[0, 0])


def to_list(x):
    return np.zeros(len(x.tolist()))


def to_item(x):
    return x + x[0, 0].item()


def while_loop(x):
    while (x > 0).any():
        x = x - 1
    return x


@pytest.mark.parametrize("f,call,what", [
    (branches, "if x.sum() > 0", "bool()"),
    (to_bool, "bool(x[0, 0])", "bool()"),
    (to_int, "int(x.max())", "int()"),
    (to_float, "float(x[0, 0])", "float()"),
    (to_list, "x.tolist()", ".tolist()"),
    (to_item, ".item()", ".item()"),
    (while_loop, "while (x > 0).any()", "bool()"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_concrete_values_are_a_trace_error(f, call, what):
    with pytest.raises(xe.TraceError) as info:
        xe.explore(f, X)
    err = info.value
    line = line_of(f, call)
    assert err.source_line == line
    message = str(err)
    assert what in message and "np.where" in message, message
    assert call in message.splitlines()[1]
    assert not isinstance(err, xe.CompileError)


def test_numpy_refusals_are_a_trace_error_at_the_line():
    def f(x):
        y = x.reshape(5, 7)
        return y
    with pytest.raises(xe.TraceError, match="np.reshape failed in NumPy") as info:
        xe.explore(f, X)
    assert info.value.source_line == line_of(f, "x.reshape(5, 7)")

    def g(x):
        return x + np.ones(5)
    with pytest.raises(xe.TraceError, match="could not be broadcast") as info:
        xe.explore(g, X)
    assert info.value.source_line == line_of(g, "x + np.ones(5)")


def test_unsupported_result_types_are_named():
    def f(b):
        return np.sqrt(b + 0j)
    with pytest.raises(xe.UnsupportedOpError, match="complex128") as info:
        xe.explore(f, np.array([True, False]))
    assert info.value.source_line == line_of(f, "np.sqrt(b + 0j)")
    assert "astype" in str(info.value)

    def g(x):
        return x.astype(np.complex64)
    with pytest.raises(xe.UnsupportedOpError, match="complex64"):
        xe.explore(g, X)

    def h(x):
        return np.zeros(3, np.complex64) + 1
    with pytest.raises(xe.UnsupportedOpError, match="complex64"):
        xe.explore(h, X)


def test_unsupported_argument_types_are_refused():
    with pytest.raises(TypeError, match="complex64"):
        xe.explore(lambda x: x + 1, np.ones(3, np.complex64))
    with pytest.raises(TypeError, match="list"):
        xe.explore(lambda x: x, [1.0, 2.0])


def test_in_place_write_that_numpy_refuses():
    def f(i):
        i += 1.5  # NumPy: cannot cast float64 to int32 in place
        return i
    with pytest.raises(xe.TraceError, match="same_kind") as info:
        xe.explore(f, np.arange(3, dtype=np.int32))
    assert info.value.source_line == line_of(f, "i += 1.5")


def test_writing_through_a_read_only_view_is_refused_as_numpy_does():
    def f(x):
        t = np.broadcast_to(x, (2, 3, 4))
        t[0] = 0
        return x
    with pytest.raises(ValueError, match="read-only"):
        f(X.copy())
    with pytest.raises(xe.TraceError, match="read-only view") as info:
        xe.explore(f, X)
    assert info.value.source_line == line_of(f, "t[0] = 0")
    assert "copy" in str(info.value)


def test_tracers_do_not_escape_into_later_traces():
    kept = []

    def leak(x):
        kept.append(x)
        return x + 1

    xe.explore(leak, X)

    def use(x):
        return x + kept[0]
    with pytest.raises(xe.TraceError, match="another trace"):
        xe.explore(use, X)


# -- a failed trace leaves nothing behind ------------------------------------------------------

_CREATION = ("zeros", "ones", "full", "empty", "arange", "linspace", "eye", "identity")
_ORIGINALS = {name: getattr(np, name) for name in _CREATION}


def fails_after_work(x, y):
    x += 1
    y[0] = 5
    z = np.zeros(3) + np.arange(3) + np.ones(3) + np.eye(3)[0] + np.linspace(0, 1, 3)
    x[1:] *= 2
    return np.lexsort(z + x[0, :3])


def test_a_failed_trace_leaves_nothing_behind():
    x, y = X.copy(), np.arange(4.0)
    with pytest.raises(xe.UnsupportedOpError):
        xe.explore(fails_after_work, x, y)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(y, np.arange(4.0))
    for name, original in _ORIGINALS.items():
        assert getattr(np, name) is original, f"np.{name} was not restored"
    # NumPy's functions are NumPy's again outside a trace.
    assert type(np.zeros(2)) is np.ndarray
    # ... and the next trace works.
    ex = xe.explore(lambda x: np.zeros(x.shape) + x, x)
    np.testing.assert_array_equal(ex.run(x), X)


def test_a_concrete_value_error_leaves_nothing_behind():
    x = X.copy()

    def f(x):
        x *= 3
        return x if x.max() > 0 else -x
    with pytest.raises(xe.TraceError):
        xe.explore(f, x)
    np.testing.assert_array_equal(x, X)
    assert all(getattr(np, n) is o for n, o in _ORIGINALS.items())


def test_a_python_error_in_the_function_leaves_nothing_behind():
    def f(x):
        np.zeros(2)
        raise KeyError("user bug")
    with pytest.raises(KeyError, match="user bug"):
        xe.explore(f, X)
    assert all(getattr(np, n) is o for n, o in _ORIGINALS.items())
    assert xe.explore(lambda x: x * 2, X).check().ok


def test_a_successful_trace_restores_numpy_too():
    xe.explore(lambda x: np.zeros(3) + np.ones(3) + x[0, :3], X)
    assert all(getattr(np, n) is o for n, o in _ORIGINALS.items())


def test_lists_of_traced_arrays_handed_to_numpy_suggest_stack():
    def f(x):
        return np.sum([x, x], axis=0)
    with pytest.raises(xe.TraceError, match="list of traced arrays") as info:
        xe.explore(f, X)
    assert info.value.source_line == line_of(f, "np.sum([x, x]")
    assert "np.stack" in str(info.value)


def test_out_of_the_wrong_shape_is_a_trace_error():
    def f(x):
        np.add(x, 1, out=x[::2])
        return x
    with pytest.raises(ValueError):
        f(X.copy())
    with pytest.raises(xe.TraceError, match="does not fit") as info:
        xe.explore(f, X)
    assert info.value.source_line == line_of(f, "out=x[::2]")


# -- NumPy's own errors keep their class; crashes became messages ------------------------------


@pytest.mark.parametrize("f,cls,call", [
    (lambda x: x * 2**40, OverflowError, "x * 2**40"),
    (lambda x: x.reshape(5, 7), ValueError, "x.reshape(5, 7)"),
    (lambda x: np.sum(x, axis=3), ValueError, "np.sum(x, axis=3)"),
], ids=["overflow", "reshape", "axis"])
def test_numpy_errors_keep_their_class(f, cls, call):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    with pytest.raises(cls):
        f(x)  # NumPy's own class
    with pytest.raises(cls) as info:
        xe.jit(f)(x)
    assert isinstance(info.value, xe.TraceError)
    assert call in str(info.value).splitlines()[1]


def test_linspace_retstep_works():
    def f(x):
        ramp, step = np.linspace(0, 1, 5, retstep=True)
        return x + ramp * step
    np.testing.assert_array_equal(xe.jit(f)(np.ones(5)), f(np.ones(5)))


def test_ndarray_methods_and_typos_name_the_ndarray_attribute():
    def view(x):
        return x.view(np.int64)
    with pytest.raises(xe.UnsupportedOpError, match=r"ndarray\.view is not supported") as info:
        xe.explore(view, X)
    assert isinstance(info.value, AttributeError) and "astype" in str(info.value)
    assert info.value.source_line == line_of(view, "x.view")

    def typo(x):
        return x.sortt()
    with pytest.raises(AttributeError, match="ndarray has no attribute 'sortt'") as info:
        xe.explore(typo, X)
    assert "Tracer" not in str(info.value) and ".sort?" in str(info.value)
    assert info.value.source_line == line_of(typo, "x.sortt()")


def test_a_leaked_tracer_used_later_says_what_happened():
    kept = []
    xe.explore(lambda x: kept.append(x * 2) or x, X)
    for use in (lambda: kept[0] + 1, lambda: np.exp(kept[0]), lambda: kept[0][1:],
                lambda: bool(kept[0][0, 0])):
        with pytest.raises(xe.TraceError, match="used after the trace that made it ended"):
            use()


def test_index_messages_say_what_the_user_wrote():
    def with_newaxis(x, k):
        return x[:, k[:2], None]
    with pytest.raises(xe.UnsupportedOpError,
                       match=r"x\[:, a traced int64\[2\] array, None\]") as info:
        xe.explore(with_newaxis, X, np.arange(3))
    assert "Tracer" not in str(info.value)

    with pytest.raises(xe.CompileError, match=r"boolean-mask indexing \(x\[mask\]\)") as info:
        xe.jit(lambda x: x[x > 0])(X)
    assert "np.boolean_mask" not in str(info.value)


def rounded(x):
    return x * round(x.sum())


def reshaped_in_place(x):
    x.shape = (4, 3)
    return x


def ranged(x):
    return [x[i] for i in range(x.argmax())]


@pytest.mark.parametrize("f,call,says,hint", [
    (rounded, "round(x.sum())", "round() of a traced array", "np.round(x)"),
    (reshaped_in_place, "x.shape = (4, 3)", "assigning to .shape",
     "a = a.reshape((4, 3))"),
    (ranged, "range(x.argmax())", "int() (as an index, in range(), as a count)", "np.where"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_python_uses_of_values_name_the_line_and_what_to_do(f, call, says, hint):
    # Once a raw TypeError or AttributeError about `Tracer`, with no line; and range() was
    # "using as an index".
    with pytest.raises(xe.TraceError) as info:
        xe.jit(f)(X)
    err = info.value
    assert err.source_line == line_of(f, call)
    assert says in str(err) and hint in str(err) and "Tracer" not in str(err), str(err)


def test_np_where_of_a_condition_alone_is_named_as_written():
    with pytest.raises(xe.CompileError, match=r"np\.where \(computed as np\.nonzero\) is not "
                                              "compilable") as info:
        xe.jit(lambda x: np.where(x > 0))(X)
    assert info.value.source_line
    with pytest.raises(xe.CompileError, match=r"^np\.nonzero is not compilable"):
        xe.jit(lambda x: np.nonzero(x))(X)


def test_an_unsupported_form_does_not_suggest_its_own_function():
    with pytest.raises(xe.UnsupportedOpError, match="einsum") as info:
        xe.explore(lambda x: np.einsum(x, [0, 0], [0]), np.ones((3, 3)))
    assert "similar name: np.einsum" not in str(info.value)


@pytest.mark.parametrize("backend", xe.api.BACKENDS)
def test_np_array_of_traced_values_stacks_them(backend):
    def f(x, c):
        p = np.array([c, 2.0, x[0]])  # a Python float, a Python int argument, a traced element
        q = np.asarray(x)  # the same array
        r = np.array(x)  # a copy: updating it leaves x alone
        r += 1
        m = np.array([[x[0], x[1]], [1, 2]], dtype=np.float32)
        return p, q, r, x, m, np.asarray(c) * x

    x = np.arange(3.0)
    got, want = xe.jit(f, backend=backend)(x.copy(), 3), f(x.copy(), 3)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


# -- arguments the explorer cannot take, and NumPy's AxisError --------------------------------


def test_a_big_endian_argument_says_so_and_how_to_convert_it():
    def f(x, y):
        return x * y
    def call(x):
        return xe.jit(f)(x, 2.0)
    big = np.arange(3.0).astype(">f8")
    with pytest.raises(TypeError) as info:
        call(big)
    message = str(info.value)
    assert "argument 'x'" in message and "big-endian" in message, message
    assert "x.astype(x.dtype.newbyteorder('='))" in message
    assert isinstance(info.value, xe.XlaExplorerError)
    assert info.value.source_line == line_of(call, "xe.jit(f)(x, 2.0)")  # the call's line
    np.testing.assert_array_equal(xe.jit(f)(big.astype(big.dtype.newbyteorder("=")), 2.0),
                                  f(big, 2.0))


def test_a_complex_argument_says_complex_numbers_are_not_supported():
    def f(x, y):
        return x * y
    for args, name in [((np.ones(2), 1j), "y"), ((np.ones(2, np.complex128), 2.0), "x"),
                       ((np.ones(2), np.complex64(1j)), "y")]:
        with pytest.raises(TypeError, match="complex numbers are not supported") as info:
            xe.jit(f)(*args)
        assert f"argument {name!r}" in str(info.value)
        assert "expected a NumPy array" not in str(info.value)


@pytest.mark.parametrize("value,what,hint", [
    (np.ones(2, np.complex64), "complex numbers", "x.real, x.imag"),
    (np.complex128(1 + 2j), "complex numbers", "x.real, x.imag"),
    (np.array(["2024-01-01"], "datetime64[D]"), "dates and times (datetime64)", "x.astype(np.int64)"),
    (np.datetime64("2024-01-01T10:00"), "dates and times (datetime64)", "x.astype(np.int64)"),
    (np.array([3, 4], "timedelta64[s]"), "time spans (timedelta64)", "x.astype(np.int64)"),
    (np.array(["a", "bc"]), "strings", "np.unique(x, return_inverse=True)[1]"),
    (np.str_("a"), "strings", "np.unique(x, return_inverse=True)[1]"),
    (np.array([b"a", b"bc"]), "bytes", "np.unique(x, return_inverse=True)[1]"),
    (np.zeros(2, [("a", np.float64), ("b", np.int32)]), "structured and void arrays",
     "x['field']"),
    (np.zeros(2, "V4"), "structured and void arrays", "x['field']"),
    (np.array([1, None], dtype=object), "object arrays", "x.astype(np.float64)"),
], ids=["complex64", "complex128-scalar", "datetime64", "datetime64-scalar", "timedelta64",
        "str", "str-scalar", "bytes", "structured", "void", "object"])
def test_an_argument_of_an_unsupported_dtype_is_a_type_error(value, what, hint):
    """Complex, datetime, timedelta, string, bytes, void and object arguments (arrays and
    NumPy scalars): a TypeError naming the argument and its dtype, listing the dtypes that
    work and saying what to pass instead."""
    def f(y, x):
        return x
    with pytest.raises(TypeError) as info:
        xe.jit(f)(np.ones(2), value)
    assert isinstance(info.value, xe.XlaExplorerError)
    message = str(info.value)
    assert f"argument 'x' has dtype {value.dtype}: {what} are not supported" in message
    assert ("bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32 "
            "and float64") in message
    assert hint in message, message


def test_np_float32_of_an_array_argument_names_it_and_suggests_astype():
    def f(x):
        return np.float32(x) * 2
    with pytest.raises(xe.TraceError) as info:
        xe.jit(f)(np.ones(3))
    message = str(info.value)
    assert "np.float32(x)" in message and "argument 'x'" in message, message
    assert "x.astype(np.float32)" in message
    assert info.value.source_line == line_of(f, "np.float32(x)")


def test_np_inner_once_suggested_now_compiles():
    a, b = X, np.arange(8.0, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(xe.jit(lambda a, b: np.inner(a, b))(a, b), np.inner(a, b),
                               rtol=1e-6)


# NumPy itself indexes the shape with these axes: an IndexError, not an AxisError.
_INDEX_ERROR_AXIS = (np.trapezoid, np.split, np.array_split)


@pytest.mark.parametrize("func", _INDEX_ERROR_AXIS, ids=lambda f: f.__name__)
def test_an_axis_numpy_indexes_with_is_numpys_index_error(func):
    def f(x):
        return func(x, 2, axis=5) if func is not np.trapezoid else func(x, axis=5)
    with pytest.raises(IndexError):
        f(X)
    with pytest.raises(IndexError) as info:
        xe.jit(f)(X)
    assert isinstance(info.value, xe.TraceError)
    assert info.value.source_line == line_of(f, "func(x")


def _axis_cases():
    """Every function with a lowering that takes `axis`, given one out of range; and the
    methods, ufunc reductions and the functions that name their axes otherwise."""
    from xla_explorer.trace.numpy.registry import FUNCTIONS

    cases = []
    for func in FUNCTIONS:
        try:
            takes_axis = "axis" in inspect.signature(func).parameters
        except (TypeError, ValueError):
            continue
        if takes_axis and func in _INDEX_ERROR_AXIS:
            continue
        if takes_axis:
            seq = func in (np.concatenate, np.stack)
            # the arguments after the array that these functions require
            more = {np.repeat: lambda x: (2,), np.roll: lambda x: (1,),
                    np.cross: lambda x: (x[:, :3],), np.percentile: lambda x: (50,),
                    np.quantile: lambda x: (0.5,), np.nanpercentile: lambda x: (50,),
                    np.nanquantile: lambda x: (0.5,), np.partition: lambda x: (1,),
                    np.argpartition: lambda x: (1,),
                    np.take: lambda x: (np.array([0]),),
                    np.take_along_axis: lambda x: (np.zeros((3, 4), np.int64),),
                    np.append: lambda x: (x,), np.delete: lambda x: (0,),
                    np.insert: lambda x: (0, 1)}.get(func, lambda x: ())
            cases.append(pytest.param(
                lambda x, func=func, seq=seq, more=more: func(
                    [x, x] if seq else (x[:, :3] if func is np.cross else x), *more(x), axis=5),
                id=func.__name__))
    return cases + [
        pytest.param(lambda x: np.argmax(x, axis=2), id="argmax-2"),
        pytest.param(lambda x: x.sum(axis=-3), id="method"),
        pytest.param(lambda x: np.add.reduce(x, axis=2), id="add.reduce"),
        pytest.param(lambda x: np.swapaxes(x, 0, 2), id="swapaxes"),
        pytest.param(lambda x: np.moveaxis(x, 2, 0), id="moveaxis"),
    ]


@pytest.mark.parametrize("f", _axis_cases())
def test_an_axis_out_of_range_is_numpys_axis_error(f):
    with pytest.raises(np.exceptions.AxisError):
        f(X)  # NumPy's own class
    with pytest.raises(np.exceptions.AxisError) as info:
        xe.jit(f)(X)
    err = info.value
    assert isinstance(err, xe.TraceError) and isinstance(err, (ValueError, IndexError))
    assert isinstance(err, IndexError)
    assert err.source_line == f.__code__.co_firstlineno and "is out of bounds" in str(err)


def draws_noise(x):
    return x + np.random.normal(size=x.shape)


RNG = np.random.default_rng(5)


def uses_outside_generator(x):
    return x + RNG.standard_normal(x.shape)


def test_random_draws_while_tracing_are_refused_with_the_line():
    with pytest.raises(xe.TraceError, match=r"np\.random\.normal .* every call would reuse") as e:
        xe.jit(draws_noise)(X)
    assert e.value.source_line == line_of(draws_noise, "np.random.normal")
    assert "--autocluster" in str(e.value)


def test_random_draws_run_eagerly_on_every_call_under_autocluster():
    ex = xe.explore(draws_noise, X, autocluster=True)
    first, second = ex.run(X), ex.run(X)
    assert first.shape == X.shape and not np.array_equal(first, second)


def test_numpy_compiled_code_calling_np_empty_gets_a_real_array():
    # A Generator's methods are compiled NumPy that calls np.empty while the user's frame is
    # the innermost Python one; handing them a traced array would crash the process.
    got = xe.jit(uses_outside_generator)(X)
    assert got.shape == X.shape and got.dtype == np.float64


# -- the forms of the trace-time compositions (np.pad modes, np.convolve ...) not supported ---


def zero_norm(x):
    return np.linalg.norm(x[0], 0)


def pads_by_a_traced_width(x, n):
    return np.pad(x, n)


def convolves_many_taps(x, v):
    return np.convolve(x, v)


def splits_at_a_traced_count(x, n):
    return np.split(x, n)


def einsum_interleaved(x):
    return np.einsum(x, [0, 1], [1, 0])


def weighted_cov(x):
    return np.cov(x, fweights=[1, 2, 1, 1])


def gradient_traced_coordinates(x):
    return np.gradient(x[0], x[1])


def periodic_interp(x):
    return np.interp(x, [0.0, 1.0], [1.0, 2.0], period=2.0)


def reshape_in_a_order(x):
    return np.reshape(x, (4, 3), order="A")


@pytest.mark.parametrize("f,args,call,detail", [
    (zero_norm, (X,), "np.linalg.norm(", "np.linalg.norm is not supported with ord=0"),
    (pads_by_a_traced_width, (X, 2), "np.pad(", "traced widths (they decide the shape)"),
    (convolves_many_taps, (np.ones(100), np.ones(70)), "np.convolve(",
     "np.convolve is not supported with a shorter operand of 70 elements: it is unrolled"),
    (splits_at_a_traced_count, (np.ones(4), 2), "np.split(", "traced indices or sections"),
    (einsum_interleaved, (X,), "np.einsum(", "subscript lists interleaved"),
    (weighted_cov, (X,), "np.cov(", "np.cov is not supported with fweights or aweights"),
    (gradient_traced_coordinates, (X,), "np.gradient(", "traced coordinate arrays"),
    (periodic_interp, (X,), "np.interp(", "np.interp is not supported with period="),
    (reshape_in_a_order, (X,), "np.reshape(", "order='A' (only 'C' and 'F')"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_unsupported_forms_of_compositions_say_why_at_the_line(f, args, call, detail):
    with pytest.raises(xe.UnsupportedOpError) as info:
        xe.explore(f, *args)
    message = str(info.value)
    assert detail in message, message
    assert info.value.source_line == line_of(f, call), message
    assert "Use a form of np." in message, message
# -- more compositions: the forms they refuse, and why --------------------------------


@pytest.mark.parametrize("f,what", [
    (lambda x: np.delete(x, np.argmax(x[0]), axis=1),
     "np.delete is not supported with traced positions"),
    (lambda x: np.insert(x, x[0, :1].astype(np.int64), 0.0, axis=1),
     "np.insert is not supported with traced positions"),
    (lambda x: np.isin(x, np.linspace(0, 1, 300) * x[0, 0]),
     "np.isin is not supported with a traced test_elements of 300 elements \\(at most 256"),
    (lambda x: np.quantile(x, 0.5, method="inverted_cdf", weights=np.abs(x)),
     "np.quantile is not supported with weights="),
    (lambda x: np.histogram(x, bins=x[0]), "np.histogram is not supported with traced or named"),
    (lambda x: np.histogram(x, bins="auto"), "np.histogram is not supported with traced or named"),
    (lambda x: np.histogram(x, range=(0, x[2, 3])),
     "np.histogram is not supported with a traced range"),
    (lambda x: np.place(x, x > 0, [1.0, 2.0]),
     "np.place is not supported with more than one value"),
    (lambda x: np.nanvar(x, where=x > 0), "np.nanvar is not supported with where= or mean="),
    (lambda x: np.nanstd(x, mean=x.mean(keepdims=True)),
     "np.nanstd is not supported with where= or mean="),
    (lambda x: np.nanprod(x, initial=2.0), "np.nanprod is not supported with initial= or where="),
    (lambda x, n: np.resize(x, n), "np.resize is not supported with traced counts"),
    (lambda x, n: np.vander(x[0], n), "np.vander is not supported with traced counts"),
], ids=["delete", "insert", "isin-size", "quantile-weights",
        "histogram-traced-bins", "histogram-named-bins", "histogram-range", "place-values",
        "nanvar-where", "nanstd-mean", "nanprod-initial", "resize-traced", "vander-traced"])
def test_composed_forms_not_supported_are_refused(f, what):
    args = (X, 3) if f.__code__.co_argcount == 2 else (X,)
    with pytest.raises(xe.UnsupportedOpError, match=what) as info:
        xe.explore(f, *args)
    assert info.value.source_line == f.__code__.co_firstlineno
    assert "Use a form of" in str(info.value)


def test_bincount_says_why_its_length_is_not_known():
    with pytest.raises(xe.UnsupportedOpError, match=r"x.max\(\) \+ 1") as info:
        xe.explore(uses_bincount, X)
    assert info.value.source_line == line_of(uses_bincount, "np.bincount(")


def test_copyto_into_an_array_that_is_not_traced_is_refused():
    dst = np.zeros((3, 4), np.float32)

    def f(x):
        np.copyto(dst, x)
        return x
    with pytest.raises(xe.TraceError, match="np.copyto writes into an array that is not traced"):
        xe.explore(f, X)
    assert not dst.any()  # the caller's array is left as it was


def test_place_with_several_values_stays_refused_under_autocluster():
    # An opaque call could not write into x: the refusal stands rather than a silent no-op.
    with pytest.raises(xe.UnsupportedOpError, match="np.place is not supported"):
        xe.explore(lambda x: np.place(x, x > 0, [1.0, 2.0]), X, autocluster=True)


# -- auto-clustering is offered exactly where it would run the call --------------------------


OFFERS = {  # program, whether auto-clustering runs it (and so whether the error offers it)
    "np.linalg.matrix_rank": (lambda x: np.linalg.matrix_rank(x[:, :3]) + 1, True),
    "np.add casting=": (lambda x: np.add(x, 1, casting="unsafe"), True),
    "np.add.reduce dtype=": (lambda x: np.add.reduce(x, dtype=np.float64), True),
    "np.add.reduceat": (lambda x: np.add.reduceat(x, [0, 2]), True),
    "np.linalg.cond": (lambda x: np.linalg.cond(x[:, :3]) + 1, True),
    "np.fft.fft": (lambda x: np.fft.fft(x).real, False),  # complex between clusters
    "np.clip out=": (lambda x: np.clip(x, 0, 1, out=x), False),  # writes an argument
    "np.place several values": (lambda x: np.place(x, x > 0, [1.0, 2.0]), False),
    "x[None, idx]": (lambda x: x[None, np.array([0, 2])], False),
}


@pytest.mark.parametrize("name", list(OFFERS))
def test_autocluster_is_offered_only_where_it_runs_the_call(name):
    program, runs = OFFERS[name]
    with pytest.raises(xe.XlaExplorerError) as e:
        xe.jit(program)(X.copy())
    assert ("--autocluster" in str(e.value)) == runs, str(e.value)
    if runs:
        got = xe.explore(program, X.copy(), autocluster=True).run(X.copy())
        np.testing.assert_allclose(got, program(X.copy()), rtol=1e-6)
    else:
        with pytest.raises(xe.XlaExplorerError):
            xe.explore(program, X.copy(), autocluster=True)


@pytest.mark.parametrize("f, cls", [
    (lambda u: np.ediff1d(u, to_begin=-1), TypeError),  # int64 does not cast to uint8
    (lambda u: np.fill_diagonal(u, -1), OverflowError),  # -1 is out of uint8's range
], ids=["ediff1d", "fill_diagonal"])
def test_numpys_refusals_on_unsigned_arrays_are_numpys(f, cls):
    u = np.arange(9, dtype=np.uint8).reshape(3, 3)
    with pytest.raises(cls):
        f(u.copy())
    with pytest.raises(cls) as e:
        xe.jit(f)(u.copy())
    assert isinstance(e.value, xe.TraceError)


def _add_float(x):
    x += 1.5
    return x


def _floor_divide_float(x):
    x //= 0.5
    return x


@pytest.mark.parametrize("f,hint", [(_add_float, "Write x = x + ... to make a new array"),
                                    (_floor_divide_float, "Write x = x // ... to make")])
def test_an_in_place_cast_numpy_refuses_says_how_to_write_it(f, hint):
    with pytest.raises(xe.TraceError) as e:
        xe.jit(f)(np.arange(3))
    assert "cannot cast float64 to int64 in place" in str(e.value)
    assert hint in str(e.value)
