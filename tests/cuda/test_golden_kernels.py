"""Generated CUDA source for a loop, a full reduction and a row fusion, against files a
person has read (tests/cuda/golden/): the kernels with their launch configuration, and the
driver. A change to the generator shows up here as a diff to review; after reading it,
`XLA_EXPLORER_UPDATE_GOLDEN=1 pytest tests/cuda/test_golden_kernels.py` rewrites them. Each
program also runs (under the simulator where there is no GPU), so a golden file is known to
compute the right thing."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import xla_explorer as xe

GOLDEN = Path(__file__).parent / "golden"
F32 = np.float32


def gelu(x):
    return F32(0.5) * x * (F32(1) + np.tanh(F32(0.7978846) * (x + F32(0.044715) * x * x * x)))


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


PROGRAMS = [
    (gelu, [(4, 50)]),
    (sum_xyz, [(3000,)] * 3),
    (softmax, [(8, 40)]),
]


@pytest.mark.parametrize("f,shapes", PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
def test_generated_cuda_source_is_the_golden_file(f, shapes):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(F32) for s in shapes]
    ex = xe.explore(f, *args, backend="cuda")
    source = ex.executable.program.source
    path = GOLDEN / f"{f.__name__}.txt"
    if os.environ.get("XLA_EXPLORER_UPDATE_GOLDEN"):
        path.write_text(source)
    assert source == path.read_text(), f"{path.name} differs: review, then update it"
    with np.errstate(all="ignore"):
        want = f(*args)
    np.testing.assert_allclose(ex.run(*args), want, rtol=2e-6, atol=2e-6)
