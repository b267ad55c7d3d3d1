"""The compiled driver's views of the arena (`arena_view`) are NumPy's views of the same bytes,
and kernels that differ only in the order their instructions were written are one kernel."""
from __future__ import annotations

import numba
import numpy as np
import pytest

from xla_explorer.ir.structure import structure
from xla_explorer.codegen.cpu.views import arena_view
from xla_explorer.ir.parser import parse_hlo


@numba.njit
def _write_through(arena, values):
    view = arena_view(arena, 64, (2, 3), np.float64)
    for i in range(2):
        for j in range(3):
            view[i, j] = values[i, j]
    return view


@pytest.mark.parametrize("dtype, shape, offset", [
    (np.float32, (16,), 0), (np.float64, (3, 4), 64), (np.uint16, (2, 2, 2), 128),
    (np.bool_, (5,), 3), (np.complex64, (2, 3), 256), (np.int64, (), 512),
])
def test_a_view_is_numpys_view_of_the_same_bytes(dtype, shape, offset):
    @numba.njit
    def view_of(arena):
        return arena_view(arena, offset, shape, dtype)

    rng = np.random.default_rng(0)
    arena = rng.integers(0, 2, 1024, dtype=np.uint8) if dtype == np.bool_ else \
        rng.integers(0, 256, 1024, dtype=np.uint8)
    size = np.dtype(dtype).itemsize * int(np.prod(shape))
    want = arena[offset:offset + size].view(dtype).reshape(shape)
    got = view_of(arena)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.strides == want.strides and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


def test_writes_through_a_view_land_in_the_arena():
    arena = np.zeros(256, np.uint8)
    values = np.arange(6.0).reshape(2, 3) + 0.5
    view = _write_through(arena, values)
    np.testing.assert_array_equal(arena[64:112].view(np.float64).reshape(2, 3), values)
    # The view holds a reference to the arena's memory, as a NumPy view does.
    assert view.base is not None
    del arena
    np.testing.assert_array_equal(view, values)


ORDERED = """
HloModule m

fused_a {
  p0 = f32[8] parameter(0)
  c = f32[] constant(2)
  b = f32[8] broadcast(c), dimensions={}
  ROOT m = f32[8] multiply(p0, b)
}

fused_b {
  c = f32[] constant(2)
  b = f32[8] broadcast(c), dimensions={}
  p0 = f32[8] parameter(0)
  ROOT m = f32[8] multiply(p0, b)
}

fused_c {
  p0 = f32[8] parameter(0)
  c = f32[] constant(2)
  b = f32[8] broadcast(c), dimensions={}
  ROOT m = f32[8] multiply(b, p0)
}

ENTRY e {
  x = f32[8] parameter(0)
  ROOT f = f32[8] fusion(x), kind=kLoop, calls=fused_a
}
"""


def computations(text: str):
    module = parse_hlo(text)
    return module, {c.name: c for c in module.computations}


def test_the_order_instructions_are_written_in_is_not_structure():
    module, comp = computations(ORDERED)
    a, b, c = (structure(module, comp[n]) for n in ("fused_a", "fused_b", "fused_c"))
    assert a == b
    assert a != c  # operands in another order: another computation (for all it is the same)


def test_an_unused_parameter_is_structure():
    module, comp = computations(ORDERED)
    extra, with_unused = computations(ORDERED.replace(
        "fused_a {\n", "fused_a {\n  q = s32[2] parameter(1)\n"))
    assert len(with_unused["fused_a"].parameters) == 2
    assert structure(module, comp["fused_a"]) != structure(extra, with_unused["fused_a"])
