"""Auto-clustering, as TensorFlow's mark_for_compilation pass does it (--tf_xla_auto_jit).

Some ops cannot be compiled: their output shape depends on their input values (np.unique,
np.nonzero, a boolean mask), or the op table has no row for them. They run eagerly, in NumPy,
and the compilable ops around them are grouped into clusters, each compiled on its own.

Every compilable computing instruction starts as a cluster of one. Producer->consumer edges
are visited in post order and contracted when both ends are compilable and joining them makes
no cycle in the graph of clusters and eager ops: if a reaches b both directly and through
np.unique, one kernel for a and b would have to run both before and after the unique. Then,
beyond TensorFlow, clusters that neither need the other's results join (one compilation for
`sin(x), cos(y)`), and clusters too small to be worth a compilation are dissolved. Each cycle
check is one walk of the graph, O(n + e), once per edge. The pass only marks: each computing
instruction gets `frontend_attributes={_xla_cluster="cluster_N"}` or `{_xla_cluster="eager"}`,
and fusion (which comes next) never joins instructions that carry different marks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..ir.module import Computation, Instruction, Module
from ..ir.library import runs_eagerly
from ..ir.ops import CUSTOM_CALLS, OPS
from ..ir.ops import Group as OpGroup
from ..ir.ops import in_group
from ..ir.printer import format_string
from .base import Note, Pass, PassResult

CLUSTER_KEY = "_xla_cluster"
EAGER = "eager"
FRONTEND = "frontend_attributes"

# `{a="x",b="y"}`: XLA's frontend_attributes, each value a quoted, escaped string.
_ENTRY = re.compile(r'\s*(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,}]*)\s*,?')


# -- the attribute -----------------------------------------------------------------------------

def _frontend_attributes(inst: Instruction) -> list[tuple[str, str]]:
    """The (key, printed value) pairs of inst's frontend_attributes, in order."""
    text = str(inst.attr(FRONTEND, "")).strip()
    if not (text.startswith("{") and text.endswith("}")):
        return []
    return [(k, v.strip()) for k, v in _ENTRY.findall(text[1:-1]) if k]


def cluster_of(inst: Instruction) -> str | None:
    """The cluster inst was marked with ("cluster_0", ..., or EAGER); None if unmarked."""
    for key, value in _frontend_attributes(inst):
        if key == CLUSTER_KEY:
            return value[1:-1] if value.startswith('"') else value
    return None


def with_cluster(inst: Instruction, name: str) -> Instruction:
    """inst marked as part of cluster `name`, any other frontend attributes kept."""
    pairs = [(k, v) for k, v in _frontend_attributes(inst) if k != CLUSTER_KEY]
    pairs.append((CLUSTER_KEY, format_string(name)))
    return inst.with_attr(FRONTEND, "{" + ",".join(f"{k}={v}" for k, v in pairs) + "}")


def _placement(inst: Instruction) -> tuple[Instruction, str | None]:
    """The instruction that decides where inst runs, and its cluster. An element of a
    multi-output value lives where the value was computed."""
    while inst.opcode == "get-tuple-element" and cluster_of(inst) is None:
        inst = inst.operands[0]
    return inst, cluster_of(inst)


def cluster_boundary(producer: Instruction, consumer: Instruction) -> str:
    """"" if producer and consumer may share a kernel as far as clustering goes, else why not
    (a sentence for the fusion passes to show)."""
    if producer.opcode in ("constant", "parameter"):
        return ""  # a constant is copied into the kernel, a parameter is read from memory
    (p, p_cluster), (c, c_cluster) = _placement(producer), _placement(consumer)
    if p_cluster is None and c_cluster is None:
        return ""  # a module that was never clustered
    for inst, cluster in ((p, p_cluster), (c, c_cluster)):
        if cluster == EAGER:
            return f"{inst.name} runs eagerly, outside every cluster"
    if p_cluster == c_cluster:
        return ""
    return (f"{p.name} is in {p_cluster or 'no cluster'} and {c.name} in "
            f"{c_cluster or 'no cluster'}: each cluster compiles on its own")


