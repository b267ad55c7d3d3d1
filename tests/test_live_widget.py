"""The live explorer as a student finds it, in a real JupyterLab driven by headless Chromium.

One JupyterLab for the module: a notebook with a 45-node program under `%%xla` (layernorm,
GELU and softmax, one row kernel), a program whose fusion copies a producer into two kernels,
and the static HTML view; every cell run, then each test reads the page as a person would see
it (the boxes the browser laid out, the classes a click set, the text on the screen) and
saves a screenshot: into $XLA_EXPLORER_SCREENSHOTS when set (docs/ holds the ones made so,
docs/widget-*.png), else into the test's temporary directory.

Skipped where Chromium is missing, except under CI (`CI=true`), as tests/test_screenshot.py.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from tests.test_screenshot import chromium_or_skip, load_script

NOTEBOOK = "live.ipynb"
CELLS = [
    "%load_ext xla_explorer\nimport numpy as np\nrng = np.random.default_rng(0)\n"
    "x = rng.standard_normal((8, 16)).astype(np.float32)\n"
    "gamma = np.ones(16, np.float32)\nbeta = np.zeros(16, np.float32)",
    # 45 nodes as traced, 40 after cse: the graph that must fit.
    "%%xla\nmean = x.mean(axis=-1, keepdims=True)\n"
    "var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)\n"
    "y = (x - mean) / np.sqrt(var + 1e-5) * gamma + beta\n"
    "h = 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))\n"
    "e = np.exp(h - h.max(axis=-1, keepdims=True))\n"
    "p = e / e.sum(axis=-1, keepdims=True)",
    # a is cheap and read by two reductions: fusion copies it into both kernels.
    "%%xla --backend interpreter\na = x + gamma\ns1 = a.sum()\ns2 = (a * a).sum()",
    "from IPython.display import HTML\nHTML(_xla._repr_mimebundle_()['text/html'])",
]
EXPLORER = ".jp-OutputArea-output .jupyter-widgets.widget-tab"
MIME = "application/vnd.xla-explorer.v1+json"


class Lab:
    def __init__(self, page, errors, shots: Path, root: Path):
        self.page, self.errors, self.shots, self.root = page, errors, shots, root

    def explorer(self, n: int):
        return self.page.locator(EXPLORER).nth(n)

    def shot(self, locator, name: str) -> Path:
        """A screenshot of what the window shows of `locator`, scrolled to its top (an
        element screenshot of something taller than the notebook's scrolling panel comes
        out grey past the window)."""
        path = self.shots / f"widget-{name}.png"
        locator.evaluate("e => e.scrollIntoView({block: 'start'})")
        self.page.wait_for_timeout(300)
        box, size = locator.bounding_box(), self.page.viewport_size
        x, y = max(box["x"], 0), max(box["y"], 0)
        clip = {"x": x, "y": y, "width": min(box["width"], size["width"] - x),
                "height": min(box["y"] + box["height"], size["height"] - 24) - y}
        self.page.screenshot(path=str(path), clip=clip)
        return path

    def tab(self, n: int, title: str) -> None:
        self.explorer(n).locator(".lm-TabBar-tab", has_text=title).click()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    script = load_script()
    chromium = script.find_chromium(None)
    tmp = tmp_path_factory.mktemp("live-widget")
    root = tmp / "notebooks"
    root.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nbformat.write(nb, root / NOTEBOOK)
    shots = Path(os.environ.get("XLA_EXPLORER_SCREENSHOTS") or tmp / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    with script.jupyter_lab(root, tmp) as (url, token), sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp / "profile"), executable_path=chromium, headless=True,
            args=script.CHROMIUM_FLAGS, viewport={"width": 1400, "height": 1000},
            device_scale_factor=1)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            script.run_notebook(page, url, token, NOTEBOOK, 90_000)
            page.wait_for_selector(f"{EXPLORER} .xe-graph svg g.node", timeout=30_000)
            yield Lab(page, errors, shots, root)
        finally:
            context.close()


def view_facts(explorer) -> dict:
    """The Stages panel's graph view as laid out: nodes inside the box or not, scrollbars."""
    return explorer.evaluate("""(root) => {
        const view = root.querySelector('.xe-view');
        const box = view.querySelector('.xe-graph'), b = box.getBoundingClientRect();
        const out = (r) => r.left < b.left - 1 || r.right > b.right + 1 ||
                           r.top < b.top - 1 || r.bottom > b.bottom + 1;
        const nodes = [...box.querySelectorAll('g.node')];
        const title = box.querySelector('svg > g.graph > g > a > text');
        const scrolls = [...root.querySelectorAll('*')].filter(e => {
            const s = getComputedStyle(e);
            return (e.scrollHeight > e.clientHeight + 1 && /(auto|scroll)/.test(s.overflowY)) ||
                   (e.scrollWidth > e.clientWidth + 1 && /(auto|scroll)/.test(s.overflowX));
        }).map(e => [e.className, e.scrollWidth, e.clientWidth, e.scrollHeight, e.clientHeight, e.children.length, [...e.children].map(c => c.className.slice(0, 60) + ':' + c.getBoundingClientRect().width + 'x' + c.getBoundingClientRect().height).join(' / ')].join(' '));
        return {nodes: nodes.length, outside: nodes.filter(n => out(n.getBoundingClientRect()))
                    .map(n => n.dataset.inst),
                title_inside: title ? !out(title.getBoundingClientRect()) : null,
                box: [b.width, b.height], tab: root.getBoundingClientRect().width,
                viewBox: box.querySelector('svg').getAttribute('viewBox'),
                scrolls: scrolls, hlo: view.querySelector('.xe-hlo').innerText,
                info: view.querySelector('.xe-info').innerText,
                selected: [...view.querySelectorAll('.xe-selected')].map(
                    e => [e.tagName, e.dataset.inst])};
    }""")


