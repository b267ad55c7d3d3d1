"""Binder's configuration, rehearsed without Docker.

repo2docker prints the Dockerfile it would build from binder/ (`--no-build`): the apt
packages, the requirements and postBuild must all be in it. Then tests/binder_rehearsal.py
builds a fresh venv from binder/'s files alone and executes every notebook there.
"""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.binder_rehearsal import NOTEBOOK_SECONDS, rehearse
from tests.test_notebooks import NOTEBOOKS, check_common

# A subprocess; a venv built and every notebook executed, once, by one xdist worker for all
# the notebook tests.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("notebooks")]

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"


def _lines(name: str) -> list[str]:
    """A binder/ file's entries: comments and blank lines left out."""
    text = (BINDER / name).read_text()
    return [line.split("#")[0].strip() for line in text.splitlines()
            if line.split("#")[0].strip()]


def test_repo2docker_builds_what_binder_says():
    repo2docker = shutil.which("repo2docker", path=str(Path(sys.executable).parent))
    assert repo2docker, "jupyter-repo2docker is in the test extra: make setup"
    out = subprocess.run([repo2docker, "--no-build", "--debug", "--no-run", str(ROOT)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    dockerfile = out.stdout + out.stderr
    apt = _lines("apt.txt")
    assert "graphviz" in apt  # the graph views need the real `dot`
    install = re.search(r"apt-get install --yes --no-install-recommends ([^&]*)&&", dockerfile)
    assert install and set(apt) <= set(install.group(1).split()), install
    assert re.search(r'pip install --no-cache-dir -r "binder/requirements\.txt"', dockerfile)
    # postBuild runs after the repository is copied in (it installs the package from it).
    copy, post = dockerfile.find("COPY --chown=0:0 src/ ${REPO_DIR}/"), \
        dockerfile.find("RUN ./binder/postBuild")
    assert 0 < copy < post
    version = (BINDER / "runtime.txt").read_text().strip().removeprefix("python-")
    assert f"Building conda environment for python={version}" in dockerfile


def test_binder_files_say_what_they_install():
    requirements = _lines("requirements.txt")
    assert any(r.startswith("jupyterlab") for r in requirements)
    assert any(r.startswith("ipykernel") for r in requirements)
    post = (BINDER / "postBuild").read_text()
    assert post.startswith("#!/bin/bash") and (BINDER / "postBuild").stat().st_mode & 0o111
    # The package itself, not editable, so the wheel's JupyterLab extension comes with it.
    assert re.search(r"^python -m pip install --no-cache-dir \.$", post, re.M)
    assert "python -m xla_explorer.warm" in post  # the first cells do not wait for Numba


def test_binder_installs_pinned_versions_the_package_accepts():
    """binder/requirements.txt pins every package (scripts/lock_binder.py writes it), within
    the ranges pyproject.toml asks for: postBuild's `pip install .` then changes nothing."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in _lines("requirements.txt"):
        name, sep, version = line.partition("==")
        assert sep and version and not set(version) & set("<>=!~*,; "), line
        pins[canonicalize_name(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]] + [
        Requirement(r) for r in project["optional-dependencies"]["test"]
        if Requirement(r).name in ("jupyterlab", "ipykernel")]
    for req in wanted:
        name = canonicalize_name(req.name)
        assert name in pins, f"{name} is not pinned in binder/requirements.txt"
        assert req.specifier.contains(pins[name]), (req, pins[name])
    assert {"llvmlite", "jupyter-server"} <= set(pins)  # what those need is pinned too


@pytest.mark.deep  # a venv built from nothing, every notebook executed again in it
def test_rehearsal_executes_every_notebook_in_a_venv_made_from_binder():
    r = rehearse()
    python = r.venv / "bin" / "python"
    # Installed from the checkout into the venv's site-packages, not linked to the checkout.
    where = subprocess.run([python, "-c", "import xla_explorer; print(xla_explorer.__file__)"],
                           capture_output=True, text=True, cwd="/", check=True).stdout
    assert Path(where.strip()).is_relative_to(r.venv), where
    # Nothing the test extra brings: the venv is binder/'s alone.
    has_pytest = subprocess.run([python, "-c", "import pytest"], capture_output=True)
    assert has_pytest.returncode != 0, "pytest came from somewhere other than binder/"
    package = ROOT / "extension" / "package.json"
    if package.exists():  # the JupyterLab extension, once there is one, comes with the wheel
        name = json.loads(package.read_text())["name"]
        result = subprocess.run([r.venv / "bin" / "jupyter", "labextension", "list"],
                                capture_output=True, text=True)
        listed = result.stdout + result.stderr
        assert name in listed, listed
    # The lock is complete and consistent: pip finds nothing missing or in conflict.
    check = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert set(r.executed) == {p.stem for p in NOTEBOOKS}
    for stem in sorted(r.executed):
        check_common(r.notebook(stem))
        assert r.cpu_seconds[stem] < NOTEBOOK_SECONDS, (stem, r.cpu_seconds[stem])
    print(f"Binder venv built in {r.build_seconds:.0f} s; notebooks (wall, CPU): "
          + ", ".join(f"{s} {r.seconds[s]:.1f} s, {r.cpu_seconds[s]:.1f} s"
                      for s in sorted(r.seconds)))
