"""Buffer assignment: which values live in memory between kernels, when, and where.

An analysis, as XLA's BufferAssigner is: the module comes back unchanged and the result is a
`BufferAssignment` (the Stage's artifact). It works on the entry computation in its instruction
order (the schedule), in four steps:

1. Logical buffers, from the dataflow analysis (`dataflow.py`). Every array an entry
   instruction makes is a buffer, except that `tuple` and `get-tuple-element` only name arrays
   other instructions made (they alias). A tuple-shaped kernel (a multi-output fusion, a
   variadic reduce) makes one buffer per element, `fusion.3{1}`. Each buffer has a category:
   parameter, constant, output (an element of the root tuple) or temporary; and a live range
   over the schedule, from the step that defines it to its last use (outputs, parameters and
   constants live to the end).
2. In-place sharing. A kernel may write an output into an operand's buffer when that operand
   dies there, is a temporary of the same size, and the kernel reads it only element-wise at
   the index it writes (XLA's CanShareOperandBufferWithUser). In `in_place.py`.
3. Offsets. Temporaries share ONE arena. Best fit, as XLA's GlobalDecreasingSizeBestFitHeap:
   each buffer goes in the smallest gap that fits among the buffers live at the same time,
   trying buffers by decreasing size and by start time and keeping the smaller arena. In
   `heap.py`, as XLA keeps its heap simulator apart.
4. Accounting: the arena size (peak), the most bytes live at one time (the lower bound no
   placement can beat), and their difference (fragmentation).

A target may say that a kernel needs scratch space while it runs (the CPU's matrix product
packs an operand into panels): given `scratch`, each such kernel gets a buffer of category
`scratch`, live at its own step alone, placed by best fit with the temporaries, as XLA gives a
kernel's temp buffer a slot in the same heap. The arena the assignment reports is then the one
the executable allocates.

Parameters, constants and outputs are not in the arena: the caller owns the first, the module
the second, and outputs are handed to the user as arrays of their own. Nor are the results of
non-compilable ops run eagerly (category `eager`): their size is known only once they have run.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..ir.module import Computation, Instruction, Module
from ..ir.library import runs_eagerly
from ..ir.shape import Shape
from .base import Note, Pass, PassResult
from .dataflow import Dataflow, ShapeIndex, dataflow, is_kernel, subshape
from .heap import HEAP_ORDERS, Slot, best_fit, lower_bound
from .in_place import Sharing, in_place_sharings

# Every buffer in the arena starts on a 64-byte boundary (a cache line; what XLA's CPU backend
# asks of its temporaries). Sizes in the arena are rounded up to it, so a buffer's slot is a
# whole number of lines and the arena is never larger than the slots laid end to end.
ALIGNMENT = 64

PARAMETER, CONSTANT, OUTPUT, TEMPORARY = "parameter", "constant", "output", "temporary"
# A kernel's own working space while it runs, in the arena at the kernel's step only.
SCRATCH = "scratch"
# The result of a non-compilable op (np.unique, ...) run eagerly between kernels: its size is
# known only when it has run, so NumPy allocates it then, outside the arena, as TensorFlow's
# auto-clustering leaves such results to the eager runtime.
EAGER = "eager"
CATEGORIES = (PARAMETER, CONSTANT, OUTPUT, TEMPORARY, SCRATCH, EAGER)
PLURAL = {PARAMETER: "parameters", CONSTANT: "constants", OUTPUT: "outputs",
          TEMPORARY: "temporaries", SCRATCH: "scratch buffers", EAGER: "eager results"}
SINGULAR = {SCRATCH: "scratch buffer"}
# scratch(module, kernel instruction) -> the bytes of scratch space it takes on the target.
ScratchBytes = Callable[[Module, Instruction], int]


def align(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def buffer_name(inst_name: str, index: ShapeIndex) -> str:
    """`fusion.3` for an array, `fusion.3{1}` for element 1 of a tuple, as XLA writes them."""
    return inst_name if not index else f"{inst_name}{{{','.join(map(str, index))}}}"


def scratch_name(inst_name: str) -> str:
    """The name of a kernel's scratch buffer: `dot.3 scratch`."""
    return f"{inst_name} scratch"


# ----------------------------------------------------------------------------------------------
# The result.