# -- what the pass reports ---------------------------------------------------------------------

@dataclass(frozen=True)
class Cluster:
    """Instructions compiled together, in program order."""

    name: str
    instructions: tuple[str, ...]

    def __str__(self) -> str:
        n = len(self.instructions)
        return f"{self.name}: {', '.join(self.instructions)} ({n} instruction{'s' * (n != 1)})"


@dataclass(frozen=True)
class EagerOp:
    """An instruction that runs in NumPy, outside every cluster, and why."""

    name: str
    op: str  # the opcode, or the custom_call_target of a custom-call
    reason: str
    source_line: int = 0

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class Clustering:
    clusters: tuple[Cluster, ...]
    eager: tuple[EagerOp, ...]

    @property
    def compiled(self) -> tuple[Cluster, ...]:
        return self.clusters


# -- which instructions take part --------------------------------------------------------------

def _is_structural(inst: Instruction) -> bool:
    """Inputs and plumbing: they compute nothing, so they are never a cluster's work."""
    return inst.opcode in ("parameter", "constant") or in_group(inst.opcode, OpGroup.STRUCTURAL)


def _compilable(inst: Instruction) -> bool:
    # A library call (np.linalg.solve) is a custom-call that compiles: it stays in a cluster.
    return inst.opcode in OPS and (not in_group(inst.opcode, OpGroup.NOT_COMPILABLE)
                                   or not runs_eagerly(inst))


def _op_name(inst: Instruction) -> str:
    """What a student would call the op: a custom-call by the NumPy function it runs."""
    if inst.opcode == "custom-call":
        return inst.attr("custom_call_target") or inst.opcode
    return inst.opcode


def _why_not_compilable(inst: Instruction) -> str:
    # The op table's group decided; this only explains it. Most custom-calls have shapes that
    # depend on values, a numpy.sort custom-call is older HLO text (np.sort traces to `sort`
    # now), opaque calls have no row.
    line = inst.metadata.source_line
    where = f"line {line}" if line else inst.name
    what = _op_name(inst)
    if inst.opcode not in OPS:
        why = "the op table has no row for it"
    elif inst.opcode != "custom-call":
        why = "the op table marks it as not compilable"
    elif what not in CUSTOM_CALLS:
        why = "the op table has no row for it, so it runs as an opaque NumPy call"
    elif what == "numpy.sort":  # HLO text from before np.sort traced to XLA's sort op
        why = "a custom-call runs in NumPy (np.sort now traces to XLA's sort op, which compiles)"
    else:
        why = "its output shape depends on its input values"
    return f"{what} ({where}) is not compilable: {why}"


class _Graph:
    """Computing instructions and the producer->consumer edges between them. A tuple or
    get-tuple-element in between is looked through: it passes a value on, it adds no step."""

    def __init__(self, entry: Computation):
        self.nodes = [i for i in entry.instructions if not _is_structural(i)]
        self.order = {id(i): n for n, i in enumerate(self.nodes)}
        self.producers: dict[int, list[Instruction]] = {}
        self.consumers: dict[int, list[Instruction]] = {id(i): [] for i in self.nodes}
        for inst in self.nodes:
            producers = list({id(p): p for p in self._sources(inst.operands)}.values())
            self.producers[id(inst)] = producers
            for p in producers:
                self.consumers[id(p)].append(inst)

    def _sources(self, operands) -> list[Instruction]:
        out, todo = [], list(operands)
        while todo:
            o = todo.pop(0)
            if in_group(o.opcode, OpGroup.STRUCTURAL):
                todo[:0] = o.operands
            elif not _is_structural(o):
                out.append(o)
        return out