def stage_controls(explorer) -> dict:
    return explorer.evaluate("""(root) => {
        const panel = root.querySelector('.lm-TabPanel-content, .widget-tab-contents') || root;
        const buttons = [...root.querySelectorAll('button')];
        const prev = buttons.find(b => b.textContent.includes('previous'));
        const next = buttons.find(b => b.textContent.includes('next'));
        const readout = root.querySelector('.widget-readout');
        const select = root.querySelector('select');
        return {readout: readout && readout.textContent.trim(),
                pass: select && select.options[select.selectedIndex].textContent.replace(/\u00a0/g, ' '),
                prev_disabled: prev.disabled, next_disabled: next.disabled};
    }""")


@pytest.mark.slow  # JupyterLab in headless Chromium
def show_traced(lab, explorer) -> None:
    """Step the explorer, which opens at the fusion stage, to the traced program, and wait
    until its graph is drawn: nodes, and none of the fusion stage's clusters."""
    explorer.locator("select").first.select_option(label="0: trace")
    lab.page.wait_for_function(
        "(r) => r.querySelectorAll('.xe-graph g.node').length > 0"
        " && r.querySelectorAll('.xe-graph g.cluster').length === 0",
        arg=explorer.element_handle())


def test_a_40_node_graph_is_entirely_visible_across_the_width(lab):
    explorer = lab.explorer(0)
    show_traced(lab, explorer)  # it opens at the fusion stage; the trace is the 45-node graph
    facts = view_facts(explorer)
    assert facts["nodes"] >= 45, facts
    assert facts["outside"] == [] and facts["title_inside"], facts
    assert facts["box"][0] >= 0.9 * facts["tab"] and facts["box"][1] >= 240, facts
    assert facts["scrolls"] == [], facts  # no box inside the output scrolls
    # With the explorer at the top of the notebook, the whole graph is in the window.
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    graph_box = explorer.locator(".xe-graph").bounding_box()
    assert graph_box["y"] >= 0
    assert graph_box["y"] + graph_box["height"] <= lab.page.viewport_size["height"] - 24
    lab.shot(explorer, "fit")
    # Zoom in, then fit again: the view narrows, then every node is back in the box.
    before = facts["viewBox"]
    explorer.locator("button.xe-zoom-in").click()
    explorer.locator("button.xe-zoom-in").click()
    zoomed = view_facts(explorer)
    assert float(zoomed["viewBox"].split()[2]) < float(before.split()[2]) / 1.5
    assert zoomed["outside"]  # some nodes are out of the box now
    explorer.locator("button.xe-fit").click()
    assert view_facts(explorer)["outside"] == []
    # Dragging pans.
    box = explorer.locator(".xe-graph").bounding_box()
    explorer.locator("button.xe-zoom-in").click()
    panned_from = view_facts(explorer)["viewBox"]
    lab.page.mouse.move(box["x"] + 200, box["y"] + 100)
    lab.page.mouse.down()
    lab.page.mouse.move(box["x"] + 300, box["y"] + 160, steps=5)
    lab.page.mouse.up()
    moved = view_facts(explorer)["viewBox"]
    assert float(moved.split()[0]) < float(panned_from.split()[0])
    explorer.locator("button.xe-fit").click()
    # Stage 2 (cse) has 40 nodes: fitted too.
    explorer.locator("select").first.select_option(label="2: cse")
    lab.page.wait_for_function("(r) => r.querySelectorAll('.xe-graph g.node').length === 40",
                               arg=explorer.element_handle())
    facts = view_facts(explorer)
    assert facts["outside"] == [] and facts["title_inside"], facts