@dataclass(frozen=True)
class LogicalBuffer:
    """One array that lives in memory between kernels."""

    id: int
    name: str  # `add.4`, or `fusion.3{1}` for an element of a tuple-shaped kernel
    instruction: str  # the instruction that defines it
    index: ShapeIndex
    shape: Shape
    category: str  # parameter | constant | output | temporary | scratch | eager
    definition_time: int  # its step in the schedule
    end_time: int  # its last use, inclusive (outputs, parameters and constants: the last step)
    uses: tuple[tuple[int, str], ...]  # (step, user) per use, in schedule order

    @property
    def size(self) -> int:
        return self.shape.nbytes

    @property
    def live_range(self) -> tuple[int, int]:
        return self.definition_time, self.end_time

    def live_at(self, t: int) -> bool:
        return self.definition_time <= t <= self.end_time

    def __str__(self) -> str:
        return f"{self.name} {self.shape} [{self.definition_time}, {self.end_time}]"


@dataclass(frozen=True)
class Allocation:
    """One slot of the temporary arena: the buffer(s) it holds, one after another (more than
    one when kernels wrote in place)."""

    index: int
    offset: int
    size: int  # bytes reserved: the largest value, rounded up to the 64-byte alignment
    start: int
    end: int
    values: tuple[LogicalBuffer, ...]

    @property
    def live_range(self) -> tuple[int, int]:
        return self.start, self.end

    def overlaps_in_time(self, other: Allocation) -> bool:
        return self.start <= other.end and other.start <= self.end

    def overlaps_in_space(self, other: Allocation) -> bool:
        return (self.size > 0 and other.size > 0 and self.offset < other.offset + other.size
                and other.offset < self.offset + self.size)

    def __str__(self) -> str:
        names = ", ".join(v.name for v in self.values)
        return (f"allocation {self.index}: offset {self.offset}, size {self.size}, "
                f"live [{self.start}, {self.end}]: {names}")


CSV_HEADER = ("buffer_id,buffer_name,offset,size,definition_time,end_time,num_uses,use_times,"
              "use_names")


