"""The extension in a real JupyterLab and headless Chromium (Python Playwright, the Debian
binary): one server, one page, one test running the checks below in order (each a function,
all run even when one fails).

- a notebook saved with outputs, opened with no kernel, shows the whole explorer (stages,
  decisions, buffers, kernels, charts), and no ipywidgets error;
- stages and decisions step by buttons and by j/k; a clicked node's panel names its fusion,
  buffer and kernel; the SVG draws every fusion the bundle names;
- every bundle of the test corpus validates against the schema and renders with no console
  error;
- the dark theme is readable (contrast measured) and screenshotted;
- precedence: with a live kernel the output shows the ipywidgets explorer; after the kernel
  restarts and the page reloads, the same (trusted, saved) output shows the renderer.

The stage-step redraw time of the attention block and the Adam step is measured and printed
(`-s` shows it), not asserted. XLA_EXPLORER_DOCS_SCREENSHOTS=1 writes docs/renderer-light.png
and docs/renderer-dark.png; otherwise the screenshots go to a temporary directory.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import tempfile
from pathlib import Path

import pytest

from xla_explorer.viz import mime

from .bundles import corpus, issue_programs, large_program, payloads
from .notebooks import live_explorers_notebook, live_notebook, saved_notebook

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30_000
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def load_screenshot():
    spec = importlib.util.spec_from_file_location("screenshot", ROOT / "scripts" / "screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


S = load_screenshot()


def needs_browser() -> str:
    try:
        chromium = S.find_chromium(None)
        import playwright  # noqa: F401
    except (S.Missing, ImportError) as e:
        if CI:
            pytest.fail(f"the browser tests need Chromium and Playwright under CI: {e}")
        pytest.skip(f"no browser here: {e}")
    built = ROOT / "xla_explorer" / "labextension" / "package.json"
    if not built.exists():
        pytest.fail("the extension is not built: run `make setup`")
    return chromium


# -- the module's one JupyterLab and page ------------------------------------------------------


class Lab:
    def __init__(self, page, url, token, data, shots, root):
        self.page, self.url, self.token, self.data, self.shots = page, url, token, data, shots
        self.root = root  # the notebooks' folder JupyterLab serves
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))

    def open(self, name: str, *, no_kernel: bool = False) -> None:
        page = self.page
        page.goto(f"{self.url}/lab/tree/{name}?token={self.token}&reset", timeout=TIMEOUT)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=TIMEOUT)
        if no_kernel:
            # No kernelspec in the notebook: JupyterLab asks which kernel; a person reopening a
            # notebook to read it can answer "No Kernel".
            dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
            dialog.get_by_role("button", name="No Kernel", exact=True).click()
            dialog.wait_for(state="detached")
        page.evaluate("""async () => {
            const app = window.jupyterapp;
            if (app.shell.leftCollapsed === false) await app.commands.execute('application:toggle-left-area');
        }""")

    def explorer(self, program: str):
        """The explorer in the output of the cell `# <program>`."""
        cell = self.page.locator(".jp-CodeCell").filter(
            has=self.page.locator(".jp-InputArea-editor",
                                  has_text=re.compile(rf"^\s*# {re.escape(program)}\s*$")))
        return cell.locator(".xe-explorer")

    def tab(self, ex, name: str) -> None:
        ex.locator(f".xe-tab[data-tab={name}]").click()
        ex.locator(f".xe-panel[data-tab={name}]").wait_for(state="visible")

    def notebook_text(self) -> str:
        return self.page.evaluate("document.querySelector('.jp-Notebook')?.innerText ?? ''")

    def active_cell(self) -> int | None:
        """The notebook's active cell: j and k on an explorer must not move it."""
        return self.page.evaluate(
            "window.jupyterapp.shell.currentWidget.content.activeCellIndex")


class LiveNotebook:
    """The same bundles' programs shown by a running kernel (`ex.show()`, one cell each, in
    `data`'s order): the live widget, whose front end is the extension's explorer."""

    def __init__(self, lab: "Lab", names: list[str]):
        self.page, self.data, self.shots, self.lab = lab.page, lab.data, lab.shots, lab
        self.errors = lab.errors
        self.names = names

    def explorer(self, program: str):
        return self.page.locator(".jp-OutputArea-output .xe-explorer").nth(
            self.names.index(program))

    def tab(self, ex, name: str) -> None:
        Lab.tab(self, ex, name)

    def active_cell(self) -> int | None:
        return Lab.active_cell(self)


class StaticPage:
    """`ex.save_html`'s explorer, every bundle of `data` on one page opened from disk (each in
    a `<section data-program=...>`): the checks below run on it as on JupyterLab's."""

    def __init__(self, page, path: Path, data: dict, shots: Path):
        self.page, self.data, self.shots = page, data, shots
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.goto(path.as_uri(), timeout=TIMEOUT)

    def explorer(self, program: str):
        return self.page.locator(f"section[data-program='{program}'] .xe-explorer")

    def tab(self, ex, name: str) -> None:
        Lab.tab(self, ex, name)

    def active_cell(self) -> None:
        return None


