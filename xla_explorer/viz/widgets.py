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

Panels other than Stages are built the first time their tab is opened (or asked for). What
they show is made by plain functions of the exploration (viz/panel_views.py); here are only
the widgets that hold it.

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
from pathlib import Path

import anywidget
import ipywidgets as widgets
import traitlets

from .charts import MONO, figure_svg, traffic_or_nothing
from .panel_views import (DECISION_ORDER, DRIVER_TITLE, HIGHLIGHT, allocations_html,
                          arena_note_of, bench_html, changed_names, decision_items, decision_text,
                          decision_view, first_instruction, fusion_hlo, graph_view,
                          highlight_python, hlo_html, instruction_info, instruction_map,
                          instruction_options, stage_summary, visible_stages)

# (line-height: JupyterLab gives widget HTML the height of a widget row, 28px, per line)
TITLES = ("Stages", "Decisions", "Buffers", "Kernels", "Performance")
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
        # It opens where fusion happened, as the saved notebook's explorer does: what a
        # student came to see (and, for a long loop, a graph of kernels, not of every op).
        self._offer(visible_stages(ex, False), select=ex.compiled.opening_stage)

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
        order = widgets.HTML(f"<span style='color:#616161'>{html.escape(DECISION_ORDER)}</span>")
        self.widget = widgets.VBox([
            widgets.HBox([self.prev_button, self.slider, self.next_button]), order,
            self.decision_html, self.view, self.list_html], layout=widgets.Layout(width="100%"))
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
        self.table_html = widgets.HTML(allocations_html(a, arena_note_of(ex)) if a else
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
        self.driver_html: widgets.HTML | None = None
        self.hlo_html: dict[str, widgets.HTML] = {}
        rows = [self._row(name, src) for name, src in ex.kernels.items()]
        if rows and ex.driver:
            self.driver_html = widgets.HTML(highlight_python(ex.driver))
            rows.insert(0, widgets.VBox([widgets.HTML(f"<b>{html.escape(DRIVER_TITLE)}</b>"),
                                         self.driver_html]))
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
        # Called after a benchmark ran: the explorer writes it into its output (`Explorer`).
        self.after_run = None
        self.repeat = widgets.BoundedIntText(value=20, min=1, max=10_000, description="repeat")
        self.run_button = widgets.Button(description="Run benchmark", button_style="primary")
        self.progress = widgets.IntProgress(value=0, min=0, max=len(self.PHASES) - 1)
        self.status = widgets.Label()
        self.result_html = widgets.HTML()
        self.run_button.on_click(lambda _: self.run())
        if not ex.compiled.backend.generates_code:
            self.run_button.disabled = True
            self.status.value = (f'Benchmarks need backend="cpu": the {ex.backend} backend '
                                 'runs the HLO op by op in NumPy.')
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
            if self.after_run is not None:
                self.after_run()
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
        self._displays: list = []  # the outputs showing this explorer (IPython DisplayHandles)
        self.observe(lambda c: c.new is not None and self.panel(TITLES[c.new]),
                     "selected_index")
        self.panel("Stages")

    def panel(self, title: str):
        if title not in self._panels:
            built = PANELS[title](self.exploration)
            if isinstance(built, PerformancePanel):
                built.after_run = self._update_displays
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

    def _ipython_display_(self):
        """Displayed with a display id, so that a benchmark run from the Performance tab is
        written into the output's JSON (`update_display`): a saved notebook keeps it."""
        from IPython.display import display

        handle = display(self._repr_mimebundle_(), raw=True, display_id=True)
        if handle is not None:
            self._displays.append(handle)

    def _update_displays(self) -> None:
        bundle = self._repr_mimebundle_()
        for handle in self._displays:
            handle.update(bundle, raw=True)

    def select_stage(self, index: int) -> None:
        self.stages_panel.select(index)

    def select_decision(self, k: int) -> None:
        self.decisions_panel.select(k)
