"""Helpers for pass tests: HLO text in, one pass, HLO text out, and the meaning kept."""
from __future__ import annotations

import textwrap

import numpy as np
import xla_explorer as xe
from xla_explorer.ir.printer import format_computation
from xla_explorer.passes.base import Pass, PassResult
from xla_explorer.runtime.reference import run_module


# Reducer computations for reduce's to_apply (name.lhs, name.rhs, ROOT).
ADD = """\
add {
  add.lhs = f32[] parameter(0)
  add.rhs = f32[] parameter(1)
  ROOT add.sum = f32[] add(add.lhs, add.rhs)
}"""

MIN = """\
min {
  min.lhs = f32[] parameter(0)
  min.rhs = f32[] parameter(1)
  ROOT min.min = f32[] minimum(min.lhs, min.rhs)
}"""

MAX = """\
max {
  max.lhs = f32[] parameter(0)
  max.rhs = f32[] parameter(1)
  ROOT max.max = f32[] maximum(max.lhs, max.rhs)
}"""

# Two reductions of one f32[16] as separate kernels (a sum and a sum of squares), with ADD:
# the computations for `fusion(x), calls=fused_sum` and `calls=fused_sumsq`.
SUM_AND_SUMSQ = ADD + """

fused_sum {
  sum.x = f32[16] parameter(0)
  sum.zero = f32[] constant(0)
  ROOT sum.r = f32[] reduce(sum.x, sum.zero), dimensions={0}, to_apply=add
}

fused_sumsq {
  sumsq.x = f32[16] parameter(0)
  sumsq.zero = f32[] constant(0)
  sumsq.sq = f32[16] multiply(sumsq.x, sumsq.x)
  ROOT sumsq.r = f32[] reduce(sumsq.sq, sumsq.zero), dimensions={0}, to_apply=add
}"""


def hlo(entry: str, computations: str = "") -> str:
    """A module's text from an ENTRY body (and computations it calls)."""
    body = textwrap.indent(textwrap.dedent(entry).strip("\n"), "  ")
    comps = textwrap.dedent(computations).strip("\n")
    return f"HloModule test\n\n{comps + chr(10) + chr(10) if comps else ''}ENTRY main {{\n{body}\n}}\n"


def entry_body(module: xe.Module) -> str:
    """The ENTRY computation's instruction lines, unindented: what a pass test compares."""
    lines = format_computation(module.entry, entry=True).splitlines()[1:-1]
    return "\n".join(line[2:] for line in lines)


def random_inputs(module: xe.Module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    args = []
    for p in module.entry.parameters:
        dims, dtype = p.shape.dims, p.shape.dtype
        if dtype.kind == "f":
            args.append(rng.standard_normal(dims).astype(dtype))
        elif dtype.kind == "i":
            args.append(rng.integers(-20, 20, dims).astype(dtype))
        else:
            args.append(rng.random(dims) < 0.5)
    return args


def assert_same_meaning(before: xe.Module, after: xe.Module, seeds=(0, 1)):
    """Both modules give the same outputs on random inputs (the interpreter is the judge)."""
    for seed in seeds:
        args = random_inputs(before, seed)
        want = run_module(before, args)
        got = run_module(after, args)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0, equal_nan=True)


def run_pass(p: Pass, text: str) -> tuple[xe.Module, PassResult]:
    """Parse and verify `text`, run `p`, check its claim and the result's validity and meaning."""
    before = xe.verify(xe.parse_hlo(text))
    fingerprint = before.fingerprint()
    text = before.to_text()
    result = p.run(before)
    # Modules are immutable: printed afresh (the fingerprint is worked out once per module).
    assert before.to_text() == text
    assert result.changed == (result.module.fingerprint() != fingerprint)
    if not result.changed:
        # Unchanged means the same object; notes may still say what was refused or measured.
        assert result.module is before
    xe.verify(result.module)
    assert_same_meaning(before, result.module)
    again = xe.parse_hlo(result.module.to_text())  # the result prints as valid text
    assert again.to_text() == result.module.to_text()
    return before, result
