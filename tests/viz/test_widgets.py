"""The explorer widget (`ex.show()`), driven as a user drives it: slider, buttons, dropdowns.

What the widget shows is compared with the exploration's own data (its stages, viz.diff of two
stages, ex.decisions, ex.buffers, ex.kernels, the BenchResult), read back from the HTML, DOT
and SVG the widget holds.
"""
import dataclasses
import html
import re
import shutil
import xml.etree.ElementTree as ET

import ipywidgets
import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.ir.printer import format_computation
from xla_explorer.runtime.bench import BenchResult
from xla_explorer.viz.diff import diff
from xla_explorer.viz.format import bytes_text, seconds_text, verdict
from xla_explorer.viz.panel_views import allocations_html, first_instruction
from xla_explorer.viz.widgets import TITLES, Explorer

from tests.test_fusion_programs import PROGRAMS, f32

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot is not installed")
CLONE = re.compile(r"(\.clone\.\d+)+$")


def explore(program, shapes, backend="interpreter", **options):
    rng = np.random.default_rng(0)
    return xe.explore(program, *[f32(rng, *s) for s in shapes], backend=backend, **options)


def exp_then_dot(x, w):
    e = np.exp(x)  # expensive with two consumers: its own kernel's output, read by the dot's
    return np.tanh(e @ w), e.sum()


def chain(x, w, v):
    h = np.exp(x) @ w  # three kernels, two temporaries between them
    return np.tanh(h) @ v


def chain3(x, w, v, u):
    return np.tanh(np.exp(x) @ w) @ v @ u  # its arena slots reuse space: peak < their sum


def unique_scaled(x):
    return np.unique(x) * 2.0, x + 1.0


SMALL = {
    "softmax": (PROGRAMS[2][0], [(4, 8)]),
    "exp_then_dot": (exp_then_dot, [(32, 16), (16, 8)]),
    "chain": (chain, [(16, 8), (8, 12), (12, 4)]),
    "chain3": (chain3, [(16, 8), (8, 64), (64, 4), (4, 32)]),
}
CPU_CASES = ["softmax", "exp_then_dot", "chain"]


@pytest.fixture(scope="module")
def cpu():
    """A few explorations on the cpu backend (kernels compiled once for the module)."""
    return {name: explore(*SMALL[name], backend="cpu") for name in CPU_CASES}


# -- reading back what is drawn ---------------------------------------------------------------

_NODE = re.compile(r"^\s*n\d+ \[(.*)\]\s*$")
_CLUSTER_ATTRS = re.compile(r"^\s*(?:graph \[)?.*label=<<b>([^<]*)</b>.*$")


def thick_in_dot(dot: str) -> set[str]:
    """Names drawn with the thick outline: nodes (tooltip's first line) and fusion clusters
    (label's bold first line)."""
    out = set()
    for line in dot.splitlines():
        if "penwidth=4" not in line:
            continue
        if m := _NODE.match(line):
            out.add(re.search(r'tooltip="([^"\\]*)', m.group(1)).group(1))
        elif m := _CLUSTER_ATTRS.match(line):
            out.add(html.unescape(m.group(1)))
    return out


def thick_in_svg(shown: str) -> set[str]:
    """The same, read from the SVG the widget shows: a node's or a fused computation's
    tooltip names it; its outline's stroke-width is 4."""
    root = ET.fromstring(shown[shown.index("<svg"):shown.rindex("</svg>") + 6])
    ns = {"s": "http://www.w3.org/2000/svg", "x": "http://www.w3.org/1999/xlink"}
    out = set()
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        if g.get("class") not in ("node", "cluster"):
            continue
        a = g.find(".//s:a", ns)
        path = g.find(".//s:path", ns)
        path = g.find(".//s:polygon", ns) if path is None else path
        if a is None or path is None or path.get("stroke-width") != "4":
            continue
        lines = a.get(f"{{{ns['x']}}}title").split("\n")
        out.add(lines[1] if lines[0].startswith("fused computation") else lines[0])
    return out


def marked_lines(hlo_html: str) -> set[str]:
    return set(re.findall(r"data-inst='([^']*)' data-changed='true'", hlo_html))


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


# -- structure --------------------------------------------------------------------------------


def test_show_returns_a_tab_of_five_panels_built_when_opened():
    ex = explore(*SMALL["softmax"])
    w = ex.show()
    assert isinstance(w, Explorer) and isinstance(w, ipywidgets.Tab)
    assert tuple(w.titles) == TITLES == ("Stages", "Decisions", "Buffers", "Kernels",
                                         "Performance")
    assert w.children[0].children and not any(c.children for c in w.children[1:])
    w.selected_index = TITLES.index("Buffers")
    assert w.children[2].children == (w.buffers_panel.widget,)
    assert not w.children[1].children  # still not built
    assert repr(w).startswith("<Explorer of softmax:")


