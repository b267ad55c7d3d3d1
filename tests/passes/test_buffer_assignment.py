"""The buffer-assignment analysis: HLO text in, the module unchanged, a BufferAssignment out.

Every number below is counted by hand from the HLO: f32[16] is 64 bytes, f32[32] is 128, and
every slot in the arena is rounded up to 64 bytes. Steps are instruction positions in the
entry, parameters included.
"""
from __future__ import annotations

import itertools

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

import xla_explorer as xe
from xla_explorer.passes.base import Pipeline
from xla_explorer.passes.buffer_assignment import (CSV_HEADER, AssignBuffers, BufferAssignment,
                                                   assign_buffers)

from .hlo_pass_helpers import entry_body, hlo, run_pass

matplotlib.use("Agg")  # plot() draws on a Figure of its own; no window, whatever the default

ADD = """\
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}"""

FUSED_TWO = """\
fused_two {
  p.1 = f32[16] parameter(0)
  e.1 = f32[16] exponential(p.1)
  m.1 = f32[16] negate(p.1)
  ROOT t.1 = (f32[16], f32[16]) tuple(e.1, m.1)
}"""

# A parameter, a constant, a temporary used twice, a tuple-shaped kernel with one element an
# output (through get-tuple-element) and one a temporary, a temporary nothing uses, an output.
#   step 0 x, 1 k, 2 a, 3 fusion.3, 4 dead, 5 g0, 6 g1, 7 n, 8 t (the root: the last step)
CATEGORIES = hlo("""\
x = f32[16] parameter(0)
k = f32[16] constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
a = f32[16] add(x, k)
fusion.3 = (f32[16], f32[16]) fusion(a), kind=kLoop, calls=fused_two
dead = f32[16] tanh(x)
g0 = f32[16] get-tuple-element(fusion.3), index=0
g1 = f32[16] get-tuple-element(fusion.3), index=1
n = f32[16] subtract(g1, a)
ROOT t = (f32[16], f32[16]) tuple(g0, n)""", FUSED_TWO)


def assign(text: str) -> BufferAssignment:
    _, result = run_pass(AssignBuffers(), text)
    return result.artifact


def assert_no_overlap(a: BufferAssignment):
    """Independently of conflicts(): two temporaries live at one step in different slots have
    disjoint bytes (each slot being its largest value rounded up to 64 bytes)."""
    assert a.conflicts() == []
    for u, v in itertools.combinations(a.temporaries, 2):
        if a.allocation(u) is a.allocation(v):
            continue  # one slot, written in place
        if u.definition_time <= v.end_time and v.definition_time <= u.end_time:
            su, sv = a.allocation(u), a.allocation(v)
            assert (su.offset + su.size <= sv.offset or sv.offset + sv.size <= su.offset), (u, v)


# ---------------------------------------------------------------------------------------------
# Logical buffers: categories and live ranges.


def test_categories_of_parameters_constants_outputs_and_temporaries():
    a = assign(CATEGORIES)
    got = {b.name: b.category for b in a.buffers}
    # tuple and get-tuple-element only name other buffers; fusion.3 makes one per element.
    assert got == {"x": "parameter", "k": "constant", "a": "temporary",
                   "fusion.3{0}": "output",  # root element 0, through g0
                   "fusion.3{1}": "temporary",  # read by n, not returned
                   "dead": "temporary", "n": "output"}
    assert [b.name for b in a.buffers] == ["x", "k", "a", "fusion.3{0}", "fusion.3{1}", "dead",
                                           "n"]
    assert [b.id for b in a.buffers] == list(range(7))
    assert a.defined_by("fusion.3", (1,)).name == "fusion.3{1}"
    assert a.buffer("fusion.3{1}").index == (1,)
    assert [b.name for b in a.temporaries] == ["a", "fusion.3{1}", "dead"]


def test_live_ranges_in_the_given_order():
    a = assign(CATEGORIES)
    ranges = {b.name: b.live_range for b in a.buffers}
    assert ranges == {
        "x": (0, 8), "k": (1, 8),  # the caller's and the module's: to the end
        "a": (2, 7),  # read by fusion.3 (3) and n (7)
        "fusion.3{0}": (3, 8),  # an output lives to the end
        "fusion.3{1}": (3, 7),  # read by n through g1
        "dead": (4, 4),  # nothing reads it: only its own step
        "n": (7, 8)}
    assert a.buffer("a").uses == ((3, "fusion.3"), (7, "n"))
    assert a.buffer("x").uses == ((2, "a"), (4, "dead"))
    assert a.buffer("dead").uses == ()
    assert a.buffer("a").live_at(7) and not a.buffer("a").live_at(8)


