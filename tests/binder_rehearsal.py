"""Binder rehearsed without Docker: the one place the test suite executes the notebooks.

`rehearse()` makes a fresh virtual environment from `binder/`'s files alone (its
`requirements.txt`, then its `postBuild` run from the repository's root, as repo2docker runs
them), then executes every notebook there with nbclient, on a fresh kernel of that
environment, in a copy of `notebooks/` (Binder's working directory; the checkout is not
written to). The executed copies are what tests/test_notebooks.py asserts on, so each notebook
runs once per test session.

pytest-xdist workers share the result: the first caller builds it under the session's cache
root (tests/conftest.py) while holding a file lock; the others wait for the lock and read it.

`python tests/binder_rehearsal.py OUT NOTEBOOK...` is what runs inside the fresh environment
(stdlib and that environment's nbclient only): it executes each notebook and writes it, with
its wall time, to OUT.

`execute_here()` executes the notebooks the same way on this environment's own Python, with
no venv to build: what `make test` asserts on (tests/test_notebooks.py); the rehearsal in a
fresh venv is `make test-deep`'s (tests/test_binder.py).
"""
from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
# The most seconds one notebook may take, its runner and kernel together, in CPU time: wall
# time on a machine shared with other work stretches with the load.
NOTEBOOK_SECONDS = 30
# Notebooks one at a time: under `make test` the other core runs other tests, and the first
# kernel's one-off work (bytecode, Numba's first compiles) is then done once, not twice.
PARALLEL = 1


@dataclass
class Rehearsal:
    venv: Path
    executed: dict[str, Path]  # notebook stem -> executed copy
    seconds: dict[str, float]  # notebook stem -> wall time of its execution
    cpu_seconds: dict[str, float]  # notebook stem -> CPU time of its runner and kernel
    errors: dict[str, str]  # notebook stem -> why it stopped (an untagged cell raised)
    build_seconds: float

    def notebook(self, stem: str):
        import nbformat

        if stem in self.errors:
            raise AssertionError(f"{stem}.ipynb failed in the Binder rehearsal:\n"
                                 f"{self.errors[stem]}")
        return nbformat.read(self.executed[stem], as_version=4)


def _cache_root() -> Path:
    root = os.environ.get("XLA_EXPLORER_TEST_CACHE_ROOT")  # set by tests/conftest.py
    if not root:
        raise RuntimeError("run under pytest: tests/conftest.py sets the session's cache root")
    return Path(root)


def _run(cmd, log, **kw) -> None:
    with open(log, "a") as f:
        f.write(f"$ {' '.join(map(str, cmd))}\n")
        f.flush()
        result = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, **kw)
    if result.returncode:
        tail = Path(log).read_text()[-4000:]
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {result.returncode}:\n{tail}")


def _environment(venv: Path) -> dict:
    """The venv first on PATH, and none of the settings a developer's shell may carry that
    Binder's would not: another PYTHONPATH, a matplotlib backend (the kernel's inline plots,
    as in a lab), or no bytecode written (each kernel would compile every module again)."""
    env = dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
               VIRTUAL_ENV=str(venv))
    for name in ("PYTHONPATH", "MPLBACKEND", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def build_venv(venv: Path, log: Path) -> None:
    """What repo2docker does with binder/, in a venv: requirements, then postBuild."""
    _run([sys.executable, "-m", "venv", str(venv)], log)
    env = _environment(venv)
    # Without bytecode (pip's --no-compile; PIP_NO_COMPILE=0 is how its environment says so):
    # the first kernel writes it for the modules the notebooks import, a fraction of the CPU
    # time of compiling everything. What is installed is the same.
    env["PIP_NO_COMPILE"] = "0"
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"],
         log, cwd=ROOT, env=env)
    _run(["bash", "binder/postBuild"], log, cwd=ROOT, env=env)


