"""Common subexpression elimination: HLO text in, HLO text out."""
from __future__ import annotations

import pytest

from xla_explorer.passes.cse import CSE

from .hlo_pass_helpers import entry_body, hlo, run_pass


def test_identical_instructions_merge():
    _, result = run_pass(CSE(), hlo("""\
x = f32[4] parameter(0)
y = f32[4] parameter(1)
a1 = f32[4] add(x, y)
a2 = f32[4] add(x, y), metadata={op_name="second"}
ROOT m = f32[4] multiply(a1, a2)"""))
    assert entry_body(result.module) == """\
x = f32[4] parameter(0)
y = f32[4] parameter(1)
a1 = f32[4] add(x, y)
ROOT m = f32[4] multiply(a1, a1)"""
    (note,) = result.notes
    assert note.rule == "duplicate" and note.instructions == ("a2", "a1")
    assert "a2" in note.message and "a1" in note.message


def test_merging_cascades_to_users():
    _, result = run_pass(CSE(), hlo("""\
x = f32[4] parameter(0)
e1 = f32[4] exponential(x)
e2 = f32[4] exponential(x)
n1 = f32[4] negate(e1)
n2 = f32[4] negate(e2)
ROOT t = (f32[4], f32[4]) tuple(n1, n2)"""))
    assert entry_body(result.module) == """\
x = f32[4] parameter(0)
e1 = f32[4] exponential(x)
n1 = f32[4] negate(e1)
ROOT t = (f32[4], f32[4]) tuple(n1, n1)"""
    assert [n.instructions for n in result.notes] == [("e2", "e1"), ("n2", "n1")]


def test_constants_merge_only_when_equal_in_type_and_bits():
    _, result = run_pass(CSE(), hlo("""\
c1 = f32[2] constant({1, 2})
c2 = f32[2] constant({1, 2})
c3 = f64[2] constant({1, 2})
c4 = f32[2] constant({1, 3})
z1 = f32[] constant(0)
z2 = f32[] constant(-0)
ROOT t = (f32[2], f32[2], f64[2], f32[2], f32[], f32[]) tuple(c1, c2, c3, c4, z1, z2)"""))
    assert entry_body(result.module) == """\
c1 = f32[2] constant({1, 2})
c3 = f64[2] constant({1, 2})
c4 = f32[2] constant({1, 3})
z1 = f32[] constant(0)
z2 = f32[] constant(-0)
ROOT t = (f32[2], f32[2], f64[2], f32[2], f32[], f32[]) tuple(c1, c1, c3, c4, z1, z2)"""


def test_parameters_never_merge():
    before, result = run_pass(CSE(), hlo("""\
x = f32[4] parameter(0), metadata={op_name="a"}
y = f32[4] parameter(1), metadata={op_name="a"}
ROOT s = f32[4] add(x, y)"""))
    assert not result.changed and result.module is before


@pytest.mark.parametrize("entry", [
    # Different attributes, operand order or called computation: not the same computation.
    """\
x = f32[4] parameter(0)
y = f32[4] parameter(1)
a = pred[4] compare(x, y), direction=LT
b = pred[4] compare(x, y), direction=GT
c = f32[4] add(x, y)
d = f32[4] add(y, x)
e = f32[2] slice(x), slice={[0:2]}
f = f32[2] slice(x), slice={[2:4]}
ROOT t = (pred[4], pred[4], f32[4], f32[4], f32[2], f32[2]) tuple(a, b, c, d, e, f)""",
    """\
x = f32[4] parameter(0)
zero = f32[] constant(0)
s = f32[] reduce(x, zero), dimensions={0}, to_apply=add
m = f32[] reduce(x, zero), dimensions={0}, to_apply=max
ROOT t = (f32[], f32[]) tuple(s, m)""",
    """\
x = f32[4] parameter(0)
a = f32[4,2] broadcast(x), dimensions={0}
b = f32[2,4] broadcast(x), dimensions={1}
c = s32[4,2] iota(), iota_dimension=0
d = s32[4,2] iota(), iota_dimension=1
ROOT t = (f32[4,2], f32[2,4], s32[4,2], s32[4,2]) tuple(a, b, c, d)""",
])
def test_different_instructions_stay(entry):
    comps = """\
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}

max {
  q0 = f32[] parameter(0)
  q1 = f32[] parameter(1)
  ROOT r2 = f32[] maximum(q0, q1)
}"""
    before, result = run_pass(CSE(), hlo(entry, comps if "to_apply" in entry else ""))
    assert not result.changed and result.module is before and result.notes == ()


def test_identical_iotas_and_reduces_merge():
    _, result = run_pass(CSE(), hlo("""\
x = f32[4,3] parameter(0)
zero = f32[] constant(0)
zero2 = f32[] constant(0)
s1 = f32[4] reduce(x, zero), dimensions={1}, to_apply=add
s2 = f32[4] reduce(x, zero2), dimensions={1}, to_apply=add
i1 = s32[4] iota(), iota_dimension=0
i2 = s32[4] iota(), iota_dimension=0
ROOT t = (f32[4], f32[4], s32[4], s32[4]) tuple(s1, s2, i1, i2)""", """\
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}"""))
    assert [n.instructions for n in result.notes] == [("zero2", "zero"), ("s2", "s1"), ("i2", "i1")]
    assert entry_body(result.module).endswith("tuple(s1, s1, i1, i1)")


def test_a_duplicate_root():
    _, result = run_pass(CSE(), hlo("""\
x = f32[4] parameter(0)
a = f32[4] exponential(x)
n = f32[4] negate(a)
ROOT b = f32[4] exponential(x)"""))
    # `n` used `a`, which is now the root: only the root may follow... so n was dead anyway.
    assert result.module.entry.root.name == "a"
    assert [n.instructions for n in result.notes] == [("b", "a")]


def test_dead_code_stays_for_dce():
    _, result = run_pass(CSE(), hlo("""\
x = f32[4] parameter(0)
dead = f32[4] tanh(x)
a1 = f32[4] exponential(x)
a2 = f32[4] exponential(x)
ROOT s = f32[4] add(a1, a2)"""))
    assert entry_body(result.module) == """\
x = f32[4] parameter(0)
dead = f32[4] tanh(x)
a1 = f32[4] exponential(x)
ROOT s = f32[4] add(a1, a1)"""
