"""Instruction fusion, as XLA's InstructionFusion does it, plus row fusion.

Consumers are visited from the root backwards (reverse post-order); each tries to pull its
producers into its kernel. `should_fuse` answers with a refusal sentence, or None when fusion
is allowed (XLA's FusionDecision). Every decision, taken or refused, is recorded.

The kinds (XLA's names):
  kLoop    element-wise ops and data movement: one loop over the output;
  kInput   a reduction root with its element-wise producers: `sum(x + y*z)` is one kernel;
  kOutput  a dot with its element-wise epilogue: `relu(x @ W + b)` is one kernel.
And beyond classic XLA, row fusion: reductions over the trailing axes whose results are
broadcast back along those axes and combined with the same rows (softmax, layernorm) join one
kernel that runs row by row, printed as kind=kInput with backend_config={"schedule":"row"}.
"""
from __future__ import annotations

import heapq
import itertools

from ..ir.library import library_call
from ..ir.module import Instruction, Module
from ..ir.ops import Group as OpGroup
from ..ir.ops import elementwise_like, in_group, is_expensive
from .autocluster import cluster_boundary
from .base import Pass, PassResult
from .buffer_assignment import human_bytes
from .fusion_groups import (MAX_OPERANDS_AND_OUTPUTS, FusionGroup, GroupIndex, emit,
                            is_fusible, place_name)
from .fusion_order import Depths
from .kinds import Decision
from .names import NameGen
from .row_fusion import row_fusion

# A producer written to memory anyway is copied into a kernel that does not read its
# operand otherwise only while that operand is smaller than this: a small value kept a few
# kernels longer costs the arena little, and the copy can let the consumer join another
# kernel (a column mean and the centring that reads it, one kernel); a large one is held
# in memory until the copy runs (a training step's X @ W1, 512 KiB, beside relu's result).
KEEP_ALIVE_BYTES = 64 * 1024

# A fused value is computed once per distinct index it is read at: a stencil reads its
# producer at 3 offsets, so k fused steps would compute the first one 3**k times (and emit its
# code as often). XLA refuses a fusion that would compute a value more often than this
# (kAllowedCodeDuplication in its FusionNodeIndexingEvaluation); 15 lets two steps of a 1-D
# stencil share a kernel (16 evaluations for a third), and no kernel of an element-wise,
# reduction or row program comes near it, each value being read at one index there.
MAX_INDEX_EVALUATIONS = 15


class _Graph:
    """Users of each instruction, and which groups hold it, as the pass changes them."""

    def __init__(self, module: Module):
        self.entry = module.entry
        self.users: dict[int, list[Instruction]] = {id(i): [] for i in self.entry.instructions}
        for inst in self.entry.instructions:
            for o in {id(o): o for o in inst.operands}.values():
                self.users[id(o)].append(inst)
        self.order = {id(i): n for n, i in enumerate(self.entry.instructions)}
        self.index = GroupIndex()

    def user_groups(self, inst: Instruction) -> list:
        """Who reads inst: the groups holding its users, or the users themselves."""
        out, seen = [], set()
        for u in self.users[id(inst)]:
            for h in self.index.of(u) or [u]:
                if id(h) not in seen:
                    seen.add(id(h))
                    out.append(h)
        return out


