"""Compile the package's own Numba routines once, at installation: `python -m xla_explorer.warm`.

A generated kernel calls routines written once in the package (the matrix product's packing
and blocks, `codegen/gemm.py`, and how threads share it, `codegen/gemm_threads.py`; exp, log,
tanh and their kin, `codegen/fastmath.py`; the parallel loops' scheduler,
`codegen/parallel.py`, and the launcher that runs their thread workers, `codegen/cpu/launch.py`;
the LAPACK calls behind np.linalg, `codegen/linalg.py`, float64 alone,
as NumPy computes them). Numba compiles each for every element type
and layout it is called with and caches the machine code beside its source, so without this
the first cell that multiplies two float64 matrices, or the first transposed product, waits
seconds for them. `make setup` and Binder's postBuild run this; it compiles them by running
the programs people write first (every float type, both layouts of each operand, the serial
and the parallel product, each fast function, a parallel loop), with their own kernels cached
in a throwaway directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import numpy as np


def _programs(dtype):
    """(function, arguments) pairs covering each routine variant a kernel can call."""
    small = np.linspace(0.5, 1.5, 64, dtype=dtype).reshape(8, 8)
    # Big enough that the product runs on every thread and packs B on every thread
    # (CodegenOptions.gemm_parallel_macs, .parallel_threshold).
    tall, short = np.full((16, 1024), 0.001, dtype), np.full((4, 1024), 0.001, dtype)
    square = np.full((1024, 1024), 0.001, dtype)
    vector = np.linspace(0.5, 1.5, 1 << 21, dtype=dtype)
    return [
        (lambda a, b: (a @ b, a.T @ b, a @ b.T, a.T @ b.T), (small, small)),
        (lambda a: a.reshape(2, 4, 8) @ a.reshape(2, 8, 4), (small,)),
        (lambda a, b: (a @ b, a @ b.T), (tall, square)),
        (lambda a, b: (a @ b, a @ b.T), (short, square)),  # one thread's product, B packed by all
        (lambda a, b: (a.T @ b, a.T @ b.T), (square[:, :16].copy(), square)),
        (lambda v: (np.exp(v), np.expm1(v), np.log(v), np.log1p(v), np.tanh(v),
                    1 / (1 + np.exp(-v))), (small.ravel(),)),
        (lambda v: np.log(np.exp(v) + 1).sum(), (vector,)),
    ]


def _linalg_programs():
    """Each np.linalg library call's routine (codegen/linalg.py), with every result layout a
    call can ask for: one compile, 1-9 s each, that a first np.linalg cell would wait for."""
    a = np.eye(4) * 4 + 0.5  # symmetric positive definite, well conditioned
    tall = np.linspace(1, 2, 12).reshape(6, 2)
    return [
        (lambda a, b, c: (np.linalg.solve(a, b), np.linalg.solve(a, c), np.linalg.inv(a),
                          np.linalg.cholesky(a), np.linalg.det(a), np.linalg.slogdet(a)),
         (a, np.ones(4), np.ones((4, 2)))),
        (lambda a: (np.linalg.qr(a), np.linalg.qr(a, mode="r"), np.linalg.eigh(a),
                    np.linalg.eigvalsh(a), np.linalg.svd(a), np.linalg.svd(a, False),
                    np.linalg.svd(a, compute_uv=False), np.linalg.pinv(a)), (a,)),
        (lambda t, y, c: (np.linalg.lstsq(t, y), np.linalg.lstsq(t, c)),
         (tall, np.ones(6), np.ones((6, 2)))),
    ]


def main() -> None:
    from . import jit

    start = time.perf_counter()
    kernels = tempfile.mkdtemp(prefix="xla-explorer-warm-")
    previous = os.environ.get("XLA_EXPLORER_CACHE")
    os.environ["XLA_EXPLORER_CACHE"] = kernels
    try:
        for dtype in (np.float32, np.float64):
            for f, args in _programs(dtype):
                jit(f)(*args)
        for f, args in _linalg_programs():
            jit(f)(*args)
    finally:
        if previous is None:
            del os.environ["XLA_EXPLORER_CACHE"]
        else:
            os.environ["XLA_EXPLORER_CACHE"] = previous
        shutil.rmtree(kernels, ignore_errors=True)
    print(f"xla_explorer: the package's Numba routines are compiled and cached "
          f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
