"""The reference interpreter on HLO edge cases the tracer does not produce.

Each case is HLO text, run with `run_module` and compared with values XLA defines (written out
by hand) or with an independent NumPy computation.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.runtime.reference import run_module

I32 = np.iinfo(np.int32)


def run(text: str, *args):
    m = xe.verify(xe.parse_hlo(text))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # HLO defines these cases: no NumPy warnings
        out = run_module(m, list(args))
    return out[0] if len(out) == 1 else out


def binary(op: str, dtype: str, n: int, attrs: str = "") -> str:
    return f"""\
HloModule m

ENTRY main {{
  a = {dtype}[{n}] parameter(0)
  b = {dtype}[{n}] parameter(1)
  ROOT r = {dtype}[{n}] {op}(a, b){attrs}
}}
"""


def unary(op: str, src: str, dst: str, n: int) -> str:
    return f"""\
HloModule m

ENTRY main {{
  a = {src}[{n}] parameter(0)
  ROOT r = {dst}[{n}] {op}(a)
}}
"""


# ---------------------------------------------------------------------------------------------
# Integer arithmetic.


@pytest.mark.parametrize("dtype, np_dtype", [("s32", np.int32), ("s64", np.int64)])
def test_integer_divide_truncates_and_x_over_0_is_minus_1(dtype, np_dtype):
    lo = np.iinfo(np_dtype).min
    a = np.array([7, -7, 7, -7, 5, -5, 0, lo, 1, -1, 6], np_dtype)
    b = np.array([2, 2, -2, -2, 0, 0, 0, -1, 3, 3, -3], np_dtype)
    got = run(binary("divide", dtype, len(a)), a, b)
    assert got.dtype == np_dtype
    np.testing.assert_array_equal(got, [3, -3, -3, 3, -1, -1, -1, lo, 0, 0, -2])


def test_integer_remainder_takes_the_dividends_sign():
    a = np.array([7, -7, 7, -7, 5, -5, I32.min, 6], np.int32)
    b = np.array([3, 3, -3, -3, 0, 0, -1, -3], np.int32)
    np.testing.assert_array_equal(run(binary("remainder", "s32", len(a)), a, b),
                                  [1, -1, 1, -1, 5, -5, 0, 0])


def test_float_remainder_is_fmod():
    a = np.array([7.5, -7.5, 7.5, -7.5, 1.0, np.inf], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 2.0], np.float32)
    got = run(binary("remainder", "f32", len(a)), a, b)
    np.testing.assert_array_equal(got[:4], [1.5, -1.5, 1.5, -1.5])
    assert np.isnan(got[4]) and np.isnan(got[5])


def test_float_divide_by_zero_is_ieee():
    a = np.array([1, -1, 0], np.float32)
    got = run(binary("divide", "f32", 3), a, np.zeros(3, np.float32))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])


# ---------------------------------------------------------------------------------------------
# Conversions.


@pytest.mark.parametrize("src", ["f32", "f64"])
def test_convert_float_to_s32_saturates_and_maps_nan_to_0(src):
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 2147483520.0, -2147483648.0,
                  -0.0, 1e30], src.replace("f", "float"))
    got = run(unary("convert", src, "s32", len(x)), x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [0, I32.max, I32.min, I32.max, I32.min, 2, -2,
                                        2147483520, I32.min, 0, I32.max])


def test_convert_float_to_s64_saturates():
    x = np.array([np.nan, 1e19, -1e19, 9.2e18, -5.5], np.float64)
    got = run(unary("convert", "f64", "s64", len(x)), x)
    i64 = np.iinfo(np.int64)
    np.testing.assert_array_equal(got, [0, i64.max, i64.min, 9200000000000000000, -5])


def test_convert_scalar_and_to_pred():
    text = """\
HloModule m

