"""Instruction fusion: HLO text in, HLO text out, and the sentence behind every decision.

One test per rule (loop, input, output and row fusion, copying a cheap producer) and one per
refusal (an expensive producer read twice, a reduction's kernel boundary, a dot's operands, a
dot read twice, a dot into a reduction, a custom-call, the operand cap, a row-fusion cycle,
a value a kernel would compute too many times per element, an expensive one read at two
indices), and a constant the root tuple shares with a kernel.
"""
from __future__ import annotations

from xla_explorer.passes.fusion import MAX_INDEX_EVALUATIONS, MAX_OPERANDS_AND_OUTPUTS, Fusion
from xla_explorer.passes.kinds import Decision

from .hlo_pass_helpers import ADD, MAX, entry_body, hlo, run_pass


def module_text(module) -> str:
    """The printed module below its `HloModule ...` line: every computation, ENTRY last."""
    return module.to_text().split("\n", 2)[2]


def decisions(result) -> list[tuple[str, str]]:
    return [(d.rule, d.reason) for d in result.notes]


def fusions(module) -> list:
    return [i for i in module.entry.instructions if i.opcode == "fusion"]


# -- what fuses ------------------------------------------------------------------------------

def test_elementwise_ops_and_data_movement_become_one_loop_fusion():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[4,8] parameter(0)
y = f32[8,4] parameter(1)
v = f32[8] parameter(2)
t = f32[4,8] transpose(y), dimensions={1,0}
b = f32[4,8] broadcast(v), dimensions={1}
s = f32[4,8] add(x, t)
m = f32[4,8] multiply(s, b)
zero = f32[] constant(0)
zb = f32[4,8] broadcast(zero), dimensions={}
c = pred[4,8] compare(m, zb), direction=GT
sel = f32[4,8] select(c, m, zb)
r = f32[32] reshape(sel)
sl = f32[16] slice(r), slice={[0:16]}
io = s32[16] iota(), iota_dimension=0
cv = f32[16] convert(io)
cat = f32[32] concatenate(sl, cv), dimensions={0}
ROOT n = f32[32] negate(cat)"""))
    assert result.changed
    # One kernel, one loop over the output; its operands in the order its body first reads them.
    assert module_text(result.module) == """\
fused_computation.2 {
  param_0.3 = f32[8,4] parameter(0)
  param_1.4 = f32[8] parameter(1)
  param_2.5 = f32[4,8] parameter(2)
  t = f32[4,8] transpose(param_0.3), dimensions={1,0}
  b = f32[4,8] broadcast(param_1.4), dimensions={1}
  s = f32[4,8] add(param_2.5, t)
  m = f32[4,8] multiply(s, b)
  zero = f32[] constant(0)
  zb = f32[4,8] broadcast(zero), dimensions={}
  c = pred[4,8] compare(m, zb), direction=GT
  sel = f32[4,8] select(c, m, zb)
  r = f32[32] reshape(sel)
  sl = f32[16] slice(r), slice={[0:16]}
  io = s32[16] iota(), iota_dimension=0
  cv = f32[16] convert(io)
  cat = f32[32] concatenate(sl, cv), dimensions={0}
  ROOT n = f32[32] negate(cat)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  y = f32[8,4] parameter(1)
  v = f32[8] parameter(2)
  ROOT concatenate_negate_fusion.1 = f32[32] fusion(y, v, x), kind=kLoop, calls=fused_computation.2
}
"""
    said = decisions(result)
    assert all(rule == "fused" for rule, _ in said)
    # Every non-parameter instruction but the root was pulled in, each exactly once.
    assert sorted(d.producer for d in result.notes) == sorted(
        ["cat", "sl", "cv", "r", "io", "sel", "c", "m", "zb", "s", "b", "zero", "t"])
    for sentence in [
        "fused t into s: data movement, done by index arithmetic, single consumer",
        "fused b into m: data movement, done by index arithmetic, single consumer",
        "fused r into sl: data movement, done by index arithmetic, single consumer",
        "fused sl into cat: data movement, done by index arithmetic, single consumer",
        "fused cat into n: data movement, done by index arithmetic, single consumer",
        "fused c into sel: element-wise, single consumer",
        "fused cv into cat: element-wise, single consumer",
        "fused zero into zb: a scalar constant, single consumer",
    ]:
        assert ("fused", sentence) in said


def test_a_reduction_with_its_elementwise_producers_is_one_input_fusion():
    # sum(x + y*z): XLA's CPU backend launches three kernels for it; input fusion makes one.
    _, result = run_pass(Fusion(), hlo("""\
x = f32[1000] parameter(0)
y = f32[1000] parameter(1)
z = f32[1000] parameter(2)
yz = f32[1000] multiply(y, z)
s = f32[1000] add(x, yz)
zero = f32[] constant(0)
ROOT r = f32[] reduce(s, zero), dimensions={0}, to_apply=add""", ADD))
    assert module_text(result.module) == ADD + """

