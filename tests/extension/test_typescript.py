"""The extension's TypeScript: the type check (sources and tests) and the jest unit tests of
the pure parts (DOT parsing and highlighting, decision stepping, timeline layout, syntax
colouring, formats, node facts), run from pytest so `make test` runs them.

`make setup` installs the npm packages (extension/node_modules) from the committed lock file.
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[2] / "extension"
pytestmark = pytest.mark.slow


def npm_ready() -> None:
    if shutil.which("npm") is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("npm is missing: CI needs Node.js 20 and npm to build the extension")
        pytest.skip("npm is not installed (Node.js 20 builds the extension)")
    if not (EXT / "node_modules" / ".bin" / "jest").exists():
        pytest.fail("extension/node_modules is missing: run `make setup` (it runs npm ci)")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=EXT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, CI="true", FORCE_COLOR="0"))


def test_typescript_type_checks():
    npm_ready()
    r = run("npm", "run", "--silent", "check")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]


def test_jest_unit_tests_pass():
    npm_ready()
    r = run("npx", "--no-install", "jest", "--ci", "--colors=false")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    # jest prints "Tests: N passed, N total": every suite ran, none was skipped.
    assert "Tests:" in out and "skipped" not in out.split("Tests:")[1].splitlines()[0], out[-2000:]
    assert "failed" not in out.split("Tests:")[1].splitlines()[0]
