"""Facts about a kernel's computation that every target reads the same way: the computation
a kernel runs, which instructions are phases of their own, whether it runs as rows, which
values a pass over a row reads at its own element."""
from __future__ import annotations

from ..errors import UnsupportedOpError
from ..ir.module import Computation, Instruction, Module
from ..ir.ops import elementwise_like
from ..passes.kinds import fits_rows, is_row_fusion, kernel_kind
from .writer import F16

# Ops that fill their result in a phase of their own, before the outputs are written, by a
# body in codegen/phases/ (a scatter has its own place: it runs before every other phase).
PHASE_OPCODES = ("reduce-window", "sort")


def kernel_computation(module: Module, inst: Instruction) -> tuple[Computation, str, bool]:
    """The computation a kernel runs: a fusion's own, or one op on parameters."""
    if inst.opcode == "fusion":
        comp = module.computation(inst.attr("calls"))
        return comp, kernel_kind(inst), is_row_fusion(inst)
    params = tuple(Instruction(f"param_{n}", "parameter", o.shape, parameter_number=n)
                   for n, o in enumerate(inst.operands))
    kind = kernel_kind(inst)
    body = params + (inst.replace(operands=params),)
    return Computation(f"{inst.name}.computation", body), kind, False


def tuple_rooted(comp: Computation) -> Computation:
    """A computation whose root makes a tuple (a variadic reduce, argmax's value and index)
    ending in get-tuple-elements and a tuple, so each output is one array."""
    root = comp.root
    if not root.shape.is_tuple or root.opcode == "tuple":
        return comp
    gtes = tuple(Instruction(f"{root.name}.{k}", "get-tuple-element", e, (root,), (("index", k),))
                 for k, e in enumerate(root.shape.elements))
    tup = Instruction(f"{root.name}.tuple", "tuple", root.shape, gtes)
    return Computation(comp.name, comp.instructions + gtes + (tup,))


def phases(comp: Computation) -> list[Instruction]:
    """The instructions that run as phases of their own, in program order: reduces, dots,
    scans and sorts."""
    return [i for i in comp.instructions
            if i.opcode in ("reduce", "dot") or i.opcode in PHASE_OPCODES]


def refuse_float16(inst: Instruction) -> None:
    """Reductions and products accumulate in their result type here, and a float16
    accumulator would round at every step: the tracer computes them in float32 (as NumPy
    does), and a module that has one in float16 must convert first."""
    shapes = inst.shape.elements if inst.shape.is_tuple else (inst.shape,)
    if any(s.dtype == F16 for s in shapes):
        md = inst.metadata
        raise UnsupportedOpError(
            f"the CPU backend does not compute a float16 {inst.opcode} ({inst.name}): convert "
            "its operands to f32 and its result back to f16", op=inst.opcode,
            source_file=md.source_file or None, source_line=md.source_line or None)


def elementwise_closure(roots, dims) -> list[Instruction]:
    """The element-wise values of shape `dims` that computing `roots` at one element reads at
    that same element: reached from the roots through element-wise ops only."""
    found, stack, seen = [], list(roots), set()
    while stack:
        inst = stack.pop()
        if id(inst) in seen or inst.shape.is_tuple or inst.dims != dims:
            continue
        seen.add(id(inst))
        if elementwise_like(inst.opcode):
            found.append(inst)
            stack.extend(inst.operands)
    return found


def row_plan(comp: Computation, outputs) -> tuple[tuple, tuple] | None:
    """(leading dims, trailing dims) when every reduce reduces the same trailing dims of one
    loop space and every output is per-row or full; None otherwise (and for dots)."""
    reduces = [i for i in comp.instructions if i.opcode == "reduce"]
    if any(i.opcode in ("dot", "scatter") or i.opcode in PHASE_OPCODES
           for i in comp.instructions):
        return None  # a product, a scatter's sequential loop, a scan or a sort
    if not reduces:
        dims = {o.dims for o in outputs}
        if len(dims) != 1:
            return None
        (full,) = dims
        # A loop kernel: rows are the leading dimension, a row the rest.
        return (full[:1], full[1:]) if full else ((), ())
    spaces = set()
    for r in reduces:
        x = r.operands[0].dims
        axes = sorted(r.attr("dimensions"))
        k = len(x) - len(axes)
        if axes != list(range(k, len(x))):
            return None
        spaces.add((x[:k], x[k:]))
    if len(spaces) != 1:
        return None
    lead, trail = next(iter(spaces))
    ok = {lead + trail, lead, lead + (1,) * len(trail)}
    if not all(o.dims in ok for o in outputs):
        return None
    # A reduce's result is a register holding the current row's value, so everything computed
    # from it must read it at the current row (as row fusion checks); the reduces themselves
    # run in program order, which is topological.
    after = set(map(id, reduces))
    for inst in comp.instructions:
        if id(inst) in after or not any(id(o) in after for o in inst.operands):
            continue
        after.add(id(inst))
        if inst.opcode != "tuple" and not fits_rows(inst, lead, trail):
            return None
    return lead, trail


def reads_at_kept(comp: Computation, outputs, reduces, kept_dims) -> bool:
    """Whether everything computed from `reduces` reads them at the element it is at
    (element-wise ops of shape `kept_dims`), and every output has that shape."""
    after = {id(r) for r in reduces}
    for inst in comp.instructions:
        if id(inst) in after or not any(id(o) in after for o in inst.operands):
            continue
        after.add(id(inst))
        if not (inst.opcode in ("tuple", "get-tuple-element") or (
                inst.dims == kept_dims and elementwise_like(inst.opcode))):
            return False
    return all(o.dims == kept_dims for o in outputs)
