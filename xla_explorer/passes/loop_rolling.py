"""Roll an unrolled loop back up: the steps of a traced Python loop become one HLO `while`.

A Python loop unrolls while tracing (as under `jax.jit`): 200 steps of a stencil are 200
copies of the step, and every pass after tracing works through all of them (fusion alone
takes a quarter of a second on their 2,200 instructions). When consecutive steps are the same
instructions, each reading the step before (`ir/structure.loop_steps`, which the graph already
draws as one step), this pass replaces them with a `while` whose body is one step, as
`xe.fori_loop` writes it: fusion, buffer assignment and the code generator then see the step
once.

    state = (i, what the steps hand on..., what every step reads from before the loop...)
    while state.i < count:
        state = (i + 1, step(state)..., the same outside values)

A loop is rolled only where that is the better trade (`RollOptions`): long enough that
compiling its copies costs more than the loop's extra kernels, and on arrays small enough
that no pass over memory is lost (unrolled, fusion can join two or more steps into one kernel
that reads its arrays once). Each loop found gets a note saying what was done, or why not.

Steps may differ by their scalar constants (`1 - b1 ** t`, `np.sin(0.05 * i)`: tracing
computes them in Python, one literal a step) and by where a slice starts (`xs[k]`). Such a
loop is rolled too: each constant that changes is read from a table of its values, one a
step, by the loop's counter (`dynamic-slice(table, i)`), and the slice is a dynamic-slice at
the counter (passes/loop_differences.py), where the copies would each be traced, fused and
compiled.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.library import runs_eagerly
from ..ir.module import Computation, Instruction, Module, trip_count_config
from ..ir.shape import Shape, TupleShape
from ..ir.structure import MIN_STEPS, Steps, loop_steps
from .base import Note, Pass, PassResult
from .dce import without_dead
from .loop_differences import (alike, moving_slices, own, table_entry, tables,
                               what_differs)
from .names import NameGen

__all__ = ["RollLoops", "RollOptions"]

COUNTER = np.dtype(np.int64)  # the loop's counter, as xe.fori_loop's


@dataclass(frozen=True)
class RollOptions:
    # Rolled only when its copies are at least this many instructions: a short loop compiles
    # as fast unrolled (a while costs the CPU backend two more compiled functions, the loop
    # kernel and the body's driver, about 0.25 s each) and fusion may join its steps.
    min_instructions: int = 500
    # Rolled only when no array a step reads or makes is larger than this (bytes): a cache's
    # worth, where a pass over an array costs little and joining steps saves little.
    max_array_bytes: int = 1 << 20


# Steps that differ by their constants are pointed out from this many on.
MIN_DIFFERING_STEPS = 8


class RollLoops(Pass):
    name = "roll-loops"

    def __init__(self, options: RollOptions = RollOptions()):
        self.options = options

    def run(self, module: Module) -> PassResult:
        insts = _constants_first(module.entry)
        comp = Computation(module.entry.name, tuple(insts))
        found = loop_steps(module.with_entry(comp), comp, alike=alike, own=own)
        if not found:
            return PassResult(module, False, tuple(_steps_that_differ(module, insts, [])))
        names = NameGen(module)
        notes: list[Note] = []
        added: list[Computation] = []
        shift = 0  # how much the rolled loops before have shortened the list
        last: _Loop | None = None  # the loop rolled before, to say when one loop is two
        for steps in found:
            steps = Steps(steps.start + shift, steps.length, steps.count)
            loop = _Loop.find(module, insts, steps)
            why = loop.why_not(self.options) if isinstance(loop, _Loop) else loop
            if why:
                notes.append(Note(f"{_lines(insts[steps.start:steps.end])}: {steps.count} "
                                  f"steps of {_instructions(steps.length)} each, left "
                                  f"unrolled: {why}.", "not-rolled",
                                  tuple(i.name for i in insts[steps.start:steps.end])))
                continue
            assert isinstance(loop, _Loop)
            before = len(insts)
            insts, new = loop.rolled(insts, names)
            shift += len(insts) - before
            added += new
            notes.append(Note(
                f"{_lines(loop.steps[0])}: {loop.count} steps of "
                f"{_instructions(loop.length)} each, rolled into {loop.name}, a while loop "
                f"whose body is one step: the passes and the code generator see the step "
                f"once, not {loop.count} times." + loop.what_differs() + _before(loop)
                + _split(last, loop), "rolled", (loop.name,)))
            last = loop
        notes += _steps_that_differ(module, list(comp.instructions), found)
        if not added:
            return PassResult(module, False, tuple(notes))
        # What only the rolled steps read (a constant the body now makes itself) goes.
        entry, _ = without_dead(Computation(module.entry.name, tuple(insts)))
        return PassResult(module.replace(entry=entry,
                                         computations=module.computations + tuple(added)),
                          True, tuple(notes))


def _instructions(n: int) -> str:
    return "1 instruction" if n == 1 else f"{n} instructions"


def _split(last: "_Loop | None", loop: "_Loop") -> str:
    """What a rolled loop's note says when the loop before it came from the same lines: one
    Python loop whose steps changed part way."""
    if last is None or _lines(last.steps[0]) != _lines(loop.steps[0]):
        return ""
    return (f" The same lines rolled into {last.name} before it, in steps of "
            f"{_instructions(last.length)}; these steps are {_instructions(loop.length)}, so "
            "they are a loop of their own (the simplifier drops an operation where a constant "
            "rounds to 0 or 1: Adam's 1 - 0.9 ** t is 1 in float32 from about step 165).")


def _before(loop: "_Loop") -> str:
    """What a rolled loop's note says of the steps left unrolled before it."""
    k = loop.unrolled_before
    if not k:
        return ""
    first = "The first step stays" if k == 1 else f"The first {k} steps stay"
    return (f" {first} unrolled before it: {loop.why_before}, after the loop, reads the "
            f"value step {k} made.")


