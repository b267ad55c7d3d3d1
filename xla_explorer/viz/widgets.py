"""The step-through explorer: `ex.show()` and what `%%xla` displays.

One Tab of five panels, each reading what the Exploration recorded (its stages, decisions,
buffer assignment, kernels); nothing here runs a pass:

  Stages       a stepper over the pipeline's stages (its number is the stage's index in
               ex.stages; passes that changed nothing hidden unless asked), the stage's graph
               across the whole width, fitted to its box, with zoom and pan (`GraphView`),
               what the pass changed drawn thick (viz/diff.py), one instruction's story (its
               shape, its source line, the fusion, buffer and kernel it ended up in), and the
               stage's HLO below with the changed lines marked and the user's source line
               beside each. Clicking a node or an HLO line selects that instruction;
  Decisions    every fusion decision, taken or refused, one at a time, with its producer and
               consumer drawn thick on the graph of the stage that decided;
  Buffers      the arena timeline beside the table of its allocations;
  Kernels      each generated kernel beside the HLO of the fusion it came from;
  Performance  a button that runs `ex.bench` and charts eager NumPy against compiled.

Panels other than Stages are built the first time their tab is opened (or asked for).

The graph is an anywidget (`GraphView`, front end in static/graph_view.js): ipywidgets' HTML
widget shows markup but runs no script, so it cannot turn a click on an SVG node into a
selection. anywidget ships a few lines of JavaScript from Python and runs them wherever
ipywidgets run (JupyterLab, Notebook 7, VS Code, Colab), with no extension of our own to
install; docs/explorer.md says more.

Displayed, the explorer is one output carrying the widget, the JSON bundle the JupyterLab
extension renders without a kernel (viz/mime.py) and a static HTML view (viz/html.py).
"""
from __future__ import annotations

import contextlib
import html
import re
from pathlib import Path

import anywidget
import ipywidgets as widgets
import traitlets

from ..ir.printer import format_computation, format_instruction
from ..passes.names import traced_name
from .charts import (CELL, MONO, bench_figure, figure_svg, small_arrays_note, table_html,
                     traffic_or_nothing)
from .format import bytes_text, seconds_text, verdict
from .diff import diff
from .graphviz import GraphvizNotInstalled, display_name, drawing, render_svg

# An instruction line of HLO text: `  ROOT add.3 = f32[8] add(...)`.
_INSTRUCTION_LINE = re.compile(r"^\s*(?:ROOT\s+)?(\S+) = ")
_CLONE_SUFFIX = re.compile(r"((?:\.clone\.\d+)+)(?=[\s,()=]|$)")

HIGHLIGHT = "#fff176"  # the background of a changed HLO line and of the current decision
# (line-height: JupyterLab gives widget HTML the height of a widget row, 28px, per line)
TITLES = ("Stages", "Decisions", "Buffers", "Kernels", "Performance")
# Instructions that say little on their own: the first selection is something else.
_PLUMBING = frozenset({"parameter", "tuple", "get-tuple-element", "constant"})
STATIC = Path(__file__).parent / "static"


def explorer(ex) -> "Explorer":
    """The explorer widget for one Exploration (what `ex.show()` returns)."""
    return Explorer(ex)


class GraphView(anywidget.AnyWidget):
    """One module's graph (Graphviz SVG) fitted to a full-width box, with zoom and pan, the
    selected instruction's story under it and the HLO text below; clicking a node or an HLO
    line sets `selected` to that instruction's name."""

    _esm = STATIC / "graph_view.js"
    _css = STATIC / "graph_view.css"
    svg = traitlets.Unicode("").tag(sync=True)  # the SVG (or, without Graphviz, a message)
    nodes = traitlets.Dict().tag(sync=True)  # SVG node <title> (DOT id) -> instruction
    hlo = traitlets.Unicode("").tag(sync=True)  # hlo_html(); empty: no HLO pane
    info = traitlets.Unicode("").tag(sync=True)  # the selected instruction's story, HTML
    selected = traitlets.Unicode("").tag(sync=True)
    show_hlo = traitlets.Bool(True).tag(sync=True)
    focus = traitlets.List(traitlets.Unicode()).tag(sync=True)  # nodes to zoom to when drawn


