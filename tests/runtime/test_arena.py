"""Running a module with every temporary in one arena, laid out by its buffer assignment.

The arena run must agree with the reference interpreter (and with NumPy) when the assignment is
right, and must give a wrong answer when two live temporaries are given the same bytes: that is
what makes the assignment tested rather than only drawn.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.runtime import interpreted
from xla_explorer.passes.buffer_assignment import assign_buffers
from xla_explorer.passes.schedule import Schedule
from xla_explorer.runtime.arena import run_in_arena
from xla_explorer.runtime.reference import run_module

from ..passes.hlo_pass_helpers import hlo, random_inputs

ADD = """\
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}"""


def module(text: str) -> xe.Module:
    return xe.verify(xe.parse_hlo(text))


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# tanh and dot make temporaries; exp writes in place over the dot's result (it dies there).
DOT = hlo("""\
x = f32[4,8] parameter(0)
w = f32[8,4] parameter(1)
t = f32[4,8] tanh(x)
d = f32[4,4] dot(t, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
e = f32[4,4] exponential(d)
out = f32[4,4] multiply(e, e)
ROOT r = (f32[4,4]) tuple(out)""")

# A two-output fusion read through get-tuple-element (one element also returned), fused and
# plain reduces, a constant.
FUSED = hlo("""\
x = f32[64] parameter(0)
zero = f32[] constant(0)
f1 = (f32[64], f32[64]) fusion(x), kind=kLoop, calls=fused_two
g0 = f32[64] get-tuple-element(f1), index=0
g1 = f32[64] get-tuple-element(f1), index=1
f2 = f32[64] fusion(x), kind=kLoop, calls=fused_cos
r0 = f32[] fusion(g0, zero), kind=kInput, calls=fused_sum
r1 = f32[] reduce(g1, zero), dimensions={0}, to_apply=add
r2 = f32[] fusion(f2, zero), kind=kInput, calls=fused_sum
ROOT t = (f32[], f32[], f32[], f32[64]) tuple(r0, r1, r2, g0)""", ADD + """

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

fused_sum {
  p.3 = f32[64] parameter(0)
  z.3 = f32[] parameter(1)
  ROOT r.3 = f32[] reduce(p.3, z.3), dimensions={0}, to_apply=add
}""")

# a [2,5] and b [3,4] are live together: they must not share bytes.
#   a = x + k, b = a * a, c = -b, d = a - x
TWO_LIVE = hlo("""\
x = f32[16] parameter(0)
k = f32[16] constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
a = f32[16] add(x, k)
b = f32[16] multiply(a, a)
c = f32[16] negate(b)
d = f32[16] subtract(a, x)
ROOT t = (f32[16], f32[16]) tuple(c, d)""")

K = np.arange(16, dtype=np.float32)


def numpy_dot(x, w):
    e = np.exp(np.tanh(x) @ w)
    return [e * e]


def numpy_fused(x):
    return [np.sum(np.exp(x)), np.sum(-x), np.sum(np.cos(x)), np.exp(x)]


def numpy_two_live(x):
    a = x + K
    return [-(a * a), a - x]


@pytest.mark.parametrize("text, want", [
    (DOT, numpy_dot), (FUSED, numpy_fused), (TWO_LIVE, numpy_two_live)])
def test_arena_run_equals_the_interpreter_and_numpy(text, want):
    m = module(text)
    a = assign_buffers(m)
    assert a.peak_bytes > 0  # the arena is really in play
    for seed in (0, 1):
        args = random_inputs(m, seed)
        got = run_in_arena(m, a, args)
        ref = run_module(m, args)
        assert len(got) == len(ref)
        for g, r, w in zip(got, ref, want(*args)):
            assert g.dtype == r.dtype and g.shape == r.shape
            np.testing.assert_array_equal(g, r)
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)


def test_the_dot_module_writes_in_place_and_still_agrees():
    m = module(DOT)
    a = assign_buffers(m)
    assert [(s.kernel, s.operand) for s in a.sharings] == [("e", "d")]
    assert a.offset("e") == a.offset("d")
    x, w = f32(4, 8), f32(8, 4, seed=1)
    (got,) = run_in_arena(m, a, [x, w])
    np.testing.assert_allclose(got, numpy_dot(x, w)[0], rtol=2e-5, atol=1e-6)


def test_the_fused_module_uses_gte_elements_from_the_arena():
    m = module(FUSED)
    a = assign_buffers(m)
    assert a.buffer("f1{0}").category == "output"
    assert a.buffer("f1{1}").category == "temporary" and a.offset("f1{1}") is not None
    assert a.buffer("f2").category == "temporary"


# ---------------------------------------------------------------------------------------------
# A wrong assignment gives a wrong answer.


def test_overlapping_live_temporaries_give_a_wrong_answer():
    m = module(TWO_LIVE)
    right = assign_buffers(m)
    slot_a, slot_b = right.allocation("a"), right.allocation("b")
    assert slot_a is not slot_b and right.conflicts() == []
    assert (slot_a.offset, slot_b.offset) == (0, 64)
    # Put b where a is: b (step 3) then overwrites a while d (step 5) still needs it.
    bad_b = dataclasses.replace(slot_b, offset=slot_a.offset)
    wrong = dataclasses.replace(right, allocations=tuple(
        bad_b if x is slot_b else x for x in right.allocations))
    assert wrong.conflicts() == [(slot_a, bad_b)]
    x = f32(16)
    c, d = run_in_arena(m, right, [x])
    np.testing.assert_allclose(d, (x + K) - x, rtol=1e-6)
    c_bad, d_bad = run_in_arena(m, wrong, [x])
    np.testing.assert_array_equal(c_bad, c)  # c reads b, which is intact
    # d read b's bytes, (x + k)^2, instead of a's.
    np.testing.assert_allclose(d_bad, (x + K) * (x + K) - x, rtol=1e-6)
    assert not np.allclose(d_bad, d)


# p + p[0]: each element reads element 0 too, so writing over p in place would be wrong.
READS_ELEMENT_ZERO = hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
f = f32[16] fusion(a), kind=kLoop, calls=fused_first
ROOT r = (f32[16]) tuple(f)""", """\
fused_first {
  p = f32[16] parameter(0)
  p0 = f32[1] slice(p), slice={[0:1]}
  s = f32[] reshape(p0)
  b = f32[16] broadcast(s), dimensions={}
  ROOT y = f32[16] add(p, b)
}""")