class _Clusters:
    """Which cluster each compilable instruction is in, as clusters merge. A cluster is the
    list of its instructions; an instruction that runs eagerly is in none."""

    def __init__(self, nodes):
        self.of = {id(i): [i] for i in nodes}

    def merge(self, a: list, b: list) -> list:
        small, big = (a, b) if len(a) < len(b) else (b, a)
        big.extend(small)
        for inst in small:
            self.of[id(inst)] = big
        return big

    def unit(self, inst: Instruction) -> tuple[int, list]:
        """What runs as one step with inst (its cluster, or itself), and a key naming it."""
        cluster = self.of.get(id(inst))
        return (id(inst), [inst]) if cluster is None else (id(cluster), cluster)

    def in_order(self, graph: _Graph) -> list[list]:
        """Every cluster once, by the position of its first instruction."""
        seen, out = set(), []
        for inst in graph.nodes:
            key, cluster = self.unit(inst)
            if id(inst) in self.of and key not in seen:
                seen.add(key)
                out.append(cluster)
        return out


def _cycle_through(graph: _Graph, clusters: _Clusters, a: list, b: list) -> Instruction | None:
    """The first instruction outside clusters a and b on a path from a to b, or None if a
    reaches b only directly. Such a path means one cluster for both would need its own result.

    The path runs over clusters, not instructions: a cluster runs as one step, after all of
    its inputs, so a -> x1 and x2 -> b with x1 and x2 in one cluster is a path from a to b."""
    in_b = {id(i) for i in b}
    seen = {id(a), id(b)}
    # Nothing at or after b's last instruction in program order can lead back into b.
    last = max(graph.order[id(i)] for i in b)
    todo = [(i, None) for i in a]
    while todo:
        inst, first = todo.pop()
        if graph.order[id(inst)] >= last:
            continue
        for c in graph.consumers[id(inst)]:
            if id(c) in in_b:
                if first is not None:
                    return first
                continue  # a direct read: what joining a and b absorbs
            key, unit = clusters.unit(c)
            if key not in seen:
                seen.add(key)
                todo.extend((m, c if first is None else first) for m in unit)
    return None


def _related(graph: _Graph, clusters: _Clusters, a: list) -> set[int]:
    """The keys of every cluster or eager instruction that a needs or that needs a."""
    related = set()
    for edges in (graph.consumers, graph.producers):
        seen = {id(a)}
        todo = list(a)
        while todo:
            for n in edges[id(todo.pop())]:
                key, unit = clusters.unit(n)
                if key not in seen:
                    seen.add(key)
                    todo.extend(unit)
        related |= seen - {id(a)}
    return related