# -- stages -----------------------------------------------------------------------------------


def check_stage(w: Explorer, ex, i: int) -> None:
    """Stage i is shown: its graph with diff(prev, cur).changed thick, its HLO with those lines
    marked."""
    stage = ex.stages[i]
    want = diff(ex.stages[i - 1].module, stage.module).changed if i else frozenset()
    panel = w.stages_panel
    assert panel.index == i and panel.pass_select.value == i
    assert w.stage_slider.value == i and i in panel.visible  # the slider's number is the stage's
    assert panel.highlighted == want
    assert thick_in_dot(panel.graph_dot) == set(want)
    if shutil.which("dot"):
        assert thick_in_svg(w.graph_view.svg) == set(want)
    assert marked_lines(w.graph_view.hlo) == set(want)
    shown = text_of(w.graph_view.hlo.replace("</div>", "\n"))
    for line in stage.module.to_text(metadata=False).splitlines():
        assert line in shown


@pytest.mark.parametrize("program, shapes, kinds", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_every_stage_of_every_program_shows_its_graph_hlo_and_changes(program, shapes, kinds):
    ex = explore(program, shapes)
    w = ex.show()
    for i in range(len(ex.stages)):
        w.select_stage(i)
        check_stage(w, ex, i)


@needs_dot
@pytest.mark.parametrize("name", CPU_CASES)
def test_every_stage_on_the_cpu_backend(cpu, name):
    ex = cpu[name]
    w = ex.show()
    for i in range(len(ex.stages)):
        w.select_stage(i)
        check_stage(w, ex, i)


def test_the_slider_and_buttons_step_through_the_passes_that_changed_something():
    ex = explore(*SMALL["softmax"])
    w = ex.show()
    panel = w.stages_panel
    changed = [0] + [i for i, s in enumerate(ex.stages) if i and s.changed]
    assert len(changed) < len(ex.stages)  # softmax has passes that change nothing
    assert panel.visible == changed and [v for _, v in panel.pass_select.options] == changed
    # It opens at the stage that fused, as the saved notebook's explorer does.
    fused = ex.compiled.fusion_stage
    assert fused and ex.stages[fused].name == "fusion" and panel.index == fused
    assert [v for _, v in w.stage_slider.options] == changed
    assert [label for label, _ in w.stage_slider.options] == [str(i) for i in changed]
    w.stage_slider.value = 0
    assert panel.prev_button.disabled and not panel.next_button.disabled  # at the start
    shown = []
    for i in changed:
        w.stage_slider.value = i
        check_stage(w, ex, i)
        shown.append((w.graph_view.svg, w.graph_view.hlo))
    for before, after in zip(shown, shown[1:]):
        assert before[0] != after[0] and before[1] != after[1]
    assert panel.next_button.disabled and not panel.prev_button.disabled  # at the end
    panel.prev_button.click()
    assert panel.index == changed[-2]
    assert not panel.prev_button.disabled and not panel.next_button.disabled
    panel.next_button.click()
    panel.next_button.click()  # past the end: stays
    assert panel.index == changed[-1]
    for _ in changed:
        panel.prev_button.click()
    assert panel.index == 0 and panel.prev_button.disabled
    panel.pass_select.value = changed[1]
    check_stage(w, ex, changed[1])


def test_unchanged_passes_are_offered_only_when_asked():
    ex = explore(*SMALL["softmax"])
    w = ex.show()
    panel = w.stages_panel
    unchanged = next(i for i, s in enumerate(ex.stages) if i and not s.changed)
    panel.show_unchanged.value = True
    assert panel.visible == list(range(len(ex.stages)))
    w.stage_slider.value = unchanged
    check_stage(w, ex, unchanged)
    assert panel.highlighted == frozenset()
    panel.show_unchanged.value = False  # back to the changed stage before it
    assert unchanged not in panel.visible
    assert panel.index == max(i for i in panel.visible if i < unchanged)
    w.select_stage(unchanged)  # asking for a hidden pass shows the hidden passes
    assert panel.show_unchanged.value and panel.index == unchanged
    check_stage(w, ex, unchanged)


def test_the_summary_counts_what_the_pass_changed_and_lists_its_notes():
    ex = explore(*SMALL["softmax"])
    w = ex.show()
    for i in range(1, len(ex.stages)):
        w.select_stage(i)
        d = diff(ex.stages[i - 1].module, ex.stages[i].module)
        text = text_of(w.stages_panel.summary_html.value)
        assert (f"{i}: {ex.stages[i].name}: {len(d.added)} added, {len(d.removed)} removed, "
                f"{len(d.rewritten)} rewritten; {ex.stages[i].seconds * 1e3:.2f} ms") in text
        for note in ex.stages[i].notes:
            assert str(note) in text


def test_hlo_lines_carry_their_source_line():
    ex = explore(*SMALL["softmax"])
    w = ex.show()
    w.stages_panel.select(0)
    for c in ex.stages[0].module.all_computations:
        for inst in c.instructions:
            if inst.metadata.source_line:
                row = re.search(rf"data-inst='{re.escape(inst.name)}'[^>]*>(.*?)</div>",
                                w.graph_view.hlo).group(1)
                assert text_of(row).startswith(f"line {inst.metadata.source_line}")


@needs_dot
@pytest.mark.parametrize("name", ["exp_then_dot", "chain"])
def test_an_instruction_shows_its_shape_source_fusion_buffer_and_kernel(cpu, name):
    ex = cpu[name]
    w = ex.show()
    panel = w.stages_panel
    w.select_stage(0)
    seen_temporary = False
    for inst in ex.stages[0].module.entry.instructions:
        if inst.opcode in ("parameter", "tuple"):
            continue
        panel.instruction_select.value = inst.name
        text = text_of(panel.instruction_html)
        assert f"shape{inst.shape}" in text and f"dtype{inst.dtype}" in text
        assert f":{inst.metadata.source_line}" in text
        fusion = [f for f in ex.fusions
                  if inst.name in {CLONE.sub("", n) for n in f.instructions}]
        if not fusion:  # a constant folded away, or removed by a later pass
            assert "not computed by a kernel" in text
            continue
        (fusion,) = fusion
        assert f"fusion{fusion}" in text
        kernel = re.sub(r"\W", "_", fusion.name)
        assert kernel in ex.kernels and f"kernel{kernel}" in text
        for b in ex.buffers.buffers:
            if b.instruction == fusion.name:
                slot = ex.buffers.allocation(b)
                if slot is not None:
                    seen_temporary = True
                    assert (f"{b.name} ({b.shape}): allocation {slot.index}, offset "
                            f"{slot.offset}, size {slot.size}") in text
                else:
                    assert f"{b.name} ({b.shape}): {b.category}, not in the arena" in text
    assert seen_temporary
    w.select_stage(-1)  # a kernel of the final program is its own fusion
    for f in ex.fusions:
        panel.instruction_select.value = f.name
        assert f"fusion{f}" in text_of(panel.instruction_html)


# -- decisions --------------------------------------------------------------------------------


@needs_dot
@pytest.mark.parametrize("program, shapes", [(p, s) for p, s, _ in PROGRAMS[:6]] + [SMALL["chain"]],
                         ids=[p[0].__name__ for p in PROGRAMS[:6]] + ["chain"])
def test_the_decision_stepper_highlights_producer_and_consumer(program, shapes):
    ex = explore(program, shapes)
    w = ex.show()
    panel = w.decisions_panel
    assert [n for _, n in panel.items] == ex.decisions
    assert (w.decision_slider.min, w.decision_slider.max) == (1, len(ex.decisions))
    for k, d in enumerate(ex.decisions):
        w.decision_slider.value = k + 1  # numbered from 1, as "3 of 12" above the graph
        assert panel.index == k
        assert panel.prev_button.disabled == (k == 0)
        assert panel.next_button.disabled == (k == len(ex.decisions) - 1)
        text = text_of(panel.decision_html.value)
        assert d.reason in text and ("[taken]" if d.fused else "[refused]") in text
        thick = {CLONE.sub("", n) for n in thick_in_dot(panel.graph_dot)}
        assert thick == {d.producer, d.consumer}
        assert {CLONE.sub("", n) for n in thick_in_svg(panel.view.svg)} == thick
        current = re.findall(r"<li style='background[^>]*>(.*?)</li>", panel.list_html.value)
        assert [text_of(c) for c in current] == [f"[{'taken' if d.fused else 'refused'}] {d}"]
    w.select_decision(0)
    panel.next_button.click()
    assert panel.index == min(1, len(ex.decisions) - 1)


@needs_dot
def test_under_auto_clustering_the_cluster_notes_are_decisions_too():
    ex = xe.explore(unique_scaled, np.array([3.0, 1.0, 3.0, 2.0], np.float32),
                    backend="interpreter", autocluster=True)
    w = ex.show()
    panel = w.decisions_panel
    notes = ex.stage("auto-cluster").notes
    assert notes and all(n in [m for _, m in panel.items] for n in notes)
    assert len(panel.items) == len(notes) + len(ex.decisions)
    for k, (i, note) in enumerate(panel.items):
        if ex.stages[i].name != "auto-cluster" or not note.instructions:
            continue
        w.select_decision(k)
        assert {CLONE.sub("", n) for n in thick_in_dot(panel.graph_dot)} == set(note.instructions)


# -- buffers, kernels -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["softmax", "exp_then_dot", "chain", "chain3"])
def test_the_buffer_tab_states_the_assignments_numbers(name):
    ex = explore(*SMALL[name])
    a = ex.buffers
    panel = ex.show().buffers_panel
    text = text_of(panel.table_html.value)
    m = re.search(r"arena peak (\d+) bytes; lower bound (\d+) bytes", text)
    assert (int(m.group(1)), int(m.group(2))) == (a.peak_bytes, a.lower_bound_bytes)
    rows = re.findall(r"<tr><td[^>]*>(\d+)</td><td[^>]*>(\d+)</td><td[^>]*>(\d+)</td>"
                      r"<td[^>]*>\[(\d+), (\d+)\]</td><td[^>]*>([^<]*)</td></tr>",
                      panel.table_html.value)
    assert rows == [(str(x.index), str(x.offset), str(x.size), str(x.start), str(x.end),
                     ", ".join(v.name for v in x.values)) for x in a.allocations]
    assert panel.plot_html.value.startswith("<svg")
    if name == "chain3":
        assert len(rows) == 3 and 0 < a.peak_bytes < a.temporary_bytes


def test_the_peak_and_the_lower_bound_are_not_confused():
    a = explore(*SMALL["chain3"]).buffers
    wider = dataclasses.replace(a, peak_bytes=a.peak_bytes + 64)
    text = text_of(allocations_html(wider))
    assert (f"arena peak {a.peak_bytes + 64} bytes; lower bound {a.lower_bound_bytes} bytes "
            f"(fragmentation {wider.fragmentation_bytes} bytes)") in text


@pytest.mark.parametrize("name", CPU_CASES)
def test_the_kernel_tab_shows_every_kernel_beside_its_fusion(cpu, name):
    ex = cpu[name]
    panel = ex.show().kernels_panel
    assert ex.kernels and set(panel.source_html) == set(ex.kernels) == set(panel.hlo_html)
    for kernel, source in ex.kernels.items():
        value = panel.source_html[kernel].value
        assert 'style="color' in value  # highlighted, with inline colours
        assert source.strip() in text_of(value)
    for f in ex.fusions:
        kernel = re.sub(r"\W", "_", f.name)
        inst = ex.module.entry.get(f.name)
        hlo = text_of(panel.hlo_html[kernel].value)
        if inst.opcode == "fusion":
            assert format_computation(ex.module.computation(inst.attr("calls")),
                                      metadata=False) in hlo
        else:
            assert hlo.startswith(f"{f.name} = ")


def test_the_interpreter_has_no_kernels_and_says_so():
    panel = explore(*SMALL["softmax"]).show().kernels_panel
    assert not panel.source_html
    assert 'backend="cpu"' in html.unescape(panel.widget.children[0].value)


# -- performance ------------------------------------------------------------------------------


def test_the_performance_tab_shows_bytes_moved_before_any_benchmark():
    """Eager op by op against fused, computed by hand here: softmax of an 8x40 float32 array
    reads it once and writes it once in its one row kernel (2 x 1280 bytes, 1.25 KiB each)."""
    x = np.ones((8, 40), np.float32)

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    panel = xe.explore(softmax, x, backend="interpreter").show().performance_panel
    text = html.unescape(re.sub(r"<[^>]+>", " ", panel.traffic_html.value))
    assert "not measured" in text
    assert re.search(r"compiled\s+1 kernel\s+1.25 KiB\s+1.25 KiB\s+2.5 KiB", text), text
    assert re.search(r"eager NumPy\s+\d+ ops", text)


def test_the_benchmark_button_fills_the_performance_tab(monkeypatch):
    ex = explore(*SMALL["softmax"], backend="cpu")
    panel = ex.show().performance_panel
    assert panel.result is None and panel.result_html.value == ""
    seen = {}
    real = ex.bench

    def bench(*args, **kw):
        seen["while running"] = (panel.progress.value, panel.status.value,
                                 panel.run_button.disabled)
        seen["repeat"] = kw["repeat"]
        seen["result"] = real(*args, **kw)
        return seen["result"]

    monkeypatch.setattr(ex, "bench", bench)
    panel.repeat.value = 3
    panel.run_button.click()
    assert seen["repeat"] == 3
    assert seen["while running"] == (0, "warming up and timing", True)
    result = seen["result"]
    assert isinstance(result, BenchResult) and panel.result is result
    assert panel.progress.value == panel.progress.max and panel.status.value == "done"
    assert not panel.run_button.disabled
    shown = html.unescape(panel.result_html.value)
    assert "<svg" in shown
    assert (f"compiled against eager NumPy: {verdict(result.speedup)} (medians over 3"
            in text_of(shown))
    for t in (result.eager, result.compiled):
        assert seconds_text(t.median) in shown and bytes_text(t.peak_bytes) in shown


def test_the_benchmark_needs_the_cpu_backend():
    panel = explore(*SMALL["softmax"]).show().performance_panel
    assert panel.run_button.disabled and 'backend="cpu"' in panel.status.value


def test_a_failing_benchmark_is_reported_in_the_panel(monkeypatch):
    ex = explore(*SMALL["softmax"], backend="cpu")
    panel = ex.show().performance_panel

    def broken(**kw):
        raise RuntimeError("no timer")

    monkeypatch.setattr(ex, "bench", broken)
    panel.run_button.click()
    assert "RuntimeError: no timer" in panel.status.value and not panel.run_button.disabled


# -- the three programs, end to end ------------------------------------------------------

def row_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def adam_step(w, g, m, v):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * np.abs(v) + 0.001 * g * g  # (the test feeds random v: keep it positive)
    w = w - 0.001 * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-8)
    return w, m, v


