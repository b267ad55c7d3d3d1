"""Tables and figures of numbers for the static HTML view and for code: bytes moved as a table
(`traffic_html`), and `BenchResult.plot()`'s matplotlib figure of time and memory (the
explorer draws its own charts from the same numbers in the bundle)."""
from __future__ import annotations


from .format import byte_unit, bytes_text, ratio_text, time_unit, verdict


MONO = "font-family:monospace;font-size:12px;line-height:1.35"
# JupyterLab centres and right-aligns the cells of rendered tables; these read as text.
CELL = "text-align:left;padding:1px 10px 1px 0;vertical-align:top"


def table_html(header, rows) -> str:
    """A table whose cells read left to right, as text does."""
    head = "".join(f"<th style='{CELL}'>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td style='{CELL}'>{c}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table style='{MONO};margin:0'><tr>{head}</tr>{body}</table>"


def traffic_html(t) -> str:
    """Bytes moved to and from memory, eager op by op against fused (`ex.traffic`): computed
    from the kernels' reads and writes, never measured, so the same on every machine."""
    rows = [(label, f"{len(items)} {noun}{'s' if len(items) != 1 else ''}",
             bytes_text(sum(m.read_bytes for m in items)),
             bytes_text(sum(m.write_bytes for m in items)), bytes_text(total))
            for label, items, noun, total in (
                ("eager NumPy", t.eager, "op", t.eager_bytes),
                ("compiled", t.fused, "kernel", t.fused_bytes))]
    ratio = (f"; eager moves {ratio_text(t.eager_bytes / t.fused_bytes, 1)} the bytes"
             if t.fused_bytes else "")
    return (f"<p><strong>bytes moved to and from memory</strong> (computed from the kernels' "
            f"reads and writes, not measured){ratio}</p>"
            + table_html(("", "steps", "read", "written", "total"), rows))


def traffic_or_nothing(ex) -> str:
    """traffic_html of `ex`, or "" where there is none to compute (an auto-clustered run's
    eager ops move bytes no kernel accounts for)."""
    try:
        return traffic_html(ex.traffic)
    except Exception:  # the table is an aid; the tab must open without it
        return ""


def bench_figure(bench):
    """Time and peak memory, eager against compiled, titled with `verdict` and with memory in
    the unit that fits the largest bar."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.2), layout="constrained")
    ax_t, ax_m = fig.subplots(1, 2)
    labels, colors = ["eager NumPy", "compiled"], ["tab:gray", "tab:blue"]
    timings = (bench.eager, bench.compiled)
    slowest = max(t.q3 for t in timings)
    t_unit, t_scale = time_unit(slowest)
    med = [t.median * t_scale for t in timings]
    err = [[(t.median - t.q1) * t_scale for t in timings],
           [(t.q3 - t.median) * t_scale for t in timings]]
    ax_t.bar(labels, med, yerr=err, color=colors, capsize=4)
    ax_t.set_ylabel(f"{t_unit} per call (median, IQR)")
    ax_t.set_title(f"{bench.name}: compiled is {verdict(bench.speedup)}", fontsize=10)
    # Compiled: the arena it keeps between calls, and on it what a call allocates. Both are
    # memory it holds: a bar of the call alone would show it far smaller than it is.
    eager, arena, call = bench.eager.peak_bytes, bench.arena_bytes, bench.compiled_call_bytes
    unit, size = byte_unit(max(eager, arena + call, bench.predicted_peak_bytes, 1))
    ax_m.bar(labels[0], eager / size, color=colors[0], label="eager: peak during a call")
    ax_m.bar(labels[1], arena / size, color="tab:purple", label="compiled: arena, kept")
    ax_m.bar(labels[1], call / size, bottom=arena / size, color=colors[1],
             label="compiled: allocated by the call")
    ax_m.axhline(bench.predicted_peak_bytes / size, color="tab:green", linestyle=":",
                 label="buffer assignment's prediction")
    ax_m.set_ylabel(f"{unit} held during a call (tracemalloc)")
    ax_m.set_title(bench.memory_verdict, fontsize=9)
    ax_m.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)
    return fig
