"""Groups of instructions that will run as one kernel, and how they become HLO fusions.

Both fusion passes decide on groups of the entry's instructions, then `emit` turns every group
into a `fusion` instruction calling a fused computation. A group is a set of members (the
instructions it computes) and its outputs (the members whose values leave it). A cheap member
may sit in several groups at once: each computes its own copy, as XLA duplicates cheap
producers into every consumer. `unfuse` reads fusions back into groups, so the multi-output
pass can regroup what the fusion pass made.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..ir.module import Computation, Instruction, Module
from ..ir.ops import Group as OpGroup
from ..ir.ops import in_group, scan_axis
from ..ir.shape import TupleShape
from .autocluster import cluster_of, with_cluster
from .kinds import ROW_CONFIG, is_row_fusion, kind_of
from .names import NameGen, traced_name

_group_ids = itertools.count()

# XLA caps a fusion's operands plus outputs; past that, kernels get unwieldy parameter lists.
MAX_OPERANDS_AND_OUTPUTS = 64


@dataclass(eq=False)
class FusionGroup:
    """Instructions that run as one kernel."""

    members: list[Instruction]
    outputs: list[Instruction]
    row: bool = False  # runs row by row: reductions over trailing axes broadcast back
    id: int = field(default_factory=lambda: next(_group_ids))

    def __post_init__(self):
        self._ids = {id(m) for m in self.members}
        self._externals: list[Instruction] | None = None

    def add(self, inst: Instruction) -> None:
        if id(inst) not in self._ids:
            self._ids.add(id(inst))
            self.members.append(inst)
            if self._externals is not None:  # kept up to date: a long chain grows by one
                if id(inst) in self._external_ids:
                    self._external_ids.discard(id(inst))
                    self._externals.remove(inst)
                for o in inst.operands:
                    if id(o) not in self._ids and id(o) not in self._external_ids:
                        self._external_ids.add(id(o))
                        self._externals.append(o)

    def sort(self, order: dict[int, int]) -> None:
        """Members in program order (`order`: instruction id -> position)."""
        self.members.sort(key=lambda m: order[id(m)])
        self._externals = None

    def member_ids(self) -> set[int]:
        return set(self._ids)

    def contains(self, inst: Instruction) -> bool:
        return id(inst) in self._ids

    @property
    def kind(self) -> str:
        return kind_of(self.members, self.row)

    @property
    def root(self) -> Instruction:
        return self.outputs[-1]

    def external_operands(self) -> list[Instruction]:
        """Values the group reads from outside, once each, in first-use order."""
        if self._externals is None:
            self._external_ids: set[int] = set()
            self._externals = []
            for m in self.members:
                for o in m.operands:
                    if id(o) not in self._ids and id(o) not in self._external_ids:
                        self._external_ids.add(id(o))
                        self._externals.append(o)
        return list(self._externals)

    def is_single(self) -> bool:
        """One instruction, its own only output: emitted as itself, not wrapped in a fusion."""
        return len(self.members) == 1 and len(self.outputs) == 1

    def label(self) -> str:
        if len(self.members) == 1:
            return self.root.name
        return f"the fusion rooted at {self.root.name}"

    def cluster(self) -> str | None:
        """The auto-cluster its members were marked with (fusion never joins two), if any."""
        return next((c for m in self.members if (c := cluster_of(m)) is not None), None)


def joined_size(a: FusionGroup, b: FusionGroup) -> int:
    """Operands plus outputs of one kernel doing the work of both (an upper bound on its
    outputs: a value only the other reads stops being one)."""
    inside = a.member_ids() | b.member_ids()
    operands = {id(x) for g in (a, b) for x in g.external_operands() if id(x) not in inside}
    return len(operands) + len(a.outputs) + len(b.outputs)


class GroupIndex:
    """The groups holding each instruction, kept current as groups grow, join and go, so
    "which kernels compute this?" is a lookup, not a scan of every group."""

    def __init__(self, groups=()):
        self._holders: dict[int, list[FusionGroup]] = {}
        for g in groups:
            self.track(g)

    def track(self, g: FusionGroup) -> None:
        for m in g.members:
            self._holders.setdefault(id(m), []).append(g)

    def add(self, g: FusionGroup, inst: Instruction) -> None:
        if not g.contains(inst):
            g.add(inst)
            self._holders.setdefault(id(inst), []).append(g)

    def forget(self, g: FusionGroup) -> None:
        for m in g.members:
            self._holders[id(m)] = [h for h in self._holders[id(m)] if h is not g]

    def of(self, inst: Instruction) -> list[FusionGroup]:
        return self._holders.get(id(inst), [])


def is_fusible(inst: Instruction) -> bool:
    """Whether an instruction may run inside a fused kernel at all."""
    if inst.opcode == "constant":
        return inst.literal.size <= 1  # scalars are copied into kernels; arrays stay buffers
    if inst.opcode == "reduce":
        return True
    if scan_axis(inst) is not None:  # a scan fuses its element-wise producers
        return True
    return in_group(inst.opcode, OpGroup.ELEMENTWISE, OpGroup.COMPARE_SELECT,
                    OpGroup.DATA_MOVEMENT, OpGroup.DOT) or inst.opcode == "iota"


def topo_index(comp: Computation) -> dict[int, int]:
    return {id(inst): n for n, inst in enumerate(comp.instructions)}


def _fusion_name(group: FusionGroup, fresh: NameGen) -> str:
    if len(group.outputs) > 1:
        return fresh("multi_output_fusion")
    if group.row:
        return fresh("row_fusion")
    ops = []
    for m in reversed(group.members):  # the root's op first, as XLA names its fusions
        if m.opcode not in ops and m.opcode not in ("constant", "broadcast", "parameter"):
            ops.append(m.opcode)
    base = "_".join(reversed(ops[:2])).replace("-", "_") or group.root.opcode.replace("-", "_")
    return fresh(f"{base}_fusion")


def _needs(item) -> tuple:
    """The values a fusion group, or an instruction left alone, reads from outside itself."""
    return item.external_operands() if isinstance(item, FusionGroup) else item.operands


def emit(module: Module, groups: list[FusionGroup], fresh: NameGen) -> Module:
    """The module with every group replaced by one fusion instruction."""
    entry = module.entry
    order = topo_index(entry)
    in_some_group = {id(m) for g in groups for m in g.members}
    # Each group is emitted where its last member was (a member of several groups, a copied
    # cheap producer, runs only inside them).
    last_member = {}
    for g in groups:
        last = max(g.members, key=lambda m: order[id(m)])
        last_member.setdefault(id(last), []).append(g)
    copies: dict[int, int] = {}
    for g in groups:
        for m in g.members:
            copies[id(m)] = copies.get(id(m), 0) + 1
    # A scalar constant never becomes a kernel of its own: each kernel that reads it gets a
    # copy. If something outside those kernels reads it too (the root tuple returning the 0
    # that is also an update's index), it stays in the entry as well; otherwise nothing
    # would compute it there, and its readers would wait for a kernel that never comes.
    outputs = {id(o) for g in groups for o in g.outputs}
    needed = {id(o) for inst in entry.instructions if id(inst) not in in_some_group
              for o in inst.operands}
    needed.update(id(x) for g in groups for x in g.external_operands())
    shared = {id(m) for g in groups for m in g.members
              if m.opcode == "constant" and id(m) in needed and id(m) not in outputs}
    for k in shared:
        copies[k] += 1  # the entry's copy keeps the name; the fused ones are clones
    value: dict[int, Instruction] = {}
    new: list[Instruction] = []
    computations = list(module.computations)
    in_use = {i.name for i in entry.instructions}
    # Each kernel goes where its last member was, or later if a kernel it reads comes later
    # (multi-output fusion can move a value into a kernel that ends further down).
    pending: list = []
    for inst in entry.instructions:
        if id(inst) not in in_some_group or id(inst) in shared:
            pending.append(inst)
        pending.extend(last_member.get(id(inst), []))
    while pending:
        k = next((k for k, item in enumerate(pending)
                  if all(id(x) in value for x in _needs(item))), None)
        if k is None:
            raise AssertionError("fusion groups depend on each other in a cycle")
        item = pending.pop(k)
        if isinstance(item, FusionGroup) and item.is_single():
            item = item.root  # fused with nothing: it stays the op it is, a kernel of one
        if isinstance(item, FusionGroup):
            outs, values, comp = _emit_group(item, value, fresh, copies, in_use)
            computations.append(comp)
            new.extend(outs)
            for out_inst, member in zip(values, item.outputs):
                value[id(member)] = out_inst
        else:
            ops = tuple(value[id(o)] for o in item.operands)
            same = all(a is b for a, b in zip(ops, item.operands))
            copy = item if same else item.replace(operands=ops)
            value[id(item)] = copy
            new.append(copy)
    # The root comes last: a dead kernel (left for DCE to show) may have been ready later.
    root = value[id(entry.root)]
    if isinstance(root, tuple) or not any(root is x for x in new):
        raise AssertionError(f"{entry.root.name} must be the whole output of its kernel")
    new = [x for x in new if x is not root] + [root]
    return module.replace(entry=Computation(entry.name, tuple(new)),
                          computations=tuple(computations))


def _emit_group(g: FusionGroup, value: dict, fresh: NameGen, copies: dict[int, int],
                in_use: set[str]):
    name = _fusion_name(g, fresh)
    comp_name = fresh("fused_computation")
    externals = g.external_operands()
    clone: dict[int, Instruction] = {}
    body: list[Instruction] = []
    for n, x in enumerate(externals):
        p = Instruction(fresh(f"param_{n}"), "parameter", x.shape, parameter_number=n)
        clone[id(x)] = p
        body.append(p)
    output_ids = {id(o) for o in g.outputs}
    cluster = g.cluster()
    mark = (lambda inst: with_cluster(inst, cluster)) if cluster else (lambda inst: inst)
    for m in g.members:
        # A member keeps its traced name inside its kernel; a cheap producer copied into
        # several kernels keeps it where it is an output, and is `name.clone.N` elsewhere.
        keep = copies[id(m)] == 1 or id(m) in output_ids
        member_name = m.name if keep else fresh(f"{m.name}.clone")
        traced = traced_name(member_name)
        if keep and traced != member_name and traced not in in_use:
            # A copy that is the only one left takes its traced name back.
            member_name = traced
            in_use.add(member_name)
        c = m.replace(name=member_name,
                      operands=tuple(clone[id(o)] for o in m.operands))
        clone[id(m)] = c
        body.append(c)
    outs = [clone[id(o)] for o in g.outputs]
    if len(outs) > 1:
        # A tuple-shaped output (a variadic reduce) is listed element by element: a fusion's
        # result is a flat tuple of arrays, one buffer each, as in XLA.
        leaves = []
        for o in outs:
            if not o.shape.is_tuple:
                leaves.append(o)
                continue
            for k, e in enumerate(o.shape.elements):
                gte = mark(Instruction(fresh("get-tuple-element"), "get-tuple-element", e,
                                       (o,), (("index", k),), o.metadata))
                body.append(gte)
                leaves.append(gte)
        shape = TupleShape(tuple(o.shape for o in leaves))
        body.append(Instruction(fresh("tuple"), "tuple", shape, tuple(leaves)))
    else:
        shape = outs[0].shape
        # The root must be last. Members after it in program order cannot feed it, so moving
        # it down keeps every use after its definition.
        if body[-1] is not outs[0]:
            body.remove(outs[0])
            body.append(outs[0])
    comp = Computation(comp_name, tuple(body))
    attrs = [("kind", g.kind), ("calls", comp_name)]
    if g.row:
        attrs.append(("backend_config", ROW_CONFIG))
    fusion = mark(Instruction(name, "fusion", shape, tuple(value[id(x)] for x in externals),
                              tuple(attrs), g.root.metadata))
    if len(g.outputs) == 1:
        return [fusion], [fusion], comp
    new, values, index = [fusion], [], 0
    for o in outs:
        parts = []
        for e in (o.shape.elements if o.shape.is_tuple else [o.shape]):
            parts.append(mark(Instruction(fresh("get-tuple-element"), "get-tuple-element", e,
                                          (fusion,), (("index", index),), o.metadata)))
            index += 1
        new.extend(parts)
        if o.shape.is_tuple:  # the output's users read it as the tuple it was
            parts = [Instruction(fresh("tuple"), "tuple", o.shape, tuple(parts), (),
                                 o.metadata)]
            new.extend(parts)
        values.append(parts[0])
    return new, values, comp


def unfuse(module: Module) -> tuple[Module, list[FusionGroup]]:
    """Inline every fusion back into the entry, returning the groups: one per fusion, and one
    per fusible instruction that runs as a kernel of its own.

    The inlined instructions are the fused computation's own (renamed parameters replaced by
    the fusion's operands), so `emit` can regroup them."""
    value: dict[int, Instruction] = {}
    new: list[Instruction] = []
    groups: list[FusionGroup] = []
    inlined_comps: set[str] = set()
    canon: dict[tuple, Instruction] = {}
    for inst in module.entry.instructions:
        ops = tuple(value[id(o)] for o in inst.operands)
        if inst.opcode == "fusion" and inst.attr("kind") in ("kLoop", "kInput", "kOutput"):
            comp = module.computation(inst.attr("calls"))
            inlined_comps.add(comp.name)
            cluster = cluster_of(inst)
            inner: dict[int, Instruction] = {}
            members: list[Instruction] = []
            for c in comp.instructions:
                if c.opcode == "parameter":
                    inner[id(c)] = ops[c.parameter_number]
                    continue
                if c is comp.root and c.opcode == "tuple":
                    continue
                m = c.replace(operands=tuple(inner[id(o)] for o in c.operands))
                if cluster and cluster_of(m) is None and m.opcode != "constant":
                    m = with_cluster(m, cluster)  # a fusion written with its mark alone
                # A cheap producer copied into several kernels is one instruction again, in
                # each of their groups.
                key = _structure(m)
                if key in canon:
                    m = canon[key]
                else:
                    canon[key] = m
                    new.append(m)
                inner[id(c)] = m
                members.append(m)
            root = comp.root
            outputs = ([inner[id(o)] for o in root.operands] if root.opcode == "tuple"
                       else [inner[id(root)]])
            members = list({id(m): m for m in members}.values())  # a copy may repeat
            groups.append(FusionGroup(members, outputs, row=is_row_fusion(inst)))
            if root.opcode == "tuple":
                value[id(inst)] = ("tuple", outputs)  # read only through get-tuple-element
            else:
                value[id(inst)] = outputs[0]
            continue
        source = value.get(id(inst.operands[0])) if inst.operands else None
        if inst.opcode == "get-tuple-element" and isinstance(source, tuple):
            value[id(inst)] = source[1][inst.attr("index")]
            continue
        same = all(a is b for a, b in zip(ops, inst.operands))
        copy = inst if same else inst.replace(operands=ops)
        if is_fusible(copy) and copy.opcode != "constant":
            # A kernel of one: a group too, so it can join others.
            key = _structure(copy)
            if key in canon:  # also computed inside a fusion, as a copied cheap producer
                copy = canon[key]
            else:
                canon[key] = copy
                new.append(copy)
            groups.append(FusionGroup([copy], [copy]))
            value[id(inst)] = copy
            continue
        value[id(inst)] = copy
        new.append(copy)
    comps = tuple(c for c in module.computations if c.name not in inlined_comps)
    flat = module.replace(entry=Computation(module.entry.name, tuple(new)), computations=comps)
    return flat, groups


def _structure(inst: Instruction) -> tuple:
    literal = None if inst.literal is None else (inst.literal.dtype.str, inst.literal.tobytes())
    return (inst.opcode, str(inst.shape), repr(inst.attrs), literal,
            tuple(id(o) for o in inst.operands))


def place_name(place) -> str:
    """`the kernel of add.7` for a group, the instruction's name for one running on its own."""
    return f"the kernel of {place.root.name}" if isinstance(place, FusionGroup) else place.name
