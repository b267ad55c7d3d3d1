"""Fusion of gather and scatter, HLO text in and out: a gather is index arithmetic,
so it fuses into its consumer with its index producers (XLA's loop fusion); an expensive
gathered operand stays a kernel of its own (a gather may read one element many times); a
scatter is always a kernel of its own, fusing nothing and fused into nothing, and may write in
place over an operand that dies there."""
from __future__ import annotations

import re

import numpy as np

import xla_explorer as xe
from xla_explorer.compiler import compile as compile_module
from xla_explorer.passes.fusion import Fusion

from .hlo_pass_helpers import entry_body, hlo, run_pass

ADD_S32 = """\
add_f32 {
  add.lhs = f32[] parameter(0)
  add.rhs = f32[] parameter(1)
  ROOT add.sum = f32[] add(add.lhs, add.rhs)
}"""

# Indices made in range by a clamp, so that the interpreter (the judge of every pass test)
# accepts the random inputs.
INDICES = """\
i = s32[6] parameter(1)
lo = s32[] constant(0)
hi = s32[] constant(4)
ic = s32[6] clamp(lo, i, hi)"""


def test_gather_fuses_into_its_consumer_with_its_index_producers():
    _, result = run_pass(Fusion(), hlo(INDICES + """
x = f32[5,3] parameter(0)
y = f32[5,3] multiply(x, x)
g = f32[6,3] gather(y, ic), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
ROOT n = f32[6,3] negate(g)"""))
    body = entry_body(result.module)
    assert body.count(" fusion(") == 1 and "kind=kLoop" in body, body
    reasons = [d.reason for d in result.notes]
    assert any(r.startswith("fused g into n: data movement") for r in reasons), reasons
    assert any(r.startswith("fused ic into g") for r in reasons), reasons
    assert any(r.startswith("fused y into g") for r in reasons), reasons


def test_an_expensive_gathered_operand_stays_a_kernel():
    _, result = run_pass(Fusion(), hlo(INDICES + """
x = f32[5,3] parameter(0)
e = f32[5,3] exponential(x)
g = f32[6,3] gather(e, ic), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
ROOT n = f32[6,3] negate(g)"""))
    reasons = [d.reason for d in result.notes if not d.fused]
    assert ("not fused e into g: e is expensive (exponential) and g is a gather, which may "
            "read the same element of e many times (repeated indices); e is computed once, in "
            "a kernel of its own") in reasons, reasons
    body = entry_body(result.module)
    assert "exponential(x)" in body  # its own kernel, not inside the fusion


def test_a_scatter_is_a_kernel_of_its_own():
    _, result = run_pass(Fusion(), hlo("""\
i = s32[6,1] parameter(1)
lo = s32[] constant(0)
hi = s32[] constant(4)
ic = s32[6,1] clamp(lo, i, hi)
x = f32[5,3] parameter(0)
u = f32[6,3] parameter(2)
y = f32[5,3] multiply(x, x)
v = f32[6,3] negate(u)
s = f32[5,3] scatter(y, ic, v), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32
ROOT n = f32[5,3] negate(s)""", ADD_S32))
    body = entry_body(result.module)
    # Unfused, y and v read from memory (the clamp with its constants is a fusion of its own).
    assert re.search(r"\n  s = f32\[5,3\] scatter\(y, \S+, v\)", "\n  " + body.replace("\n", "\n  ")), body
    reasons = [d.reason for d in result.notes if not d.fused]
    assert ("not fused s into n: s is a scatter: it applies its updates one after another in "
            "a loop of its own, so it is a kernel of its own and its result is read from "
            "memory") in reasons, reasons
    for producer in ("y", "ic", "v"):
        assert (f"not fused {producer} into s: s is a scatter, which runs as a loop of its "
                "own over its updates, in order; its operands are read from memory") in reasons


def test_a_scatter_writes_in_place_over_a_dying_operand():
    text = hlo("""\
i = s32[6,1] parameter(1)
x = f32[5,3] parameter(0)
u = f32[6,3] parameter(2)
e = f32[5,3] exponential(x)
s = f32[5,3] scatter(e, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32
ROOT n = f32[5,3] negate(s)""", ADD_S32)
    c = compile_module(xe.parse_hlo(text), "cpu")
    notes = [n.message for st in c.stages if st.name == "buffer-assignment" for n in st.notes]
    assert any(m.startswith("s writes its result in place over e:") and "a scatter reads its "
               "operand only to copy it into its result" in m for m in notes), notes
    rng = np.random.default_rng(0)
    x, u = rng.standard_normal((5, 3)).astype(np.float32), np.ones((6, 3), np.float32)
    idx = np.array([[0], [4], [0], [2], [4], [4]], np.int32)
    want = np.exp(x)
    np.add.at(want, idx[:, 0], u)
    (got,) = c.executable(x, idx, u)
    np.testing.assert_allclose(got, -want, rtol=1e-6)