def _steps_that_differ(module: Module, ordered: list[Instruction], found: list[Steps]
                       ) -> list[Note]:
    """A note for each run of steps alike but for an index or another attribute (the loop
    reads its counter, as in xs[[k, k + 1]]), where no loop was `found`: no while rolls them
    (steps that differ by scalar constants or by where a slice starts roll), and
    `xe.fori_loop` traces such a loop once. Looked for in the traced order (`found` is in
    the order with the constants first, `ordered`, which takes these steps' differing
    constants out of them)."""
    comp = module.entry
    noted = {id(i) for s in found for i in ordered[s.start:s.end]}
    # One note per loop in the source: the steps of one Python loop may be found as
    # several runs (steps of two lengths, where a constant is made in some steps only).
    runs: dict[str, list] = {}
    for s in loop_steps(module, comp, exact=False):
        insts = comp.instructions[s.start:s.end]
        if s.count < MIN_DIFFERING_STEPS or any(id(i) in noted for i in insts):
            continue
        runs.setdefault(_lines(insts), []).append((s, insts))
    notes = []
    for where, found_here in runs.items():
        count = sum(s.count for s, _ in found_here)
        lengths = sorted({s.length for s, _ in found_here})
        each = str(lengths[0]) if len(lengths) == 1 else f"{lengths[0]}-{lengths[-1]}"
        notes.append(Note(
            f"{where}: {count} steps of {each} instructions each, alike but for an index "
            "or another attribute that changes from step to step (the loop's counter, as "
            "in xs[[k, k + 1]]), left unrolled: every copy is traced, fused and compiled. "
            "xe.fori_loop(0, n, body, value) traces such a loop once, its counter a value.",
            "not-rolled", tuple(i.name for _, insts in found_here for i in insts)))
    return notes


def _constants_first(comp: Computation) -> list[Instruction]:
    """The computation's instructions with what depends on no parameter (constants and what
    is made of them alone) moved to the front. Tracing makes a constant once, where the loop's
    first step first used it, so the first step would not look like the others."""
    made_of_constants: set[int] = set()
    for inst in comp.instructions:
        if inst.opcode != "parameter" and inst is not comp.root and all(
                id(o) in made_of_constants for o in inst.operands):
            made_of_constants.add(id(inst))
    front = [i for i in comp.instructions if id(i) in made_of_constants]
    return front + [i for i in comp.instructions if id(i) not in made_of_constants]


