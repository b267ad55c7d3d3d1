"""Algebraic simplification: one test per rule, HLO text in, HLO text out.

Each case also runs the module before and after in the reference interpreter (run_pass), and
checks the rule that fired is named in the notes. Operands a rewrite leaves unused stay: DCE
removes them, and says so.
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.passes.algsimp import FOLD_LIMIT, RULES, AlgebraicSimplifier

from .hlo_pass_helpers import assert_same_meaning, entry_body, hlo, run_pass

ONES = """\
one = f32[] constant(1)
ones = f32[2,3] broadcast(one), dimensions={}"""
ZEROS = """\
zero = f32[] constant(0)
zeros = f32[2,3] broadcast(zero), dimensions={}"""

# rule, input entry, expected entry
CASES = {
    "x*1": ("mul-one", f"""\
x = f32[2,3] parameter(0)
{ONES}
y = f32[2,3] multiply(x, ones)
ROOT z = f32[2,3] exponential(y)""", f"""\
x = f32[2,3] parameter(0)
{ONES}
ROOT z = f32[2,3] exponential(x)"""),
    "1*x": ("mul-one", f"""\
x = f32[2,3] parameter(0)
{ONES}
y = f32[2,3] multiply(ones, x)
ROOT z = f32[2,3] exponential(y)""", f"""\
x = f32[2,3] parameter(0)
{ONES}
ROOT z = f32[2,3] exponential(x)"""),
    "x+0": ("add-zero", """\
x = s32[2,3] parameter(0)
zero = s32[] constant(0)
zeros = s32[2,3] broadcast(zero), dimensions={}
y = s32[2,3] add(x, zeros)
ROOT z = s32[2,3] negate(y)""", """\
x = s32[2,3] parameter(0)
zero = s32[] constant(0)
zeros = s32[2,3] broadcast(zero), dimensions={}
ROOT z = s32[2,3] negate(x)"""),
    "-0.0+x": ("add-zero", """\
x = f32[2,3] parameter(0)
zero = f32[] constant(-0)
zeros = f32[2,3] broadcast(zero), dimensions={}
y = f32[2,3] add(zeros, x)
ROOT z = f32[2,3] exponential(y)""", """\
x = f32[2,3] parameter(0)
zero = f32[] constant(-0)
zeros = f32[2,3] broadcast(zero), dimensions={}
ROOT z = f32[2,3] exponential(x)"""),
    "x-0": ("sub-zero", f"""\
x = f32[2,3] parameter(0)
{ZEROS}
y = f32[2,3] subtract(x, zeros)
ROOT z = f32[2,3] exponential(y)""", f"""\
x = f32[2,3] parameter(0)
{ZEROS}
ROOT z = f32[2,3] exponential(x)"""),
    "x/1": ("div-one", f"""\
x = f32[2,3] parameter(0)
{ONES}
y = f32[2,3] divide(x, ones)
ROOT z = f32[2,3] exponential(y)""", f"""\
x = f32[2,3] parameter(0)
{ONES}
ROOT z = f32[2,3] exponential(x)"""),
    "integer x/1": ("div-one", """\
x = s32[4] parameter(0)
one = s32[4] constant({1, 1, 1, 1})
y = s32[4] divide(x, one)
ROOT z = s32[4] negate(y)""", """\
x = s32[4] parameter(0)
one = s32[4] constant({1, 1, 1, 1})
ROOT z = s32[4] negate(x)"""),
    "--x": ("neg-neg", """\
x = f32[2,3] parameter(0)
n1 = f32[2,3] negate(x)
n2 = f32[2,3] negate(n1)
ROOT z = f32[2,3] exponential(n2)""", """\
x = f32[2,3] parameter(0)
n1 = f32[2,3] negate(x)
ROOT z = f32[2,3] exponential(x)"""),
    # p = {1,2,0} then q = {1,0,2}: x's dimension p[q[i]] lands at i, so {2,1,0}. (q[p] would
    # be {0,2,1}: the wrong shape, f32[2,4,3].)
    "transpose(transpose(x))": ("transpose-transpose", """\
