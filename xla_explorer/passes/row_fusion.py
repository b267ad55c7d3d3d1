"""Row fusion, the last step of the fusion pass: a kernel that reduces the trailing axes of its
rows joins the kernel that reads those per-row results back along the same rows (softmax's
max, its sum and its division; layernorm's mean, variance and scaling), so each row is read
once into cache and finished there, as XLA's GPU backend fuses a softmax into one kernel.

`graph` is fusion.py's view of the program (users, the group index, the schedule order);
`groups` are its kernels so far. Every join and every refusal is a Decision with a sentence.
"""
from __future__ import annotations

from ..ir.module import Instruction
from .autocluster import cluster_boundary
from .fusion_groups import MAX_OPERANDS_AND_OUTPUTS, FusionGroup, joined_size, place_name
from .kinds import Decision, fits_rows, row_reduce_space


def row_fusion(groups, graph, decisions):
    """Join a kernel with a kernel that reads its per-row results, while any pair can."""
    refused: set[tuple[int, int]] = set()
    memo: dict = {}
    while True:
        pair = _row_pair(groups, graph, refused, decisions, memo)
        if pair is None:
            return groups
        gp, gc, (lead, trail) = pair
        rows = " x ".join(map(str, lead)) or "1"
        noun = "row" if rows == "1" else "rows"
        decisions.append(Decision(
            f"row fusion: joined {gp.label()} and {gc.label()}: both work on rows of "
            f"{list(lead + trail)} ({rows} {noun} of {list(trail)}), reducing the trailing "
            "axes and broadcasting back along the same rows",
            "row-fused", (gp.root.name, gc.root.name), gp.root.name, gc.root.name, True))
        _merge_into(gc, gp, graph)
        groups = [g for g in groups if g is not gp]

def _row_pair(groups, graph, refused, decisions, memo):
    """The first (producer kernel, consumer kernel, row space) that row fusion may join;
    refusals are recorded once per pair."""
    for gp in groups:
        for out in gp.outputs:
            for gc in graph.user_groups(out):
                if not isinstance(gc, FusionGroup) or gc is gp:
                    continue
                space = _row_space(gp, gc, memo)
                if space is None or not (gp.row or gc.row or _crosses(gp, gc, space)):
                    continue
                refusal = _row_refusal(gp, gc, graph)
                if refusal is None:
                    return gp, gc, space
                if (gp.id, gc.id) not in refused:
                    refused.add((gp.id, gc.id))
                    decisions.append(Decision(refusal, "row-refused",
                                              (gp.root.name, gc.root.name), gp.root.name,
                                              gc.root.name, False))
    return None


def _crosses(gp: FusionGroup, gc: FusionGroup, space) -> bool:
    """gc reads a per-row result of gp's reduction: the edge row fusion exists to remove."""
    lead, trail = space
    per_row = {lead, lead + (1,) * len(trail)}
    if not any(m.opcode == "reduce" for m in gp.members):
        return False
    return any(o.dims in per_row and _users_in(o, gc) for o in gp.outputs)


def _users_in(inst: Instruction, g: FusionGroup) -> list[Instruction]:
    return [m for m in g.members if any(op is inst for op in m.operands)]


def _row_space(gp: FusionGroup, gc: FusionGroup, memo: dict):
    """The rows both groups run over, if they can join one row kernel."""
    spaces = _reduce_spaces(gp, memo) | _reduce_spaces(gc, memo)
    if len(spaces) != 1:
        return None
    lead, trail = next(iter(spaces))
    for g in (gp, gc):
        # Groups only grow, so (group, size) names what a group held when last asked.
        key = (g.id, len(g.members), lead, trail)
        if key not in memo:
            memo[key] = all(fits_rows(m, lead, trail) for m in g.members)
        if not memo[key]:
            return None
    return lead, trail


def _reduce_spaces(g: FusionGroup, memo: dict) -> set:
    key = (g.id, len(g.members))
    if key not in memo:
        memo[key] = {s for m in g.members if (s := row_reduce_space(m))}
    return memo[key]


def _row_refusal(gp: FusionGroup, gc: FusionGroup, graph) -> str | None:
    boundary = cluster_boundary(gp.root, gc.root)
    if boundary:  # auto-clustering decided these run apart
        return f"not row-fused: {gp.label()} and {gc.label()}: {boundary}"
    # Joining must not create a cycle: no path from gp to gc through a third kernel.
    via = _path_through(gp, gc, graph)
    if via is not None:
        return (f"not row-fused: {gp.label()} and {gc.label()} are connected through "
                f"{place_name(via)}, so one kernel for both would depend on itself")
    n = joined_size(gp, gc)
    if n > MAX_OPERANDS_AND_OUTPUTS:
        return (f"not row-fused: {gp.label()} and {gc.label()} would make a kernel with {n} "
                f"operands and outputs (the limit is {MAX_OPERANDS_AND_OUTPUTS})")
    return None


def _path_through(start: FusionGroup, end: FusionGroup, graph):
    """The first kernel (or instruction running on its own) on a path from start to end
    other than a direct read; None if end reads start only directly."""
    todo = [(h, h) for o in start.outputs for h in graph.user_groups(o)
            if h is not end and h is not start]
    seen = {id(h) for h, _ in todo}
    while todo:
        node, first = todo.pop()
        outs = node.outputs if isinstance(node, FusionGroup) else [node]
        for o in outs:
            for h in graph.user_groups(o):
                if h is end:
                    return first
                if id(h) not in seen and h is not start:
                    seen.add(id(h))
                    todo.append((h, first))
    return None


def _merge_into(gc: FusionGroup, gp: FusionGroup, graph) -> None:
    """gp's work moves into gc; a value of the joined kernel stays an output if anything
    outside it reads it: a user that runs on its own, or a kernel holding a user but not a
    copy of the value."""
    graph.index.forget(gp)
    for m in gp.members:
        graph.index.add(gc, m)
    outputs = []
    for o in gp.outputs + gc.outputs:
        users = graph.users[id(o)]
        read_outside = not users or any(
            not graph.index.of(u)
            or any(h is not gc and not h.contains(o) for h in graph.index.of(u)) for u in users)
        if (read_outside or o is gc.root) and not any(o is x for x in outputs):
            outputs.append(o)
    gc.outputs = outputs
    gc.row = True
    gc.sort(graph.order)
