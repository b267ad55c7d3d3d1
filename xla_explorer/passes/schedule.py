"""Scheduling: the order the entry's kernels run in, chosen to lower peak memory.

A list scheduler, as XLA's ListMemoryScheduler: parameters first; then, step by step, among
the instructions whose operands have all run, the one that adds the fewest live bytes (the
bytes its results allocate minus the bytes of operands it is the last user of), ties broken by
the original order; the root last. Greedy choices can lose (a small result computed early stays
live long), so, as XLA's DefaultMemoryScheduler does, the pass also tries a depth-first
post-order and the order the module already has, and keeps whichever has the least peak.

Live bytes count what the program allocates: kernel results, temporaries and outputs alike.
Parameters belong to the caller and constants to the module, so no order changes them.
"""
from __future__ import annotations

from typing import Sequence

from ..ir.module import Computation, Instruction, Module
from .base import Note, Pass, PassResult
from .dataflow import Dataflow, dataflow, is_kernel, subshape


def _sizes(comp: Computation, flow: Dataflow):
    """Bytes each instruction allocates, and the freeable buffers (not parameters, constants
    or outputs) with the bytes each holds."""
    live_out = set(flow.points_to[comp.root.name].values())
    allocates, freeable = {}, {}
    for inst in comp.instructions:
        if not is_kernel(inst):
            allocates[inst.name] = 0
            continue
        keys = [(inst.name, idx) for idx in flow.defined[inst.name]]
        allocates[inst.name] = sum(subshape(inst.shape, k[1]).nbytes for k in keys)
        freeable.update({k: subshape(inst.shape, k[1]).nbytes for k in keys if k not in live_out})
    return allocates, freeable


def peak_live_bytes(comp: Computation, order: Sequence[Instruction] | None = None) -> int:
    """The most bytes live at once when `comp`'s instructions run in `order` (default: their
    own order): at each step, what is live before it plus what it allocates."""
    order = list(comp.instructions if order is None else order)
    flow = dataflow(comp)
    allocates, freeable = _sizes(comp, flow)
    remaining = _use_counts(order, flow)
    live = peak = 0
    for inst in order:
        live += allocates[inst.name]
        peak = max(peak, live)
        if is_kernel(inst):
            for key in flow.used_by(inst):
                remaining[key] -= 1
            dying = {k for k in flow.used_by(inst) if k in freeable and remaining[k] == 0}
            dying |= {(inst.name, i) for i in flow.defined[inst.name]
                      if (inst.name, i) in freeable and remaining[(inst.name, i)] == 0}
            live -= sum(freeable[k] for k in dying)
    return peak


def _use_counts(order, flow: Dataflow) -> dict:
    counts: dict = {}
    for inst in order:
        for idx in flow.defined.get(inst.name, ()):
            counts.setdefault((inst.name, idx), 0)
        if is_kernel(inst):
            for key in flow.used_by(inst):
                counts[key] = counts.get(key, 0) + 1
    return counts


def list_schedule(comp: Computation) -> list[Instruction]:
    """XLA's list scheduler: parameters first, then at each step the ready instruction that
    adds the fewest live bytes (ties: the original order), the root last."""
    flow = dataflow(comp)
    allocates, freeable = _sizes(comp, flow)
    remaining = _use_counts(comp.instructions, flow)
    position = {id(inst): n for n, inst in enumerate(comp.instructions)}
    users = comp.users()
    waiting = {id(i): len({id(o) for o in i.operands}) for i in comp.instructions}
    root = comp.root
    params = [i for i in comp.instructions if i.opcode == "parameter"]
    order = [p for p in params if p is not root]
    ready = [i for i in comp.instructions
             if waiting[id(i)] == 0 and i.opcode != "parameter" and i is not root]

    def done(inst: Instruction):
        if is_kernel(inst):
            for key in flow.used_by(inst):
                remaining[key] -= 1
        for user in {id(u): u for u in users[inst]}.values():
            waiting[id(user)] -= 1
            if waiting[id(user)] == 0 and user is not root:
                ready.append(user)

    def growth(inst: Instruction) -> int:
        if not is_kernel(inst):
            return 0
        used = flow.used_by(inst)
        freed = {k for k in used if k in freeable and used.count(k) == remaining[k]}
        return allocates[inst.name] - sum(freeable[k] for k in freed)

    for p in params:
        done(p)
    while ready:
        best = min(ready, key=lambda i: (growth(i), position[id(i)]))
        ready.remove(best)
        order.append(best)
        done(best)
    return order + [root]


