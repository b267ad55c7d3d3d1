"""Kernel images: a compiled CPU program's machine code kept on disk, and run by a later
process without starting Numba, as XLA's persistent compilation cache keeps executables.

Numba's own disk cache keeps every kernel's machine code too, but loading from it starts
Numba: about 0.25 s of importing it and installing its registries before the first kernel
loads, most of what a program whose kernels are on disk waited for its first answer
(docs/performance.md). An image (runtime/native_image.py) is written after a program's first
call, and again once its driver is compiled; a later process that compiles the same program
(the same HLO after the passes, the same code generator and options, the same Numba, CPU and
package) links it with llvmlite (runtime/native_load.py) and runs it as a `NativeExecutable`.
It carries what the explorer shows of the generated code too; what it does not (profiling
kernel by kernel, the generated files, export) is asked of the program Numba compiles from
its own cache, made when first asked. `XLA_EXPLORER_IMAGES=0` turns images off.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..codegen.cache import cache_dir
from ..ir.module import Module
from ..passes.buffer_assignment import OUTPUT, BufferAssignment
from .arena_call import ArenaCall, aligned_bytes, copy_array
from .base import Executable, check_count, gather, half_bits, host_argument
from .native_load import LoadError, link

__all__ = ["NativeExecutable", "enabled", "image_key", "open_image", "save_image"]

FORMAT = 1  # the image's layout; another is never read


def enabled() -> bool:
    return os.environ.get("XLA_EXPLORER_IMAGES", "1") != "0"


def image_key(module: Module, compile_key: tuple) -> str:
    """What an image is found by: the program after the passes (its HLO text, constants and
    all), the backend's compile key (options), and what else decides its machine code."""
    text = "\n".join([str(FORMAT), repr(compile_key), module.to_text(metadata=False),
                      _toolchain()])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


_TOOLCHAIN: str | None = None


def _toolchain() -> str:
    """The package's and Numba's files (by size and time), Python, the CPU and every NUMBA_
    setting, once a process: a change to any of them makes other machine code."""
    global _TOOLCHAIN
    if _TOOLCHAIN is None:
        import llvmlite.binding as ll

        parts = [sys.version, ll.get_host_cpu_name(), ll.get_host_cpu_features().flatten()]
        parts += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("NUMBA_"))
        for name in ("numba", "llvmlite"):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.origin is not None:
                parts.append(_stamp(os.path.join(os.path.dirname(spec.origin), "_version.py")))
        for folder, dirs, files in os.walk(os.path.dirname(os.path.dirname(__file__))):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            parts += [_stamp(os.path.join(folder, f)) for f in sorted(files) if f.endswith(".py")]
        _TOOLCHAIN = "\n".join(parts)
    return _TOOLCHAIN


def _stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} -"
    return f"{path} {st.st_size} {st.st_mtime_ns}"


def _path(key: str) -> Path:
    return cache_dir() / "images" / f"{key}.image"


def save_image(key: str, image: dict) -> None:
    """Write `image` under `key`, atomically; a compiled driver's image replaces a Python
    driver's, never the reverse."""
    path = _path(key)
    if image["driver"] == "python" and path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        pickle.dump({"format": FORMAT, **image}, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def open_image(module: Module, assignment: BufferAssignment, key: str,
               full: Callable[[], Executable]) -> NativeExecutable | None:
    """The program `key` names, linked from its image; None if there is none, or it cannot
    be linked here (the program is then compiled as usual)."""
    if not enabled():
        return None
    start = time.perf_counter()
    try:
        with open(_path(key), "rb") as f:
            image = pickle.load(f)
    except Exception:  # noqa: BLE001  (none there, or cut short, or not an image: compiled)
        return None
    if not isinstance(image, dict) or image.get("format") != FORMAT:
        return None
    try:
        functions = link(image)
    except LoadError:
        return None
    return NativeExecutable(module, assignment, image, functions,
                            time.perf_counter() - start, full)


class NativeExecutable(ArenaCall, Executable):
    """A CPU program run from its kernel image: called as the program Numba compiled would
    be, the same kernels over the same arena. `compile_seconds` is the image's loading.
    What it does not carry comes from `full()`, the CpuExecutable Numba compiles (from its
    own cache), made at the first such question."""

    def __init__(self, module: Module, assignment: BufferAssignment, image: dict,
                 functions: dict, seconds: float, full: Callable[[], Executable]):
        self.module, self.assignment = module, assignment
        self.compile_seconds = seconds
        self._full_executable: Executable | None = None
        self._make_full = full
        self.params = sorted(module.entry.parameters, key=lambda p: p.parameter_number)
        self.output_shapes = [b.shape for b in assignment.buffers if b.category == OUTPUT]
        by_name = {i.name: i for i in module.entry.instructions}
        self.constants = [np.array(by_name[n].literal.reshape(by_name[n].dims), order="C")
                          for n in image["constants"]]
        self._kernel_constants = [half_bits(c) for c in self.constants]
        self._outputs = [tuple(o) for o in image["outputs"]]
        self._image_text = {k: image[k] for k in ("kernels", "kernel_of", "sources",
                                                  "driver_source")}
        self.arena = aligned_bytes(image["arena_bytes"])
        self._to_line = functions.get("to_line")
        if image["driver"] == "compiled":
            self.entry = functions["run"]
            self._layout: tuple = (np.array(image["layout"], np.int64),
                                   np.array(image["numbers"] or (), np.float64))
        else:
            namespace = {"np": np, **functions}
            exec(compile(image["python_driver"], f"<image of {module.name}>", "exec"),
                 namespace)
            self.entry = namespace["run"]
            self._layout = ()
        self._prepare_call(self.output_shapes, self._outputs, set(image["line_outputs"]),
                           self.params)

    def __call__(self, *args) -> list:
        check_count(self.module.name, self.params, args)
        return self.run_arrays(tuple([host_argument(self.params[n], a, n)
                                      for n, a in enumerate(args)]))

    def gather(self, outs, arguments, constants, copy=copy_array) -> list:
        return gather(self._outputs, outs, arguments, constants, copy)

    # -- what the image does not carry --------------------------------------------------

    def full(self) -> Executable:
        """The program as Numba compiles it (from its disk cache), made once."""
        if self._full_executable is None:
            self._full_executable = self._make_full()
        return self._full_executable

    @property
    def kernels(self) -> dict[str, str]:  # type: ignore[override]
        return dict(self._image_text["kernels"])

    @property
    def kernel_of(self) -> dict[str, str]:  # type: ignore[override]
        return dict(self._image_text["kernel_of"])

    @property
    def sources(self) -> dict[str, str]:  # type: ignore[override]
        return dict(self._image_text["sources"])

    @property
    def driver(self) -> str:  # type: ignore[override]
        return self._image_text["driver_source"]

    def profile(self, *args, repeat: int = 5) -> list:
        executable = self.full()
        results = executable.profile(*args, repeat=repeat)
        self.last_call = executable.last_call
        return results

    def __getattr__(self, name: str):
        # Only what this class does not define (the program, its files, ...): the full one's.
        if name.startswith("__") or name in ("_full_executable", "_make_full"):
            raise AttributeError(name)
        return getattr(self.full(), name)
