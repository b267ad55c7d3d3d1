"""Every op record, expanded over types, shapes and keyword variants, traced, compiled and run
against NumPy itself: the same values (within the type's tolerance, NaN equal to NaN), the
same shape and the same type, and every stage's HLO round-trips through the parser."""
from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest

import xla_explorer as xe
from tests import sweeps
from xla_explorer.api import tolerance
from xla_explorer.trace.numpy import registry

from .op_records import (ALL, BOOL, BY_NAME, DTYPE, ELEMENTWISE, F16, F32, F64, I8, I16, I32,
                         I64, OPERATORS, RECORDS, REDUCTIONS, SELECTION, U8, U16, U32, U64,
                         OpRecord)

SUPPORTED = set(ALL)
# NumPy warns about empty means, zero divisions and the like, eagerly and while tracing.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# -- comparing with NumPy ----------------------------------------------------------------------


def numpy_call(f, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args)


def leaves(tree) -> list:
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in leaves(t)]
    if isinstance(tree, dict):
        return [leaf for t in tree.values() for leaf in leaves(t)]
    return [tree]


def assert_same(got, want, *, tol=1.0, values=True, what="output"):
    """got is want: shape, type, array-or-scalar form, and value within tolerance."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != NumPy's {w.shape}"
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != NumPy's {w.dtype}"
    assert isinstance(got, np.ndarray) == isinstance(want, np.ndarray), (
        f"{what}: {type(got).__name__} where NumPy gives {type(want).__name__}")
    if not values:
        return
    if w.dtype.kind == "f":
        rtol, atol = tolerance(w.dtype)
        if w.dtype == np.float16 and w.size and np.isfinite(w).any():
            # NumPy's float16 sum along an outer axis rounds after every addition, where the
            # explorer sums in float32 and rounds once: within ulps of the largest value.
            atol = max(atol, rtol * float(np.max(np.abs(w[np.isfinite(w)]))))
        np.testing.assert_allclose(g, w, rtol=rtol * tol, atol=atol * tol, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def assert_tree_same(got, want, **kw):
    assert type(got) is type(want) or not isinstance(want, (tuple, list, dict)), (
        f"output container {type(got).__name__} != NumPy's {type(want).__name__}")
    g, w = leaves(got), leaves(want)
    assert len(g) == len(w), f"{len(g)} outputs, NumPy gives {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        assert_same(a, b, what=f"output {i}", **kw)


def check_stages(ex):
    """The traced module verifies (the pipeline verifies each pass's output as it runs), and
    the traced and the final text print and parse back to themselves. The stages between
    differ from those two only in what the passes rewrote, and the random programs
    (tests/test_random_programs.py) round-trip every stage; the parser was most of this
    sweep's time when it read them all."""
    xe.verify(ex.stages[0].module)
    for i in dict.fromkeys((0, len(ex.stages) - 1)):
        text = ex.hlo(i)
        assert xe.parse_hlo(text).to_text() == text, f"stage {ex.stages[i].name} does not round-trip"


def assert_matches_numpy(f, make_args, *, tol=1.0, values=True, backend="interpreter"):
    """Trace f, run it compiled, and compare with NumPy on fresh copies of the same inputs,
    including what f did to its inputs in place."""
    traced_args = make_args()
    ex = xe.explore(f, *traced_args, backend=backend)
    for a, fresh in zip(traced_args, make_args()):  # tracing never changes the caller's arrays
        np.testing.assert_array_equal(a, fresh)
    check_stages(ex)
    numpy_args, run_args = make_args(), make_args()
    want = numpy_call(f, numpy_args)
    got = ex.run(*run_args)
    assert_tree_same(got, want, tol=tol, values=values)
    for i, (a, b) in enumerate(zip(run_args, numpy_args)):
        if isinstance(b, np.ndarray):
            assert_same(a, b, tol=tol, what=f"argument {i} after the call")
    return ex


def numpy_verdict(f, make_args):
    """None if NumPy computes f with supported types; else why not ('error' or a dtype)."""
    try:
        want = numpy_call(f, make_args())
    except Exception:
        return "error"
    for leaf in leaves(want):
        dt = np.asarray(leaf).dtype
        if dt not in SUPPORTED:
            return dt
    return None


def assert_like_numpy(f, make_args, **kw):
    """Where NumPy computes f, match it; where NumPy refuses, refuse too; where NumPy's
    result has a type the explorer lacks, say so."""
    verdict = numpy_verdict(f, make_args)
    if verdict is None:
        return assert_matches_numpy(f, make_args, **kw)
    if verdict == "error":
        with pytest.raises((xe.TraceError, xe.UnsupportedOpError)):
            xe.explore(f, *make_args())
    else:
        with pytest.raises(xe.UnsupportedOpError, match=re.escape(str(verdict))):
            xe.explore(f, *make_args())


def _bind(record: OpRecord, variant: dict, dtype):
    kw = {k: (dtype if v is DTYPE else v) for k, v in variant.items()}

    def f(*args):
        return record.fn(*args, **kw)
    return f


def _id(x) -> str:
    if isinstance(x, dict):
        return ",".join(f"{k}={_id(v)}" for k, v in x.items()) or "-"
    if isinstance(x, np.dtype) or isinstance(x, type):
        return np.dtype(x).name
    if isinstance(x, np.ndarray):
        return f"array{list(x.shape)}".replace(" ", "")
    return str(x).replace(" ", "")


def _fast_dtype(dtypes):
    """The one type `make test-fast` checks a record on: float32 where the record takes it
    (the type most programs here compute in), else float64, else its first."""
    return next((d for d in (np.dtype(F32), np.dtype(F64)) if d in dtypes), dtypes[0])


def _record_params(records, dtype_filter=None):
    """Every record, type and case: `make test` runs every case of each record on its
    `_fast_dtype` (the first `meta["normal_cases"]` where a record says so); every other
    type is `make test-deep`'s (the integer widths and float16
    have tests of their own in `make test`: test_integer_types.py, test_float16.py)."""
    for r in records:
        kept = [np.dtype(d) for d in r.dtypes if not dtype_filter or dtype_filter(d)]
        if not kept:
            continue
        fast = _fast_dtype(kept)
        for dtype in kept:
            if not sweeps.keep(dtype != fast):
                continue
            normal = r.meta.get("normal_cases", len(r.all_cases()))
            for k, (shapes, variant) in enumerate(r.all_cases()):
                if not sweeps.keep(dtype != fast or k >= normal):
                    continue
                marks = [] if dtype == fast and k < normal else [pytest.mark.deep]
                yield pytest.param(r, dtype, shapes, variant, marks=marks,
                                   id=f"{r.name}|{dtype.name}|{_id(shapes)}|{_id(variant)}")


def _args_factory(record, shapes, dtype, seed=0):
    def make():
        return record.make_args(np.random.default_rng(seed), shapes, dtype)
    return make


# -- every record, every type, every case ------------------------------------------------------


@pytest.mark.parametrize("record,dtype,shapes,variant",
                         list(_record_params(RECORDS)))
def test_record_matches_numpy(record, dtype, shapes, variant):
    f = _bind(record, variant, dtype)
    make = _args_factory(record, shapes, dtype)
    assert numpy_verdict(f, make) is None, f"the record for {record.name} asks NumPy for " \
                                           "something it refuses or cannot type"
    ex = assert_matches_numpy(f, make, tol=record.tol, values=record.values)
    if record.values:
        result = ex.check(*make())
        assert result.ok, str(result)
    traced = ex.hlo(0)
    if record.group == "creation":
        _assert_no_big_constants(traced)
        if any(np.size(leaf) > 1 for leaf in leaves(ex.traced.eager_outputs)):
            assert "broadcast(" in traced or "iota(" in traced, traced
    if record.group in ("not-compilable", "library"):
        assert "custom-call(" in traced, traced
    else:
        assert "custom-call(" not in traced, traced


def _cpu_params():
    """One case per record and type (the first with no empty argument), each compiled: a
    record on its `_fast_dtype` in `make test` (unless its `meta["compiled_deep"]`), on every
    other type in `make test-deep` (a compile is about 0.2 s). Element-wise records compile in
    `make test-deep` only: what they trace to is checked on the interpreter here, every op
    row's scalar expression on the cpu for every type in one kernel (tests/codegen/
    test_exprs.py), and the compositions' special values on the cpu (tests/trace/
    test_composed*.py); their 126 compiles were 20 s of the suite's CPU."""
    for r in RECORDS:
        if r.group in ("not-compilable", "library"):  # library calls: tests/test_linalg.py
            continue
        types = [np.dtype(d) for d in r.dtypes]
        fast = _fast_dtype(types)
        cases = list(r.all_cases())
        shapes, variant = next(((sh, v) for sh, v in cases
                                if all(0 not in np.shape(np.empty(s)) if isinstance(s, tuple)
                                       else True for s in sh)), cases[0])
        for dtype in types:
            deep = (dtype != fast or r.meta.get("compiled_deep", False)
                    or r.group == "elementwise")
            if not sweeps.keep(deep):
                continue
            yield pytest.param(r, dtype, shapes, variant,
                               marks=[pytest.mark.deep] if deep else [],
                               id=f"{r.name}|{dtype.name}|{_id(shapes)}|{_id(variant)}")


@pytest.mark.slow  # a Numba compile for each record
@pytest.mark.parametrize("record,dtype,shapes,variant", list(_cpu_params()))
def test_record_matches_numpy_on_the_cpu(record, dtype, shapes, variant, tmp_path_factory,
                                         monkeypatch):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))
    f = _bind(record, variant, dtype)
    make = _args_factory(record, shapes, dtype)
    if numpy_verdict(f, make) is not None:
        pytest.fail(f"the record for {record.name} asks NumPy for something it refuses")
    assert_matches_numpy(f, make, tol=record.tol, values=record.values, backend="cpu")


