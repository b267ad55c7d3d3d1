"""`make lab` really serves JupyterLab on the notebooks, bound to 127.0.0.1."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

# A real JupyterLab server, started through make.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_jupyterlab(tmp_path):
    port, token = _free_port(), "xla-explorer-test"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    args = f"--port={port} --IdentityProvider.token={token} --ServerApp.port_retries=0"
    proc = subprocess.Popen(["make", "-s", "lab", f"LAB_ARGS={args}"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        status = page = None
        while time.time() < deadline and proc.poll() is None:
            try:
                url = f"http://127.0.0.1:{port}"
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5) as r:
                    status = json.load(r)
                with urllib.request.urlopen(f"{url}/lab?token={token}", timeout=5) as r:
                    page = r.read().decode()
                with urllib.request.urlopen(f"{url}/api/contents?token={token}", timeout=5) as r:
                    contents = json.load(r)
                break
            except OSError:
                time.sleep(0.5)
        assert status is not None, proc.stdout.read().decode() if proc.poll() is not None else "timed out"
        assert "JupyterLab" in page
        # The server's root is notebooks/: its README is at the top level.
        assert "README.md" in {item["name"] for item in contents["content"]}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