def test_an_unsafe_in_place_placement_gives_a_wrong_answer():
    # Buffer assignment refuses to put f over a (f reads a[0] everywhere); force it there.
    m = module(READS_ELEMENT_ZERO)
    right = assign_buffers(m)
    assert right.sharings == () and right.buffer("f").category == "output"
    x = np.linspace(0, 1, 16, dtype=np.float32)
    (want,) = run_in_arena(m, right, [x])
    np.testing.assert_allclose(want, np.exp(x) + 1, rtol=1e-6)
    # Make f a temporary in a's slot by giving the module one more consumer of f.
    m2 = module(READS_ELEMENT_ZERO.replace(
        "ROOT r = (f32[16]) tuple(f)", "g = f32[16] negate(f)\nROOT r = (f32[16]) tuple(g)"))
    right2 = assign_buffers(m2)
    assert right2.sharings == ()
    slot_a, slot_f = right2.allocation("a"), right2.allocation("f")
    bad_f = dataclasses.replace(slot_f, offset=slot_a.offset)
    wrong = dataclasses.replace(right2, allocations=tuple(
        bad_f if s is slot_f else s for s in right2.allocations))
    (good,) = run_in_arena(m2, right2, [x])
    (bad,) = run_in_arena(m2, wrong, [x])
    np.testing.assert_allclose(good, -(np.exp(x) + 1), rtol=1e-6)
    # The first quarter of f is written over a before the rest reads a[0]: a[0] is now
    # f[0] = 2 exp(0) = 2, so the rest is -(exp(x) + 2).
    np.testing.assert_allclose(bad[:4], good[:4], rtol=1e-6)
    np.testing.assert_allclose(bad[4:], -(np.exp(x[4:]) + 2), rtol=1e-6)


