"""How fast is codegen/gemm.py's product? The micro-kernel alone on one core (an MR x NR tile
over KC steps, its operands in L1), then a whole 1024^3 float32 product on every thread,
against NumPy's BLAS and XLA (jax.jit on CPU), timed interleaved, medians.

    python benchmarks/gemm.py [--size 1024] [--rounds 40]

The micro-kernel's rate is the ceiling: with 512-bit vectors and two fused multiply-add units
a core does 64 float32 FLOP per cycle.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # see benchmarks/run.py

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from xla_explorer.codegen import gemm  # noqa: E402
from xla_explorer.codegen.gemm import packed_b_size  # noqa: E402
from xla_explorer.codegen.gemm_threads import product  # noqa: E402
from xla_explorer.codegen.gemm_ir import tile  # noqa: E402

try:
    import jax
except ImportError:  # the [bench] extra is not installed
    jax = None


@njit
def _tiles(ap, bp, c, reps):
    for _ in range(reps):
        tile(ap, 0, bp, 0, c, 0, c.size // gemm.MR, gemm.KC, True)


def micro_kernel_gflops(seconds: float = 1.0) -> float:
    nr = gemm.panel_width(np.float32)
    ap = np.ones(gemm.MR * gemm.KC, np.float32)
    bp = np.ones(nr * gemm.KC, np.float32)
    c = np.zeros(gemm.MR * nr, np.float32)
    _tiles(ap, bp, c, 1)
    reps = 1000
    while True:
        start = time.perf_counter()
        _tiles(ap, bp, c, reps)
        elapsed = time.perf_counter() - start
        if elapsed > seconds / 4:
            return 2 * gemm.MR * nr * gemm.KC * reps / elapsed / 1e9
        reps *= 4


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=40)
    opts = parser.parse_args(argv)
    print(f"micro-kernel: {micro_kernel_gflops():.0f} GFLOP/s on one core "
          f"({gemm.MR} x {gemm.panel_width(np.float32)} tile, {gemm.VECTOR_BYTES * 8}-bit vectors)")
    n = opts.size
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    c = np.empty((n, n), np.float32)
    work = np.empty(packed_b_size(n, n, np.float32), np.uint8)
    runners = {"xla-explorer": lambda: product(a, b, c, work), "NumPy": lambda: a @ b}
    if jax is not None:
        mm = jax.jit(lambda a, b: a @ b)
        ja, jb = jax.device_put(a), jax.device_put(b)
        runners["XLA"] = lambda: mm(ja, jb).block_until_ready()
    samples = {name: [] for name in runners}
    for call in runners.values():
        call()
    for _ in range(opts.rounds):
        for name, call in runners.items():
            call()
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    flop = 2 * n ** 3
    for name, s in samples.items():
        t = float(np.median(s))
        print(f"{name:>13}: {t * 1e3:6.2f} ms  {flop / t / 1e9:5.0f} GFLOP/s")


if __name__ == "__main__":
    main()
