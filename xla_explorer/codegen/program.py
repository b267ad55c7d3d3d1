"""A program as data: the kernel launches in schedule order, each over its buffers, and the
arena they share, made once from the scheduled module and its buffer assignment.

Each target renders its driver from this (cpu/driver.py, cuda/driver.py); a viewer can show
it; ahead-of-time export can render it again. A buffer a kernel reads or writes is either a
slice of the arena (`BufferRef`: a temporary, at the assignment's offset) or one the driver
is given (`Argument`: a parameter, a constant, an output the caller allocates). Past the
temporaries, aligned as the target wants, lies the scratch space the kernels use one at a time
(`Scratch`: a product's packed B, a full reduction's partials).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import not_compilable
from ..ir.module import Computation, Instruction, Module
from ..ir.printer import format_instruction
from ..passes.buffer_assignment import CONSTANT, EAGER, OUTPUT, PARAMETER, buffer_name
from ..passes.dataflow import dataflow, is_kernel
from .analysis import kernel_computation
from .writer import identifier, storage_type, tuple_text


@dataclass(frozen=True)
class BufferRef:
    """A temporary: `size` bytes at `offset` in the arena, viewed as `shape` of `dtype`."""

    name: str  # the logical buffer's name (`fusion.3`, `fusion.3{1}`)
    offset: int
    size: int
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class Argument:
    """A buffer the driver is given: parameter, constant or output number `number`."""

    kind: str  # "parameter" | "constant" | "output"
    number: int


@dataclass(frozen=True)
class Scratch:
    """A kernel's scratch space: `size` bytes at `offset` in the arena, past the temporaries."""

    offset: int
    size: int


@dataclass(frozen=True)
class Threads:
    """A CPU launch: one call, on one thread or sharing its loops among all of them."""

    parallel: bool


@dataclass(frozen=True)
class Grid:
    """A CUDA launch: blocks x threads; cooperative when every block must be resident at
    once (a grid-wide barrier), with at most `blocks`."""

    blocks: int
    threads: int
    cooperative: bool = False


@dataclass(frozen=True)
class Launch:
    """One kernel called once, in schedule order."""

    kernel: str  # the generated function's name
    instruction: Instruction  # the entry instruction it computes
    inputs: tuple[BufferRef | Argument, ...]
    outputs: tuple[BufferRef | Argument, ...]
    scratch: Scratch | None = None
    shape: Threads | Grid | None = None
    code: object = None  # the target's generated kernel (its source and how it is called)


@dataclass(frozen=True)
class ProgramLayout:
    """The arena: the temporaries at the buffer assignment's offsets (`temporary_bytes` in
    all), then, from `scratch_offset`, `scratch_bytes` of scratch space."""

    temporaries: tuple[BufferRef, ...]
    temporary_bytes: int
    scratch_offset: int
    scratch_bytes: int


@dataclass(frozen=True)
class ProgramPlan:
    """Everything a driver needs: launches, arena, and what the driver takes and returns."""

    module: Module
    launches: tuple[Launch, ...]
    layout: ProgramLayout
    parameters: tuple[Instruction, ...]  # in parameter order
    constants: tuple[Instruction, ...]  # array constants the driver takes, in order
    outputs: tuple[tuple[str, int], ...]  # per root element: ("output", k), ("parameter", n), ...
    num_outputs: int  # arrays the caller allocates

    @property
    def kernel_of(self) -> dict[str, str]:
        """HLO instruction -> kernel name."""
        return {launch.instruction.name: launch.kernel for launch in self.launches}


# emit(computation, kernel name, kind, row fusion?) -> (the generated kernel, its launch shape)
Emit = Callable[[Computation, str, str, bool], tuple[object, object]]


