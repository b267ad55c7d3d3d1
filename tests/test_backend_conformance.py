"""What every registered backend's executable must do, read through the `Executable` contract
(`xla_explorer/runtime/base.py`) alone: the programs are HLO text, compiled by the driver,
and judged against NumPy. A new backend passes this file before anything else.

The device backends join: cuda runs on a GPU where numba.cuda finds one, else under Numba's
simulator, which is switched on for those cases only (as tests/cuda/conftest.py does for its
folder).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from xla_explorer import compiler
from xla_explorer.backends import BACKENDS, DEVICE_BACKENDS, get_backend
from xla_explorer.ir.parser import parse_hlo
from xla_explorer.runtime.base import CallRecord, Executable
from xla_explorer.runtime.bench import BenchResult

TARGETS = [*BACKENDS, *DEVICE_BACKENDS]

# A tuple root holding a fused value, a reduction returned twice and a parameter: the
# output plumbing every executable needs (a buffer, the same buffer again, an input).
PLUMBING = """HloModule plumbing

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT a_plus_b = f32[] add(a, b)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  y = f32[8] parameter(1)
  by = f32[4,8] broadcast(y), dimensions={1}
  t = f32[4,8] tanh(x)
  m = f32[4,8] multiply(t, by)
  zero = f32[] constant(0)
  s = f32[4] reduce(m, zero), dimensions={1}, to_apply=add_f32
  ROOT r = (f32[4,8], f32[4], f32[4], f32[8]) tuple(m, s, s, y)
}
"""

# Two products with a kernel between them: a temporary lives in the arena.
LAYERS = """HloModule layers

ENTRY main {
  x = f64[4,6] parameter(0)
  w = f64[6,5] parameter(1)
  v = f64[5,3] parameter(2)
  h = f64[4,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  a = f64[4,5] tanh(h)
  ROOT o = f64[4,3] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def plumbing_numpy(x, y):
    m = np.tanh(x) * y
    s = m.sum(axis=1)
    return [m, s, s, y]


def layers_numpy(x, w, v):
    return [np.tanh(x @ w) @ v]


def plumbing_args(rng):
    return [rng.standard_normal((4, 8)).astype(np.float32),
            rng.standard_normal(8).astype(np.float32)]


def layers_args(rng):
    return [rng.standard_normal(s) for s in ((4, 6), (6, 5), (5, 3))]


PROGRAMS = {"plumbing": (PLUMBING, plumbing_numpy, plumbing_args),
            "layers": (LAYERS, layers_numpy, layers_args)}


def _real_gpu_loaded() -> bool:
    mod = sys.modules.get("numba.cuda")
    return mod is not None and "simulator" not in mod.to_device.__module__


@pytest.fixture(params=TARGETS)
def target(request, monkeypatch):
    if request.param in DEVICE_BACKENDS and not _real_gpu_loaded():
        monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    return request.param


def compiled(target: str, program: str, autocluster: bool = False) -> compiler.Compilation:
    """Auto-clustered, the executable is the clustered runner over the target's own."""
    return compiler.compile(parse_hlo(PROGRAMS[program][0]), target, autocluster=autocluster)


def assert_matches(got, want):
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray) and g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("autocluster", [False, True])
@pytest.mark.parametrize("program", PROGRAMS)
def test_a_call_gives_the_roots_values(target, program, autocluster, rng):
    exe = compiled(target, program, autocluster).executable
    assert isinstance(exe, Executable)
    _, numpy, make = PROGRAMS[program]
    args = make(rng)
    assert_matches(exe(*args), numpy(*args))
    again = make(rng)  # the cached call path: arrays already of the parameters' types
    assert_matches(exe.run_arrays(again), numpy(*again))


@pytest.mark.parametrize("autocluster", [False, True])
def test_outputs_belong_to_the_caller(target, autocluster, rng):
    exe = compiled(target, "plumbing", autocluster).executable
    x, y = plumbing_args(rng)
    first = exe(x, y)
    kept = [a.copy() for a in first]
    # Nothing returned is an input, or another output (the reduction returned twice).
    assert not any(np.shares_memory(o, a) for o in first for a in (x, y))
    assert all(not np.shares_memory(a, b) for i, a in enumerate(first) for b in first[i + 1:])
    # A later call, over the same arena, leaves what an earlier call returned alone.
    exe(*plumbing_args(rng))
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, b)
    first[3][:] = 0  # and writing to an output changes no input
    assert np.any(y != 0)


@pytest.mark.parametrize("program", PROGRAMS)
def test_what_the_viewers_read(target, program, rng):
    done = compiled(target, program)
    exe = done.executable
    exe(*PROGRAMS[program][2](rng))
    for table in (exe.kernels, exe.kernel_of, exe.sources):
        assert isinstance(table, dict)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in table.items())
    entry = {i.name for i in done.module.entry.instructions}
    assert set(exe.kernel_of) <= entry and set(exe.kernel_of.values()) <= set(exe.kernels)
    if get_backend(target).generates_code:
        assert exe.kernels and exe.kernel_of
        text = "\n".join(exe.sources.values())
        assert all(name in text for name in exe.kernels)
        assert isinstance(exe.compile_seconds, float) and exe.compile_seconds >= 0
    else:
        assert exe.compile_seconds is None or exe.compile_seconds >= 0
    assert isinstance(exe.arena_bytes, int) and exe.arena_bytes >= 0
    if done.assignment is not None and get_backend(target).needs_assignment:
        assert exe.arena_bytes >= done.assignment.peak_bytes


def test_the_arena_holds_the_temporaries(target):
    done = compiled(target, "layers")
    assert done.assignment.peak_bytes > 0  # the tanh between the products
    if get_backend(target).needs_assignment:
        assert done.executable.arena_bytes >= done.assignment.peak_bytes


def test_kernels_are_timed_and_the_last_call_recorded(target, rng):
    exe = compiled(target, "plumbing").executable
    args = plumbing_args(rng)
    times = exe.time_kernels(args, repeat=3)
    assert len(times) == 3 and all(isinstance(t, float) and t > 0 for t in times)
    exe(*args)
    record = exe.last_call
    assert record is None or isinstance(record, CallRecord)
    if record is not None:  # NumPy in, NumPy out: what moved is the inputs and outputs
        assert record.kernel_seconds > 0
        assert record.to_device_bytes in (0, sum(a.nbytes for a in args))


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_profiled_call_times_each_kernel_and_gives_the_roots_values(target, program, rng):
    # The kernels called one by one over the arena, as the driver calls them: what they
    # compute must be the program's answer, and each kernel the program has gets a time.
    exe = compiled(target, program).executable
    _, numpy, make = PROGRAMS[program]
    args = make(rng)
    assert_matches(exe.profile(*args, repeat=2), numpy(*args))
    record = exe.last_call
    assert isinstance(record, CallRecord) and record.kernel_seconds > 0
    assert set(record.kernels) == set(exe.kernels)  # none, where nothing was generated
    assert all(t > 0 for t in record.kernels.values())
    if record.kernels:
        assert record.kernel_seconds == pytest.approx(sum(record.kernels.values()))
    if get_backend(target).generates_code:
        assert record.kernels


def test_bench_times_the_program_against_eager(target, rng):
    exe = compiled(target, "plumbing").executable
    args = plumbing_args(rng)
    result = exe.bench("plumbing", plumbing_numpy, lambda *a: exe(*a), args, 2,
                       output_bytes=4 * (32 + 4 + 4 + 8))
    assert isinstance(result, BenchResult) and result.repeat == 2
    assert result.eager.median > 0 and result.compiled.median > 0
    assert result.arena_bytes == exe.arena_bytes
