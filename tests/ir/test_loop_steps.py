"""`loop_steps` finds the steps of a loop that tracing unrolled, and nothing else."""
from __future__ import annotations

import numpy as np

import xla_explorer as xe
from xla_explorer.ir.structure import Steps, loop_steps


def traced(f, *args):
    module = xe.explore(f, *args, backend="interpreter").stages[0].module
    return module, loop_steps(module, module.entry)


def test_a_chain_of_steps_is_one_loop():
    def decay(x, y):
        for _ in range(10):
            x = np.tanh(x * y) + x
        return x

    module, steps = traced(decay, np.ones(4, np.float32), np.ones(4, np.float32))
    ((start, length, count),) = [(s.start, s.length, s.count) for s in steps]
    assert length == 3 and count >= 9  # multiply, tanh, add
    insts = module.entry.instructions
    for k in range(1, count):  # each step reads the step before, and y
        mul = insts[start + k * length]
        assert mul.opcode == "multiply"
        assert mul.operands[0] is insts[start + k * length - 1]


def test_the_same_ops_on_different_inputs_are_no_loop():
    def three(a, b, c):
        return np.exp(a), np.exp(b), np.exp(c), np.exp(a) * 2

    _, steps = traced(three, *[np.ones(3, np.float32)] * 3)
    assert steps == []


def test_steps_that_change_a_constant_are_no_loop():
    def shifts(x):
        for k in range(6):
            x = x + np.float32(k)
        return x

    _, steps = traced(shifts, np.ones(3, np.float32))
    assert steps == []


def test_two_loops_one_after_the_other():
    def two(x):
        for _ in range(5):
            x = x * np.float32(2)
        for _ in range(4):
            x = np.sin(x)
        return x

    module, steps = traced(two, np.ones(3, np.float32))
    insts = module.entry.instructions
    ops = [{i.opcode for i in insts[s.start:s.start + s.length]} for s in steps]
    assert len(steps) == 2 and all(isinstance(s, Steps) for s in steps)
    assert "multiply" in ops[0] and ops[1] == {"sine"}
    assert steps[0].count >= 4 and steps[1].count >= 3 and steps[0].end <= steps[1].start