ENTRY main {
  a = f32[] parameter(0)
  i = s32[] convert(a)
  p = pred[] convert(a)
  ROOT t = (s32[], pred[]) tuple(i, p)
}
"""
    i, p = run(text, np.float32(np.nan))
    assert i == 0 and p
    i, p = run(text, np.float32(-1e10))
    assert i == I32.min and p
    i, p = run(text, np.float32(0.0))
    assert i == 0 and not p


def test_convert_f64_to_f32_overflows_to_inf():
    x = np.array([1e300, -1e300, 1.5], np.float64)
    np.testing.assert_array_equal(run(unary("convert", "f64", "f32", 3), x), [np.inf, -np.inf, 1.5])


# ---------------------------------------------------------------------------------------------
# Shifts: amounts are unsigned, so a negative amount is as large as any.


def test_shift_left():
    a = np.array([1, 1, 1, 3, -1, 5], np.int32)
    b = np.array([31, 32, 100, 1, 0, -1], np.int32)
    np.testing.assert_array_equal(run(binary("shift-left", "s32", 6), a, b),
                                  [I32.min, 0, 0, 6, -1, 0])


def test_shift_right_arithmetic_fills_with_the_sign():
    a = np.array([-8, -8, 8, -8, 8, I32.min], np.int32)
    b = np.array([1, 32, 32, -1, -1, 31], np.int32)
    np.testing.assert_array_equal(run(binary("shift-right-arithmetic", "s32", 6), a, b),
                                  [-4, -1, 0, -1, 0, -1])


def test_shift_right_logical_fills_with_zeros():
    a = np.array([-8, -8, -1, -1, 16], np.int32)
    b = np.array([28, 32, 0, -1, 2], np.int32)
    np.testing.assert_array_equal(run(binary("shift-right-logical", "s32", 5), a, b),
                                  [15, 0, -1, 0, 4])


def test_shift_s64():
    a = np.array([1, -1, -1], np.int64)
    b = np.array([63, 64, 63], np.int64)
    np.testing.assert_array_equal(run(binary("shift-left", "s64", 3), a, b),
                                  [np.iinfo(np.int64).min, 0, np.iinfo(np.int64).min])
    np.testing.assert_array_equal(run(binary("shift-right-logical", "s64", 3), a, b), [0, 0, 1])


# ---------------------------------------------------------------------------------------------
# Rounding, clamp, NaN.


def test_rounding():
    x = np.array([2.5, -2.5, 0.5, -0.5, 1.5, 2.4], np.float32)
    np.testing.assert_array_equal(run(unary("round-nearest-afz", "f32", "f32", 6), x),
                                  [3, -3, 1, -1, 2, 2])
    np.testing.assert_array_equal(run(unary("round-nearest-even", "f32", "f32", 6), x),
                                  [2, -2, 0, -0, 2, 2])


def test_clamp_with_scalar_bounds():
    text = """\
HloModule m

ENTRY main {
  x = f32[5] parameter(0)
  lo = f32[] constant(-1)
  hi = f32[] constant(2)
  ROOT c = f32[5] clamp(lo, x, hi)
}
"""
    x = np.array([-5, -1, 0.5, 2, 9], np.float32)
    np.testing.assert_array_equal(run(text, x), [-1, -1, 0.5, 2, 2])


def test_maximum_propagates_nan():
    a = np.array([np.nan, 1, 2], np.float32)
    b = np.array([1, np.nan, 1], np.float32)
    got = run(binary("maximum", "f32", 3), a, b)
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 2


# ---------------------------------------------------------------------------------------------
# Dynamic slices clamp their start indices so the window stays inside the operand.

DYNAMIC_SLICE = """\
HloModule m

ENTRY main {
  x = f32[6,10] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT d = f32[2,4] dynamic-slice(x, i, j), dynamic_slice_sizes={2,4}
}
"""


@pytest.mark.parametrize("i, j, ci, cj", [(0, 0, 0, 0), (1, 3, 1, 3), (-3, 8, 0, 6),
                                          (5, -1, 4, 0), (100, 100, 4, 6), (I32.min, I32.max, 0, 6)])
def test_dynamic_slice_clamps(i, j, ci, cj):
    x = np.arange(60, dtype=np.float32).reshape(6, 10)
    got = run(DYNAMIC_SLICE, x, np.int32(i), np.int32(j))
    np.testing.assert_array_equal(got, x[ci:ci + 2, cj:cj + 4])


@pytest.mark.parametrize("i, j, ci, cj", [(0, 0, 0, 0), (-1, 9, 0, 7), (7, 2, 4, 2), (3, -50, 3, 0)])
def test_dynamic_update_slice_clamps(i, j, ci, cj):
    text = """\
HloModule m

