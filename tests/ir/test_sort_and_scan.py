"""XLA's sort and the scan form of reduce-window in HLO text: XLA's own syntax parses, our
text round-trips exactly, the verifier checks a sort's comparator, and the interpreter runs
both as NumPy does."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.ir.ops import growing_window, scan_axis
from xla_explorer.runtime.reference import run_module

# As XLA prints it: layouts, %-names, operand shapes before the operands.
XLA_SORT = """\
HloModule sort_pairs

%compare (lhs.0: f32[], rhs.0: f32[], lhs.1: s32[], rhs.1: s32[]) -> pred[] {
  %lhs.0 = f32[] parameter(0)
  %rhs.0 = f32[] parameter(1)
  %lhs.1 = s32[] parameter(2)
  %rhs.1 = s32[] parameter(3)
  ROOT %lt = pred[] compare(f32[] %lhs.0, f32[] %rhs.0), direction=LT
}

ENTRY %main (x: f32[4,5]) -> (f32[4,5], s32[4,5]) {
  %x = f32[4,5]{1,0} parameter(0)
  %iota = s32[4,5]{1,0} iota(), iota_dimension=1
  ROOT %s = (f32[4,5]{1,0}, s32[4,5]{1,0}) sort(f32[4,5]{1,0} %x, s32[4,5]{1,0} %iota), dimensions={1}, is_stable=true, to_apply=%compare
}
"""

# The comparator np.sort's lowering emits for floats: NaN after every number.
NAN_LAST = """\
cmp {
  cmp.a = f64[] parameter(0)
  cmp.b = f64[] parameter(1)
  cmp.lt = pred[] compare(cmp.a, cmp.b), direction=LT
  cmp.bnan = pred[] compare(cmp.b, cmp.b), direction=NE
  cmp.anum = pred[] compare(cmp.a, cmp.a), direction=EQ
  cmp.after = pred[] and(cmp.bnan, cmp.anum)
  ROOT cmp.r = pred[] or(cmp.lt, cmp.after)
}
"""


def module(entry: str, comps: str) -> xe.Module:
    return xe.verify(xe.parse_hlo(f"HloModule m\n\n{comps}\nENTRY main {{\n{entry}\n}}\n"))


def test_xla_sort_text_parses_and_runs_as_a_stable_argsort():
    m = xe.verify(xe.parse_hlo(XLA_SORT))
    s = m.entry.root
    assert s.opcode == "sort" and s.attr("dimensions") == (1,)
    assert s.attr("is_stable") == "true" and s.attr("to_apply") == "compare"
    x = np.array([[3, 1, 2, 1, 0]] * 4, np.float32) * np.arange(1, 5, dtype=np.float32)[:, None]
    values, order = run_module(m, [x])
    np.testing.assert_array_equal(order, np.argsort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(values, np.sort(x, axis=1))
    assert order.dtype == np.int32 and values.dtype == np.float32


def test_own_sort_and_scan_text_round_trips_exactly():
    def f(x):
        return np.argsort(x, axis=0, kind="stable"), np.sort(x, axis=None), np.cumsum(x, axis=1)
    x = np.arange(12.0).reshape(3, 4)
    text = xe.explore(f, x).hlo(0)
    assert "sort(" in text and "is_stable=true" in text and "reduce-window(" in text
    assert "window={size=1x4 pad=0_0x3_0}" in text
    assert xe.parse_hlo(text).to_text() == text


def test_the_nan_last_comparator_orders_as_numpy():
    m = module("""\
  x = f64[9] parameter(0)
  ROOT s = f64[9] sort(x), dimensions={0}, is_stable=true, to_apply=cmp""", NAN_LAST)
    x = np.array([2.0, np.nan, -0.0, 1.0, np.inf, 0.0, -np.inf, np.nan, -1.0])
    (got,) = run_module(m, [x])
    np.testing.assert_array_equal(got, np.sort(x))
    # Equal zeros keep their input order: -0.0 came first.
    assert np.signbit(got[2]) and not np.signbit(got[3])


def test_any_comparator_runs_as_a_stable_comparison_sort():
    # Descending by the key, ties broken by nothing: stability keeps them in input order.
    comps = """\
