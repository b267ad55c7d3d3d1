"""The CPU kernels of scans and sorts: a scan is one sequential pass with a running
accumulator (no loop over its window), so a float32 cumsum is NumPy's exactly; a sort is a
stable merge sort per row with NumPy's order (NaN last, equal zeros in input order); both run
their rows in parallel when there are many, with the same answers."""
from __future__ import annotations

import ast

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer import compiler
from xla_explorer.codegen.options import DEFAULT_OPTIONS
from xla_explorer.codegen.cpu.outline import runs_on_threads

from .sizes_text import size_text

F32 = np.float32


def _range_arg(node: ast.For):
    call = node.iter
    if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "range" and call.args:
        return ast.unparse(call.args[-1])
    return None


def _kernel_with(ex, text: str) -> str:
    """The one kernel whose HLO (in its comments) has `text`."""
    (source,) = [s for s in ex.kernels.values()
                 if any(text in line for line in s.splitlines() if line.strip().startswith("#"))]
    return source


def test_a_scan_kernel_is_one_pass_with_no_loop_over_its_window():
    x = np.random.default_rng(0).standard_normal(1000).astype(F32)
    ex = xe.explore(lambda x: np.cumsum(x), x, backend="cpu")
    source = _kernel_with(ex, "reduce-window")
    loops = [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.For, ast.While))]
    along = size_text(source, "p0", 0, 1000)
    scan = [n for n in loops if isinstance(n, ast.For) and _range_arg(n) == along]
    assert len(scan) == 1, source  # one loop along the axis...
    inner = [n for n in ast.walk(scan[0]) if isinstance(n, (ast.For, ast.While))]
    assert inner == [scan[0]], source  # ...with no window loop inside it
    assert len(loops) == 1, source
    np.testing.assert_array_equal(ex.run(x), np.cumsum(x))


@pytest.mark.parametrize("shape,axis", [((100_000,), 0), ((300, 200), 0), ((200, 300), 1),
                                        ((4, 50, 6), 1)])
def test_a_float32_cumsum_is_numpys_exactly(shape, axis):
    # NumPy's cumsum adds in order, in float32; so does the running accumulator.
    x = np.random.default_rng(1).standard_normal(shape).astype(F32) * 100
    got = xe.jit(lambda x: np.cumsum(x, axis=axis))(x)
    want = np.cumsum(x, axis=axis)
    assert got.dtype == want.dtype == F32
    np.testing.assert_array_equal(got, want)


def test_a_sort_kernel_orders_as_numpy_with_nan_ties_and_signed_zeros():
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (7, 301)).astype(np.float64) / 2
    pick = rng.random(x.shape)
    x[pick < 0.1] = np.nan
    x[(pick > 0.1) & (pick < 0.2)] = -0.0
    x[(pick > 0.2) & (pick < 0.25)] = -np.inf
    ex = xe.explore(lambda x: (np.sort(x, axis=1), np.argsort(x, axis=1, kind="stable")), x,
                    backend="cpu")
    values, order = ex.run(x)
    want_order = np.argsort(x, axis=1, kind="stable")
    np.testing.assert_array_equal(order, want_order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, want_order, axis=1))
    # equal zeros kept their input order: the signs are the stable sort's
    np.testing.assert_array_equal(np.signbit(values),
                                  np.signbit(np.take_along_axis(x, want_order, axis=1)))
    sorts = [s for s in ex.kernels.values() if "# sort" in s or " sort(" in s]
    assert len(sorts) == 2 and all("merge" in s for s in sorts)


def test_many_rows_run_in_parallel_with_the_same_answers():
    rng = np.random.default_rng(3)
    scan_x = rng.standard_normal((64, DEFAULT_OPTIONS.parallel_threshold // 64)).astype(F32)
    sort_x = rng.integers(-50, 50, (256, 512)).astype(np.int32)

    def f(a, b):
        return np.cumsum(a, axis=1), np.maximum.accumulate(a, axis=0), np.argsort(b, kind="stable")
    ex = xe.explore(f, scan_x, sort_x, backend="cpu")
    assert runs_on_threads(_kernel_with(ex, " sort("))
    assert runs_on_threads(_kernel_with(ex, " reduce-window("))
    for got, want in zip(ex.run(scan_x, sort_x), f(scan_x, sort_x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_a_reduce_window_that_is_not_a_scan_is_refused_by_name():
    text = """HloModule pairs

add {
  add.a = f32[] parameter(0)
  add.b = f32[] parameter(1)
  ROOT add.r = f32[] add(add.a, add.b)
}

ENTRY main {
  x = f32[8] parameter(0)
  z = f32[] constant(0)
  ROOT pairs = f32[7] reduce-window(x, z), window={size=2}, to_apply=add
}
"""
    module = xe.verify(xe.parse_hlo(text))
    with pytest.raises(xe.CompileError, match="reduce-window only as a scan") as info:
        compiler.compile(module, "cpu")
    assert "interpreter" in str(info.value)