x = f32[2,3,4] parameter(0)
t1 = f32[3,4,2] transpose(x), dimensions={1,2,0}
t2 = f32[4,3,2] transpose(t1), dimensions={1,0,2}, metadata={op_name="t2"}
ROOT z = f32[4,3,2] exponential(t2)""", """\
x = f32[2,3,4] parameter(0)
t1 = f32[3,4,2] transpose(x), dimensions={1,2,0}
transpose.1 = f32[4,3,2] transpose(x), dimensions={2,1,0}, metadata={op_name="t2"}
ROOT z = f32[4,3,2] exponential(transpose.1)"""),
    # Same shapes either way round: only the values tell p[q] = {1,0,2} from q[p] = {2,1,0}.
    "transpose(transpose(x)) square": ("transpose-transpose", """\
x = f32[3,3,3] parameter(0)
t1 = f32[3,3,3] transpose(x), dimensions={1,2,0}
t2 = f32[3,3,3] transpose(t1), dimensions={0,2,1}
ROOT z = f32[3,3,3] exponential(t2)""", """\
x = f32[3,3,3] parameter(0)
t1 = f32[3,3,3] transpose(x), dimensions={1,2,0}
transpose.1 = f32[3,3,3] transpose(x), dimensions={1,0,2}
ROOT z = f32[3,3,3] exponential(transpose.1)"""),
    "transpose(x, identity)": ("transpose-id", """\
x = f32[2,3,4] parameter(0)
t = f32[2,3,4] transpose(x), dimensions={0,1,2}
ROOT z = f32[2,3,4] exponential(t)""", """\
x = f32[2,3,4] parameter(0)
ROOT z = f32[2,3,4] exponential(x)"""),
    "reshape(reshape(x))": ("reshape-reshape", """\
x = f32[2,6] parameter(0)
r1 = f32[3,4] reshape(x)
r2 = f32[12] reshape(r1)
ROOT z = f32[12] exponential(r2)""", """\
x = f32[2,6] parameter(0)
r1 = f32[3,4] reshape(x)
reshape.1 = f32[12] reshape(x)
ROOT z = f32[12] exponential(reshape.1)"""),
    "reshape(x) to x's shape": ("reshape-same", """\
x = f32[2,6] parameter(0)
r = f32[2,6] reshape(x)
ROOT z = f32[2,6] exponential(r)""", """\
x = f32[2,6] parameter(0)
ROOT z = f32[2,6] exponential(x)"""),
    # x's dimension i goes to d1[i], then to d2[d1[i]]: {0,2} then {1,3,0} is {1,0}.
    "broadcast(broadcast(x))": ("broadcast-broadcast", """\
x = f32[2,3] parameter(0)
b1 = f32[2,5,3] broadcast(x), dimensions={0,2}
b2 = f32[3,2,4,5] broadcast(b1), dimensions={1,3,0}
ROOT z = f32[3,2,4,5] exponential(b2)""", """\
x = f32[2,3] parameter(0)
b1 = f32[2,5,3] broadcast(x), dimensions={0,2}
broadcast.1 = f32[3,2,4,5] broadcast(x), dimensions={1,0}
ROOT z = f32[3,2,4,5] exponential(broadcast.1)"""),
    "broadcast(broadcast(scalar))": ("broadcast-broadcast", """\
x = f32[] parameter(0)
b1 = f32[4] broadcast(x), dimensions={}
b2 = f32[4,3] broadcast(b1), dimensions={0}
ROOT z = f32[4,3] exponential(b2)""", """\
x = f32[] parameter(0)
b1 = f32[4] broadcast(x), dimensions={}
broadcast.1 = f32[4,3] broadcast(x), dimensions={}
ROOT z = f32[4,3] exponential(broadcast.1)"""),
    "broadcast(x) to x's shape": ("broadcast-id", """\
x = f32[2,3] parameter(0)
b = f32[2,3] broadcast(x), dimensions={0,1}
ROOT z = f32[2,3] exponential(b)""", """\
x = f32[2,3] parameter(0)
ROOT z = f32[2,3] exponential(x)"""),
    "convert to the same type": ("convert-same", """\
