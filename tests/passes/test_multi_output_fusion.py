"""Multi-output fusion: HLO text in (kernels, as the fusion pass leaves them), HLO text out.

Siblings reading the same large operand over loops of the same shape become one kernel with a
tuple of results; a value computed both inside a kernel and on its own (or read element by
element) becomes an extra output. Refused: different loop shapes, dot (kOutput) kernels, and
merges that would make a kernel wait for itself through a third one.
"""
from __future__ import annotations

from xla_explorer.passes.fusion import Fusion
from xla_explorer.passes.multi_output_fusion import MultiOutputFusion

from .hlo_pass_helpers import ADD, MAX, MIN, SUM_AND_SUMSQ, hlo, run_pass

MERGES = ("siblings", "producer-consumer")


def module_text(module) -> str:
    """The printed module below its `HloModule ...` line: every computation, ENTRY last."""
    return module.to_text().split("\n", 2)[2]


def decisions(result) -> list[tuple[str, str]]:
    return [(d.rule, d.reason) for d in result.notes]


def assert_unchanged(before, result):
    assert not result.changed and result.module is before
    assert not any(n.rule in MERGES for n in result.notes)


def test_sum_and_sum_of_squares_become_one_kernel_with_two_results():
    _, result = run_pass(MultiOutputFusion(), hlo("""\
x = f32[16] parameter(0)
s = f32[] fusion(x), kind=kInput, calls=fused_sum
ss = f32[] fusion(x), kind=kInput, calls=fused_sumsq
ROOT t = (f32[], f32[]) tuple(s, ss)""", SUM_AND_SUMSQ))
    # x is read once; the two equal zero constants are one; the results come out of a tuple.
    assert module_text(result.module) == ADD + """

fused_computation.2 {
  param_0.3 = f32[16] parameter(0)
  sum.zero = f32[] constant(0)
  sum.r = f32[] reduce(param_0.3, sum.zero), dimensions={0}, to_apply=add
  sumsq.sq = f32[16] multiply(param_0.3, param_0.3)
  sumsq.r = f32[] reduce(sumsq.sq, sum.zero), dimensions={0}, to_apply=add
  ROOT tuple.4 = (f32[], f32[]) tuple(sum.r, sumsq.r)
}

ENTRY main {
  x = f32[16] parameter(0)
  multi_output_fusion.1 = (f32[], f32[]) fusion(x), kind=kInput, calls=fused_computation.2
  get-tuple-element.5 = f32[] get-tuple-element(multi_output_fusion.1), index=0
  get-tuple-element.6 = f32[] get-tuple-element(multi_output_fusion.1), index=1
  ROOT t = (f32[], f32[]) tuple(get-tuple-element.5, get-tuple-element.6)
}
"""
    assert decisions(result) == [
        ("siblings", "multi-output fusion: the fusion rooted at sum.r and the fusion rooted at "
                     "sumsq.r both read x (f32[16]) over loops of the same shape; one kernel "
                     "reads it once and writes both results"),
    ]
    note = result.notes[0]
    assert note.pass_name == "multi-output-fusion" and note.fused


