"""The pipeline: one Stage per pass, claims of change checked, the verifier after each change."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xla_explorer as xe
from xla_explorer.ir.shape import Shape
from xla_explorer.passes.algsimp import AlgebraicSimplifier
from xla_explorer.passes.base import Note, Pass, PassClaimError, PassResult, Pipeline, Stage
from xla_explorer.passes.cse import CSE
from xla_explorer.passes.dataflow import is_kernel
from xla_explorer.passes.dce import DCE
from xla_explorer.passes.pipeline import default_passes

from .hlo_pass_helpers import assert_same_meaning, entry_body, hlo, run_pass

PROGRAM = hlo("""\
x = f32[2,3] parameter(0)
one = f32[] constant(1)
ones = f32[2,3] broadcast(one), dimensions={}
y = f32[2,3] multiply(x, ones)
e1 = f32[2,3] exponential(y)
e2 = f32[2,3] exponential(x)
dead = f32[2,3] tanh(x)
ROOT s = f32[2,3] add(e1, e2)""")


def test_default_passes_are_named_in_kebab_case():
    names = [p.name for p in default_passes()]
    assert names == ["algsimp", "cse", "dce", "roll-loops", "fusion", "multi-output-fusion",
                     "unused-outputs", "schedule", "buffer-assignment"]
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", n) for n in names)


def test_one_stage_per_pass_in_order():
    m = xe.parse_hlo(PROGRAM)
    pipeline = Pipeline(default_passes()[:3])
    out = pipeline.run(m)
    assert [s.name for s in pipeline.stages] == ["trace", "algsimp", "cse", "dce"]
    trace, algsimp, cse, dce = pipeline.stages
    assert trace.module is m and trace.changed
    assert out is dce.module
    for stage in pipeline.stages:
        assert isinstance(stage, Stage)
        assert isinstance(stage.seconds, float) and stage.seconds >= 0
        assert all(isinstance(n, Note) for n in stage.notes)
        assert stage.hlo() == stage.module.to_text()
    assert [n.rule for n in algsimp.notes] == ["mul-one"]
    assert [n.instructions for n in cse.notes] == [("e2", "e1")]
    assert sorted(n.instructions[0] for n in dce.notes) == ["dead", "one", "ones"]
    assert all(s.changed for s in pipeline.stages)
    assert entry_body(out) == """\
x = f32[2,3] parameter(0)
e1 = f32[2,3] exponential(x)
ROOT s = f32[2,3] add(e1, e1)"""
    assert_same_meaning(m, out)


def test_without_an_initial_stage_and_with_nothing_to_do():
    m = xe.parse_hlo(hlo("""\
x = f32[3] parameter(0)
ROOT n = f32[3] negate(x)"""))
    pipeline = Pipeline([AlgebraicSimplifier(), CSE(), DCE()])
    out = pipeline.run(m, initial_stage=None)
    assert out is m
    assert [(s.name, s.changed, s.notes) for s in pipeline.stages] == [
        ("algsimp", False, ()), ("cse", False, ()), ("dce", False, ())]
    assert all(s.module is m for s in pipeline.stages)


class Liar(Pass):
    name = "liar"

    def __init__(self, claim: bool, change: bool):
        self.claim, self.change = claim, change

    def run(self, module):
        if self.change:
            root = module.entry.root
            entry = module.entry.__class__(module.entry.name, module.entry.instructions[:-1] + (
                root.replace(opcode="exponential"),))
            module = module.with_entry(entry)
        return PassResult(module, self.claim)


@pytest.mark.parametrize("claim, change", [(True, False), (False, True)])
def test_a_pass_that_lies_about_change(claim, change):
    m = xe.parse_hlo(hlo("""\