x = f32[2,3] parameter(0)
c = f32[2,3] convert(x)
ROOT z = f32[2,3] exponential(c)""", """\
x = f32[2,3] parameter(0)
ROOT z = f32[2,3] exponential(x)"""),
    "full slice": ("slice-all", """\
x = f32[2,3] parameter(0)
s = f32[2,3] slice(x), slice={[0:2], [0:3]}
ROOT z = f32[2,3] exponential(s)""", """\
x = f32[2,3] parameter(0)
ROOT z = f32[2,3] exponential(x)"""),
    # q @ k.T: the dot reads k with its contracting dimension last, and the transpose goes
    # (to DCE).
    "dot(a, transpose(b))": ("dot-transpose-rhs", """\
q = f32[2,3] parameter(0)
k = f32[4,3] parameter(1)
t = f32[3,4] transpose(k), dimensions={1,0}
ROOT d = f32[2,4] dot(q, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}""", """\
q = f32[2,3] parameter(0)
k = f32[4,3] parameter(1)
t = f32[3,4] transpose(k), dimensions={1,0}
ROOT dot.1 = f32[2,4] dot(q, k), lhs_contracting_dims={1}, rhs_contracting_dims={1}"""),
    "dot(transpose(a), b)": ("dot-transpose-lhs", """\
a = f32[3,2] parameter(0)
b = f32[3,4] parameter(1)
t = f32[2,3] transpose(a), dimensions={1,0}
d = f32[2,4] dot(t, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
ROOT z = f32[2,4] negate(d)""", """\
a = f32[3,2] parameter(0)
b = f32[3,4] parameter(1)
t = f32[2,3] transpose(a), dimensions={1,0}
dot.1 = f32[2,4] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
ROOT z = f32[2,4] negate(dot.1)"""),
    # Batched, k.swapaxes(1, 2): batch dimension 0 stays 0, contracting 1 becomes 2.
    "batched dot(a, transpose(b))": ("dot-transpose-rhs", """\
q = f32[5,2,3] parameter(0)
k = f32[5,4,3] parameter(1)
t = f32[5,3,4] transpose(k), dimensions={0,2,1}
ROOT d = f32[5,2,4] dot(q, t), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}""", """\
q = f32[5,2,3] parameter(0)
k = f32[5,4,3] parameter(1)
t = f32[5,3,4] transpose(k), dimensions={0,2,1}
ROOT dot.1 = f32[5,2,4] dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}"""),
    # The batch dimension moved too: k's dimension 1 pairs with q's 0.
    "dot(a, transpose(b)) batch moved": ("dot-transpose-rhs", """\
q = f32[5,2,3] parameter(0)
k = f32[4,5,3] parameter(1)
t = f32[5,3,4] transpose(k), dimensions={1,2,0}
ROOT d = f32[5,2,4] dot(q, t), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}""", """\
q = f32[5,2,3] parameter(0)
k = f32[4,5,3] parameter(1)
t = f32[5,3,4] transpose(k), dimensions={1,2,0}
ROOT dot.1 = f32[5,2,4] dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={2}"""),
    "fold small constants": ("fold-constants", """\
x = f32[3] parameter(0)
a = f32[3] constant({1, 2, 3})
b = f32[3] constant({10, 20, 30.5})
c = f32[3] add(a, b)
ROOT z = f32[3] multiply(x, c)""", """\
x = f32[3] parameter(0)
a = f32[3] constant({1, 2, 3})
b = f32[3] constant({10, 20, 30.5})
constant.1 = f32[3] constant({11, 22, 33.5})
ROOT z = f32[3] multiply(x, constant.1)"""),
    "fold a comparison": ("fold-constants", """\
x = pred[3] parameter(0)
a = s32[3] constant({1, 2, 3})
b = s32[3] constant({3, 2, 1})
c = pred[3] compare(a, b), direction=LT
ROOT z = pred[3] and(x, c)""", """\
x = pred[3] parameter(0)
a = s32[3] constant({1, 2, 3})
b = s32[3] constant({3, 2, 1})
constant.1 = pred[3] constant({true, false, false})
ROOT z = pred[3] and(x, constant.1)"""),
    "fold a small transpose": ("fold-constants", """\