@pytest.mark.slow
def test_clicking_a_node_highlights_its_hlo_line_and_back(lab):
    explorer = lab.explorer(0)
    show_traced(lab, explorer)
    node = explorer.locator(".xe-graph g.node[data-inst^='exponential']").first
    name = node.get_attribute("data-inst")
    node.click()
    lab.page.wait_for_function(
        "([r, n]) => r.querySelector('.xe-info').innerText.includes(n + ' = exponential')",
        arg=[explorer.element_handle(), name])
    facts = view_facts(explorer)
    assert ["g", name] in [[t.lower(), n] for t, n in facts["selected"]]  # the node, outlined
    assert ["DIV", name] in facts["selected"]  # its HLO line, marked
    line = explorer.locator(f".xe-hlo [data-inst='{name}']")
    assert "xe-selected" in line.get_attribute("class")
    assert re.search(rf"{re.escape(name)} = f32\[8,16\] exponential\(", line.inner_text())
    # Zoomed in on the selected node (Ctrl + wheel over it), and its HLO line below.
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    at = node.bounding_box()
    lab.page.mouse.move(at["x"] + at["width"] / 2, at["y"] + at["height"] / 2)
    lab.page.keyboard.down("Control")
    for _ in range(5):
        lab.page.mouse.wheel(0, -100)
    lab.page.keyboard.up("Control")
    lab.shot(explorer, "select")
    # The HLO pane around the marked line.
    line.evaluate("e => e.scrollIntoView({block: 'center'})")
    lab.page.wait_for_timeout(200)
    pane, at = explorer.locator(".xe-hlo").bounding_box(), line.bounding_box()
    top = max(at["y"] - 160, pane["y"], 0)
    lab.page.screenshot(path=str(lab.shots / "widget-select-hlo.png"),
                        clip={"x": pane["x"], "y": top, "width": pane["width"], "height": 340})
    explorer.locator("button.xe-fit").click()
    # The reverse: a click on an HLO line selects its node, and pans the zoomed graph to it.
    other = explorer.locator(".xe-hlo [data-inst^='tanh']").first
    tanh = other.get_attribute("data-inst")
    for _ in range(4):
        explorer.locator("button.xe-zoom-in").click()
    box = explorer.locator(".xe-graph").bounding_box()
    for _ in range(4):  # drag the view until the tanh node is out of the box
        if tanh in view_facts(explorer)["outside"]:
            break
        lab.page.mouse.move(box["x"] + 100, box["y"] + 50)
        lab.page.mouse.down()
        lab.page.mouse.move(box["x"] + 100, box["y"] + box["height"] - 50, steps=4)
        lab.page.mouse.up()
    assert tanh in view_facts(explorer)["outside"]
    other.click()
    lab.page.wait_for_function(
        "([r, n]) => r.querySelector(`.xe-graph g.node[data-inst='${n}']`)"
        ".classList.contains('xe-selected')", arg=[explorer.element_handle(), tanh])
    assert explorer.locator(f".xe-graph g.node[data-inst='{name}'].xe-selected").count() == 0
    assert tanh not in view_facts(explorer)["outside"]  # in the box, at the zoom it was at
    lab.page.wait_for_function(  # the story comes from the kernel
        "([r, n]) => r.querySelector('.xe-info').innerText.includes(n + ' = tanh')",
        arg=[explorer.element_handle(), tanh])


