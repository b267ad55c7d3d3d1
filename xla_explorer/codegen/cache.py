"""Where generated kernels live: real `.py` files, so Numba's on-disk cache works.

Numba caches compiled functions only for functions defined in files (not `exec`), keyed by
the file's path and modification time. So a program's source goes to a file named after its
content: the same program in a second process finds the same file, unchanged, and Numba
loads its machine code from `__pycache__` instead of compiling.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType


def cache_dir() -> Path:
    """`$XLA_EXPLORER_CACHE`, else the user's cache directory (`$XDG_CACHE_HOME` or
    `~/.cache`) under `xla_explorer/kernels`."""
    env = os.environ.get("XLA_EXPLORER_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "xla_explorer" / "kernels"


def source_path(name: str, source: str) -> Path:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    return cache_dir() / f"{name}_{digest}.py"


def write_source(name: str, source: str) -> Path:
    """The file holding `source`, written once (atomically) and never touched again."""
    path = source_path(name, source)
    if not path.exists():
        _write(path, source)
    return path


def _write(path: Path, source: str) -> None:
    """`source` into `path`, atomically (another process may be reading it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    os.replace(tmp, path)


def write_named(stem: str, source: str) -> Path:
    """`write_source` for a name that already says what it holds (a digest of its code):
    the file `<stem>.py`, written once."""
    path = cache_dir() / f"{stem}.py"
    if not path.exists():
        _write(path, source)
    return path


def load(path: Path) -> ModuleType:
    """Import a generated file as a module of its own (once per process)."""
    name = f"xla_explorer_kernels.{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def loaded_function(stem: str, name: str):
    """Function `name` of the generated file `stem` (in the cache directory), loaded once per
    process: a program that calls another (a loop calling its body's program) names it so."""
    return getattr(load(cache_dir() / f"{stem}.py"), name)


def numba_cached(stem: str, name: str) -> bool:
    """Whether Numba's disk cache holds machine code for function `name` of the generated
    file `stem`: its index file, `__pycache__/<stem>.<name>-<line>.py311.nbi`, is there. A
    hint only (an index may lack a signature): whoever asks must work either way."""
    folder = cache_dir() / "__pycache__"
    return folder.is_dir() and any(folder.glob(f"{stem}.{name}-*.nbi"))