desc {
  desc.a = s64[] parameter(0)
  desc.b = s64[] parameter(1)
  desc.c = f32[] parameter(2)
  desc.d = f32[] parameter(3)
  ROOT desc.gt = pred[] compare(desc.a, desc.b), direction=GT
}
"""
    m = module("""\
  k = s64[2,6] parameter(0)
  v = f32[2,6] parameter(1)
  ROOT s = (s64[2,6], f32[2,6]) sort(k, v), dimensions={1}, is_stable=true, to_apply=desc""",
               comps)
    k = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 5, 5, 1, 0]], np.int64)
    v = np.arange(12, dtype=np.float32).reshape(2, 6)
    keys, vals = run_module(m, [k, v])
    order = np.argsort(-k, axis=1, kind="stable")
    np.testing.assert_array_equal(keys, np.take_along_axis(k, order, axis=1))
    np.testing.assert_array_equal(vals, np.take_along_axis(v, order, axis=1))


@pytest.mark.parametrize("entry,message", [
    ("""  x = f32[4] parameter(0)
  ROOT s = f32[4] sort(x), dimensions={0}, is_stable=true, to_apply=two""", r"takes \(f32\[\]"),
    ("""  x = f32[4] parameter(0)
  ROOT s = f32[4] sort(x), dimensions={0}, is_stable=true, to_apply=notpred""", r"not pred\[\]"),
    ("""  x = f32[4] parameter(0)
  ROOT s = f32[4] sort(x), dimensions={1}, is_stable=true, to_apply=lt""", "one dimension"),
    ("""  x = f32[4] parameter(0)
  y = f32[3] parameter(1)
  ROOT s = (f32[4], f32[3]) sort(x, y), dimensions={0}, is_stable=true, to_apply=lt""",
     "one shape"),
])
def test_the_verifier_checks_a_sort(entry, message):
    comps = """\
lt {
  lt.a = f32[] parameter(0)
  lt.b = f32[] parameter(1)
  ROOT lt.r = pred[] compare(lt.a, lt.b), direction=LT
}

two {
  two.a = f32[] parameter(0)
  two.b = f32[] parameter(1)
  two.c = f32[] parameter(2)
  two.d = f32[] parameter(3)
  ROOT two.r = pred[] compare(two.a, two.b), direction=LT
}

notpred {
  notpred.a = f32[] parameter(0)
  notpred.b = f32[] parameter(1)
  ROOT notpred.r = f32[] add(notpred.a, notpred.b)
}
"""
    with pytest.raises(xe.VerifyError, match=message):
        module(entry, comps)


def test_a_growing_window_is_a_scan_and_others_are_not():
    assert growing_window((3, 5), 1) == "{size=1x5 pad=0_0x4_0}"
    add = """\
add {
  add.a = f32[] parameter(0)
  add.b = f32[] parameter(1)
  ROOT add.r = f32[] add(add.a, add.b)
}
"""
    m = module("""\
  x = f32[3,5] parameter(0)
  z = f32[] constant(0)
  scan = f32[3,5] reduce-window(x, z), window={size=1x5 pad=0_0x4_0}, to_apply=add
  pairs = f32[3,4] reduce-window(x, z), window={size=1x2}, to_apply=add
  ROOT t = (f32[3,5], f32[3,4]) tuple(scan, pairs)""", add)
    scan, pairs = m.entry.root.operands
    assert scan_axis(scan) == 1 and scan_axis(pairs) is None
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    got_scan, got_pairs = run_module(m, [x])
    np.testing.assert_array_equal(got_scan, np.cumsum(x, axis=1))
    np.testing.assert_allclose(got_pairs, x[:, 1:] + x[:, :-1], rtol=1e-6)