# ----------------------------------------------------------------------------------------------
# What the panels show, as plain functions of the exploration's recorded data.


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

    return [(i, n) for i, s in enumerate(ex.stages) for n in s.notes
            if isinstance(n, Decision) or s.name == "auto-cluster"]


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
    short = kernel.rsplit("/", 1)[-1].rstrip("_")
    for inst in module.entry.instructions:
        if re.sub(r"\W", "_", inst.name) in (short, short.removeprefix("k_")):
            if inst.opcode == "fusion":
                comp = module.computation(inst.attr("calls"))
                return format_computation(comp, metadata=False)
            return format_instruction(inst, metadata=False)
    return "(the HLO of this kernel is in a cluster's module)"


def allocations_html(a) -> str:
    """The arena's allocations as an HTML table, with the peak and lower bound stated."""
    head = (f"<p>arena peak {a.peak_bytes} bytes; lower bound {a.lower_bound_bytes} bytes "
            f"(fragmentation {a.fragmentation_bytes} bytes); {len(a.allocations)} allocations"
            f"</p>")
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
    note = small_arrays_note(bench, elements)
    if note:
        lines.append(f"<p style='color:#8d6e00'>{html.escape(note)}</p>")
    lines.append(figure_svg(bench_figure(bench)))
    rows = [(label, seconds_text(t.median), seconds_text(t.q3 - t.q1), bytes_text(t.peak_bytes))
            for label, t in (("eager NumPy", bench.eager), ("compiled", bench.compiled))]
    lines.append(table_html(("", "time (median)", "IQR", "peak memory"), rows))
    compile_s = ("" if bench.compile_seconds is None
                 else f"; compiling took {seconds_text(bench.compile_seconds)}")
    lines.append(f"<p>arena {bytes_text(bench.arena_bytes)} (allocated once); predicted peak "
                 f"{bytes_text(bench.predicted_peak_bytes)} (arena + outputs){compile_s}</p>")
    return "".join(lines)


# ----------------------------------------------------------------------------------------------
# The panels.


def _buttons():
    prev = widgets.Button(description="◀ previous", layout=widgets.Layout(width="auto"))
    nxt = widgets.Button(description="next ▶", layout=widgets.Layout(width="auto"))
    return prev, nxt