def test_an_operand_read_twice_counts_two_uses():
    a = assign(hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
b = f32[16] multiply(a, a)
ROOT r = f32[1] slice(b), slice={[0:1]}"""))
    assert a.buffer("a").uses == ((2, "b"), (2, "b"))
    assert a.buffer("r").category == "output"  # a root that is not a tuple


# ---------------------------------------------------------------------------------------------
# Offsets: no overlap, reuse, the better of two orders.


def test_live_buffers_do_not_overlap():
    a = assign(CATEGORIES)
    # a [2,7], fusion.3{1} [3,7], dead [4,4]: all three live at step 4, 64 bytes each.
    assert a.lower_bound_bytes == 192 and a.peak_bytes == 192
    # Every order tried puts them at 0, 64, 128 (all three slots are the same size; by size the
    # longest-lived goes first, by start time the earliest: the same order here).
    assert [a.offset(n) for n in ("a", "fusion.3{1}", "dead")] == [0, 64, 128]
    assert a.offset("x") is None and a.offset("fusion.3{0}") is None
    assert_no_overlap(a)


# Three temporaries where placing the biggest first wins:
#   A f32[16] 64 bytes  [1,3]
#   B f32[16] 64 bytes  [2,6]
#   C f32[32] 128 bytes [4,5]
# By size: C at 0; then B (longer-lived than A) overlaps C in time: 128; A overlaps only B:
# the gap [0,128) below B takes it at 0. Arena 192.
# By start time: A at 0, B at 64; C meets only B (64..128), the gap [0,64) is too small: 128.
# Arena 256.
SIZE_WINS = hlo("""\
x = f32[32] parameter(0)
a = f32[16] slice(x), slice={[0:16]}
b = f32[16] slice(x), slice={[16:32]}
ua = f32[1] slice(a), slice={[0:1]}
c = f32[32] negate(x)
uc = f32[1] slice(c), slice={[0:1]}
ub = f32[1] slice(b), slice={[0:1]}
ROOT t = (f32[1], f32[1], f32[1]) tuple(ua, uc, ub)""")

# Four where taking them in start order wins:
#   A f32[32] 128 [1,3]    B f32[16] 64 [2,5]    C f32[16] 64 [4,8]    D f32[32] 128 [6,7]
# By size: A at 0, D (meets only C, not placed yet) at 0, C (longer than B) meets D: 128;
# B meets A (0..128) and C (128..192): 192. Arena 256.
# By start time: A at 0, B at 128; C meets only B: the gap [0,128) takes it at 0; D meets only
# C (0..64): 64. Arena 192.
START_WINS = hlo("""\
x = f32[32] parameter(0)
a = f32[32] negate(x)
b = f32[16] slice(x), slice={[0:16]}
ua = f32[1] slice(a), slice={[0:1]}
c = f32[16] slice(x), slice={[16:32]}
ub = f32[1] slice(b), slice={[0:1]}
d = f32[32] exponential(x)
ud = f32[1] slice(d), slice={[0:1]}
uc = f32[1] slice(c), slice={[0:1]}
ROOT t = (f32[1], f32[1], f32[1], f32[1]) tuple(ua, ub, ud, uc)""")


def test_decreasing_size_order_kept_when_it_is_smaller():
    a = assign(SIZE_WINS)
    assert [(b.name, b.live_range, b.size) for b in a.temporaries] == [
        ("a", (1, 3), 64), ("b", (2, 6), 64), ("c", (4, 5), 128)]
    assert a.tried == (("decreasing size", 192), ("start time", 256))
    assert a.heap_order == "decreasing size" and a.peak_bytes == 192
    assert {n: a.offset(n) for n in "abc"} == {"a": 0, "b": 128, "c": 0}
    # A [1,3] and C [4,5] never meet: the same bytes serve both.
    assert a.offset("a") == a.offset("c")
    # B and C are both live at steps 4-5: 64 + 128 bytes.
    assert a.lower_bound_bytes == 192 and a.fragmentation_bytes == 0
    assert_no_overlap(a)


def test_start_time_order_kept_when_it_is_smaller():
    _, result = run_pass(AssignBuffers(), START_WINS)
    a = result.artifact
    assert [(b.name, b.live_range, b.size) for b in a.temporaries] == [
        ("a", (1, 3), 128), ("b", (2, 5), 64), ("c", (4, 8), 64), ("d", (6, 7), 128)]
    assert a.tried == (("decreasing size", 256), ("start time", 192))
    assert a.heap_order == "start time" and a.peak_bytes == 192
    assert {n: a.offset(n) for n in "abcd"} == {"a": 0, "b": 128, "c": 0, "d": 64}
    # A+B at steps 2-3 and C+D at 6-7 are 192 bytes: the arena is as small as can be.
    assert a.lower_bound_bytes == 192 and a.fragmentation_bytes == 0
    assert_no_overlap(a)
    heap = [n.message for n in result.notes if n.rule == "heap"]
    assert heap == ["best fit in one arena (64-byte aligned): by decreasing size, 256 bytes; "
                    "by start time, 192 bytes; kept start time order"]


def test_bounds_and_64_byte_alignment():
    # Sizes that are not whole cache lines: f32[3] 12 bytes -> 64, f32[20] 80 -> 128,
    # f32[9] 36 -> 64, f64[9] 72 -> 128, f32[50] 200 -> 256.
    a = assign(hlo("""\
x = f32[50] parameter(0)
a = f32[3] slice(x), slice={[0:3]}
b = f32[20] slice(x), slice={[0:20]}
c9 = f32[9] slice(x), slice={[0:9]}
c = f64[9] convert(c9)
d = f32[50] exponential(x)
s1 = f32[3] slice(d), slice={[0:3]}
s2 = f32[3] add(s1, a)
s3 = f32[1] slice(b), slice={[0:1]}
s4 = f64[1] slice(c), slice={[0:1]}
ROOT t = (f32[3], f32[1], f64[1]) tuple(s2, s3, s4)"""))
    sizes = {b.name: (b.size, a.allocation(b).size) for b in a.temporaries}
    assert sizes == {"a": (12, 64), "b": (80, 128), "c9": (36, 64), "c": (72, 128),
                     "d": (200, 256), "s1": (12, 64)}
    for x in a.allocations:
        assert x.offset % 64 == 0 and x.size % 64 == 0
    assert a.alignment == 64
    # Live at step 6 (s1): a [1,7], b [2,8], c [4,9], d [5,6], s1 [6,7]:
    # 64 + 128 + 128 + 256 + 64 = 640, the most at any step.
    assert a.lower_bound_bytes == 640
    aligned_sum = 64 + 128 + 64 + 128 + 256 + 64  # 704
    assert a.lower_bound_bytes <= a.peak_bytes <= a.temporary_bytes == aligned_sum
    assert_no_overlap(a)


# Best fit takes the smallest gap that fits, not the first:
#   A 64 [1,4]   B 64 [2,6]   C 64 [3,9]   D 128 [5,8]   E 128 [7,10]
# By size: D at 0; E meets D: 128; C (longest of the 64s) meets D and E: 256; B meets D and C:
# the gap [128,256) takes it at 128; A meets B (128..192) and C (256..320), leaving gaps
# [0,128) and [192,256): the smaller, 192. Arena 320.
# By start time: A 0, B 64, C 128; D meets B and C: 192; E meets C and D: the gap [0,128) at
# 0. Arena 320 too, so the first order tried (by size) is kept.
BEST_FIT = hlo("""\
x = f32[32] parameter(0)
a = f32[16] slice(x), slice={[0:16]}
b = f32[16] slice(x), slice={[16:32]}
c = f32[16] slice(x), slice={[8:24]}
ua = f32[1] slice(a), slice={[0:1]}
d = f32[32] negate(x)
ub = f32[1] slice(b), slice={[0:1]}
e = f32[32] exponential(x)
ud = f32[1] slice(d), slice={[0:1]}
uc = f32[1] slice(c), slice={[0:1]}
ue = f32[1] slice(e), slice={[0:1]}
ROOT t = (f32[1], f32[1], f32[1], f32[1], f32[1]) tuple(ua, ub, ud, uc, ue)""")


def test_best_fit_takes_the_smallest_gap():
    a = assign(BEST_FIT)
    assert [(b.name, b.live_range, b.size) for b in a.temporaries] == [
        ("a", (1, 4), 64), ("b", (2, 6), 64), ("c", (3, 9), 64), ("d", (5, 8), 128),
        ("e", (7, 10), 128)]
    assert a.tried == (("decreasing size", 320), ("start time", 320))
    assert a.heap_order == "decreasing size"
    assert {n: a.offset(n) for n in "abcde"} == {"a": 192, "b": 128, "c": 256, "d": 0,
                                                  "e": 128}
    # C, D and E are all live at steps 7-8: 64 + 128 + 128.
    assert a.lower_bound_bytes == 320 and a.peak_bytes == 320
    assert_no_overlap(a)


@pytest.mark.parametrize("text", [CATEGORIES, SIZE_WINS, START_WINS, BEST_FIT])
def test_lower_bound_peak_and_sum_of_slots_in_order(text):
    a = assign(text)
    aligned_sum = sum(-(-b.size // 64) * 64 for b in a.temporaries)
    assert 0 < a.lower_bound_bytes <= a.peak_bytes <= aligned_sum
    assert a.peak_bytes == min(size for _, size in a.tried)
    assert a.fragmentation_bytes == a.peak_bytes - a.lower_bound_bytes
    # Nothing is placed past the arena's end.
    assert max(x.offset + x.size for x in a.allocations) == a.peak_bytes


# ---------------------------------------------------------------------------------------------
# In-place sharing.

SHARE = hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
b = f32[16] tanh(a)
ROOT r = f32[1] slice(b), slice={[0:1]}""")