ENTRY main {
  x = f32[6,10] parameter(0)
  u = f32[2,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT d = f32[6,10] dynamic-update-slice(x, u, i, j)
}
"""
    x = np.zeros((6, 10), np.float32)
    u = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    got = run(text, x, u, np.int32(i), np.int32(j))
    want = x.copy()
    want[ci:ci + 2, cj:cj + 3] = u
    np.testing.assert_array_equal(got, want)
    assert not x.any()  # the operand is not written in place


# ---------------------------------------------------------------------------------------------
# Pad: interior padding spreads the operand out, negative edge padding crops.


def numpy_pad(x, value, cfg):
    """An independent reference: spread with a strided write, then pad or crop each edge."""
    spread_shape = [n + max(n - 1, 0) * i for n, (_, _, i) in zip(x.shape, cfg)]
    out = np.full(spread_shape, value, x.dtype)
    out[tuple(slice(None, None, i + 1) for _, _, i in cfg)] = x
    for axis, (lo, hi, _) in enumerate(cfg):
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        out = np.pad(out, widths, constant_values=value)
        index = [slice(None)] * x.ndim
        index[axis] = slice(max(-lo, 0), out.shape[axis] - max(-hi, 0))
        out = out[tuple(index)]
    return out


@pytest.mark.parametrize("cfg", [
    ((0, 0, 0), (0, 0, 0)),
    ((1, 2, 0), (3, 0, 0)),
    ((0, 0, 1), (0, 0, 2)),
    ((1, 2, 1), (-1, 0, 2)),
    ((-1, -1, 0), (2, -3, 1)),
    ((-2, 3, 2), (-4, -3, 1)),
    ((-5, 0, 1), (0, -4, 0)),
    ((0, -5, 1), (-1, -1, 0)),
])
def test_pad(cfg):
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    want = numpy_pad(x, -1.0, cfg)
    padding = "x".join(f"{lo}_{hi}_{i}" if i else f"{lo}_{hi}" for lo, hi, i in cfg)
    dims = ",".join(map(str, want.shape))
    text = f"""\
HloModule m

ENTRY main {{
  x = f32[3,4] parameter(0)
  v = f32[] constant(-1)
  ROOT p = f32[{dims}] pad(x, v), padding={padding}
}}
"""
    np.testing.assert_array_equal(run(text, x), want)


# ---------------------------------------------------------------------------------------------
# Reductions.

ARGMAX = """\
HloModule m

argmax_reducer {
  a = f32[] parameter(0)
  ai = s32[] parameter(1)
  b = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  nan = pred[] compare(a, a), direction=NE
  take_a = pred[] or(gt, nan)
  value = f32[] select(take_a, a, b)
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  take_ai = pred[] or(take_a, tie)
  index = s32[] select(take_ai, ai, bi)
  ROOT t = (f32[], s32[]) tuple(value, index)
}

ENTRY main {
  x = f32[ROWS,N] parameter(0)
  i = s32[ROWS,N] iota(), iota_dimension=1
  lo = f32[] constant(-inf)
  zero = s32[] constant(0)
  r = (f32[ROWS], s32[ROWS]) reduce(x, i, lo, zero), dimensions={1}, to_apply=argmax_reducer
  ROOT idx = s32[ROWS] get-tuple-element(r), index=1
}
"""


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 13, 100])
def test_variadic_reduce_argmax(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-3, 4, size=(6, n)).astype(np.float32)  # many ties: first index wins
    x[0, n // 2] = np.nan  # NaN wins, the first NaN
    x[1, :] = np.nan
    x[2, -1] = 99
    text = ARGMAX.replace("ROWS", "6").replace(",N]", f",{n}]")
    np.testing.assert_array_equal(run(text, x), np.argmax(x, axis=1))


def test_variadic_reduce_over_an_empty_axis_gives_the_init_values():
    text = ARGMAX.replace("ROWS", "3").replace(",N]", ",0]").replace(
        "ROOT idx = s32[3] get-tuple-element(r), index=1",
        "v = f32[3] get-tuple-element(r), index=0\n"
        "  ix = s32[3] get-tuple-element(r), index=1\n"
        "  ROOT out = (f32[3], s32[3]) tuple(v, ix)")
    v, ix = run(text, np.zeros((3, 0), np.float32))
    np.testing.assert_array_equal(v, [-np.inf] * 3)
    np.testing.assert_array_equal(ix, [0, 0, 0])


def reduce_text(reducer_root: str, in_dims: str, out_dims: str, dims: str, init: str,
                dtype: str = "f32") -> str:
    return f"""\
HloModule m

reducer {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  {reducer_root}
}}

