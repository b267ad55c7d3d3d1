"""Loops that write into arrays, as NumPy users write them, on every backend.

Two things that once went wrong: a returned int equal to an index the loop wrote (both became
one constant, shared by a kernel and the root tuple, and fusion could not order them), and a
stencil whose time steps all fused into one kernel that computed the first step 3**steps times
per element (the code generator emitted every copy: minutes of compile time for 4 steps).
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.api import BACKENDS
from xla_explorer.passes.fusion import MAX_INDEX_EVALUATIONS, _IndexEvaluations
from xla_explorer.passes.fusion_groups import unfuse


def set_first(x):
    y = x * 2
    y[0] = 1.0
    return y, 0


def squares(x):
    y = np.zeros(4)
    for i in range(4):
        y[i] = x[i] ** 2
    return y, i  # i == 3, also the last index written


def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f, n", [(set_first, 3), (squares, 4)], ids=["set_first", "squares"])
def test_a_returned_int_equal_to_a_written_index(backend, f, n):
    x = np.arange(float(n)) + 0.5
    got_y, got_i = xe.jit(f, backend=backend)(x.copy())
    want_y, want_i = f(x.copy())
    np.testing.assert_array_equal(got_y, want_y)
    assert got_i == want_i


def max_evaluations(module) -> int:
    """The most times any kernel computes one of its values per element of its loop."""
    flat, groups = unfuse(module)
    order = {id(i): n for n, i in enumerate(flat.entry.instructions)}
    return max(max(_IndexEvaluations(g, order).times.values()) for g in groups)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ten_steps_of_a_stencil_stay_small_and_match_numpy(backend):
    u = np.sin(np.linspace(0, 3, 16))
    ex = xe.explore(heat, u.copy(), 10, backend=backend)
    # Fused whole, step 1 would be computed about 3**10 times per element. The limit splits
    # the loop into kernels of two steps each.
    assert max_evaluations(ex.module) <= MAX_INDEX_EVALUATIONS
    assert len(ex.fusions) >= 5
    refusals = [d.message for d in ex.decisions if not d.fused and "times per element" in d.message]
    assert refusals and all(f"more than the limit of {MAX_INDEX_EVALUATIONS}" in m
                            for m in refusals)
    if backend == "cpu":
        # One step's kernel is about 1,100 characters, two steps' about 4,100; all 10 steps in
        # one kernel would be millions.
        assert sum(len(s) for s in ex.kernels.values()) < 30_000
    got = xe.jit(heat, backend=backend)(u.copy(), 10)
    np.testing.assert_allclose(got, heat(u.copy(), 10), rtol=1e-12, atol=0)