@pytest.mark.slow
def test_the_stepper_counts_passes_and_stops_at_the_ends(lab):
    explorer = lab.explorer(0)
    explorer.locator("select").first.select_option(label="0: trace")
    lab.page.wait_for_function("(r) => r.querySelector('.widget-readout').textContent.trim()"
                               " === '0'", arg=explorer.element_handle())
    c = stage_controls(explorer)
    assert c["prev_disabled"] and not c["next_disabled"] and c["pass"] == "0: trace"
    # The first selection is something the program computes, with a kernel to show.
    info = view_facts(explorer)["info"]
    assert "not computed by a kernel" not in info and "tuple" not in info.split("\n")[0]
    seen = []
    for _ in range(12):
        c = stage_controls(explorer)
        assert c["pass"].split(":")[0] == c["readout"]  # the slider says the pass's number
        seen.append(c["pass"])
        if c["next_disabled"]:
            break
        explorer.locator("button", has_text="next").click()
        lab.page.wait_for_function(
            "([r, p]) => r.querySelector('select').selectedOptions[0].textContent.replace(/\\u00a0/g, ' ') !== p",
            arg=[explorer.element_handle(), c["pass"]])
    assert seen[-1].endswith("schedule") and stage_controls(explorer)["next_disabled"]
    assert "0: trace" in seen and "5: fusion" in seen
    # The HLO pane: no metadata, the source line beside each instruction instead.
    hlo = view_facts(explorer)["hlo"]
    assert "metadata={" not in hlo and re.search(r"line \d+\s+\S+ = ", hlo)


@pytest.mark.slow
def test_one_note_per_decision_and_copies_marked(lab):
    explorer = lab.explorer(0)
    lab.tab(0, "Decisions")  # built by the kernel when first opened
    explorer.locator("ol li").first.wait_for()
    explorer.locator(".xe-graph svg >> visible=true").first.wait_for()
    items = explorer.locator("ol li").all_inner_texts()
    assert items
    taken = [re.match(r"\[taken\] fused (\S+) into (\S+):", t) for t in items]
    pairs = [m.groups() for m in taken if m]
    assert pairs and len(pairs) == len(set(pairs)), items
    assert explorer.locator("button >> visible=true", has_text="previous").is_disabled()
    # The graph zooms to the decision's producer and consumer, both on screen, drawn thick.
    explorer.locator("button >> visible=true", has_text="next").click()
    explorer.locator("text=2 of").wait_for()
    lab.page.wait_for_timeout(300)
    zoomed = explorer.evaluate("""(root) => {
        const box = [...root.querySelectorAll('.xe-graph')].find(b => b.offsetParent);
        const b = box.getBoundingClientRect();
        const thick = [...box.querySelectorAll('g.node')].filter(
            g => [...g.querySelectorAll('path, polygon')].some(
                p => p.getAttribute('stroke-width') === '4'));
        const inside = thick.every(g => { const r = g.getBoundingClientRect();
            return r.left >= b.left && r.right <= b.right && r.top >= b.top &&
                   r.bottom <= b.bottom; });
        const svg = box.querySelector('svg');
        return {thick: thick.length, inside,
                view: +svg.getAttribute('viewBox').split(' ')[2],
                full: svg.viewBox.baseVal.width,
                node_px: thick.length ? thick[0].getBoundingClientRect().height : 0};
    }""")
    assert zoomed["thick"] >= 2 and zoomed["inside"] and zoomed["node_px"] >= 20, zoomed
    lab.shot(explorer, "decisions")
    lab.tab(0, "Stages")
    # The second program: fusion copies x + gamma into both reductions' kernels.
    copies = lab.explorer(1)
    copies.locator("select").first.select_option(label="5: fusion")
    lab.page.wait_for_function("(r) => r.querySelector('.xe-hlo .xe-clone')",
                               arg=copies.element_handle())
    # The graph is drawn after the HLO (in the browser, asynchronously): wait for it too.
    lab.page.wait_for_function(
        "(r) => [...r.querySelectorAll('.xe-graph g.node text')].some("
        "t => /^add\\.\\d+ \\(copy\\)$/.test(t.textContent))", arg=copies.element_handle())
    labels = copies.locator(".xe-graph g.node text").all_text_contents()
    assert any(re.fullmatch(r"add\.\d+ \(copy\)", t) for t in labels), labels
    assert not any(".clone." in t for t in labels)
    lab.shot(copies, "copies")