def _assert_no_big_constants(text):
    """Creation ops lower to broadcasts and iotas, never to a literal array."""
    for line in text.splitlines():
        m = re.search(r"= (\w+)\[([\d,]*)\]\S* constant\(", line)
        if m:
            dims = [int(d) for d in m.group(2).split(",") if d]
            assert int(np.prod(dims)) <= 1, f"a constant bigger than one element: {line}"


# -- Python scalars on either side: NEP 50 weak typing -----------------------------------------

_BINARY = [r for r in ELEMENTWISE + OPERATORS if r.arity == 2]
_SCALAR_KINDS = {"bool": np.bool_, "int": np.int64, "float": np.float64}


def _python_scalar(record, position, kind, rng):
    dom = record.domains[min(position, len(record.domains) - 1)]
    return dom(rng, (), np.dtype(_SCALAR_KINDS[kind])).item()


def _scalar_params():
    """Every binary op, side and scalar kind on the op's `_fast_dtype`; its other types in
    `make test-deep`."""
    for r in _BINARY:
        fast = _fast_dtype([np.dtype(d) for d in r.dtypes])
        for dtype in r.dtypes:
            if not sweeps.keep(np.dtype(dtype) != fast):
                continue
            for side, kind in itertools.product(("left", "right"), _SCALAR_KINDS):
                yield pytest.param(r, dtype, side, kind,
                                   marks=[] if np.dtype(dtype) == fast else [pytest.mark.deep],
                                   id=f"{r.name}|{dtype.name}|{side}|{kind}")


