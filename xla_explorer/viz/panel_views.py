"""What the explorer's panels show, as plain functions of the exploration's recorded data:
HTML and text for the widgets of `widgets.py`, and the choices they offer. No widget here.
"""
from __future__ import annotations

import html
import re

from ..ir.printer import format_computation, format_instruction
from ..passes.names import traced_name
from .charts import CELL, MONO, bench_figure, figure_svg, small_arrays_note, table_html
from .diff import diff
from .format import arena_note, bytes_text, seconds_text, verdict
from .graphviz import GraphvizNotInstalled, display_name, drawing, render_svg

# An instruction line of HLO text: `  ROOT add.3 = f32[8] add(...)`.
_INSTRUCTION_LINE = re.compile(r"^\s*(?:ROOT\s+)?(\S+) = ")
_CLONE_SUFFIX = re.compile(r"((?:\.clone\.\d+)+)(?=[\s,()=]|$)")

# Why the first decision is near the program's end (the extension's explorer.ts says the same).
DECISION_ORDER = ("in the order made: fusion visits the program from its output back to its "
                  "inputs, as XLA's does")
# The driver's heading (the extension's explorer.ts says the same).
DRIVER_TITLE = "run: every kernel launch in order, a loop's repeated steps rolled into one for loop"
HIGHLIGHT = "#fff176"  # the background of a changed HLO line and of the current decision
# Instructions that say little on their own: the first selection is something else.
_PLUMBING = frozenset({"parameter", "tuple", "get-tuple-element", "constant"})


def changed_names(ex, index: int) -> frozenset[str]:
    """What stage `index` added or rewrote since the stage before (nothing for the trace)."""
    if index == 0:
        return frozenset()
    return diff(ex.stages[index - 1].module, ex.stages[index].module).changed


def visible_stages(ex, show_unchanged: bool) -> list[int]:
    """The stage indices the stepper offers: the trace and every pass that changed something,
    or all of them."""
    return [i for i, s in enumerate(ex.stages) if show_unchanged or i == 0 or s.changed]


def stage_summary(ex, index: int) -> str:
    """One line (added/removed/rewritten, seconds) and the pass's notes, as HTML; many notes
    fold away behind their count."""
    stage = ex.stages[index]
    if index == 0:
        line = f"<b>{index}: {html.escape(stage.name)}</b>: the traced program"
    else:
        d = diff(ex.stages[index - 1].module, stage.module)
        line = (f"<b>{index}: {html.escape(stage.name)}</b>: {len(d.added)} added, "
                f"{len(d.removed)} removed, {len(d.rewritten)} rewritten; "
                f"{stage.seconds * 1e3:.2f} ms; {len(stage.notes)} notes")
    if not stage.notes:
        return line
    notes = "".join(f"<li>{html.escape(str(n))}</li>" for n in stage.notes)
    notes = f"<ul style='margin:2px 0'>{notes}</ul>"
    if len(stage.notes) <= 6:
        return line + notes
    return f"{line}<details><summary>the {len(stage.notes)} notes</summary>{notes}</details>"


def graph_view(module, changed, **options) -> tuple[str, str, dict[str, str]]:
    """(the graph as SVG, its DOT source, the instruction each SVG node stands for); without
    Graphviz, HTML saying how to install it, with the DOT as text."""
    g, names = drawing(module, changed=changed, **options)
    try:
        body = render_svg(g)
        body = body[body.index("<svg"):]
    except GraphvizNotInstalled as err:
        body = f"<p>{html.escape(str(err))}</p><pre>{html.escape(g.source)}</pre>"
    return body, g.source, names


def instruction_map(module) -> dict:
    """Every instruction of the module by name: the entry's and the fused computations'."""
    return {i.name: i for c in module.all_computations for i in c.instructions}


def source_text(inst) -> str:
    md = inst.metadata
    return f"line {md.source_line}" if md.source_line else ""


def _marked_clones(escaped_line: str) -> str:
    """An escaped HLO line with each `.clone.N` suffix dimmed (the text stays as printed)."""
    return _CLONE_SUFFIX.sub(
        lambda m: f"<span class='xe-clone' title='a copy made by fusion'>{m.group(1)}</span>",
        escaped_line)