@pytest.fixture(scope="module")
def lab():
    chromium = needs_browser()
    explorations = corpus()
    issue = issue_programs()
    bench = {name: ex.bench(repeat=3) for name, ex in issue.items()}
    issue["adam_step"].compare_xla(repeat=3)  # the XLA tab's comparison, saved in its bundle
    data = {"corpus": payloads(explorations), "issue": payloads(issue, bench),
            "large": payloads(large_program())}
    # The contract's optional "traffic" key (bytes moved, computed), on one bundle: made-up
    # numbers the Performance tab must show as given.
    data["issue"]["adam_step"]["traffic"] = TRAFFIC
    with tempfile.TemporaryDirectory(prefix="xla-ext-browser-") as t:
        tmp = Path(t)
        root = tmp / "notebooks"
        root.mkdir()
        saved_notebook(root / "saved.ipynb", {**data["issue"], **data["large"]})
        saved_notebook(root / "corpus.ipynb", data["corpus"], widget=False)
        live_notebook(root / "live.ipynb")
        shots = ROOT / "docs" if os.environ.get("XLA_EXPLORER_DOCS_SCREENSHOTS") else tmp
        with S.jupyter_lab(root, tmp) as (url, token), \
                S.chromium_page(tmp, chromium, width=1280, height=1500) as page:
            page.set_default_timeout(TIMEOUT)
            yield Lab(page, url, token, data, shots, root)


# -- a saved notebook, no kernel ---------------------------------------------------------------

TRAFFIC = {"computed": True,
           "eager": {"read_bytes": 3 * 1024, "write_bytes": 2 * 1024,
                     "ops": [{"name": "multiply.1", "read_bytes": 3 * 1024,
                              "write_bytes": 2 * 1024}]},
           "fused": {"read_bytes": 1024, "write_bytes": 512,
                     "kernels": [{"name": "fusion.2", "read_bytes": 1024, "write_bytes": 512}]}}

MODEL_NOT_FOUND = re.compile(r"Error displaying widget|model not found", re.I)


def check_saved_notebook_with_no_kernel_shows_the_whole_explorer(lab):
    lab.open("saved.ipynb", no_kernel=True)
    page = lab.page
    page.get_by_text(re.compile(r"No Kernel \| Idle|No Kernel")).first.wait_for()
    for name in ("attention", "adam_step", "long_chain"):
        lab.explorer(name).locator(".xe-graph svg g.node").first.wait_for()
    assert page.locator(".xe-explorer").count() == 3
    assert page.locator(".jp-OutputArea-output .jupyter-widgets").count() == 0
    assert not MODEL_NOT_FOUND.search(lab.notebook_text())
    assert page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session") is None
    check_the_whole_explorer(lab)


def check_the_whole_explorer(lab):
    """The attention block's explorer, tab by tab: where it opens, the buffers, the kernels in
    order, the performance numbers; then a screenshot."""
    check_opening_stage_buffers_and_kernels(lab)
    check_performance_numbers(lab)


def check_opening_stage_buffers_and_kernels(lab):
    """Where the attention block's explorer opens, its buffers and its kernels in order: all
    read from the bundle (a live kernel's bundle is the same: the same program and inputs)."""
    payload = lab.data["issue"]["attention"]
    ex = lab.explorer("attention")
    # Stages: the first view is the fusion stage, its HLO with the changed lines marked.
    stage = next(s for s in payload["stages"] if s["name"] == "fusion")
    assert ex.get_attribute("data-stage") == str(stage["index"])
    marked = ex.locator(".xe-panel[data-tab=Stages] .xe-line-changed").evaluate_all(
        "rows => rows.map(r => r.dataset.name)")
    assert set(marked) == set(stage["changed_nodes"])

    lab.tab(ex, "Buffers")
    # What the executable allocates for the arena (scratch added), where the arena is shown.
    note = payload["buffers"]["arena_note"]
    assert note.startswith("the executable allocates")
    assert ex.locator(".xe-arena-note").inner_text() == note
    allocations = payload["buffers"]["allocations"]
    slots = ex.locator("rect.xe-slot")
    assert slots.count() == len(allocations)
    slots.nth(len(allocations) - 1).hover()
    assert allocations[-1]["values"][0] in ex.locator(".xe-tip").inner_text()

    lab.tab(ex, "Kernels")
    # In schedule order (the fusions' order), not the saved JSON's sorted key order.
    in_order = [re.sub(r"\W", "_", f["name"]) for f in payload["fusions"]]
    assert sorted(in_order) == sorted(payload["kernels"])
    assert ex.locator(".xe-kernel-box summary").all_inner_texts() == in_order
    assert ex.locator(".xe-kernel .xe-tok-kw").count() > 0  # coloured, as text nodes
    # Beside the first kernel, the HLO it came from: the lone op's line, or its fusion's
    # computation, metadata left out.
    first = payload["fusions"][0]
    came_from = ex.locator(".xe-kernel-box[open] .xe-kernel-hlo").inner_text()
    assert all(i in came_from for i in first["instructions"]) and "metadata" not in came_from
    # Above them, open, the driver that launches them in that order.
    assert payload["driver"] and ex.locator(".xe-driver-box[open] .xe-driver").inner_text() \
        .strip() == payload["driver"].strip()

    lab.tab(ex, "Stages")