@pytest.mark.slow  # every binary op, side and scalar kind
@pytest.mark.parametrize("record,dtype,side,kind", list(_scalar_params()))
def test_python_scalar_operand(record, dtype, side, kind):
    rng = np.random.default_rng(1)
    array_pos = 0 if side == "right" else 1
    dom = record.domains[min(array_pos, len(record.domains) - 1)]
    x = dom(rng, (3, 4), dtype)
    s = _python_scalar(record, 1 - array_pos, kind, rng)
    if side == "right":
        def f(x):
            return record.fn(x, s)

        def g(x, s):  # the scalar as an argument: still weak
            return record.fn(x, s)
    else:
        def f(x):
            return record.fn(s, x)

        def g(x, s):
            return record.fn(s, x)
    assert_like_numpy(f, lambda: [x.copy()])
    assert_like_numpy(g, lambda: [x.copy(), s])


def test_weak_scalars_keep_the_array_type():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for f in (lambda x: x * 2.5, lambda x: 2.5 * x, lambda x: x - 1, lambda x: 1 / x,
              lambda x: np.maximum(x, 0.5), lambda x: np.where(x > 2, x, 0.5),
              lambda x: np.clip(x, 0.5, 3.5), lambda x: x ** 2):
        ex = xe.explore(f, x)
        assert ex.run(x).dtype == np.float32
        assert "f64" not in ex.hlo(), ex.hlo()
    i = np.arange(6, dtype=np.int32)
    assert xe.explore(lambda i: i + 2, i).run(i).dtype == np.int32
    assert xe.explore(lambda i: i * 2.5, i).run(i).dtype == np.float64
    # A Python int too big for the array's type is NumPy's OverflowError, at trace time.
    with pytest.raises(xe.TraceError):
        xe.explore(lambda i: i + 2 ** 40, i)


