"""Multi-output fusion: fewer kernels by letting one kernel write several results.

Two cases, as XLA's multi-output fusion has:
  producer-consumer: a kernel's value that another kernel also computes (a copied cheap
    producer) or reads element by element becomes an extra output of the consumer's kernel,
    instead of being computed twice or written and read back (the three results of an Adam
    step become one kernel);
  siblings: kernels that read the same large operand over loops of the same shape run as one,
    reading it once (sum and sum of squares; min and max).
Kernels with a dot (kOutput) stay as they are: BLAS writes their result.
"""
from __future__ import annotations

from ..ir.module import Instruction, Module
from ..ir.ops import elementwise_like
from .autocluster import cluster_boundary
from .base import Pass, PassResult
from .fusion_groups import MAX_OPERANDS_AND_OUTPUTS
from .fusion_groups import FusionGroup, GroupIndex, emit, joined_size, unfuse
from .kinds import Decision
from .names import NameGen


def loop_shape(g: FusionGroup) -> tuple[int, ...]:
    """The index space a kernel loops over: a reduction's input, else its result."""
    for m in g.members:
        if m.opcode == "reduce":
            return m.operands[0].dims
    return g.outputs[0].dims


def _read_outside(inst: Instruction, g: FusionGroup, index: GroupIndex, users) -> bool:
    """Whether anything but g reads inst from memory: a kernel holding a user of inst but not
    inst itself, or a user that runs on its own (the root tuple, a custom-call)."""
    return any(any(h is not g and not h.contains(inst) for h in index.of(u)) or not index.of(u)
               for u in users.get(id(inst), ()))