def check_performance_numbers(lab):
    """The Performance tab says what the bundle's benchmark measured; then a node is clicked
    and the explorer screenshotted."""
    payload = lab.data["issue"]["attention"]
    ex = lab.explorer("attention")
    stage = next(s for s in payload["stages"] if s["name"] == "fusion")
    lab.tab(ex, "Performance")
    bench = payload["bench"]
    ratio = bench["eager"]["median"] / bench["compiled"]["median"]
    words = ex.locator(".xe-panel[data-tab=Performance]").inner_text()
    assert ("faster" in words) == (ratio >= 1.05) and ("slower" in words) == (ratio <= 0.95)
    assert "Time per call (measured)" in words and "Memory held during a call" in words
    # What compiled holds counts its arena, and the sentence says which holds more.
    held = bench["arena_bytes"] + bench["compiled"]["peak_bytes"]
    assert bench["compiled_held_bytes"] == held and bench["memory_verdict"] in words
    assert ("holds more memory" in words) == (held > bench["eager"]["peak_bytes"])
    # time (2 bars) and memory (4, measured and predicted); bytes moved (computed), where the
    # bundle has them: 4
    traffic_bars = 4 if payload.get("traffic") else 0
    assert ex.locator(".xe-panel[data-tab=Performance] rect.xe-bar").count() == 6 + traffic_bars

    lab.tab(ex, "Stages")
    ex.locator(f".xe-panel[data-tab=Stages] g.node[data-name='{inner_node(payload, stage)[1]}']").click()
    shoot(lab, ex, "renderer-light.png" if isinstance(lab, Lab) else "static-page.png")
    assert lab.errors == []


def last_shown(payload) -> dict:
    """The last stage the stepper shows: passes that changed nothing are hidden by default."""
    return [s for s in payload["stages"] if s["changed"] or s["index"] == 0][-1]


def shoot(lab, ex, name: str) -> None:
    """A screenshot of the explorer once the stage morph has finished (450 ms, 150 ms delay)."""
    lab.page.wait_for_timeout(800)
    ex.scroll_into_view_if_needed()
    ex.screenshot(path=str(lab.shots / name))


def stage_step(lab, ex, button: str = ".xe-next", key: str | None = None) -> dict:
    """Step the Stages panel (a button or a key) and time it: from the click to the new SVG in
    the page (Graphviz layout included), in the page's own clock."""
    return ex.evaluate("""async (root, [button, key]) => {
        const g = root.querySelector('.xe-panel[data-tab=Stages] .xe-graph');
        const before = g.dataset.renders;
        const t0 = performance.now();
        const done = new Promise(resolve => {
            const o = new MutationObserver(() => {
                if (g.dataset.renders !== before) { o.disconnect(); resolve(performance.now() - t0); }
            });
            o.observe(g, {attributes: true});
        });
        if (key) root.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true}));
        else root.querySelector('.xe-panel[data-tab=Stages] ' + button).click();
        const ms = await done;
        const moved = g.querySelectorAll('g.node[style*="translate"]').length;
        return {ms, layout_ms: +g.dataset.renderMs, stage: +root.dataset.stage, moved};
    }""", [button, key])


def check_stages_step_by_buttons_and_keys_and_redraw_time(lab):
    report = {}
    for name in ("attention", "adam_step"):
        payload = lab.data["issue"][name]
        shown = [s["index"] for s in payload["stages"] if s["changed"] or s["index"] == 0]
        ex = lab.explorer(name)
        ex.locator(".xe-chip").first.click()  # back to the traced module
        ex.locator(".xe-prev[disabled]").wait_for()
        assert ex.get_attribute("data-stage") == "0"
        steps = []
        for want in shown[1:]:
            r = stage_step(lab, ex)
            assert r["stage"] == want
            steps.append(r)
        assert ex.locator(".xe-panel[data-tab=Stages] .xe-next").is_disabled()
        # The step into the fusion stage moves the surviving nodes into their kernels.
        fusion = next(r for r in steps if payload["stages"][r["stage"]]["name"] == "fusion")
        assert fusion["moved"] > 0
        # Keys: k back, j forward; the notebook's own j/k (next cell) does not fire.
        active = lab.active_cell()
        back = stage_step(lab, ex, key="k")
        assert back["stage"] == shown[-2]
        again = stage_step(lab, ex, key="j")
        assert again["stage"] == shown[-1]
        # The same with the real keyboard, after a click on the explorer (not a button).
        label = ex.locator(".xe-panel[data-tab=Stages] .xe-step-label")
        label.click()
        lab.page.keyboard.press("k")
        ex.locator(f".xe-panel[data-tab=Stages] .xe-step-label[data-stage='{shown[-2]}']").wait_for()
        lab.page.keyboard.press("j")
        ex.locator(f".xe-panel[data-tab=Stages] .xe-step-label[data-stage='{shown[-1]}']").wait_for()
        assert lab.active_cell() == active
        # first visit: Graphviz lays the stage out; revisit: the layout is cached.
        report[name] = {"stages": [payload["stages"][r["stage"]]["name"] for r in steps],
                        "first_visit_ms": [round(r["ms"], 1) for r in steps],
                        "of_which_in_show_ms": [round(r["layout_ms"], 1) for r in steps],
                        "revisit_ms": [round(back["ms"], 1), round(again["ms"], 1)]}
    print("\nstage-step redraw (click to new SVG, ms):", json.dumps(report))


def outlined(ex, cls: str) -> set[str]:
    return set(ex.locator(f".xe-panel[data-tab=Decisions] g.node.{cls}").evaluate_all(
        "gs => gs.map(g => g.dataset.name.replace(/(\\.clone(\\.\\d+)?)+$/, ''))"))


