"""Screenshot the explorer in a real JupyterLab: `make screenshot` (docs/explorer.png).

Starts JupyterLab on a copy of a notebook (temporary config, runtime, settings and workspace
directories, a random token, a free port, no news popup), opens it in headless Chromium
through Playwright, runs every cell, waits for the kernel to go idle and the explorer widget
to render, and saves a PNG of the `%%xla` cell with its summary and widget.

    python scripts/screenshot.py [--notebook notebooks/01_first_cell.ipynb]
                                 [--out docs/explorer.png] [--report facts.json]

`--report` writes what the page showed (widgets rendered, error outputs) as JSON, for the
tests. Exit status 2: something needed is missing (Chromium, Playwright, JupyterLab); 1: the
page did not show what it should. Chromium is the Debian binary (`apt-get install chromium`,
done by `make setup`): `playwright install` cannot download browsers here.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# As docs/machine-facts.md says: no sandbox as root, no GPU, and nothing that reaches the network.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]
# The kernel status item of the status bar. The notebook toolbar says "Idle" before any
# kernel exists; this text appears only once the kernel has started and is idle.
KERNEL_IDLE = re.compile(r"\(ipykernel\) \| Idle")
SETTINGS = {
    # No "Would you like to receive official Jupyter news?" popup over the notebook.
    "@jupyterlab/apputils-extension/notification":
        {"fetchNews": "false", "checkForUpdates": False},
    # Every cell in the DOM, so every cell's prompt and output can be checked.
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}
# The live explorer: the kernel's widget (the extension's host says it shows the widget, not
# its own renderer), drawing the extension's explorer.
WIDGET = ".xe-host[data-shown=widget] .xe-explorer"


class Missing(Exception):
    """Something the screenshot needs is not installed (exit status 2)."""


class Failed(Exception):
    """The page did not show what it should (exit status 1)."""


def find_chromium(explicit: str | None) -> str:
    candidates = [explicit] if explicit else [os.environ.get("CHROMIUM")] + [
        shutil.which(n) for n in CHROMIUM_NAMES]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise Missing("Chromium was not found" + (f" at {explicit}" if explicit else "") +
                  ". Run `make setup` (it installs it with apt-get), or as root "
                  "`apt-get update && apt-get install -y chromium`; or pass --chromium PATH.")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_settings(settings_dir: Path, extra: dict | None = None) -> None:
    for plugin, values in {**SETTINGS, **(extra or {})}.items():
        path = settings_dir / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@contextmanager
def jupyter_lab(root: Path, tmp: Path, timeout: float = 90, settings: dict | None = None):
    """A JupyterLab server on `root`, isolated from the user's own configuration; yields
    (base URL, token). `settings` adds user settings (plugin id -> values)."""
    port, token = free_port(), secrets.token_hex(16)
    dirs = {name: tmp / name for name in ("config", "runtime", "settings", "workspaces")}
    for d in dirs.values():
        d.mkdir()
    write_settings(dirs["settings"], settings)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(dirs["config"]),
               JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
               JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
               JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]))
    args = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
            f"--port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={dirs['settings']}",
            f"--LabApp.workspaces_dir={dirs['workspaces']}",
            # window.jupyterapp: run commands by id instead of clicking through menus.
            "--LabApp.expose_app_in_browser=True"]
    if hasattr(os, "getuid") and os.getuid() == 0:
        args.append("--allow-root")
    log = open(tmp / "jupyter.log", "w+")
    proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise Failed(f"jupyter lab exited with status {proc.returncode}:\n"
                             + log.read()[-3000:])
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5):
                    break
            except OSError:
                if time.time() > deadline:
                    raise Failed(f"jupyter lab did not answer on {url} in {timeout:.0f} s") from None
                time.sleep(0.3)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextmanager
def chromium_page(tmp: Path, chromium: str, *, width: int = 1400, height: int = 1100):
    """One headless Chromium page (Playwright, the Debian binary, the flags above); yields the
    page. Shared with the extension's browser tests (tests/extension/test_browser.py)."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        try:
            context = pw.chromium.launch_persistent_context(
                str(tmp / "profile"), executable_path=chromium, headless=True,
                args=CHROMIUM_FLAGS, viewport={"width": width, "height": height},
                device_scale_factor=1)
        except PlaywrightError as e:
            raise Missing(f"Chromium at {chromium} did not start: {e}") from None
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


def page_facts(page) -> dict:
    """What the notebook shows, read from the DOM."""
    return page.evaluate("""() => {
        const all = (sel) => Array.from(document.querySelectorAll(sel));
        const prompts = all('.jp-CodeCell .jp-InputPrompt').map(e => e.textContent.trim());
        const text = document.querySelector('.jp-Notebook')?.innerText ?? '';
        return {
            code_cells: prompts.length,
            prompts: prompts,
            widgets: all('.xe-host[data-shown=widget] .xe-explorer').length,
            widget_svgs: all('.xe-host[data-shown=widget] .xe-explorer svg').length,
            error_outputs: all('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
                .map(e => e.innerText.slice(0, 500)),
            widget_errors: (text.match(/Error displaying widget[^\\n]*/g) || []),
            check_ok: text.includes('check against eager NumPy: ok'),
        };
    }""")


