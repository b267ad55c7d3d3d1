"""Speed and memory of xla-explorer's CPU backend against eager NumPy, numexpr and XLA (jax.jit
on CPU), on the programs the README's table lists.

    python benchmarks/run.py [--quick | --sweep] [--only PROGRAM] [--json results.json]
                             [--budget SECONDS] [--compile-repeats N]

`--sweep` times the element-wise, softmax and layernorm programs at every size from 1e3 to
1e8 elements and 256x256 to 16384x1024, the steady state only (no compile columns unless
--compile-repeats is given).

Every runner gets the same float32 inputs. After two warm-up calls each, the runners are timed
interleaved (one call of each per round, so a slow moment hits all of them) and the median is
reported: xla-explorer beside NumPy and numexpr, then xla-explorer beside XLA alone, so each
ratio compares runners timed together, and XLA is not timed among NumPy's temporaries. Peak
memory is what tracemalloc sees during one call (NumPy and the compiled program allocate
through NumPy; XLA's allocations are invisible to it, so XLA has no memory column). Compile
times are what Numba spends compiling the program (cold, with an empty kernel cache) or
loading it (from the disk cache, in a second process) in its first call, medians over
--compile-repeats fresh caches; Numba's own once-per-process start-up, about 0.5 s with its
threading layer, is paid before and not counted.
Ratios above 1 mean xla-explorer is faster.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os

# OpenBLAS's worker threads spin after every product (2**28 cycles by default) on the cores
# the next runner needs, which would slow whatever is timed right after NumPy's call
# (docs/benchmarks.md). Read when NumPy loads OpenBLAS, so set before numpy is imported.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from functools import partial

import numpy as np

try:
    import numexpr
except ImportError:  # the [bench] extra is not installed
    numexpr = None
try:
    import jax
    import jax.numpy as jnp
except ImportError:
    jax = jnp = None

import xla_explorer as xe
from xla_explorer.codegen import gemm
# The programs; names of this module too, which COMPILE_PROBE looks up.
from programs import F32, chain50, dense_relu, gelu, layernorm, mean_var, softmax, sum_xyz


NUMEXPR = {
    "sum_xyz": lambda x, y, z: numexpr.evaluate("sum(x + y * z)"),
    "gelu": lambda x: numexpr.evaluate(
        "0.5 * x * (1 + tanh(0.7978846 * (x + 0.044715 * x * x * x)))"),
}


def cases(quick: bool):
    n = [10**5, 10**6, 10**7, 3 * 10**7] if not quick else [10**5, 10**6]
    for k in n:
        yield sum_xyz, f"{k:.0e}", [(k,)] * 3
    for k in ([10**6, 10**7] if not quick else [10**6]):
        yield gelu, f"{k:.0e}", [(k,)]
    for rows in ([4096, 16384] if not quick else [1024]):
        yield softmax, f"{rows}x1024", [(rows, 1024)]
        yield layernorm, f"{rows}x1024", [(rows, 1024), (1024,), (1024,)]
    size = 1024 if not quick else 256
    yield dense_relu, f"{size}^3", [(size, size), (size, size), (size,)]
    yield mean_var, "1e+07" if not quick else "1e+06", [(10**7 if not quick else 10**6,)]
    yield chain50, "1000", [(1000,)]


def sweep_cases():
    """Every size, not only the table's: where a program wins and where it stops winning."""
    for k in (10**3, 10**4, 10**5, 10**6, 10**7, 10**8):
        yield sum_xyz, f"{k:.0e}", [(k,)] * 3
        yield gelu, f"{k:.0e}", [(k,)]
    for rows, cols in ((256, 256), (1024, 1024), (1024, 4096), (4096, 1024), (16384, 1024)):
        yield softmax, f"{rows}x{cols}", [(rows, cols)]
        yield layernorm, f"{rows}x{cols}", [(rows, cols), (cols,), (cols,)]


# -- measuring -------------------------------------------------------------------------------

