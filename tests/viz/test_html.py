"""The static HTML view (viz/html.py's fragment): what front ends that cannot run the
explorer's script show, and the `<noscript>` part of `ex.save_html`'s page (tests/viz/
test_page.py). Self-contained, script-free, every number the explorer's.

The HTML is read back with html.parser (a strict checker on top: every element closed in
order, ids unique), so the tests check what is in it rather than how the text happens to be
laid out.
"""
import re
import shutil
import socket
from html.parser import HTMLParser

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.viz import html as xhtml

from .test_mime import PROGRAMS, explorations, softmax

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot is not installed")


@pytest.fixture(scope="module")
def programs():
    return explorations()


@pytest.fixture(scope="module")
def pages(programs):
    return {name: xhtml.fragment(ex) for name, ex in programs.items()}


@pytest.fixture(scope="module")
def benched(programs):
    ex = programs["softmax-cpu"]
    b = ex.bench(repeat=3)
    return ex, b, xhtml.fragment(ex, b)


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


def section(doc, name: str) -> dict:
    """The fragment's section `name`: its ids carry a prefix of their own (xe-<hex>-name)."""
    (found,) = [el for el in doc.find("section")
                if re.fullmatch(rf"xe-[0-9a-f]+-{name}", el["attrs"].get("id", ""))]
    return found


# -- a valid, self-contained document ---------------------------------------------------------


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_fragment_is_valid_html(name, pages):
    doc = parse(pages[name])
    assert not doc.errors, doc.errors[:5]
    assert not doc.stack, [el["tag"] for el in doc.stack]  # everything opened was closed
    assert len(doc.find("h1")) == 1 and len(doc.find("div", class_="xe-report")) == 1
    assert not doc.find("html") and not doc.find("script")  # a piece of a page, no script
    ids = [el["attrs"]["id"] for el in doc.elements if "id" in el["attrs"]]
    assert len(ids) == len(set(ids)), "ids repeat across the embedded SVGs"


def test_the_header_says_what_it_shows(programs, pages):
    doc = parse(pages["softmax-cpu"])
    assert "softmax" in text(doc.find("h1")[0])
    what = text(doc.find("p", class_="what")[0])
    assert "pass pipeline" in what and "cpu" in what


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
    page = xhtml.fragment(ex, b)
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
def test_the_final_modules_graph_and_hlo_and_every_stage_in_a_table(name, programs, pages):
    ex, page = programs[name], pages[name]
    assert page.count("<svg") == 1  # the final module's graph; the charts are the explorer's
    doc = parse(page)
    stages = section(doc, "stages")
    rows = inside(doc, stages, "tr")[1:]
    assert [text(inside(doc, r, "td")[1]) for r in rows] == [s.name for s in ex.stages]
    assert [r["attrs"]["class"] for r in rows] == [
        "changed" if s.changed else "unchanged" for s in ex.stages]
    (pre,) = inside(doc, stages, "pre", class_="hlo")
    assert text(pre) == ex.stages[-1].module.to_text().rstrip("\n")
    assert len(inside(doc, stages, "svg")) == 1


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
    clusters = section(doc, "clusters")
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
    perf = section(doc, "performance")
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
    shown = re.split(r'id="xe-[0-9a-f]+-performance"', pages["softmax-cpu"], maxsplit=1)[1]
    shown = shown.split("</section>")[0]
    assert "computed from the kernels' reads and writes, not measured" in shown
    assert f"eager moves {t.eager_bytes / t.fused_bytes:.1f}x the bytes" in shown
    assert f"{len(t.eager)} ops" in shown and "1 kernel<" in shown
    assert "faster" not in shown and "slower" not in shown and "median" not in shown


# -- each display its own ids, and without Graphviz -------------------------------------------


def test_a_lambda_name_is_escaped():
    ex = xe.explore(lambda x: x * 2, np.ones(4))
    doc = parse(xhtml.fragment(ex))
    assert not doc.errors
    assert ex.module.name in text(doc.find("h1")[0])


@needs_dot
def test_two_displays_ids_do_not_clash(programs):
    ex = programs["softmax-cpu"]
    one, two = xhtml.fragment(ex), xhtml.fragment(ex)
    ids_one = set(re.findall(r'\bid="([^"]+)"', one))
    assert ids_one and not ids_one & set(re.findall(r'\bid="([^"]+)"', two))


def test_without_dot_the_final_module_shows_its_dot_text(monkeypatch):
    import xla_explorer.viz.graphviz as gv

    monkeypatch.setattr(gv.shutil, "which", lambda name: None)
    ex = xe.explore(softmax, np.ones((2, 4), np.float32), backend="cpu")
    page = xhtml.fragment(ex)
    doc = parse(page)
    assert not doc.errors
    assert len(doc.find("pre", class_="dot")) == 1
    assert "install Graphviz" in page or "apt-get install graphviz" in page
    assert "<svg" not in page
