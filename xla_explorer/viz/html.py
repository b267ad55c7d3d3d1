"""The explorer as static, script-free HTML: the mime bundle's `text/html` fallback, for the
front ends that cannot run the explorer's script (an output viewed outside JupyterLab and its
extension, a code host's notebook preview) and the `<noscript>` part of `ex.save_html`'s page.

`fragment` is one `<div>` with its own scoped style: the stages as a table, the final module's
graph (inline SVG) and HLO, the fusion decisions, the clusters, the kernels' source, the buffer
assignment and the benchmark's numbers when one is given. The explorer itself, with every
stage stepped through, is drawn by the browser from the bundle's JSON (viz/page.py).

Nothing in the output points outside it: no `src=`, no `<link>`, no `@import`, no `url()` but
`#fragment` references inside an SVG. The graph needs Graphviz's `dot`; without it the stage
shows its DOT text and says how to install Graphviz.
"""
from __future__ import annotations

import html
import re
import secrets

from .charts import traffic_or_nothing
from .format import exact_bytes_text, seconds_text, verdict
from .graphviz import GraphvizNotInstalled, graph, render_svg
from .mime import stage_diffs
from .panel_views import DRIVER_TITLE, arena_note_of


def fragment(ex, bench=None) -> str:
    """The compact report, a `<div>` with its own scoped style: the mime bundle's HTML."""
    # Several outputs share one notebook document: ids get a prefix of their own.
    prefix = f"xe-{secrets.token_hex(4)}-"
    return _Builder(ex, bench, prefix=prefix).build(style=CSS)


# -- building ----------------------------------------------------------------------------------


