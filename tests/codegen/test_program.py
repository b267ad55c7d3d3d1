"""The program as data (codegen/program.py), checked against the buffer assignment it is made
from: every temporary a launch names is the assignment's buffer at the assignment's offset,
inside the arena; no two buffers live at one step share a byte; every kernel's operands and
results are named, one for one, as the assignment places them; launches run in schedule order;
each kernel's scratch space lies where no buffer live at its step does. And the drivers are
rendered from it."""
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


def test_scratch_lies_where_the_assignment_put_it_clear_of_every_live_buffer(rng, monkeypatch):
    from xla_explorer.codegen import packing

    # Weights whose packed panels (96 and 128 rows of 128 bytes) are too deep for a stack
    # bound of 8 KiB: packed B in the arena, each product's at its step.
    monkeypatch.setattr(packing, "STACK_B_BYTES", 8 * 1024)
    module, assignment = compiled(rng, mlp, [(64, 96), (96, 128), (128, 96)])
    plan = plan_cpu_program(module, assignment)
    scratch = [launch for launch in plan.launches if launch.scratch is not None]
    assert scratch, "the products take scratch space for packed B"
    steps = {inst.name: t for t, inst in enumerate(module.entry.instructions)}
    for launch in scratch:
        s, t = launch.scratch, steps[launch.instruction.name]
        slot = assignment.scratch_of(launch.instruction.name)
        assert slot is not None and (slot.offset, slot.start, slot.end) == (s.offset, t, t)
        assert s.offset % 64 == 0 and s.size <= slot.size
        for a in assignment.allocations:  # nothing else live at that step shares a byte
            if a is not slot and a.start <= t <= a.end:
                assert a.offset + a.size <= s.offset or s.offset + s.size <= a.offset
    program = generate_program(module, assignment)
    # The assignment's arena is the one the executable allocates: what the Buffers tab shows.
    assert program.arena_bytes == plan.layout.arena_bytes == assignment.peak_bytes
    for launch in scratch:  # the driver hands each product exactly that slice
        s = launch.scratch
        assert f"arena[{s.offset}:{s.offset + s.size}]" in program.source


def test_free_space_is_the_lowest_gap_among_the_buffers_live_at_the_step(rng):
    from types import SimpleNamespace as Slot

    from xla_explorer.codegen.program import free_space

    live = [Slot(offset=0, size=128, start=0, end=5), Slot(offset=256, size=64, start=2, end=3),
            Slot(offset=512, size=64, start=0, end=9)]
    a = Slot(allocations=live)
    assert free_space(a, 1, 384, 64) == 128  # [128, 512) is free at step 1
    assert free_space(a, 2, 128, 64) == 128  # [128, 256) between two live buffers
    assert free_space(a, 2, 192, 64) == 320  # [320, 512) between the second and third
    assert free_space(a, 2, 256, 64) == 576  # no gap holds it: past the last live buffer
    assert free_space(a, 7, 512, 64) == 0  # only the last is live at step 7
    assert free_space(a, 1, 100, 256) == 256  # on a multiple of the alignment


def test_a_loops_body_arena_is_scratch_placed_clear_of_the_live_buffers(rng):
    def f(u, w):
        v = np.tanh(u @ w)  # a temporary live across the loop
        return xe.fori_loop(0, 20, lambda i, s: s * F32(0.5) + v, u) + v
    x = [rng.standard_normal((16, 16)).astype(F32) for _ in range(2)]
    ex = xe.explore(f, *x, backend="cpu")
    np.testing.assert_allclose(ex.run(*x), f(*x), rtol=1e-5, atol=1e-5)  # f runs eagerly
    module, assignment, plan = ex.module, ex.buffers, ex.executable.program.plan
    loop = next(launch for launch in plan.launches if launch.instruction.opcode == "while")
    steps = {inst.name: t for t, inst in enumerate(module.entry.instructions)}
    t, s = steps[loop.instruction.name], loop.scratch
    assert s is not None and s.offset % 64 == 0
    for a in assignment.allocations:
        if a.start <= t <= a.end:
            assert a.offset + a.size <= s.offset or s.offset + s.size <= a.offset
    assert ex.executable.arena_bytes == plan.layout.arena_bytes >= s.offset + s.size


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