def test_elementwise_kernel_writes_over_its_dying_operand():
    _, result = run_pass(AssignBuffers(), SHARE)
    a = result.artifact
    # a [1,2] dies at b (step 2); both 64 bytes; tanh reads a[i] only to write b[i].
    assert len(a.sharings) == 1
    s = a.sharings[0]
    assert (s.kernel, s.operand, s.output) == ("b", "a", "b")
    assert str(s) == ("b writes its result in place over a: a is last used here, it is a "
                      "temporary of the same size (64 bytes), and tanh is element-wise, so each "
                      "element is read before it is overwritten")
    (slot,) = a.allocations
    assert [v.name for v in slot.values] == ["a", "b"]
    assert (slot.offset, slot.size, slot.live_range) == (0, 64, (1, 3))
    assert a.peak_bytes == 64 and a.lower_bound_bytes == 64
    assert a.offset("a") == a.offset("b") == 0
    assert [(n.rule, n.instructions) for n in result.notes if n.rule == "in-place"] == [
        ("in-place", ("b", "a"))]


ELEMENTWISE_FUSION = """\
fused_ew {
  p.1 = f32[16] parameter(0)
  q.1 = f32[16] parameter(1)
  m.1 = f32[16] multiply(p.1, q.1)
  ROOT n.1 = f32[16] negate(m.1)
}"""