def check_decisions_step_by_buttons_and_keys_with_producer_and_consumer_outlined(lab):
    payload = lab.data["issue"]["attention"]
    decisions = payload["decisions"]
    ex = lab.explorer("attention")
    lab.tab(ex, "Decisions")
    ex.locator(".xe-panel[data-tab=Decisions] svg g.node").first.wait_for()

    def check(k: int) -> None:
        ex.locator(f".xe-step-label[data-decision='{k}']").wait_for()
        d = decisions[k]
        assert d["reason"] in ex.locator(".xe-decision").inner_text()
        assert outlined(ex, "xe-producer") == {d["producer"]}
        if d["consumer"]:
            assert outlined(ex, "xe-consumer") == {d["consumer"]}

    check(0)
    assert ex.locator(".xe-panel[data-tab=Decisions] .xe-prev").is_disabled()
    ex.locator(".xe-panel[data-tab=Decisions] .xe-next").click()
    check(1)
    ex.locator(".xe-panel[data-tab=Decisions] .xe-next").focus()
    lab.page.keyboard.press("j")
    check(2)
    lab.page.keyboard.press("k")
    check(1)
    lab.tab(ex, "Stages")


def inner_node(payload: dict, stage: dict) -> tuple[dict, str]:
    """The biggest fusion and an instruction inside it that is not its output (it never
    reaches memory), one the stage's graph draws as a node: a tooltip starts with its name.
    (Scalar constants and their broadcasts are folded into their users' labels.)"""
    fusion = max(payload["fusions"], key=lambda f: len(f["instructions"]))
    inner = next(i for i in fusion["instructions"]
                 if i not in fusion["outputs"] and f'tooltip="{i}\\n' in stage["dot"])
    return fusion, inner


def check_clicking_a_node_names_its_shape_fusion_buffer_and_kernel(lab):
    payload = lab.data["issue"]["attention"]
    ex = lab.explorer("attention")
    last = last_shown(payload)
    ex.locator(".xe-chip").last.click()
    ex.locator(f".xe-step-label[data-stage='{last['index']}']").wait_for()
    fusion, inner = inner_node(payload, last)
    hlo_line = next(ln for ln in last["hlo"].splitlines() if ln.strip().startswith(f"{inner} ="))
    shape = hlo_line.split("=", 1)[1].split()[0]
    ex.locator(f".xe-panel[data-tab=Stages] g.node[data-name='{inner}']").click()
    facts = dict(zip(ex.locator(".xe-panel[data-tab=Stages] .xe-facts th").all_inner_texts(),
                     ex.locator(".xe-panel[data-tab=Stages] .xe-facts td").all_inner_texts()))
    assert facts["shape"] == shape
    assert facts["dtype"] == {"f32": "float32", "f64": "float64"}[shape[:3]]
    assert facts["source line"].endswith(":" + re.search(r"source_line=(\d+)", hlo_line)[1])
    assert facts["fusion"].startswith(fusion["name"] + " (")
    assert facts["buffer"] == f"none: stays inside {fusion['name']}, never written to memory"
    assert facts["kernel"] == re.sub(r"\W", "_", fusion["name"])
    assert facts["kernel"] in payload["kernels"]
    # The graph outlines it, and the HLO pane marks the same instruction's line.
    assert ex.locator(".xe-panel[data-tab=Stages] g.node.xe-selected").evaluate_all(
        "gs => gs.map(g => g.dataset.name)") == [inner]
    selected = ex.locator(".xe-panel[data-tab=Stages] .xe-line-selected")
    assert selected.count() == 1 and selected.get_attribute("data-name") == inner
    # And the reverse: an HLO line selects its node.
    ex.locator(f".xe-panel[data-tab=Stages] .xe-line[data-name='{fusion['outputs'][0]}']").click()
    assert ex.locator(".xe-panel[data-tab=Stages] g.node.xe-selected").evaluate_all(
        "gs => gs.map(g => g.dataset.name)") == [fusion["outputs"][0]]
    assert ex.locator(".xe-panel[data-tab=Stages] .xe-info-title").inner_text() == \
        fusion["outputs"][0]


def drawn_fusions_missing(ex, payload) -> list[str]:
    """The bundle's fusions the final stage's SVG does not draw: a fusion of several
    instructions is a cluster (or a folded node) named after it, a fusion of one its node."""
    clusters = set(ex.locator(".xe-panel[data-tab=Stages] g.cluster").evaluate_all(
        "gs => gs.map(g => g.dataset.name)"))
    nodes = set(ex.locator(".xe-panel[data-tab=Stages] g.node").evaluate_all(
        "gs => gs.map(g => g.dataset.name)"))
    missing = []
    for f in payload["fusions"]:
        if len(f["instructions"]) > 1:
            if f["name"] not in clusters | nodes:
                missing.append(f["name"])
        elif not {f["name"], *f["instructions"]} & nodes:
            missing.append(f["name"])
    return missing