x = f32[3,2] parameter(0)
a = f32[2,3] constant({ {1, 2, 3}, {4, 5, 6} })
t = f32[3,2] transpose(a), dimensions={1,0}
ROOT z = f32[3,2] add(x, t)""", """\
x = f32[3,2] parameter(0)
a = f32[2,3] constant({ {1, 2, 3}, {4, 5, 6} })
constant.1 = f32[3,2] constant({ {1, 4}, {2, 5}, {3, 6} })
ROOT z = f32[3,2] add(x, constant.1)"""),
    # A big uniform result stays a broadcast of a scalar: no 1000-element literal.
    "fold broadcast scalars": ("fold-constants", """\
x = f32[1000] parameter(0)
two = f32[] constant(2)
twos = f32[1000] broadcast(two), dimensions={}
three = f32[] constant(3)
threes = f32[1000] broadcast(three), dimensions={}
p = f32[1000] multiply(twos, threes)
ROOT z = f32[1000] subtract(x, p)""", """\
x = f32[1000] parameter(0)
two = f32[] constant(2)
twos = f32[1000] broadcast(two), dimensions={}
three = f32[] constant(3)
threes = f32[1000] broadcast(three), dimensions={}
constant.1 = f32[] constant(6)
broadcast.2 = f32[1000] broadcast(constant.1), dimensions={}
ROOT z = f32[1000] subtract(x, broadcast.2)"""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule(case):
    rule, text_in, text_out = CASES[case]
    before, result = run_pass(AlgebraicSimplifier(), hlo(text_in))
    assert result.changed
    assert entry_body(result.module) == text_out
    assert [n.rule for n in result.notes] == [rule]
    note = result.notes[0]
    assert next(r for r in RULES if r.name == rule).math in note.message
    assert note.instructions[0] in text_in  # names the instruction it rewrote


def test_every_rule_has_a_case():
    tested = {rule for rule, _, _ in CASES.values()}
    assert tested == {r.name for r in RULES}


def test_transpose_composition_against_the_interpreter():
    """Every pair of rank-3 permutations: the composed transpose moves the same elements."""
    from itertools import permutations

    from xla_explorer.runtime.reference import run_module

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for p in permutations(range(3)):
        for q in permutations(range(3)):
            d1 = [x.shape[i] for i in p]
            d2 = [d1[i] for i in q]
            text = hlo(f"""\
x = f32[2,3,4] parameter(0)
t1 = f32[{",".join(map(str, d1))}] transpose(x), dimensions={{{",".join(map(str, p))}}}
ROOT t2 = f32[{",".join(map(str, d2))}] transpose(t1), dimensions={{{",".join(map(str, q))}}}""")
            before = xe.parse_hlo(text)
            after = AlgebraicSimplifier().run(before).module
            xe.verify(after)
            assert len([i for i in after.entry if i.opcode == "transpose"]) <= 2
            assert after.entry.root.opcode in ("transpose", "parameter")
            assert after.entry.root.operands in ((), (after.entry.get("x"),))
            np.testing.assert_array_equal(run_module(after, [x])[0], x.transpose(p).transpose(q))


def test_a_dot_of_two_transposes_folds_both():
    before, result = run_pass(AlgebraicSimplifier(), hlo("""\
a = f64[3,2] parameter(0)
b = f64[4,3] parameter(1)
ta = f64[2,3] transpose(a), dimensions={1,0}
tb = f64[3,4] transpose(b), dimensions={1,0}
ROOT d = f64[2,4] dot(ta, tb), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""))
    assert [n.rule for n in result.notes] == ["dot-transpose-lhs", "dot-transpose-rhs"]
    root = result.module.entry.root
    assert [o.name for o in root.operands] == ["a", "b"]
    assert root.attr("lhs_contracting_dims") == (0,) and root.attr("rhs_contracting_dims") == (1,)


