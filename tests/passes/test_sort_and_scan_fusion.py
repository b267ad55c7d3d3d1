"""Fusion around XLA's sort and the scan form of reduce-window, in HLO text: a
scan fuses its element-wise producers (a kLoop, as in XLA) and is a kernel boundary for its
consumers; a sort fuses with nothing, either way. Each refusal says why."""
from __future__ import annotations

import numpy as np

import xla_explorer as xe
from xla_explorer.passes.fusion import Fusion

from .hlo_pass_helpers import ADD, entry_body, hlo, run_pass

LT = """\
lt {
  lt.a = f32[] parameter(0)
  lt.b = f32[] parameter(1)
  ROOT lt.r = pred[] compare(lt.a, lt.b), direction=LT
}"""


def test_a_scan_fuses_its_element_wise_producer_and_its_consumer_reads_memory():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[4,8] parameter(0)
e = f32[4,8] exponential(x)
z = f32[] constant(0)
s = f32[4,8] reduce-window(e, z), window={size=1x8 pad=0_0x7_0}, to_apply=add
ROOT n = f32[4,8] negate(s)""", ADD))
    assert entry_body(result.module) == """\
x = f32[4,8] parameter(0)
exponential_reduce_window_fusion.1 = f32[4,8] fusion(x), kind=kLoop, calls=fused_computation.2
ROOT n = f32[4,8] negate(exponential_reduce_window_fusion.1)"""
    fused = result.module.computation("fused_computation.2")
    assert [i.opcode for i in fused.instructions] == [
        "parameter", "exponential", "constant", "reduce-window"]
    messages = [d.message for d in result.notes]
    assert "fused e into s: element-wise, single consumer" in messages
    assert ("not fused s into n: s is a scan: each of its elements needs every element before "
            "it along the axis, so n reads its result from memory, in a kernel of its own (a "
            "kernel boundary, as in XLA)") in messages


def test_a_sort_is_a_kernel_of_its_own():
    before, result = run_pass(Fusion(), hlo("""\
x = f32[4,8] parameter(0)
e = f32[4,8] exponential(x)
s = f32[4,8] sort(e), dimensions={1}, is_stable=true, to_apply=lt
ROOT n = f32[4,8] negate(s)""", LT))
    assert not result.changed and result.module is before
    assert [d.message for d in result.notes] == [
        "not fused s into n: s is a sort: each element of its result depends on its whole "
        "row, so it is a kernel of its own and n reads its result from memory",
        "not fused e into s: s is a sort, which reads its operands from memory (it visits each "
        "row's elements in an order the values decide, several times over)"]
    assert not any(d.fused for d in result.notes)


def test_a_traced_running_mean_runs_as_one_scan_kernel_on_every_backend():
    def running_mean(x):
        return np.cumsum(x * 2.0, axis=-1) / np.arange(1, x.shape[-1] + 1)
    x = np.random.default_rng(0).standard_normal((3, 50))
    for backend in ("interpreter", "cpu"):
        ex = xe.explore(running_mean, x, backend=backend)
        got = ex.run(x)
        assert got.dtype == np.float64 and got.shape == (3, 50)
        np.testing.assert_array_equal(got, running_mean(x))
    final = xe.parse_hlo(ex.hlo())
    scans = [c for c in final.computations
             if any(i.opcode == "reduce-window" for i in c.instructions)]
    assert len(scans) == 1  # the doubling fused into the scan's kernel
    assert "multiply" in [i.opcode for i in scans[0].instructions]