class Fusion(Pass):
    name = "fusion"

    def run(self, module: Module) -> PassResult:
        graph = _Graph(module)
        self._order, self._evaluations = graph.order, {}
        self._users, self._uniformity = graph.users, {}
        decisions: list[Decision] = []
        groups: list[FusionGroup] = []
        owner: dict[int, FusionGroup] = {}  # instruction moved into a group -> that group

        for inst in reversed(module.entry.instructions):
            if _own_kernel(inst):  # why nothing joins a scatter's, sort's or library call's
                decisions += _own_loop_refusals(inst)
            if id(inst) in owner or not is_fusible(inst) or inst.opcode == "constant":
                continue
            g = FusionGroup([inst], [inst])
            groups.append(g)
            graph.index.track(g)
            owner[id(inst)] = g
            self._grow(g, graph, owner, decisions)
        # Copied cheap producers whose every user took a copy have no kernel of their own.
        groups = self._drop_unneeded(groups, graph, owner, decisions)
        groups = row_fusion(groups, graph, decisions)
        # A producer copied into several kernels is decided on in each (a consumer copied into
        # two kernels takes it twice): one note per producer and consumer taken, and each
        # refusal said once.
        seen: set = set()
        decisions = [d for d in decisions if not (_said(d) in seen or seen.add(_said(d)))]
        if all(g.is_single() for g in groups):
            return PassResult(module, False, tuple(decisions))
        for g in groups:
            g.sort(graph.order)
        new = emit(module, groups, NameGen(module))
        return PassResult(new, True, tuple(decisions))

    # -- classic producer-into-consumer fusion ---------------------------------------------

    def _grow(self, g: FusionGroup, graph: _Graph, owner, decisions):
        """Pull producers into g until every remaining one is refused.

        Candidates are decided nearest to the root first, by the longest path to it, as XLA
        visits a fusion's producers in reverse post-order: every user of a producer that
        could join g is nearer, so it has joined (or been refused) by the time the producer
        is decided, and the producer's readers and the times g would compute it are known
        in full. Ties go in the order the candidates were found."""
        decided: set[tuple[int, int]] = set()
        heap: list = []
        seq = itertools.count()
        depth = Depths(g.root, graph.entry.instructions, graph.order)

        def candidates(member):
            for producer in member.operands:
                heapq.heappush(heap, (*depth.key(producer), next(seq), producer, member))

        for member in g.members:
            candidates(member)
        while heap:
            *_, producer, member = heapq.heappop(heap)
            key = (id(producer), id(member))
            if key in decided or g.contains(producer):
                continue
            decided.add(key)
            if producer.opcode in ("parameter", "get-tuple-element", "tuple"):
                continue  # inputs of every kernel; nothing to decide
            readers = _readers(producer, g, graph, owner)
            refusal = self.should_fuse(producer, member, g, readers)
            if refusal:
                refusal = f"not fused {producer.name} into {member.name}: {refusal}"
                decisions.append(Decision(refusal, "refused", (producer.name, member.name),
                                          producer.name, member.name, False))
                continue
            what = self._what(producer)
            # The consumer itself is among the readers when g holds a copy of it: its own
            # kernel will take the producer too, so it is no other reader to name.
            others = [r for r in readers if r is not member]
            if others:
                why = (f"fused {producer.name} into {member.name}: {what} and cheap, so "
                       f"copied into this kernel ({_also_read_by(others)})")
            else:
                why = f"fused {producer.name} into {member.name}: {what}, single consumer"
            if not readers:
                owner[id(producer)] = g
            graph.index.add(g, producer)
            decisions.append(Decision(why, "fused", (producer.name, member.name),
                                      producer.name, member.name, True))
            candidates(producer)

    @staticmethod
    def _what(inst: Instruction) -> str:
        if inst.opcode == "dot":
            return "a dot with an element-wise epilogue (output fusion)"
        if inst.opcode == "constant":
            return "a scalar constant"
        if inst.opcode == "iota":
            return "an index, computed in the loop"
        if in_group(inst.opcode, OpGroup.DATA_MOVEMENT):
            return "data movement, done by index arithmetic"
        return "element-wise"

    def should_fuse(self, producer: Instruction, consumer: Instruction, g: FusionGroup,
                    readers: list) -> str | None:
        """None if producer may join consumer's kernel, else why not, as a sentence that
        `_grow` prefixes with "not fused PRODUCER into CONSUMER: " (XLA's FusionDecision)."""
        p, c = producer.name, consumer.name
        call = library_call(producer)
        if call is not None:
            return (f"{p} ({call.function}) is a library call (LAPACK {call.routines}"
                    f"), as XLA runs it: a kernel of its own, and {c} reads its result from "
                    "memory")
        if producer.opcode == "custom-call":
            target = producer.attr("custom_call_target", "")
            return f"{p} ({target}) is not compilable: it runs in NumPy, between kernels"
        boundary = cluster_boundary(producer, consumer)
        if boundary:  # auto-clustering decided these run apart (eagerly, or compiled apart)
            return boundary
        if producer.opcode == "scatter":
            return (f"{p} is a scatter: it applies its updates one after another in a loop of "
                    "its own, so it is a kernel of its own and its result is read from memory")
        if producer.opcode == "sort":
            return (f"{p} is a sort: each element of its result depends on its whole row, so "
                    f"it is a kernel of its own and {c} reads its result from memory")
        if not is_fusible(producer):
            return f"{p} ({producer.opcode}) does not run inside fused kernels"
        if consumer.opcode == "gather" and is_expensive(producer):
            # XLA's ReusesOperandElements: a gather may read one element many times.
            return (f"{p} is expensive ({producer.opcode}) and {c} is a gather, which may read "
                    f"the same element of {p} many times (repeated indices); {p} is computed "
                    "once, in a kernel of its own")
        if consumer.opcode == "dot":
            return f"{c} is a dot, and a dot reads its operands from memory (BLAS)"
        dot = next((u for u in self._users[id(producer)] if u.opcode == "dot"
                    and g.contains(u)), None)
        if dot is not None:  # g + g @ x: the add's kernel holds the dot that also reads g
            return (f"{p} is also an operand of {dot.name} in this kernel, and a dot reads its "
                    "operands from memory (BLAS)")
        if producer.opcode == "reduce":
            return (f"{p} is a reduction, and {c} needs all of its result first (a kernel "
                    "boundary, unless row fusion joins them)")
        if producer.opcode == "reduce-window":  # scans
            return (f"{p} is a scan: each of its elements needs every element before it along "
                    f"the axis, so {c} reads its result from memory, in a kernel of its own "
                    "(a kernel boundary, as in XLA)")
        consumers = len(readers) + 1
        if producer.opcode == "dot":
            if readers:
                return f"{p} is a dot with {consumers} consumers; it is computed once"
            other = next((m.opcode for m in g.members if m.opcode in ("reduce", "dot")), None)
            if other:
                return (f"{p} is a dot, which fuses only with an element-wise epilogue, and "
                        f"this kernel has a {other}")
            if not self._elementwise_epilogue(producer, consumer, g):
                return f"{p} is a dot, and {c} is not an element-wise epilogue of its shape"
            inside = next((o for o in producer.operands if g.contains(o)), None)
            if inside is not None:  # g + g @ x, with g already copied into the add's kernel
                return (f"{p} is a dot, and its operand {inside.name} is computed in this "
                        "kernel; a dot reads its operands from memory (BLAS)")
        arrays = [o for o in dict.fromkeys(producer.operands) if not _free(o)]
        others = [r for r in readers if r is not consumer]
        if others and len(arrays) > 1:
            # XLA's globally unfusible producers: copied, it would read its operands again
            # where one read of its result would do; and a copy in each step of a loop would
            # recompute every step before it.
            return (f"{p} is written to memory anyway ({_also_read_by(others)}) and reads "
                    f"{len(arrays)} arrays; {c} reads its result instead of reading them all "
                    "again (XLA copies only producers that read one array)")
        if others and arrays and _kept_alive(arrays[0], g):
            # The copy would read as much as reading the result, and keep a large value in
            # memory until this kernel runs (and, there, leave a product without its
            # epilogue: the product's other reader).
            size = human_bytes(arrays[0].shape.nbytes)
            return (f"{p} is written to memory anyway ({_also_read_by(others)}); a copy in "
                    f"{c}'s kernel would read {arrays[0].name} ({size}), which it reads "
                    f"nowhere else, instead of {p}'s result: the same traffic, and "
                    f"{arrays[0].name} kept in memory until then")
        if readers and is_expensive(producer):
            return (f"{p} is expensive ({producer.opcode}) and has {consumers} consumers; it is "
                    "computed once (multi-output fusion may still join them)")
        duplication = self._duplication(producer, g)
        if duplication:
            return duplication
        # The producer moves inside: its operands become the kernel's, it stops being one.
        n = (len(({id(x) for x in g.external_operands()} - {id(producer)})
                 | {id(o) for o in producer.operands if not g.contains(o)}) + len(g.outputs))
        if n > MAX_OPERANDS_AND_OUTPUTS:
            return (f"the kernel would have {n} operands and outputs (the limit is "
                    f"{MAX_OPERANDS_AND_OUTPUTS})")
        return None

    def _duplication(self, producer: Instruction, g: FusionGroup) -> str | None:
        """Why fusing producer would compute it too often per element of g's loop, if it
        would (XLA's CodeDuplicationTooHigh, and its ReusesOperandElements for an expensive
        producer, which may not be computed even twice)."""
        if _free(producer):
            return None  # no work of its own: an index, a literal, or a read at fewer indices
        expensive = is_expensive(producer)
        limit = 1 if expensive else MAX_INDEX_EVALUATIONS
        if self._uniform(g):
            # Every member is computed once per element: producer would be computed once per
            # distinct read, its kernel's own index or a reader's index of its own. (Counted
            # without building the evaluations, which a long chain would rebuild at every
            # step: 7.5 s for 1,100 additions.)
            reads = {None if _same_index(m, k) else (id(m), k)
                     for m in self._users[id(producer)] if g.contains(m)
                     for k, o in enumerate(m.operands) if o is producer}
            if len(reads) <= limit:
                return None
        evaluations = self._index_evaluations(g)
        reads = evaluations.reads_of(producer, g)
        n = sum(map(evaluations.count, reads))
        if n <= limit:
            return None
        p, at = producer.name, evaluations.describe(reads)
        if expensive:
            return (f"{p} is expensive ({producer.opcode}) and would be computed {n} times per "
                    f"element of this kernel ({at}); it is computed once, in a kernel of its "
                    "own, and read from memory")
        return (f"{p} would be computed {n} times per element of this kernel ({at}), more than "
                f"the limit of {MAX_INDEX_EVALUATIONS} (XLA's); it is kept as a kernel of its "
                "own, so its code is emitted once and its result read from memory")

    def _uniform(self, g: FusionGroup) -> bool:
        """Whether every read between g's members is at the reader's own index (element-wise
        ops of one shape), but reads of a scalar or of a value with no operands (a constant,
        an iota: computed where read, from nothing): then each member is computed once per
        element of g's loop, or once. Kept
        per group and brought up to date with the members that joined since (members only
        join, at the end of the list, while groups grow): an edge is checked when the later
        of its two ends is first seen. (Walking every member again at each ask, a 300-step
        Adam's one kernel of thousands of ops spent 1.7 s here.)"""
        done, uniform = self._uniformity.get(g.id, (0, True))
        members = g.members
        for m in members[done:] if uniform else ():
            inward = any(g.contains(o) and not _once(o) and not _same_index(m, k)
                         for k, o in enumerate(m.operands))
            outward = not _once(m) and any(
                o is m and not _same_index(u, k) for u in self._users[id(m)] if g.contains(u)
                for k, o in enumerate(u.operands))
            if m.shape.is_tuple or inward or outward:
                uniform = False
        self._uniformity[g.id] = (len(members), uniform)
        return uniform

    def _index_evaluations(self, g: FusionGroup) -> _IndexEvaluations:
        # Members only join a group, so (group, size) names what it held when last asked.
        key = (g.id, len(g.members))
        if key not in self._evaluations:
            self._evaluations[key] = _IndexEvaluations(g, self._order)
        return self._evaluations[key]

    @staticmethod
    def _elementwise_epilogue(dot: Instruction, consumer: Instruction, g: FusionGroup) -> bool:
        """The dot's result would flow to the kernel's root through element-wise ops of its
        own shape only: what BLAS's output can feed without being stored first."""
        for m in g.members:
            if m is consumer or _depends_on(consumer, m):
                if not (elementwise_like(m.opcode) and m.dims == dot.dims):
                    return False
        return True

    @staticmethod
    def _drop_unneeded(groups, graph: _Graph, owner, decisions):
        """A copied cheap producer needs no kernel of its own once every reader has a copy."""
        kept = []
        for g in groups:
            if len(g.outputs) == 1 and graph.users[id(g.root)] and not _readers(
                    g.root, g, graph, owner):
                decisions.append(Decision(
                    f"{g.root.name} runs inside each of its consumers' kernels (copied), so it "
                    f"needs no kernel of its own", "copied-everywhere", (g.root.name,),
                    g.root.name, "", True))
                graph.index.forget(g)
                continue
            kept.append(g)
        return kept