x = f32[3] parameter(0)
ROOT n = f32[3] negate(x)"""))
    with pytest.raises(PassClaimError, match="liar"):
        Pipeline([Liar(claim, change)]).run(m)


def test_metadata_alone_is_no_change():
    class Renote(Pass):
        name = "renote"

        def run(self, module):
            root = module.entry.root
            md = root.metadata.__class__(op_name="renamed")
            entry = module.entry.__class__(module.entry.name,
                                           module.entry.instructions[:-1] + (root.replace(metadata=md),))
            return PassResult(module.with_entry(entry), False)

    m = xe.parse_hlo(hlo("""\
x = f32[3] parameter(0)
ROOT n = f32[3] negate(x)"""))
    Pipeline([Renote()]).run(m)  # the fingerprint ignores metadata


class Breaker(Pass):
    """Declares the root's shape wrong: the verifier must catch it."""

    name = "breaker"

    def run(self, module):
        root = module.entry.root
        bad = root.replace(shape=Shape(np.float32, (4,)))
        entry = module.entry.__class__(module.entry.name, module.entry.instructions[:-1] + (bad,))
        return PassResult(module.with_entry(entry), True, (Note("broke it"),))


def test_the_verifier_runs_after_a_pass_that_changed_something():
    m = xe.parse_hlo(hlo("""\
x = f32[3] parameter(0)
ROOT n = f32[3] negate(x)"""))
    pipeline = Pipeline([AlgebraicSimplifier(), Breaker(), DCE()])
    with pytest.raises(xe.VerifyError, match="declared f32\\[4\\]"):
        pipeline.run(m)
    assert [s.name for s in pipeline.stages] == ["trace", "algsimp"]  # nothing after it
    # The check can be turned off (to look at what a broken pass made).
    pipeline = Pipeline([Breaker()], verify_each=False)
    assert str(pipeline.run(m).entry.root.shape) == "f32[4]"


def test_the_verifier_does_not_run_after_a_pass_that_changed_nothing():
    # An invalid input (the ops do not match) passes through passes that leave it alone.
    m = xe.parse_hlo(hlo("""\
x = f32[3] parameter(0)
ROOT n = s32[3] negate(x)"""))
    with pytest.raises(xe.VerifyError):
        xe.verify(m)
    assert Pipeline([CSE(), DCE()]).run(m) is m


def test_stages_are_snapshots():
    m = xe.parse_hlo(PROGRAM)
    pipeline = Pipeline(default_passes()[:3])
    pipeline.run(m)
    texts = [s.hlo() for s in pipeline.stages]
    assert len(set(texts)) == 4  # every pass changed something; earlier snapshots unchanged
    assert texts[0] == m.to_text()
    assert "multiply" in texts[0] and "multiply" not in texts[1]
    assert "tanh" in texts[2] and "tanh" not in texts[3]


def test_default_pipeline_on_the_golden_programs():
    from pathlib import Path

    data = Path(__file__).parents[1] / "ir" / "data" / "jax"
    for path in sorted(data.glob("*/*.hlo")):
        m = xe.parse_hlo(path.read_text())
        pipeline = Pipeline(default_passes())
        out = pipeline.run(m)
        xe.verify(out)
        assert_same_meaning(m, out, seeds=(0,))
        # Never more kernels than the module came with (XLA's own fusions included).
        kernels = lambda mod: sum(is_kernel(i) for i in mod.entry.instructions)  # noqa: E731
        assert kernels(out) <= kernels(m), path.name


# ---------------------------------------------------------------------------------------------
# Random chains of rewritable ops: every pass, and the whole pipeline, keep their meaning.

SHAPES = [(6,), (2, 3), (3, 2), (1, 6), (6, 1), (1, 2, 3), (3, 1, 2)]


def _dims(shape) -> str:
    return ",".join(map(str, shape))