# -- mixed element types: NumPy's promotion ----------------------------------------------------

_MIXED = ["np.add", "np.subtract", "np.multiply", "np.divide", "np.floor_divide", "np.power",
          "np.maximum", "np.fmin", "np.arctan2", "np.equal", "np.logical_xor", "np.bitwise_or",
          "np.left_shift", "x % y"]


_FIRST_TYPES = (BOOL, I32, I64, F32, F64)
# Every pair of the first five types; for the narrow and unsigned integers and float16, the
# pairs whose promotion is NumPy's less obvious answers (uint8 + int8 is int16, uint64 + int64
# float64, uint32 + int32 int64, int8 + float16 float16, int16 + float16 float32) and one of
# each with bool and float32. The rest are `make test-deep`'s.
_NEW_PAIRS = [(U8, I8), (I8, U8), (U64, I64), (I64, U64), (U32, I32), (U16, I16), (I8, I16),
              (U8, U16), (U64, U8), (BOOL, U8), (U8, F32), (I16, F32), (U64, F64),
              (F16, F32), (I8, F16), (U8, F16), (F16, I16), (BOOL, F16)]
_PAIRS = ([(a, b) for a in _FIRST_TYPES for b in _FIRST_TYPES if a != b] + _NEW_PAIRS
          + [pytest.param(a, b, marks=pytest.mark.deep) for a in ALL for b in ALL
             if sweeps.WANTED and a != b and (a, b) not in _NEW_PAIRS
             and not (a in _FIRST_TYPES and b in _FIRST_TYPES)])


@pytest.mark.parametrize("name", _MIXED)
@pytest.mark.parametrize("dt1,dt2", _PAIRS, ids=lambda d: d.name)
def test_mixed_types_promote_like_numpy(name, dt1, dt2):
    record = BY_NAME[name]

    def make():
        rng = np.random.default_rng(2)
        return [record.make_args(rng, [(3, 1)], dt1)[0],
                record.domains[-1](rng, (4,), dt2)]
    assert_like_numpy(record.fn, make, tol=record.tol)


# -- strided and transposed arguments ----------------------------------------------------------


def _layout_params():
    for r in ELEMENTWISE + SELECTION + OPERATORS:
        for dtype in (r.dtypes[0], r.dtypes[-1]):
            for layout in ("strided", "transposed", "mixed"):
                yield pytest.param(r, dtype, layout, id=f"{r.name}|{dtype.name}|{layout}")


@pytest.mark.parametrize("record,dtype,layout", list(_layout_params()))
def test_strided_and_transposed_arguments(record, dtype, layout):
    n = record.arity

    def make():
        rng = np.random.default_rng(3)
        out = []
        for i in range(n):
            big = record.make_args(rng, [(6, 4)] * (i + 1), dtype)[i]
            kind = layout if layout != "mixed" else ("strided", "transposed")[i % 2]
            out.append(big[::2] if kind == "strided" else big[:4, :3].T)
        return out
    assert not make()[0].flags.c_contiguous
    assert_matches_numpy(record.fn, make, tol=record.tol)


@pytest.mark.parametrize("f", [
    lambda x, y: np.sum(x, axis=0) + np.mean(y, axis=1, keepdims=True),
    lambda x, y: (np.argmax(x, axis=1), np.argmin(y), np.var(x, ddof=1), np.std(y, axis=0)),
    lambda x, y: (np.max(x, axis=(0, 1)), np.prod(y, axis=-1), np.all(x > 0), np.any(y < 0, 0)),
    lambda x, y: (x @ y.T, np.dot(y, x.T), np.einsum("ij,kj->ik", x, y), np.matmul(x.T, y)),
    lambda x, y: (np.concatenate([x, y]), np.stack([x, y], 1), x.reshape(-1), np.flip(y, 0),
                  np.transpose(x), y[::-1, 1:], np.where(x > y, x, y), x.astype(np.int32)),
], ids=["sum-mean", "arg-var-std", "max-prod-all-any", "products", "data-movement"])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64], ids=lambda d: d.__name__)
def test_strided_and_transposed_arguments_beyond_elementwise(f, dtype):
    def make():
        rng = np.random.default_rng(5)
        big = rng.integers(-4, 5, (8, 4)).astype(dtype)
        return [big[::2], big[4:, :].T.copy().T]  # a strided view and a Fortran-order array
    assert not make()[0].flags.c_contiguous and not make()[1].flags.c_contiguous
    assert_matches_numpy(f, make, tol=5)


