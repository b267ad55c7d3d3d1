"""Holding a parallel loop's thread back, for the tests of how threads share work."""
from __future__ import annotations

from numba import njit

from xla_explorer.codegen.parallel import load_acquire


@njit
def wait_for(finished):
    """Spin until another thread sets finished[0] (or, if none ever runs, for a few seconds
    at most, so that the test fails instead of hanging)."""
    for _spin in range(1 << 33):
        if load_acquire(finished, 0) > 0:
            break