ENTRY main {{
  x = {dtype}[{in_dims}] parameter(0)
  init = {dtype}[] constant({init})
  ROOT r = {dtype}[{out_dims}] reduce(x, init), dimensions={{{dims}}}, to_apply=reducer
}}
"""


SUM = "ROOT s = f32[] add(a, b)"
# Not one ufunc of its parameters, so the interpreter takes the tree path.
TREE_SUM = "one = f32[] constant(1)\n  a1 = f32[] multiply(a, one)\n  ROOT s = f32[] add(a1, b)"
TREE_MAX = "gt = pred[] compare(a, b), direction=GT\n  ROOT s = f32[] select(gt, a, b)"


@pytest.mark.parametrize("root", [SUM, TREE_SUM], ids=["ufunc", "tree"])
@pytest.mark.parametrize("in_dims, out_dims, dims, shape", [
    ("3,0", "3", "1", (3, 0)),
    ("0,4", "4", "0", (0, 4)),
    ("0", "", "0", (0,)),
    ("2,0,5", "", "0,1,2", (2, 0, 5)),
    ("0,3", "0", "1", (0, 3)),
])
def test_reduce_over_empty_axes_gives_the_init_value(root, in_dims, out_dims, dims, shape):
    got = run(reduce_text(root, in_dims, out_dims, dims, "5"), np.zeros(shape, np.float32))
    want_shape = tuple(n for d, n in enumerate(shape) if d not in map(int, dims.split(",")))
    np.testing.assert_array_equal(got, np.full(want_shape, 5, np.float32))


@pytest.mark.parametrize("root", [SUM, TREE_SUM], ids=["ufunc", "tree"])
def test_reduce_over_no_dimensions_combines_with_init(root):
    # Every output element is reduced from its one input element, starting at init.
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run(reduce_text(root, "2,3", "2,3", "", "10"), x), x + 10)
    np.testing.assert_array_equal(run(reduce_text(root, "", "", "", "10"), np.float32(4)), 14)


@pytest.mark.parametrize("root", [SUM, TREE_SUM, TREE_MAX], ids=["ufunc", "tree-sum", "tree-max"])
@pytest.mark.parametrize("dims", ["0", "1", "2", "0,2", "0,1,2"])
def test_reduce_matches_numpy(root, dims):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    axes = tuple(map(int, dims.split(",")))
    out_dims = ",".join(str(n) for d, n in enumerate(x.shape) if d not in axes)
    if root is TREE_MAX:
        want, init = np.maximum(x.max(axis=axes), -1.0), "-1"
    else:
        want, init = x.astype(np.float64).sum(axis=axes) + 0.5, "0.5"
    got = run(reduce_text(root, "3,5,7", out_dims, dims, init), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_integer_and_pred_reductions():
    x = np.array([[1, 2**30, 2**30], [-1, -2, -3]], np.int32)
    got = run(reduce_text("ROOT s = s32[] add(a, b)", "2,3", "2", "1", "0", "s32"), x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [1 + 2**31 - 2**32, -6])  # wraps around
    p = np.array([[True, False], [False, False]])
    got = run(reduce_text("ROOT s = pred[] or(a, b)", "2,2", "2", "1", "false", "pred"), p)
    np.testing.assert_array_equal(got, [True, False])


def test_reduce_window():
    text = """\
HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

max {
  c = f32[] parameter(0)
  d = f32[] parameter(1)
  ROOT e = f32[] maximum(c, d)
}

ENTRY main {
  x = f32[10] parameter(0)
  y = f32[4,6] parameter(1)
  zero = f32[] constant(0)
  lo = f32[] constant(-inf)
  sums = f32[5] reduce-window(x, zero), window={size=3 stride=2 pad=1_1}, to_apply=add
  maxes = f32[2,3] reduce-window(y, lo), window={size=2x2 stride=2x2}, to_apply=max
  ROOT t = (f32[5], f32[2,3]) tuple(sums, maxes)
}
"""
    x = np.arange(1, 11, dtype=np.float32)
    y = np.arange(24, dtype=np.float32).reshape(4, 6)
    s, m = run(text, x, y)
    padded = np.concatenate([[0], x, [0]])
    np.testing.assert_array_equal(s, [padded[i:i + 3].sum() for i in range(0, 10, 2)])
    np.testing.assert_array_equal(m, y.reshape(2, 2, 3, 2).max(axis=(1, 3)))


# ---------------------------------------------------------------------------------------------
# Iota and dot.


@pytest.mark.parametrize("dtype, np_dtype", [("s32", np.int32), ("f32", np.float32),
                                             ("s64", np.int64)])
def test_iota(dtype, np_dtype):
    text = f"""\
HloModule m