class AutoCluster(Pass):
    name = "auto-cluster"

    def __init__(self, min_cluster_size: int = 2):
        self.min_cluster_size = min_cluster_size

    def run(self, module: Module) -> PassResult:
        graph = _Graph(module.entry)
        notes: list[Note] = []
        clusters = self._contract(graph, notes)
        self._join_independent(graph, clusters, notes)
        kept, eager = self._dissolve_small(graph, clusters)
        marks = {id(m): name for name, members in kept for m in members}
        marks.update({id(inst): EAGER for inst, _, _ in eager})
        notes += [Note(f"{name} compiles {_listed(members)} as one unit", "cluster",
                       tuple(m.name for m in members)) for name, members in kept]
        notes += [Note(reason, rule, (inst.name,)) for inst, rule, reason in eager]
        clustering = Clustering(
            tuple(Cluster(name, tuple(m.name for m in members)) for name, members in kept),
            tuple(EagerOp(inst.name, _op_name(inst), reason, inst.metadata.source_line)
                  for inst, _, reason in eager))
        new = _marked(module, marks)
        return PassResult(new, new is not module, tuple(notes), clustering)

    def _contract(self, graph: _Graph, notes: list[Note]) -> _Clusters:
        """Join producer and consumer clusters along every edge that makes no cycle."""
        clusters = _Clusters(i for i in graph.nodes if _compilable(i))
        said: set[str] = set()
        for consumer in graph.nodes:  # program order: each after its operands, a post order
            for producer in graph.producers[id(consumer)]:
                a, b = clusters.of.get(id(producer)), clusters.of.get(id(consumer))
                if a is None or b is None or a is b:
                    continue  # an eager end, or already together
                via = _cycle_through(graph, clusters, a, b)
                if via is None:
                    clusters.merge(a, b)
                    continue
                message = (f"kept {producer.name} and {consumer.name} apart: joining them "
                           f"would make a cycle through {via.name}")
                if message not in said:
                    said.add(message)
                    notes.append(Note(message, "cycle", (producer.name, consumer.name,
                                                         via.name)))
        return clusters

    @staticmethod
    def _join_independent(graph: _Graph, clusters: _Clusters, notes: list[Note]) -> None:
        """Join clusters that neither need the other's results. No path links them, so no
        cycle can form, and one compilation serves both: without it, `sin(x), cos(y)` would
        be two clusters of one op each, too small to compile. (TensorFlow contracts edges
        only and leaves such clusters apart.)"""
        joined: list[list] = []
        for x in clusters.in_order(graph):
            related = _related(graph, clusters, x)
            at = next((k for k, g in enumerate(joined) if id(g) not in related), None)
            if at is None:
                joined.append(x)
                continue
            g = joined[at]
            first, other = (min(c, key=lambda m: graph.order[id(m)]) for c in (g, x))
            notes.append(Note(f"joined the cluster of {other.name} to the cluster of "
                              f"{first.name}: neither needs a result of the other, so one "
                              "compilation serves both", "independent",
                              (first.name, other.name)))
            joined[at] = clusters.merge(g, x)

    def _dissolve_small(self, graph: _Graph, clusters: _Clusters):
        """[(cluster_N, members)] for the clusters big enough to compile, numbered in program
        order, and [(instruction, rule, reason)] for every other computing instruction."""
        kept, eager = [], []
        seen: set[int] = set()
        for inst in graph.nodes:
            members = clusters.of.get(id(inst))
            if members is None:
                eager.append((inst, "not-compilable", _why_not_compilable(inst)))
            elif len(members) < self.min_cluster_size:
                eager.append((inst, "min-size", self._too_small(inst, members, graph)))
            elif id(members) not in seen:
                seen.add(id(members))
                kept.append((f"cluster_{len(kept)}",
                             sorted(members, key=lambda m: graph.order[id(m)])))
        return kept, eager

    def _too_small(self, inst: Instruction, members: list, graph: _Graph) -> str:
        n, least = len(members), self.min_cluster_size
        if n == 1:
            return (f"{inst.name} runs eagerly: its cluster would have 1 instruction, below the "
                    f"minimum of {least} (one compiled op saves nothing over one NumPy call)")
        members = sorted(members, key=lambda m: graph.order[id(m)])
        return (f"{inst.name} runs eagerly: its cluster ({_listed(members)}) would have {n} "
                f"instructions, below the minimum of {least} (too few to be worth compiling)")


def _listed(instructions) -> str:
    """`a`, `a and b`, `a, b and c`."""
    names = [i.name for i in instructions]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _marked(module: Module, names: dict[int, str]) -> Module:
    """The module with each computing instruction marked with its cluster, or EAGER; the same
    module if every mark was already there."""
    value: dict[int, Instruction] = {}
    out = []
    changed = False
    for inst in module.entry.instructions:
        ops = tuple(value[id(o)] for o in inst.operands)
        new = inst if all(a is b for a, b in zip(ops, inst.operands)) else inst.replace(
            operands=ops)
        if id(inst) in names and cluster_of(inst) != names[id(inst)]:
            new = with_cluster(new, names[id(inst)])
            changed = True
        value[id(inst)] = new
        out.append(new)
    if not changed:
        return module
    return module.with_entry(Computation(module.entry.name, tuple(out)))