def hlo_html(module, changed: frozenset[str]) -> str:
    """The module's HLO (metadata moved to a source-line column), changed lines marked, each
    instruction's line tagged with its name (`data-inst`) for click-to-select."""
    insts = instruction_map(module)
    rows = []
    for text in module.to_text(metadata=False).splitlines():
        m = _INSTRUCTION_LINE.match(text)
        name = m.group(1) if m else ""
        inst = insts.get(name)
        mark = name in changed
        # (a dark theme's light text on the light marks would not read: dark text there)
        style = f" style='background:{HIGHLIGHT};color:#212121'" if mark else ""
        rows.append(f"<div class='xe-line' data-inst='{html.escape(name)}' "
                    f"data-changed='{str(mark).lower()}'{style}><span class='xe-src'>"
                    f"{source_text(inst) if inst is not None else ''}</span>"
                    f"{_marked_clones(html.escape(text))}</div>")
    return f"<div style='{MONO}'>" + "".join(rows) + "</div>"


def fusion_of(fusions, name: str):
    """The kernel (of ex.fusions) that computes what the instruction `name` traced as."""
    traced = traced_name(name)
    for f in fusions:
        if f.name == name or traced in {traced_name(n) for n in f.instructions}:
            return f
    return None


def kernel_name(ex, fusion) -> str | None:
    """The ex.kernels key of the kernel generated for `fusion`."""
    return ex.kernel_of(fusion.name)


def buffer_lines(ex, names: set[str]) -> list[str]:
    """Where the values that `names` define live: an arena allocation, or which kind of
    buffer (parameter, constant, output) is not in the arena."""
    a = ex.buffers
    if a is None:
        return []
    out = []
    for b in a.buffers:
        if b.instruction in names:
            slot = a.allocation(b)
            where = (f"allocation {slot.index}, offset {slot.offset}, size {slot.size}, live "
                     f"{list(slot.live_range)}" if slot else f"{b.category}, not in the arena")
            out.append(f"{b.name} ({b.shape}): {where}")
    return out


