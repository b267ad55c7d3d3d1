"""The code generator's tuning values for one test: `codegen_options(prefetch_min_bytes=1024)`
makes the registered cpu backend compile with those changed (`CpuBackend.options`, which it
hands to the code generator), until the test ends."""
from __future__ import annotations

import dataclasses

import pytest

from xla_explorer.backends import get_backend


@pytest.fixture
def codegen_options(monkeypatch):
    backend = get_backend("cpu")

    def use(**changes):
        options = dataclasses.replace(backend.options, **changes)
        monkeypatch.setattr(backend, "options", options)
        return options

    return use