@dataclass(frozen=True)
class BufferAssignment:
    """Where every array between kernels lives; what `ex.buffers` shows.

    `allocations` are the temporary arena's slots; `buffers` every logical buffer, temporaries
    or not. `peak_bytes` is the arena's size, `lower_bound_bytes` the most temporary bytes live
    at one step (no placement needs less), `fragmentation_bytes` their difference.
    """

    module: Module
    buffers: tuple[LogicalBuffer, ...]
    allocations: tuple[Allocation, ...]
    sharings: tuple[Sharing, ...]
    peak_bytes: int
    lower_bound_bytes: int
    heap_order: str  # which best-fit order was kept: "size" or "start time"
    tried: tuple[tuple[str, int], ...]  # (order, arena bytes) for each order tried
    alignment: int = ALIGNMENT

    @property
    def fragmentation_bytes(self) -> int:
        return self.peak_bytes - self.lower_bound_bytes

    @property
    def temporaries(self) -> tuple[LogicalBuffer, ...]:
        return tuple(b for b in self.buffers if b.category == TEMPORARY)

    @property
    def temporary_bytes(self) -> int:
        """The arena's slots laid end to end, with no reuse: the most best fit can ever need."""
        return sum(a.size for a in self.allocations)

    @property
    def steps(self) -> int:
        return len(self.module.entry)

    @functools.cached_property
    def _by_name(self) -> dict[str, LogicalBuffer]:
        return {b.name: b for b in self.buffers}

    @functools.cached_property
    def _allocation_of(self) -> dict[str, Allocation]:
        return {v.name: a for a in self.allocations for v in a.values}

    def buffer(self, name: str) -> LogicalBuffer:
        return self._by_name[name]

    def defined_by(self, inst_name: str, index: ShapeIndex = ()) -> LogicalBuffer:
        return self._by_name[buffer_name(inst_name, index)]

    def allocation(self, buffer: str | LogicalBuffer) -> Allocation | None:
        """The arena slot holding a buffer; None for parameters, constants and outputs."""
        name = buffer if isinstance(buffer, str) else buffer.name
        return self._allocation_of.get(name)

    def offset(self, buffer: str | LogicalBuffer) -> int | None:
        a = self.allocation(buffer)
        return None if a is None else a.offset

    def scratch_of(self, inst_name: str) -> Allocation | None:
        """The arena slot of kernel `inst_name`'s scratch space; None if it takes none."""
        return self._allocation_of.get(scratch_name(inst_name))

    def conflicts(self) -> list[tuple[Allocation, Allocation]]:
        """Pairs of slots live at the same step whose bytes overlap: empty when it is right."""
        out = []
        for i, a in enumerate(self.allocations):
            for b in self.allocations[i + 1:]:
                if a.overlaps_in_time(b) and a.overlaps_in_space(b):
                    out.append((a, b))
        return out

    def __repr__(self) -> str:
        return (f"<BufferAssignment of {self.module.name}: {len(self.temporaries)} temporaries "
                f"in {len(self.allocations)} allocations, arena {self.peak_bytes} bytes "
                f"(lower bound {self.lower_bound_bytes}, fragmentation "
                f"{self.fragmentation_bytes})>")

    # -- reports -----------------------------------------------------------------------------

    def csv(self) -> str:
        """One row per temporary and per kernel's scratch space, as XLA's BufferInfoString
        (end_time here is the last use, inclusive)."""
        rows = [CSV_HEADER]
        for b in self.buffers:
            if b.category not in (TEMPORARY, SCRATCH):
                continue
            rows.append(",".join(map(str, [
                b.id, b.name, self.offset(b), b.size, b.definition_time, b.end_time, len(b.uses),
                ";".join(str(t) for t, _ in b.uses), ";".join(u for _, u in b.uses)])))
        return "\n".join(rows) + "\n"

    def report(self) -> str:
        """The memory-usage report, in the shape of XLA's BufferAssignment::MemoryUsageReport."""
        return _report(self)

    def memory_usage_report(self) -> str:
        """What the dump's `-memory-usage-report.txt` holds: XLA's "BufferAssignment stats"
        (bytes per kind of allocation, fragmentation), the temporary bytes live at each step of
        the schedule with the peak step marked, then `report()`."""
        return _memory_usage_report(self)

    def plot(self, ax=None):
        """A matplotlib Figure of the arena over time: schedule step across, offset up, one
        rectangle per buffer, in-place reuse hatched, the peak and the lower bound as lines."""
        return _plot(self, ax)

    def to_dict(self) -> dict:
        return {
            "peak_bytes": self.peak_bytes, "lower_bound_bytes": self.lower_bound_bytes,
            "fragmentation_bytes": self.fragmentation_bytes, "heap_order": self.heap_order,
            "alignment": self.alignment,
            "allocations": [{"index": a.index, "offset": a.offset, "size": a.size,
                             "live_range": list(a.live_range),
                             "values": [v.name for v in a.values]} for a in self.allocations],
            "sharings": [{"kernel": s.kernel, "operand": s.operand, "output": s.output,
                          "reason": s.reason} for s in self.sharings],
        }


# ----------------------------------------------------------------------------------------------
# 1. Logical buffers and their live ranges.


def logical_buffers(comp: Computation, flow: Dataflow | None = None) -> tuple[LogicalBuffer, ...]:
    """Every buffer the entry's values are made of, in definition order, with live ranges over
    the computation's instruction order."""
    flow = flow or dataflow(comp)
    last = len(comp) - 1
    uses: dict[tuple[str, ShapeIndex], list[tuple[int, str]]] = {}
    for t, inst in enumerate(comp.instructions):
        if is_kernel(inst):
            for key in flow.used_by(inst):
                uses.setdefault(key, []).append((t, inst.name))
    live_out = set(flow.points_to[comp.root.name].values())
    buffers: list[LogicalBuffer] = []
    for t, inst in enumerate(comp.instructions):
        for index in flow.defined.get(inst.name, ()):
            key = (inst.name, index)
            if inst.opcode == "parameter":
                category = PARAMETER
            elif inst.opcode == "constant":
                category = CONSTANT
            elif key in live_out:
                category = OUTPUT
            elif runs_eagerly(inst):  # NumPy makes it; a library call's is the arena's
                category = EAGER
            else:
                category = TEMPORARY
            used = tuple(uses.get(key, ()))
            last_use = max([t] + [u for u, _ in used])
            end = last_use if category in (TEMPORARY, EAGER) else last
            buffers.append(LogicalBuffer(len(buffers), buffer_name(inst.name, index), inst.name,
                                         index, subshape(inst.shape, index), category, t, end,
                                         used))
    return tuple(buffers)


# ----------------------------------------------------------------------------------------------
# 2. In-place sharing: in_place.py. 3. Offsets: best fit over one arena (heap.py), for slots of
# temporaries, those written over in place merged.