def check_the_xla_tab_draws_xla_beside_ours(lab):
    """The saved comparison with real XLA: its kernels row by row, the sentences, and both
    fused graphs drawn by Graphviz in the page."""
    ex = lab.explorer("adam_step")
    c = lab.data["issue"]["adam_step"]["xla"]["comparison"]
    lab.tab(ex, "XLA")
    panel = ex.locator(".xe-panel[data-tab=XLA]")
    for side in ("xla", "ours"):
        panel.locator(f".xe-xla-side[data-side={side}] svg g.node").first.wait_for()
    rows = panel.locator(".xe-xla-kernels tr[data-kernel]").evaluate_all(
        "rows => rows.map(r => r.dataset.kernel)")
    assert rows == [k["name"] for k in c["kernels"]] and rows
    drawn = set(panel.locator(".xe-xla-side[data-side=xla] g.node").evaluate_all(
        "nodes => nodes.map(n => n.dataset.name)"))
    assert {i for k in c["kernels"] for i in k["instructions"]} & drawn
    assert panel.locator(".xe-xla-sentences li").all_inner_texts() == c["sentences"]
    lab.tab(ex, "Stages")


def check_the_svg_draws_every_fusion_the_bundle_names(lab):
    for name in ("attention", "adam_step"):
        ex = lab.explorer(name)
        payload = lab.data["issue"][name]
        ex.locator(".xe-chip").last.click()
        ex.locator(f".xe-step-label[data-stage='{last_shown(payload)['index']}']").wait_for()
        assert any(len(f["instructions"]) > 1 for f in payload["fusions"])
        assert drawn_fusions_missing(ex, payload) == []


def check_traffic_is_charted_as_computed(lab):
    ex = lab.explorer("adam_step")
    lab.tab(ex, "Performance")
    panel = ex.locator(".xe-panel[data-tab=Performance]")
    box = panel.locator(".xe-chart-box", has_text="Bytes moved")
    assert box.locator(".xe-chart-title").inner_text() == "Bytes moved (computed, not measured)"
    assert box.locator(".xe-value").all_text_contents() == ["3.00 KiB", "2.00 KiB", "1.00 KiB",
                                                             "512 B"]
    assert panel.locator(".xe-chart-title", has_text="(measured)").count() == 1
    lab.tab(ex, "Stages")


def check_a_large_graph_folds_its_fusion_and_a_click_unfolds_it(lab):
    payload = lab.data["large"]["long_chain"]
    (fusion,) = payload["fusions"]
    ex = lab.explorer("long_chain")

    ex.locator(".xe-chip").last.click()
    ex.locator(f".xe-step-label[data-stage='{last_shown(payload)['index']}']").wait_for()
    canvas = ex.locator(".xe-panel[data-tab=Stages] .xe-graph-canvas")
    folded = canvas.locator("g.node[data-id^='x_']")
    assert folded.evaluate_all("gs => gs.map(g => g.dataset.name)") == [fusion["name"]]
    assert canvas.locator("g.node").count() < 10
    # Zoom in, then fit: the view box shrinks, then is the whole drawing again.
    svg = canvas.locator("svg")
    whole = svg.get_attribute("viewBox")
    ex.locator(".xe-panel[data-tab=Stages] .xe-graph-bar button", has_text="+").click()
    zoomed = [float(v) for v in svg.get_attribute("viewBox").split()]
    assert zoomed[2] == pytest.approx(0.8 * float(whole.split()[2]), rel=1e-3)
    ex.locator(".xe-panel[data-tab=Stages] .xe-graph-bar button", has_text="fit").click()
    assert svg.get_attribute("viewBox") == whole
    # A plain wheel scrolls the notebook, Ctrl + wheel zooms.
    box = canvas.bounding_box()
    lab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    lab.page.mouse.wheel(0, -40)
    assert svg.get_attribute("viewBox") == whole
    lab.page.keyboard.down("Control")
    lab.page.mouse.wheel(0, -40)
    lab.page.keyboard.up("Control")
    lab.page.wait_for_function("([e, w]) => e.getAttribute('viewBox') !== w",
                               arg=[svg.element_handle(), whole])
    assert float(svg.get_attribute("viewBox").split()[2]) < float(whole.split()[2])
    ex.locator(".xe-panel[data-tab=Stages] .xe-graph-bar button", has_text="fit").click()
    folded.click()
    canvas.locator(f"g.cluster[data-name='{fusion['name']}']").wait_for()
    drawn = canvas.locator("g.node").count()
    assert drawn > 60, drawn
    # Unfolded, the graph would fit only with unreadable labels: it is shown at a readable
    # size, and the bar says that "fit" shows it all.
    graph = ex.locator(".xe-panel[data-tab=Stages] .xe-graph")
    assert graph.get_attribute("data-view") == "readable"
    # Screen pixels per Graphviz point: 0.6, a node's 11-point label about 7 px tall (at fit,
    # notebook 08's graph had labels 3 px tall).
    box, view = canvas.bounding_box(), canvas.locator("svg").get_attribute("viewBox").split()
    assert min(box["width"] / float(view[2]), box["height"] / float(view[3])) >= 0.59
    names = sorted(canvas.locator("g.node").evaluate_all(  # each node's first line
        "gs => gs.map(g => g.querySelector('text')?.getBoundingClientRect().height ?? 0)"))
    assert names and names[len(names) // 2] >= 6.5, names  # the median one, screen pixels
    assert "fit" in graph.locator(".xe-graph-bar .xe-hint").inner_text()


def luminance(rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", rgb)[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def check_dark_theme_is_readable_and_screenshotted(lab):
    page = lab.page
    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', "
                  "{theme: 'JupyterLab Dark'})")
    page.wait_for_selector("body[data-jp-theme-light='false']", state="attached")
    page.wait_for_timeout(500)
    ex = lab.explorer("attention")
    payload = lab.data["issue"]["attention"]
    stage = next(s for s in payload["stages"] if s["name"] == "fusion")
    ex.locator(".xe-chip", has_text=re.compile(r"^\d+ fusion$")).click()
    ex.locator(f".xe-step-label[data-stage='{stage['index']}']").wait_for()
    ex.locator(f".xe-panel[data-tab=Stages] g.node[data-name='{inner_node(payload, stage)[1]}']").click()
    colours = ex.evaluate("""root => {
        const c = sel => getComputedStyle(root.querySelector(sel));
        return {bg: c('.xe-panel[data-tab=Stages] .xe-graph-canvas').backgroundColor,
                root_bg: getComputedStyle(root).backgroundColor,
                title: c('.xe-title').color, text: getComputedStyle(root).color,
                code: c('.xe-panel[data-tab=Stages] .xe-code').color,
                code_bg: c('.xe-panel[data-tab=Stages] .xe-hlo').backgroundColor,
                graph_title: c('.xe-panel[data-tab=Stages] .xe-graph-title').fill};
    }""")
    assert luminance(colours["root_bg"]) < 0.1, colours  # the theme's dark background
    for fg, bg in (("title", "root_bg"), ("text", "root_bg"), ("code", "code_bg"),
                   ("graph_title", "bg")):
        assert contrast(colours[fg], colours[bg]) >= 4.5, (fg, bg, colours)
    shoot(lab, ex, "renderer-dark.png")
    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', "
                  "{theme: 'JupyterLab Light'})")
    page.wait_for_selector("body[data-jp-theme-light='true']", state="attached")


