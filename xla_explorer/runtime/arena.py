"""Running a module through its buffer assignment: ONE arena for every temporary.

The entry runs instruction by instruction in schedule order, each kernel evaluated by the
reference interpreter (a fusion from its fused computation, a custom-call by its NumPy
implementation), and each temporary result is written into its view of one `np.empty` arena at
the offset the assignment gave it. Later kernels read their operands from those views. So the
assignment is tested, not just drawn: two live buffers given overlapping bytes give a wrong
answer here.

A kernel whose result lands on bytes one of its own operands occupies (in-place sharing, or a
wrong placement) is run as generated code runs: it writes its result in index order while it
still reads its operands. The interpreter plays that in chunks: it writes the first chunk of the
result, evaluates the kernel again on the partly overwritten operand for the next chunk, and so
on. A kernel that reads each operand element only where it writes is unaffected; one that reads
elsewhere (a broadcast, a reversal, a reduction) gets a wrong answer here, as it would on a CPU.

Outputs are written to arrays of their own; parameters and constants are read where they lie.
What comes back is copied out: nothing returned is a view of the arena or of an input.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..ir.module import Computation, Instruction, Module
from ..passes.buffer_assignment import (EAGER, OUTPUT, TEMPORARY, BufferAssignment,
                                        buffer_name)
from ..passes.dataflow import is_kernel
from ..tree import leaves
from .reference import Interpreter


class Arena:
    """One block of bytes and the typed views of it that the assignment's temporaries are."""

    def __init__(self, assignment: BufferAssignment):
        self.assignment = assignment
        self.bytes = np.empty(assignment.peak_bytes, dtype=np.uint8)

    def view(self, name: str) -> np.ndarray:
        b = self.assignment.buffer(name)
        offset = self.assignment.offset(b)
        if offset is None:
            raise KeyError(f"{name} is a {b.category}, not in the arena")
        if offset + b.size > self.bytes.size:
            raise ValueError(f"{name} at offset {offset} ({b.size} bytes) runs past the end of "
                             f"the {self.bytes.size}-byte arena")
        raw = self.bytes[offset:offset + b.size]
        return raw.view(b.shape.dtype).reshape(b.shape.dims)


def _one_instruction(inst: Instruction) -> Computation:
    """A computation that runs just `inst` on parameters standing for its operands, so the
    interpreter evaluates it with the module's called computations in reach."""
    params = tuple(Instruction(f"arg.{n}", "parameter", o.shape, parameter_number=n)
                   for n, o in enumerate(inst.operands))
    return Computation(f"run.{inst.name}", params + (inst.replace(operands=params),))


def _leaf(value, index):
    for i in index:
        value = value[i]
    return value


def _rebuild(shape, get, index=()):
    """The value of `shape` whose array at each leaf index is `get(index)`."""
    if not shape.is_tuple:
        return get(index)
    return tuple(_rebuild(e, get, index + (i,)) for i, e in enumerate(shape.elements))


def run_in_arena(module: Module, assignment: BufferAssignment, args: Sequence) -> list:
    """The root tuple's elements for `args`, every temporary living in one arena laid out as
    `assignment` says (which must be the assignment of this module's entry)."""
    comp = module.entry
    params = comp.parameters
    if len(args) != len(params):
        raise TypeError(f"{module.name} takes {len(params)} arguments, got {len(args)}")
    if assignment.module is not module and (
            assignment.module.fingerprint() != module.fingerprint()
            or [i.name for i in assignment.module.entry] != [i.name for i in comp]):
        raise ValueError(f"the buffer assignment is of another module (or {module.name} in "
                         f"another order); assign buffers for the module being run")
    arena = Arena(assignment)
    interp = Interpreter(module)
    env: dict[int, object] = {}
    for inst in comp.instructions:
        vals = [env[id(o)] for o in inst.operands]
        if inst.opcode == "parameter":
            p = inst.parameter_number
            env[id(inst)] = np.asarray(args[p], dtype=inst.dtype).reshape(inst.dims)
        elif not is_kernel(inst):  # constants, tuple, get-tuple-element: no new memory
            env[id(inst)] = interp.evaluate(_one_instruction(inst), vals)
        elif _writes_over_operands(inst, vals, arena, assignment):
            env[id(inst)] = _run_in_index_order(inst, vals, interp, arena, assignment)
        else:
            result = interp.evaluate(_one_instruction(inst), vals)
            env[id(inst)] = _rebuild(inst.shape, lambda idx: _store(
                arena, assignment, buffer_name(inst.name, idx), _leaf(result, idx)))
    out = env[id(comp.root)]
    out = list(out) if isinstance(out, tuple) else [out]
    return [_copy(v) for v in out]