# Ops that fuse no producer, and why: each runs as a loop of its own that reads its operands
# from memory.
_OWN_LOOP = {
    "scatter": "a scatter, which runs as a loop of its own over its updates, in order; its "
               "operands are read from memory",
    "sort": "a sort, which reads its operands from memory (it visits each row's elements in an "
            "order the values decide, several times over)",
}


def _own_kernel(inst: Instruction) -> str:
    """What inst is, when it fuses no producer (a scatter, a sort, a library call); else ""."""
    call = library_call(inst)
    if call is not None:
        return (f"a library call ({call.function}, LAPACK {call.routines}), as XLA "
                "runs it: a kernel of its own, which reads its operands from memory")
    return _OWN_LOOP.get(inst.opcode, "")


def _own_loop_refusals(inst: Instruction) -> list[Decision]:
    """One refusal per producer of a scatter, sort or library call: a fused producer would be
    recomputed at every visit of the loop, and the loop visits elements in an order the data
    decides; a library routine reads arrays from memory."""
    out = []
    for o in {id(o): o for o in inst.operands}.values():
        if o.opcode in ("parameter", "get-tuple-element", "tuple", "constant"):
            continue
        message = f"not fused {o.name} into {inst.name}: {inst.name} is {_own_kernel(inst)}"
        out.append(Decision(message, "refused", (o.name, inst.name), o.name, inst.name, False))
    return out