class _Builder:
    """The sections of the report."""

    def __init__(self, ex, bench, prefix: str):
        self.ex, self.bench, self.prefix = ex, bench, prefix
        self.diffs = stage_diffs(ex)

    def build(self, style: str | None = None) -> str:
        parts = [self.header(), self.stages(), self.decisions(), self.clusters(),
                 self.kernels(), self.buffers(), self.performance()]
        css = f"<style>{style}</style>\n" if style else ""
        return f'<div class="xe-report">\n{css}' + "\n".join(p for p in parts if p) + "\n</div>"

    def id(self, name: str) -> str:
        return self.prefix + name

    # -- header ---------------------------------------------------------------------------

    def header(self) -> str:
        ex = self.ex
        changed = sum(1 for s in ex.stages if s.changed)
        clustering = ", with auto-clustering" if ex.autocluster else ""
        lines = [f"<header>\n<h1>xla-explorer: <code>{_e(ex.module.name)}</code></h1>",
                 f'<p class="what">What the compiler did to <code>{_e(ex.module.name)}</code>: '
                 f"the NumPy function traced into HLO and run through an XLA-style pass "
                 f"pipeline for the <b>{_e(ex.backend)}</b> backend{clustering} "
                 f"({len(ex.stages)} stages, {changed} of them changed the module), with the "
                 f"fusion decisions, clusters, kernels and buffer assignment.</p>"]
        return "\n".join(lines) + "\n</header>"

    # -- stages ---------------------------------------------------------------------------

    def stages(self) -> str:
        ex = self.ex
        rows = []
        for i, (s, d) in enumerate(zip(ex.stages, self.diffs)):
            name = _e(s.name)
            rows.append(f'<tr class="{"changed" if s.changed else "unchanged"}"><td>{i}</td>'
                        f"<td>{name}</td><td>{'yes' if s.changed else 'no'}</td>"
                        f"<td>{seconds_text(s.seconds)}</td><td>{_diff_summary(d)}</td></tr>")
        table = ('<table class="stages"><thead><tr><th>#</th><th>stage</th><th>changed</th>'
                 "<th>time</th><th>what changed</th></tr></thead><tbody>\n"
                 + "\n".join(rows) + "\n</tbody></table>")
        out = [f'<section id="{self.id("stages")}" class="xe-stages">', "<h2>Stages</h2>", table]
        final = ex.stages[-1]
        out.append(f"<details open><summary>The final module ({_e(final.name)})</summary>\n"
                   f"{self.final_graph()}\n"
                   f'<pre class="hlo">{_e(final.module.to_text().rstrip())}</pre>\n</details>')
        return "\n".join(out) + "\n</section>"

    def final_graph(self) -> str:
        """The final module's graph as inline SVG, or its DOT text without Graphviz."""
        g = graph(self.ex.stages[-1].module)
        try:
            svg = render_svg(g)
        except GraphvizNotInstalled as err:
            return (f'<div class="graph missing"><p class="warn">{_e(str(err))}</p>'
                    f'<pre class="dot">{_e(g.source)}</pre></div>')
        return f'<div class="graph">{_inline_svg(svg, self.id("final-"))}</div>'

    # -- decisions and clusters -----------------------------------------------------------

    def decisions(self) -> str:
        from .mime import decisions

        ds = decisions(self.ex)
        head = f'<section id="{self.id("decisions")}"><h2>Fusion decisions</h2>'
        if not ds:
            return head + "<p>No fusion decisions were recorded.</p></section>"
        taken = sum(d["fused"] for d in ds)
        rows = "\n".join(
            f'<tr class="{"taken" if d["fused"] else "refused"}"><td>{d["index"]}</td>'
            f'<td>{_e(d["stage"])}</td><td>{"fused" if d["fused"] else "not fused"}</td>'
            f'<td><code>{_e(d["producer"])}</code> → <code>{_e(d["consumer"])}</code></td>'
            f'<td>{_e(d["reason"])}</td></tr>' for d in ds)
        return (f'{head}\n<p><span data-value="{taken}">{taken}</span> taken, '
                f'<span data-value="{len(ds) - taken}">{len(ds) - taken}</span> refused.</p>\n'
                '<table class="decisions"><thead><tr><th>#</th><th>pass</th><th>verdict</th>'
                "<th>producer → consumer</th><th>reason</th></tr></thead><tbody>\n"
                f"{rows}\n</tbody></table></section>")

    def clusters(self) -> str:
        c = self.ex.clusters
        out = [f'<section id="{self.id("clusters")}"><h2>Clusters</h2>']
        if not self.ex.autocluster:
            out.append("<p>Must-compile (no auto-clustering): the whole function is one "
                       "cluster.</p>")
        out.append('<table class="clusters"><thead><tr><th>compiled cluster</th>'
                   "<th>instructions</th></tr></thead><tbody>")
        out += [f"<tr><td>{_e(k.name)}</td><td>{_codes(k.instructions)}</td></tr>"
                for k in c.compiled]
        out.append("</tbody></table>")
        if c.eager:
            out.append('<table class="eager"><thead><tr><th>runs eagerly</th><th>op</th>'
                       "<th>line</th><th>why</th></tr></thead><tbody>")
            out += [f"<tr><td><code>{_e(e.name)}</code></td><td>{_e(e.op)}</td>"
                    f"<td>{e.source_line or ''}</td><td>{_e(e.reason)}</td></tr>"
                    for e in c.eager]
            out.append("</tbody></table>")
        return "\n".join(out) + "\n</section>"

    # -- kernels --------------------------------------------------------------------------

    def kernels(self) -> str:
        ex = self.ex
        out = [f'<section id="{self.id("kernels")}"><h2>Kernels</h2>',
               '<table class="fusions"><thead><tr><th>kernel</th><th>kind</th>'
               "<th>instructions</th><th>outputs</th></tr></thead><tbody>"]
        for f in ex.fusions:
            kind = "row fusion" if f.row else f.kind
            out.append(f"<tr><td><code>{_e(f.name)}</code></td><td>{_e(kind)}</td>"
                       f"<td>{_codes(f.instructions)}</td><td>{_codes(f.outputs)}</td></tr>")
        out.append("</tbody></table>")
        sources = ex.kernels
        if not sources:
            out.append(f"<p>The {_e(ex.backend)} backend generates no kernel source: it "
                       "evaluates the HLO with the reference interpreter.</p>")
        if sources and ex.driver:
            code = _e(ex.driver)
            out.append(f"<details open><summary>{_e(DRIVER_TITLE)}</summary>\n"
                       f'<pre class="driver">{code}</pre></details>')
        for name, source in sources.items():
            block = (f'<pre class="kernel" data-kernel="{_e(name)}">{_e(source)}</pre>')
            summary = f"<summary><code>{_e(name)}</code></summary>"
            out.append(f"<details>{summary}\n{block}</details>")
        return "\n".join(out) + "\n</section>"

    # -- buffers --------------------------------------------------------------------------

    def buffers(self) -> str:
        a = self.ex.buffers
        head = f'<section id="{self.id("buffers")}"><h2>Buffer assignment</h2>'
        if a is None:
            return head + "<p>The pipeline had no buffer-assignment pass.</p></section>"
        summary = _numbers("buffer-summary", [
            ("peak_bytes", "arena (peak)", a.peak_bytes, exact_bytes_text(a.peak_bytes)),
            ("lower_bound_bytes", "lower bound (most bytes live at once)",
             a.lower_bound_bytes, exact_bytes_text(a.lower_bound_bytes)),
            ("fragmentation_bytes", "fragmentation", a.fragmentation_bytes,
             exact_bytes_text(a.fragmentation_bytes)),
            ("temporary_bytes", "temporaries end to end (no reuse)", a.temporary_bytes,
             exact_bytes_text(a.temporary_bytes)),
            ("allocations", "allocations", len(a.allocations), str(len(a.allocations))),
            ("alignment", "alignment", a.alignment, f"{a.alignment} bytes"),
            ("heap_order", "best-fit order kept", a.heap_order, a.heap_order),
        ])
        note = arena_note_of(self.ex)
        out = [head, summary] + ([f'<p class="arena-note">{_e(note)}.</p>'] if note else [])
        rows = "\n".join(
            f'<tr><td>{x.index}</td><td data-value="{x.offset}">{x.offset:,}</td>'
            f'<td data-value="{x.size}">{x.size:,}</td><td>[{x.start}, {x.end}]</td>'
            f"<td>{_codes(v.name for v in x.values)}</td></tr>" for x in a.allocations)
        out.append('<table class="allocations"><thead><tr><th>allocation</th><th>offset</th>'
                   "<th>size (bytes)</th><th>live range</th><th>values</th></tr></thead>"
                   f"<tbody>\n{rows}\n</tbody></table>")
        if a.sharings:
            out.append('<ul class="sharings">' + "".join(f"<li>{_e(s.reason)}</li>"
                                                         for s in a.sharings) + "</ul>")
        return "\n".join(out) + "\n</section>"

    # -- performance ----------------------------------------------------------------------

    def performance(self) -> str:
        b = self.bench
        traffic = traffic_or_nothing(self.ex)
        if b is None and not traffic:
            return ""
        out = [f'<section id="{self.id("performance")}"><h2>Performance</h2>', traffic]
        if b is None:
            return "\n".join(out) + "\n</section>"
        out.append('<p class="speedup">compiled against eager NumPy: '
                   f'{verdict(b.speedup, _bold_ratio)} '
                   f"over {b.repeat} interleaved rounds (medians).</p>")
        rows = []
        for label, t, held, memory in zip(("eager NumPy", "compiled"), (b.eager, b.compiled),
                                          (b.eager.peak_bytes, b.compiled_held_bytes),
                                          b.memory_texts()):
            rows.append(f"<tr><td>{label}</td>"
                        f'<td data-value="{t.median!r}">{seconds_text(t.median)}</td>'
                        f'<td data-value="{t.q3 - t.q1!r}">{seconds_text(t.q3 - t.q1)}</td>'
                        f'<td data-value="{held}">{_e(memory)}</td></tr>')
        out.append('<table class="bench"><thead><tr><th></th><th>time (median)</th>'
                   "<th>IQR</th><th>memory during a call</th></tr></thead><tbody>\n"
                   + "\n".join(rows) + "\n</tbody></table>")
        out.append(f'<p class="memory">{_e(b.memory_verdict)}.</p>')
        if b.spread_note:
            out.append(f'<p class="warn spread">Warning: {_e(b.spread_note)}.</p>')
        compile_s = ([("compile_seconds", "compile time", b.compile_seconds,
                       seconds_text(b.compile_seconds))] if b.compile_seconds is not None else [])
        out.append(_numbers("bench-summary", [
            ("arena_bytes", "arena (allocated once, kept between calls)", b.arena_bytes,
             exact_bytes_text(b.arena_bytes)),
            ("compiled_held_bytes", "compiled holds during a call (arena + the call's)",
             b.compiled_held_bytes, exact_bytes_text(b.compiled_held_bytes)),
            ("predicted_peak_bytes", "predicted peak (arena + outputs)",
             b.predicted_peak_bytes, exact_bytes_text(b.predicted_peak_bytes)),
        ] + compile_s))
        return "\n".join(out) + "\n</section>"