def round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def plan_program(module: Module, assignment, emit: Emit | None = None,
                 scratch_align: int = 1) -> ProgramPlan:
    """The launches of `module`'s kernels over the arena `assignment` lays out. `emit`
    generates each kernel (a target's); without it the launches name no code. An op left to
    run eagerly (a custom-call) cannot be in a compiled program: refused by name."""
    entry = module.entry
    flow = dataflow(entry)
    params = tuple(sorted(entry.parameters, key=lambda p: p.parameter_number))
    constants = tuple(i for i in entry.instructions if i.opcode == "constant")
    constant_names = [c.name for c in constants]
    out_index: dict[str, int] = {}
    for b in assignment.buffers:
        if b.category == OUTPUT:
            out_index[b.name] = len(out_index)
        if b.category == EAGER:
            inst = entry.get(b.instruction)
            raise not_compilable(inst.attr("custom_call_target"), inst.metadata.source_file,
                                 inst.metadata.source_line)

    def ref(key) -> BufferRef | Argument:
        name = buffer_name(*key)
        b = assignment.buffer(name)
        if b.category == PARAMETER:
            return Argument("parameter", entry.get(b.instruction).parameter_number)
        if b.category == CONSTANT:
            return Argument("constant", constant_names.index(b.instruction))
        if b.category == OUTPUT:
            return Argument("output", out_index[name])
        return BufferRef(name, assignment.offset(b), b.size, tuple(b.shape.dims),
                         np.dtype(b.shape.dtype))

    scratch_at = round_up(assignment.peak_bytes, scratch_align)
    scratch_bytes = 0
    names: set[str] = set()
    launches = []
    for inst in entry.instructions:
        if not is_kernel(inst):
            continue
        fname = identifier(inst.name)
        while fname in names:
            fname += "_"
        names.add(fname)
        outs = tuple(ref((inst.name, idx)) for idx in flow.defined[inst.name])
        ins = []
        for o in inst.operands:
            (key,) = flow.points_to[o.name].values()
            ins.append(ref(key))
        code = shape = scratch = None
        if emit is not None:
            comp, kind, row = kernel_computation(module, inst)
            code, shape = emit(comp, fname, kind, row)
            if code.scratch:
                scratch = Scratch(scratch_at, code.scratch)
                scratch_bytes = max(scratch_bytes, code.scratch)
        launches.append(Launch(fname, inst, tuple(ins), outs, scratch, shape, code))

    # What the root hands back, element by element.
    outputs = []
    for key in flow.points_to[entry.root.name].values():
        r = ref(key)
        outputs.append((r.kind, r.number))
    temporaries = {b.name: b for launch in launches for b in launch.outputs
                   if isinstance(b, BufferRef)}
    layout = ProgramLayout(tuple(temporaries.values()), assignment.peak_bytes, scratch_at,
                           scratch_bytes)
    return ProgramPlan(module, tuple(launches), layout, params, constants, tuple(outputs),
                       len(out_index))


# -- what every target's driver spells alike ----------------------------------------------------


def buffer_text(b: BufferRef | Argument) -> str:
    """The driver's name for a buffer: `a0` (parameter), `c1` (constant), `o0` (output),
    `t_fusion_3` (a temporary)."""
    if isinstance(b, BufferRef):
        return f"t_{identifier(b.name)}"
    return {"parameter": "a", "constant": "c", "output": "o"}[b.kind] + str(b.number)


def launch_lines(launch: Launch) -> list[str]:
    """The comment naming a launch's instruction, and a view of the arena for each temporary
    it defines."""
    lines = [f"    # {format_instruction(launch.instruction, metadata=False).strip()}"]
    for b in launch.outputs:
        if isinstance(b, BufferRef):
            lines.append(f"    {buffer_text(b)} = arena[{b.offset}:{b.end}]"
                         f".view({storage_type(b.dtype)}).reshape({tuple_text(b.shape)})")
    return lines


def call_arguments(launch: Launch) -> list[str]:
    """What a launch passes: its inputs, its outputs, then its scratch space if any."""
    args = [buffer_text(b) for b in launch.inputs + launch.outputs]
    if launch.scratch is not None:
        s = launch.scratch
        args.append(f"arena[{s.offset}:{s.offset + s.size}]")
    return args


def driver_arguments(plan: ProgramPlan) -> list[str]:
    """`run`'s parameters: the arena, then the program's parameters, constants, outputs."""
    return (["arena"] + [f"a{p.parameter_number}" for p in plan.parameters]
            + [f"c{k}" for k in range(len(plan.constants))]
            + [f"o{k}" for k in range(plan.num_outputs)])
