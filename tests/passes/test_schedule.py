"""The schedule pass: HLO text in, the entry reordered to lower peak memory, HLO text out."""
from __future__ import annotations

import xla_explorer as xe
from xla_explorer.passes.base import Pipeline
from xla_explorer.passes.schedule import (Schedule, dfs_schedule, list_schedule,
                                          peak_live_bytes)

from .hlo_pass_helpers import entry_body, hlo, run_pass

ADD = """\
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}"""

# Three big values computed first, then each reduced: all three are live at once.
ALL_THEN_REDUCE = hlo("""\
x = f32[64] parameter(0)
zero = f32[] constant(0)
a = f32[64] exponential(x)
b = f32[64] tanh(x)
c = f32[64] sine(x)
ra = f32[] reduce(a, zero), dimensions={0}, to_apply=add
rb = f32[] reduce(b, zero), dimensions={0}, to_apply=add
rc = f32[] reduce(c, zero), dimensions={0}, to_apply=add
s1 = f32[] add(ra, rb)
s2 = f32[] add(s1, rc)
ROOT t = (f32[]) tuple(s2)""", ADD)


def test_list_scheduler_reduces_each_big_value_before_making_the_next():
    before, result = run_pass(Schedule(), ALL_THEN_REDUCE)
    assert result.changed and result.module.is_scheduled
    # Reducing `a` (freeing 256 bytes, adding 4) beats computing `b` (adding 256).
    assert entry_body(result.module) == """\
x = f32[64] parameter(0)
zero = f32[] constant(0)
a = f32[64] exponential(x)
ra = f32[] reduce(a, zero), dimensions={0}, to_apply=add
b = f32[64] tanh(x)
rb = f32[] reduce(b, zero), dimensions={0}, to_apply=add
s1 = f32[] add(ra, rb)
c = f32[64] sine(x)
rc = f32[] reduce(c, zero), dimensions={0}, to_apply=add
s2 = f32[] add(s1, rc)
ROOT t = (f32[]) tuple(s2)"""
    # Original: a, b, c (768 bytes) and ra (4). Scheduled: one big value and two scalars.
    assert peak_live_bytes(before.entry) == 772
    assert peak_live_bytes(result.module.entry) == 264
    first = result.notes[0]
    assert first.rule == "list-scheduler"
    assert "peak live 264 bytes" in first.message and "original order 772" in first.message
    assert result.notes[1].rule == "reordered"


def test_scheduled_modules_print_is_scheduled_and_parse_back():
    _, result = run_pass(Schedule(), ALL_THEN_REDUCE)
    text = result.module.to_text()
    assert text.startswith("HloModule test, is_scheduled=true")
    assert xe.parse_hlo(text).is_scheduled


def test_the_original_order_is_kept_when_no_scheduler_beats_it():
    # The list scheduler is greedy: it runs the 4-byte slice first, which then stays live
    # (it is an output) while `a` and `b` are both live: 132 bytes against 128.
    text = hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
b = f32[16] negate(a)
small = f32[1] slice(x), slice={[0:1]}
ROOT t = (f32[16], f32[1]) tuple(b, small)""")
    before, result = run_pass(Schedule(), text)
    comp = before.entry
    assert peak_live_bytes(comp) == 128
    assert peak_live_bytes(comp, list_schedule(comp)) == 132
    assert entry_body(result.module) == entry_body(before)
    assert result.changed  # only is_scheduled=true is new
    assert [n.rule for n in result.notes] == ["original-order"]
    assert "list scheduler 132" in result.notes[0].message


def test_an_already_scheduled_module_is_unchanged():
    _, first = run_pass(Schedule(), ALL_THEN_REDUCE)
    again = Schedule().run(first.module)
    assert not again.changed and again.module is first.module and again.notes == ()


def test_parameters_first_root_last_and_every_operand_before_its_user():
    text = hlo("""\
