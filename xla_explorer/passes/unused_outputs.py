"""Unused fusion outputs: a kernel writes only what is read.

XLA's HloDCE narrows a multi-output fusion whose root is a tuple to the elements that its
get-tuple-element users read (RemoveMultiOutputFusionsUnusedOutputs). This pass does the same
after fusion, and also where the fused root makes the tuple by itself: argmax is a variadic
reduce of (value, index) pairs, and only the index is read. The root becomes
get-tuple-element(reduce, 1): the kernel still runs the reduce with both accumulators, in
registers, but stores only the index, and the value has no buffer between kernels.
"""
from __future__ import annotations

from ..ir.module import Computation, Instruction, Module, root_last
from ..ir.shape import TupleShape
from .base import Note, Pass, PassResult
from .dce import without_dead
from .names import NameGen


def _forwarded(entry: Computation) -> dict[int, Instruction]:
    """get-tuple-element(tuple(a, b), 1) -> b, for each such pair in the entry (as XLA's
    simplifier forwards them): multi-output fusion leaves them behind, and an element that
    only such a tuple holds is not read."""
    fwd: dict[int, Instruction] = {}
    for inst in entry.instructions:
        if inst.opcode == "get-tuple-element" and inst.operands[0].opcode == "tuple":
            x = inst.operands[0].operands[inst.attr("index")]
            fwd[id(inst)] = fwd.get(id(x), x)
    return fwd


def _live(entry: Computation, fwd: dict[int, Instruction]) -> set[int]:
    """What the root needs, reading through forwarded get-tuple-elements."""
    seen: set[int] = set()
    stack = [fwd.get(id(entry.root), entry.root)]
    while stack:
        inst = stack.pop()
        if id(inst) not in seen:
            seen.add(id(inst))
            stack.extend(fwd.get(id(o), o) for o in inst.operands)
    return seen


def _read_elements(fusion: Instruction, users: list[Instruction], live: set[int]):
    """The tuple elements of `fusion` that are read, if only get-tuple-elements read it
    (anything else may read the whole tuple), else None."""
    users = [u for u in users if id(u) in live]
    if not users or any(u.opcode != "get-tuple-element" for u in users):
        return None
    return sorted({u.attr("index") for u in users})


def _narrowed(comp: Computation, keep: list[int], fresh: NameGen) -> Computation:
    """`comp` with a root of only the elements `keep` of its old root, in order: that element
    alone if there is one, else a tuple of them. What only the dropped elements needed goes."""
    root = comp.root
    body = list(comp.instructions[:-1])
    if root.opcode == "tuple":
        picked = [root.operands[k] for k in keep]
    else:  # a variadic reduce, its elements taken out one by one
        body.append(root)
        picked = [Instruction(fresh("get-tuple-element"), "get-tuple-element",
                              root.shape.elements[k], (root,), (("index", k),), root.metadata)
                  for k in keep]
        body += picked
    if len(picked) == 1:
        new_root = picked[0]
    else:
        new_root = Instruction(fresh("tuple"), "tuple", TupleShape(tuple(p.shape for p in picked)),
                               tuple(picked), (), root.metadata)
    return without_dead(root_last(comp.name, body, new_root))[0]


class UnusedOutputs(Pass):
    name = "unused-outputs"

    def run(self, module: Module) -> PassResult:
        entry = module.entry
        users = entry.users()
        fwd = _forwarded(entry)
        live = _live(entry, fwd)
        narrow = {}  # id(fusion) -> the elements to keep
        for inst in entry.instructions:
            if inst.opcode == "fusion" and inst.shape.is_tuple and id(inst) in live:
                keep = _read_elements(inst, users[inst], live)
                if keep is not None and len(keep) < len(inst.shape.elements):
                    narrow[id(inst)] = keep
        if not narrow:
            return PassResult(module, False)
        fresh = NameGen(module)
        notes: list[Note] = []
        comps = {c.name: c for c in module.computations}
        new: dict[int, Instruction] = {}  # id(old) -> what stands for it now
        index_map: dict[int, dict[int, int | None]] = {}  # id(old fusion): old index -> new
        out: list[Instruction] = []
        for inst in entry.instructions:
            if id(inst) not in live and inst.opcode != "parameter":
                continue  # a forwarded get-tuple-element, or what only it read
            ops = tuple(new[id(fwd.get(id(o), o))] for o in inst.operands)
            if inst.opcode == "get-tuple-element" and id(inst.operands[0]) in index_map:
                k = index_map[id(inst.operands[0])][inst.attr("index")]
                new[id(inst)] = ops[0] if k is None else \
                    inst.replace(operands=ops).with_attr("index", k)
                if k is not None:
                    out.append(new[id(inst)])
                continue  # k is None: the narrowed fusion is the element itself
            current = inst if ops == inst.operands else inst.replace(operands=ops)
            if id(inst) in narrow:
                keep = narrow[id(inst)]
                comp = _narrowed(comps[inst.attr("calls")], keep, fresh)
                comps[comp.name] = comp
                current = current.replace(shape=comp.root.shape)
                index_map[id(inst)] = ({keep[0]: None} if len(keep) == 1 else
                                       {old: k for k, old in enumerate(keep)})
                dropped = [k for k in range(len(inst.shape.elements)) if k not in keep]
                notes.append(Note(
                    f"{inst.name}: writes only the elements of its tuple that are read, {keep}; "
                    f"nothing reads {dropped}, which stays inside the kernel with no buffer",
                    "unused-output", (inst.name,)))
            new[id(inst)] = current
            out.append(current)
        computations = tuple(comps[c.name] for c in module.computations)
        root = new[id(fwd.get(id(entry.root), entry.root))]
        entry = root_last(entry.name, out, root)
        return PassResult(module.replace(entry=entry, computations=computations), True,
                          tuple(notes))