# -- the corpus --------------------------------------------------------------------------------


def check_every_corpus_bundle_validates_and_renders_without_a_console_error(lab):
    bundles = lab.data["corpus"]
    for payload in bundles.values():
        mime.validate(json.loads(json.dumps(payload)))  # as saved: JSON, then the schema
    lab.errors.clear()
    lab.open("corpus.ipynb", no_kernel=True)
    page = lab.page
    page.wait_for_function(
        "n => document.querySelectorAll('.xe-panel[data-tab=Stages] .xe-graph svg').length === n",
        arg=len(bundles))
    # Every explorer stepped to its last stage and through every tab, in the page (one round
    # trip, not a hundred); what the final SVG draws comes back by program.
    drawn = page.evaluate("""async () => {
        const out = {};
        for (const root of document.querySelectorAll('.xe-explorer')) {
            const cell = root.closest('.jp-CodeCell');
            const name = cell.querySelector('.jp-InputArea-editor').innerText.trim().replace(/^# /, '');
            const g = root.querySelector('.xe-panel[data-tab=Stages] .xe-graph');
            const chips = root.querySelectorAll('.xe-chip');
            const before = g.dataset.renders;
            chips[chips.length - 1].click();
            if (chips.length > 1 && !chips[chips.length - 1].classList.contains('xe-chip-on')) {
                out[name] = {error: 'the last chip did not select'};
                continue;
            }
            for (let i = 0; i < 200 && g.dataset.renders === before && chips.length > 1; i++) {
                await new Promise(r => setTimeout(r, 10));
            }
            for (const tab of ['Decisions', 'Buffers', 'Kernels', 'Performance', 'Stages']) {
                root.querySelector(`.xe-tab[data-tab=${tab}]`).click();
            }
            await new Promise(r => setTimeout(r, 0));
            const names = sel => Array.from(root.querySelectorAll(sel)).map(e => e.dataset.name);
            out[name] = {stage: root.dataset.stage,
                         clusters: names('.xe-panel[data-tab=Stages] g.cluster'),
                         nodes: names('.xe-panel[data-tab=Stages] g.node'),
                         decisions_drawn: root.querySelectorAll('.xe-panel[data-tab=Decisions] svg').length,
                         slots: root.querySelectorAll('rect.xe-slot').length};
        }
        return out;
    }""")
    assert set(drawn) == set(bundles)
    problems = {}
    for name, payload in bundles.items():
        d = drawn[name]
        wrong = []
        if d.get("stage") != str(last_shown(payload)["index"]):
            wrong.append(f"stage {d.get('stage')}")
        clusters, nodes = set(d.get("clusters", [])), set(d.get("nodes", []))
        for f in payload["fusions"]:
            # A kernel of one instruction is its node (a while loop, the box of its body).
            shown = f["name"] in clusters | nodes if len(f["instructions"]) > 1 else \
                bool({f["name"], *f["instructions"]} & (nodes | clusters))
            if not shown:
                wrong.append(f"fusion {f['name']} not drawn")
        if payload["decisions"] and d.get("decisions_drawn") != 1:
            wrong.append("no decision graph")
        if d.get("slots") != len((payload["buffers"] or {}).get("allocations", [])):
            wrong.append(f"{d.get('slots')} timeline slots")
        if wrong:
            problems[name] = wrong
    assert problems == {}
    assert page.locator(".xe-error").count() == 0
    assert lab.errors == []


# -- precedence: live widget, then the renderer ------------------------------------------------


