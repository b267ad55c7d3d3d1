"""The step-through explorer: `ex.show()` and what `%%xla` displays.

One Tab of five panels, each reading what the Exploration recorded (its stages, decisions,
buffer assignment, kernels); nothing here runs a pass:

  Stages       a stepper over the pipeline's stages (slider, previous/next, a pass list;
               passes that changed nothing hidden unless asked), the stage's graph with what
               the pass changed drawn thick (viz/diff.py), its HLO with those lines marked and
               the user's source line beside each, and one instruction's story: its shape,
               its source line, and the fusion, buffer and kernel it ended up in;
  Decisions    every fusion decision, taken or refused, one at a time, with its producer and
               consumer drawn thick on the graph of the stage that decided;
  Buffers      the arena timeline beside the table of its allocations;
  Kernels      each generated kernel beside the HLO of the fusion it came from;
  Performance  a button that runs `ex.bench` and charts eager NumPy against compiled.

Panels other than Stages are built the first time their tab is opened (or asked for).
"""
from __future__ import annotations

import contextlib
import html
import re

import ipywidgets as widgets

from ..passes.names import traced_name
from ..ir.printer import format_computation, format_instruction
from .charts import figure_svg
from .diff import diff
from .graphviz import GraphvizNotInstalled, graph, render_svg

# An instruction line of HLO text: `  ROOT add.3 = f32[8] add(...)`.
_INSTRUCTION_LINE = re.compile(r"^\s*(?:ROOT\s+)?(\S+) = ")

HIGHLIGHT = "#fff176"  # the background of a changed HLO line and of the current decision
# (line-height: JupyterLab gives widget HTML the height of a widget row, 28px, per line)
MONO = "font-family:monospace;font-size:12px;line-height:1.35"
TITLES = ("Stages", "Decisions", "Buffers", "Kernels", "Performance")


def explorer(ex) -> "Explorer":
    """The explorer widget for one Exploration (what `ex.show()` returns)."""
    return Explorer(ex)


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
    """One line (added/removed/rewritten, seconds) and the pass's notes, as HTML."""
    stage = ex.stages[index]
    if index == 0:
        line = f"<b>{index}: {html.escape(stage.name)}</b>: the traced program"
    else:
        d = diff(ex.stages[index - 1].module, stage.module)
        line = (f"<b>{index}: {html.escape(stage.name)}</b>: {len(d.added)} added, "
                f"{len(d.removed)} removed, {len(d.rewritten)} rewritten; "
                f"{stage.seconds * 1e3:.2f} ms; {len(stage.notes)} notes")
    notes = "".join(f"<li>{html.escape(str(n))}</li>" for n in stage.notes)
    return line + (f"<ul style='margin:2px 0'>{notes}</ul>" if notes else "")


def graph_view(module, changed, **options) -> tuple[str, str]:
    """(HTML showing the graph as SVG, its DOT source); without Graphviz the DOT as text."""
    g = graph(module, changed=changed, **options)
    try:
        body = render_svg(g)
    except GraphvizNotInstalled as err:
        body = f"<p>{html.escape(str(err))}</p><pre>{html.escape(g.source)}</pre>"
    return f"<div style='overflow:auto;max-height:560px'>{body}</div>", g.source


def instruction_map(module) -> dict:
    """Every instruction of the module by name: the entry's and the fused computations'."""
    return {i.name: i for c in module.all_computations for i in c.instructions}


def source_text(inst) -> str:
    md = inst.metadata
    return f"line {md.source_line}" if md.source_line else ""


