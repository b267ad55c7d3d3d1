"""A program as data: the kernel launches in schedule order, each over its buffers, and the
arena they share, made once from the scheduled module and its buffer assignment.

Each target renders its driver from this (cpu/driver.py, cuda/driver.py); a viewer can show
it; ahead-of-time export can render it again. A buffer a kernel reads or writes is either a
slice of the arena (`BufferRef`: a temporary, at the assignment's offset) or one the driver
is given (`Argument`: a parameter, a constant, an output the caller allocates). A kernel's
scratch space (`Scratch`: a product's packed B, a loop body's arena, a full reduction's
partials) is either where the buffer assignment placed it (the target said its size up
front, as XLA gives a kernel's temp buffer a slot live at that instruction alone), or else in
the arena's free space at the kernel's step; or, for a target whose scratch must keep its
contents between launches (CUDA's counters, zeroed once), one region past the temporaries
that the kernels share.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import CompileError, not_compilable
from ..ir.library import is_library_call
from ..ir.module import Computation, Instruction, Module
from ..ir.printer import format_instruction
from ..passes.buffer_assignment import CONSTANT, EAGER, OUTPUT, PARAMETER, buffer_name
from ..passes.dataflow import dataflow, is_kernel
from ..ir.structure import structure
from . import exprs
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
    """A kernel's scratch space: `size` bytes at `offset` in the arena."""

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
    same_as: str | None = None  # the earlier kernel whose function this one is, if any

    @property
    def function(self) -> str:
        """The generated function this launch calls (its own, or the one it shares)."""
        return self.same_as or self.kernel


@dataclass(frozen=True)
class ProgramLayout:
    """The arena, `arena_bytes` in all: the temporaries at the buffer assignment's offsets
    (`temporary_bytes`, its peak), and the kernels' scratch: in the free space at each
    kernel's step, or `scratch_bytes` shared from `scratch_offset` past the temporaries."""

    temporaries: tuple[BufferRef, ...]
    temporary_bytes: int
    scratch_offset: int
    scratch_bytes: int  # the shared region's size; 0 where scratch lies in the free space
    arena_bytes: int


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


def _emit_kernel(emit: Emit, comp: Computation, fname: str, kind: str, row: bool,
                 inst: Instruction):
    """`emit(...)`, with a generator that still recursed too deep for Python (the elemental
    core walks its chains with a stack of its own) answered as a CompileError at the line of
    the kernel's last op, never as a RecursionError."""
    try:
        return emit(comp, fname, kind, row)
    except RecursionError:
        md = comp.root.metadata
        raise CompileError(
            f"generating {fname} ({len(comp.instructions)} fused ops) went deeper than "
            "Python's recursion limit", op=inst.opcode, source_file=md.source_file or None,
            source_line=md.source_line or None,
            hint="Split the computation with xe.fori_loop (its body compiles once), or "
                 "report the program: the code generator should not recurse this deep."
        ) from None