def test_min_and_max_of_the_same_rows_become_one_kernel():
    _, result = run_pass(MultiOutputFusion(), hlo("""\
x = f32[4,8] parameter(0)
lo = f32[4] fusion(x), kind=kInput, calls=fused_min
hi = f32[4] fusion(x), kind=kInput, calls=fused_max
ROOT t = (f32[4], f32[4]) tuple(lo, hi)""", MIN + "\n\n" + MAX + """

fused_min {
  min.x = f32[4,8] parameter(0)
  min.init = f32[] constant(inf)
  ROOT min.r = f32[4] reduce(min.x, min.init), dimensions={1}, to_apply=min
}

fused_max {
  max.x = f32[4,8] parameter(0)
  max.init = f32[] constant(-inf)
  ROOT max.r = f32[4] reduce(max.x, max.init), dimensions={1}, to_apply=max
}"""))
    assert module_text(result.module) == MIN + "\n\n" + MAX + """

fused_computation.2 {
  param_0.3 = f32[4,8] parameter(0)
  min.init = f32[] constant(inf)
  min.r = f32[4] reduce(param_0.3, min.init), dimensions={1}, to_apply=min
  max.init = f32[] constant(-inf)
  max.r = f32[4] reduce(param_0.3, max.init), dimensions={1}, to_apply=max
  ROOT tuple.4 = (f32[4], f32[4]) tuple(min.r, max.r)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  multi_output_fusion.1 = (f32[4], f32[4]) fusion(x), kind=kInput, calls=fused_computation.2
  get-tuple-element.5 = f32[4] get-tuple-element(multi_output_fusion.1), index=0
  get-tuple-element.6 = f32[4] get-tuple-element(multi_output_fusion.1), index=1
  ROOT t = (f32[4], f32[4]) tuple(get-tuple-element.5, get-tuple-element.6)
}
"""
    assert decisions(result) == [
        ("siblings", "multi-output fusion: the fusion rooted at min.r and the fusion rooted at "
                     "max.r both read x (f32[4,8]) over loops of the same shape; one kernel "
                     "reads it once and writes both results"),
    ]


ADAM = hlo("""\
p = f32[16] parameter(0)
g = f32[16] parameter(1)
m = f32[16] parameter(2)
v = f32[16] parameter(3)
b1 = f32[] constant(0.9)
b1b = f32[16] broadcast(b1), dimensions={}
c1 = f32[] constant(0.1)
c1b = f32[16] broadcast(c1), dimensions={}
mm = f32[16] multiply(b1b, m)
gm = f32[16] multiply(c1b, g)
m2 = f32[16] add(mm, gm)
b2 = f32[] constant(0.999)
b2b = f32[16] broadcast(b2), dimensions={}
c2 = f32[] constant(0.001)
c2b = f32[16] broadcast(c2), dimensions={}
vv = f32[16] multiply(b2b, v)
gg = f32[16] multiply(g, g)
gv = f32[16] multiply(c2b, gg)
v2 = f32[16] add(vv, gv)
lr = f32[] constant(0.01)
lrb = f32[16] broadcast(lr), dimensions={}
step = f32[16] multiply(lrb, m2)
sv = f32[16] sqrt(v2)
eps = f32[] constant(1e-08)
epsb = f32[16] broadcast(eps), dimensions={}
den = f32[16] add(sv, epsb)
upd = f32[16] divide(step, den)
p2 = f32[16] subtract(p, upd)
ROOT t = (f32[16], f32[16], f32[16]) tuple(p2, m2, v2)""")


