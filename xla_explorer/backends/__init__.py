"""The backends, registered in one place: a new backend is a module implementing
`backends.base.Backend` and one line in the tuple below."""
from __future__ import annotations

from ..runtime.base import Executable
from .base import Backend, PassOptions
from .cpu import CpuBackend
from .cuda import CudaBackend
from .dask import DaskBackend
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


# Backends whose results are lazy collections of another library (dask arrays): taken by
# `get_backend`, `xe.jit`, `xe.explore` and `%%xla --backend` like the others, but not by the
# tests parametrised over BACKENDS, which compare NumPy results; tests/test_dask.py is theirs.
LAZY_BACKENDS: dict[str, Backend] = {b.name: b for b in (
    DaskBackend(),
)}


def get_backend(name: str, **options) -> Backend:
    """The backend registered as `name`, with `options` of its own if any (`chunks=` for
    dask)."""
    try:
        backend = {**BACKENDS, **DEVICE_BACKENDS, **LAZY_BACKENDS}[name]
    except KeyError:
        raise ValueError(f"backend {name!r} is not available; choose one of "
                         f"{(*BACKENDS, *DEVICE_BACKENDS, *LAZY_BACKENDS)}") from None
    return backend.configured(**options) if options else backend


__all__ = ["BACKENDS", "DEVICE_BACKENDS", "LAZY_BACKENDS", "Backend", "Executable", "PassOptions", "get_backend"]