def execute_all(venv: Path, out: Path, log: Path) -> dict:
    """Every notebook executed in the venv, PARALLEL at a time, in order; returns
    {stem: {"seconds": s, "cpu_seconds": s, "error": text or None}}."""
    work = out / "notebooks"  # Binder's notebooks/ directory: the kernels' working directory
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    paths = sorted(work.glob("*.ipynb"))
    env = _environment(venv)

    def one(path: Path):
        result = subprocess.run([venv / "bin" / "python", __file__, str(out), str(path)],
                                env=env, cwd=work, capture_output=True, text=True)
        with open(log, "a") as f:
            f.write(f"--- {path.name}\n{result.stdout}{result.stderr}")
        return result

    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(one, paths))
    results = {}
    for path in paths:
        record = out / f"{path.stem}.json"
        results[path.stem] = (json.loads(record.read_text()) if record.exists() else
                              {"seconds": None, "error": "the runner wrote nothing; see "
                               f"{log}"})
    return results


def rehearse() -> Rehearsal:
    """The session's rehearsal in a fresh venv made from binder/, built by the first caller
    (in any xdist worker)."""
    return _once(_cache_root() / "binder", build=True)


def execute_here() -> Rehearsal:
    """Every notebook executed once per session on a fresh kernel of this environment."""
    return _once(_cache_root() / "notebooks-here", build=False)


def _once(base: Path, build: bool) -> Rehearsal:
    base.mkdir(parents=True, exist_ok=True)
    done = base / "rehearsal.json"
    with open(base / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            log = base / "log.txt"
            start = time.perf_counter()
            venv = base / "venv" if build else Path(sys.prefix)
            record: dict = {"venv": str(venv)}
            try:
                if build:
                    build_venv(venv, log)
                record["build_seconds"] = time.perf_counter() - start
                record["notebooks"] = execute_all(venv, base / "executed", log)
            except Exception as e:  # recorded, so other workers fail alike, not rebuild
                record["failed"] = str(e)
            done.write_text(json.dumps(record))
    record = json.loads(done.read_text())
    if "failed" in record:
        raise RuntimeError(f"the Binder rehearsal failed:\n{record['failed']}")
    notebooks = record["notebooks"]
    return Rehearsal(Path(record["venv"]),
                     {s: base / "executed" / f"{s}.ipynb" for s in notebooks},
                     {s: r["seconds"] for s, r in notebooks.items()},
                     {s: r.get("cpu_seconds") for s, r in notebooks.items()},
                     {s: r["error"] for s, r in notebooks.items() if r["error"]},
                     record["build_seconds"])


def _execute(out: Path, path: Path) -> None:
    """Inside the fresh venv: run one notebook on that venv's python3 kernel with nbclient."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    argv0 = KernelManager(kernel_name="python3").format_kernel_cmd()[0]
    if Path(argv0).resolve() != Path(sys.executable).resolve():
        raise SystemExit(f"the python3 kernel would run {argv0}, not this venv's python")
    nb = nbformat.read(path, as_version=4)
    # The client starts the kernel and shuts it down (and reaps it: its CPU time counts).
    client = NotebookClient(nb, kernel_name="python3", timeout=120, store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    start, error = time.perf_counter(), None
    try:
        client.execute()
    except CellExecutionError as e:
        error = str(e)
    seconds = time.perf_counter() - start
    # CPU time of this process and of the kernel (reaped at shutdown), with what the kernel
    # ran and waited for (Graphviz): unlike wall time, not stretched by a busy machine.
    cpu = sum(getattr(resource.getrusage(who), f) for who in
              (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
    nbformat.write(nb, out / path.name)
    (out / f"{path.stem}.json").write_text(json.dumps(
        {"seconds": seconds, "cpu_seconds": cpu, "error": error}))


if __name__ == "__main__":
    _out = Path(sys.argv[1])
    for _p in sys.argv[2:]:
        _execute(_out, Path(_p))