def test_the_three_results_of_an_adam_step_become_one_kernel():
    _, fused = run_pass(Fusion(), ADAM)
    # Fusion alone: the new moments m2 and v2 are outputs, written to memory anyway, and each
    # reads two arrays, so the parameter update reads them rather than computing them again
    # (XLA's globally unfusible producers): three kernels.
    kinds = [i.attr("kind") for i in fused.module.entry.instructions if i.opcode == "fusion"]
    assert kinds == ["kLoop", "kLoop", "kLoop"]
    _, result = run_pass(MultiOutputFusion(), fused.module.to_text())
    # One kernel reads p, g, m and v once and writes all three; each value is computed once.
    body = module_text(result.module)
    assert body == """\
fused_computation.15 {
  param_0.16 = f32[16] parameter(0)
  param_1.17 = f32[16] parameter(1)
  param_2.18 = f32[16] parameter(2)
  param_3.19 = f32[16] parameter(3)
  b1 = f32[] constant(0.9)
  b1b = f32[16] broadcast(b1), dimensions={}
  c1 = f32[] constant(0.1)
  c1b = f32[16] broadcast(c1), dimensions={}
  mm = f32[16] multiply(b1b, param_0.16)
  gm = f32[16] multiply(c1b, param_1.17)
  m2 = f32[16] add(mm, gm)
  b2 = f32[] constant(0.999)
  b2b = f32[16] broadcast(b2), dimensions={}
  c2 = f32[] constant(0.001)
  c2b = f32[16] broadcast(c2), dimensions={}
  vv = f32[16] multiply(b2b, param_2.18)
  gg = f32[16] multiply(param_1.17, param_1.17)
  gv = f32[16] multiply(c2b, gg)
  v2 = f32[16] add(vv, gv)
  lr = f32[] constant(0.01)
  lrb = f32[16] broadcast(lr), dimensions={}
  step = f32[16] multiply(lrb, m2)
  sv = f32[16] sqrt(v2)
  eps = f32[] constant(1e-08)
  epsb = f32[16] broadcast(eps), dimensions={}
  den = f32[16] add(sv, epsb)
  upd = f32[16] divide(step, den)
  p2 = f32[16] subtract(param_3.19, upd)
  ROOT tuple.20 = (f32[16], f32[16], f32[16]) tuple(v2, m2, p2)
}

ENTRY main {
  p = f32[16] parameter(0)
  g = f32[16] parameter(1)
  m = f32[16] parameter(2)
  v = f32[16] parameter(3)
  multi_output_fusion.14 = (f32[16], f32[16], f32[16]) fusion(m, g, v, p), kind=kLoop, calls=fused_computation.15
  get-tuple-element.21 = f32[16] get-tuple-element(multi_output_fusion.14), index=0
  get-tuple-element.22 = f32[16] get-tuple-element(multi_output_fusion.14), index=1
  get-tuple-element.23 = f32[16] get-tuple-element(multi_output_fusion.14), index=2
  ROOT t = (f32[16], f32[16], f32[16]) tuple(get-tuple-element.23, get-tuple-element.22, get-tuple-element.21)
}
"""
    assert ".clone" not in body
    assert decisions(result) == [
        ("producer-consumer", "multi-output fusion: the fusion rooted at p2 reads m2 element by "
                              "element; one kernel computes both, with the fusion rooted at "
                              "m2's results as extra outputs, instead of writing them and "
                              "reading them back"),
        ("producer-consumer", "multi-output fusion: the fusion rooted at p2 reads v2 element by "
                              "element; one kernel computes both, with the fusion rooted at "
                              "v2's results as extra outputs, instead of writing them and "
                              "reading them back"),
    ]


def test_an_expensive_value_read_by_two_kernels_is_computed_once_in_one_kernel():
    _, fused = run_pass(Fusion(), hlo("""\
x = f32[16] parameter(0)
e = f32[16] exponential(x)
zero = f32[] constant(0)
r1 = f32[] reduce(e, zero), dimensions={0}, to_apply=add
sq = f32[16] multiply(e, e)
r2 = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
ROOT t = (f32[], f32[]) tuple(r1, r2)""", ADD))
    # Fusion would not copy the exponential into both reductions; it is a kernel of its own.
    assert fused.module.entry.get("e").opcode == "exponential"
    _, result = run_pass(MultiOutputFusion(), fused.module.to_text())
    assert result.module.to_text().count("exponential(") == 1
    # No one outside reads e any more, so it is not an output: the kernel writes two scalars.
    assert module_text(result.module) == ADD + """

fused_computation.10 {
  param_0.11 = f32[16] parameter(0)
  e = f32[16] exponential(param_0.11)
  zero = f32[] constant(0)
  r1 = f32[] reduce(e, zero), dimensions={0}, to_apply=add
  sq = f32[16] multiply(e, e)
  r2 = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
  ROOT tuple.12 = (f32[], f32[]) tuple(r1, r2)
}

ENTRY main {
  x = f32[16] parameter(0)
  multi_output_fusion.9 = (f32[], f32[]) fusion(x), kind=kInput, calls=fused_computation.10
  get-tuple-element.13 = f32[] get-tuple-element(multi_output_fusion.9), index=0
  get-tuple-element.14 = f32[] get-tuple-element(multi_output_fusion.9), index=1
  ROOT t = (f32[], f32[]) tuple(get-tuple-element.13, get-tuple-element.14)
}
"""
    assert [rule for rule, _ in decisions(result)] == ["producer-consumer", "producer-consumer"]
    assert decisions(result)[0][1] == (
        "multi-output fusion: the fusion rooted at r1 reads e element by element; one kernel "
        "computes both, with e's results as extra outputs, instead of writing them and reading "
        "them back")