# -- small pieces ------------------------------------------------------------------------------



def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _codes(names) -> str:
    return ", ".join(f"<code>{_e(n)}</code>" for n in names)


def _bold_ratio(speedup: float) -> str:
    return f'<b data-value="{speedup!r}">{speedup:.2f}×</b>'


def _numbers(cls: str, items) -> str:
    """A definition list of named numbers; each value also as data-key/data-value for
    readers that want the number rather than its text."""
    rows = "\n".join(f'<dt>{_e(label)}</dt><dd data-key="{key}" data-value="{_e(value)}">'
                     f"{_e(text)}</dd>" for key, label, value, text in items)
    return f'<dl class="{cls}">\n{rows}\n</dl>'


def _diff_summary(d) -> str:
    if d is None:
        return "traced"
    return ", ".join(f"{len(names)} {label}" for label, names in
                     (("added", d.added), ("removed", d.removed), ("rewritten", d.rewritten))
                     if names)


_SVG_ID = re.compile(r'\bid="([^"]+)"')


def _inline_svg(svg: str, prefix: str) -> str:
    """An SVG document as an element for an HTML page: the XML prologue and doctype dropped,
    and its ids renamed `<prefix><n>` (with the `#id` references to them), so the many SVGs
    of one page neither clash nor point into each other, and the page is the same every time
    (matplotlib names clip paths at random)."""
    svg = svg[svg.index("<svg"):]
    ids = {}
    for name in _SVG_ID.findall(svg):
        ids.setdefault(name, f"{prefix}{len(ids)}")
    svg = _SVG_ID.sub(lambda m: f'id="{ids[m.group(1)]}"', svg)

    def ref(m):
        return m.group(1) + ids.get(m.group(2), m.group(2))

    svg = re.sub(r'(href="#)([^"]+)(?=")', ref, svg)
    return re.sub(r"(url\(#)([^)]+)(?=\))", ref, svg)


