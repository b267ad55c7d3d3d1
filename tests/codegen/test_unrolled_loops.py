"""Long unrolled loops compile in time linear in the steps, and at any depth.

Python loops unroll while tracing, so a time-stepping loop is the same kernel over and over.
The program compiles it once (a kernel that computes what an earlier one does is that
function again) and the driver calls it in a `for` loop where the same kernels run on the
same buffers step after step. A chain of element-wise ops fused into one kernel is emitted
without one Python frame per op.
"""
from __future__ import annotations

import html
import re

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends.cpu import CpuBackend
from xla_explorer.codegen.program import repeats


def heat(u, steps=40):
    for _ in range(steps):
        u = u + np.float32(0.25) * (np.roll(u, 1) - np.float32(2) * u + np.roll(u, -1))
    return u


def heat_numpy(u, steps=40):
    for _ in range(steps):
        u = u + np.float32(0.25) * (np.roll(u, 1) - np.float32(2) * u + np.roll(u, -1))
    return u


def defined_kernels(source: str) -> list[str]:
    return re.findall(r"^def (\w+)\(", source, re.M)


@pytest.mark.parametrize("backend", ["cpu"])  # and tests/cuda/test_unrolled_loops.py
def test_the_steps_of_a_loop_are_one_kernel_called_in_a_loop(backend):
    u = np.sin(np.linspace(0, 6, 48)).astype(np.float32)
    ex = xe.explore(heat, u, backend=backend)
    source = ex.executable.program.source
    kernels = [k for k in defined_kernels(source) if k != "run"]
    # Two steps fuse into a kernel (fusion's duplication limit): 20 launches of one function.
    # (The first step's fused computation lists its literals first, the others' later, as
    # CSE leaves them: the structure is read in a canonical order, so it is the same.)
    assert len(ex.fusions) == 20
    assert len(kernels) == 1, kernels
    # Every launch still has a kernel name of its own, bound to the function it shares.
    assert len(ex.kernels) == 20
    shared = [src for src in ex.kernels.values() if "the same kernel, compiled once" in src]
    assert len(shared) == 19
    assert re.search(r"^    for _ in range\((\d+)\):", source, re.M), source
    np.testing.assert_allclose(ex.run(u), heat_numpy(u), rtol=1e-5, atol=1e-6)


def test_a_rolled_driver_is_short_and_the_last_step_is_read_after_it():
    u = np.cos(np.linspace(0, 6, 32)).astype(np.float32)
    # 44 steps: 484 instructions, short enough to stay unrolled (passes/loop_rolling.py).
    ex = xe.explore(lambda u: heat(u, 44), u, backend="cpu")
    plan = ex.executable.program.plan
    runs = repeats(plan.launches)
    assert sum(count * len(body) for count, body in runs) == len(plan.launches) == 22
    assert max(count for count, _ in runs) >= 10  # pairs of launches, two buffers in turn
    driver = ex.executable.program.source.split("def run(")[1]
    assert driver.count("\n") < 25, driver
    np.testing.assert_allclose(ex.run(u), heat_numpy(u, 44), rtol=1e-4, atol=1e-6)


def test_repeats_need_the_same_buffers_not_only_the_same_kernel():
    # Each step keeps its result (all are outputs): the same kernel on new buffers each time.
    def keep_every_step(x):
        out = []
        for _ in range(6):
            x = np.sin(x) * np.float32(0.5)
            out.append(x)
        return tuple(out)

    x = np.linspace(-1, 1, 50).astype(np.float32)
    ex = xe.explore(keep_every_step, x, backend="cpu")
    assert all(count == 1 for count, _ in repeats(ex.executable.program.plan.launches))
    for got, want in zip(ex.run(x), keep_every_step(x)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_chain_of_a_thousand_fused_ops_compiles():
    def decay(x):
        for _ in range(500):
            x = x * np.float32(0.999) + np.float32(0.001)
        return x

    x = np.linspace(0, 1, 64).astype(np.float32)
    ex = xe.explore(decay, x, backend="cpu")
    assert len(ex.fusions) == 1  # one kernel, 1000 element-wise ops deep
    np.testing.assert_allclose(ex.run(x), decay(x), rtol=1e-5)


def test_every_viewer_shows_the_loop_the_driver_rolled():
    from xla_explorer.viz.html import fragment
    from xla_explorer.viz.mime import payload
    from xla_explorer.viz.panel_views import DRIVER_TITLE

    u = np.sin(np.linspace(0, 6, 32)).astype(np.float32)
    ex = xe.explore(heat, u, backend="cpu")
    # The driver alone: `run` and its loop, none of the kernels' bodies.
    assert ex.driver.count("def ") == 1 and "def run(" in ex.driver
    assert re.search(r"^    for _ in range\(\d+\):", ex.driver, re.M), ex.driver
    assert ex.driver in ex.executable.program.source
    assert payload(ex)["driver"] == ex.driver
    assert html.escape(DRIVER_TITLE) in fragment(ex)
    assert xe.explore(heat, u, backend="interpreter").driver == ""


def transposed_steps(x, y, steps):
    for i in range(steps):  # a constant per step
        x = (x.T * y + np.float32(i * 1e-3)).T - y
    return x


@pytest.mark.slow  # a kernel of 600 or 2400 fused ops compiled by Numba
@pytest.mark.parametrize("steps", [150, pytest.param(600, marks=pytest.mark.deep)])
def test_a_chain_through_transposes_compiles_without_a_recursion_error(steps, monkeypatch):
    # Each step reads the last through a transpose, which the element-wise walk alone did
    # not cross: one Python frame per op again, a RecursionError from 120 steps. The loop
    # left unrolled (as the cuda backend leaves loops), so that it fuses into one chain.
    monkeypatch.setattr(CpuBackend, "runs_loops", False)
    x = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4)
    y = x.T * np.float32(0.1)
    ex = xe.explore(lambda x, y: transposed_steps(x, y, steps), x, y, backend="cpu")
    assert len(ex.fusions) == 1
    np.testing.assert_array_equal(ex.run(x, y), transposed_steps(x, y, steps))


def scaled(x):
    return np.tanh(x) * np.float32(2)


def test_a_generator_too_deep_for_python_is_a_compile_error_at_the_users_line():
    # The safety net: no RecursionError reaches a user, whatever recursion is left.
    from xla_explorer.codegen.program import plan_program

    x = np.linspace(0, 1, 8, dtype=np.float32)
    ex = xe.explore(scaled, x, backend="cpu")

    def too_deep(*_):
        raise RecursionError("maximum recursion depth exceeded")

    with pytest.raises(xe.CompileError, match=r"went deeper than Python's recursion limit") \
            as info:
        plan_program(ex.module, ex.buffers, too_deep)
    assert info.value.source_line == scaled.__code__.co_firstlineno + 1
    assert not isinstance(info.value, RecursionError)