def test_kernels_over_loops_of_different_shapes_are_not_merged():
    # Both read x, but one loops over [4,8] (a reduction's input), the other over [8,4].
    before, result = run_pass(MultiOutputFusion(), hlo("""\
x = f32[4,8] parameter(0)
s = f32[] fusion(x), kind=kInput, calls=fused_sum
e = f32[8,4] fusion(x), kind=kLoop, calls=fused_exp_t
ROOT out = (f32[], f32[8,4]) tuple(s, e)""", ADD + """

fused_sum {
  sum.x = f32[4,8] parameter(0)
  sum.zero = f32[] constant(0)
  ROOT sum.r = f32[] reduce(sum.x, sum.zero), dimensions={0,1}, to_apply=add
}

fused_exp_t {
  exp.x = f32[4,8] parameter(0)
  exp.t = f32[8,4] transpose(exp.x), dimensions={1,0}
  ROOT exp.e = f32[8,4] exponential(exp.t)
}"""))
    assert_unchanged(before, result)


def test_a_dot_kernel_is_not_merged():
    # Same operand, same [8,4] loop; but BLAS writes the dot's result, not a fused loop.
    before, result = run_pass(MultiOutputFusion(), hlo("""\
x = f32[8,4] parameter(0)
w = f32[4,4] parameter(1)
dense = f32[8,4] fusion(x, w), kind=kOutput, calls=fused_dense
e = f32[8,4] fusion(x), kind=kLoop, calls=fused_exp
ROOT out = (f32[8,4], f32[8,4]) tuple(dense, e)""", """\
fused_dense {
  dense.x = f32[8,4] parameter(0)
  dense.w = f32[4,4] parameter(1)
  dense.d = f32[8,4] dot(dense.x, dense.w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dense.zero = f32[] constant(0)
  dense.zb = f32[8,4] broadcast(dense.zero), dimensions={}
  ROOT dense.relu = f32[8,4] maximum(dense.d, dense.zb)
}

fused_exp {
  exp.x = f32[8,4] parameter(0)
  exp.n = f32[8,4] negate(exp.x)
  ROOT exp.e = f32[8,4] exponential(exp.n)
}"""))
    assert_unchanged(before, result)


def test_siblings_are_not_merged_when_one_needs_the_other_through_a_third_kernel():
    # a and b both read x, but b reads c, which reads a: one kernel for a and b would have to
    # run both before and after the custom-call.
    before, result = run_pass(MultiOutputFusion(), hlo("""\
x = f32[16] parameter(0)
a = f32[16] fusion(x), kind=kLoop, calls=fused_a
c = f32[16] custom-call(a), custom_call_target="numpy.sort", backend_config="axis=0"
b = f32[16] fusion(x, c), kind=kLoop, calls=fused_b
ROOT out = (f32[16], f32[16]) tuple(a, b)""", """\
fused_a {
  a.x = f32[16] parameter(0)
  a.n = f32[16] negate(a.x)
  ROOT a.e = f32[16] exponential(a.n)
}

fused_b {
  b.x = f32[16] parameter(0)
  b.c = f32[16] parameter(1)
  b.m = f32[16] multiply(b.x, b.c)
  ROOT b.s = f32[16] add(b.m, b.x)
}"""))
    assert_unchanged(before, result)
    assert decisions(result) == [("refused", (
        "not merged the fusion rooted at a.e and the fusion rooted at b.s (both read x): the "
        "fusion rooted at b.s needs a result of the fusion rooted at a.e, so one kernel for "
        "both would wait for itself"))]