def plan_program(module: Module, assignment, emit: Emit | None = None,
                 scratch_align: int = 1, shared_scratch: bool = False) -> ProgramPlan:
    """The launches of `module`'s kernels over the arena `assignment` lays out. `emit`
    generates each kernel (a target's); without it the launches name no code. A kernel's
    scratch starts on a multiple of `scratch_align`, in the free space at its step, or, with
    `shared_scratch`, in one region past the temporaries. An op left to run eagerly (a
    custom-call) cannot be in a compiled program: refused by name."""
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
                                 inst.metadata.source_line, inst.metadata.op_name)

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
    arena_bytes = assignment.peak_bytes
    names: set[str] = set()
    launches = []
    made: dict[tuple, tuple[str, Instruction, object, object]] = {}  # structure -> kernel
    for step, inst in enumerate(entry.instructions):
        if not is_kernel(inst):
            continue
        fname = identifier(inst.name)
        while fname in names:
            fname += "_"
        names.add(fname)
        outs = tuple(ref((inst.name, idx)) for idx in flow.defined[inst.name])
        # An operand's buffers: one for an array, one per element for a tuple (a while's).
        ins = [ref(key) for o in inst.operands for key in flow.points_to[o.name].values()]
        code = shape = scratch = same_as = None
        if emit is not None:
            comp, kind, row = kernel_computation(module, inst)
            key = (structure(module, comp), kind, row)
            if is_library_call(inst):  # its errors name the user's line: one kernel per line
                key += (inst.metadata.source_file, inst.metadata.source_line)
            if key in made:
                same_as = made[key][0]
                code, shape = _same_kernel(fname, inst, *made[key])
            else:
                code, shape = _emit_kernel(emit, comp, fname, kind, row, inst)
                made[key] = (fname, inst, code, shape)
            if code.scratch and shared_scratch:
                scratch = Scratch(scratch_at, code.scratch)
                scratch_bytes = max(scratch_bytes, code.scratch)
            elif code.scratch:
                placed = assignment.scratch_of(inst.name)
                at = (placed.offset if placed is not None and placed.size >= code.scratch
                      and placed.offset % scratch_align == 0
                      else free_space(assignment, step, code.scratch, scratch_align))
                scratch = Scratch(at, code.scratch)
            if scratch is not None:
                arena_bytes = max(arena_bytes, scratch.offset + scratch.size)
        launches.append(Launch(fname, inst, tuple(ins), outs, scratch, shape, code, same_as))

    # What the root hands back, element by element.
    outputs = []
    for key in flow.points_to[entry.root.name].values():
        r = ref(key)
        outputs.append((r.kind, r.number))
    temporaries = {b.name: b for launch in launches for b in launch.outputs
                   if isinstance(b, BufferRef)}
    layout = ProgramLayout(tuple(temporaries.values()), assignment.peak_bytes, scratch_at,
                           scratch_bytes, arena_bytes)
    return ProgramPlan(module, tuple(launches), layout, params, constants, tuple(outputs),
                       len(out_index))


def free_space(assignment, step: int, size: int, align: int) -> int:
    """The lowest offset, a multiple of `align`, where `size` bytes overlap no buffer live at
    `step` (the kernel's own operands and results among them): past the arena's peak only
    where no gap fits. For scratch the assignment did not place: a while loop's, whose size
    is its body's arena, known once the body is compiled."""
    busy = sorted((a.offset, a.offset + a.size) for a in assignment.allocations
                  if a.size and a.start <= step <= a.end)
    at = 0
    for lo, hi in busy:
        if at + size <= lo:
            break
        at = max(at, round_up(hi, align))
    return at


def _same_kernel(fname: str, inst: Instruction, first: str, first_inst: Instruction, code,
                 shape) -> tuple[object, object]:
    """A kernel that computes what an earlier one does (a step of an unrolled loop, say): its
    name bound to the earlier function, so the program compiles it once. Compiling is what a
    first call waits for: 200 steps of a stencil are one kernel, not 200."""
    source = (f"# {inst.name} computes what {first_inst.name} does: the same kernel, compiled "
              f"once.\n{fname} = {first}\n")
    return dataclasses.replace(code, name=fname, source=source), shape


# -- what every target's driver spells alike ----------------------------------------------------


def buffer_text(b: BufferRef | Argument) -> str:
    """The driver's name for a buffer: `a0` (parameter), `c1` (constant), `o0` (output),
    `t_fusion_3` (a temporary)."""
    if isinstance(b, BufferRef):
        return f"t_{identifier(b.name)}"
    return {"parameter": "a", "constant": "c", "output": "o"}[b.kind] + str(b.number)


def numpy_view(b: BufferRef) -> str:
    """A temporary as a NumPy view of the arena's bytes."""
    return f"arena[{b.offset}:{b.end}].view({storage_type(b.dtype)}).reshape({tuple_text(b.shape)})"