def test_a_safe_in_place_sharing_is_run_in_index_order_and_agrees():
    m = module(hlo("""\
x = f32[16] parameter(0)
t = f32[16] tanh(x)
n = f32[16] negate(t)
w = f32[16] multiply(n, x)
ROOT r = (f32[16]) tuple(w)"""))
    a = assign_buffers(m)
    assert [(s.kernel, s.operand) for s in a.sharings] == [("n", "t")]
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    (got,) = run_in_arena(m, a, [x])
    np.testing.assert_array_equal(got, -np.tanh(x) * x)


def test_an_assignment_of_another_module_with_the_same_names_is_refused():
    m1 = module(hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
b = f32[16] negate(a)
c = f32[16] tanh(b)
ROOT t = (f32[16]) tuple(c)"""))
    m2 = module(hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
b = f32[16] negate(x)
c = f32[16] add(a, b)
ROOT t = (f32[16]) tuple(c)"""))
    with pytest.raises(ValueError, match="another module"):
        run_in_arena(m2, assign_buffers(m1), [np.linspace(0, 1, 16, dtype=np.float32)])


def test_an_arena_too_small_for_its_slots_is_refused():
    m = module(TWO_LIVE)
    right = assign_buffers(m)
    assert right.peak_bytes == 128  # two 64-byte slots
    small = dataclasses.replace(right, peak_bytes=64)
    with pytest.raises(ValueError, match="runs past the end"):
        run_in_arena(m, small, [f32(16)])


# ---------------------------------------------------------------------------------------------
# What comes back is the caller's own.

PASS_THROUGH = hlo("""\
x = f32[4] parameter(0)
k = f32[4] constant({1, 2, 3, 4})
f = (f32[4], f32[4]) fusion(x), kind=kLoop, calls=fused_two
g0 = f32[4] get-tuple-element(f), index=0
g1 = f32[4] get-tuple-element(f), index=1
n = f32[4] negate(g1)
ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(x, k, g0, n)""", """\
fused_two {
  p.1 = f32[4] parameter(0)
  e.1 = f32[4] exponential(p.1)
  m.1 = f32[4] negate(p.1)
  ROOT t.1 = (f32[4], f32[4]) tuple(e.1, m.1)
}""")


def test_outputs_are_not_views_of_the_inputs_or_each_other():
    m = module(PASS_THROUGH)
    a = assign_buffers(m)
    assert a.offset("f{1}") == 0  # -x lives in the arena, then n = -(-x) is an output
    x = np.array([0.5, -1.0, 2.0, 3.0], np.float32)
    keep = x.copy()
    out = run_in_arena(m, a, [x])
    np.testing.assert_array_equal(out[0], keep)
    np.testing.assert_array_equal(out[1], [1, 2, 3, 4])
    np.testing.assert_allclose(out[2], np.exp(keep), rtol=1e-6)
    np.testing.assert_array_equal(out[3], keep)
    for i, o in enumerate(out):
        assert not np.shares_memory(o, x)
        for p in out[i + 1:]:
            assert not np.shares_memory(o, p)
    for o in out:
        o[...] = 99
    np.testing.assert_array_equal(x, keep)  # the input is untouched
    again = run_in_arena(m, a, [x])
    np.testing.assert_array_equal(again[1], [1, 2, 3, 4])  # the constant is untouched
    np.testing.assert_array_equal(again[0], keep)


def test_an_assignment_of_another_module_is_refused():
    m = module(TWO_LIVE)
    other = assign_buffers(module(DOT))
    with pytest.raises(ValueError):
        run_in_arena(m, other, [f32(16)])


