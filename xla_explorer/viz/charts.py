"""Charts as the viewers embed them: a matplotlib Figure as inline SVG text.

The figures themselves are drawn where their numbers live: `BufferAssignment.plot()` (the
arena over the schedule) and `BenchResult.plot()` (time and peak memory, eager against
compiled). The widget, the HTML export and the mime bundle all embed them through here, so
the three show the same picture of the same numbers.
"""
from __future__ import annotations

import io


def figure_svg(figure) -> str:
    """`figure` as an `<svg>` element (no XML prologue, no external references)."""
    buffer = io.StringIO()
    # No RDF metadata block: it names web addresses (as namespaces, never fetched), which
    # would make a self-contained file look as though it had external references.
    figure.savefig(buffer, format="svg", bbox_inches="tight",
                   metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]