fused_computation.2 {
  param_0.3 = f32[1000] parameter(0)
  param_1.4 = f32[1000] parameter(1)
  param_2.5 = f32[1000] parameter(2)
  yz = f32[1000] multiply(param_0.3, param_1.4)
  s = f32[1000] add(param_2.5, yz)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(s, zero), dimensions={0}, to_apply=add
}

ENTRY main {
  x = f32[1000] parameter(0)
  y = f32[1000] parameter(1)
  z = f32[1000] parameter(2)
  ROOT add_reduce_fusion.1 = f32[] fusion(y, z, x), kind=kInput, calls=fused_computation.2
}
"""
    assert decisions(result) == [
        ("fused", "fused s into r: element-wise, single consumer"),
        ("fused", "fused zero into r: a scalar constant, single consumer"),
        ("fused", "fused yz into s: element-wise, single consumer"),
    ]
    first = result.notes[0]
    assert isinstance(first, Decision)
    assert (first.producer, first.consumer, first.fused) == ("s", "r", True)
    assert first.instructions == ("s", "r") and first.pass_name == "fusion"


def test_a_dot_with_a_bias_add_and_relu_is_one_output_fusion():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[8,16] parameter(0)
w = f32[16,4] parameter(1)
b = f32[4] parameter(2)
d = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
bb = f32[8,4] broadcast(b), dimensions={1}
a = f32[8,4] add(d, bb)
zero = f32[] constant(0)
zb = f32[8,4] broadcast(zero), dimensions={}
ROOT relu = f32[8,4] maximum(a, zb)"""))
    assert module_text(result.module) == """\
fused_computation.2 {
  param_0.3 = f32[8,16] parameter(0)
  param_1.4 = f32[16,4] parameter(1)
  param_2.5 = f32[4] parameter(2)
  d = f32[8,4] dot(param_0.3, param_1.4), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[8,4] broadcast(param_2.5), dimensions={1}
  a = f32[8,4] add(d, bb)
  zero = f32[] constant(0)
  zb = f32[8,4] broadcast(zero), dimensions={}
  ROOT relu = f32[8,4] maximum(a, zb)
}

ENTRY main {
  x = f32[8,16] parameter(0)
  w = f32[16,4] parameter(1)
  b = f32[4] parameter(2)
  ROOT add_maximum_fusion.1 = f32[8,4] fusion(x, w, b), kind=kOutput, calls=fused_computation.2
}
"""
    assert ("fused", "fused d into a: a dot with an element-wise epilogue (output fusion), "
            "single consumer") in decisions(result)
    assert all(d.fused for d in result.notes)


SOFTMAX = hlo("""\
x = f32[4,8] parameter(0)
ninf = f32[] constant(-inf)
m = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max
mb = f32[4,8] broadcast(m), dimensions={0}
sub = f32[4,8] subtract(x, mb)
e = f32[4,8] exponential(sub)
zero = f32[] constant(0)
s = f32[4] reduce(e, zero), dimensions={1}, to_apply=add
sb = f32[4,8] broadcast(s), dimensions={0}
ROOT out = f32[4,8] divide(e, sb)""", ADD + "\n\n" + MAX)


def test_softmax_over_rows_is_one_row_fusion():
    _, result = run_pass(Fusion(), SOFTMAX)
    # Classic fusion stops at each reduction (and at the exponential, read twice); row fusion
    # then joins the three kernels, which all work on the same 4 rows of 8.
    assert module_text(result.module) == ADD + "\n\n" + MAX + """

fused_computation.2 {
  param_0.3 = f32[4,8] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[4] reduce(param_0.3, ninf), dimensions={1}, to_apply=max
  mb = f32[4,8] broadcast(m), dimensions={0}
  sub = f32[4,8] subtract(param_0.3, mb)
  e = f32[4,8] exponential(sub)
  zero = f32[] constant(0)
  s = f32[4] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[4,8] broadcast(s), dimensions={0}
  ROOT out = f32[4,8] divide(e, sb)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  ROOT row_fusion.1 = f32[4,8] fusion(x), kind=kInput, calls=fused_computation.2, backend_config={"schedule":"row"}
}
"""
    said = decisions(result)
    assert ("refused", "not fused m into mb: m is a reduction, and mb needs all of its result "
            "first (a kernel boundary, unless row fusion joins them)") in said
    rows = "both work on rows of [4, 8] (4 rows of [8]), reducing the trailing axes and " \
           "broadcasting back along the same rows"
    assert [s for rule, s in said if rule == "row-fused"] == [
        f"row fusion: joined the fusion rooted at s and the fusion rooted at out: {rows}",
        f"row fusion: joined the fusion rooted at e and the fusion rooted at out: {rows}",
        f"row fusion: joined the fusion rooted at m and the fusion rooted at out: {rows}",
    ]


