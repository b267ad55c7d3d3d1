"""The CUDA tests run on a GPU where numba.cuda finds one, else under Numba's CUDA simulator.

NUMBA_ENABLE_CUDASIM is set only while each test of this folder runs (monkeypatch restores
the environment after it), so no subprocess of another test inherits it. numba.cuda, once
imported in a worker, stays what it was imported as; the CPU backend never imports it, so
the CPU tests in the same pytest-xdist worker run as they would alone.
"""
import sys

import pytest


def _real_gpu_loaded() -> bool:
    mod = sys.modules.get("numba.cuda")
    return mod is not None and "simulator" not in mod.to_device.__module__


@pytest.fixture(autouse=True)
def cuda_simulator(monkeypatch):
    if not _real_gpu_loaded():
        monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    yield