def test_elementwise_fusion_writes_over_its_dying_operand():
    a = assign(hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
f = f32[16] fusion(a, x), kind=kLoop, calls=fused_ew
ROOT r = f32[1] slice(f), slice={[0:1]}""", ELEMENTWISE_FUSION))
    assert [(s.kernel, s.operand, s.output) for s in a.sharings] == [("f", "a", "f")]
    assert "every path from that parameter of fused_ew to n.1 is element-wise" in str(
        a.sharings[0])
    assert len(a.allocations) == 1 and a.peak_bytes == 64


OUTPUT_FUSION = """\
fused_out {
  p.1 = f32[4,4] parameter(0)
  q.1 = f32[4,4] parameter(1)
  r.1 = f32[4,4] parameter(2)
  d.1 = f32[4,4] dot(q.1, r.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT m.1 = f32[4,4] multiply(d.1, p.1)
}"""


def test_an_output_fusion_never_writes_over_an_operand_its_epilogue_reads():
    # The product goes into the output first and the epilogue runs over it after: had f
    # written over a, the epilogue would have read the product where a was (a wrong answer
    # a training step once gave).
    a = assign(hlo("""\
x = f32[4,4] parameter(0)
w = f32[4,4] parameter(1)
a = f32[4,4] exponential(x)
f = f32[4,4] fusion(a, x, w), kind=kOutput, calls=fused_out
ROOT r = f32[1,1] slice(f), slice={[0:1], [0:1]}""", OUTPUT_FUSION))
    assert a.sharings == ()
    assert len(a.allocations) == 2


def test_no_sharing_over_a_parameter():
    a = assign(hlo("""\
x = f32[16] parameter(0)
b = f32[16] tanh(x)
ROOT r = f32[1] slice(b), slice={[0:1]}"""))
    assert a.sharings == ()
    assert [v.name for x in a.allocations for v in x.values] == ["b"]


def test_no_sharing_when_sizes_differ():
    # convert is element-wise, but f64[16] is 128 bytes and a is 64.
    a = assign(hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
b = f64[16] convert(a)
ROOT r = f64[1] slice(b), slice={[0:1]}"""))
    assert a.sharings == ()
    assert len(a.allocations) == 2
    # Both are live at step 2: 64 + 128 bytes.
    assert a.peak_bytes == 192 and a.lower_bound_bytes == 192
    assert_no_overlap(a)