def test_layernorm_is_one_row_fusion():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[4,8] parameter(0)
gamma = f32[8] parameter(1)
zero = f32[] constant(0)
n = f32[] constant(8)
sx = f32[4] reduce(x, zero), dimensions={1}, to_apply=add
nb = f32[4] broadcast(n), dimensions={}
mean = f32[4] divide(sx, nb)
meanb = f32[4,8] broadcast(mean), dimensions={0}
c = f32[4,8] subtract(x, meanb)
c2 = f32[4,8] multiply(c, c)
sc = f32[4] reduce(c2, zero), dimensions={1}, to_apply=add
var = f32[4] divide(sc, nb)
eps = f32[] constant(1e-05)
epsb = f32[4] broadcast(eps), dimensions={}
ve = f32[4] add(var, epsb)
inv = f32[4] rsqrt(ve)
invb = f32[4,8] broadcast(inv), dimensions={0}
y = f32[4,8] multiply(c, invb)
gb = f32[4,8] broadcast(gamma), dimensions={1}
ROOT out = f32[4,8] multiply(y, gb)""", ADD))
    # The centred value c, copied while the kernels were apart, is computed once in the end.
    assert module_text(result.module) == ADD + """

fused_computation.2 {
  param_0.3 = f32[4,8] parameter(0)
  param_1.4 = f32[8] parameter(1)
  zero = f32[] constant(0)
  n = f32[] constant(8)
  sx = f32[4] reduce(param_0.3, zero), dimensions={1}, to_apply=add
  nb = f32[4] broadcast(n), dimensions={}
  mean = f32[4] divide(sx, nb)
  meanb = f32[4,8] broadcast(mean), dimensions={0}
  c = f32[4,8] subtract(param_0.3, meanb)
  c2 = f32[4,8] multiply(c, c)
  sc = f32[4] reduce(c2, zero), dimensions={1}, to_apply=add
  var = f32[4] divide(sc, nb)
  eps = f32[] constant(1e-05)
  epsb = f32[4] broadcast(eps), dimensions={}
  ve = f32[4] add(var, epsb)
  inv = f32[4] rsqrt(ve)
  invb = f32[4,8] broadcast(inv), dimensions={0}
  y = f32[4,8] multiply(c, invb)
  gb = f32[4,8] broadcast(param_1.4), dimensions={1}
  ROOT out = f32[4,8] multiply(y, gb)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  gamma = f32[8] parameter(1)
  ROOT row_fusion.1 = f32[4,8] fusion(x, gamma), kind=kInput, calls=fused_computation.2, backend_config={"schedule":"row"}
}
"""
    rows = "both work on rows of [4, 8] (4 rows of [8]), reducing the trailing axes and " \
           "broadcasting back along the same rows"
    assert [s for rule, s in decisions(result) if rule == "row-fused"] == [
        f"row fusion: joined the fusion rooted at sc and the fusion rooted at out: {rows}",
        f"row fusion: joined the fusion rooted at sx and the fusion rooted at out: {rows}",
    ]


def test_a_cheap_producer_of_one_array_read_by_two_kernels_is_copied_into_both():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[16] parameter(0)
a = f32[16] negate(x)
zero = f32[] constant(0)
r1 = f32[] reduce(a, zero), dimensions={0}, to_apply=add
sq = f32[16] multiply(a, a)
r2 = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
ROOT t = (f32[], f32[], f32[16]) tuple(r1, r2, a)""", ADD))
    # `a` is also an output, so it stays as itself; each reduction recomputes its own copy
    # from x rather than reading a back: the same one array read, and no wait for a.
    assert module_text(result.module) == ADD + """

fused_computation.2 {
  param_0.3 = f32[16] parameter(0)
  a.clone.4 = f32[16] negate(param_0.3)
  zero.clone.5 = f32[] constant(0)
  ROOT r1 = f32[] reduce(a.clone.4, zero.clone.5), dimensions={0}, to_apply=add
}

fused_computation.7 {
  param_0.8 = f32[16] parameter(0)
  a.clone.9 = f32[16] negate(param_0.8)
  zero.clone.10 = f32[] constant(0)
  sq = f32[16] multiply(a.clone.9, a.clone.9)
  ROOT r2 = f32[] reduce(sq, zero.clone.10), dimensions={0}, to_apply=add
}

ENTRY main {
  x = f32[16] parameter(0)
  a = f32[16] negate(x)
  negate_reduce_fusion.1 = f32[] fusion(x), kind=kInput, calls=fused_computation.2
  multiply_reduce_fusion.6 = f32[] fusion(x), kind=kInput, calls=fused_computation.7
  ROOT t = (f32[], f32[], f32[16]) tuple(negate_reduce_fusion.1, multiply_reduce_fusion.6, a)
}
"""
    assert decisions(result) == [
        ("fused", "fused sq into r2: element-wise, single consumer"),
        ("fused", "fused zero into r2: a scalar constant and cheap, so copied into this kernel "
                  "(r1 also reads it)"),
        ("fused", "fused a into sq: element-wise and cheap, so copied into this kernel "
                  "(r1 and t also read it)"),
        ("fused", "fused a into r1: element-wise and cheap, so copied into this kernel "
                  "(t also reads it)"),
        ("fused", "fused zero into r1: a scalar constant, single consumer"),
    ]


