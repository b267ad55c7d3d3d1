"""The HTML export: one self-contained file that opens with no kernel and no network.

The page is read back with html.parser (a strict checker on top: every element closed in
order, ids unique), so the tests check what is in the document rather than how the text
happens to be laid out.
"""
import re
import shutil
import socket
from html.parser import HTMLParser

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.viz import html as xhtml
from xla_explorer.viz.diff import diff

from .test_mime import PROGRAMS, explorations, softmax

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot is not installed")


@pytest.fixture(scope="module")
def programs():
    return explorations()


@pytest.fixture(scope="module")
def pages(programs):
    return {name: xhtml.page(ex) for name, ex in programs.items()}


@pytest.fixture(scope="module")
def benched(programs):
    ex = programs["softmax-cpu"]
    b = ex.bench(repeat=3)
    return ex, b, xhtml.page(ex, b)


# -- reading the page back --------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Document(HTMLParser):
    """Elements as (tag, attrs, text) with the text inside them, and every nesting error."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[dict] = []
        self.elements: list[dict] = []
        self.errors: list[str] = []
        self.doctype = None

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": [], "parent": self.stack[-1:]}
        self.elements.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):  # <path ... /> inside SVG
        self.elements.append({"tag": tag, "attrs": dict(attrs), "text": [],
                              "parent": self.stack[-1:]})

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1]["tag"] != tag:
            open_tag = self.stack[-1]["tag"] if self.stack else None
            self.errors.append(f"</{tag}> closes <{open_tag}>")
            return
        self.stack.pop()

    def handle_data(self, data):
        for el in self.stack:
            el["text"].append(data)

    def find(self, tag=None, **attrs):
        out = []
        for el in self.elements:
            if tag and el["tag"] != tag:
                continue
            if all(_has(el, k.rstrip("_").replace("_", "-"), v) for k, v in attrs.items()):
                out.append(el)
        return out


def _has(el, key, value):
    if key == "class":
        return value in el["attrs"].get("class", "").split()
    return el["attrs"].get(key) == value


def text(el) -> str:
    return "".join(el["text"])


def parse(page: str) -> Document:
    doc = Document()
    doc.feed(page)
    doc.close()
    return doc


def inside(doc, container, tag=None, **attrs):
    """Elements of the given kind that lie inside `container`."""
    def within(el):
        parents = el["parent"]
        while parents:
            if parents[0] is container:
                return True
            parents = parents[0]["parent"]
        return False

    return [el for el in doc.find(tag, **attrs) if within(el)]


# -- a valid, self-contained document ---------------------------------------------------------


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_page_is_valid_html(name, pages):
    doc = parse(pages[name])
    assert doc.doctype and doc.doctype.lower() == "doctype html"
    assert not doc.errors, doc.errors[:5]
    assert not doc.stack, [el["tag"] for el in doc.stack]  # everything opened was closed
    for tag in ("html", "head", "body", "h1"):
        assert len(doc.find(tag)) == 1, tag
    (head,) = doc.find("head")
    assert len(inside(doc, head, "title")) == 1  # SVG has <title>s of its own, for tooltips
    ids = [el["attrs"]["id"] for el in doc.elements if "id" in el["attrs"]]
    assert len(ids) == len(set(ids)), "ids repeat across the embedded SVGs"


def test_title_and_header_say_what_the_page_is(programs, pages):
    doc = parse(pages["softmax-cpu"])
    assert text(doc.find("title")[0]) == "xla-explorer: softmax (cpu)"
    assert "softmax" in text(doc.find("h1")[0])
    what = text(doc.find("p", class_="what")[0])
    assert "pass pipeline" in what and "cpu" in what and "no network" in what


_REFERENCE = re.compile(r"""\b(?:src|href|action|poster|data)\s*=\s*["']?([^"'\s>]*)""", re.I)


@pytest.mark.parametrize("name", PROGRAMS)
def test_no_external_reference(name, pages):
    page = pages[name]
    for target in _REFERENCE.findall(page):
        assert target.startswith("#"), target  # only links within the page
    assert not re.findall(r"url\(\s*(?!['\"]?#)", page)
    assert "@import" not in page
    assert not re.search(r"<link\b", page, re.I)
    assert not re.search(r"<script\b[^>]*\bsrc", page, re.I)
    assert not re.search(r"<(?:img|iframe|object|embed|audio|video|source)\b", page, re.I)
    assert not re.search(r"<!DOCTYPE svg|<\?xml", page)  # each SVG inlined as an element


def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("building the page tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@needs_dot
def test_the_page_has_no_reference_to_the_network_at_all(monkeypatch, programs, benched):
    """Built with the network cut off, and with not one address in it: the only URLs are the
    XML namespace names SVG requires (identifiers, never fetched)."""
    ex, b, _ = benched
    _no_network(monkeypatch)
    page = xhtml.page(ex, b)
    doc = parse(page)
    for el in doc.elements:
        for key, value in el["attrs"].items():
            if key == "xmlns" or key.startswith("xmlns:"):
                assert value in ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")
                continue
            assert not re.search(r"[a-z][a-z0-9+.-]*:", value or "", re.I) or \
                _harmless(key, value), (el["tag"], key, value)
    without_namespaces = re.sub(r'\sxmlns(?::\w+)?="[^"]*"', "", page)
    assert not re.search(r"(?:https?|ftp|wss?|file)://|(?<![\w:])//[\w.-]+\.\w", without_namespaces,
                         re.I)


def _harmless(key, value):
    """Attribute values that contain a colon without being an address: CSS in style="",
    tooltips, kernel names, clip paths."""
    return key in ("style", "title", "xlink:title", "data-name", "data-kernel", "data-value",
                   "clip-path", "transform", "d", "points", "font-family")


# -- what the page shows ----------------------------------------------------------------------


@needs_dot
@pytest.mark.parametrize("name", PROGRAMS)
def test_one_svg_per_stage_plus_the_buffer_timeline(name, programs, pages):
    ex, page = programs[name], pages[name]
    assert page.count("<svg") == len(ex.stages) + 1
    doc = parse(page)
    for i in range(len(ex.stages)):
        (section,) = doc.find("section", id=f"xe-stage-{i}")
        assert section["attrs"]["data-name"] == ex.stages[i].name
        assert len(inside(doc, section, "svg")) == 1
    (buffers,) = doc.find("section", id="xe-buffers")
    assert len(inside(doc, buffers, "svg")) == 1


@needs_dot
def test_the_bench_chart_is_one_more_svg(programs, benched):
    ex, _, page = benched
    assert page.count("<svg") == len(ex.stages) + 2
    doc = parse(page)
    (perf,) = doc.find("section", id="xe-performance")
    assert len(inside(doc, perf, "svg")) == 1


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_stage_shows_its_hlo_with_the_changed_lines_marked(name, programs, pages):
    ex = programs[name]
    doc = parse(pages[name])
    for i, stage in enumerate(ex.stages):
        (section,) = doc.find("section", id=f"xe-stage-{i}")
        (pre,) = inside(doc, section, "pre", class_="hlo")
        assert text(pre) == stage.module.to_text().rstrip("\n")
        marked = {el["attrs"]["data-name"] for el in inside(doc, pre, "span", class_="line")}
        added = {el["attrs"]["data-name"] for el in inside(doc, pre, "span", class_="added")}
        if i == 0:
            assert not marked
            continue
        d = diff(ex.stages[i - 1].module, stage.module)
        assert marked == d.changed and added == d.added
        assert section["attrs"]["data-changed"] == str(stage.changed).lower()


def test_the_stepper_is_inline_and_every_stage_is_in_the_dom(programs, pages):
    ex, page = programs["layernorm-cpu"], pages["layernorm-cpu"]
    doc = parse(page)
    assert len(doc.find("section", class_="stage")) == len(ex.stages)
    # It opens where fusion happened, as the explorers do.
    (opens,) = [s for s in doc.find("section", class_="stage") if "data-opens" in s["attrs"]]
    assert int(opens["attrs"]["data-index"]) == ex.compiled.fusion_stage
    assert ex.stages[ex.compiled.fusion_stage].name == "fusion"
    (script,) = doc.find("script")
    assert not script["attrs"] and "ArrowRight" in text(script)
    (bar,) = doc.find("div", class_="stepper")
    assert "hidden" in bar["attrs"]  # shown by the script; without it every stage is shown
    assert len(inside(doc, bar, "button")) == 2


@pytest.mark.parametrize("name", PROGRAMS)
def test_decisions_and_clusters_are_shown_with_their_reasons(name, programs, pages):
    ex = programs[name]
    doc = parse(pages[name])
    rows = doc.find("tr", class_="taken") + doc.find("tr", class_="refused")
    assert len(rows) == len(ex.decisions)
    shown = " ".join(text(r) for r in rows)
    for d in ex.decisions:
        assert d.reason in shown
    assert len(doc.find("tr", class_="taken")) == sum(d.fused for d in ex.decisions)
    (clusters,) = doc.find("section", id="xe-clusters")
    body = text(clusters)
    for c in ex.clusters.compiled:
        assert c.name in body
    for e in ex.clusters.eager:
        assert e.reason in body and e.name in body


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_kernel_source_is_present_and_escaped(name, programs, pages):
    ex = programs[name]
    doc = parse(pages[name])
    blocks = {el["attrs"]["data-kernel"]: text(el) for el in doc.find("pre", class_="kernel")}
    assert blocks == ex.kernels
    # Above them, the driver that launches them (with their loops rolled), when there is one.
    assert [text(el) for el in doc.find("pre", class_="driver")] == \
        ([ex.driver] if ex.kernels else [])
    if name == "leaky-cpu":  # its kernel compares with `<`: shown as text, never as a tag
        assert any("<" in source for source in ex.kernels.values())


def test_the_interpreter_says_it_has_no_kernels(programs, pages):
    assert not programs["dense-interpreter"].kernels
    assert "generates no kernel source" in pages["dense-interpreter"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_buffer_numbers_are_ex_buffers(name, programs, pages):
    a = programs[name].buffers
    doc = parse(pages[name])
    (summary,) = doc.find("dl", class_="buffer-summary")
    numbers = {el["attrs"]["data-key"]: (el["attrs"]["data-value"], text(el))
               for el in inside(doc, summary, "dd")}
    for key in ("peak_bytes", "lower_bound_bytes", "fragmentation_bytes", "temporary_bytes"):
        value, shown = numbers[key]
        assert int(value) == getattr(a, key)
        assert shown.startswith(f"{getattr(a, key):,} bytes")
    assert int(numbers["allocations"][0]) == len(a.allocations)
    (table,) = doc.find("table", class_="allocations")
    rows = inside(doc, table, "tr")[1:]
    assert len(rows) == len(a.allocations)
    for row, x in zip(rows, a.allocations):
        cells = [el for el in inside(doc, row, "td")]
        assert int(cells[1]["attrs"]["data-value"]) == x.offset
        assert int(cells[2]["attrs"]["data-value"]) == x.size
        assert text(cells[3]) == f"[{x.start}, {x.end}]"


def test_the_bench_numbers_and_speedup_are_the_bench_results(benched):
    _, b, page = benched
    doc = parse(page)
    (perf,) = doc.find("section", id="xe-performance")
    (speedup,) = inside(doc, perf, "b")
    assert float(speedup["attrs"]["data-value"]) == b.speedup
    assert text(speedup) == f"{b.speedup:.2f}×"
    said = text(perf)
    assert (f"{b.speedup:.2f}× faster" in said) == (b.speedup >= 1)
    assert (f"slower ({b.speedup:.2f}×)" in said) == (b.speedup < 1)
    (table,) = doc.find("table", class_="bench")
    rows = inside(doc, table, "tr")[1:]
    # Memory: eager's peak against what compiled holds, its arena counted.
    for row, t, held in zip(rows, (b.eager, b.compiled),
                            (b.eager.peak_bytes, b.arena_bytes + b.compiled.peak_bytes)):
        cells = inside(doc, row, "td")
        assert float(cells[1]["attrs"]["data-value"]) == t.median
        assert int(cells[3]["attrs"]["data-value"]) == held
    (summary,) = doc.find("dl", class_="bench-summary")
    values = {el["attrs"]["data-key"]: el["attrs"]["data-value"]
              for el in inside(doc, summary, "dd")}
    assert int(values["predicted_peak_bytes"]) == b.predicted_peak_bytes
    assert int(values["arena_bytes"]) == b.arena_bytes
    assert int(values["compiled_held_bytes"]) == b.arena_bytes + b.compiled.peak_bytes


def test_without_a_bench_the_performance_section_is_the_bytes_moved(programs, pages):
    """Bytes moved are computed, so every page has them; times only once ex.bench ran."""
    t = programs["softmax-cpu"].traffic
    section = pages["softmax-cpu"].split('id="xe-performance"', 1)[1].split("</section>")[0]
    assert "computed from the kernels' reads and writes, not measured" in section
    assert f"eager moves {t.eager_bytes / t.fused_bytes:.1f}x the bytes" in section
    assert f"{len(t.eager)} ops" in section and "1 kernel<" in section
    assert "faster" not in section and "slower" not in section and "median" not in section


# -- the file, and the compact form -----------------------------------------------------------


def test_save_html_writes_the_page(tmp_path, programs):
    ex = programs["dense-cpu"]
    path = xhtml.save_html(ex, tmp_path / "dense.html")
    assert path.read_text(encoding="utf-8") == xhtml.page(ex)
    ex.save_html(tmp_path / "via_api.html")  # what Exploration.save_html calls
    assert (tmp_path / "via_api.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_lambda_name_is_escaped():
    ex = xe.explore(lambda x: x * 2, np.ones(4))
    doc = parse(xhtml.page(ex))
    assert not doc.errors
    assert ex.module.name in text(doc.find("title")[0])


@needs_dot
def test_the_fragment_is_compact_and_its_ids_do_not_clash(programs):
    ex = programs["softmax-cpu"]
    one, two = xhtml.fragment(ex), xhtml.fragment(ex)
    for frag in (one, two):
        doc = parse(frag)
        assert not doc.errors and not doc.stack
        assert "<script" not in frag and frag.count("<svg") == 1  # the final module's graph
        assert len(frag) < len(xhtml.page(ex)) / 2
    ids_one = set(re.findall(r'\bid="([^"]+)"', one))
    assert ids_one and not ids_one & set(re.findall(r'\bid="([^"]+)"', two))


def test_without_dot_each_stage_shows_its_dot_text(monkeypatch):
    import xla_explorer.viz.graphviz as gv

    monkeypatch.setattr(gv.shutil, "which", lambda name: None)
    ex = xe.explore(softmax, np.ones((2, 4), np.float32), backend="cpu")
    page = xhtml.page(ex)
    doc = parse(page)
    assert not doc.errors
    assert len(doc.find("pre", class_="dot")) == len(ex.stages)
    assert "install Graphviz" in page or "apt-get install graphviz" in page
    assert page.count("<svg") == 1  # only the buffer timeline, which needs no Graphviz


def test_exploration_save_html_and_the_bundle_carry_the_last_bench(tmp_path, rng):
    from xla_explorer.viz.mime import MIME_TYPE

    x = rng.standard_normal((16, 32)).astype(np.float32)
    ex = xe.explore(softmax, x, backend="cpu")
    ex.save_html(tmp_path / "before.html")
    result = ex.bench(x, repeat=3)
    ex.save_html(tmp_path / "after.html")
    page = (tmp_path / "after.html").read_text()
    assert page.count("<svg") == (tmp_path / "before.html").read_text().count("<svg") + 1
    assert f"{result.speedup:.2f}" in page
    bench = ex._repr_mimebundle_()[MIME_TYPE]["bench"]
    assert bench["compiled"]["median"] == result.compiled.median
    assert bench["speedup"] == result.speedup