def check_live_kernel_shows_the_widget_and_after_a_restart_the_renderer(lab):
    page = lab.page
    S.run_notebook(page, lab.url, lab.token, "live.ipynb", TIMEOUT)
    host = page.locator(".xe-host")
    host.wait_for()
    page.wait_for_function("document.querySelector('.xe-host').dataset.shown === 'widget'")
    # The live widget is the same explorer, drawn by the kernel's widget, not the renderer.
    page.locator(".xe-host[data-shown=widget] .xe-explorer .xe-graph svg g.node").first.wait_for()
    assert page.locator(".xe-explorer").count() == 1
    # Saved by JupyterLab (so trusted on reopening), then the kernel restarts: its widget
    # models are gone, as after a day away.
    page.evaluate("""async () => {
        const panel = window.jupyterapp.shell.currentWidget;
        await panel.context.save();
        await panel.sessionContext.session.kernel.restart();
    }""")
    page.goto(f"{lab.url}/lab/tree/live.ipynb?token={lab.token}&reset")
    page.get_by_text(S.KERNEL_IDLE).first.wait_for()
    page.locator(".xe-host[data-shown=renderer] .xe-explorer .xe-graph svg g.node").first.wait_for()
    assert page.evaluate("window.jupyterapp.shell.currentWidget.content.model.cells.get(0).trusted")
    assert page.locator(".xe-host[data-shown=widget]").count() == 0
    assert not MODEL_NOT_FOUND.search(lab.notebook_text())
    # The same trusted notebook reopened with no kernel at all (its kernelspec removed, so
    # JupyterLab asks, and the reader answers "No Kernel").
    page.evaluate("""async () => {
        const panel = window.jupyterapp.shell.currentWidget;
        panel.context.model.deleteMetadata('kernelspec');
        panel.context.model.deleteMetadata('language_info');
        await panel.context.save();
        await panel.sessionContext.shutdown();
    }""")
    lab.open("live.ipynb", no_kernel=True)
    page.locator(".xe-host[data-shown=renderer] .xe-explorer .xe-graph svg g.node").first.wait_for()
    assert page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session") is None
    assert page.evaluate("window.jupyterapp.shell.currentWidget.content.model.cells.get(0).trusted")
    assert page.locator(".xe-host[data-shown=widget]").count() == 0
    assert not MODEL_NOT_FOUND.search(lab.notebook_text())


# -- the test ----------------------------------------------------------------------------------

# One test, so that pytest-xdist (make test runs -n 2) never splits the module over two
# JupyterLabs; every check runs, and the test fails listing each check that failed.
# What any explorer must do, wherever it is drawn: in JupyterLab (after the saved notebook's
# check opens it) and on the static page.
SHARED = [check_stages_step_by_buttons_and_keys_and_redraw_time,
          check_decisions_step_by_buttons_and_keys_with_producer_and_consumer_outlined,
          check_clicking_a_node_names_its_shape_fusion_buffer_and_kernel,
          check_the_svg_draws_every_fusion_the_bundle_names,
          check_traffic_is_charted_as_computed,
          check_a_large_graph_folds_its_fusion_and_a_click_unfolds_it]

CHECKS = [check_saved_notebook_with_no_kernel_shows_the_whole_explorer,
          check_stages_step_by_buttons_and_keys_and_redraw_time,
          check_decisions_step_by_buttons_and_keys_with_producer_and_consumer_outlined,
          check_clicking_a_node_names_its_shape_fusion_buffer_and_kernel,
          check_the_svg_draws_every_fusion_the_bundle_names,
          check_traffic_is_charted_as_computed,
          check_the_xla_tab_draws_xla_beside_ours,
          check_a_large_graph_folds_its_fusion_and_a_click_unfolds_it,
          check_dark_theme_is_readable_and_screenshotted,
          check_every_corpus_bundle_validates_and_renders_without_a_console_error,
          check_live_kernel_shows_the_widget_and_after_a_restart_the_renderer]


def test_the_extension_in_a_real_jupyterlab(lab, tmp_path):
    run_checks(lab, CHECKS, tmp_path)


def test_the_same_explorer_on_a_static_page(lab, tmp_path):
    """`ex.save_html`'s page: the extension's explorer built as one module, inlined, drawing
    the bundles from their JSON; opened from disk in the same browser, with no server."""
    from xla_explorer.viz.page import bundle_js, data_script

    sections = "\n".join(f'<section data-program="{name}"><h2>{name}</h2>{data_script(p)}'
                         "</section>" for name, p in {**lab.data["issue"],
                                                      **lab.data["large"]}.items())
    path = tmp_path / "static.html"
    path.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>static</title>'
                    f'</head><body>{sections}<script type="module">{bundle_js()}</script>'
                    "</body></html>", encoding="utf-8")
    page = lab.page.context.new_page()
    page.set_default_timeout(TIMEOUT)
    try:
        static = StaticPage(page, path, lab.data, lab.shots)
        for name in (*lab.data["issue"], *lab.data["large"]):
            static.explorer(name).locator(".xe-graph svg g.node").first.wait_for()
        run_checks(static, [check_the_whole_explorer, *SHARED,
                            check_the_xla_tab_draws_xla_beside_ours], tmp_path)
    finally:
        page.close()