def test_a_producer_of_two_arrays_written_anyway_is_read_not_copied():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[16] parameter(0)
y = f32[16] parameter(1)
a = f32[16] add(x, y)
zero = f32[] constant(0)
r1 = f32[] reduce(a, zero), dimensions={0}, to_apply=add
sq = f32[16] multiply(a, a)
r2 = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
ROOT t = (f32[], f32[], f32[16]) tuple(r1, r2, a)""", ADD))
    # `a` is an output: it is written to memory whatever the reductions do. A copy in each
    # would read x and y again where reading a reads one array (XLA's globally unfusible
    # producers), so both read a.
    assert module_text(result.module) == ADD + """

fused_computation.2 {
  param_0.3 = f32[16] parameter(0)
  zero.clone.4 = f32[] constant(0)
  ROOT r1 = f32[] reduce(param_0.3, zero.clone.4), dimensions={0}, to_apply=add
}

fused_computation.6 {
  param_0.7 = f32[16] parameter(0)
  zero.clone.8 = f32[] constant(0)
  sq = f32[16] multiply(param_0.7, param_0.7)
  ROOT r2 = f32[] reduce(sq, zero.clone.8), dimensions={0}, to_apply=add
}

ENTRY main {
  x = f32[16] parameter(0)
  y = f32[16] parameter(1)
  a = f32[16] add(x, y)
  reduce_fusion.1 = f32[] fusion(a), kind=kInput, calls=fused_computation.2
  multiply_reduce_fusion.5 = f32[] fusion(a), kind=kInput, calls=fused_computation.6
  ROOT t = (f32[], f32[], f32[16]) tuple(reduce_fusion.1, multiply_reduce_fusion.5, a)
}
"""
    why = ("is written to memory anyway ({}) and reads 2 arrays; {} reads its result "
           "instead of reading them all again (XLA copies only producers that read one array)")
    assert decisions(result) == [
        ("fused", "fused sq into r2: element-wise, single consumer"),
        ("fused", "fused zero into r2: a scalar constant and cheap, so copied into this kernel "
                  "(r1 also reads it)"),
        ("refused", "not fused a into sq: a " + why.format("r1 and t also read it", "sq")),
        ("refused", "not fused a into r1: a " + why.format("the kernel of r2 and t also read it",
                                                           "r1")),
        ("fused", "fused zero into r1: a scalar constant, single consumer"),
    ]


def test_a_broadcast_read_by_two_kernels_is_copied_into_both():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[16] parameter(0)
y = f32[16] parameter(1)
s = f32[] parameter(2)
sb = f32[16] broadcast(s), dimensions={}
e1 = f32[16] exponential(x)
e2 = f32[16] log(y)
m1 = f32[16] multiply(e1, sb)
m2 = f32[16] multiply(e2, sb)
ROOT t = (f32[16], f32[16]) tuple(m1, m2)"""))
    # Both kernels read the scalar s; neither reads a 16-element broadcast from memory.
    assert module_text(result.module) == """\
fused_computation.2 {
  param_0.3 = f32[] parameter(0)
  param_1.4 = f32[16] parameter(1)
  sb.clone.5 = f32[16] broadcast(param_0.3), dimensions={}
  e1 = f32[16] exponential(param_1.4)
  ROOT m1 = f32[16] multiply(e1, sb.clone.5)
}

fused_computation.7 {
  param_0.8 = f32[] parameter(0)
  param_1.9 = f32[16] parameter(1)
  sb.clone.10 = f32[16] broadcast(param_0.8), dimensions={}
  e2 = f32[16] log(param_1.9)
  ROOT m2 = f32[16] multiply(e2, sb.clone.10)
}

ENTRY main {
  x = f32[16] parameter(0)
  y = f32[16] parameter(1)
  s = f32[] parameter(2)
  exponential_multiply_fusion.1 = f32[16] fusion(s, x), kind=kLoop, calls=fused_computation.2
  log_multiply_fusion.6 = f32[16] fusion(s, y), kind=kLoop, calls=fused_computation.7
  ROOT t = (f32[16], f32[16]) tuple(exponential_multiply_fusion.1, log_multiply_fusion.6)
}
"""
    assert ("fused", "fused sb into m2: data movement, done by index arithmetic and cheap, so "
            "copied into this kernel (m1 also reads it)") in decisions(result)