def _lines(insts) -> str:
    lines = sorted({i.metadata.source_line for i in insts if i.metadata.source_line})
    if not lines:
        return "A loop"
    where = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"
    return f"The loop at {where}"


@dataclass
class _Loop:
    """A run of steps checked to be a loop: where each operand of a step comes from."""

    start: int
    length: int
    count: int
    steps: list[list[Instruction]]
    # Per (offset in the step, operand number): ("inside", offset) a value of the same
    # step; ("carried", offset) the previous step's value; ("outside", instruction) a value
    # from before the loop, the same in every step.
    sources: dict[tuple[int, int], tuple]
    initial: dict[int, Instruction]  # carried offset -> what the first step reads there
    after: set[int]  # offsets of the last step read after the loop
    name: str = ""
    # Steps left unrolled before the loop, because a value of the last of them is read
    # after it, and the instruction that reads it.
    unrolled_before: int = 0
    why_before: str = ""
    # What the final steps differ by, read at the counter (set by `find` once they are
    # final): the slices that move with it (`moving_slices`) and the constants that change
    # (`tables`).
    moving: dict = field(default_factory=dict)
    read_at: dict = field(default_factory=dict)

    @classmethod
    def find(cls, module: Module, insts: list[Instruction], found: Steps) -> "_Loop | str":
        """The loop of `found`, extended back over an earlier step that reads its starting
        values instead of a previous step's; or a sentence saying why it is not one."""
        s, n, c = found.start, found.length, found.count
        pos = {id(i): k for k, i in enumerate(insts)}
        steps = [insts[s + k * n:s + (k + 1) * n] for k in range(c)]
        sources: dict[tuple[int, int], tuple] = {}
        for r, inst in enumerate(steps[1]):
            if runs_eagerly(inst):
                return (f"a step calls {inst.attr('custom_call_target')} ({inst.name}), which "
                        "runs eagerly")
            for q, o in enumerate(inst.operands):
                p = pos[id(o)] - s
                if n <= p < 2 * n:
                    sources[r, q] = ("inside", p - n)
                elif 0 <= p < n:
                    sources[r, q] = ("carried", p)
                elif p < 0:
                    sources[r, q] = ("outside", o)
                else:
                    return "a step reads a later step"
        initial: dict[int, Instruction] = {}
        earlier = ("{} reads a value made {} steps before its own (as in a, b, c = b, c, "
                   "a + c, where a is c from further back): this pass hands on only the "
                   "step before's values; xe.fori_loop(0, n, body, (a, b, c)) traces such a "
                   "loop once")
        for k in [*range(1, c), 0]:  # the first step last: it may read starting values
            step = steps[k]
            for r, inst in enumerate(step):
                for q, o in enumerate(inst.operands):
                    kind, v = sources[r, q]
                    if kind == "inside" and o is not step[v]:
                        return f"{inst.name} reads another value than its step's"
                    if (kind == "outside" and o is not v and not alike(o, v)) or (
                            kind == "carried" and k > 0 and o is not steps[k - 1][v]):
                        if s <= pos[id(o)] < s + k * n:
                            return earlier.format(inst.name, k - (pos[id(o)] - s) // n)
                        return (f"{inst.name} reads a value its copies in the other steps "
                                "do not read, so the steps are not one step repeated")
                    if kind == "carried" and k == 0:
                        if pos[id(o)] >= s or initial.setdefault(v, o) is not o:
                            return f"{inst.name} starts from two values"
        loop = cls(s, n, c, steps, sources, initial, set())
        while loop._extend_back(module, insts, pos):
            pass
        # A value of an early step read after the loop (the first step's, kept by the
        # user): the loop starts after the last such step, which stays unrolled before it.
        why, read = loop._read_after(insts)
        while why and read is not None and loop.count - read - 1 >= MIN_STEPS:
            loop = loop._from_step(read + 1)
            loop.unrolled_before += read + 1
            loop.why_before = why.split(",")[0]  # the instruction that reads it
            why, read = loop._read_after(insts)
        if why:
            return why
        for r in set(loop.initial) | loop.after:
            if loop.steps[0][r].shape.is_tuple:
                return f"a step hands on a tuple ({loop.steps[0][r].name})"
        moving = moving_slices(loop.steps)
        if isinstance(moving, str):
            return moving
        loop.moving, loop.read_at = moving, tables(loop.sources, loop.steps)
        return loop

    def _read_after(self, insts: list[Instruction]) -> tuple[str, int | None]:
        """Note which of the last step's values are read after the loop (`after`); if a
        value of an earlier step is, a sentence saying so and the latest such step."""
        last = {id(i): r for r, i in enumerate(self.steps[-1])}
        step_of = {id(i): k for k, step in enumerate(self.steps[:-1]) for i in step}
        read = [step_of[id(o)] for inst in insts[self.start + self.length * self.count:]
                for o in inst.operands if id(o) in step_of]
        for inst in insts[self.start + self.length * self.count:]:
            for o in inst.operands:
                if id(o) in last:
                    self.after.add(last[id(o)])
        if not read:
            return "", None
        user = next(i for i in insts[self.start + self.length * self.count:]
                    if any(id(o) in step_of for o in i.operands))
        return f"{user.name}, after the loop, reads a value of an earlier step", max(read)

    def _from_step(self, k: int) -> "_Loop":
        """The loop without its first k steps: it starts from what step k - 1 hands on."""
        return _Loop(self.start + k * self.length, self.length, self.count - k, self.steps[k:],
                     self.sources, {v: self.steps[k - 1][v] for v in self.initial}, set(),
                     unrolled_before=self.unrolled_before)

    def _extend_back(self, module: Module, insts: list[Instruction],
                     pos: dict[int, int]) -> bool:
        """Take in the step before the first, if it is one more step: the same instructions,
        its carried values from before it (they become the loop's starting values)."""
        s, n = self.start, self.length
        if s - n < 0:
            return False
        step = insts[s - n:s]
        initial: dict[int, Instruction] = {}
        for r, (inst, like) in enumerate(zip(step, self.steps[0])):
            if inst.opcode == "parameter" or own(module, inst) != own(module, like):
                return False
            for q, o in enumerate(inst.operands):
                kind, v = self.sources[r, q]
                if kind == "inside" and o is not step[v]:
                    return False
                if kind == "outside" and o is not v and not alike(o, v):
                    return False
                if kind == "carried" and (pos[id(o)] >= s - n or
                                          initial.setdefault(v, o) is not o):
                    return False
        if any(self.initial[v] is not step[v] for v in self.initial):
            return False  # the old first step must read exactly this step's values
        if any(pos[id(v)] >= s - n for kind, v in self.sources.values() if kind == "outside"):
            return False
        self.start, self.count = s - n, self.count + 1
        self.steps.insert(0, step)
        self.initial = initial
        return True

    def what_differs(self) -> str:
        """What the note says of the steps' differences the body reads at its counter."""
        return what_differs(self.count, self.read_at, self.moving, self.steps[0])

    def why_not(self, options: RollOptions) -> str:
        if self.length * self.count < options.min_instructions:
            return (f"{self.length * self.count} instructions in all, under "
                    f"{options.min_instructions}: compiled unrolled as fast, and fusion may "
                    "join its steps")
        largest = max(i.shape.nbytes for step in self.steps[:1] for i in step)
        # An array a step slices at the counter (xs[k]) is read a row at a time either way.
        sliced = {(r, 0) for r in self.moving}
        largest = max([largest] + [v.shape.nbytes for where, (kind, v) in self.sources.items()
                                   if kind == "outside" and where not in sliced])
        if largest > options.max_array_bytes:
            return (f"it works on arrays of up to {largest / 2**20:.1f} MiB: unrolled, fusion "
                    "can join steps into one kernel that reads them once, which pays more "
                    "than a faster compile")
        return ""

    def rolled(self, insts: list[Instruction], names: NameGen
               ) -> tuple[list[Instruction], list[Computation]]:
        """`insts` with the loop's steps replaced by a while; and its body and condition."""
        first = self.steps[0]
        md = first[-1].metadata
        slots = sorted(set(self.initial) | self.after)  # the state handed from step to step
        read_at = self.read_at
        outside: list[Instruction] = []
        for where, (kind, v) in sorted(self.sources.items(), key=lambda item: item[0]):
            if kind == "outside" and where not in read_at and not _remade(v) and all(
                    v is not o for o in outside):
                outside.append(v)
        # Each table of per-step constants is made before the loop and handed to the body
        # in its state, as a value from before the loop (a body's compiled program takes no
        # array constants of its own).
        table_of: dict[tuple, Instruction] = {}
        for values in read_at.values():
            if tuple(map(id, values)) not in table_of:
                _, first_constant = table_entry(values[0])
                literals = np.array([table_entry(v)[1].literal for v in values],
                                    first_constant.literal.dtype)
                table_of[tuple(map(id, values))] = Instruction(
                    names("constant"), "constant", Shape(literals.dtype, literals.shape),
                    literal=literals, metadata=md)
        outside += table_of.values()
        counter = Shape(COUNTER, ())
        shape = TupleShape((counter, *(first[r].shape for r in slots),
                            *(o.shape for o in outside)))
        body, body_root = self._body(names, shape, slots, outside, table_of, md)
        cond = self._condition(names, shape, md)
        # Before the loop: the state's first value. A value read only after the loop starts
        # as zeros (the first step overwrites it).
        made: list[Instruction] = list(table_of.values())
        start_values = []
        for r in slots:
            if r in self.initial:
                start_values.append(self.initial[r])
                continue
            e = first[r].shape
            zero = Instruction(names("constant"), "constant", Shape(e.dtype, ()),
                               literal=np.zeros((), e.dtype), metadata=md)
            made += [zero, Instruction(names("broadcast"), "broadcast", e, (zero,),
                                       (("dimensions", ()),), md)]
            start_values.append(made[-1])
        zero_i = Instruction(names("constant"), "constant", counter,
                             literal=np.zeros((), COUNTER), metadata=md)
        state = Instruction(names("tuple"), "tuple", shape,
                            (zero_i, *start_values, *outside), metadata=md)
        config = trip_count_config(self.count)
        self.name = names("while")
        loop = Instruction(self.name, "while", shape, (state,),
                           (("condition", cond.name), ("body", body.name),
                            ("backend_config", config)), md)
        made += [zero_i, state, loop]
        swap: dict[int, Instruction] = {}
        for k, r in enumerate(slots):
            if r in self.after:
                gte = Instruction(names("get-tuple-element"), "get-tuple-element",
                                  first[r].shape, (loop,), (("index", 1 + k),),
                                  self.steps[-1][r].metadata)
                made.append(gte)
                swap[id(self.steps[-1][r])] = gte
        end = self.start + self.length * self.count
        rest = []
        for inst in insts[end:]:
            if any(id(o) in swap for o in inst.operands):
                new = inst.replace(operands=tuple(swap.get(id(o), o) for o in inst.operands))
                swap[id(inst)] = new
                inst = new
            rest.append(inst)
        return insts[:self.start] + made + rest, [cond, body]

    def _body(self, names, shape, slots, outside, table_of, md):
        param = Instruction(names("state"), "parameter", shape, parameter_number=0,
                            metadata=md)

        def element(k: int, like) -> Instruction:
            return Instruction(names("get-tuple-element"), "get-tuple-element", like,
                               (param,), (("index", k),), md)

        i = element(0, shape.elements[0])
        carried = {r: element(1 + k, shape.elements[1 + k]) for k, r in enumerate(slots)}
        reads = [element(1 + len(slots) + k, o.shape) for k, o in enumerate(outside)]
        out: list[Instruction] = [param, i, *carried.values(), *reads]
        made: list[Instruction] = []
        remade: dict[int, Instruction] = {}  # outside values made again inside the body

        def read(v: Instruction) -> Instruction:
            if not _remade(v):
                return reads[next(k for k, o in enumerate(outside) if o is v)]
            if id(v) not in remade:
                copy = v.replace(name=names(v.opcode), operands=tuple(map(read, v.operands)))
                remade[id(v)] = copy
                out.append(copy)
            return remade[id(v)]

        looked_up: dict[tuple, Instruction] = {}  # per-step values, read at the counter

        def look_up(values: list[Instruction]) -> Instruction:
            key = tuple(map(id, values))
            if key not in looked_up:
                _, first = table_entry(values[0])
                table = read(table_of[key])
                at = Instruction(names("dynamic-slice"), "dynamic-slice",
                                 table.shape.with_dims((1,)), (table, i),
                                 (("dynamic_slice_sizes", (1,)),), md)
                v = Instruction(names("reshape"), "reshape", first.shape, (at,), metadata=md)
                out.extend((at, v))
                chain, like = [], values[0]
                while like is not first:  # the broadcast (or convert) made of the number
                    chain.append(like)
                    like = like.operands[0]
                for op in reversed(chain):
                    v = op.replace(name=names(op.opcode), operands=(v,))
                    out.append(v)
                looked_up[key] = v
            return looked_up[key]

        def index(start: int, delta: int) -> Instruction:
            """start + delta * i, as an int64: where a moving slice starts in this step."""
            def constant(value):
                c = Instruction(names("constant"), "constant", i.shape,
                                literal=np.asarray(value, COUNTER), metadata=md)
                out.append(c)
                return c
            if delta == 0:
                return constant(start)
            at = i if delta == 1 else Instruction(names("multiply"), "multiply", i.shape,
                                                  (i, constant(delta)), metadata=md)
            if at is not i:
                out.append(at)
            if start:
                at = Instruction(names("add"), "add", i.shape, (at, constant(start)),
                                 metadata=md)
                out.append(at)
            return at

        moving, read_at = self.moving, self.read_at
        for r, inst in enumerate(self.steps[0]):
            ops = []
            for q in range(len(inst.operands)):
                kind, v = self.sources[r, q]
                ops.append(made[v] if kind == "inside" else carried[v] if kind == "carried"
                           else look_up(read_at[r, q]) if (r, q) in read_at else read(v))
            if r in moving:  # xs[k]: a slice at the counter
                starts, deltas, sizes = moving[r]
                made.append(Instruction(
                    names("dynamic-slice"), "dynamic-slice", inst.shape,
                    (ops[0], *(index(a, d) for a, d in zip(starts, deltas))),
                    (("dynamic_slice_sizes", sizes),), inst.metadata))
            else:
                made.append(inst.replace(operands=tuple(ops)))
        one = Instruction(names("constant"), "constant", shape.elements[0],
                          literal=np.ones((), COUNTER), metadata=md)
        step = Instruction(names("add"), "add", shape.elements[0], (i, one), metadata=md)
        root = Instruction(names("tuple"), "tuple", shape,
                           (step, *(made[r] for r in slots), *reads), metadata=md)
        return Computation(names("body"), tuple(out + made + [one, step, root])), root

    def _condition(self, names, shape, md) -> Computation:
        param = Instruction(names("state"), "parameter", shape, parameter_number=0,
                            metadata=md)
        i = Instruction(names("get-tuple-element"), "get-tuple-element", shape.elements[0],
                        (param,), (("index", 0),), md)
        bound = Instruction(names("constant"), "constant", shape.elements[0],
                            literal=np.asarray(self.count, COUNTER), metadata=md)
        less = Instruction(names("compare"), "compare", Shape(np.dtype(bool), ()), (i, bound),
                           (("direction", "LT"),), md)
        return Computation(names("condition"), (param, i, bound, less))


# What a body makes again from scalars instead of reading from its state: a broadcast
# constant fuses into the kernels that read it, an array in the state is read from memory.
_REMADE = frozenset({"broadcast", "convert", "reshape", "iota"})


def _remade(v: Instruction) -> bool:
    if v.opcode == "constant":
        return v.shape.rank == 0
    return v.opcode in _REMADE and all(_remade(o) for o in v.operands)
