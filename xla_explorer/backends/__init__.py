"""The backends, registered in one place: a new backend is a module implementing
`backends.base.Backend` and one line in the tuple below."""
from __future__ import annotations

from ..runtime.base import Executable
from .base import Backend, PassOptions
from .cpu import CpuBackend
from .cuda import CudaBackend
from .interpreter import InterpreterBackend

BACKENDS: dict[str, Backend] = {b.name: b for b in (
    InterpreterBackend(),
    CpuBackend(),
)}

# Backends that need a device (or its simulator): `get_backend`, `xe.jit`, `xe.explore` and
# `%%xla --backend` take them like the others, but the tests parametrised over BACKENDS, which
# every machine runs, do not; each has its own sweep (tests/cuda/ for cuda), and joins the
# conformance tests (tests/test_backend_conformance.py) under its simulator.
DEVICE_BACKENDS: dict[str, Backend] = {b.name: b for b in (
    CudaBackend(),
)}


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name] if name in BACKENDS else DEVICE_BACKENDS[name]
    except KeyError:
        raise ValueError(f"backend {name!r} is not available; choose one of "
                         f"{(*BACKENDS, *DEVICE_BACKENDS)}") from None


__all__ = ["BACKENDS", "DEVICE_BACKENDS", "Backend", "Executable", "PassOptions", "get_backend"]