def test_dot_transpose_folding_against_the_interpreter():
    """Every permutation of either operand of a batched dot, f32[2,3,4] @ f32[2,4,5]: the
    folded dot computes the same (run_pass compares them), with no transpose left."""
    from itertools import permutations

    standard = {0: (2, 3, 4), 1: (2, 4, 5)}
    for side in (0, 1):
        for p in permutations(range(3)):
            dims = standard[side]
            x_dims = [0] * 3
            for d, j in enumerate(p):
                x_dims[j] = dims[d]
            shapes = [f"f32[{','.join(map(str, standard[s]))}]" for s in (0, 1)]
            x_shape = f"f32[{','.join(map(str, x_dims))}]"
            operands = ["t", "b"] if side == 0 else ["a", "t"]
            text = hlo(f"""\
a = {shapes[0] if side else x_shape} parameter(0)
b = {x_shape if side else shapes[1]} parameter(1)
t = {shapes[side]} transpose({"ab"[side]}), dimensions={{{",".join(map(str, p))}}}
ROOT d = f32[2,3,5] dot({", ".join(operands)}), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}""")
            before, result = run_pass(AlgebraicSimplifier(), text)
            root = result.module.entry.root
            assert root.opcode == "dot" and "t" not in [o.name for o in root.operands], p


def test_broadcast_composition_against_the_interpreter():
    cases = [
        ("f32[3]", "f32[3,4]", "{0}", "f32[5,4,3]", "{2,1}"),
        ("f32[2,3]", "f32[2,5,3]", "{0,2}", "f32[3,2,4,5]", "{1,3,0}"),
        ("f32[2,3]", "f32[3,2]", "{1,0}", "f32[2,7,3]", "{2,0}"),
        ("f32[4]", "f32[4,2]", "{0}", "f32[2,4,3]", "{1,0}"),
    ]
    for x_shape, mid, d1, out, d2 in cases:
        text = hlo(f"""\
x = {x_shape} parameter(0)
b1 = {mid} broadcast(x), dimensions={d1}
ROOT b2 = {out} broadcast(b1), dimensions={d2}""")
        before, result = run_pass(AlgebraicSimplifier(), text)
        root = result.module.entry.root
        assert root.opcode == "broadcast" and root.operands[0].name == "x"
        assert [n.rule for n in result.notes] == ["broadcast-broadcast"]


def test_rules_chain_on_their_results():
    before, result = run_pass(AlgebraicSimplifier(), hlo(f"""\
x = f32[2,3] parameter(0)
{ONES}
n1 = f32[2,3] negate(x)
n2 = f32[2,3] negate(n1)
y = f32[2,3] multiply(n2, ones)
r1 = f32[6] reshape(y)
r2 = f32[2,3] reshape(r1)
ROOT z = f32[2,3] exponential(r2)"""))
    assert [n.rule for n in result.notes] == ["neg-neg", "mul-one", "reshape-reshape",
                                              "reshape-same"]
    assert entry_body(result.module) == f"""\
x = f32[2,3] parameter(0)
{ONES}
n1 = f32[2,3] negate(x)
r1 = f32[6] reshape(x)
ROOT z = f32[2,3] exponential(x)"""


def test_a_root_replaced_by_a_parameter():
    before, result = run_pass(AlgebraicSimplifier(), hlo(f"""\
x = f32[2,3] parameter(0)
{ONES}
ROOT y = f32[2,3] multiply(x, ones)"""))
    assert result.module.entry.root.name == "x"
    assert entry_body(result.module) == f"{ONES}\nROOT x = f32[2,3] parameter(0)"


def test_folding_chains():
    before, result = run_pass(AlgebraicSimplifier(), hlo("""\
a = s32[2] constant({7, -7})
b = s32[2] constant({2, 0})
q = s32[2] divide(a, b)
ROOT n = s32[2] negate(q)"""))
    assert [n.rule for n in result.notes] == ["fold-constants", "fold-constants"]
    np.testing.assert_array_equal(result.module.entry.root.literal, [-3, 1])


