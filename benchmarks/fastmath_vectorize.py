"""Do fastmath.py's exp, log and tanh vectorize? Times one loop over 1e7 elements calling them
against the same loop calling Numba's `np.exp` / `np.log` / `np.tanh` (scalar libm calls
here) and against eager NumPy (SIMD loops, writing into a preallocated output).

    python benchmarks/fastmath_vectorize.py [--n 10_000_000] [--rounds 15] [--all]

Each Numba kernel is compiled as the generated kernels are (`fastmath=` the kernels' flags,
`error_model="numpy"`), once as a plain loop on one thread and once with `prange`. All
runners are warmed up, then timed interleaved, one call each per round, and the median is
reported in ns per element. `--all` adds expm1, log1p and logistic (whose NumPy reference is
`np.expm1`, `np.log1p` and `1 / (1 + np.exp(-x))`). The last column says whether LLVM emitted
packed (vector) floating-point arithmetic for the single-thread loop calling our function.

OMP_WAIT_POLICY=passive is set (unless already set) before Numba starts its OpenMP threads:
with the default policy a parallel launch after an idle moment can stall for milliseconds
(docs/machine-facts.md), which interleaved timing provokes on every round.
"""
from __future__ import annotations

import argparse
import os
import re
import time

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

from xla_explorer.codegen import fastmath  # noqa: E402

try:  # the flags the generated kernels are compiled with
    from xla_explorer.codegen.cpu import FASTMATH
except ImportError:
    FASTMATH = {"nsz", "contract", "afn", "reassoc"}

FUNCS = ["exp", "log", "tanh"]
MORE = ["expm1", "log1p", "logistic"]


def numpy_logistic(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += x.dtype.type(1)
    return np.reciprocal(out, out=out)


NUMPY = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "expm1": np.expm1, "log1p": np.log1p,
         "logistic": numpy_logistic}
LIBM = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "expm1": np.expm1, "log1p": np.log1p,
        "logistic": None}


def inputs(name: str, dtype, n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if name in ("log", "log1p"):
        x = np.exp(rng.uniform(-20, 20, n))
    elif name in ("exp", "expm1"):
        x = rng.uniform(-80, 80, n)
    else:
        x = rng.uniform(-6, 6, n)
    return x.astype(dtype)


def loop_kernel(f, parallel: bool):
    """The loop a generated elementwise kernel is: out[i] = f(x[i])."""
    @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
    def kernel(x, out):
        for i in prange(x.size):
            out[i] = f(x[i])
    return kernel


def libm_kernel(name: str, parallel: bool):
    # Written out (not a closure over np.exp) so Numba sees the ufunc it lowers to libm.
    if name == "exp":
        @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
        def kernel(x, out):
            for i in prange(x.size):
                out[i] = np.exp(x[i])
    elif name == "log":
        @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
        def kernel(x, out):
            for i in prange(x.size):
                out[i] = np.log(x[i])
    elif name == "tanh":
        @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
        def kernel(x, out):
            for i in prange(x.size):
                out[i] = np.tanh(x[i])
    elif name == "expm1":
        @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
        def kernel(x, out):
            for i in prange(x.size):
                out[i] = np.expm1(x[i])
    elif name == "log1p":
        @njit(fastmath=FASTMATH, error_model="numpy", parallel=parallel)
        def kernel(x, out):
            for i in prange(x.size):
                out[i] = np.log1p(x[i])
    else:
        return None
    return kernel


def packed_math(kernel, x, out) -> str:
    """Whether the compiled loop does packed float arithmetic (vmulps / vfmadd...pd on xmm,
    ymm or zmm registers), from Numba's assembly listing."""
    asm = "\n".join(kernel.inspect_asm().values())
    kind = "ps" if x.dtype == np.float32 else "pd"
    found = re.findall(rf"\bv(?:fn?m(?:add|sub)\d+|mul|add|sub)(?:{kind})\s+%?([xyz]mm)", asm)
    if not found:
        return "no"
    return "yes (" + ", ".join(sorted(set(found))) + ")"


def time_rounds(runners: dict, rounds: int) -> dict[str, float]:
    for call in runners.values():
        call()  # compile and warm up
    samples = {name: [] for name in runners}
    for _ in range(rounds):
        for name, call in runners.items():  # interleaved: a slow moment hits every runner
            t0 = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - t0)
    return {name: float(np.median(s)) for name, s in samples.items()}


def bench(name: str, dtype, n: int, rounds: int) -> dict:
    suffix = "f32" if dtype == np.float32 else "f64"
    ours = getattr(fastmath, f"{name}_{suffix}")
    x = inputs(name, dtype, n)
    out = np.empty_like(x)
    runners = {}
    kernels = {}
    for parallel, tag in ((False, "1 thread"), (True, "prange")):
        kernels[f"ours, {tag}"] = loop_kernel(ours, parallel)
        libm = libm_kernel(name, parallel)
        if libm is not None:
            kernels[f"np.{name} in @njit, {tag}"] = libm
    for label, k in kernels.items():
        runners[label] = lambda k=k: k(x, out)
    runners["NumPy eager"] = lambda: NUMPY[name](x, out=out)
    times = time_rounds(runners, rounds)
    ns = {label: t / n * 1e9 for label, t in times.items()}
    return {"name": name, "dtype": np.dtype(dtype).name, "ns": ns,
            "vector": packed_math(kernels["ours, 1 thread"], x, out)}


def table(rows: list[dict]) -> str:
    cols = ["ours, 1 thread", "ours, prange", "libm, 1 thread", "libm, prange", "NumPy eager"]
    head = (f"{'function':<10}{'dtype':<9}" + "".join(f"{c:>16}" for c in cols)
            + f"{'libm/ours 1t':>14}{'NumPy/ours best':>17}  vectorized")
    lines = [head, "-" * len(head)]
    for r in rows:
        ns = r["ns"]
        get = {"ours, 1 thread": ns.get("ours, 1 thread"), "ours, prange": ns.get("ours, prange"),
               "libm, 1 thread": ns.get(f"np.{r['name']} in @njit, 1 thread"),
               "libm, prange": ns.get(f"np.{r['name']} in @njit, prange"),
               "NumPy eager": ns.get("NumPy eager")}
        cells = "".join(f"{v:>16.3f}" if v is not None else f"{'-':>16}" for v in get.values())
        best = min(get["ours, 1 thread"], get["ours, prange"])
        libm = get["libm, 1 thread"]
        ratio = f"{libm / get['ours, 1 thread']:>13.1f}x" if libm else f"{'-':>14}"
        lines.append(f"{r['name']:<10}{r['dtype']:<9}{cells}{ratio}"
                     f"{get['NumPy eager'] / best:>16.2f}x  {r['vector']}")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=lambda s: int(float(s)), default=10_000_000)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--all", action="store_true", help="also expm1, log1p and logistic")
    args = p.parse_args(argv)
    names = FUNCS + (MORE if args.all else [])
    rows = [bench(name, dtype, args.n, args.rounds)
            for dtype in (np.float32, np.float64) for name in names]
    print(f"ns per element, median of {args.rounds} interleaved rounds, n = {args.n:.0e}, "
          f"{os.cpu_count()} CPUs, kernel flags {sorted(FASTMATH)}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print(table(rows))


if __name__ == "__main__":
    main()