def test_an_op_that_fuses_with_nothing_stays_itself():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[16] parameter(0)
e = f32[16] exponential(x)
zero = f32[] constant(0)
r1 = f32[] reduce(e, zero), dimensions={0}, to_apply=add
sq = f32[16] multiply(e, e)
r2 = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
ROOT t = (f32[], f32[]) tuple(r1, r2)""", ADD))
    # The exponential is a kernel of one: no fusion wrapper, no fused computation.
    assert entry_body(result.module) == """\
x = f32[16] parameter(0)
e = f32[16] exponential(x)
reduce_fusion.1 = f32[] fusion(e), kind=kInput, calls=fused_computation.2
multiply_reduce_fusion.5 = f32[] fusion(e), kind=kInput, calls=fused_computation.6
ROOT t = (f32[], f32[]) tuple(reduce_fusion.1, multiply_reduce_fusion.5)"""
    assert [c.name for c in result.module.computations] == [
        "add", "fused_computation.2", "fused_computation.6"]


def test_a_module_with_nothing_to_fuse_is_returned_unchanged():
    before, result = run_pass(Fusion(), hlo("""\
x = f32[8,16] parameter(0)
w = f32[16,4] parameter(1)
d = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
ROOT u = f32[8,4] custom-call(d), custom_call_target="numpy.sort", backend_config="axis=1\""""))
    assert not result.changed and result.module is before
    assert result.notes == ()


# -- what is refused, and why ------------------------------------------------------------------

def test_an_expensive_producer_read_by_two_kernels_is_not_copied():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[16] parameter(0)
t = f32[16] tanh(x)
zero = f32[] constant(0)
r1 = f32[] reduce(t, zero), dimensions={0}, to_apply=add
sq = f32[16] multiply(t, t)
r2 = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
ROOT out = (f32[], f32[]) tuple(r1, r2)""", ADD))
    assert entry_body(result.module) == """\
x = f32[16] parameter(0)
t = f32[16] tanh(x)
reduce_fusion.1 = f32[] fusion(t), kind=kInput, calls=fused_computation.2
multiply_reduce_fusion.5 = f32[] fusion(t), kind=kInput, calls=fused_computation.6
ROOT out = (f32[], f32[]) tuple(reduce_fusion.1, multiply_reduce_fusion.5)"""
    assert result.module.to_text().count("tanh(") == 1
    refused = [(d.producer, d.consumer, d.reason) for d in result.notes if not d.fused]
    assert refused == [
        ("t", "sq", "not fused t into sq: t is expensive (tanh) and has 2 consumers; it is "
                    "computed once (multi-output fusion may still join them)"),
        ("t", "r1", "not fused t into r1: t is expensive (tanh) and has 2 consumers; it is "
                    "computed once (multi-output fusion may still join them)"),
    ]
    assert all(d.rule == "refused" for d in result.notes if not d.fused)


def test_a_reduction_does_not_fuse_into_a_consumer_that_is_not_a_row_kernel():
    # Column sums (over the leading axis) broadcast back: not rows, so two kernels.
    _, result = run_pass(Fusion(), hlo("""\
x = f32[4,8] parameter(0)
zero = f32[] constant(0)
cs = f32[8] reduce(x, zero), dimensions={0}, to_apply=add
csb = f32[4,8] broadcast(cs), dimensions={1}
ROOT out = f32[4,8] subtract(x, csb)""", ADD))
    assert module_text(result.module) == ADD + """

fused_computation.2 {
  param_0.3 = f32[4,8] parameter(0)
  zero = f32[] constant(0)
  ROOT cs = f32[8] reduce(param_0.3, zero), dimensions={0}, to_apply=add
}

fused_computation.5 {
  param_0.6 = f32[8] parameter(0)
  param_1.7 = f32[4,8] parameter(1)
  csb = f32[4,8] broadcast(param_0.6), dimensions={1}
  ROOT out = f32[4,8] subtract(param_1.7, csb)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  reduce_fusion.1 = f32[8] fusion(x), kind=kInput, calls=fused_computation.2
  ROOT subtract_fusion.4 = f32[4,8] fusion(reduce_fusion.1, x), kind=kLoop, calls=fused_computation.5
}
"""
    assert ("refused", "not fused cs into csb: cs is a reduction, and csb needs all of its "
            "result first (a kernel boundary, unless row fusion joins them)") in decisions(result)
    assert not any(rule.startswith("row") for rule, _ in decisions(result))


def test_the_operands_of_a_dot_are_not_fused_into_it():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[8,16] parameter(0)
y = f32[8,16] parameter(1)
w = f32[16,4] parameter(2)
nx = f32[8,16] negate(x)
a = f32[8,16] add(nx, y)
ROOT d = f32[8,4] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""))
    assert module_text(result.module) == """\
fused_computation.2 {
  param_0.3 = f32[8,16] parameter(0)
  param_1.4 = f32[8,16] parameter(1)
  nx = f32[8,16] negate(param_0.3)
  ROOT a = f32[8,16] add(nx, param_1.4)
}