def peak(call) -> int | None:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def timed_rounds(runners: dict, budget: float) -> dict[str, float]:
    """Median seconds per call of each runner, interleaved round by round over about `budget`
    seconds. In each round every runner makes one untimed call and then the timed one, so
    the timed call follows the runner's own: called straight after another library, a call
    shares the cores with the worker threads that library leaves spinning (a 1024^3 NumPy
    product measured 19 ms right after a jax.jit call, 11 ms after its own)."""
    once = {}
    for name, call in runners.items():
        call()  # warm-up
        call()  # our second call compiles the driver (runtime/executable.py)
        start = time.perf_counter()
        call()
        once[name] = time.perf_counter() - start
    rounds = int(max(5, min(200, budget / max(2 * sum(once.values()), 1e-6))))
    samples = {name: [] for name in runners}
    for _ in range(rounds):
        for name, call in runners.items():
            call()
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    return {name: float(np.median(s)) for name, s in samples.items()}


COMPILE_PROBE = """
import sys, json, numpy as np
# The probe needs the program only: importing jax and numexpr would cost every probe a second.
sys.modules["jax"] = sys.modules["numexpr"] = None
sys.path.insert(0, {bench_dir!r})
import run as bench
import xla_explorer as xe
from functools import partial
program = getattr(bench, {name!r})
args = [np.ones(s, np.float32) for s in {shapes!r}]
f = partial(program, np)
f.__name__ = program.__name__
ex = xe.explore(f, *args, backend="cpu")
# Numba pays about 0.5 s once per process to load its own registries and, for the first
# parallel loop, its threading layer; pay it on something else first, so what is timed is
# this program's kernels.
from numba import njit, prange
def warm(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i]
    return s
njit(cache=False, parallel=True)(warm)(np.ones(2, np.float32))
ex.run(*args)
print(json.dumps({{"seconds": ex.executable.compile_seconds, "kernels": len(ex.kernels)}}))
"""


def openblas_core() -> str | None:
    """The kernels NumPy's OpenBLAS chose for this CPU ("Haswell", "SkylakeX", ...; the
    environment variable OPENBLAS_CORETYPE overrides its choice), or None if not OpenBLAS."""
    try:
        from numpy._core import _multiarray_umath as core
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as core
    lib = ctypes.CDLL(core.__file__)
    for name in ("scipy_openblas_get_corename64_", "openblas_get_corename64_",
                 "openblas_get_corename"):
        get = getattr(lib, name, None)
        if get is not None:
            get.restype = ctypes.c_char_p
            return get().decode()
    return None


def cpu_name() -> str:
    import llvmlite.binding as llvm
    return f"{platform.machine()} ({llvm.get_host_cpu_name()})"


def compile_times(program, shapes, repeats: int) -> tuple[float, float, int]:
    """(cold compile, load from the disk cache in a second process) seconds, medians over
    `repeats` fresh caches, and kernels: Numba's own time compiling or loading (its compiler
    lock held) in the program's first call, which `Executable.compile_seconds` records."""
    code = COMPILE_PROBE.format(bench_dir=os.path.dirname(os.path.abspath(__file__)),
                                name=program.__name__, shapes=[list(s) for s in shapes])
    cold, disk = [], []
    for _ in range(max(1, repeats)):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, XLA_EXPLORER_CACHE=cache)
            out = [json.loads(subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True,
                check=True).stdout.strip().splitlines()[-1]) for _ in range(2)]
        cold.append(out[0]["seconds"])
        disk.append(out[1]["seconds"])
    return float(np.median(cold)), float(np.median(disk)), out[0]["kernels"]