@st.composite
def rewritable_programs(draw):
    lines = ["x = f32[2,3] parameter(0)"]
    values = [("x", (2, 3))]
    for n in range(draw(st.integers(1, 12))):
        name, shape = draw(st.sampled_from(values[-3:]))
        kind = draw(st.sampled_from(["negate", "const", "transpose", "reshape", "broadcast",
                                     "convert", "slice", "fold", "twice"]))
        out = f"v{n}"
        if kind == "negate":
            lines.append(f"{out} = f32[{_dims(shape)}] negate({name})")
        elif kind == "const":
            op = draw(st.sampled_from(["add", "subtract", "multiply", "divide"]))
            c = draw(st.sampled_from(["0", "1", "2"]))
            lines += [f"c{n} = f32[] constant({c})",
                      f"b{n} = f32[{_dims(shape)}] broadcast(c{n}), dimensions={{}}"]
            operands = draw(st.sampled_from([f"{name}, b{n}", f"b{n}, {name}"]))
            lines.append(f"{out} = f32[{_dims(shape)}] {op}({operands})")
        elif kind == "transpose":
            perm = draw(st.permutations(range(len(shape))))
            lines.append(f"{out} = f32[{_dims(shape[p] for p in perm)}] transpose({name}), "
                         f"dimensions={{{_dims(perm)}}}")
            shape = tuple(shape[p] for p in perm)
        elif kind == "reshape":
            shape = draw(st.sampled_from(SHAPES))
            lines.append(f"{out} = f32[{_dims(shape)}] reshape({name})")
        elif kind == "broadcast":
            # A new leading dimension of 1, the operand's dimensions kept in order or reversed.
            rank = len(shape)
            order = draw(st.sampled_from([list(range(rank)), list(range(rank))[::-1]]))
            new_shape = [1] + [0] * rank
            for src, dst in enumerate(order):
                new_shape[dst + 1] = shape[src]
            dims = [d + 1 for d in order]
            shape = tuple(new_shape)
            lines.append(f"{out} = f32[{_dims(shape)}] broadcast({name}), dimensions={{{_dims(dims)}}}")
        elif kind == "convert":
            lines.append(f"{out} = f32[{_dims(shape)}] convert({name})")
        elif kind == "slice":
            spec = ", ".join(f"[0:{d}]" for d in shape)
            lines.append(f"{out} = f32[{_dims(shape)}] slice({name}), slice={{{spec}}}")
        elif kind == "fold":
            vals = draw(st.lists(st.integers(-3, 3), min_size=6, max_size=6))
            lines += [f"k{n} = f32[6] constant({{{', '.join(map(str, vals))}}})",
                      f"kr{n} = f32[{_dims(shape)}] reshape(k{n})",
                      f"{out} = f32[{_dims(shape)}] multiply({name}, kr{n})"]
        else:  # the same instruction twice, for CSE
            lines += [f"t{n} = f32[{_dims(shape)}] tanh({name})",
                      f"u{n} = f32[{_dims(shape)}] tanh({name})",
                      f"{out} = f32[{_dims(shape)}] add(t{n}, u{n})"]
        values.append((out, shape))
    name, shape = values[-1]
    lines.append(f"ROOT r = f32[{_dims(shape)}] reshape({name})" if shape == (2, 3) else
                 f"ROOT r = f32[{_dims(shape)}] negate({name})")
    return hlo("\n".join(lines))


@settings(max_examples=40, deadline=None)
@given(rewritable_programs())
def test_random_programs_keep_their_meaning(text):
    check_meaning_kept(text)


@pytest.mark.deep
@settings(max_examples=150, deadline=None)
@given(rewritable_programs())
def test_many_random_programs_keep_their_meaning(text):
    check_meaning_kept(text)


def check_meaning_kept(text):
    m = xe.verify(xe.parse_hlo(text))
    for p in default_passes():
        run_pass(p, text)  # each pass alone: valid, honest, same meaning
    pipeline = Pipeline(default_passes())
    out = pipeline.run(m)
    assert_same_meaning(m, out)
    again = Pipeline(default_passes()).run(out, initial_stage=None)
    assert again is out  # a fixed point: nothing left for a second round