def attention(q, k, v):
    s = q @ k.T / np.float32(4.0)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v


@needs_dot
@pytest.mark.parametrize("program, shapes", [
    (row_softmax, [(16, 32)]), (adam_step, [(64,)] * 4), (attention, [(8, 16)] * 3)],
    ids=["softmax", "adam", "attention"])
def test_show_steps_through_every_stage_decision_and_buffer_and_export_agrees(
        program, shapes, tmp_path):
    ex = explore(program, shapes, backend="cpu")
    w = ex.show()
    for i in range(len(ex.stages)):
        w.select_stage(i)
        check_stage(w, ex, i)
    panel = w.decisions_panel
    for k, d in enumerate(ex.decisions):
        w.select_decision(k)
        assert {CLONE.sub("", n) for n in thick_in_dot(panel.graph_dot)} == {d.producer,
                                                                             d.consumer}
    a = ex.buffers
    text = text_of(w.buffers_panel.table_html.value)
    assert f"arena peak {a.peak_bytes} bytes; lower bound {a.lower_bound_bytes} bytes" in text
    perf = w.performance_panel
    perf.repeat.value = 3
    perf.run_button.click()
    result = perf.result
    assert result is ex.last_bench
    ex.save_html(tmp_path / "x.html")
    page = (tmp_path / "x.html").read_text()
    assert f'"speedup":{result.speedup!r}' in page and f'"peak_bytes":{a.peak_bytes}' in page
    assert f"against eager NumPy: {verdict(result.speedup)}" in text_of(perf.result_html.value)


