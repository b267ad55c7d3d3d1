"""Dead code elimination: HLO text in, HLO text out; every removal is reported."""
from __future__ import annotations

import xla_explorer as xe
from xla_explorer.passes.dce import DCE

from .hlo_pass_helpers import assert_same_meaning, entry_body, hlo, run_pass

ADD = """\
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}"""


def test_unused_instructions_go_and_each_is_reported():
    _, result = run_pass(DCE(), hlo("""\
x = f32[4] parameter(0)
y = f32[4] parameter(1)
dead1 = f32[4] tanh(x)
dead2 = f32[4] negate(dead1)
live = f32[4] exponential(x)
dead3 = pred[4] compare(live, y), direction=LT
ROOT z = f32[4] negate(live)"""))
    # Unused parameters stay: they are the signature.
    assert entry_body(result.module) == """\
x = f32[4] parameter(0)
y = f32[4] parameter(1)
live = f32[4] exponential(x)
ROOT z = f32[4] negate(live)"""
    assert [(n.rule, n.instructions) for n in result.notes] == [
        ("unused", ("dead1",)), ("unused", ("dead2",)), ("unused", ("dead3",))]
    assert all("nothing uses" in n.message for n in result.notes)


def test_unused_computations_go():
    _, result = run_pass(DCE(), hlo("""\
x = f32[4] parameter(0)
zero = f32[] constant(0)
dead = f32[] reduce(x, zero), dimensions={0}, to_apply=add_dead
ROOT s = f32[] reduce(x, zero), dimensions={0}, to_apply=add""", ADD + """

add_dead {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

never_called {
  d = f32[] parameter(0)
  ROOT e = f32[] negate(d)
}"""))
    assert [c.name for c in result.module.computations] == ["add"]
    assert [(n.rule, n.message) for n in result.notes] == [
        ("unused", "removed dead: nothing uses its value"),
        ("unused-computation", "removed computation add_dead: no instruction calls it"),
        ("unused-computation", "removed computation never_called: no instruction calls it"),
    ]


def test_computations_called_from_called_computations_stay():
    before, result = run_pass(DCE(), hlo("""\
x = f32[4,3] parameter(0)
ROOT f = f32[4] fusion(x), kind=kLoop, calls=fused""", ADD + """

fused {
  p = f32[4,3] parameter(0)
  zero = f32[] constant(0)
  ROOT s = f32[4] reduce(p, zero), dimensions={1}, to_apply=add
}"""))
    assert not result.changed and result.module is before


def test_dead_code_in_called_computations_goes():
    _, result = run_pass(DCE(), hlo("""\
x = f32[4] parameter(0)
y = f32[4] parameter(1)
ROOT f = f32[4] fusion(x, y), kind=kLoop, calls=fused""", """\
fused {
  p = f32[4] parameter(0)
  unused_param = f32[4] parameter(1)
  dead = f32[4] tanh(p)
  ROOT e = f32[4] exponential(p)
}"""))
    fused = result.module.computation("fused")
    assert [i.name for i in fused] == ["p", "unused_param", "e"]
    assert [n.instructions for n in result.notes] == [("dead",)]
    assert "fused" in result.notes[0].message


def test_nothing_to_remove():
    before, result = run_pass(DCE(), hlo("""\
x = f32[4] parameter(0)
unused = f32[4] parameter(1)
ROOT z = f32[4] negate(x)"""))
    assert not result.changed and result.module is before and result.notes == ()


def test_dce_on_the_golden_programs():
    from pathlib import Path

    data = Path(__file__).parents[1] / "ir" / "data" / "jax"
    for path in sorted(data.glob("*/*.hlo")):
        m = xe.parse_hlo(path.read_text())
        result = DCE().run(m)
        notes = [str(n) for n in result.notes]
        # JAX's argmax leaves the max values of its variadic reduce unused; nothing else is dead.
        if path.name == "argmax_rows.lowered.hlo":
            assert notes == ["removed reduce.12 from argmax.2: nothing uses its value"]
            xe.verify(result.module)
            assert_same_meaning(m, result.module)
        else:
            assert notes == [], path.name