# -- types NumPy refuses or that the explorer lacks --------------------------------------------


def _other_dtype_params():
    for r in ELEMENTWISE + OPERATORS:
        for dtype in ALL:
            if dtype not in r.dtypes:
                yield pytest.param(r, dtype, id=f"{r.name}|{dtype.name}")


@pytest.mark.parametrize("record,dtype", list(_other_dtype_params()))
def test_types_outside_the_record_are_refused_clearly(record, dtype):
    make = _args_factory(record, [(3,)] * record.arity, dtype)
    verdict = numpy_verdict(record.fn, make)
    assert verdict is not None, f"{record.name} works on {dtype}: add it to the record"
    with pytest.raises((xe.TraceError, xe.UnsupportedOpError)) as info:
        xe.explore(record.fn, *make())
    if verdict != "error":  # e.g. np.sin on booleans gives float16
        assert isinstance(info.value, xe.UnsupportedOpError)
        assert str(verdict) in str(info.value) and "float32" in str(info.value)
    assert info.value.source_line is not None


@pytest.mark.parametrize("record", [r for r in ELEMENTWISE if "ufunc" in r.meta],
                         ids=lambda r: r.name)
def test_record_types_are_exactly_those_numpy_supports(record):
    ufunc = record.meta["ufunc"]
    supported = []
    for dt in ALL:
        try:
            out = ufunc.resolve_dtypes((dt,) * ufunc.nin + (None,) * ufunc.nout)
        except Exception:
            continue
        if all(t in SUPPORTED for t in out):
            supported.append(dt)
    assert tuple(supported) == record.dtypes


# -- NaN, infinities, signed zeros, big values -------------------------------------------------

_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30,
                     -7e3, 1e30])


def _special_params():
    for r in ELEMENTWISE + SELECTION:
        if r.dtypes[-1] == F64:
            for dtype in (F32, F64):
                yield pytest.param(r, dtype, id=f"{r.name}|{dtype.name}")


@pytest.mark.parametrize("record,dtype", list(_special_params()))
def test_special_float_values(record, dtype):
    n = len(_SPECIAL)

    def make():
        v = _SPECIAL.astype(dtype)
        if record.arity == 1:
            return [v]
        shapes = [(n, 1), (1, n), (1, 1, n)]
        return [np.roll(v, k).reshape(shapes[k]) for k in range(record.arity)]
    assert_matches_numpy(record.fn, make, tol=record.tol)


def _special_reduction_params():
    for r in REDUCTIONS:
        for dtype in (F32, F64):
            for shapes, variant in r.all_cases():
                # (NumPy's cast of inf or NaN to an integer dtype= is undefined behaviour in C)
                if (shapes[0] == (2, 3, 4) and "where" not in variant
                        and np.dtype(variant.get("dtype", dtype)).kind == "f"):
                    yield pytest.param(r, dtype, variant, id=f"{r.name}|{dtype.name}|{_id(variant)}")


@pytest.mark.parametrize("record,dtype,variant", list(_special_reduction_params()))
def test_reductions_of_special_float_values(record, dtype, variant):
    """NaN wins max/min and argmax/argmin (its first occurrence), infinities add up."""
    base = np.resize(_SPECIAL, 24).reshape(2, 3, 4)
    data = [base, np.where(np.isnan(base), 1.0, base), np.abs(np.where(np.isnan(base), 1, base))]
    for values in data:
        f = _bind(record, variant, dtype)
        assert_matches_numpy(f, lambda: [values.astype(dtype)], tol=record.tol)


_INT_EDGES = {np.dtype(t): np.array([0, 1, -1, 2, -2, 7, -7, np.iinfo(t).max, np.iinfo(t).min],
                                    dtype=t) for t in (np.int32, np.int64)}