def test_an_assignment_of_the_same_module_in_another_order_is_refused():
    text = hlo("""\
x = f32[64] parameter(0)
zero = f32[] constant(0)
a = f32[64] exponential(x)
b = f32[64] tanh(x)
ra = f32[] reduce(a, zero), dimensions={0}, to_apply=add
rb = f32[] reduce(b, zero), dimensions={0}, to_apply=add
ROOT t = (f32[], f32[]) tuple(ra, rb)""", ADD)
    m = module(text)
    scheduled = Schedule().run(m).module
    assert [i.name for i in scheduled.entry] != [i.name for i in m.entry]
    with pytest.raises(ValueError):
        run_in_arena(scheduled, assign_buffers(m), [f32(64)])
    # Each with its own assignment, both orders give the same sums.
    x = f32(64)
    want = [np.sum(np.exp(x)), np.sum(np.tanh(x))]
    for mod in (m, scheduled):
        got = run_in_arena(mod, assign_buffers(mod), [x])
        np.testing.assert_allclose(got, want, rtol=2e-5)


def test_a_wrong_number_of_arguments_is_a_type_error():
    m = module(TWO_LIVE)
    a = assign_buffers(m)
    with pytest.raises(TypeError):
        run_in_arena(m, a, [])
    with pytest.raises(TypeError):
        run_in_arena(m, a, [f32(16), f32(16)])


# ---------------------------------------------------------------------------------------------
# From NumPy: Exploration.run goes through the arena.


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def two_dots(x, w):
    t = np.tanh(x)
    return np.exp(t @ w + 1) @ w + t


def mlp(x, w1, w2):
    h = np.maximum(x @ w1, 0)
    return np.tanh(h) @ w2, h.sum()


PROGRAMS = [
    (lambda x, y, z: np.sum(x + y * z), (f32(16), f32(16, seed=1), f32(16, seed=2))),
    (softmax, (f32(4, 8),)),
    (two_dots, (f32(4, 8), f32(8, 8, seed=1))),
    (lambda x, w: np.tanh(x) @ w + 1, (f32(4, 8), f32(8, 16, seed=1))),
    (mlp, (f32(4, 8), f32(8, 16, seed=1), f32(16, 3, seed=2))),
]


@pytest.mark.parametrize("f, args", PROGRAMS)
def test_explored_programs_run_in_the_arena_and_match_numpy(f, args, monkeypatch):
    ex = xe.explore(f, *args)
    calls = []

    def spy(module, assignment, run_args):
        calls.append(assignment)
        return run_in_arena(module, assignment, run_args)

    monkeypatch.setattr(interpreted, "run_in_arena", spy)
    fresh = [np.random.default_rng(7).standard_normal(np.shape(a)).astype(np.float32)
             for a in args]
    got = ex.run(*[a.copy() for a in fresh])
    want = f(*[a.copy() for a in fresh])
    assert calls == [ex.buffers]
    got_leaves = got if isinstance(got, tuple) else (got,)
    want_leaves = want if isinstance(want, tuple) else (want,)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)


def test_some_explored_programs_have_temporaries():
    # two_dots: tanh(x) f32[4,8] (128 bytes) and exp(t @ w + 1) f32[4,8] (128 bytes), live
    # together at the second dot.
    ex = xe.explore(two_dots, f32(4, 8), f32(8, 8, seed=1))
    assert ex.buffers.peak_bytes == 256


def test_in_place_update_of_an_input_reaches_the_caller():
    def f(x):
        x += 1
        return x * 2

    ex = xe.explore(f, np.arange(4, dtype=np.float32))
    x = np.array([10, 11, 12, 13], np.float32)
    out = ex.run(x)
    np.testing.assert_array_equal(x, [11, 12, 13, 14])  # as NumPy leaves it
    np.testing.assert_array_equal(out, [22, 24, 26, 28])
    assert not np.shares_memory(out, x)
    y = np.array([10, 11, 12, 13], np.float32)
    np.testing.assert_array_equal(f(y), out)
    np.testing.assert_array_equal(y, x)
    assert ex.check()
