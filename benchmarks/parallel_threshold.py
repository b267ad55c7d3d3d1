"""Where does a parallel loop start to pay? Times the same fused kernel compiled serial and
with `prange`, over sizes from 2**12 to 2**24 elements, and prints the ratio and the first
size from which parallel stays ahead. `CodegenOptions.parallel_threshold` (for the sum)
and `parallel_threshold_expensive` (for gelu, codegen/options.py) are set from this.

    python benchmarks/parallel_threshold.py [--budget 1.0]

Two kernels: an element-wise one (gelu, float32: compute-heavy per element) and a sum
(`sum(x + y*z)`: memory-bound). Both are timed interleaved, median of rounds, after a
warm-up; `OMP_WAIT_POLICY=passive` as codegen/gemm.py sets it, but with no spin before the
threads sleep (`GOMP_SPINCOUNT=0`, where gemm.py sets 5000): each parallel call pays a full
wake-up, as a call after idle does, so the threshold holds for those too.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("GOMP_SPINCOUNT", "0")

import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import timed_rounds  # noqa: E402

from xla_explorer.codegen.fastmath import tanh_f32  # noqa: E402
from xla_explorer.codegen.cpu import FASTMATH  # noqa: E402

F = np.float32


def gelu_kernel(parallel):
    loop = prange if parallel else range

    @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
    def kernel(x, out):
        for i in loop(x.shape[0]):
            v = x[i]
            out[i] = F(0.5) * v * (F(1) + tanh_f32(F(0.7978846) * (v + F(0.044715) * v * v * v)))
    return kernel


def sum_kernel(parallel):
    loop = prange if parallel else range

    @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
    def kernel(x, y, z):
        acc = np.float64(0)
        for i in loop(x.shape[0]):
            acc += np.float64(x[i] + y[i] * z[i])
        return acc
    return kernel


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timing per size")
    opts = parser.parse_args(argv)
    kernels = {"gelu": (gelu_kernel(False), gelu_kernel(True)),
               "sum(x + y*z)": (sum_kernel(False), sum_kernel(True))}
    rng = np.random.default_rng(0)
    for name, (serial, parallel) in kernels.items():
        print(f"{name}: elements, serial us, parallel us, parallel speed-up")
        first_ahead = None
        for log2 in range(12, 25):
            n = 1 << log2
            x, y, z = (rng.standard_normal(n).astype(F) for _ in range(3))
            out = np.empty_like(x)
            args = (x, out) if name == "gelu" else (x, y, z)
            t = timed_rounds({"serial": lambda: serial(*args),
                              "parallel": lambda: parallel(*args)}, opts.budget)
            ratio = t["serial"] / t["parallel"]
            if ratio > 1.0 and first_ahead is None:
                first_ahead = n
            elif ratio <= 1.0:
                first_ahead = None
            print(f"  2**{log2:<3} {t['serial'] * 1e6:10.1f} {t['parallel'] * 1e6:10.1f} "
                  f"{ratio:6.2f}x")
        print(f"  parallel ahead from {first_ahead} elements on\n")


if __name__ == "__main__":
    main()
