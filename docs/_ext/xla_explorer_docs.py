"""The documentation site's Sphinx extension: the teaching notebooks as pages, executed at
build time, each explorer they display drawn clickable with no kernel and no network.

- The notebooks live in ../notebooks (and stay there, saved without outputs). Sphinx reads
  documents only inside its source directory, so at `config-inited` the ones that differ are
  copied into `<srcdir>/notebooks/`, with a gallery page (`notebooks/index.md`) made from
  each one's title and the first sentence of what it says it teaches. The folder ignores
  itself in git, as `make lab`'s copy does, and a copy whose bytes have not changed keeps its
  modification time, so Sphinx does not read (and execute) it again for nothing. A notebook
  whose execution fails stops the build, its failing cell and error in the message.
- MyST-NB renders the explorer's mime type through the package's plugin
  (xla_explorer/viz/sphinx.py, registered as a `myst_nb.mime_renderers` entry point) as the
  `<script type="application/vnd.xla-explorer.v1+json">` the explorer's module draws. Here it
  is ranked first for the html builders, before the static `text/html` fallback and the
  ipywidgets view (dropped: drawing it would need the widget manager from a CDN).
- The module (xla_explorer/viz/bundle/explorer.js) is written once into `_static/` and loaded
  by the pages that show an explorer. Not as `<script type="module" src=...>`: a browser
  loads no module script from a page opened from disk (file:// has no origin to allow it;
  Chromium reports a CORS error). The file is a classic script that inserts the module's
  text as an inline module, which a page from disk runs, as `ex.save_html`'s page does.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError

from xla_explorer.viz.mime import MIME_TYPE
from xla_explorer.viz.page import BUNDLE, bundle_js

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# The builders whose pages load the module (MyST-NB ranks mime types per builder).
HTML_BUILDERS = ("html", "dirhtml", "singlehtml")
# Where the module goes in the site, under _static/, and the few rules the theme needs.
SCRIPT = "xla-explorer/explorer.js"
STYLE = "xla-explorer/explorer.css"
# The theme underlines links; in the explorer's graph every node is one (its tooltip).
STYLE_TEXT = """\
/* The site's rules for the explorer (docs/_ext/xla_explorer_docs.py); its own come with it. */
.xe-explorer a, .xe-explorer a:hover { text-decoration: none; border-bottom: none; }
"""
# Where the notebooks' copies go, under the source directory.
COPIES = "notebooks"
TEACHES = "**What this notebook teaches.**"


def setup(app):
    app.setup_extension("myst_nb")
    # The notebooks' folder, relative to the configuration's directory; "" for none.
    app.add_config_value("xla_explorer_notebooks", "../notebooks", "env", str)
    app.connect("config-inited", configure)
    app.connect("builder-inited", check_environment)
    app.connect("doctree-read", stop_on_a_cell_error)
    app.connect("doctree-read", drop_widget_state)
    app.connect("builder-inited", write_script)
    app.connect("html-page-context", add_script)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


# -- before reading: the mime type's rank, the notebooks' copies ------------------------------


def configure(app, config) -> None:
    if not _plugin_registered():
        raise ExtensionError(
            "MyST-NB does not know the explorer's mime type: xla-explorer's entry point "
            "(pyproject.toml, myst_nb.mime_renderers) is not installed in this environment. "
            "Run `make setup` (or `pip install -e '.[docs]'`).")
    # Rank 0: before everything MyST-NB ranks (from 10, the widget view, to 100, text/plain);
    # the widget view never: the explorer's JSON is in the same output.
    config.nb_mime_priority_overrides = [
        *config.nb_mime_priority_overrides,
        *((b, MIME_TYPE, 0) for b in HTML_BUILDERS),
        *((b, WIDGET_VIEW, None) for b in HTML_BUILDERS),
    ]
    config.nb_ipywidgets_js = {}  # no require.js or widget manager from a CDN
    if config.xla_explorer_notebooks:
        source = Path(app.confdir, config.xla_explorer_notebooks).resolve()
        copy_notebooks(source, Path(app.srcdir, COPIES))


def _plugin_registered() -> bool:
    from importlib.metadata import entry_points

    return any(ep.value.startswith("xla_explorer.")
               for ep in entry_points(group="myst_nb.mime_renderers"))


def copy_notebooks(source: Path, dest: Path) -> None:
    """`source`'s notebooks into `dest`, with a gallery page; stale copies removed."""
    notebooks = sorted(source.glob("*.ipynb"))
    if not notebooks:
        raise ExtensionError(f"no notebooks in {source} (xla_explorer_notebooks)")
    dest.mkdir(parents=True, exist_ok=True)
    _write_if_changed(dest / ".gitignore", "# Copies made by docs/_ext/xla_explorer_docs.py.\n*\n")
    for old in dest.glob("*.ipynb"):
        if not (source / old.name).exists():
            old.unlink()
    for nb in notebooks:
        _write_if_changed(dest / nb.name, nb.read_bytes())
    _write_if_changed(dest / "index.md", gallery(notebooks))