# -- how often a fused value is computed (XLA's FusionNodeIndexingEvaluation) ---------------

def _scalar(inst: Instruction) -> bool:
    """A rank-0 value has one index, (), however it is read: it is computed once."""
    return not inst.shape.is_tuple and inst.dims == ()


def _once(inst: Instruction) -> bool:
    """A value a kernel computes once however it is read (a scalar), or from nothing (a
    constant, an iota): reads of it at other indices count for nothing else in the kernel."""
    return _scalar(inst) or not inst.operands


def _same_index(user: Instruction, k: int) -> bool:
    """Whether user reads its k-th operand at user's own index: element-wise ops, and the
    array a dynamic-update-slice writes into. Any other read (a slice, pad, reverse,
    transpose, broadcast, a reduction's input, an update) is at an index of its own. Wider
    than `elementwise_like`, which asks about an op: this asks about one operand of a use,
    so a dynamic-update-slice's target and a same-shape copy or reshape count too."""
    if user.shape.is_tuple or user.operands[k].shape.is_tuple:
        return False
    if user.opcode == "dynamic-update-slice":
        return k == 0
    if user.opcode in ("copy", "reshape", "bitcast"):
        return user.operands[k].dims == user.dims
    return elementwise_like(user.opcode) and user.operands[k].dims == user.dims