def test_a_benchmark_run_from_the_explorer_is_written_into_its_output(monkeypatch):
    """The explorer is displayed with a display id; after "Run benchmark" its output is
    updated, so the saved notebook's JSON has the benchmark (the extension shows it)."""
    import IPython.display

    from xla_explorer.viz import mime

    class Handle:
        def __init__(self, bundle):
            self.bundles = [bundle]

        def update(self, bundle, raw=False):
            assert raw
            self.bundles.append(bundle)

    handles: list[Handle] = []

    def display(bundle, raw=False, display_id=None):
        assert raw and display_id is True
        handles.append(Handle(bundle))
        return handles[-1]

    monkeypatch.setattr(IPython.display, "display", display)
    ex = explore(exp_then_dot, [(64, 32), (32, 8)], backend="cpu")
    w = ex.show()
    w._ipython_display_()
    (handle,) = handles
    assert handle.bundles[0][mime.MIME_TYPE]["bench"] is None
    w.performance_panel.repeat.value = 3
    w.bench_button.click()
    assert len(handle.bundles) == 2
    saved = handle.bundles[1][mime.MIME_TYPE]["bench"]
    assert saved == mime.bench_dict(ex.last_bench) and saved is not None
    assert "application/vnd.jupyter.widget-view+json" in handle.bundles[1]