class StagesPanel:
    """The stage stepper, the graph and the HLO of the current stage, one instruction's story."""

    def __init__(self, ex):
        self.ex = ex
        self.index = -1
        self.highlighted: frozenset[str] = frozenset()
        self.graph_dot = ""
        # The slider's values are stage indices: its number is the pass's number in the list.
        self.slider = widgets.SelectionSlider(options=[("0", 0)], description="stage",
                                              continuous_update=False, readout=True)
        self.prev_button, self.next_button = _buttons()
        self.pass_select = widgets.Dropdown(description="pass")
        self.show_unchanged = widgets.Checkbox(description="show unchanged passes")
        self.summary_html = widgets.HTML()
        self.view = GraphView()
        self.instruction_select = widgets.Dropdown(description="instruction",
                                                   layout=widgets.Layout(width="50%"))
        self.fusions = ex.fusions
        self.visible: list[int] = []
        self._quiet = False  # set while the controls are being refilled
        self._described = ""  # the instruction whose story is shown
        self._kept = ""  # the instruction the student chose, kept from stage to stage
        self._wire()
        self.widget = widgets.VBox([
            widgets.HBox([self.prev_button, self.slider, self.next_button, self.pass_select,
                          self.show_unchanged]),
            self.summary_html, self.instruction_select, self.view],
            layout=widgets.Layout(width="100%"))
        self._offer(visible_stages(ex, False), select=0)

    def _wire(self) -> None:
        def on(widget, act, trait="value"):
            widget.observe(lambda c: self._quiet or c.new is None or act(c.new), trait)

        on(self.slider, self.select)
        on(self.pass_select, self.select)
        on(self.show_unchanged, lambda v: self._offer(visible_stages(self.ex, v), self.index))
        on(self.instruction_select, self._chosen)
        on(self.view, self._chosen, "selected")
        self.prev_button.on_click(lambda _: self._step(-1))
        self.next_button.on_click(lambda _: self._step(1))

    @contextlib.contextmanager
    def _quietly(self):
        """Refill the controls without their observers acting on it."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    @property
    def instruction_html(self) -> str:
        """The selected instruction's story, as shown under the graph."""
        return self.view.info

    def _step(self, by: int) -> None:
        k = self.visible.index(self.index) + by
        if 0 <= k < len(self.visible):
            self.select(self.visible[k])

    def _offer(self, visible: list[int], select: int) -> None:
        """Offer these stages; select `select`, or the nearest offered stage before it."""
        self.visible = visible
        with self._quietly():
            self.pass_select.options = [(f"{i}: {self.ex.stages[i].name}", i) for i in visible]
            self.slider.options = [(str(i), i) for i in visible]
        self.select(max(i for i in visible if i <= select), force=True)

    def select(self, index: int, force: bool = False) -> None:
        """Show stage `index` (of ex.stages; a hidden pass shows the unchanged ones)."""
        index = range(len(self.ex.stages))[index]
        if index not in self.visible:
            self.index = index
            self.show_unchanged.value = True  # offers every stage and shows self.index
            return
        if index == self.index and not force:
            return
        self.index = index
        # The buttons first: the front end applies changes in order, so whoever sees the new
        # stage number sees the buttons for it.
        self.prev_button.disabled = index == self.visible[0]
        self.next_button.disabled = index == self.visible[-1]
        with self._quietly():
            self.slider.value = index
            self.pass_select.value = index
        self._draw()

    def _draw(self) -> None:
        module = self.ex.stages[self.index].module
        self.highlighted = changed_names(self.ex, self.index)
        self.summary_html.value = stage_summary(self.ex, self.index)
        svg, self.graph_dot, nodes = graph_view(module, self.highlighted)
        options = instruction_options(module)
        names = {name for _, name in options}
        keep = self._kept if self._kept in names else None
        chosen = keep or first_instruction(module, self.highlighted)
        with self._quietly():
            self.instruction_select.options = options
            self.view.hlo = hlo_html(module, self.highlighted)
            self.view.svg, self.view.nodes = svg, nodes
        self.select_instruction(chosen, force=True)

    def _chosen(self, name: str) -> None:
        """The student chose an instruction (a click, the list): it stays selected on the
        stages that still have it."""
        self._kept = name
        self.select_instruction(name)

    def select_instruction(self, name: str, force: bool = False) -> None:
        """Select an instruction of the current stage: outlined on the graph, its HLO line
        marked, its story under the graph (what a click on a node or a line does)."""
        module = self.ex.stages[self.index].module
        if name not in instruction_map(module) or (name == self._described and not force):
            return
        self._described = name
        with self._quietly():
            self.instruction_select.value = name
            self.view.selected = name
        self.view.info = instruction_info(self.ex, module, name, self.fusions)