# How many pieces a kernel that writes over its operands writes its result in.
CHUNKS = 4


def _arena_leaves(inst: Instruction, assignment: BufferAssignment) -> list:
    """(index, buffer name) of each result of inst that lives in the arena."""
    return [(idx, buffer_name(inst.name, idx)) for idx in _indices(inst.shape)
            if assignment.offset(buffer_name(inst.name, idx)) is not None]


def _indices(shape, index=()):
    if not shape.is_tuple:
        return [index]
    return [i for k, e in enumerate(shape.elements) for i in _indices(e, index + (k,))]


def _writes_over_operands(inst, vals, arena: Arena, assignment: BufferAssignment) -> bool:
    """Whether a result of inst is placed on bytes one of its operands is read from."""
    targets = [arena.view(name) for _, name in _arena_leaves(inst, assignment)]
    operands = [v for val in vals for v in leaves(val)]
    return any(np.shares_memory(t, v) for t in targets for v in operands)


def _run_in_index_order(inst, vals, interp, arena: Arena, assignment: BufferAssignment):
    """Run inst as a kernel that writes over its own operands does: chunk k of every result is
    written before the kernel reads what it needs for chunk k + 1."""
    in_arena = {idx for idx, _ in _arena_leaves(inst, assignment)}
    dests = {}
    for idx in _indices(inst.shape):
        name = buffer_name(inst.name, idx)
        if idx in in_arena:
            dests[idx] = arena.view(name)
        else:
            b = assignment.buffer(name)
            dests[idx] = np.empty(b.shape.dims, b.shape.dtype)
    for k in range(CHUNKS):
        result = interp.evaluate(_one_instruction(inst), vals)  # reads the arena as it is now
        for idx, dest in dests.items():
            flat = dest.reshape(-1)
            lo, hi = k * flat.size // CHUNKS, (k + 1) * flat.size // CHUNKS
            flat[lo:hi] = np.asarray(_leaf(result, idx)).reshape(-1)[lo:hi]
    return _rebuild(inst.shape, lambda idx: dests[idx] if idx in in_arena else _store(
        arena, assignment, buffer_name(inst.name, idx), dests[idx]))


def _store(arena: Arena, assignment: BufferAssignment, name: str, value) -> np.ndarray:
    """Write one result where the assignment says: its arena view for a temporary, an array
    of its own for an output."""
    b = assignment.buffer(name)
    value = np.asarray(value)
    if b.category in (OUTPUT, EAGER):
        # Outputs are the caller's own arrays; an eager op's result (its size known only now)
        # is what NumPy allocated for it.
        return value if b.category == EAGER else np.array(value, copy=True)
    if b.category != TEMPORARY:
        raise ValueError(f"{name} is computed by a kernel but its buffer is a {b.category}")
    if value.shape != b.shape.dims or value.dtype != b.shape.dtype:
        raise ValueError(f"{name} computed {value.dtype}{list(value.shape)}, but its buffer is "
                         f"{b.shape}")
    dest = arena.view(name)
    np.copyto(dest, value)
    return dest


def _copy(value):
    """What the caller gets: a copy, so no result aliases the arena, an input or a constant."""
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    return np.array(value, copy=True)