def test_the_same_explorer_live_in_a_running_kernel(lab, tmp_path):
    """`ex.show()` in a running kernel: the extension's explorer as the widget's front end,
    drawing the kernel's bundle; the same checks, then "Run benchmark" asks the kernel, and
    the measurement is in the saved notebook."""
    names = [*lab.data["issue"], *lab.data["large"]]
    live_explorers_notebook(lab.root / "live_explorers.ipynb", ROOT, names)
    S.run_notebook(lab.page, lab.url, lab.token, "live_explorers.ipynb", 120_000)
    view = LiveNotebook(lab, names)
    for name in names:
        view.explorer(name).locator(".xe-graph svg g.node").first.wait_for()
    assert lab.page.locator(".xe-host[data-shown=widget]").count() == len(names)
    run_checks(view, [check_opening_stage_buffers_and_kernels,
                      *[c for c in SHARED if c is not check_traffic_is_charted_as_computed],
                      check_run_benchmark_asks_the_kernel_and_the_output_keeps_it,
                      check_compare_with_xla_asks_the_kernel_and_the_output_keeps_it,
                      check_export_asks_the_kernel_and_says_what_it_wrote], tmp_path)


def check_run_benchmark_asks_the_kernel_and_the_output_keeps_it(view):
    ex = view.explorer("attention")
    view.tab(ex, "Stages")
    ex.locator(".xe-panel[data-tab=Stages] .xe-prev").click()  # before the one it opens on
    view.page.wait_for_timeout(300)
    stage = ex.get_attribute("data-stage")
    view.tab(ex, "Performance")
    ex.locator(".xe-bench-repeat").fill("5")
    ex.locator(".xe-bench-repeat").dispatch_event("change")
    ex.locator(".xe-bench-run").click()
    # The kernel sends the bundle back with the bench: the explorer redraws where the reader
    # was: the same tab, stage and repeat count.
    view.page.locator(".xe-explorer .xe-panel[data-tab=Performance]:visible",
                      has_text="interleaved rounds").first.wait_for(timeout=60_000)
    ex = view.explorer("attention")
    assert ex.locator(".xe-bench-repeat").input_value() == "5"
    words = ex.locator(".xe-panel[data-tab=Performance]").inner_text()
    assert "median of 5 interleaved rounds" in words and "Memory held during a call" in words
    assert re.search(r"\d\.\d\dx faster|slower \(\d\.\d\dx\)", words), words
    shoot(view, ex, "live-performance.png")
    view.page.keyboard.press("Control+s")
    bench = None
    for _ in range(40):
        view.page.wait_for_timeout(500)
        cell = json.loads((view.lab.root / "live_explorers.ipynb").read_text())["cells"][1]
        saved = [o["data"][mime.MIME_TYPE] for o in cell.get("outputs", [])
                 if mime.MIME_TYPE in o.get("data", {})]
        bench = saved[0]["bench"] if saved else None
        if bench:
            break
    assert bench and bench["repeat"] == 5, bench
    view.tab(ex, "Stages")
    assert ex.get_attribute("data-stage") == stage


def check_compare_with_xla_asks_the_kernel_and_the_output_keeps_it(view):
    """"Compare with XLA" in the live XLA tab: the kernel runs ex.compare_xla, the explorer
    redraws on the XLA tab with XLA's kernels and graph, and the saved output keeps them."""
    ex = view.explorer("adam_step")
    view.tab(ex, "XLA")
    ex.locator(".xe-xla-run").click()
    view.page.locator(".xe-explorer .xe-panel[data-tab=XLA]:visible .xe-xla-kernels").first.wait_for(
        timeout=60_000)
    ex = view.explorer("adam_step")
    panel = ex.locator(".xe-panel[data-tab=XLA]")
    panel.locator(".xe-xla-side[data-side=xla] svg g.node").first.wait_for()
    rows = panel.locator(".xe-xla-kernels tr[data-kernel]").count()
    assert rows > 0 and panel.locator(".xe-xla-sentences li").count() > 0
    view.page.keyboard.press("Control+s")
    comparison = None
    for _ in range(40):
        view.page.wait_for_timeout(500)
        cell = json.loads((view.lab.root / "live_explorers.ipynb").read_text())["cells"][2]
        saved = [o["data"][mime.MIME_TYPE] for o in cell.get("outputs", [])
                 if mime.MIME_TYPE in o.get("data", {})]
        comparison = saved[0].get("xla", {}).get("comparison") if saved else None
        if comparison:
            break
    assert comparison and len(comparison["kernels"]) == rows, comparison
    view.tab(ex, "Stages")


def check_export_asks_the_kernel_and_says_what_it_wrote(view):
    ex = view.explorer("attention")
    view.tab(ex, "Kernels")
    ex.locator(".xe-export-name").fill("attention_aot")
    ex.locator(".xe-export-run").click()
    status = ex.locator(".xe-export-status")
    view.page.wait_for_function(
        "el => el.textContent.startsWith('wrote') || el.textContent.startsWith('export failed')",
        arg=status.element_handle(), timeout=120_000)
    words = status.inner_text()
    assert words.startswith("wrote") and "attention_aot.pyi" in words, words
    assert list(view.lab.root.glob("attention_aot.cpython-*.so"))
    view.tab(ex, "Stages")


def run_checks(view, checks, tmp_path) -> None:
    """Every check, each run even when one before it failed; the failures together."""
    from playwright.sync_api import Error as PlaywrightError

    failures = []
    for check in checks:
        try:
            check(view)
        except (AssertionError, PlaywrightError) as e:
            shot = tmp_path / f"{check.__name__}.png"
            view.page.screenshot(path=str(shot))
            failures.append(f"{check.__name__}: {type(e).__name__}: {str(e)[:1500]}\n"
                            f"(screenshot: {shot})")
    assert not failures, "\n\n".join(failures)