class DecisionsPanel:
    """Every fusion decision, one at a time, on the graph of the stage that made it."""

    def __init__(self, ex):
        self.ex = ex
        self.items = decision_items(ex)
        self.index = -1
        self.highlighted: frozenset[str] = frozenset()
        self.graph_dot = ""
        # Numbered from 1, as the text above the graph says "3 of 12".
        self.slider = widgets.IntSlider(min=1, max=max(len(self.items), 1), value=1,
                                        description="decision", continuous_update=False)
        self.prev_button, self.next_button = _buttons()
        self.prev_button.on_click(lambda _: self.select(max(self.index - 1, 0)))
        self.next_button.on_click(
            lambda _: self.select(min(self.index + 1, len(self.items) - 1)))
        self.decision_html = widgets.HTML()
        self.view = GraphView(show_hlo=False)
        self.list_html = widgets.HTML()
        self.slider.observe(lambda c: self.select(c.new - 1), "value")
        self.widget = widgets.VBox([
            widgets.HBox([self.prev_button, self.slider, self.next_button]), self.decision_html,
            self.view, self.list_html], layout=widgets.Layout(width="100%"))
        if self.items:
            self.select(0)
        else:
            self.decision_html.value = "No fusion decisions were recorded."
            for b in (self.prev_button, self.next_button, self.slider):
                b.disabled = True

    def select(self, k: int) -> None:
        k = range(len(self.items))[k]
        if k == self.index:
            return
        self.index = k
        self.slider.value = k + 1
        self.prev_button.disabled = k == 0
        self.next_button.disabled = k == len(self.items) - 1
        stage_index, note = self.items[k]
        module, self.highlighted = decision_view(self.ex, stage_index, note)
        self.view.focus = sorted(self.highlighted)  # before the graph: drawn, it zooms there
        stage = self.ex.stages[stage_index].name
        self.decision_html.value = (f"<b>{k + 1} of {len(self.items)}</b> ({html.escape(stage)})"
                                    f": {html.escape(decision_text(note))}")
        self.view.svg, self.graph_dot, self.view.nodes = graph_view(module, self.highlighted)
        self.list_html.value = self._list()

    def _list(self) -> str:
        rows = []
        for k, (_, note) in enumerate(self.items):
            style = f" style='background:{HIGHLIGHT};color:#212121'" if k == self.index else ""
            rows.append(f"<li{style}>{html.escape(decision_text(note))}</li>")
        return f"<ol style='margin:4px 0'>{''.join(rows)}</ol>"


class BuffersPanel:
    """The arena timeline beside its allocations."""

    def __init__(self, ex):
        a = ex.buffers
        self.table_html = widgets.HTML(allocations_html(a) if a else
                                       "This pipeline ran no buffer assignment.")
        self.plot_html = widgets.HTML(figure_svg(a.plot()) if a else "")
        self.widget = widgets.HBox([
            widgets.Box([self.plot_html], layout=widgets.Layout(width="60%", overflow="auto")),
            self.table_html])


class KernelsPanel:
    """Each generated kernel's source beside the HLO of the fusion it came from."""

    def __init__(self, ex):
        self.ex = ex
        self.source_html: dict[str, widgets.HTML] = {}  # by kernel name
        self.hlo_html: dict[str, widgets.HTML] = {}
        rows = [self._row(name, src) for name, src in ex.kernels.items()]
        if not rows:
            rows = [widgets.HTML(f"No generated kernels (backend {ex.backend}): explore with "
                                 f"backend=\"cpu\" to see them.")]
        self.widget = widgets.VBox(rows)

    def _row(self, name: str, source: str):
        self.source_html[name] = widgets.HTML(highlight_python(source),
                                              layout=widgets.Layout(width="60%"))
        self.hlo_html[name] = widgets.HTML(
            f"<pre style='{MONO};white-space:pre-wrap'>"
            f"{html.escape(fusion_hlo(self.ex.module, name))}</pre>",
            layout=widgets.Layout(width="40%"))
        return widgets.VBox([widgets.HTML(f"<b>{html.escape(name)}</b>"),
                             widgets.HBox([self.source_html[name], self.hlo_html[name]])])