def hlo_html(module, changed: frozenset[str]) -> str:
    """The module's HLO (metadata moved to a source-line column), changed lines marked."""
    insts = instruction_map(module)
    rows = []
    for text in module.to_text(metadata=False).splitlines():
        m = _INSTRUCTION_LINE.match(text)
        name = m.group(1) if m else ""
        inst = insts.get(name)
        mark = name in changed
        style = f" style='background:{HIGHLIGHT}'" if mark else ""
        rows.append(f"<div data-inst='{html.escape(name)}' data-changed='{str(mark).lower()}'"
                    f"{style}><span style='display:inline-block;width:6em;color:#888'>"
                    f"{source_text(inst) if inst is not None else ''}</span>"
                    f"{html.escape(text)}</div>")
    return (f"<div style='{MONO};white-space:pre;overflow:auto;max-height:480px'>"
            + "".join(rows) + "</div>")


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
    rows = [("instruction", f"{name} = {inst.opcode}"), ("shape", str(inst.shape)),
            ("dtype", dtype),
            ("source", f"{md.source_file}:{md.source_line}" if md.source_line else "(none)")]
    rows += _ended_up(ex, name, ex.fusions if fusions is None else fusions)
    body = "".join(f"<tr><td style='padding-right:1em'><b>{html.escape(k)}</b></td>"
                   f"<td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table style='{MONO}'>{body}</table>"


def _ended_up(ex, name: str, fusions) -> list[tuple[str, str]]:
    fusion = fusion_of(fusions, name)
    if fusion is None:
        return [("fusion", "none: not computed by a kernel of the final program")]
    buffers = buffer_lines(ex, {fusion.name}) or ["(no buffer of its own)"]
    kernel = kernel_name(ex, fusion) or f"(no generated kernel: backend {ex.backend})"
    return [("fusion", str(fusion))] + [("buffer", b) for b in buffers] + [("kernel", kernel)]


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
    verdict = "taken" if getattr(note, "fused", True) else "refused"
    return f"[{verdict}] {note}"


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
    cells = "".join(
        f"<tr><td>{x.index}</td><td>{x.offset}</td><td>{x.size}</td>"
        f"<td>[{x.start}, {x.end}]</td><td>{html.escape(', '.join(v.name for v in x.values))}"
        f"</td></tr>" for x in a.allocations)
    return (head + f"<table style='{MONO}'><tr><th>#</th><th>offset</th><th>size</th>"
            f"<th>live</th><th>values</th></tr>{cells}</table>")


# ----------------------------------------------------------------------------------------------
# The panels.


def _stepper(description: str):
    """A slider with previous/next buttons around it."""
    slider = widgets.IntSlider(min=0, max=0, description=description, readout=True,
                               continuous_update=False)
    prev = widgets.Button(description="◀ previous", layout=widgets.Layout(width="auto"))
    nxt = widgets.Button(description="next ▶", layout=widgets.Layout(width="auto"))
    prev.on_click(lambda _: setattr(slider, "value", max(slider.min, slider.value - 1)))
    nxt.on_click(lambda _: setattr(slider, "value", min(slider.max, slider.value + 1)))
    return slider, prev, nxt


class StagesPanel:
    """The stage stepper, the graph and the HLO of the current stage, one instruction's story."""

    def __init__(self, ex):
        self.ex = ex
        self.index = -1
        self.highlighted: frozenset[str] = frozenset()
        self.graph_dot = ""
        self.slider, self.prev_button, self.next_button = _stepper("step")
        self.pass_select = widgets.Dropdown(description="pass")
        self.show_unchanged = widgets.Checkbox(description="show unchanged passes")
        self.summary_html = widgets.HTML()
        self.graph_html = widgets.HTML()
        self.hlo_html = widgets.HTML()
        self.instruction_select = widgets.Dropdown(description="instruction")
        self.instruction_html = widgets.HTML()
        self.fusions = ex.fusions
        self.visible: list[int] = []
        self._quiet = False  # set while the controls are being refilled
        self._wire()
        self.widget = self._layout()
        self._offer(visible_stages(ex, False), select=0)

    def _wire(self) -> None:
        def on(widget, act):
            widget.observe(lambda c: self._quiet or c.new is None or act(c.new), "value")

        on(self.slider, lambda v: self.select(self.visible[v]))
        on(self.pass_select, self.select)
        on(self.show_unchanged, lambda v: self._offer(visible_stages(self.ex, v), self.index))
        on(self.instruction_select, self._describe)

    @contextlib.contextmanager
    def _quietly(self):
        """Refill the controls without their observers acting on it."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    def _layout(self):
        controls = widgets.HBox([self.prev_button, self.slider, self.next_button,
                                 self.pass_select, self.show_unchanged])
        hlo = widgets.VBox([self.hlo_html, self.instruction_select, self.instruction_html],
                           layout=widgets.Layout(width="55%"))
        views = widgets.HBox([widgets.Box([self.graph_html], layout=widgets.Layout(width="45%")),
                              hlo])
        return widgets.VBox([controls, self.summary_html, views])

    def _offer(self, visible: list[int], select: int) -> None:
        """Offer these stages; select `select`, or the nearest offered stage before it."""
        self.visible = visible
        with self._quietly():
            self.pass_select.options = [(f"{i}: {self.ex.stages[i].name}", i) for i in visible]
            self.slider.max = len(visible) - 1
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
        with self._quietly():
            self.slider.value = self.visible.index(index)
            self.pass_select.value = index
        self._draw()

    def _draw(self) -> None:
        stage = self.ex.stages[self.index]
        self.highlighted = changed_names(self.ex, self.index)
        self.summary_html.value = stage_summary(self.ex, self.index)
        self.graph_html.value, self.graph_dot = graph_view(stage.module, self.highlighted)
        self.hlo_html.value = hlo_html(stage.module, self.highlighted)
        names = [i.name for c in stage.module.all_computations for i in c.instructions
                 if i.opcode != "parameter" or c is stage.module.entry]
        keep = self.instruction_select.value
        with self._quietly():
            self.instruction_select.options = names
            self.instruction_select.value = keep if keep in names else names[-1]
        self._describe(self.instruction_select.value)

    def _describe(self, name) -> None:
        module = self.ex.stages[self.index].module
        self.instruction_html.value = instruction_info(self.ex, module, name, self.fusions)


class DecisionsPanel:
    """Every fusion decision, one at a time, on the graph of the stage that made it."""

    def __init__(self, ex):
        self.ex = ex
        self.items = decision_items(ex)
        self.index = -1
        self.highlighted: frozenset[str] = frozenset()
        self.graph_dot = ""
        self.slider, self.prev_button, self.next_button = _stepper("decision")
        self.slider.max = max(len(self.items) - 1, 0)
        self.decision_html = widgets.HTML()
        self.graph_html = widgets.HTML()
        self.list_html = widgets.HTML()
        self.slider.observe(lambda c: self.select(c.new), "value")
        self.widget = widgets.VBox([
            widgets.HBox([self.prev_button, self.slider, self.next_button]), self.decision_html,
            widgets.HBox([widgets.Box([self.graph_html], layout=widgets.Layout(width="55%")),
                          widgets.Box([self.list_html], layout=widgets.Layout(width="45%"))])])
        if self.items:
            self.select(0)
        else:
            self.decision_html.value = "No fusion decisions were recorded."

    def select(self, k: int) -> None:
        k = range(len(self.items))[k]
        if k == self.index:
            return
        self.index = k
        self.slider.value = k
        stage_index, note = self.items[k]
        module, self.highlighted = decision_view(self.ex, stage_index, note)
        stage = self.ex.stages[stage_index].name
        self.decision_html.value = (f"<b>{k + 1} of {len(self.items)}</b> ({html.escape(stage)})"
                                    f": {html.escape(decision_text(note))}")
        self.graph_html.value, self.graph_dot = graph_view(module, self.highlighted)
        self.list_html.value = self._list()

    def _list(self) -> str:
        rows = []
        for k, (_, note) in enumerate(self.items):
            style = f" style='background:{HIGHLIGHT}'" if k == self.index else ""
            rows.append(f"<li{style}>{html.escape(decision_text(note))}</li>")
        return f"<ol style='max-height:560px;overflow:auto'>{''.join(rows)}</ol>"


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
            f"<pre style='{MONO}'>{html.escape(fusion_hlo(self.ex.module, name))}</pre>",
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
        self.widget = widgets.VBox([widgets.HBox([self.repeat, self.run_button, self.progress,
                                                  self.status]), self.result_html])

    def _phase(self, n: int) -> None:
        self.progress.value = n
        self.status.value = self.PHASES[n]

    def run(self) -> None:
        """ex.bench(repeat=...), then its chart and table (bench is synchronous: the progress
        moves between its phases)."""
        self.run_button.disabled = True
        try:
            self._phase(0)
            self.result = self.ex.bench(repeat=self.repeat.value)
            self._phase(1)
            self.result_html.value = (figure_svg(self.result.plot())
                                      + f"<pre>{html.escape(self.result.table())}</pre>")
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
        super().__init__(children=[widgets.VBox() for _ in TITLES], titles=TITLES)
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
    graph_html = property(lambda self: self.stages_panel.graph_html)
    hlo_html = property(lambda self: self.stages_panel.hlo_html)
    decision_slider = property(lambda self: self.decisions_panel.slider)
    bench_button = property(lambda self: self.performance_panel.run_button)

    def __repr__(self) -> str:
        # What a text-only front end prints instead of the widget (the default repr lists
        # every child widget).
        ex = self.exploration
        return (f"<Explorer of {ex.module.name}: {len(ex.stages)} stages, "
                f"{len(ex.decisions)} fusion decisions; backend {ex.backend}>")

    def select_stage(self, index: int) -> None:
        self.stages_panel.select(index)

    def select_decision(self, k: int) -> None:
        self.decisions_panel.select(k)
