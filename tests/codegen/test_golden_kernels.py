"""Generated kernel source for a few programs, against files a person has read.

The files in golden/ are what the code generator writes for each program: the kernels and the
driver, exactly. A change to the generator shows up here as a diff to review; after reading it,
`XLA_EXPLORER_UPDATE_GOLDEN=1 pytest tests/codegen/test_golden_kernels.py` rewrites them. Each
program also runs, so a golden file is known to compute the right thing.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import xla_explorer as xe

GOLDEN = Path(__file__).parent / "golden"
F32 = np.float32


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


def dense_relu(x, w, b):
    return np.maximum(x @ w + b, F32(0))


def dense_relu_parallel(x, w, b):
    """Big enough that the product's rows are shared by threads, with the epilogue in the
    same loop."""
    return np.maximum(x @ w + b, F32(0))


def softmax_parallel(x):
    """Rows in parallel: the threads claim blocks of rows, each with its own row array."""
    return softmax(x)


def sum_xyz_parallel(x, y, z):
    """A sum in parallel: each block sums into its partial, the partials added in order."""
    return sum_xyz(x, y, z)


def scaled_transpose(x, y):
    return np.tanh(x) * F32(2) + y.T


def column_mean_and_centre(x):
    m = x.mean(axis=0)
    return x - m, m


PROGRAMS = [
    (softmax, [(8, 16)]),
    (sum_xyz, [(1000,)] * 3),
    (softmax_parallel, [(512, 1024)]),
    (sum_xyz_parallel, [(1 << 20,)] * 3),
    (dense_relu, [(32, 16), (16, 24), (24,)]),  # over packing.SMALL_PRODUCT_MACS: tiled
    (dense_relu_parallel, [(256, 128), (128, 192), (192,)]),
    (scaled_transpose, [(4, 3), (3, 4)]),
    (column_mean_and_centre, [(5, 3)]),
]


def generated(ex) -> str:
    source = ex.executable.program.source
    driver = source[source.rindex("\n\n", 0, source.index("def run(")) + 2:]
    return "\n".join(list(ex.kernels.values()) + [driver])


@pytest.mark.parametrize("program, shapes", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_generated_source_is_the_golden_file(rng, program, shapes):
    args = [rng.standard_normal(s).astype(F32) for s in shapes]
    ex = xe.explore(program, *args, backend="cpu")
    assert ex.check().ok
    text = generated(ex)
    path = GOLDEN / f"{program.__name__}.txt"
    if os.environ.get("XLA_EXPLORER_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"generated source changed; diff it against {path}"