def _write_if_changed(path: Path, content: str | bytes) -> None:
    data = content.encode("utf-8") if isinstance(content, str) else content
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def gallery(notebooks: list[Path]) -> str:
    """The notebooks' page: each one's title, linked, and the first thing it teaches."""
    lines = ["# The notebooks", "",
             "Each notebook was run from top to bottom when this site was built, on the CPU "
             "(notebook 09 under Numba's CUDA simulator where the machine has no GPU): every "
             "number is what its cells printed then. The explorers are the ones a `%%xla` "
             "cell shows in JupyterLab, drawn here with no kernel: click a tab, step through "
             "the passes with the buttons (or j and k), click a node. To run and edit the "
             "notebooks yourself: `make lab`, or the Binder links in the README.", ""]
    for nb in notebooks:
        title, teaches = _summary(nb)
        lines += [f"- **[{title}]({nb.name})**: {teaches}", ""]
    lines += ["```{toctree}", ":hidden:", "", *(nb.stem for nb in notebooks), "```", ""]
    return "\n".join(lines)


def _summary(nb: Path) -> tuple[str, str]:
    """A notebook's title (its first heading) and the first sentence of its "What this notebook
    teaches" paragraph."""
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    first = "".join(cells[0]["source"]) if cells and cells[0]["cell_type"] == "markdown" else ""
    title = re.search(r"^# (.+)$", first, re.M)
    paragraph = next((p for p in first.split("\n\n") if p.startswith(TEACHES)), "")
    teaches = " ".join(paragraph.removeprefix(TEACHES).split())
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z*`])", teaches, maxsplit=1)[0]
    return (title.group(1) if title else nb.stem), sentence


def check_environment(app) -> None:
    """Before a minute of executing notebooks: the explorer's module is built, and the
    notebooks run on the `python3` kernel, which must be this environment's Python
    (the package, as installed here), not another a user's Jupyter knows by that name. The
    kernels get inline plots whatever backend this shell chose (MPLBACKEND, as the tests'
    runner drops it: tests/binder_rehearsal.py)."""
    if not BUNDLE.exists():
        raise ExtensionError(f"the explorer's module is not built ({BUNDLE}): run `make setup`")
    if app.config.nb_execution_mode == "off":
        return
    from jupyter_client.manager import KernelManager

    argv0 = KernelManager(kernel_name="python3").format_kernel_cmd()[0]
    if Path(argv0).resolve() != Path(sys.executable).resolve():
        raise ExtensionError(f"the python3 kernel would run {argv0}, not {sys.executable}: "
                             "the notebooks must run on this environment's Python (remove "
                             "that kernelspec, or build from its environment)")
    os.environ.pop("MPLBACKEND", None)


# -- while reading and writing: a cell's error, no widget state, the module on pages --------


def stop_on_a_cell_error(app, doctree) -> None:
    """A notebook whose execution failed (a cell raised, untagged) stops the build, with the
    cell and its traceback (docs/conf.py says why here, not in MyST-NB)."""
    docname = app.env.docname
    data = getattr(app.env, "nb_metadata", {}).get(docname, {}).get("exec_data") or {}
    if data.get("succeeded") is False:
        # From nbclient's message on: the cell and the error it raised, without colours.
        text = re.sub(r"\x1b\[[0-9;]*m", "", data.get("traceback") or data.get("error") or "")
        cell = text.find("An error occurred while executing the following cell")
        raise ExtensionError(
            f"{app.env.doc2path(docname)}: a cell raised (tag it `raises-exception` if it is "
            f"meant to).\n{text[cell:] if cell >= 0 else text}")


def drop_widget_state(app, doctree) -> None:
    """MyST-NB embeds a notebook's saved widget state on its page, for the widget manager
    this site does not load; the explorers carry their own JSON."""
    js_files = getattr(app.env, "nb_metadata", {}).get(app.env.docname, {}).get("js_files", {})
    for key in [k for k in js_files if k.startswith("ipywidgets")]:
        del js_files[key]


def _is_explorer(node) -> bool:
    return isinstance(node, nodes.raw) and \
        node.astext().startswith(f'<script type="{MIME_TYPE}">')


def add_script(app, pagename, templatename, context, doctree) -> None:
    if doctree is not None and app.builder.name in HTML_BUILDERS and \
            next(iter(doctree.findall(_is_explorer)), None) is not None:
        app.add_js_file(SCRIPT, loading_method="defer")
        app.add_css_file(STYLE)


def write_script(app) -> None:
    """The module once into _static/, as a classic script that runs it inline (see above).
    Before the pages are written, so that their links to it carry its checksum."""
    if app.builder.name not in HTML_BUILDERS:
        return
    text = ("// xla-explorer's explorer (xla_explorer/viz/bundle/explorer.js), run as an "
            "inline module so that\n// pages opened from disk (file://) draw it too.\n"
            "(function () {\n  var s = document.createElement('script');\n"
            "  s.type = 'module';\n  s.textContent = " + json.dumps(bundle_js()) + ";\n"
            "  document.head.appendChild(s);\n})();\n")
    static = Path(app.outdir, "_static")
    (static / SCRIPT).parent.mkdir(parents=True, exist_ok=True)
    _write_if_changed(static / SCRIPT, text)
    _write_if_changed(static / STYLE, STYLE_TEXT)