def launch_lines(launch: Launch, view: Callable[[BufferRef], str] = numpy_view) -> list[str]:
    """The comment naming a launch's instruction, and a view of the arena (`view(b)`, as the
    target spells one) for each temporary it defines."""
    lines = [f"    # {format_instruction(launch.instruction, metadata=False).strip()}"]
    for b in launch.outputs:
        if isinstance(b, BufferRef):
            lines.append(f"    {buffer_text(b)} = {view(b)}")
    return lines


def driver_lines(plan: ProgramPlan, call: Callable[[Launch], str],
                 view: Callable[[BufferRef], str] = numpy_view) -> list[str]:
    """The driver's body: each launch's comment, the arena views it writes (`view(b)`) and
    its call (`call(launch)`), as the target spells them, in schedule order; a run of
    launches that repeats, the same kernels on the same buffers, is written once in a `for`
    loop."""
    lines = []
    for count, body in repeats(plan.launches):
        if count == 1:
            lines += launch_lines(body[0], view) + [f"    {call(body[0])}"]
            continue
        # The steps of a loop the tracer unrolled: compiling one call per step is what
        # made a long loop slow to compile.
        names = ", ".join(launch.instruction.name for launch in body)
        lines.append(f"    # the next {count * len(body)} launches: {names} and the same "
                     f"kernels on the same buffers {count - 1} times more")
        lines.append(f"    for _ in range({count}):")
        for launch in body:
            lines += ["    " + line for line in launch_lines(launch, view)]
            lines.append(f"        {call(launch)}")
        # Later launches name the last step's buffers: the same bytes, under their names.
        last = plan.launches.index(body[-1]) + (count - 1) * len(body)
        for launch in plan.launches[last - len(body) + 1:last + 1]:
            lines += launch_lines(launch, view)[1:]
    return lines


def repeats(launches: tuple[Launch, ...], longest: int = 8,
            fewest: int = 3) -> list[tuple[int, tuple[Launch, ...]]]:
    """The launches as (count, body) runs, in order: `body` (at most `longest` launches)
    called `count` times in a row on the same buffers, where that happens at least `fewest`
    times; else (1, (launch,))."""
    sig = [_signature(launch) for launch in launches]
    out, i, n = [], 0, len(launches)
    while i < n:
        best_count, best_period = 1, 1
        for period in range(1, longest + 1):
            count = 1
            while sig[i + count * period:i + (count + 1) * period] == sig[i:i + period] \
                    and i + (count + 1) * period <= n:
                count += 1
            if count >= fewest and count * period > best_count * best_period:
                best_count, best_period = count, period
        out.append((best_count, launches[i:i + best_period]))
        i += best_count * best_period
    return out


def _signature(launch: Launch) -> tuple:
    """What a launch does, but not which values it names: its function and its buffers."""
    def where(b):
        return (b.offset, b.size, b.shape, b.dtype.str) if isinstance(b, BufferRef) else b
    return (launch.function, tuple(map(where, launch.inputs)),
            tuple(map(where, launch.outputs)), launch.scratch, launch.shape)


def call_arguments(launch: Launch) -> list[str]:
    """What a launch passes: its inputs, its outputs, then its scratch space if any, then
    the constants it takes as arguments (KernelSource.numbers)."""
    args = [buffer_text(b) for b in launch.inputs + launch.outputs]
    if launch.scratch is not None:
        s = launch.scratch
        args.append(f"arena[{s.offset}:{s.offset + s.size}]")
    args += [exprs.literal(value, dtype) for dtype, value in getattr(launch.code, "numbers", ())]
    return args


def driver_arguments(plan: ProgramPlan) -> list[str]:
    """`run`'s parameters: the arena, then the program's parameters, constants, outputs."""
    return (["arena"] + [f"a{p.parameter_number}" for p in plan.parameters]
            + [f"c{k}" for k in range(len(plan.constants))]
            + [f"o{k}" for k in range(plan.num_outputs)])