def _int_edge_params():
    for r in ELEMENTWISE + OPERATORS:
        for dtype in _INT_EDGES:
            if dtype in r.dtypes and not r.name.startswith(("np.power", "x ** y", "np.left_sh",
                                                            "np.right_sh", "x << y", "x >> y")):
                yield pytest.param(r, dtype, id=f"{r.name}|{dtype.name}")


@pytest.mark.parametrize("record,dtype", list(_int_edge_params()))
def test_integer_edge_values(record, dtype):
    """Zero divisors, the most negative value, and the largest: NumPy's integer semantics."""
    v = _INT_EDGES[dtype]
    if record.name == "np.reciprocal":  # NumPy's 1 // 0 here is C's undefined cast of inf
        v = v[v != 0]

    def make():
        return [v.copy()] if record.arity == 1 else [v[:, None].copy(), v[None, :].copy()]
    assert_like_numpy(record.fn, make, tol=record.tol)


# -- selection with scalars and None -----------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("f", [
    lambda x: np.where(x > 0, x, 0),
    lambda x: np.where(x > 0, 1.5, x),
    lambda x: np.where(x, 1, 0),
    lambda x: np.where(True, x, -x) if x.dtype != np.bool_ else np.where(True, x, ~x),
    lambda x: np.clip(x, -1, 1),
    lambda x: np.clip(x, None, 1.5),
    lambda x: np.clip(x, 0, None),
    lambda x: np.clip(x, x[:1], 2),
    lambda x: np.clip(x, min=-2),
    lambda x: np.clip(x, max=x.T[:1].T),
    lambda x: np.clip(x, True, True),  # bool bounds: a bool array has no HLO clamp
], ids=["where-scalar", "where-float", "where-nonbool", "where-true", "clip-scalars",
        "clip-none-lo", "clip-none-hi", "clip-array-lo", "clip-min-kw", "clip-max-kw",
        "clip-bools"])
def test_where_and_clip_with_scalars(f, dtype):
    rng = np.random.default_rng(4)
    x = BY_NAME["np.add"].make_args(rng, [(3, 4)], dtype)[0]
    assert_like_numpy(f, lambda: [x.copy()])


# -- the records cover the brief and the table ------------------------------------------------

REQUIRED = """add subtract multiply divide true_divide floor_divide remainder power negative positive
absolute exp exp2 expm1 log log2 log10 log1p sqrt cbrt square reciprocal sin cos tan arcsin arccos
arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh maximum minimum fmax fmin greater
greater_equal less less_equal equal not_equal logical_and logical_or logical_not logical_xor sign
floor ceil trunc rint isnan isinf isfinite bitwise_and bitwise_or bitwise_xor invert left_shift
right_shift where clip sum mean prod max min amax amin argmax argmin all any var std dot matmul
einsum reshape ravel transpose swapaxes moveaxis squeeze expand_dims broadcast_to concatenate
stack hstack vstack flip zeros ones full empty zeros_like ones_like full_like empty_like arange
linspace eye unique nonzero argwhere sort""".split()
REQUIRED_OTHER = ["x @ y", "x[index]", "x.astype", "x[x > 0]", "x[index] = scalar",
                  "x[index] = y", "x[x > 0] = scalar", "x += y", "x - y", "x // y", "-x", "~x"]
REQUIRED_METHODS = ".T .shape .ndim .dtype .size .reshape .transpose .astype .sum .mean .max .min " \
                   ".prod .var .std .argmax .argmin .all .any .ravel .squeeze .clip .dot .copy"


def test_every_required_function_has_a_record():
    names = set(BY_NAME)
    missing = [n for n in REQUIRED if f"np.{n}" not in names]
    missing += [n for n in REQUIRED_OTHER if n not in names]
    method_names = " ".join(n for n in names if n.startswith("."))
    missing += [m for m in REQUIRED_METHODS.split() if not re.search(re.escape(m) + r"\b",
                                                                     method_names)]
    assert not missing


def test_every_table_row_has_a_record():
    names = set(BY_NAME)
    ufuncs = [f"np.{n}" for n in registry.UFUNCS]
    functions = [f"np.{f.__name__}" for f in registry.FUNCTIONS]
    # np.linalg's records are named as written (np.linalg.solve); np.norm's from before
    linalg = {f"np.{f.__name__}": f"np.linalg.{f.__name__}" for f in registry.FUNCTIONS
              if f.__module__ == "numpy.linalg"}
    assert not [n for n in ufuncs + functions if n not in names and linalg.get(n) not in names]