c = f32[8] constant({1, 2, 3, 4, 5, 6, 7, 8})
y = f32[8] parameter(1)
e = f32[8] exponential(c)
x = f32[8] parameter(0)
m = f32[8] multiply(e, x)
dead = f32[8] tanh(y)
ROOT s = f32[8] add(m, y)""")
    before, _ = run_pass(Schedule(), text)
    for schedule in (list_schedule, dfs_schedule):
        order = schedule(before.entry)
        assert sorted(i.name for i in order) == sorted(i.name for i in before.entry)
        assert [i.name for i in order[:2]] == ["y", "x"]
        assert order[-1].name == "s"
        seen = set()
        for inst in order:
            assert all(o.name in seen for o in inst.operands)
            seen.add(inst.name)


FUSED = hlo("""\
x = f32[64] parameter(0)
zero = f32[] constant(0)
f1 = (f32[64], f32[64]) fusion(x), kind=kLoop, calls=fused_two
g0 = f32[64] get-tuple-element(f1), index=0
g1 = f32[64] get-tuple-element(f1), index=1
f2 = f32[64] fusion(x), kind=kLoop, calls=fused_cos
r0 = f32[] fusion(g0, zero), kind=kInput, calls=fused_sum0
r1 = f32[] fusion(g1, zero), kind=kInput, calls=fused_sum1
r2 = f32[] fusion(f2, zero), kind=kInput, calls=fused_sum2
ROOT t = (f32[], f32[], f32[]) tuple(r0, r1, r2)""", ADD + """

fused_two {
  p.1 = f32[64] parameter(0)
  e.1 = f32[64] exponential(p.1)
  n.1 = f32[64] negate(p.1)
  ROOT t.1 = (f32[64], f32[64]) tuple(e.1, n.1)
}

fused_cos {
  p.2 = f32[64] parameter(0)
  ROOT c.2 = f32[64] cosine(p.2)
}

fused_sum0 {
  p.3 = f32[64] parameter(0)
  z.3 = f32[] parameter(1)
  ROOT r.3 = f32[] reduce(p.3, z.3), dimensions={0}, to_apply=add
}

fused_sum1 {
  p.4 = f32[64] parameter(0)
  z.4 = f32[] parameter(1)
  ROOT r.4 = f32[] reduce(p.4, z.4), dimensions={0}, to_apply=add
}

fused_sum2 {
  p.5 = f32[64] parameter(0)
  z.5 = f32[] parameter(1)
  ROOT r.5 = f32[] reduce(p.5, z.5), dimensions={0}, to_apply=add
}""")


def test_kernels_of_a_fused_module_are_scheduled_through_get_tuple_element():
    before, result = run_pass(Schedule(), FUSED)
    comp = before.entry
    assert peak_live_bytes(comp) == 3 * 256 + 4
    # The list scheduler runs the cheaper cosine kernel first (256 bytes against 512), then
    # needs both of f1's outputs and two sums at once: 520 bytes.
    assert peak_live_bytes(comp, list_schedule(comp)) == 2 * 256 + 2 * 4
    # Depth-first finishes f1's subtree (both elements reduced, through get-tuple-element)
    # before starting the cosine kernel: 516 bytes, the least, so it is kept.
    assert [i.name for i in result.module.entry] == [
        "x", "f1", "g0", "zero", "r0", "g1", "r1", "f2", "r2", "t"]
    assert peak_live_bytes(result.module.entry) == 2 * 256 + 4
    assert result.notes[0].rule == "dfs-scheduler"


def test_schedule_in_a_pipeline_is_a_stage():
    pipeline = Pipeline([Schedule()])
    out = pipeline.run(xe.parse_hlo(ALL_THEN_REDUCE))
    assert [s.name for s in pipeline.stages] == ["trace", "schedule"]
    assert out.is_scheduled and pipeline.stages[-1].changed


def test_a_root_that_is_a_parameter_stays_last():
    _, result = run_pass(Schedule(), hlo("""\
x = f32[4] parameter(0)
y = f32[4] parameter(1)
dead = f32[4] negate(y)
ROOT x2 = f32[4] parameter(2)"""))
    assert result.module.entry.root.name == "x2"