# -- the graph view: selection, first choice, copies, room --------------------------------------

SVG_NS = {"s": "http://www.w3.org/2000/svg", "x": "http://www.w3.org/1999/xlink"}


def svg_titles(svg: str) -> dict[str, str]:
    """{<title> of each node or fusion cluster: the instruction its tooltip names}."""
    root = ET.fromstring(svg[svg.index("<svg"):])
    out = {}
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        a = g.find(".//s:a", SVG_NS)
        if g.get("class") not in ("node", "cluster") or a is None:
            continue
        lines = a.get(f"{{{SVG_NS['x']}}}title").split("\n")
        if g.get("class") == "cluster" and not lines[0].startswith("fused computation"):
            continue  # an auto-cluster's region: no instruction
        name = lines[1] if lines[0].startswith("fused computation") else lines[0]
        out[g.find("s:title", SVG_NS).text] = name
    return out


@needs_dot
@pytest.mark.parametrize("program, shapes", [SMALL["softmax"], SMALL["chain"]],
                         ids=["softmax", "chain"])
def test_clicking_a_node_or_an_hlo_line_selects_its_instruction(program, shapes):
    ex = explore(program, shapes)
    w = ex.show()
    panel, view = w.stages_panel, w.graph_view
    for i in panel.visible:
        w.select_stage(i)
        module = ex.stages[i].module
        # Every node and fusion cluster of the SVG is mapped to the instruction it draws.
        assert svg_titles(view.svg) == view.nodes
        lines = dict(re.findall(r"data-inst='([^']+)'[^>]*>(.*?)</div>", view.hlo))
        for name in view.nodes.values():
            view.selected = name  # what the front end sets on a click
            assert panel.instruction_select.value == name
            text = text_of(view.info)
            inst = module.entry.get(name) if name in {x.name for x in module.entry.instructions} \
                else None
            assert f"instruction{name} = " in text
            if inst is not None:
                assert f"shape{inst.shape}" in text
            assert name in lines  # a click on the node's line selects the same name
        # The reverse: choosing from the list (or a line) moves the selection on the graph.
        last = panel.instruction_select.options[-1][1]
        panel.instruction_select.value = last
        assert view.selected == last and f"instruction{last} = " in text_of(view.info)


