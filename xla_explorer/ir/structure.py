"""What a computation's code is made from, as a hashable value, and the steps of an unrolled
loop.

Two computations of one structure compute the same function of their parameters, however
their instructions are named or ordered: the code generator compiles them once. A Python loop
unrolls while tracing (as under `jax.jit`), so a time-stepping loop is the same instructions
over and over, each step reading the step before: the graph draws one step (`loop_steps`), as
XLA's graph dumper draws a while loop's body once.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

from .module import COMPUTATION_ATTRS, Computation, Instruction, Module, post_order

__all__ = ["Steps", "loop_steps", "structure"]


def own_key(module: Module, inst: Instruction) -> tuple:
    """What an instruction is, leaving out its operands, name and metadata: opcode, shape,
    attributes (a called computation by its structure), literal and parameter number."""
    attrs = tuple((k, structure(module, module.computation(v)) if k in COMPUTATION_ATTRS else v)
                  for k, v in inst.attrs)
    literal = None if inst.literal is None else (
        inst.literal.dtype.str, inst.literal.shape, inst.literal.tobytes())
    return inst.opcode, str(inst.shape), attrs, literal, inst.parameter_number


def structure(module: Module, comp: Computation) -> tuple:
    """Each instruction's `own_key` and its operands (by position), read in a canonical order
    (`_canonical_order`), so that two computations that differ only in the order their
    instructions were written are one structure. Two kernels of one structure are one function
    (codegen/program.py), as XLA's computation deduplicator makes them one computation."""
    where: dict[int, int] = {}
    rows = []
    for n, inst in enumerate(_canonical_order(comp)):
        where[id(inst)] = n
        rows.append(own_key(module, inst) + (tuple(where[id(o)] for o in inst.operands),))
    return tuple(rows)


def _canonical_order(comp: Computation) -> list[Instruction]:
    """The parameters by number, then the rest in post-order from the root, operands left to
    right. A loop's first step shares the literals of every later step, so they come first in
    its fused computations and later in the others', and the steps' kernels would differ by
    order alone (and compile twice)."""
    order = comp.parameters
    order += [i for i in post_order([comp.root]) if i.opcode != "parameter"]
    seen = {id(i) for i in order}
    # What the root does not reach (nothing, after DCE) keeps its written order.
    order.extend(i for i in comp.instructions if id(i) not in seen)
    return order


# -- the steps of an unrolled loop --------------------------------------------------------------

# A loop is drawn as one when it ran at least this many steps; a step is at most this many
# instructions (a longer body is not looked for: the search is linear in it).
MIN_STEPS = 3
MAX_STEP = 400
# How many later instructions like a step's first are tried as the start of its second.
CANDIDATES = 4


@dataclass(frozen=True)
class Steps:
    """`count` steps of `length` instructions each, from `start` in the computation's
    instruction list: step k is instructions start + k*length up to the next step's start."""

    start: int
    length: int
    count: int

    @property
    def end(self) -> int:
        return self.start + self.length * self.count


# loop_steps of each module, kept while the module lives: the explorer asks of every stage
# more than once (to count a graph's nodes, then to draw it).
_FOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def loop_steps(module: Module, comp: Computation, key=None, exact: bool = True,
               alike=None, own=None) -> list[Steps]:
    """The runs of `comp`'s instructions that are the steps of an unrolled loop, in order,
    not overlapping: each step the same instructions as the one before (`own_key`, and
    `key(inst)` if given), reading either the same values (what the loop does not change) or
    the previous step's, and at least one of those. Parameters and the root are in none.
    Not `exact`, instructions are alike by opcode and shape alone: steps that differ by a
    constant or an index (the loop's counter, `xs[k]`) are found too. `alike(a, b)`, if
    given, says which two values from before the steps two steps may read in one place
    (constants that differ from step to step, which loop rolling reads from a table), and
    `own(module, inst)` stands for `own_key` (a slice known by its size, not its start)."""
    found = _FOUND.setdefault(module, {})
    if (comp.name, key, exact, alike, own) not in found:
        found[comp.name, key, exact, alike, own] = _loop_steps(module, comp, key, exact,
                                                                alike, own or own_key)
    return list(found[comp.name, key, exact, alike, own])


def _loop_steps(module: Module, comp: Computation, key, exact: bool, alike, own
                ) -> list[Steps]:
    insts = comp.instructions
    pos = {id(inst): n for n, inst in enumerate(insts)}
    keys = [(own(module, i) if exact else (i.opcode, str(i.shape)),
             key(i) if key else None) for i in insts]
    later: dict[tuple, list[int]] = {}
    for n, k in enumerate(keys):
        later.setdefault(k, []).append(n)
    last = len(insts) - 1  # the root

    def shifted(i: int, length: int) -> bool:
        """Instruction i + length is instruction i, one step later."""
        j = i + length
        if j >= last or keys[i] != keys[j] or insts[i].opcode == "parameter":
            return False
        a, b = insts[i].operands, insts[j].operands
        return len(a) == len(b) and all(
            y is x or pos[id(y)] == pos[id(x)] + length
            or (alike is not None and alike(x, y))
            for x, y in zip(a, b))

    def reads_previous(start: int, length: int) -> bool:
        """The second step reads a value of the first."""
        return any(start <= pos[id(o)] < start + length
                   for inst in insts[start + length:start + 2 * length] for o in inst.operands)

    found: list[Steps] = []
    s, nexts = 0, {k: 0 for k in later}
    while s < last:
        best = None
        seen = later[keys[s]]
        while nexts[keys[s]] < len(seen) and seen[nexts[keys[s]]] <= s:
            nexts[keys[s]] += 1
        for j in seen[nexts[keys[s]]:nexts[keys[s]] + CANDIDATES]:
            length = j - s
            if length > MAX_STEP:
                break
            matched = 0
            while shifted(s + matched, length):
                matched += 1
            count = matched // length + 1
            if count >= MIN_STEPS and reads_previous(s, length) and (
                    best is None or count * length > best.count * best.length):
                best = Steps(s, length, count)
        if best is None:
            s += 1
        else:
            found.append(best)
            s = best.end
    return found