def test_no_sharing_over_an_operand_used_later():
    # a is read again by c (step 3), so b (step 2) must not overwrite it. At c, b dies and
    # is a same-size temporary read element-wise, so c takes b's slot instead.
    a = assign(hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
b = f32[16] tanh(a)
c = f32[16] add(b, a)
ROOT r = f32[1] slice(c), slice={[0:1]}"""))
    assert [(s.kernel, s.operand) for s in a.sharings] == [("c", "b")]
    assert a.offset("a") != a.offset("b")
    assert a.peak_bytes == 128
    assert_no_overlap(a)


def test_no_sharing_through_a_transpose():
    # f32[4,4] is 64 bytes either way, and a dies at b: only the access pattern refuses.
    a = assign(hlo("""\
x = f32[4,4] parameter(0)
a = f32[4,4] exponential(x)
b = f32[4,4] transpose(a), dimensions={1,0}
ROOT r = f32[1,4] slice(b), slice={[0:1], [0:4]}"""))
    assert a.buffer("a").end_time == 2 and a.buffer("a").size == a.buffer("b").size == 64
    assert a.sharings == ()
    assert a.peak_bytes == 128


def test_no_sharing_when_a_fusion_reduces_the_operand():
    # Each row minus its sum: out[i,j] reads every a[i,:], not just a[i,j].
    a = assign(hlo("""\
x = f32[4,4] parameter(0)
a = f32[4,4] exponential(x)
f = f32[4,4] fusion(a), kind=kInput, calls=fused_center
ROOT out = f32[1,4] slice(f), slice={[0:1], [0:4]}""", ADD + """

fused_center {
  p.0 = f32[4,4] parameter(0)
  z.0 = f32[] constant(0)
  s.0 = f32[4] reduce(p.0, z.0), dimensions={1}, to_apply=add
  b.0 = f32[4,4] broadcast(s.0), dimensions={0}
  ROOT d.0 = f32[4,4] subtract(p.0, b.0)
}"""))
    assert a.sharings == ()
    assert a.peak_bytes == 128


def test_no_sharing_when_a_fusion_transposes_the_operand():
    # out = a + transpose(a): every value inside the fusion has a's shape, but out[i,j]
    # reads a[j,i] too.
    a = assign(hlo("""\
x = f32[4,4] parameter(0)
a = f32[4,4] exponential(x)
f = f32[4,4] fusion(a), kind=kLoop, calls=fused_sym
ROOT r = f32[1,4] slice(f), slice={[0:1], [0:4]}""", """\
fused_sym {
  p.0 = f32[4,4] parameter(0)
  t.0 = f32[4,4] transpose(p.0), dimensions={1,0}
  ROOT s.0 = f32[4,4] add(p.0, t.0)
}"""))
    assert a.sharings == ()
    assert a.peak_bytes == 128


def test_no_sharing_when_a_fusion_broadcasts_one_element_of_the_operand():
    # out[i] = a[i] + a[0]: writing out[0] over a[0] first would change every later element.
    a = assign(hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
f = f32[16] fusion(a), kind=kLoop, calls=fused_first
ROOT r = f32[1] slice(f), slice={[0:1]}""", """\
fused_first {
  p.0 = f32[16] parameter(0)
  s.0 = f32[1] slice(p.0), slice={[0:1]}
  r.0 = f32[] reshape(s.0)
  b.0 = f32[16] broadcast(r.0), dimensions={}
  ROOT o.0 = f32[16] add(p.0, b.0)
}"""))
    assert a.sharings == ()
    assert a.peak_bytes == 128


