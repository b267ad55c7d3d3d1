"""The backends, registered in one place: a new backend is a module implementing
`backends.base.Backend` and one line in the tuple below."""
from __future__ import annotations

from .base import Backend, Executable
from .cpu import CpuBackend
from .interpreter import InterpreterBackend

BACKENDS: dict[str, Backend] = {b.name: b for b in (
    InterpreterBackend(),
    CpuBackend(),
)}


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"backend {name!r} is not available; choose one of "
                         f"{tuple(BACKENDS)}") from None


__all__ = ["BACKENDS", "Backend", "Executable", "get_backend"]