class _IndexEvaluations:
    """For each member of a group, the distinct reads that index it, and so how many times
    one element of the group's loop computes it.

    A read is the kernel's own loop (None) for an output, or (user, operand position) for a
    user that reads at an index of its own; an element-wise user passes its own reads on,
    since it reads its operands where it is read. A member is computed once per distinct read,
    and a read by (user, k) happens as often as user is computed. Counting reads by who makes
    them, not by the index they produce, is XLA's model: an upper bound on the distinct
    indices, exact for a stencil's slices at different offsets."""

    def __init__(self, g: FusionGroup, order: dict[int, int]):
        self.reads: dict[int, set] = {}
        self.times: dict[int, int] = {}
        self.names: dict[int, str] = {id(m): m.name for m in g.members}
        outputs = {id(o) for o in g.outputs}
        # Users come after their operands in the entry: visiting members from the last one
        # back, a member's reads are all known when it is reached.
        for m in sorted(g.members, key=lambda m: order[id(m)], reverse=True):
            reads = self.reads.setdefault(id(m), set())
            if id(m) in outputs:
                reads.add(None)
            self.times[id(m)] = 1 if _scalar(m) else max(1, sum(map(self.count, reads)))
            for k, o in enumerate(m.operands):
                if g.contains(o):
                    self.reads.setdefault(id(o), set()).update(
                        reads if _same_index(m, k) else {(id(m), k)})

    def count(self, read) -> int:
        return 1 if read is None else self.times[read[0]]

    def reads_of(self, producer: Instruction, g: FusionGroup) -> set:
        """The distinct reads of producer inside g, were it fused."""
        reads: set = set()
        for m in g.members:
            for k, o in enumerate(m.operands):
                if o is producer:
                    reads.update(self.reads[id(m)] if _same_index(m, k) else {(id(m), k)})
        return reads

    def describe(self, reads: set) -> str:
        """`it is read at different indices by c2, l2 and r2, which this kernel computes 9,
        9 and 9 times`."""
        ordered = sorted(reads, key=lambda r: "" if r is None else self.names[r[0]])
        names = ["the kernel's output" if r is None else self.names[r[0]] for r in ordered]
        counts = [self.count(r) for r in ordered]
        listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
        said = f"it is read at different indices by {listed}"
        if any(c > 1 for c in counts):
            times = ", ".join(map(str, counts[:-1])) + " and " + str(counts[-1])
            said += f", which this kernel computes {times} times"
        return said