ENTRY main {
  x = f32[8,16] parameter(0)
  y = f32[8,16] parameter(1)
  w = f32[16,4] parameter(2)
  negate_add_fusion.1 = f32[8,16] fusion(x, y), kind=kLoop, calls=fused_computation.2
  ROOT d = f32[8,4] dot(negate_add_fusion.1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    assert decisions(result) == [
        ("refused", "not fused a into d: d is a dot, and a dot reads its operands from memory "
                    "(BLAS)"),
        ("fused", "fused nx into a: element-wise, single consumer"),
    ]


def test_a_dot_read_by_two_consumers_is_computed_once():
    before, result = run_pass(Fusion(), hlo("""\
x = f32[8,16] parameter(0)
w = f32[16,4] parameter(1)
b = f32[8,4] parameter(2)
d = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
s = f32[8,4] add(d, b)
m = f32[8,4] multiply(d, b)
ROOT t = (f32[8,4], f32[8,4]) tuple(s, m)"""))
    # Each consumer is then a kernel of one: nothing changes, but the reason is recorded.
    assert not result.changed and result.module is before
    assert decisions(result) == [
        ("refused", "not fused d into m: d is a dot with 2 consumers; it is computed once"),
        ("refused", "not fused d into s: d is a dot with 2 consumers; it is computed once"),
    ]


def test_a_dot_does_not_fuse_into_a_reduction():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[8,16] parameter(0)
w = f32[16,4] parameter(1)
d = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
zero = f32[] constant(0)
ROOT r = f32[8] reduce(d, zero), dimensions={1}, to_apply=add""", ADD))
    assert module_text(result.module) == ADD + """

fused_computation.2 {
  param_0.3 = f32[8,4] parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[8] reduce(param_0.3, zero), dimensions={1}, to_apply=add
}

ENTRY main {
  x = f32[8,16] parameter(0)
  w = f32[16,4] parameter(1)
  d = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT reduce_fusion.1 = f32[8] fusion(d), kind=kInput, calls=fused_computation.2
}
"""
    assert decisions(result) == [
        ("refused", "not fused d into r: d is a dot, which fuses only with an element-wise "
                    "epilogue, and this kernel has a reduce"),
        ("fused", "fused zero into r: a scalar constant, single consumer"),
    ]


def test_a_custom_call_is_not_fused():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[16] parameter(0)
u = f32[16] custom-call(x), custom_call_target="numpy.unique"
n = f32[16] negate(u)
ROOT e = f32[16] exponential(n)"""))
    assert module_text(result.module) == """\
fused_computation.2 {
  param_0.3 = f32[16] parameter(0)
  n = f32[16] negate(param_0.3)
  ROOT e = f32[16] exponential(n)
}

ENTRY main {
  x = f32[16] parameter(0)
  u = f32[16] custom-call(x), custom_call_target="numpy.unique"
  ROOT negate_exponential_fusion.1 = f32[16] fusion(u), kind=kLoop, calls=fused_computation.2
}
"""
    assert decisions(result) == [
        ("fused", "fused n into e: element-wise, single consumer"),
        ("refused", "not fused u into n: u (numpy.unique) is not compilable: it runs in NumPy, "
                    "between kernels"),
    ]


def test_a_kernel_stops_growing_at_64_operands_and_outputs():
    # ((p0 + p1) + p2) + ... + p69: one kernel would read 70 parameters.
    lines = [f"p{i} = f32[4] parameter({i})" for i in range(70)]
    lines.append("a1 = f32[4] add(p0, p1)")
    lines += [f"a{i} = f32[4] add(a{i - 1}, p{i})" for i in range(2, 69)]
    lines.append("ROOT a69 = f32[4] add(a68, p69)")
    _, result = run_pass(Fusion(), hlo("\n".join(lines)))
    kernels = fusions(result.module)
    assert len(kernels) == 2
    assert kernels[1] is result.module.entry.root
    assert kernels[0] in kernels[1].operands  # the second kernel continues the first's sum
    for k in kernels:
        assert len(k.operands) + 1 <= MAX_OPERANDS_AND_OUTPUTS
    # Every add runs in one of the two kernels; the entry is parameters and kernels only.
    assert {i.opcode for i in result.module.entry.instructions} == {"parameter", "fusion"}
    assert result.module.to_text().count(" add(") == 69
    refused = [d.reason for d in result.notes if not d.fused]
    assert len(refused) == 1
    assert refused[0].endswith("operands and outputs (the limit is 64)")
    assert refused[0].startswith("not fused a")


def test_exactly_64_operands_and_outputs_is_one_kernel():
    # ((p0 + p1) + p2) + ... + p62: 63 operands and 1 output, exactly the limit. The producer
    # a fused last moves inside, so it is not counted as an operand.
    lines = [f"p{i} = f32[4] parameter({i})" for i in range(63)]
    lines.append("a1 = f32[4] add(p0, p1)")
    lines += [f"a{i} = f32[4] add(a{i - 1}, p{i})" for i in range(2, 62)]
    lines.append("ROOT a62 = f32[4] add(a61, p62)")
    _, result = run_pass(Fusion(), hlo("\n".join(lines)))
    (kernel,) = fusions(result.module)
    assert len(kernel.operands) + 1 == MAX_OPERANDS_AND_OUTPUTS
    assert all(d.fused for d in result.notes)