@pytest.mark.slow
def test_the_performance_tab_states_slower_or_faster_in_units_that_fit(lab):
    explorer = lab.explorer(0)
    lab.tab(0, "Performance")
    explorer.locator("button", has_text="Run benchmark").wait_for()
    explorer.locator("input[type='number']").fill("5")
    explorer.locator("button", has_text="Run benchmark").click()
    result = explorer.locator("text=against eager NumPy")
    result.wait_for(timeout=60_000)
    text = explorer.inner_text()
    m = re.search(r"against eager NumPy: (\d+\.\d\d)x faster|against eager NumPy: slower "
                  r"\((\d\.\d\d)x\)", text)
    assert m, text
    ratio = float(m.group(1) or m.group(2))
    assert (ratio >= 1) == bool(m.group(1))
    assert not re.search(r"\b0\.\d+x faster", text)
    assert not re.search(r"\b0\.0\d* [KMG]iB", text)  # a unit too big for the number
    if m.group(2):  # slower: these arrays hold 128 elements, too few for compiling to pay
        assert "fixed cost of each call" in text
    lab.shot(explorer, "performance")
    # The benchmark is written into the explorer's output: saved, the notebook has it.
    lab.page.keyboard.press("Control+s")
    bench = None
    for _ in range(40):
        lab.page.wait_for_timeout(500)
        cell = nbformat.read(lab.root / NOTEBOOK, as_version=4).cells[1]
        views = [o["data"][MIME] for o in cell.get("outputs", []) if MIME in o.get("data", {})]
        bench = views[0]["bench"] if views else None
        if bench:
            break
    assert bench and bench["repeat"] == 5, bench
    assert f"{bench['speedup']:.2f}" in text
    lab.explorer(0).wait_for()
    lab.tab(0, "Stages")


@pytest.mark.slow
def test_tables_read_left_aligned_and_the_summary_is_compact(lab):
    page = lab.page
    aligns = page.evaluate("""() => {
        const cells = (sel) => [...document.querySelectorAll(sel)].map(
            c => getComputedStyle(c).textAlign);
        const tables = [...document.querySelectorAll('.xe-report table')].map(
            t => getComputedStyle(t).marginLeft);
        return {widget: cells('.xe-info td'), report: cells('.xe-report td, .xe-report th'),
                report_tables: tables};
    }""")
    assert aligns["widget"] and set(aligns["widget"]) <= {"left", "start"}, aligns
    assert aligns["report"] and set(aligns["report"]) <= {"left", "start"}, aligns
    assert set(aligns["report_tables"]) == {"0px"}, aligns
    lab.shot(page.locator(".jp-OutputArea-output:has(.xe-report)").first, "static-html")
    summary = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter"
                           ".stdout']").first.inner_text()
    kernel = re.search(r"^  (\S+) \((row fusion|k\w+)\): (\d+) ops: (.*)$", summary, re.M)
    assert kernel and int(kernel.group(3)) > 30, summary
    assert len(kernel.group(0)) < 200  # one line of counts, not 50 names (about 700 characters)
    assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
    assert not [e for e in lab.errors if "page error" in e or "widget" in e.lower()], \
        json.dumps(lab.errors, indent=1)