def _free(inst: Instruction) -> bool:
    """Read at no cost of its own: a literal, an index, a scalar, or a broadcast."""
    return inst.opcode in ("constant", "iota", "broadcast") or _scalar(inst)


def _kept_alive(value: Instruction, g: FusionGroup) -> bool:
    """Whether a copy of value's reader in g would keep `value` in memory for g alone: a
    computed value (a parameter is in memory anyway) of KEEP_ALIVE_BYTES or more that g
    neither reads nor computes otherwise."""
    return (value.opcode not in ("parameter", "constant")
            and value.shape.nbytes >= KEEP_ALIVE_BYTES and not g.contains(value)
            and not any(o is value for o in g.external_operands()))


def _readers(producer: Instruction, g: FusionGroup, graph: _Graph, owner) -> list:
    """Who, other than g, would read producer's value from memory: kernels that hold one of
    its users but not a copy of producer, and users that run outside any kernel."""
    out: list = []
    seen = {id(g)}
    for u in graph.users[id(producer)]:
        places: list = [h for h in graph.index.of(u) if not h.contains(producer)]
        if id(u) not in owner:
            places.append(u)  # not yet in a kernel of its own, or not fusible at all
        for h in places:
            if id(h) not in seen:
                seen.add(id(h))
                out.append(h)
    return out


def _said(d: Decision):
    """What makes two notes one for a reader: a producer taken into a consumer (whichever
    kernel held the consumer), or the same sentence."""
    return (d.rule, d.producer, d.consumer) if d.fused and d.consumer else d.message


def _also_read_by(readers: list) -> str:
    """`the kernel of add.7 also reads it`, `add.7, tuple.9 and 2 more also read it`."""
    names = [place_name(r) for r in readers[:3]]
    if len(readers) > 3:
        listed = ", ".join(names) + f" and {len(readers) - 3} more"
    elif len(names) > 1:
        listed = ", ".join(names[:-1]) + " and " + names[-1]
    else:
        listed = names[0]
    return f"{listed} also {'reads' if len(readers) == 1 else 'read'} it"


def _depends_on(inst: Instruction, target: Instruction) -> bool:
    """Whether target uses inst (directly or not)."""
    stack, seen = [target], set()
    while stack:
        x = stack.pop()
        if x is inst:
            return True
        for o in x.operands:
            if id(o) not in seen:
                seen.add(id(o))
                stack.append(o)
    return False