def test_selecting_something_that_is_not_an_instruction_changes_nothing():
    ex = explore(*SMALL["softmax"])
    w = ex.show()
    before = (w.graph_view.selected, w.graph_view.info)
    w.stages_panel.select_instruction("no-such-instruction")
    assert (w.graph_view.selected, w.graph_view.info) == before


@pytest.mark.parametrize("program, shapes, kinds", PROGRAMS[:8], ids=[p[0].__name__ for p in PROGRAMS[:8]])
def test_the_first_selection_computes_something(program, shapes, kinds):
    ex = explore(program, shapes)
    w = ex.show()
    for i in range(len(ex.stages)):
        w.select_stage(i)
        module = ex.stages[i].module
        chosen = module.entry.get(w.graph_view.selected)
        assert chosen.opcode not in ("tuple", "parameter", "get-tuple-element", "constant")
        assert "not computed by a kernel" not in text_of(w.graph_view.info), (i, chosen.name)
        changed = changed_on(ex, i)
        computing = [x.name for x in module.entry.instructions
                     if x.opcode not in ("tuple", "parameter", "get-tuple-element", "constant")]
        if changed & set(computing):  # what the pass did, first
            assert chosen.name == next(n for n in computing if n in changed)


def test_the_students_choice_stays_selected_while_the_stage_has_it():
    ex = explore(*SMALL["chain"])
    w = ex.show()
    panel = w.stages_panel
    module = ex.stages[0].module
    chosen = next(i.name for i in module.entry.instructions if i.opcode == "exponential")
    w.graph_view.selected = chosen  # a click on its node
    for i in panel.visible[1:]:
        w.select_stage(i)
        names = {n for _, n in panel.instruction_select.options}
        if chosen in names:
            assert w.graph_view.selected == chosen
        else:
            assert w.graph_view.selected == first_instruction(ex.stages[i].module,
                                                              changed_on(ex, i))


def changed_on(ex, i):
    return diff(ex.stages[i - 1].module, ex.stages[i].module).changed if i else frozenset()


def shared_sum(x, y):
    a = x + y  # cheap, read by two reductions and returned: copied into both kernels
    return a.sum(), (a * a).sum(), a


