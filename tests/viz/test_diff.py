"""What changed between stages: names added, removed and rewritten, fused bodies included."""
import numpy as np

import xla_explorer as xe
from xla_explorer.viz.diff import diff, instructions

BEFORE = """HloModule m

ENTRY e {
  x = f32[4] parameter(0)
  one = f32[] constant(1)
  b = f32[4] broadcast(one), dimensions={}
  m = f32[4] multiply(x, b)
  ROOT t = (f32[4]) tuple(m)
}
"""

AFTER = """HloModule m

ENTRY e {
  x = f32[4] parameter(0)
  n = f32[4] negate(x)
  ROOT t = (f32[4]) tuple(n)
}
"""


def test_added_removed_and_rewritten_by_name():
    d = diff(xe.parse_hlo(BEFORE), xe.parse_hlo(AFTER))
    assert d.added == {"n"}
    assert d.removed == {"one", "b", "m"}
    assert d.rewritten == {"t"}  # its operand changed
    assert d.changed == {"n", "t"} and d


def test_a_stage_that_changed_nothing_has_an_empty_diff():
    m = xe.parse_hlo(BEFORE)
    assert not diff(m, m) and diff(m, m).changed == frozenset()


def test_fusion_adds_the_fusion_and_keeps_what_it_fused():
    def f(x):
        return np.tanh(x) * 2 + 1

    ex = xe.explore(f, np.ones(8, np.float32))
    names = [s.name for s in ex.stages]
    before, after = ex.stages[names.index("fusion") - 1], ex.stage("fusion")
    d = diff(before.module, after.module)
    fusions = {i.name for i in after.module.entry.instructions if i.opcode == "fusion"}
    assert fusions and fusions <= d.added
    # The fused instructions compute what they computed before, now inside the kernel.
    fused = set(instructions(after.module)) - {i.name for i in after.module.entry.instructions}
    assert fused and not fused & d.changed
    assert {i.name for i in before.module.entry.instructions if i.opcode == "tanh"} <= fused