def dfs_schedule(comp: Computation) -> list[Instruction]:
    """XLA's DFSMemoryScheduler: a post-order from the root that visits first the operand whose
    subtree has the most extra users, then the largest total size, so big subtrees finish
    (and free their temporaries) before the next begins."""
    flow = dataflow(comp)
    allocates, _ = _sizes(comp, flow)
    users = comp.users()
    extra: dict[int, int] = {}
    total: dict[int, int] = {}
    for inst in comp.instructions:
        ops = {id(o): o for o in inst.operands}.values()
        extra[id(inst)] = max(len(users[inst]) - 1, 0) + sum(extra[id(o)] for o in ops)
        total[id(inst)] = allocates[inst.name] + sum(total[id(o)] for o in ops)
    position = {id(inst): n for n, inst in enumerate(comp.instructions)}
    root = comp.root
    order = [i for i in comp.instructions if i.opcode == "parameter" and i is not root]
    seen = {id(i) for i in order}
    # Instructions the root does not need (dead code DCE left) run before it, in order.
    for start in [i for i in comp.instructions if not users[i] and i is not root] + [root]:
        stack = [(start, False)]
        while stack:
            inst, expanded = stack.pop()
            if id(inst) in seen:
                continue
            if expanded:
                seen.add(id(inst))
                order.append(inst)
                continue
            stack.append((inst, True))
            ops = sorted({id(o): o for o in inst.operands}.values(),
                         key=lambda o: (-extra[id(o)], -total[id(o)], position[id(o)]))
            stack += [(o, False) for o in reversed(ops) if id(o) not in seen]
    return order


# The schedulers tried, as XLA's DefaultMemoryScheduler tries its list, DFS and post-order
# schedulers and keeps the least peak. Ties go to the earlier one here: the order the module
# already has (nothing moves for no gain), then the list scheduler.
SCHEDULERS = (
    ("original order", "original-order", lambda comp: list(comp.instructions)),
    ("list scheduler", "list-scheduler", list_schedule),
    ("depth-first scheduler", "dfs-scheduler", dfs_schedule),
)


class Schedule(Pass):
    """The `schedule` pass: reorder the entry to lower peak memory; mark it scheduled."""

    name = "schedule"

    def run(self, module: Module) -> PassResult:
        comp = module.entry
        tried = [(peak_live_bytes(comp, order), n, label, rule, order)
                 for n, (label, rule, make) in enumerate(SCHEDULERS)
                 for order in [make(comp)]]
        peak, _, label, rule, order = min(tried, key=lambda t: t[:2])
        scheduled = module.replace(entry=Computation(comp.name, tuple(order)), is_scheduled=True)
        if scheduled.fingerprint() == module.fingerprint():
            return PassResult(module, False)
        others = ", ".join(f"{lab} {p}" for p, _, lab, _, _ in tried)
        notes = [Note(f"kept the {label}: peak live {peak} bytes ({others}); the least peak "
                      "wins, as in XLA's DefaultMemoryScheduler", rule)]
        moved = sum(a is not b for a, b in zip(order, comp.instructions))
        if moved:
            notes.append(Note(f"{moved} of {len(order)} instructions changed place", "reordered"))
        return PassResult(scheduled, True, tuple(notes))