@needs_dot
def test_copies_made_by_fusion_read_as_their_traced_name_with_a_mark():
    ex = explore(shared_sum, [(16,), (16,)])
    fusion = ex.stages.index(ex.stage("fusion"))
    module = ex.stages[fusion].module
    clones = [i.name for c in module.computations for i in c.instructions if ".clone." in i.name]
    assert clones
    w = ex.show()
    w.select_stage(fusion)
    view = w.graph_view
    for clone in clones:
        traced = CLONE.sub("", clone)
        # On the graph: the traced name and a mark, the full name in the tooltip.
        assert f"<b>{traced} (copy)</b>" in w.stages_panel.graph_dot
        assert f'tooltip="{clone}\\nshape' in w.stages_panel.graph_dot
        # In the list: which kernel holds this copy.
        label = dict((v, k) for k, v in w.stages_panel.instruction_select.options)[clone]
        assert label.startswith(f"{traced} (copy) in ")
        # In the HLO: the real text, the suffix dimmed.
        assert re.search(rf"{re.escape(traced)}<span class='xe-clone'[^>]*>"
                         rf"{re.escape(clone[len(traced):])}</span>", view.hlo)
        view.selected = clone
        assert f"copy of{traced}: fusion copies" in text_of(view.info)


def test_a_stage_with_many_notes_folds_them():
    ex = explore(*PROGRAMS[3][:2])  # layernorm
    w = ex.show()
    i = next(i for i, s in enumerate(ex.stages) if len(s.notes) > 6)
    w.select_stage(i)
    summary = w.stages_panel.summary_html.value
    assert f"<details><summary>the {len(ex.stages[i].notes)} notes</summary>" in summary
    for note in ex.stages[i].notes:
        assert html.escape(str(note)) in summary


def test_the_view_ships_its_front_end():
    view = explore(*SMALL["softmax"]).show().graph_view
    esm, css = str(view._esm), str(view._css)
    assert "export default { render }" in esm and "viewBox" in esm
    assert 'model.set("selected"' in esm and ".xe-selected" in css


# -- performance: the verdict, small arrays, units ------------------------------------------------


def fake_bench(eager_s, compiled_s, eager_peak=1434, compiled_peak=512, arena=0):
    from xla_explorer.runtime.bench import Timing

    return BenchResult("f", Timing(eager_s, eager_s * 0.9, eager_s * 1.1, eager_peak),
                       Timing(compiled_s, compiled_s * 0.9, compiled_s * 1.1, compiled_peak),
                       repeat=5, arena_bytes=arena, predicted_peak_bytes=arena + compiled_peak,
                       compile_seconds=0.2)


def test_a_slower_program_says_slower_and_why_small_arrays_do_not_pay():
    from xla_explorer.viz.panel_views import bench_html

    slow = fake_bench(10e-6, 12.2e-6)
    text = text_of(bench_html(slow, elements=64))
    assert f"slower ({10 / 12.2:.2f}x)" in text and "faster" not in text
    assert "The inputs hold 64 elements in all and eager NumPy takes only 10.0 µs" in text
    fast = text_of(bench_html(fake_bench(10e-6, 2e-6)))
    assert "5.00x faster" in fast and "fixed cost" not in fast
    # Slower, but not because the arrays are small: no such excuse.
    big = text_of(bench_html(fake_bench(5e-3, 6e-3)))
    assert "slower (0.83x)" in big and "fixed cost" not in big


def test_memory_is_stated_in_the_unit_that_fits():
    from xla_explorer.viz.charts import bench_figure

    assert bytes_text(1434) == "1.4 KiB" and bytes_text(512) == "512 bytes"
    assert bytes_text(3 * 2**20 + 2**19) == "3.5 MiB" and bytes_text(2**30) == "1 GiB"
    fig = bench_figure(fake_bench(10e-6, 12e-6, eager_peak=1434, compiled_peak=900))
    assert "KiB" in fig.axes[1].get_ylabel() and "µs" in fig.axes[0].get_ylabel()
    assert "slower (0.83x)" in fig.axes[0].get_title()
    heights = [bar.get_height() for bar in fig.axes[1].patches]  # eager; compiled's arena, call
    assert heights == pytest.approx([1434 / 1024, 0, 900 / 1024])
    fig = bench_figure(fake_bench(1e-3, 5e-4, eager_peak=40 * 2**20, compiled_peak=2**20))
    assert "MiB" in fig.axes[1].get_ylabel() and "2.00x faster" in fig.axes[0].get_title()


