"""The explorer in a Sphinx site built with MyST-NB: a mime renderer for its JSON.

MyST-NB finds this class through the `myst_nb.mime_renderers` entry point (pyproject.toml).
For an output carrying `application/vnd.xla-explorer.v1+json` it renders the one `<script>`
the explorer's ES module draws (`page.data_script`), as raw HTML. It gives the mime type no
priority of its own: installing xla-explorer must not change another project's site, whose
pages would not load the module. A site opts in by ranking the mime type first and loading
the module on its pages, as the documentation's extension does (docs/_ext/xla_explorer_docs.py).
"""
from __future__ import annotations

import json

from .mime import MIME_TYPE
from .page import data_script


def explorer_html(content) -> str:
    """The HTML for one output's JSON (a dict as nbformat reads it, or its text)."""
    payload = json.loads(content) if isinstance(content, (str, bytes)) else dict(content)
    return data_script(payload)


class ExplorerMimeRenderer:
    """MyST-NB's `MimeRenderPlugin`: the explorer's JSON as a script the module draws."""

    mime_priority_overrides: tuple = ()

    @staticmethod
    def handle_mime(renderer, data, inline: bool):
        """Raw HTML nodes for the explorer's mime type; None (MyST-NB's own renderers then
        decide) for any other, and for inline use, which has no room for an explorer."""
        if data.mime_type != MIME_TYPE or inline:
            return None
        from docutils import nodes

        return [nodes.raw(text=explorer_html(data.content), format="html",
                          classes=["output", "xla-explorer"])]
