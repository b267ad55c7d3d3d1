"""The program as data (codegen/program.py), checked against the buffer assignment it is made
from: every temporary a launch names is the assignment's buffer at the assignment's offset,
inside the arena; no two buffers live at one step share a byte; every kernel's operands and
results are named, one for one, as the assignment places them; launches run in schedule order;
scratch space lies past the temporaries. And the drivers are rendered from it."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.codegen.cpu import generate_program
from xla_explorer.codegen.cpu.driver import plan_cpu_program
from xla_explorer.codegen.program import Argument, BufferRef, plan_program
from xla_explorer.passes.buffer_assignment import CONSTANT, OUTPUT, PARAMETER, TEMPORARY
from xla_explorer.passes.dataflow import dataflow, is_kernel

F32 = np.float32


def mlp(x, w1, w2):
    h = np.tanh(x @ w1)  # a product, then a kernel reading it: a temporary between them
    return np.maximum(h @ w2, F32(0)), h.sum(axis=0)


def chain(x):
    a = np.exp(x).sum(axis=0)  # a column sum: a kernel of its own, its result a temporary
    b = np.sort(x * a, axis=1)
    c = np.cumsum(b, axis=0)
    return c.T @ x, a


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def constants_and_passthrough(x):
    return x, x * np.arange(6, dtype=F32).reshape(2, 3), np.float32(3)


PROGRAMS = [
    (mlp, [(64, 32), (32, 48), (48, 16)]),
    (chain, [(24, 24)]),
    (softmax, [(8, 16)]),
    (constants_and_passthrough, [(2, 3)]),
]


def compiled(rng, f, shapes):
    args = [rng.standard_normal(s).astype(F32) for s in shapes]
    ex = xe.explore(f, *args, backend="cpu")
    return ex.module, ex.buffers


@pytest.fixture(params=PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
def program(request, rng):
    f, shapes = request.param
    module, assignment = compiled(rng, f, shapes)
    return module, assignment, plan_cpu_program(module, assignment)


def test_temporaries_are_the_assignments_buffers_at_its_offsets(program):
    module, assignment, plan = program
    for launch in plan.launches:
        for ref in launch.inputs + launch.outputs:
            if not isinstance(ref, BufferRef):
                continue
            b = assignment.buffer(ref.name)
            assert b.category == TEMPORARY
            assert ref.offset == assignment.offset(b)
            assert ref.size == b.size and ref.shape == tuple(b.shape.dims)
            assert np.dtype(ref.dtype) == np.dtype(b.shape.dtype)
            assert 0 <= ref.offset and ref.end <= assignment.peak_bytes
    assert plan.layout.temporary_bytes == assignment.peak_bytes
    named = {ref.name for launch in plan.launches for ref in launch.outputs
             if isinstance(ref, BufferRef)}
    assert named == {b.name for b in assignment.temporaries}  # each is some kernel's result


def test_no_two_buffers_live_at_one_step_share_a_byte(program):
    _, assignment, plan = program
    refs = {ref.name: ref for ref in plan.layout.temporaries}
    for x in refs.values():
        for y in refs.values():
            if x.name >= y.name:
                continue
            bx, by = assignment.buffer(x.name), assignment.buffer(y.name)
            if assignment.allocation(bx) is assignment.allocation(by):
                continue  # one slot, handed from a kernel's operand to its result in place
            live_together = (bx.definition_time <= by.end_time
                             and by.definition_time <= bx.end_time)
            overlap = x.offset < y.end and y.offset < x.end
            assert not (live_together and overlap and x.size and y.size), (x, y)


def test_every_kernel_names_its_operands_and_results_as_the_assignment_places_them(program):
    module, assignment, plan = program
    entry = module.entry
    flow = dataflow(entry)
    kernels = [i for i in entry.instructions if is_kernel(i)]
    assert [launch.instruction for launch in plan.launches] == kernels  # schedule order
    assert len({launch.kernel for launch in plan.launches}) == len(kernels)
    constants = [i.name for i in entry.instructions if i.opcode == "constant"]
    outputs = [b.name for b in assignment.buffers if b.category == OUTPUT]

    def agrees(ref, buffer) -> bool:
        if isinstance(ref, BufferRef):
            return buffer.category == TEMPORARY and ref.name == buffer.name
        assert isinstance(ref, Argument)
        if ref.kind == "parameter":
            return (buffer.category == PARAMETER
                    and entry.get(buffer.instruction).parameter_number == ref.number)
        if ref.kind == "constant":
            return buffer.category == CONSTANT and constants[ref.number] == buffer.instruction
        return buffer.category == OUTPUT and outputs[ref.number] == buffer.name

    for launch in plan.launches:
        inst = launch.instruction
        assert len(launch.inputs) == len(inst.operands)
        for ref, operand in zip(launch.inputs, inst.operands):
            (key,) = flow.points_to[operand.name].values()
            assert agrees(ref, assignment.defined_by(*key)), (inst.name, operand.name, ref)
        assert len(launch.outputs) == len(flow.defined[inst.name])
        for ref, index in zip(launch.outputs, flow.defined[inst.name]):
            assert agrees(ref, assignment.defined_by(inst.name, index)), (inst.name, ref)


def test_a_temporary_is_written_before_a_kernel_reads_it(program):
    _, _, plan = program
    written: set[str] = set()
    for launch in plan.launches:
        for ref in launch.inputs:
            if isinstance(ref, BufferRef):
                assert ref.name in written, (launch.kernel, ref.name)
        written |= {ref.name for ref in launch.outputs if isinstance(ref, BufferRef)}


def test_scratch_space_lies_past_the_temporaries_on_a_cache_line(rng):
    module, assignment = compiled(rng, mlp, PROGRAMS[0][1])
    plan = plan_cpu_program(module, assignment)
    scratch = [launch.scratch for launch in plan.launches if launch.scratch is not None]
    assert scratch, "the products take scratch space for packed B"
    for s in scratch:
        assert s.offset == plan.layout.scratch_offset >= assignment.peak_bytes
        assert s.offset % 64 == 0 and s.size <= plan.layout.scratch_bytes
    program = generate_program(module, assignment)
    assert program.arena_bytes == plan.layout.scratch_offset + plan.layout.scratch_bytes
    for s in scratch:  # the driver hands each product exactly that slice
        assert f"arena[{s.offset}:{s.offset + s.size}]" in program.source


def test_the_plan_without_a_target_names_the_same_buffers(program):
    module, assignment, plan = program
    bare = plan_program(module, assignment)
    assert [(launch.kernel, launch.inputs, launch.outputs) for launch in bare.launches] == [
        (launch.kernel, launch.inputs, launch.outputs) for launch in plan.launches]
    assert all(launch.code is None and launch.scratch is None for launch in bare.launches)
    assert bare.outputs == plan.outputs and bare.num_outputs == plan.num_outputs


def test_the_root_hands_back_outputs_parameters_and_constants(rng):
    module, assignment = compiled(rng, constants_and_passthrough, [(2, 3)])
    plan = plan_program(module, assignment)
    kinds = [kind for kind, _ in plan.outputs]
    assert "parameter" in kinds and "output" in kinds, plan.outputs
    assert plan.num_outputs == sum(b.category == OUTPUT for b in assignment.buffers)


def test_an_eager_op_cannot_be_planned(rng):
    x = rng.standard_normal(16).astype(F32)
    ex = xe.explore(lambda x: np.unique(x * 2) + 1, x, backend="interpreter")
    with pytest.raises(xe.CompileError, match="unique"):
        plan_program(ex.module, ex.buffers)