def test_row_fusion_is_refused_when_a_third_kernel_sits_between_the_two():
    # m's kernel feeds the custom-call u, which feeds out's kernel: one kernel for m and out
    # would have to run both before and after u.
    _, result = run_pass(Fusion(), hlo("""\
x = f32[4,8] parameter(0)
ninf = f32[] constant(-inf)
m = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max
mb = f32[4,8] broadcast(m), dimensions={0}
sub = f32[4,8] subtract(x, mb)
u = f32[4] custom-call(m), custom_call_target="numpy.sort", backend_config="axis=0"
ub = f32[4,8] broadcast(u), dimensions={0}
ROOT out = f32[4,8] add(sub, ub)""", MAX))
    assert module_text(result.module) == MAX + """

fused_computation.2 {
  param_0.3 = f32[4,8] parameter(0)
  ninf = f32[] constant(-inf)
  ROOT m = f32[4] reduce(param_0.3, ninf), dimensions={1}, to_apply=max
}

fused_computation.5 {
  param_0.6 = f32[4] parameter(0)
  param_1.7 = f32[4,8] parameter(1)
  param_2.8 = f32[4] parameter(2)
  mb = f32[4,8] broadcast(param_0.6), dimensions={0}
  sub = f32[4,8] subtract(param_1.7, mb)
  ub = f32[4,8] broadcast(param_2.8), dimensions={0}
  ROOT out = f32[4,8] add(sub, ub)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  reduce_fusion.1 = f32[4] fusion(x), kind=kInput, calls=fused_computation.2
  u = f32[4] custom-call(reduce_fusion.1), custom_call_target="numpy.sort", backend_config="axis=0"
  ROOT subtract_add_fusion.4 = f32[4,8] fusion(reduce_fusion.1, x, u), kind=kLoop, calls=fused_computation.5
}
"""
    row = [d for d in result.notes if d.rule.startswith("row")]
    assert [(d.rule, d.producer, d.consumer, d.fused, d.reason) for d in row] == [
        ("row-refused", "m", "out", False,
         "not row-fused: the fusion rooted at m and the fusion rooted at out are connected "
         "through u, so one kernel for both would depend on itself"),
    ]


# -- a constant the root tuple also returns --------------------------------------------------

def test_a_constant_shared_by_a_kernel_and_the_root_tuple_stays_in_the_entry_too():
    # `y = x * 2; y[0] = 1; return y, 0`: CSE leaves one constant 0, the update's index and a
    # returned value. The kernel gets a copy; the tuple still needs the entry's.
    _, result = run_pass(Fusion(), hlo("""\
x = f32[3] parameter(0)
two = f32[] constant(2)
b = f32[3] broadcast(two), dimensions={}
y = f32[3] multiply(x, b)
one = f32[1] constant({1})
zero = s32[] constant(0)
u = f32[3] dynamic-update-slice(y, one, zero)
ROOT t = (f32[3], s32[]) tuple(u, zero)"""))
    assert module_text(result.module) == """\
fused_computation.2 {
  param_0.3 = f32[3] parameter(0)
  two = f32[] constant(2)
  b = f32[3] broadcast(two), dimensions={}
  y = f32[3] multiply(param_0.3, b)
  one = f32[1] constant({1})
  zero.clone.4 = s32[] constant(0)
  ROOT u = f32[3] dynamic-update-slice(y, one, zero.clone.4)
}

ENTRY main {
  x = f32[3] parameter(0)
  zero = s32[] constant(0)
  multiply_dynamic_update_slice_fusion.1 = f32[3] fusion(x), kind=kLoop, calls=fused_computation.2
  ROOT t = (f32[3], s32[]) tuple(multiply_dynamic_update_slice_fusion.1, zero)
}
"""
    assert ("fused", "fused zero into u: a scalar constant and cheap, so copied into this "
                     "kernel (t also reads it)") in decisions(result)


# -- code duplication: a value read at many indices ------------------------------------------

def stencil_steps(n: int) -> str:
    """n steps of a 3-point stencil, each reading the last at offsets 0, 1 and 2."""
    lines = [f"x0 = f32[{2 * n + 2}] parameter(0)"]
    for k in range(1, n + 1):
        m, prev = 2 * (n - k) + 2, f"x{k - 1}"
        lines += [f"l{k} = f32[{m}] slice({prev}), slice={{[0:{m}]}}",
                  f"c{k} = f32[{m}] slice({prev}), slice={{[1:{m + 1}]}}",
                  f"r{k} = f32[{m}] slice({prev}), slice={{[2:{m + 2}]}}",
                  f"s{k} = f32[{m}] add(l{k}, r{k})",
                  f"{'ROOT ' if k == n else ''}x{k} = f32[{m}] add(s{k}, c{k})"]
    return "\n".join(lines)