@pytest.mark.parametrize("entry", [
    # Big constants and broadcasts of scalars are not expanded into big literals.
    """\
x = f32[1000] parameter(0)
c = f32[] constant(2)
b = f32[1000] broadcast(c), dimensions={}
ROOT z = f32[1000] add(x, b)""",
    """\
c = f32[] constant(2)
ROOT b = f32[1000] broadcast(c), dimensions={}""",
    f"""\
c = f32[{FOLD_LIMIT + 1}] constant({{{", ".join(str(i) for i in range(FOLD_LIMIT + 1))}}})
ROOT n = f32[{FOLD_LIMIT + 1}] negate(c)""",
    """\
c = f32[] constant(2)
b = f32[100,10] broadcast(c), dimensions={}
ROOT t = f32[10,100] transpose(b), dimensions={1,0}""",
    # Nothing to simplify: 0 - x, 1 / x, x * 2, x * [1, 2], convert to another type.
    """\
x = f32[2] parameter(0)
zero = f32[2] constant({0, 0})
one = f32[2] constant({1, 1})
mixed = f32[2] constant({1, 2})
a = f32[2] subtract(zero, x)
b = f32[2] divide(one, a)
c = f32[2] multiply(b, mixed)
d = f64[2] convert(c)
s = f64[1] slice(d), slice={[0:1]}
ss = f64[1] slice(d), slice={[0:2:2]}
ROOT t = (f64[1], f64[1]) tuple(s, ss)""",
    # A transpose that swaps a dot operand's free dimensions stays: the result lists them in
    # the operand's own order, which dimension numbers cannot change.
    """\
a = f32[2,3] parameter(0)
b = f32[3,5,4] parameter(1)
t = f32[3,4,5] transpose(b), dimensions={0,2,1}
ROOT d = f32[2,4,5] dot(a, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
    # x + 0.0 is not x for floats: -0.0 + 0.0 is +0.0 (1 / (x + 0) is +inf where 1 / x is -inf).
    """x = f32[2,3] parameter(0)
zero = f32[] constant(0)
zeros = f32[2,3] broadcast(zero), dimensions={}
y = f32[2,3] add(x, zeros)
ROOT z = f32[2,3] divide(zeros, y)""",
])
def test_nothing_fires(entry):
    before, result = run_pass(AlgebraicSimplifier(), hlo(entry))
    assert not result.changed
    assert result.module is before
    assert result.notes == ()


def test_a_second_run_changes_nothing():
    for _, text_in, _ in CASES.values():
        first = AlgebraicSimplifier().run(xe.parse_hlo(hlo(text_in))).module
        second = AlgebraicSimplifier().run(first)
        assert not second.changed and second.module is first


def test_no_big_literal_is_made():
    _, text_in, _ = CASES["fold broadcast scalars"]
    out = AlgebraicSimplifier().run(xe.parse_hlo(hlo(text_in))).module
    for inst in out.entry:
        if inst.opcode == "constant":
            assert inst.literal.size <= FOLD_LIMIT


def test_dead_code_stays_for_dce():
    before, result = run_pass(AlgebraicSimplifier(), hlo(f"""\
x = f32[2,3] parameter(0)
unused = f32[2,3] tanh(x)
{ONES}
y = f32[2,3] multiply(x, ones)
dead_user = f32[2,3] negate(y)
ROOT z = f32[2,3] exponential(y)"""))
    assert entry_body(result.module) == f"""\
x = f32[2,3] parameter(0)
unused = f32[2,3] tanh(x)
{ONES}
dead_user = f32[2,3] negate(x)
ROOT z = f32[2,3] exponential(x)"""


def test_semantics_on_the_golden_programs():
    from pathlib import Path

    data = Path(__file__).parents[1] / "ir" / "data" / "jax"
    for path in sorted(data.glob("*/*.lowered.hlo")):
        before = xe.parse_hlo(path.read_text())
        result = AlgebraicSimplifier().run(before)
        xe.verify(result.module)
        assert_same_meaning(before, result.module, seeds=(0,))


@pytest.mark.parametrize("backend", xe.api.BACKENDS)
def test_adding_zero_keeps_the_sign_of_negative_zero(backend):
    x = np.array([-0.0, 0.0, -1.5, np.inf], np.float32)
    with np.errstate(divide="ignore"):
        want = 1 / (x + 0)
        got = xe.jit(lambda x: 1 / (x + 0), backend=backend)(x)
    np.testing.assert_array_equal(got, want)  # +inf at -0.0, as NumPy: -0.0 + 0 is +0.0