def run_case(program, label, shapes, budget, compile_repeats) -> dict:
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(F32) for s in shapes]
    eager = partial(program, np)
    eager.__name__ = program.__name__
    ex = xe.explore(eager, *args, backend="cpu")
    runners = {"numpy": lambda: eager(*args), "xla_explorer": lambda: ex.run(*args)}
    if numexpr is not None and program.__name__ in NUMEXPR:
        runners["numexpr"] = lambda: NUMEXPR[program.__name__](*args)
    check = ex.check(*args)
    times = timed_rounds(runners, budget)
    # XLA is timed beside xla-explorer alone: among NumPy's calls it ran slower than beside
    # ours (docs/benchmarks.md). Each ratio then compares the two runners it names, timed
    # together.
    beside_xla = None
    if jax is not None:
        jitted = jax.jit(partial(program, jnp))
        jargs = [jax.device_put(a) for a in args]
        beside_xla = timed_rounds({"xla_explorer": runners["xla_explorer"],
                                   "jax": lambda: jax.block_until_ready(jitted(*jargs))},
                                  budget)
    cold, disk, kernels = (compile_times(program, shapes, compile_repeats) if compile_repeats
                           else (None, None, len(ex.kernels)))
    row = {
        "program": program.__name__, "size": label, "kernels": kernels, "check_ok": check.ok,
        "ms": {k: v * 1e3 for k, v in times.items()},
        "ms_beside_jax": {k: v * 1e3 for k, v in beside_xla.items()} if beside_xla else None,
        "speedup_vs_numpy": times["numpy"] / times["xla_explorer"],
        "speedup_vs_jax": (beside_xla["jax"] / beside_xla["xla_explorer"] if beside_xla
                           else None),
        "compile_cold_s": cold, "compile_disk_s": disk,
        "peak_bytes": {"numpy": peak(runners["numpy"]),
                       "xla_explorer": peak(runners["xla_explorer"])},
    }
    return row


def table(rows) -> str:
    head = ("program", "size", "kernels", "NumPy ms", "numexpr ms", "ours ms", "vs NumPy",
            "XLA ms", "ours ms beside XLA", "vs XLA", "compile cold s", "disk s", "NumPy MiB",
            "ours MiB")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ms, beside = r["ms"], r["ms_beside_jax"] or {}
        cell = lambda t, k: f"{t[k]:.3f}" if k in t else "-"  # noqa: E731
        vs_jax = f"{r['speedup_vs_jax']:.2f}x" if r["speedup_vs_jax"] else "-"
        lines.append("| " + " | ".join([
            r["program"], r["size"], str(r["kernels"]), cell(ms, "numpy"), cell(ms, "numexpr"),
            cell(ms, "xla_explorer"), f"{r['speedup_vs_numpy']:.2f}x", cell(beside, "jax"),
            cell(beside, "xla_explorer"), vs_jax,
            "-" if r["compile_cold_s"] is None else f"{r['compile_cold_s']:.2f}",
            "-" if r["compile_disk_s"] is None else f"{r['compile_disk_s']:.3f}",
            f"{r['peak_bytes']['numpy'] / 2**20:.1f}",
            f"{r['peak_bytes']['xla_explorer'] / 2**20:.1f}"]) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a short run")
    parser.add_argument("--sweep", action="store_true",
                        help="every size of the element-wise, softmax and layernorm programs")
    parser.add_argument("--json", default="benchmarks/results.json")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of timing per case")
    parser.add_argument("--compile-repeats", type=int, default=None,
                        help="fresh kernel caches per case for the compile columns (medians; "
                             "3 by default, 0 with --sweep: no compile columns)")
    parser.add_argument("--only", action="append", metavar="PROGRAM",
                        help="run only this program (repeatable): sum_xyz, gelu, ...")
    opts = parser.parse_args(argv)
    if opts.compile_repeats is None:
        opts.compile_repeats = 0 if opts.sweep else 3
    rows = []
    for program, label, shapes in (sweep_cases() if opts.sweep else cases(opts.quick)):
        if opts.only and program.__name__ not in opts.only:
            continue
        rows.append(run_case(program, label, shapes, opts.budget, opts.compile_repeats))
        print(f"{program.__name__} {label}: {rows[-1]['speedup_vs_numpy']:.2f}x NumPy",
              file=sys.stderr)
    machine = (f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
               f"NumPy {np.__version__} (OpenBLAS kernels {openblas_core()}), jax "
               f"{getattr(jax, '__version__', 'absent')}, xla-explorer's products in "
               f"{gemm.VECTOR_BYTES * 8}-bit vectors")
    print(f"Machine: {machine}\n")
    print(table(rows))
    with open(opts.json, "w") as f:
        json.dump({"machine": machine, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
