"""Write binder/requirements.txt: every package Binder installs, pinned to the version this
environment has (the one `make test` ran), so that a release anywhere cannot change what a
Binder badge builds.

    .venv/bin/python scripts/lock_binder.py          # write the lock
    .venv/bin/python scripts/lock_binder.py --check  # exit 1 if the lock differs

The packages are what Binder needs and everything they need, read from the installed
packages' metadata (markers evaluated for this Python): JupyterLab and ipykernel, which Binder
runs, jax (notebook 10's real XLA), and xla-explorer's own dependencies (pyproject.toml), which postBuild's
`pip install .` then finds already there. The Binder rehearsal (tests/test_binder.py, in
`make test-deep`) builds a fresh environment from the lock alone and runs every notebook in
it: that is the test that the set is complete and works together.
"""
from __future__ import annotations

import argparse
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "binder" / "requirements.txt"
# What Binder runs besides the package: the notebook server and the kernel, and jax, whose
# XLA notebook 10 compares with (the package's `xla` extra).
BINDER_NEEDS = ["jupyterlab", "ipykernel", "jax"]

HEADER = """\
# Binder (repo2docker) installs these first; postBuild then installs xla-explorer itself from
# this repository. Every version is pinned, to the ones the test suite ran with: written by
# scripts/lock_binder.py (run it after upgrading a dependency), checked by the Binder
# rehearsal (tests/test_binder.py), which builds an environment from this file alone.
# Python {python}.
"""


# Extras of the package that notebooks use: notebook 12 runs on a Dask LocalCluster.
BINDER_EXTRAS = ["dask"]


def roots() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for e in BINDER_EXTRAS for r in project["optional-dependencies"][e]]
    return [Requirement(r) for r in BINDER_NEEDS + project["dependencies"] + extras]


def closure(wanted: list[Requirement]) -> dict[str, str]:
    """Each package `wanted` needs, directly or not, and its installed version, by name."""
    env = default_environment()
    found: dict[str, str] = {}
    todo = [(r, "") for r in wanted]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
            continue
        name = canonicalize_name(req.name)
        dist = metadata.distribution(req.name)
        if name not in found:
            found[name] = dist.version
            todo += [(Requirement(r), "") for r in dist.requires or []]
        for e in req.extras:  # an extra's packages, once each
            key = f"{name}[{e}]"
            if key not in found:
                found[key] = ""
                todo += [(Requirement(r), e) for r in dist.requires or []
                         if "extra" in str(Requirement(r).marker or "")]
    return {k: v for k, v in found.items() if v}


def lock_text() -> str:
    pins = closure(roots())
    python = ".".join(map(str, sys.version_info[:3]))
    return HEADER.format(python=python) + "".join(
        f"{name}=={version}\n" for name, version in sorted(pins.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if binder/requirements.txt is not what this would write")
    args = parser.parse_args()
    text = lock_text()
    if args.check:
        same = LOCK.read_text() == text
        print("binder/requirements.txt is up to date" if same else
              "binder/requirements.txt differs from this environment: run "
              "scripts/lock_binder.py")
        return 0 if same else 1
    LOCK.write_text(text)
    print(f"wrote {LOCK.relative_to(ROOT)}: {text.count('==')} packages pinned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