def _aligned_reads(value: Instruction, g: FusionGroup) -> bool:
    """g reads value only element by element, at value's own shape (a reduction reads each
    element of its input once, in its loop)."""
    readers = [m for m in g.members if any(o is value for o in m.operands)]
    return bool(readers) and all(
        (elementwise_like(m.opcode) and m.dims == value.dims)
        or (m.opcode == "reduce" and all(o is not value for o in m.operands[len(m.operands) // 2:]))
        for m in readers)


class _Reach:
    """Which kernels each kernel needs, through other kernels or instructions that run on
    their own: for each, a bitset of the kernels upstream of it, worked out once per search
    (asking by walking the graph for every pair made a long unrolled loop cubic)."""

    def __init__(self, groups):
        self.bit = {id(g): 1 << n for n, g in enumerate(groups)}
        self.producer: dict[int, FusionGroup] = {}
        for g in groups:
            for o in g.outputs:
                self.producer.setdefault(id(o), g)
        self.upstream: dict[int, int] = {}  # id(kernel or instruction) -> kernels it needs

    def _node(self, value: Instruction):
        """What computes value: its kernel, or the instruction itself (run on its own)."""
        g = self.producer.get(id(value))
        return value if g is None else g

    def _inputs(self, node) -> list:
        values = node.external_operands() if isinstance(node, FusionGroup) else node.operands
        return [self._node(v) for v in values]

    def _of(self, node) -> int:
        """The kernels node needs (a stack, not recursion: loops make long chains)."""
        stack = [(node, False)]
        while stack:
            n, done = stack.pop()
            if id(n) in self.upstream:
                continue
            inputs = self._inputs(n)
            if done:
                need = 0
                for i in inputs:
                    need |= self.upstream[id(i)] | self.bit.get(id(i), 0)
                self.upstream[id(n)] = need
            else:
                stack.append((n, True))
                stack.extend((i, False) for i in inputs if id(i) not in self.upstream)
        return self.upstream[id(node)]

    def needs(self, b: FusionGroup, a: FusionGroup, direct_ok: bool) -> bool:
        """Whether kernel b needs a result of kernel a, through other kernels or instructions
        that run on their own (or directly, unless direct_ok: a direct read is what a
        producer-consumer merge absorbs). Merging a and b when b needs a through a third
        kernel would make the joined kernel wait for itself; the check is over kernels, not
        instructions, since two kernels can need each other although no instruction needs
        itself."""
        want = self.bit[id(a)]
        for value in b.external_operands():
            node = self._node(value)
            if node is a:
                if not direct_ok:
                    return True
                continue
            if node is b:
                continue
            if (self.bit.get(id(node), 0) | self._of(node)) & want:
                return True
        return False


def _mergeable(g: FusionGroup) -> bool:
    return g.kind != "kOutput"


class MultiOutputFusion(Pass):
    name = "multi-output-fusion"

    def run(self, module: Module) -> PassResult:
        flat, groups = unfuse(module)
        if len(groups) < 2:
            return PassResult(module, False)
        users: dict[int, list[Instruction]] = {}
        for inst in flat.entry.instructions:
            for o in inst.operands:
                users.setdefault(id(o), []).append(inst)
        order = {id(i): n for n, i in enumerate(flat.entry.instructions)}
        index = GroupIndex(groups)
        decisions: list[Decision] = []
        self._said: set[str] = set()
        self._facts: dict[int, tuple] = {}  # FusionGroup.id -> what `_find` asks of it
        while True:
            merge = self._find(groups, users, decisions)
            if merge is None:
                break
            keep, gone, message, rule = merge
            gone_root = gone.root.name
            # An output stays one if something outside the joined kernel still reads it.
            candidates = list({id(o): o for o in gone.outputs + keep.outputs}.values())
            last = keep.outputs[-1]
            # The smaller group's members move into the larger's object, which takes keep's
            # place: the joined kernel is the same, and a long chain of kernels merging one
            # by one is not copied over at every merge (quadratic in an unrolled loop's steps).
            big, small = (keep, gone) if len(keep.members) >= len(gone.members) else (gone, keep)
            index.forget(small)
            for m in small.members:
                index.add(big, m)
            big.row = keep.row or gone.row
            groups = [big if g is keep else g for g in groups if g is not gone]
            big.outputs = [o for o in candidates if _read_outside(o, big, index, users)
                           or not users.get(id(o))] or [last]
            big.sort(order)
            decisions.append(Decision(message, rule, (gone_root, big.root.name),
                                      gone_root, big.root.name, True, self.name))
        if not any(d.fused for d in decisions):
            return PassResult(module, False, tuple(decisions))
        # Siblings' outputs keep their place: a kernel's root is its last output.
        new = emit(flat, groups, NameGen(module))
        return PassResult(new, True, tuple(decisions))

    def _find(self, groups, users, decisions):
        # Each group's kind, loop and inputs, worked out once per search rather than once per
        # pair (a long unrolled loop makes hundreds of kernels, and tens of thousands of
        # pairs), and kept between searches for the groups that did not change.
        ok, loop, inputs, reads = {}, {}, {}, {}
        for g in groups:
            facts = self._facts.get(g.id)
            key = (len(g.members), g.row, id(g.outputs[0]))
            if facts is None or facts[0] != key:
                ins = g.external_operands()
                facts = (key, _mergeable(g), loop_shape(g), ins,
                         {id(x) for x in ins})
                self._facts[g.id] = facts
            _, ok[id(g)], loop[id(g)], inputs[id(g)], reads[id(g)] = facts
        reach = _Reach(groups)
        for gp in groups:
            if not ok[id(gp)]:
                continue
            # Producer-consumer: gp's value is recomputed inside gc, or read element-wise by it.
            for gc in groups:
                if gc is gp or not ok[id(gc)] or loop[id(gc)] != loop[id(gp)]:
                    continue
                read = [o for o in gp.outputs if id(o) in reads[id(gc)]]
                if not read and not gc.contains(gp.members[0]):
                    continue
                inside = all(gc.contains(m) for m in gp.members)
                if not (inside or read) or not all(_aligned_reads(o, gc) for o in read):
                    continue
                names = ", ".join(o.name for o in (read or gp.outputs))
                why_not = self._refusal(gp, gc, reach, direct_ok=True)
                if why_not:
                    self._refuse(decisions, gp, gc, f"{gc.label()} reads {names}", why_not)
                    continue
                if inside:
                    msg = (f"multi-output fusion: {names} is computed both inside "
                           f"{gc.label()} and on its own; it becomes an extra output of that "
                           f"kernel instead of being computed twice")
                else:
                    msg = (f"multi-output fusion: {gc.label()} reads {names} element by element; "
                           f"one kernel computes both, with {gp.label()}'s results as extra "
                           "outputs, instead of writing them and reading them back")
                return gc, gp, msg, "producer-consumer"
        for i, g1 in enumerate(groups):
            for g2 in groups[i + 1:]:
                if not (ok[id(g1)] and ok[id(g2)]) or loop[id(g1)] != loop[id(g2)] \
                        or reads[id(g1)].isdisjoint(reads[id(g2)]):
                    continue
                shared = [x for x in inputs[id(g1)] if x.shape.size > 1 and id(x) in reads[id(g2)]]
                if not shared:
                    continue
                x = shared[0]
                why_not = self._refusal(g1, g2, reach, direct_ok=False)
                if why_not:
                    self._refuse(decisions, g1, g2, f"both read {x.name}", why_not)
                    continue
                msg = (f"multi-output fusion: {g1.label()} and {g2.label()} both read {x.name} "
                       f"({x.shape}) over loops of the same shape; one kernel reads it once "
                       f"and writes both results")
                return g2, g1, msg, "siblings"
        return None

    @staticmethod
    def _refusal(a: FusionGroup, b: FusionGroup, reach: _Reach, direct_ok: bool) -> str | None:
        """Why a and b may not become one kernel (b may read a directly when direct_ok)."""
        boundary = cluster_boundary(a.root, b.root)
        if boundary:  # auto-clustering decided these run apart (eagerly, or compiled apart)
            return boundary
        for x, y, ok in ((b, a, direct_ok), (a, b, False)):
            if reach.needs(x, y, ok):
                how = "through another kernel" if ok else ""
                return (f"{x.label()} needs a result of {y.label()} {how}".rstrip()
                        + ", so one kernel for both would wait for itself")
        n = joined_size(a, b)
        if n > MAX_OPERANDS_AND_OUTPUTS:
            return (f"the kernel would have {n} operands and outputs (the limit is "
                    f"{MAX_OPERANDS_AND_OUTPUTS})")
        return None

    def _refuse(self, decisions, a: FusionGroup, b: FusionGroup, relation: str, why: str):
        message = f"not merged {a.label()} and {b.label()} ({relation}): {why}"
        if message not in self._said:  # each refusal said once, however often it is met
            self._said.add(message)
            decisions.append(Decision(message, "refused", (a.root.name, b.root.name),
                                      a.root.name, b.root.name, False, self.name))