def instruction_info(ex, module, name: str, fusions=None) -> str:
    """One instruction's story as HTML: what it is, where it came from, where it ended up
    (`fusions`: ex.fusions, when the caller has them already)."""
    inst = instruction_map(module).get(name)
    if inst is None:
        return ""
    md = inst.metadata
    dtype = "tuple" if inst.shape.is_tuple else str(inst.dtype)
    rows = [("instruction", f"{name} = {inst.opcode}")]
    if traced_name(name) != name:
        rows.append(("copy of", f"{traced_name(name)}: fusion copies a cheap producer into "
                                "each kernel that reads it"))
    rows += [("shape", str(inst.shape)), ("dtype", dtype),
             ("source", f"{md.source_file}:{md.source_line}" if md.source_line else "(none)")]
    rows += _ended_up(ex, name, ex.fusions if fusions is None else fusions)
    body = "".join(f"<tr><td style='{CELL}'><b>{html.escape(k)}</b></td>"
                   f"<td style='{CELL}'>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table style='{MONO};margin:0'>{body}</table>"


def _ended_up(ex, name: str, fusions) -> list[tuple[str, str]]:
    fusion = fusion_of(fusions, name)
    if fusion is None:
        return [("fusion", "none: not computed by a kernel of the final program")]
    buffers = buffer_lines(ex, {fusion.name}) or ["(no buffer of its own)"]
    kernel = kernel_name(ex, fusion) or f"(no generated kernel: backend {ex.backend})"
    return [("fusion", str(fusion))] + [("buffer", b) for b in buffers] + [("kernel", kernel)]


def first_instruction(module, changed: frozenset[str]) -> str:
    """The instruction to select when a stage is first shown: the first one the pass changed
    that computes something, else the last one that computes something (what the program
    returns is made there), never the root tuple while there is anything else."""
    entry = module.entry.instructions
    computing = [i.name for i in entry if i.opcode not in _PLUMBING]
    for name in computing:
        if name in changed:
            return name
    if computing:
        return computing[-1]
    return entry[-1].name


def instruction_options(module) -> list[tuple[str, str]]:
    """(label, name) of every instruction a student may select: the entry's and the fused
    computations' (not their parameters); a copy is labelled by its traced name, a mark and
    the fusion that holds it."""
    holder = {}
    for inst in module.entry.instructions:
        if inst.opcode == "fusion" and inst.attr("calls"):
            for i in module.computation(inst.attr("calls")).instructions:
                holder[i.name] = inst.name
    out = []
    for c in module.all_computations:
        for i in c.instructions:
            if i.opcode == "parameter" and c is not module.entry:
                continue
            label = display_name(i.name)
            if i.name != traced_name(i.name) and i.name in holder:
                label += f" in {holder[i.name]}"
            out.append((label, i.name))
    return out


def decision_items(ex) -> list[tuple[int, object]]:
    """(stage index, note) for every fusion decision in pass order, and under auto-clustering
    the auto-cluster pass's notes."""
    from ..passes.kinds import Decision

    clustering = ex.compiled.clustering  # the stage that made it is the one that clustered
    return [(i, n) for i, s in enumerate(ex.stages) for n in s.notes
            if isinstance(n, Decision) or (clustering is not None and s.artifact is clustering)]


def decision_names(note) -> frozenset[str]:
    """What a decision is about: its producer and consumer (an auto-cluster note: its
    instructions)."""
    names = {getattr(note, "producer", ""), getattr(note, "consumer", "")}
    return frozenset(n for n in names | set(note.instructions) if n)


def decision_view(ex, stage_index: int, note) -> tuple[object, frozenset[str]]:
    """The module to draw a decision on and the names to draw thick: the deciding stage's
    module, with every copy (`.clone.N`) of producer and consumer; the module before the pass
    when neither is left in it."""
    names = decision_names(note)
    for index in (stage_index, stage_index - 1):
        module = ex.stages[index].module
        present = {n for n in instruction_map(module) if traced_name(n) in names}
        if present:
            return module, frozenset(present)
    return ex.stages[stage_index].module, frozenset()


def decision_text(note) -> str:
    verdict_ = "taken" if getattr(note, "fused", True) else "refused"
    return f"[{verdict_}] {note}"


def highlight_python(source: str) -> str:
    """Python source as HTML with inline colours (no stylesheet needed)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(source, PythonLexer(), HtmlFormatter(noclasses=True))


def fusion_hlo(module, kernel: str) -> str:
    """The HLO a kernel came from: its fusion's called computation, or the lone op."""
    prefix, _, short = kernel.rpartition("/")
    short = short.rstrip("_")
    if prefix and any(prefix in i.callees() for i in module.entry.instructions
                      if i.opcode == "while"):
        # A kernel of a while loop's body, which is compiled as a program of its own.
        return format_computation(module.computation(prefix), metadata=False)
    for inst in module.entry.instructions:
        if re.sub(r"\W", "_", inst.name) in (short, short.removeprefix("k_")):
            if inst.opcode == "fusion":
                comp = module.computation(inst.attr("calls"))
                return format_computation(comp, metadata=False)
            return format_instruction(inst, metadata=False)
    return "(the HLO of this kernel is in a cluster's module)"


def arena_note_of(ex) -> str:
    """`format.arena_note` for the exploration's executable, when it was made from this very
    buffer assignment (not an auto-clustered program's clusters); "" otherwise."""
    exe = ex.executable
    if ex.buffers is None or getattr(exe, "assignment", None) is not ex.buffers:
        return ""
    return arena_note(ex.buffers.peak_bytes, exe.arena_bytes)


def allocations_html(a, note: str = "") -> str:
    """The arena's allocations as an HTML table, with the peak and lower bound stated, and
    `note` (`arena_note_of`) saying what the executable allocates for it."""
    head = (f"<p>arena peak {a.peak_bytes} bytes; lower bound {a.lower_bound_bytes} bytes "
            f"(fragmentation {a.fragmentation_bytes} bytes); {len(a.allocations)} allocations"
            + (f"; {html.escape(note)}" if note else "") + "</p>")
    if not a.allocations:
        return head + ("<p>No temporaries: every value between kernels is a parameter, a "
                       "constant or an output.</p>")
    rows = [(x.index, x.offset, x.size, f"[{x.start}, {x.end}]",
             html.escape(", ".join(v.name for v in x.values))) for x in a.allocations]
    return head + table_html(("#", "offset", "size", "live", "values"), rows)


def bench_html(bench, elements: int | None = None) -> str:
    """The Performance tab's result: the verdict, why small arrays do not gain, the chart and
    the numbers in units that fit."""
    lines = [f"<p>compiled against eager NumPy: <b>{verdict(bench.speedup)}</b> (medians over "
             f"{bench.repeat} interleaved rounds)</p>"]
    for note in (small_arrays_note(bench, elements), bench.spread_note and
                 f"Warning: {bench.spread_note}."):
        if note:
            lines.append(f"<p style='color:#8d6e00'>{html.escape(note)}</p>")
    lines.append(figure_svg(bench_figure(bench)))
    rows = [(label, seconds_text(t.median), seconds_text(t.q3 - t.q1), memory)
            for label, t, memory in zip(("eager NumPy", "compiled"),
                                        (bench.eager, bench.compiled), bench.memory_texts())]
    lines.append(table_html(("", "time (median)", "IQR", "memory during a call"), rows))
    compile_s = ("" if bench.compile_seconds is None
                 else f"; compiling took {seconds_text(bench.compile_seconds)}")
    lines.append(f"<p><b>{html.escape(bench.memory_verdict)}</b>; predicted "
                 f"{bytes_text(bench.predicted_peak_bytes)} (arena + outputs){compile_s}</p>")
    return "".join(lines)