def _slots(temporaries: list[LogicalBuffer], sharings: list[Sharing]) -> list[Slot]:
    """One slot per temporary, buffers that kernels wrote over in place merged into one."""
    parent = {b.name: b.name for b in temporaries}

    def find(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for s in sharings:
        parent[find(s.output)] = find(s.operand)
    groups: dict[str, list[LogicalBuffer]] = {}
    for b in temporaries:
        groups.setdefault(find(b.name), []).append(b)
    return [Slot(tuple(vs), min(v.definition_time for v in vs), max(v.end_time for v in vs),
                  align(max(v.size for v in vs))) for vs in groups.values()]


# ----------------------------------------------------------------------------------------------
# 4. Putting it together.


def scratch_buffers(module: Module, scratch: ScratchBytes, first_id: int) -> list[LogicalBuffer]:
    """A buffer for each kernel that takes scratch space, live at its own step alone."""
    out = []
    for t, inst in enumerate(module.entry.instructions):
        size = scratch(module, inst) if is_kernel(inst) else 0
        if size:
            out.append(LogicalBuffer(first_id + len(out), scratch_name(inst.name), inst.name,
                                     (), Shape(np.uint8, (size,)), SCRATCH, t, t,
                                     ((t, inst.name),)))
    return out


def assign_buffers(module: Module, scratch: ScratchBytes | None = None) -> BufferAssignment:
    """The buffer assignment of `module`'s entry in its instruction order; with `scratch`, each
    kernel's scratch space in the arena too."""
    comp = module.entry
    flow = dataflow(comp)
    buffers = logical_buffers(comp, flow)
    if scratch is not None:
        buffers += tuple(scratch_buffers(module, scratch, len(buffers)))
    temporaries = [b for b in buffers if b.category == TEMPORARY]
    sharings = in_place_sharings(module, comp, flow, temporaries)
    slots = _slots(temporaries, sharings) + [
        Slot((b,), b.definition_time, b.end_time, align(b.size))
        for b in buffers if b.category == SCRATCH]
    tried = []
    for name, key in HEAP_ORDERS.items():
        order = sorted(range(len(slots)), key=lambda i: key(slots[i], i))
        offsets, size = best_fit(slots, order)
        tried.append((size, len(tried), name, offsets))
    peak, _, kept, offsets = min(tried)
    allocations = tuple(Allocation(i, offsets[i], s.size, s.start, s.end, s.values)
                        for i, s in enumerate(slots))
    return BufferAssignment(module, buffers, allocations, tuple(sharings), peak,
                            lower_bound(slots, len(comp))[0], kept,
                            tuple((name, size) for size, _, name, _ in tried))


class AssignBuffers(Pass):
    """The `buffer-assignment` analysis: the module comes back unchanged, the assignment as
    the Stage's artifact. `scratch` is the target's word on its kernels' scratch space."""

    name = "buffer-assignment"

    def __init__(self, scratch: ScratchBytes | None = None):
        self.scratch = scratch

    def run(self, module: Module) -> PassResult:
        a = assign_buffers(module, self.scratch)
        return PassResult(module, False, tuple(_notes(a)), a)


def _notes(a: BufferAssignment) -> list[Note]:
    counts = {c: sum(b.category == c for b in a.buffers) for c in CATEGORIES}
    notes = []
    if not a.module.is_scheduled:
        notes.append(Note("the module is not scheduled: live ranges follow its instruction "
                          "order", "unscheduled"))
    notes.append(Note(f"{len(a.buffers)} logical buffers: " + ", ".join(
        f"{n} {SINGULAR.get(c, c) if n == 1 else PLURAL[c]}" for c, n in counts.items()
        if n or c not in (SCRATCH, EAGER)),
        "buffers"))
    notes += [Note(s.reason, "in-place", (s.kernel, s.operand)) for s in a.sharings]
    if not a.allocations:
        notes.append(Note("no temporaries: every value between kernels is a parameter, a "
                          "constant or an output, so the arena is empty", "arena"))
        return notes
    tried = "; ".join(f"by {name}, {size} bytes" for name, size in a.tried)
    notes.append(Note(f"best fit in one arena ({a.alignment}-byte aligned): {tried}; kept "
                      f"{a.heap_order} order", "heap"))
    bound, step = lower_bound([Slot(x.values, x.start, x.end, x.size) for x in a.allocations],
                              a.steps)
    n = counts[TEMPORARY]
    temporaries = f"{n} {'temporary' if n == 1 else 'temporaries'}"
    scratch = (f" and {counts[SCRATCH]} kernels' scratch space" if counts[SCRATCH] > 1 else
               " and a kernel's scratch space" if counts[SCRATCH] else "")
    notes.append(Note(
        f"arena of {a.peak_bytes} bytes for {temporaries}{scratch} in "
        f"{len(a.allocations)} allocations; lower bound {bound} bytes (live at step {step}, "
        f"{a.module.entry.instructions[step].name}), fragmentation {a.fragmentation_bytes} "
        "bytes", "arena"))
    return notes


# ----------------------------------------------------------------------------------------------
# Reports.


def human_bytes(n: int) -> str:
    """XLA's HumanReadableNumBytes: `100B`, `3.91KiB`, `1.50MiB`."""
    if n < 1024:
        return f"{n}B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.2f}{unit}"
    raise AssertionError


def _report(a: BufferAssignment) -> str:
    """XLA's memory-usage report: the total, the allocations by size, then their values.

    As in XLA, parameters, constants and outputs are allocations of their own and every
    temporary shares the one `preallocated-temp` allocation, the arena.
    """
    shared_into = {s.output: s.operand for s in a.sharings}
    entries = []  # (size, description, value lines)
    for b in a.buffers:
        if b.category in (TEMPORARY, SCRATCH):
            continue
        what = {PARAMETER: f"parameter {a.module.entry.get(b.instruction).parameter_number}",
                CONSTANT: "constant", OUTPUT: "maybe-live-out",
                EAGER: "eager (allocated by NumPy when it runs)"}[b.category]
        if b.index:
            what += f" at ShapeIndex {{{','.join(map(str, b.index))}}}"
        entries.append((b.size, f"{what}, shape |{b.shape}|",
                        [_value_line(b, 0, "")]))
    if a.allocations:
        lines = []
        for x in sorted(a.allocations, key=lambda x: (x.offset, x.start)):
            for v in x.values:
                extra = f", in place over {shared_into[v.name]}" if v.name in shared_into else ""
                lines.append(_value_line(v, x.offset, extra))
        entries.append((a.peak_bytes, "preallocated-temp (the arena: "
                        f"{len(a.temporaries)} temporaries in {len(a.allocations)} slots, "
                        f"lower bound {a.lower_bound_bytes}, fragmentation "
                        f"{a.fragmentation_bytes})", lines))
    total = sum(e[0] for e in entries)
    order = sorted(range(len(entries)), key=lambda i: (-entries[i][0], i))
    out = [f"Total bytes used: {total} ({human_bytes(total)})", "",
           "Allocations sorted by size:", "",
           "cumulative_size; total_size - cumulative_size; allocation",
           "-" * 78]
    cumulative = 0
    for i in order:
        size, what, _ = entries[i]
        cumulative += size
        share = 100.0 * cumulative / total if total else 100.0
        out.append(f"{human_bytes(cumulative):>10}({share:3.0f}%); "
                   f"{human_bytes(total - cumulative):>10}; allocation {i}: size {size}, {what}")
    out += ["", "", "Allocations sorted by size with their values:"]
    for i in order:
        size, what, lines = entries[i]
        out.append(f"allocation {i}: size {size}, {what}:")
        out += lines
    return "\n".join(out) + "\n"


def _value_line(b: LogicalBuffer, offset: int, extra: str) -> str:
    return (f" value: {b.name} (size={b.size},offset={offset}): {b.shape}, live "
            f"[{b.definition_time}, {b.end_time}], {len(b.uses)} "
            f"use{'' if len(b.uses) == 1 else 's'}{extra}")


def _plot(a: BufferAssignment, ax=None):
    from matplotlib import colormaps
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    steps = a.steps
    if ax is None:
        fig = Figure(figsize=(min(16, max(6, 0.4 * steps + 2)), 4.5), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    colors = colormaps["tab20"]
    written_in_place = {s.output for s in a.sharings}
    written_over = {s.operand for s in a.sharings}
    for x in a.allocations:
        for v in x.values:
            # A buffer written in place takes the slot over half-way through the kernel that
            # writes it: the left half of that step is its operand's, the right half its own.
            start = v.definition_time + (0.5 if v.name in written_in_place else 0.0)
            width = v.end_time + (0.5 if v.name in written_over else 1.0) - start
            ax.add_patch(Rectangle((start, x.offset), width, x.size, facecolor=colors(x.index % 20),
                                   edgecolor="black", linewidth=0.8, alpha=0.85,
                                   hatch="//" if v.name in written_in_place else None))
            label = v.name + (" (in place)" if v.name in written_in_place else "")
            ax.text(start + width / 2, x.offset + x.size / 2, label, ha="center", va="center",
                    fontsize=7, clip_on=True)
    ax.axhline(a.peak_bytes, color="tab:red", linestyle="--",
               label=f"arena (peak) {a.peak_bytes} B")
    ax.axhline(a.lower_bound_bytes, color="tab:green", linestyle=":",
               label=f"lower bound {a.lower_bound_bytes} B")
    ax.set_xlim(0, max(steps, 1))
    ax.set_ylim(0, max(a.peak_bytes, 1) * 1.15)
    if steps <= 48:
        ax.set_xticks([t + 0.5 for t in range(steps)],
                      [i.name for i in a.module.entry.instructions], rotation=90, fontsize=7)
    ax.set_xlabel("schedule step")
    ax.set_ylabel("arena offset (bytes)")
    if not a.allocations:
        ax.text(0.5, 0.5, "no temporaries: the arena is empty", transform=ax.transAxes,
                ha="center", va="center")
    ax.set_title(f"{a.module.name}: temporary arena of {a.peak_bytes} bytes, lower bound "
                 f"{a.lower_bound_bytes}, fragmentation {a.fragmentation_bytes}", fontsize=9)
    ax.legend(loc="upper right", fontsize=7)
    return fig


def _stats(a: BufferAssignment) -> list[str]:
    """XLA's BufferAssignment::Stats::ToString: bytes per kind of allocation."""
    by = {c: sum(b.size for b in a.buffers if b.category == c) for c in CATEGORIES}
    total = by[PARAMETER] + by[CONSTANT] + by[OUTPUT] + a.peak_bytes + by[EAGER]

    def share(n: int, of: int) -> str:
        return f"{100.0 * n / of if of else 0.0:.2f}%"

    frag = a.fragmentation_bytes
    rows = [("parameter allocation", by[PARAMETER]), ("constant allocation", by[CONSTANT]),
            ("maybe_live_out allocation", by[OUTPUT]),
            ("preallocated_temp allocation", a.peak_bytes)]
    lines = ["BufferAssignment stats:"]
    lines += [f"{what:>33}: {human_bytes(n):>10}" for what, n in rows]
    lines.append(f"{'preallocated_temp fragmentation':>33}: {human_bytes(frag):>10} "
                 f"({share(frag, a.peak_bytes)})")
    if by[EAGER]:  # ours: results NumPy allocates when a non-compilable op runs
        lines.append(f"{'eager (outside the arena)':>33}: {human_bytes(by[EAGER]):>10}")
    lines.append(f"{'total allocation':>33}: {human_bytes(total):>10}")
    lines.append(f"{'total fragmentation':>33}: {human_bytes(frag):>10} ({share(frag, total)})")
    return lines


def _live_bytes_by_step(a: BufferAssignment) -> list[str]:
    """The arena bytes live at each step (slot sizes, as the lower bound counts them)."""
    live = [sum(x.size for x in a.allocations if x.start <= t <= x.end) for t in range(a.steps)]
    most = max(live, default=0)
    width = max([len(i.name) for i in a.module.entry.instructions] + [len("instruction")])
    lines = [f"{'step':>5}  {'instruction':<{width}}  {'live bytes':>10}"]
    for t, inst in enumerate(a.module.entry.instructions):
        mark = "  <- most live (the lower bound)" if most and live[t] == most else ""
        lines.append(f"{t:>5}  {inst.name:<{width}}  {live[t]:>10}{mark}")
    return lines


def _memory_usage_report(a: BufferAssignment) -> str:
    head = [f"Memory usage of {a.module.name}: a {a.peak_bytes}-byte arena "
            f"({human_bytes(a.peak_bytes)}) for {len(a.temporaries)} temporaries in "
            f"{len(a.allocations)} allocations, {a.alignment}-byte aligned, placed by best fit in "
            f"{a.heap_order} order; lower bound {a.lower_bound_bytes} bytes, fragmentation "
            f"{a.fragmentation_bytes} bytes.", ""]
    body = _stats(a) + ["", "Temporary bytes live at each step of the schedule:"]
    body += _live_bytes_by_step(a) + ["", ""]
    return "\n".join(head + body) + _report(a)
