"""The documentation site (`make docs`): docs/conf.py and its extension (docs/_ext/), with
MyST-NB and the package's mime renderer (xla_explorer/viz/sphinx.py).

- A small site, built with the real configuration from a temporary source (one page and one
  notebook with one `%%xla` cell, executed by the build), opened from disk in headless
  Chromium: the explorer draws with no kernel, no network and no console error, and its stage
  stepper moves between the stages the page's JSON says it shows.
- The whole site under `make test-deep`: every notebook executed, no warning, and every
  explorer the notebooks displayed is on its page.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from xla_explorer.viz.mime import MIME_TYPE
from xla_explorer.viz.page import BUNDLE

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SCRIPT = "_static/xla-explorer/explorer.js"
DATA = re.compile(r'<script type="application/vnd\.xla-explorer\.v1\+json">(.*?)</script>', re.S)
TIMEOUT = 30_000


def _load_screenshot():
    spec = importlib.util.spec_from_file_location("screenshot", ROOT / "scripts" / "screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


S = _load_screenshot()  # find_chromium, chromium_page: the browser tests' own


def needs(what: str, check) -> None:
    """The docs extra, Chromium: installed by `make setup`. Missing fails under CI, and
    skips elsewhere (as tests/extension/test_browser.py does)."""
    try:
        check()
    except (ImportError, S.Missing) as e:
        if CI:
            pytest.fail(f"{what} is needed under CI: {e}")
        pytest.skip(f"{what} is missing here: {e}")


def _docs_extra():
    import myst_nb  # noqa: F401
    import sphinx  # noqa: F401


def sphinx_build(src: Path, out: Path, *options: str, timeout: int, ok: bool = True) -> str:
    """`make docs`'s sphinx-build with docs/conf.py, any source: its output; a failure
    unless it succeeds (fails, with `ok=False`)."""
    needs("the docs extra (sphinx, myst-nb)", _docs_extra)
    if not BUNDLE.exists():
        pytest.fail(f"the explorer's module is not built ({BUNDLE}): run `make setup`")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-c", str(DOCS),
         "-d", str(out / "doctrees"), *options, str(src), str(out / "html")],
        capture_output=True, text=True, timeout=timeout)
    log = result.stdout + result.stderr
    assert (result.returncode == 0) == ok, log[-6000:]
    return log


def payloads(html: str) -> list[dict]:
    return [json.loads(m.replace("<\\/", "</")) for m in DATA.findall(html)]


# -- the mime renderer alone ---------------------------------------------------------------


def test_the_renderer_writes_the_explorers_script_for_its_mime_type_only():
    needs("the docs extra (sphinx, myst-nb)", _docs_extra)
    from importlib.metadata import entry_points

    from myst_nb.core.render import MimeData

    from xla_explorer.viz.sphinx import ExplorerMimeRenderer

    eps = entry_points(group="myst_nb.mime_renderers")
    assert any(ep.load() is ExplorerMimeRenderer for ep in eps), \
        "the entry point is not installed: make setup"
    payload = {"version": 1, "module": "m", "stages": [{"hlo": "</script><b>"}]}
    (node,) = ExplorerMimeRenderer.handle_mime(None, MimeData(MIME_TYPE, payload), False)
    assert node["format"] == "html"
    assert DATA.fullmatch(node.astext()) and payloads(node.astext()) == [payload]
    assert "</script><b>" not in node.astext()  # escaped: the script cannot end early
    # nbformat may hand the JSON over as text
    (again,) = ExplorerMimeRenderer.handle_mime(None, MimeData(MIME_TYPE, json.dumps(payload)),
                                                False)
    assert again.astext() == node.astext()
    for other in ("text/html", "text/plain", "application/vnd.jupyter.widget-view+json"):
        assert ExplorerMimeRenderer.handle_mime(None, MimeData(other, "x"), False) is None
    assert ExplorerMimeRenderer.handle_mime(None, MimeData(MIME_TYPE, payload), True) is None
    # No rank of its own: another project's site is not changed by installing the package.
    assert not ExplorerMimeRenderer.mime_priority_overrides


# -- a small site, in a browser -------------------------------------------------------------

NOTEBOOK_TITLE = "01: a tiny notebook"


def tiny_site(tmp: Path) -> tuple[Path, Path]:
    """A source folder (an index and one page) and a notebooks folder with one notebook."""
    src, nbs = tmp / "src", tmp / "notebooks"
    src.mkdir()
    nbs.mkdir()
    (src / "index.md").write_text(
        "# A tiny site\n\n```{toctree}\n\npage\nnotebooks/index\n```\n")
    (src / "page.md").write_text("# A page\n\nNo explorer here.\n")
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[
        v4.new_markdown_cell(f"# {NOTEBOOK_TITLE}\n\n**What this notebook teaches.** One "
                             "cell, one explorer."),
        v4.new_code_cell("%load_ext xla_explorer\nimport numpy as np\n"
                         "x = y = z = np.arange(8, dtype=np.float32)"),
        v4.new_code_cell("%%xla --backend interpreter\ntotal = np.sum(x + y * z)"),
        v4.new_code_cell("raise ValueError('meant to fail')",
                         metadata={"tags": ["raises-exception"]}),
        v4.new_markdown_cell("The end."),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}})
    nbformat.write(nb, nbs / "01_tiny.ipynb")
    return src, nbs


@pytest.fixture(scope="module")
def small_site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("docs-site")
    src, nbs = tiny_site(tmp)
    sphinx_build(src, tmp / "build", "-D", f"xla_explorer_notebooks={nbs}", timeout=240)
    return tmp / "build" / "html"


@pytest.fixture(scope="module")
def chromium() -> str:
    """Chromium's path, before a site is built for it."""
    found: list[str] = []

    def check():
        found.append(S.find_chromium(None))
        import playwright  # noqa: F401

    needs("Chromium with Playwright (make setup)", check)
    return found[0]