def test_the_memory_shown_counts_the_arena_and_says_when_compiled_holds_more():
    from xla_explorer.viz.charts import bench_figure
    from xla_explorer.viz.panel_views import bench_html

    # A call allocating 64 KiB on an arena of 2 MiB held between calls, against eager's 1 MiB:
    # the compiled program holds twice as much, which a bar of the call alone would hide.
    b = fake_bench(1e-3, 5e-4, eager_peak=2**20, compiled_peak=2**16, arena=2 * 2**20)
    assert b.compiled_held_bytes == 2 * 2**20 + 2**16
    fig = bench_figure(b)
    eager, arena, call = fig.axes[1].patches
    assert (eager.get_height(), arena.get_height()) == pytest.approx((1, 2))
    assert (call.get_y(), call.get_height()) == pytest.approx((2, 1 / 16))
    assert fig.axes[1].get_title() == "compiled holds more memory than eager NumPy (2.06x)"
    shown = bench_html(b)
    assert "compiled holds more memory than eager NumPy (2.06x)" in shown
    assert "2.06 MiB (arena 2 MiB, kept between calls, + 64 KiB per call)" in shown
    assert "compiled holds more" in b.table()
    less = fake_bench(1e-3, 5e-4, eager_peak=4 * 2**20, compiled_peak=2**20, arena=2**20)
    assert less.memory_verdict == "compiled holds 2.00x less memory than eager NumPy"


# -- what a notebook is sent --------------------------------------------------------------------


def test_the_explorer_is_one_output_with_the_json_and_static_html(monkeypatch):
    import IPython.display
    from IPython.core.interactiveshell import InteractiveShell

    from xla_explorer.viz import mime

    ex = explore(*SMALL["softmax"])
    w = ex.show()
    # Displayed, the explorer shows its bundle itself, with a display id (a benchmark run
    # later updates that output): IPython's formatter then has nothing left to add.
    shown = []
    monkeypatch.setattr(IPython.display, "display",
                        lambda bundle, raw=False, display_id=None: shown.append(bundle))
    assert InteractiveShell.instance().display_formatter.format(w)[0] == {}
    (data,) = shown
    assert set(data) == {"application/vnd.jupyter.widget-view+json", mime.MIME_TYPE,
                         "text/html", "text/plain"}
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == w.model_id
    assert data[mime.MIME_TYPE] == mime.payload(ex)
    mime.validate(data[mime.MIME_TYPE])
    assert data["text/html"].startswith('<div class="xe-report">')
    assert "<svg" in data["text/html"] or "Graphviz" in data["text/html"]
    assert data["text/plain"] == repr(w)
    # An Exploration shown as itself: the same JSON and HTML, and IPython's text.
    data, _ = InteractiveShell.instance().display_formatter.format(ex)
    assert set(data) == {mime.MIME_TYPE, "text/html", "text/plain"}
    assert data["text/plain"] == repr(ex)


def test_the_buffers_tab_says_what_the_executable_allocates_for_the_arena():
    from xla_explorer.viz.html import fragment
    from xla_explorer.viz.mime import payload
    from xla_explorer.viz.format import arena_note
    from xla_explorer.viz.panel_views import arena_note_of

    rng = np.random.default_rng(0)
    x, w = rng.random((4, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    ex = xe.explore(lambda x, w: np.tanh(np.maximum(x @ w, 0) @ w), x, w, backend="cpu")
    # The CPU's assignment places the products' packed copies of w (scratch, live at their
    # own step) with the one temporary between them: its arena is the executable's, one
    # figure on every tab, and the scratch is a row of the Buffers tab's table.
    a, exe = ex.buffers, ex.executable
    scratch = [x for x in a.allocations if any(v.category == "scratch" for v in x.values)]
    assert len(scratch) == 2 and all(x.size >= w.nbytes for x in scratch)
    assert exe.arena_bytes == a.peak_bytes >= w.nbytes + x.shape[0] * w.shape[1] * 4
    note = arena_note_of(ex)
    assert note == f"the executable allocates this arena, {bytes_text(a.peak_bytes)}, once"
    table = ex.show().buffers_panel.table_html.value
    assert html.escape(note) in table and all(v.name in table for x in scratch for v in x.values)
    assert payload(ex)["buffers"]["arena_note"] == note and html.escape(note) in fragment(ex)
    # Where the executable's arena is larger (scratch placed after the assignment), it says
    # by how much and why, beside the assignment's figure.
    assert arena_note(1000, 1064) == (
        "the executable allocates 1.04 KiB once: these 1000 bytes, then 64 bytes of scratch "
        "space its kernels take while they run, placed after the assignment (a while loop's "
        "body, a reduction's partials on a GPU)")
    interpreted = xe.explore(lambda x: np.tanh(x) * 2 + 1, x, backend="interpreter")
    assert arena_note_of(interpreted).startswith("the executable allocates this arena")