def run_notebook(page, url: str, token: str, name: str, timeout_ms: int) -> None:
    page.goto(f"{url}/lab/tree/{name}?token={token}&reset", timeout=timeout_ms)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_ms)
    page.get_by_text(KERNEL_IDLE).first.wait_for(timeout=timeout_ms)
    page.evaluate("""async () => {
        const app = window.jupyterapp;
        if (app.shell.leftCollapsed === false) await app.commands.execute('application:toggle-left-area');
        await app.commands.execute('notebook:run-all-cells');
    }""")
    # Every code cell numbered ("[3]:", not "[*]:" or "[ ]:"), then the kernel idle again.
    page.wait_for_function("""() => {
        const p = Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputPrompt'));
        return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent));
    }""", timeout=timeout_ms)
    page.get_by_text(KERNEL_IDLE).first.wait_for(timeout=timeout_ms)
    page.wait_for_selector(WIDGET, timeout=timeout_ms)
    # The Stages panel draws its graph (Graphviz in the browser) inside the widget.
    page.wait_for_selector(f"{WIDGET} .xe-graph svg g.node", timeout=timeout_ms)


def frame_xla_cell(page) -> None:
    """Make the first `%%xla` cell (source, summary, explorer) the active cell, at the top.
    Through the notebook's own API: JupyterLab scrolls back to the active cell otherwise."""
    page.evaluate("""async () => {
        const notebook = window.jupyterapp.shell.currentWidget.content;
        const index = notebook.widgets.findIndex(
            c => c.model.type === 'code' && c.model.sharedModel.getSource().startsWith('%%xla'));
        if (index < 0) return;
        notebook.mode = 'command';
        notebook.activeCellIndex = index;
        await notebook.scrollToItem(index, 'start');
        notebook.widgets[index].node.scrollIntoView({block: 'start'});
    }""")
    page.wait_for_timeout(500)  # let the scroll settle and lazily drawn parts paint


def screenshot(notebook: Path, out: Path, chromium: str, *, width: int, height: int,
               timeout: float) -> dict:
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise Missing("Python Playwright is missing: run `make setup` (the [test] extra) or "
                      f"`{sys.executable} -m pip install playwright`.") from None
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        raise Missing("JupyterLab is missing: run `make setup`.") from None
    if not notebook.exists():
        raise Missing(f"no notebook at {notebook}")
    timeout_ms = int(timeout * 1000)
    with tempfile.TemporaryDirectory(prefix="xla-screenshot-") as t:
        tmp = Path(t)
        # A copy: running the cells in the browser must not touch the repository's notebook.
        root = tmp / "notebooks"
        root.mkdir()
        shutil.copy(notebook, root / notebook.name)
        with jupyter_lab(root, tmp) as (url, token), sync_playwright() as pw:
            try:
                context = pw.chromium.launch_persistent_context(
                    str(tmp / "profile"), executable_path=chromium, headless=True,
                    args=CHROMIUM_FLAGS, viewport={"width": width, "height": height},
                    device_scale_factor=1)
            except PlaywrightError as e:
                raise Missing(f"Chromium at {chromium} did not start: {e}") from None
            try:
                page = context.pages[0] if context.pages else context.new_page()
                try:
                    run_notebook(page, url, token, notebook.name, timeout_ms)
                except PlaywrightError as e:
                    facts = page_facts(page)
                    page.screenshot(path=str(out.with_suffix(".failed.png")))
                    raise Failed(f"{e.message.splitlines()[0]}\nthe page showed: "
                                 f"{json.dumps(facts)}\n(screenshot: "
                                 f"{out.with_suffix('.failed.png')})") from None
                facts = page_facts(page)
                frame_xla_cell(page)
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out))
            finally:
                context.close()
    return facts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebook", type=Path, default=ROOT / "notebooks/01_first_cell.ipynb")
    parser.add_argument("--out", type=Path, default=ROOT / "docs/explorer.png")
    parser.add_argument("--report", type=Path, help="write what the page showed as JSON")
    parser.add_argument("--chromium", help="the Chromium binary (default: $CHROMIUM, PATH)")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1100)
    parser.add_argument("--timeout", type=float, default=90, help="seconds for each wait")
    args = parser.parse_args(argv)
    start = time.time()
    try:
        facts = screenshot(args.notebook.resolve(), args.out.resolve(),
                           find_chromium(args.chromium), width=args.width,
                           height=args.height, timeout=args.timeout)
    except Missing as e:
        print(f"screenshot: {e}", file=sys.stderr)
        return 2
    except Failed as e:
        print(f"screenshot: {e}", file=sys.stderr)
        return 1
    if args.report:
        args.report.write_text(json.dumps(facts, indent=1))
    problems = []
    if not facts["widgets"]:
        problems.append("no explorer widget rendered")
    if facts["error_outputs"] or facts["widget_errors"]:
        problems.append(f"error output: {facts['error_outputs'] + facts['widget_errors']}")
    if not facts["check_ok"]:
        problems.append("no '%%xla' summary saying 'check against eager NumPy: ok'")
    if problems:
        print(f"screenshot: saved {args.out}, but " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"saved {args.out} ({args.out.stat().st_size // 1024} KiB, {facts['code_cells']} "
          f"cells, {facts['widgets']} explorer widgets) in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
