"""A `while` loop on the CPU: its body compiled once, as a program of its own, and called in
a loop by a kernel that keeps the loop's state in two sets of buffers.

XLA's CPU backend emits a while loop as a loop around its body's code, the body's buffers
assigned once. Here the body is a module of its own (the state's tuple flattened into
parameters), compiled by the same pipeline (fusion, buffer assignment, kernels): its driver
`run` is what one step does. The loop's kernel copies the operand into the while's outputs,
then calls the body trip-count times, each step reading one set of state buffers and writing
the other; an odd count ends with a copy back. A state element the body hands on unchanged
(what the loop closed over) is read in place, never copied.

The trip count is the one XLA's WhileLoopTripCountAnnotator writes into the loop's
backend_config (`xe.fori_loop` writes it too): the kernel is compiled for it, and a loop
whose count depends on values is not compiled here (the interpreter runs it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import UnsupportedOpError
from ...ir.module import Computation, Instruction, Module, called_by, known_trip_count
from ...ir.shape import TupleShape
from ..options import CACHE_LINE
from ..writer import KernelSource, np_type, tuple_text

# Slice `k` of the state, as the loop kernel's arguments name it.
F16 = np.dtype(np.float16)


@dataclass(frozen=True)
class LoopBody:
    """A while's body compiled: the generated file's stem, its program's arena and how each
    element of its result is made (`("output", j)`: the body writes its output j;
    `("parameter", n)`: it hands on state element n)."""

    stem: str
    arena_bytes: int
    outputs: tuple[tuple[str, int], ...]
    num_outputs: int
    stages: tuple = ()  # the passes the body went through (passes/base.Stage), for the explorer
    # Its kernels' sources by name, and its driver's as "run": the explorer's Kernels tab
    # lists them under the body's name.
    kernels: dict = field(default_factory=dict)


def refuse(inst: Instruction, why: str) -> UnsupportedOpError:
    md = inst.metadata
    return UnsupportedOpError(
        f"the cpu backend cannot compile this while loop ({inst.name}): {why}",
        op="while", source_file=md.source_file or None, source_line=md.source_line or None)


def trip_count(inst: Instruction) -> int:
    """How many times the loop runs: `known_trip_count` in its backend_config, as XLA's
    WhileLoopTripCountAnnotator writes it (and `xe.fori_loop` does)."""
    count = known_trip_count(inst)
    if count is None:
        raise refuse(inst, "its trip count is not known (the cpu backend compiles loops whose "
                           "count is, as xe.fori_loop's is: backend_config="
                           '{"known_trip_count":{"n":"N"}}); run it with '
                           "backend='interpreter'")
    return count


def body_module(module: Module, inst: Instruction) -> Module:
    """The while's body as a module of its own: a parameter per element of the state (read
    where the body read `get-tuple-element(state, k)`), its result tuple the outputs."""
    body = module.computation(inst.attr("body"))
    (state,) = body.parameters
    shape = state.shape
    if not isinstance(shape, TupleShape) or any(e.is_tuple for e in shape.elements):
        raise refuse(inst, "its state is not a flat tuple of arrays")
    if any(e.dtype == F16 for e in shape.elements):
        raise refuse(inst, "float16 in its state")
    params = [Instruction(f"{state.name}.{k}", "parameter", e, parameter_number=k,
                          metadata=state.metadata) for k, e in enumerate(shape.elements)]
    swap: dict[int, Instruction] = {}
    out: list[Instruction] = list(params)
    for i in body.instructions:
        if i is state:
            continue
        if i.opcode == "get-tuple-element" and i.operands[0] is state:
            swap[id(i)] = params[i.attr("index")]
            continue
        if any(o is state for o in i.operands):
            raise refuse(inst, f"its body uses its state whole ({i.name})")
        new = i.replace(operands=tuple(swap.get(id(o), o) for o in i.operands))
        swap[id(i)] = new
        out.append(new)
    called = called_by(module, out)
    entry = Computation(f"{module.name}_{body.name}", tuple(out))
    return Module(entry.name, entry, called)


def emit_while(inst: Instruction, name: str, body: LoopBody) -> KernelSource:
    """The loop kernel `name(state..., out..., scratch)`: the state's elements in, the
    while's outputs (the last state) out, the body's arena and the second set of state
    buffers in the scratch space."""
    count = trip_count(inst)
    elements = inst.shape.elements
    n = len(elements)
    # How a step makes each element of the next state: the body writes it (its output j),
    # or hands on an element of the state it read.
    writes: dict[int, int] = {}  # state element -> the body's output number
    handed: dict[int, int] = {}  # state element -> the element of the last state it copies
    firsts: dict[int, int] = {}  # the body's output number -> the first element it is
    for k, (kind, number) in enumerate(body.outputs):
        if kind == "output" and number not in firsts:
            writes[k], firsts[number] = number, k
        elif kind == "output":
            handed[k] = -1 - firsts[number]  # a copy of this step's element, negative
        elif kind == "parameter":
            handed[k] = number
        else:
            raise refuse(inst, f"its body gives a constant as element {k} of its state")
    offset = _round(max(body.arena_bytes, 1))
    second: dict[int, str] = {}  # state element -> its view in the scratch space
    for k in range(n):
        if k in writes or handed.get(k, k) != k:
            e = elements[k]
            second[k] = (f"arena_view(scratch, {offset}, {tuple_text(e.dims)}, "
                         f"{np_type(e.dtype)})")
            offset = _round(offset + e.dtype.itemsize * max(1, int(np.prod(e.dims))))
    fn = f"{name}_body"
    args = [f"p{k}" for k in range(n)] + [f"out{k}" for k in range(n)]
    lines = [
        "from xla_explorer.codegen.cache import loaded_function",
        "from xla_explorer.codegen.cpu.views import arena_view, copy_into",
        "",
        f"# One step of {inst.name}: its body, {inst.attr('body')}, compiled as a program of "
        "its own.",
        f"{fn} = loaded_function({body.stem!r}, 'run')",
        "",
        "",
        "@njit(cache=True)",
        f"def {name}({', '.join(args)}, scratch):",
        f'    """{inst.name}: its body run {count} times (its known trip count), the state in '
        'two sets of buffers, each step reading one and writing the other."""',
    ]
    lines += [f"    copy_into(out{k}, p{k})  # the state starts as the operand" for k in range(n)]
    lines += [f"    b{k} = {view}" for k, view in second.items()]
    lines.append(f"    body_arena = scratch[0:{max(body.arena_bytes, 1)}]")
    a = [f"out{k}" for k in range(n)]
    b = [f"b{k}" if k in second else f"out{k}" for k in range(n)]
    lines.append(f"    for step in range({count}):")
    for parity, (src, dst) in enumerate(((a, b), (b, a))):
        lines.append("        if step % 2 == 0:" if parity == 0 else "        else:")
        outs = [dst[k] for k in sorted(writes, key=writes.get)]
        lines.append(f"            {fn}(body_arena, {', '.join(src + outs)})")
        for k, m in handed.items():
            if m != k:
                lines.append(f"            copy_into({dst[k]}, {dst[-1 - m] if m < 0 else src[m]})")
    if second:
        lines.append(f"    if {count} % 2 == 1:  # the last step wrote the second set")
        lines += [f"        copy_into(out{k}, b{k})" for k in second]
    return KernelSource(name, inst.name, "\n".join(lines) + "\n", n, n, False,
                        workspace=offset)


def _round(n: int) -> int:
    return -(-n // CACHE_LINE) * CACHE_LINE