class PerformancePanel:
    """A button that benchmarks eager NumPy against the compiled program."""

    PHASES = ("warming up and timing", "drawing", "done")

    def __init__(self, ex):
        self.ex = ex
        self.result = None
        self.repeat = widgets.BoundedIntText(value=20, min=1, max=10_000, description="repeat")
        self.run_button = widgets.Button(description="Run benchmark", button_style="primary")
        self.progress = widgets.IntProgress(value=0, min=0, max=len(self.PHASES) - 1)
        self.status = widgets.Label()
        self.result_html = widgets.HTML()
        self.run_button.on_click(lambda _: self.run())
        if ex.backend == "interpreter":
            self.run_button.disabled = True
            self.status.value = ('Benchmarks need backend="cpu": the interpreter runs the HLO '
                                 'op by op in NumPy.')
        self.traffic_html = widgets.HTML(traffic_or_nothing(ex))
        self.widget = widgets.VBox([self.traffic_html,
                                    widgets.HBox([self.repeat, self.run_button, self.progress,
                                                  self.status]), self.result_html])

    def _phase(self, n: int) -> None:
        self.progress.value = n
        self.status.value = self.PHASES[n]

    def _elements(self) -> int:
        import numpy as np

        return int(sum(np.size(a) for a in self.ex.args
                       if isinstance(a, (np.ndarray, np.generic, int, float))))

    def run(self) -> None:
        """ex.bench(repeat=...), then its chart and table (bench is synchronous: the progress
        moves between its phases)."""
        self.run_button.disabled = True
        try:
            self._phase(0)
            self.result = self.ex.bench(repeat=self.repeat.value)
            self._phase(1)
            self.result_html.value = bench_html(self.result, self._elements())
            self._phase(2)
        except Exception as err:  # shown in the panel: a button callback's error goes nowhere
            self.status.value = f"benchmark failed: {type(err).__name__}: {err}"
        finally:
            self.run_button.disabled = False


PANELS = dict(zip(TITLES, (StagesPanel, DecisionsPanel, BuffersPanel, KernelsPanel,
                           PerformancePanel)))


class Explorer(widgets.Tab):
    """The explorer: a Tab of Stages, Decisions, Buffers, Kernels and Performance. Panels are
    built when first shown or asked for (`.panel("Buffers")`, `.buffers_panel`, ...)."""

    def __init__(self, ex):
        super().__init__(children=[widgets.VBox(layout=widgets.Layout(width="100%"))
                                   for _ in TITLES], titles=TITLES,
                         layout=widgets.Layout(width="100%"))
        self.exploration = ex
        self._panels: dict[str, object] = {}
        self.observe(lambda c: c.new is not None and self.panel(TITLES[c.new]),
                     "selected_index")
        self.panel("Stages")

    def panel(self, title: str):
        if title not in self._panels:
            built = PANELS[title](self.exploration)
            self._panels[title] = built
            self.children[TITLES.index(title)].children = (built.widget,)
        return self._panels[title]

    stages_panel = property(lambda self: self.panel("Stages"))
    decisions_panel = property(lambda self: self.panel("Decisions"))
    buffers_panel = property(lambda self: self.panel("Buffers"))
    kernels_panel = property(lambda self: self.panel("Kernels"))
    performance_panel = property(lambda self: self.panel("Performance"))

    # The controls tests and notebooks reach for most.
    stage_slider = property(lambda self: self.stages_panel.slider)
    graph_view = property(lambda self: self.stages_panel.view)
    decision_slider = property(lambda self: self.decisions_panel.slider)
    bench_button = property(lambda self: self.performance_panel.run_button)

    def __repr__(self) -> str:
        # What a text-only front end prints instead of the widget (the default repr lists
        # every child widget).
        ex = self.exploration
        return (f"<Explorer of {ex.module.name}: {len(ex.stages)} stages, "
                f"{len(ex.decisions)} fusion decisions; backend {ex.backend}>")

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, and in the same output the JSON the JupyterLab extension renders
        and the static HTML other viewers show: what is left when no kernel holds the
        widget's model (a saved notebook reopened, nbviewer, a code host's preview)."""
        from .display import bundle

        data = super()._repr_mimebundle_(**kwargs)
        return {**bundle(self.exploration, self.exploration.last_bench), **data}

    def select_stage(self, index: int) -> None:
        self.stages_panel.select(index)

    def select_decision(self, k: int) -> None:
        self.decisions_panel.select(k)