def test_no_sharing_when_another_output_of_the_kernel_reads_the_operand():
    # Both outputs read a: whichever is written over it first would corrupt the other.
    a = assign(hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
f = (f32[16], f32[16]) fusion(a), kind=kLoop, calls=fused_two
g0 = f32[16] get-tuple-element(f), index=0
g1 = f32[16] get-tuple-element(f), index=1
s = f32[16] add(g0, g1)
ROOT r = f32[1] slice(s), slice={[0:1]}""", FUSED_TWO))
    assert [s for s in a.sharings if s.operand == "a"] == []
    assert a.buffer("f{0}").category == a.buffer("f{1}").category == "temporary"


# ---------------------------------------------------------------------------------------------
# An analysis: the module unchanged.


def test_a_module_with_no_temporaries_has_an_empty_arena():
    text = hlo("""\
x = f32[16] parameter(0)
ROOT r = f32[16] negate(x)""")
    before, result = run_pass(AssignBuffers(), text)
    assert result.changed is False and result.module is before
    assert entry_body(result.module) == "x = f32[16] parameter(0)\nROOT r = f32[16] negate(x)"
    a = result.artifact
    assert isinstance(a, BufferAssignment) and a.module is before
    assert a.peak_bytes == 0 and a.lower_bound_bytes == 0 and a.allocations == ()
    assert a.temporaries == () and a.tried == (("decreasing size", 0), ("start time", 0))
    arena = [n.message for n in result.notes if n.rule == "arena"]
    assert len(arena) == 1 and arena[0].endswith("so the arena is empty")
    assert a.csv() == CSV_HEADER + "\n"


def test_the_pass_is_an_analysis_and_its_notes_count_buffers():
    before, result = run_pass(AssignBuffers(), CATEGORIES)
    assert AssignBuffers.name == "buffer-assignment"
    assert result.changed is False and result.module is before
    assert result.artifact == assign_buffers(before)
    rules = [n.rule for n in result.notes]
    assert rules == ["unscheduled", "buffers", "heap", "arena"]
    assert result.notes[1].message == ("7 logical buffers: 1 parameter, 1 constant, 2 outputs, "
                                       "3 temporaries")
    assert result.notes[3].message == (
        "arena of 192 bytes for 3 temporaries in 3 allocations; lower bound 192 bytes (live at "
        "step 4, dead), fragmentation 0 bytes")


def test_in_a_pipeline_the_assignment_is_the_stage_artifact():
    pipeline = Pipeline([AssignBuffers()])
    module = xe.parse_hlo(SHARE)
    out = pipeline.run(module)
    stage = pipeline.stages[-1]
    assert out is module and stage.name == "buffer-assignment" and not stage.changed
    assert isinstance(stage.artifact, BufferAssignment) and stage.artifact.peak_bytes == 64


# ---------------------------------------------------------------------------------------------
# Reports.


def test_csv_has_one_row_per_temporary():
    a = assign(CATEGORIES)
    lines = a.csv().splitlines()
    assert lines[0] == ("buffer_id,buffer_name,offset,size,definition_time,end_time,num_uses,"
                        "use_times,use_names")
    assert lines[1:] == [
        "2,a,0,64,2,7,2,3;7,fusion.3;n",
        "4,fusion.3{1},64,64,3,7,1,7,n",
        "5,dead,128,64,4,4,0,,",
    ]
    for row, b in zip(lines[1:], a.temporaries):
        f = row.split(",")
        assert int(f[0]) == b.id and f[1] == b.name and int(f[2]) == a.offset(b)
        assert int(f[3]) == b.size and (int(f[4]), int(f[5])) == b.live_range
        assert int(f[6]) == len(b.uses)
        assert f[7] == ";".join(str(t) for t, _ in b.uses)
        assert f[8] == ";".join(u for _, u in b.uses)


def test_report_totals_every_allocation():
    a = assign(CATEGORIES)
    text = a.report()
    # x 64 + k 64 + outputs fusion.3{0} 64 and n 64 + the arena 192 = 448 bytes.
    assert text.startswith("Total bytes used: 448 (448B)\n")
    outside = sum(b.size for b in a.buffers if b.category != "temporary")
    assert outside + a.peak_bytes == 448
    summary = text.split("Allocations sorted by size with their values:")[0]
    listed = [line for line in summary.splitlines() if "; allocation " in line]
    assert len(listed) == 5  # x, k, fusion.3{0}, n, the arena
    assert "allocation 4: size 192, preallocated-temp" in listed[0]  # the biggest first
    assert listed[-1].split(";")[0].strip().startswith("448B(100%)")
    assert "parameter 0, shape |f32[16]|" in summary
    assert "constant, shape |f32[16]|" in summary
    assert "maybe-live-out at ShapeIndex {0}, shape |f32[16]|" in summary
    values = text.split("Allocations sorted by size with their values:")[1]
    assert " value: a (size=64,offset=0): f32[16], live [2, 7], 2 uses" in values
    assert " value: fusion.3{1} (size=64,offset=64): f32[16], live [3, 7], 1 use" in values
    assert " value: dead (size=64,offset=128): f32[16], live [4, 4], 0 uses" in values


def test_report_of_a_sharing_says_in_place():
    text = assign(SHARE).report()
    # x 64 + r 4 + arena 64
    assert text.startswith("Total bytes used: 132 (132B)\n")
    assert " value: b (size=64,offset=0): f32[16], live [2, 3], 1 use, in place over a" in text


def test_report_sizes_in_kib():
    # f32[1000] is 4000 bytes; a parameter and an output: 8000 bytes = 7.8125 KiB.
    text = assign(hlo("""\
x = f32[1000] parameter(0)
ROOT r = f32[1000] negate(x)""")).report()
    assert text.startswith("Total bytes used: 8000 (7.81KiB)\n")
    assert "3.91KiB(" in text  # 4000 bytes, the first allocation listed


def test_plot_draws_one_rectangle_per_value():
    a = assign(CATEGORIES)
    fig = a.plot()
    assert isinstance(fig, Figure)
    rects = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert len(rects) == 3
    # dead is live only at step 4, at offset 128, one slot high.
    assert any(r.get_xy() == (4.0, 128) and r.get_width() == 1.0 and r.get_height() == 64
               for r in rects)
    shared = assign(SHARE).plot()
    rects = shared.axes[0].patches
    assert len(rects) == 2  # a and b, one slot
    assert sum(bool(r.get_hatch()) for r in rects) == 1  # b, written in place
    empty = assign(hlo("""\
x = f32[4] parameter(0)
ROOT r = f32[4] negate(x)""")).plot()
    assert isinstance(empty, Figure) and len(empty.axes[0].patches) == 0


def test_to_dict():
    d = assign(SHARE).to_dict()
    assert d["peak_bytes"] == 64 and d["lower_bound_bytes"] == 64
    assert d["fragmentation_bytes"] == 0 and d["alignment"] == 64
    assert d["heap_order"] == "decreasing size"
    assert d["allocations"] == [{"index": 0, "offset": 0, "size": 64, "live_range": [1, 3],
                                 "values": ["a", "b"]}]
    assert [(s["kernel"], s["operand"], s["output"]) for s in d["sharings"]] == [("b", "a", "b")]


# ---------------------------------------------------------------------------------------------
# From NumPy.


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("f, args", [
    (lambda x, y, z: np.sum(x + y * z), (f32(16), f32(16, seed=1), f32(16, seed=2))),
    (softmax, (f32(4, 8),)),
])
def test_a_program_fused_into_one_kernel_has_no_temporaries(f, args):
    ex = xe.explore(f, *args)
    assert len(ex.fusions) == 1
    a = ex.buffers
    assert a.module is ex.module
    assert a.temporaries == () and a.peak_bytes == 0 and a.temporary_bytes == 0
    assert {b.category for b in a.buffers} == {"parameter", "output"}


def test_a_dot_between_elementwise_work_needs_temporaries():
    def f(x, w):
        t = np.tanh(x)
        return np.exp(t @ w + 1) @ w + t  # t read twice: by the first dot and by the last add

    ex = xe.explore(f, f32(4, 8), f32(8, 8, seed=1))
    a = ex.buffers
    # tanh(x) is not fused into the dot (a kOutput fusion takes no producers): a temporary
    # f32[4,8] = 128 bytes, read by both dot kernels. exp(t @ w + 1) is another f32[4,8]
    # temporary, read by the second dot. Both are live when the second dot runs: 256 bytes.
    kinds = [i.opcode for i in ex.module.entry]
    assert kinds == ["parameter", "parameter", "tanh", "fusion", "fusion", "tuple"]
    t, e = a.temporaries
    assert t.instruction == ex.module.entry.instructions[2].name
    assert (t.size, t.live_range, len(t.uses)) == (128, (2, 4), 2)
    assert (e.size, e.live_range, len(e.uses)) == (128, (3, 4), 1)
    assert a.sharings == ()  # e is computed through a dot of t: not element-wise
    assert a.lower_bound_bytes == 256 and a.peak_bytes == 256
    assert {a.offset(t), a.offset(e)} == {0, 128}
    assert_no_overlap(a)


def test_a_dot_with_one_elementwise_producer_has_one_temporary():
    ex = xe.explore(lambda x, w: np.tanh(x) @ w + 1, f32(4, 8), f32(8, 16, seed=1))
    a = ex.buffers
    (t,) = a.temporaries  # tanh(x): f32[4,8], 128 bytes; the dot fusion's result is the output
    assert t.shape.dims == (4, 8) and t.size == 128
    assert a.peak_bytes == 128 and a.offset(t) == 0


# ---------------------------------------------------------------------------------------------
# A kernel's scratch space, when the target says it takes some.


def test_scratch_lives_at_its_kernels_step_alone_and_shares_the_arena():
    # step 0 x, 1 k, 2 a, 3 fusion.3, 4 dead, ...: the fusion takes 1000 bytes of scratch.
    sizes = {"fusion.3": 1000}
    before, result = run_pass(AssignBuffers(lambda m, i: sizes.get(i.name, 0)), CATEGORIES)
    a = result.artifact
    s = a.buffer("fusion.3 scratch")
    assert (s.category, s.live_range, s.size, s.uses) == ("scratch", (3, 3), 1000,
                                                          ((3, "fusion.3"),))
    slot = a.scratch_of("fusion.3")
    assert slot.values == (s,) and slot.size == 1024 and slot.offset % 64 == 0
    assert a.scratch_of("a") is None
    # Nothing live at step 3 shares its bytes; temporaries dead by then may.
    for x in a.allocations:
        if x is not slot and x.start <= 3 <= x.end:
            assert x.offset + x.size <= slot.offset or slot.offset + slot.size <= x.offset
    assert a.conflicts() == [] and a.peak_bytes >= 1024 + 64  # `a`, live at 3, beside it
    assert a.temporaries == assign_buffers(before).temporaries  # not a temporary
    assert result.notes[1].message == ("8 logical buffers: 1 parameter, 1 constant, 2 outputs, "
                                       "3 temporaries, 1 scratch buffer")
    assert "for 3 temporaries and a kernel's scratch space in 4 allocations" in \
        result.notes[3].message
    assert "fusion.3 scratch" in a.csv() and "fusion.3 scratch" in a.report()


def test_the_cpu_backends_assignment_places_a_products_packed_operand(monkeypatch):
    from xla_explorer.codegen import packing
    from xla_explorer.codegen.packing import packed_b_size

    rng = np.random.default_rng(0)
    x, w = rng.random((8, 200), dtype=np.float32), rng.random((200, 100), dtype=np.float32)
    # B goes on the threads' stacks where one panel of it fits (200 rows of 128 bytes do):
    # no scratch in the arena.
    cpu = xe.explore(lambda x, w: np.tanh(x @ w), x, w, backend="cpu").buffers
    assert all(b.category != "scratch" for b in cpu.buffers)
    # Where not even one panel fits, packed B is the kernel's scratch in the arena.
    monkeypatch.setattr(packing, "STACK_B_BYTES", 16 * 1024)
    cpu = xe.explore(lambda x, w: np.tanh(x @ w), x, w, backend="cpu").buffers
    [slot] = [a for a in cpu.allocations if a.values[0].category == "scratch"]
    assert slot is cpu.scratch_of(slot.values[0].instruction)
    assert slot.size == -(-packed_b_size(200, 100, np.float32) // 64) * 64
    assert packed_b_size(200, 100, np.float32) >= w.nbytes  # panels padded to NR columns
    # The interpreter packs nothing: its assignment has no scratch.
    interpreted = xe.explore(lambda x, w: np.tanh(x @ w), x, w).buffers
    assert all(b.category != "scratch" for b in interpreted.buffers)