# -- style and script --------------------------------------------------------------------------

# Every rule is under .xe-report, so the fragment can sit inside a notebook page.
CSS = """
.xe-report { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
  color: #212121; line-height: 1.4; max-width: 1400px; margin: 0 auto; padding: 0 1em; }
.xe-report h1 { font-size: 1.5em; margin: .6em 0 .2em; }
.xe-report h2 { font-size: 1.2em; border-bottom: 1px solid #ddd; margin-top: 1.6em; }
.xe-report h3 { font-size: 1.05em; margin: .8em 0 .3em; }
.xe-report .what { color: #424242; max-width: 60em; }
.xe-report table { border-collapse: collapse; font-size: .9em; margin: .5em 0; }
.xe-report th, .xe-report td { border: 1px solid #e0e0e0; padding: .2em .5em;
  vertical-align: top; }
/* JupyterLab right-aligns the cells of HTML outputs with a two-class selector: the class twice
   outranks it, so the tables read as text does, left to right. */
.xe-report.xe-report th, .xe-report.xe-report td { text-align: left; }
.xe-report th { background: #f5f5f5; }
.xe-report tr.unchanged { color: #9e9e9e; }
.xe-report tr.taken td:nth-child(3) { color: #2e7d32; font-weight: bold; }
.xe-report tr.refused td:nth-child(3) { color: #c62828; font-weight: bold; }
.xe-report code, .xe-report pre { font-family: ui-monospace, Menlo, Consolas, monospace; }
.xe-report pre { background: #fafafa; border: 1px solid #eee; padding: .6em; overflow: auto;
  font-size: .82em; }
.xe-report .badge { font-size: .75em; font-weight: normal; border-radius: .6em;
  padding: .05em .6em; background: #eceff1; color: #546e7a; }
.xe-report .badge.changed { background: #1565c0; color: white; }
.xe-report small { color: #757575; font-weight: normal; }
.xe-report .stage-body { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.xe-report .stage-body > .graph { flex: 0 1 auto; }
.xe-report .stage-body > pre { flex: 1 1 30em; margin: 0; }
.xe-report .graph svg, .xe-report .chart svg { max-width: 100%; height: auto; }
.xe-report .warn { color: #b71c1c; }
.xe-report dl { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; }
.xe-report dt { color: #616161; }
.xe-report dd { margin: 0; font-variant-numeric: tabular-nums; }
.xe-report .speedup b { font-size: 1.3em; }
"""