def test_a_value_that_would_be_computed_too_often_per_element_is_a_kernel_of_its_own():
    # Fused, step k reads step k-1 at 3 offsets: x3 would be computed 3 times per element of
    # x4's loop, x2 9 times, x1 27 times. 27 is past the limit: x1 is written once instead.
    assert MAX_INDEX_EVALUATIONS == 15
    _, result = run_pass(Fusion(), hlo(stencil_steps(4)))
    assert entry_body(result.module) == """\
x0 = f32[10] parameter(0)
slice_add_fusion.1 = f32[8] fusion(x0), kind=kLoop, calls=fused_computation.2
ROOT slice_add_fusion.4 = f32[2] fusion(slice_add_fusion.1), kind=kLoop, calls=fused_computation.5"""
    steps_2_to_4 = result.module.computation("fused_computation.5")
    assert {i.name for i in steps_2_to_4.instructions} >= {"x2", "x3", "x4", "l2", "r2"}
    said = decisions(result)
    assert ("refused", "not fused x1 into l2: x1 would be computed 27 times per element of "
                       "this kernel (it is read at different indices by c2, l2 and r2, which "
                       "this kernel computes 9, 9 and 9 times), more than the limit of 15 "
                       "(XLA's); it is kept as a kernel of its own, so its code is emitted "
                       "once and its result read from memory") in said
    assert [d.producer for d in result.notes if not d.fused] == ["x1"] * 3


def test_values_read_at_one_index_are_never_limited():
    # A long element-wise chain reads every value once, at the kernel's own index.
    chain = ["x = f32[8] parameter(0)", "v0 = f32[8] negate(x)"]
    chain += [f"v{k} = f32[8] add(v{k - 1}, v{k - 1})" for k in range(1, 40)]
    chain[-1] = "ROOT " + chain[-1]
    _, result = run_pass(Fusion(), hlo("\n".join(chain)))
    assert len(fusions(result.module)) == 1
    assert all(d.fused for d in result.notes)


def test_an_expensive_producer_read_at_two_indices_is_computed_once():
    # XLA's ReusesOperandElements: e[1:] + e[:-1] would compute each exponential twice.
    _, result = run_pass(Fusion(), hlo("""\
x = f32[8] parameter(0)
e = f32[8] exponential(x)
a = f32[7] slice(e), slice={[0:7]}
b = f32[7] slice(e), slice={[1:8]}
ROOT s = f32[7] add(a, b)"""))
    assert entry_body(result.module) == """\
x = f32[8] parameter(0)
e = f32[8] exponential(x)
ROOT slice_add_fusion.1 = f32[7] fusion(e), kind=kLoop, calls=fused_computation.2"""
    assert ("refused", "not fused e into a: e is expensive (exponential) and would be computed "
                       "2 times per element of this kernel (it is read at different indices by "
                       "a and b); it is computed once, in a kernel of its own, and read from "
                       "memory") in decisions(result)


def test_a_cheap_producer_written_anyway_is_not_copied_where_it_keeps_a_large_value_alive():
    # A training step's h = relu(x @ w + b): h is read by a product (h.T @ g, from memory)
    # and by the backward pass's mask (h > 0). Copied into the mask's kernel, relu would read
    # x @ w (256 KiB) there and keep it alive until then; the mask reads h instead, and the
    # product x @ w, read by relu alone, takes relu as its epilogue.
    _, result = run_pass(Fusion(), hlo("""\
x = f32[1024,16] parameter(0)
w = f32[16,64] parameter(1)
g = f32[1024,64] parameter(2)
d = f32[1024,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
zero = f32[] constant(0)
zeros = f32[1024,64] broadcast(zero), dimensions={}
h = f32[1024,64] maximum(d, zeros)
dw = f32[64,64] dot(h, g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
mask = pred[1024,64] compare(h, zeros), direction=GT
gm = f32[1024,64] select(mask, g, zeros)
ROOT t = (f32[64,64], f32[1024,64]) tuple(dw, gm)"""))
    body = entry_body(result.module)
    assert "dot_maximum_fusion.1 = f32[1024,64] fusion(x, w), kind=kOutput" in body
    assert "fusion(dot_maximum_fusion.1, g)" in body  # the mask's kernel reads h
    refused = [d.reason for d in result.notes if not d.fused and d.producer == "h"
               and d.consumer == "mask"]
    assert refused == [
        "not fused h into mask: h is written to memory anyway (dw also reads it); "
        "a copy in mask's kernel would read d (256.00KiB), which it reads nowhere else, instead "
        "of h's result: the same traffic, and d kept in memory until then"]
