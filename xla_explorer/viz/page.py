"""A page of explorers: the same explorer as JupyterLab's, drawn in the browser from the
bundle's JSON by the extension's own code built as one ES module (extension/src/standalone.ts,
built into viz/bundle/explorer.js by `npm run build`, which `make setup` runs).

`page` is `ex.save_html`'s file: the JSON and the module inlined, so it opens from disk with
no kernel and no network; without JavaScript it shows the static HTML view (viz/html.py's
fragment) instead. `data_script` is how any page (the documentation's too) carries a bundle:
the module draws an explorer in front of every such script when it loads.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from ..errors import XlaExplorerError
from .mime import MIME_TYPE

BUNDLE = Path(__file__).parent / "bundle" / "explorer.js"


class BundleNotBuilt(XlaExplorerError, RuntimeError):
    """The explorer's ES module has not been built (a source checkout before `make setup`)."""


def bundle_js() -> str:
    """The explorer's ES module, as text."""
    try:
        return BUNDLE.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BundleNotBuilt(
            f"the explorer's script ({BUNDLE}) is not built: run `make setup` (or `npm run "
            "build` in extension/) in a source checkout; an installed wheel has it") from None


def data_script(payload: dict) -> str:
    """A bundle's JSON as a `<script>` the explorer module draws (never executed as code).
    `</` is written `<\\/`, so no string in the program can close the script early."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="{MIME_TYPE}">{text}</script>'


def page(ex, bench=None) -> str:
    """The whole explorer of `ex` (and `bench`, a BenchResult) as one HTML document."""
    from .html import fragment
    from .mime import payload

    title = f"xla-explorer: {ex.module.name} ({ex.backend})"
    script = bundle_js().replace("</script", "<\\/script")
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n"
            "<style>body { margin: 16px; background: #fff; }</style>\n</head>\n<body>\n"
            f"{data_script(payload(ex, bench))}\n"
            f"<noscript>{fragment(ex, bench)}</noscript>\n"
            f'<script type="module">{script}</script>\n</body>\n</html>\n')


def save_html(ex, path, bench=None) -> Path:
    """Write `page(ex, bench)` to `path`; returns the path."""
    path = Path(path)
    path.write_text(page(ex, bench), encoding="utf-8")
    return path
