"""Running a module through its buffer assignment: ONE arena for every temporary.

The entry runs instruction by instruction in schedule order, each kernel evaluated by the
reference interpreter (a fusion from its fused computation, a custom-call by its NumPy
implementation), and each temporary result is written into its view of one `np.empty` arena at
the offset the assignment gave it. Later kernels read their operands from those views. So the
assignment is tested, not just drawn: two live buffers given overlapping bytes give a wrong
answer here.

Outputs are written to arrays of their own; parameters and constants are read where they lie.
What comes back is copied out: nothing returned is a view of the arena or of an input.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..ir.module import Computation, Instruction, Module
from ..passes.buffer_assignment import (EAGER, OUTPUT, TEMPORARY, BufferAssignment,
                                        buffer_name, is_kernel)
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
    if [i.name for i in assignment.module.entry] != [i.name for i in comp]:
        raise ValueError(f"the buffer assignment is of {assignment.module.name} in another "
                         f"order; assign buffers for the module being run")
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
        else:
            result = interp.evaluate(_one_instruction(inst), vals)
            env[id(inst)] = _rebuild(inst.shape, lambda idx: _store(
                arena, assignment, buffer_name(inst.name, idx), _leaf(result, idx)))
    out = env[id(comp.root)]
    out = list(out) if isinstance(out, tuple) else [out]
    return [_copy(v) for v in out]


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
