"""Buffer assignment on random NumPy programs: what must hold for every program.

- Temporaries live at the same step never share bytes of the arena (only a value a kernel
  wrote in place over its dying operand shares that operand's slot, and only from that step).
- lower_bound_bytes <= peak_bytes <= the temporaries' slots laid end to end.
- A program that fuses into one kernel needs no temporary at all.
- Running the fused module through the arena gives exactly what the interpreter gives for the
  module before fusion: the same ops on the same values, so the same bits.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import xla_explorer as xe
from xla_explorer.passes.buffer_assignment import TEMPORARY, align
from xla_explorer.runtime.arena import run_in_arena
from xla_explorer.runtime.reference import run_module

from .test_random_programs import build, describe, programs

# 500 random programs.
pytestmark = pytest.mark.slow


def _check_no_overlap(a):
    slots = a.allocations
    for i, s in enumerate(slots):
        assert s.offset % a.alignment == 0 and s.size % a.alignment == 0
        assert s.offset + s.size <= a.peak_bytes
        for t in slots[i + 1:]:
            if s.start <= t.end and t.start <= s.end:  # live at a common step
                assert s.offset + s.size <= t.offset or t.offset + t.size <= s.offset, (s, t)
        # Values sharing a slot follow one another: each starts where the one before ends
        # (the kernel that writes in place), so no two are live past that step together.
        values = sorted(s.values, key=lambda v: v.definition_time)
        for before, after in zip(values, values[1:]):
            assert before.end_time == after.definition_time, (before, after)
            assert any(sh.operand == before.name and sh.output == after.name
                       for sh in a.sharings)


# Ops that make kernel boundaries (dots, column reductions, row reductions read later) mixed
# with element-wise work, so most programs have several kernels and temporaries between them.
BOUNDARY_OPS = ["gram", "sum0", "var0", "min0", "mean-all", "softmax1", "argmax1-as-float",
                "add", "multiply", "where", "tanh", "sin", "exp(-|x|)", "flip0"]


_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=100, suppress_health_check=_HEALTH)
@given(programs(BOUNDARY_OPS))
def test_buffer_assignment_of_random_programs(case):
    check_buffer_assignment(case)


@pytest.mark.deep  # hundreds more
@settings(max_examples=500, suppress_health_check=_HEALTH)
@given(programs(BOUNDARY_OPS))
def test_buffer_assignment_of_hundreds_of_random_programs(case):
    check_buffer_assignment(case)


def check_buffer_assignment(case):
    inputs, steps, n_out = case
    program = build(steps, n_out)
    with np.errstate(all="ignore"):
        ex = xe.explore(program, *inputs)
        a = ex.buffers
        _check_no_overlap(a)
        assert not a.conflicts()
        temporaries = [b for b in a.buffers if b.category == TEMPORARY]
        assert sorted(v.name for s in a.allocations for v in s.values) == sorted(
            b.name for b in temporaries)
        assert a.lower_bound_bytes <= a.peak_bytes <= sum(align(b.size) for b in temporaries)
        if len(ex.fusions) == 1 and "custom-call" not in ex.hlo():
            assert a.peak_bytes == 0 and not temporaries, describe(steps)

        unfused = ex.stage("dce").module
        args = [x.copy() for x in inputs]
        want = run_module(unfused, args)
        got = run_in_arena(ex.module, a, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w, err_msg=describe(steps))