ENTRY main {{
  a = {dtype}[3,4,2] iota(), iota_dimension=0
  b = {dtype}[3,4,2] iota(), iota_dimension=1
  c = {dtype}[5] iota(), iota_dimension=0
  ROOT t = ({dtype}[3,4,2], {dtype}[3,4,2], {dtype}[5]) tuple(a, b, c)
}}
"""
    a, b, c = run(text)
    assert a.dtype == b.dtype == c.dtype == np_dtype
    i, j, _ = np.indices((3, 4, 2))
    np.testing.assert_array_equal(a, i)
    np.testing.assert_array_equal(b, j)
    np.testing.assert_array_equal(c, np.arange(5))


@pytest.mark.parametrize("lhs, rhs, attrs, spec", [
    ((2, 3, 4), (2, 4, 5), "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
     "rhs_contracting_dims={1}", "bik,bkj->bij"),
    ((2, 3, 4, 5), (2, 5, 4, 6), "lhs_batch_dims={0}, lhs_contracting_dims={2,3}, "
     "rhs_batch_dims={0}, rhs_contracting_dims={2,1}", "bikl,blkj->bij"),
    ((3, 2, 4), (4, 2, 5), "lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={1}, "
     "rhs_contracting_dims={0}", "ibk,kbj->bij"),
    ((2, 7, 3, 4), (3, 4, 7, 2), "lhs_batch_dims={2,0}, lhs_contracting_dims={3}, "
     "rhs_batch_dims={0,3}, rhs_contracting_dims={1}", "aibk,bkja->baij"),
    ((3,), (4,), "", "i,j->ij"),
    # Operands read transposed, as the simplifier leaves q @ k.T and a.T @ b.
    ((3, 4), (5, 4), "lhs_contracting_dims={1}, rhs_contracting_dims={1}", "ik,jk->ij"),
    ((4, 3), (4, 5), "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "ki,kj->ij"),
    ((4, 3), (5, 4), "lhs_contracting_dims={0}, rhs_contracting_dims={1}", "ki,jk->ij"),
    ((2, 3, 4), (2, 5, 4), "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
     "rhs_contracting_dims={2}", "bik,bjk->bij"),
    ((3, 4), (4,), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "ik,k->i"),
    ((2, 3), (2, 3), "lhs_batch_dims={0,1}, rhs_batch_dims={0,1}", "ab,ab->ab"),
])
def test_dot_matches_einsum(lhs, rhs, attrs, spec):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(lhs).astype(np.float32)
    b = rng.standard_normal(rhs).astype(np.float32)
    want = np.einsum(spec, a.astype(np.float64), b.astype(np.float64))
    out = ",".join(map(str, want.shape))
    sep = ", " if attrs else ""
    text = f"""\
HloModule m

ENTRY main {{
  a = f32[{",".join(map(str, lhs))}] parameter(0)
  b = f32[{",".join(map(str, rhs))}] parameter(1)
  ROOT d = f32[{out}] dot(a, b){sep}{attrs}
}}
"""
    got = run(text, a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_integer_dot():
    a = np.array([[1, 2], [3, 4]], np.int32)
    b = np.array([[5, -6], [7, 8]], np.int32)
    text = """\
HloModule m

ENTRY main {
  a = s32[2,2] parameter(0)
  b = s32[2,2] parameter(1)
  ROOT d = s32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    got = run(text, a, b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a @ b)


# ---------------------------------------------------------------------------------------------
# Calls, tuples and the entry signature.


def test_call_fusion_and_bitcast():
    text = """\
HloModule m

inner {
  p = f32[2,3] parameter(0)
  q = f32[] parameter(1)
  qb = f32[2,3] broadcast(q), dimensions={}
  ROOT s = f32[2,3] multiply(p, qb)
}

fused {
  x = f32[6] parameter(0)
  y = f32[2,3] bitcast(x)
  two = f32[] constant(2)
  ROOT c = f32[2,3] call(y, two), to_apply=inner
}

ENTRY main {
  a = f32[6] parameter(0)
  f = f32[2,3] fusion(a), kind=kLoop, calls=fused
  ROOT t = (f32[2,3], f32[6]) tuple(f, a)
}
"""
    a = np.arange(6, dtype=np.float32)
    f, same = run(text, a)
    np.testing.assert_array_equal(f, 2 * a.reshape(2, 3))
    np.testing.assert_array_equal(same, a)


def test_wrong_number_of_arguments():
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        run_module(xe.parse_hlo(binary("add", "f32", 3)), [np.zeros(3, np.float32)])