def test_kernels_sharing_only_a_scalar_are_left_alone():
    # Both broadcast the scalar s, but each loops over its own array: nothing is read twice.
    before, result = run_pass(MultiOutputFusion(), hlo("""\
x = f32[16] parameter(0)
y = f32[16] parameter(1)
s = f32[] parameter(2)
a = f32[16] fusion(s, x), kind=kLoop, calls=fused_a
b = f32[16] fusion(s, y), kind=kLoop, calls=fused_b
ROOT out = (f32[16], f32[16]) tuple(a, b)""", """\
fused_a {
  a.s = f32[] parameter(0)
  a.x = f32[16] parameter(1)
  a.sb = f32[16] broadcast(a.s), dimensions={}
  ROOT a.m = f32[16] multiply(a.x, a.sb)
}

fused_b {
  b.s = f32[] parameter(0)
  b.y = f32[16] parameter(1)
  b.sb = f32[16] broadcast(b.s), dimensions={}
  ROOT b.a = f32[16] add(b.y, b.sb)
}"""))
    assert_unchanged(before, result)
    assert result.notes == ()


def test_a_module_with_one_kernel_is_unchanged():
    before, result = run_pass(MultiOutputFusion(), hlo("""\
x = f32[16] parameter(0)
ROOT e = f32[16] exponential(x)"""))
    assert_unchanged(before, result)
    assert result.notes == ()


def _two_sums(n: int) -> str:
    """Kernel a sums p0..p(n-1); kernel b adds a to p(n)..p(2n-1); both are outputs."""
    params = [f"p{i} = f32[4] parameter({i})" for i in range(2 * n)]

    def chain(prefix, count):
        body = [f"{prefix}.q{k} = f32[4] parameter({k})" for k in range(count)]
        acc = f"{prefix}.q0"
        for k in range(1, count):
            body.append(f"{prefix}.s{k} = f32[4] add({acc}, {prefix}.q{k})")
            acc = f"{prefix}.s{k}"
        body[-1] = "ROOT " + body[-1]
        return "\n  ".join(body)

    a_args = ", ".join(f"p{i}" for i in range(n))
    b_args = ", ".join(f"p{i}" for i in range(n, 2 * n))
    return hlo("\n".join(params + [
        f"a = f32[4] fusion({a_args}), kind=kLoop, calls=fa",
        f"b = f32[4] fusion(a, {b_args}), kind=kLoop, calls=fb",
        "ROOT t = (f32[4], f32[4]) tuple(a, b)"]),
        f"fa {{\n  {chain('A', n)}\n}}\n\nfb {{\n  {chain('B', n + 1)}\n}}")


def test_a_producer_consumer_merge_up_to_64_operands_and_outputs():
    # 31 + 31 parameters and 2 outputs: 64, the limit (a stops being an operand of b's kernel).
    _, result = run_pass(MultiOutputFusion(), _two_sums(31))
    assert result.changed
    (kernel,) = [i for i in result.module.entry.instructions if i.opcode == "fusion"]
    assert len(kernel.operands) == 62 and len(kernel.shape.elements) == 2


def test_a_producer_consumer_merge_past_64_is_refused_with_its_reason():
    # 32 + 32 parameters and 2 outputs: 66.
    before, result = run_pass(MultiOutputFusion(), _two_sums(32))
    assert_unchanged(before, result)
    assert decisions(result) == [("refused", (
        "not merged the fusion rooted at A.s31 and the fusion rooted at B.s32 (the fusion rooted "
        "at B.s32 reads A.s31): the kernel would have 66 operands and outputs (the limit is 64)"))]