@pytest.mark.slow  # a notebook executed, a browser
def test_a_built_page_draws_its_explorer_from_disk_and_steps_through_stages(
        chromium, small_site, tmp_path):
    html = (small_site / "notebooks" / "01_tiny.html").read_text()
    (payload,) = payloads(html)  # the %%xla cell's one explorer, ranked above its text/html
    assert re.search(rf'<script defer="defer" src="\.\./{SCRIPT}(\?v=\w+)?"></script>', html)
    assert not re.search(r"<script[^>]*src=\"https?:", html)  # no CDN: no widget manager
    assert "widget-state+json" not in html and "widget-view+json" not in html
    # The module is in the site once; a page without an explorer does not load it.
    assert (small_site / SCRIPT).stat().st_size > BUNDLE.stat().st_size
    assert "xla-explorer/explorer.js" not in (small_site / "page.html").read_text()
    gallery = (small_site / "notebooks" / "index.html").read_text()
    assert NOTEBOOK_TITLE in gallery and "One cell, one explorer." in gallery
    assert 'href="01_tiny.html"' in gallery

    # The stages the explorer steps through: those that changed the module, and the trace;
    # it opens at the fusion pass.
    stages = payload["stages"]
    shown = [s["index"] for s in stages if s["changed"] or s["index"] == 0]
    at = next(k for k, i in enumerate(shown) if stages[i]["name"] == "fusion")
    assert 0 < at < len(shown) - 1, shown  # room to step both ways

    from playwright.sync_api import Error as PlaywrightError

    errors: list[str] = []
    outside: list[str] = []
    with S.chromium_page(tmp_path, chromium) as page:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:"))
                else outside.append(r.url))
        page.goto((small_site / "notebooks" / "01_tiny.html").as_uri(), timeout=TIMEOUT)
        try:
            explorer = page.wait_for_selector(".xe-explorer", timeout=TIMEOUT)
            page.wait_for_selector(".xe-panel[data-tab=Stages] svg", timeout=TIMEOUT)
        except PlaywrightError as e:
            raise AssertionError(f"no explorer drawn; the console said {errors}") from e

        def stage_becomes(index: int) -> None:
            page.wait_for_function("([el, v]) => el.dataset.stage === v",
                                   arg=[explorer, str(index)], timeout=TIMEOUT)

        stage_becomes(shown[at])
        explorer.query_selector(".xe-panel[data-tab=Stages] .xe-next").click()
        stage_becomes(shown[at + 1])
        explorer.query_selector(".xe-panel[data-tab=Stages] .xe-prev").click()
        stage_becomes(shown[at])
        explorer.query_selector(".xe-panel[data-tab=Stages] .xe-prev").click()
        stage_becomes(shown[at - 1])
    assert not errors, errors
    assert not outside, outside


@pytest.mark.deep  # a notebook executed: a build's rule, not what a reader sees
def test_a_cell_that_raises_stops_the_build_unless_it_is_tagged(tmp_path):
    src, nbs = tiny_site(tmp_path)
    nb = nbformat.read(nbs / "01_tiny.ipynb", as_version=4)
    nb.cells[-2].metadata.tags = []  # the raise, untagged
    nbformat.write(nb, nbs / "01_tiny.ipynb")
    log = sphinx_build(src, tmp_path / "build", "-D", f"xla_explorer_notebooks={nbs}",
                       timeout=240, ok=False)
    assert "01_tiny.ipynb: a cell raised" in log and "ValueError: meant to fail" in log


# -- the whole site -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.deep  # every notebook executed again: a minute or two
def test_the_whole_site_builds_with_every_notebook_and_every_explorer(tmp_path):
    """docs/ as `make docs` builds it (into a temporary folder; the notebooks' copies go
    into docs/notebooks/, which git ignores): no warning, no cell error."""
    log = sphinx_build(DOCS, tmp_path, timeout=1800)
    site, executed = tmp_path / "html", tmp_path / "jupyter_execute" / "notebooks"
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    total = 0
    for path in notebooks:
        assert f"{path.name}: Executed notebook" in log, path.name
        page = (site / "notebooks" / path.with_suffix(".html").name).read_text()
        ran = nbformat.read(executed / path.name, as_version=4)
        shown = sum(MIME_TYPE in o.get("data", {}) for c in ran.cells if c.cell_type == "code"
                    for o in c.outputs)
        assert len(payloads(page)) == shown, path.name
        assert (SCRIPT in page) == (shown > 0), path.name
        total += shown
    assert total > 0, "no notebook displayed an explorer"
    assert (site / SCRIPT).exists() and (site / "index.html").exists()
