"""The cuda backend on a GPU against eager CuPy (NumPy's code on the GPU) and jax.jit on the
GPU (XLA:GPU), on the programs of the issue that built it.

    python benchmarks/gpu.py [--tiny] [--only NAME] [--repeat N] [--json PATH]

It prints the device first. Every runner gets the same float32 inputs, already on the device.
Times are medians: ours and CuPy's by CUDA events around the launches (cupyx.profiler's GPU
times for CuPy); jax.jit's by wall time with block_until_ready (XLA launches on streams of its
own, which events on ours do not see). "moved" is the bytes the fused program moves to and
from memory, COMPUTED from its buffer assignment and kernels (ex.traffic), so "bandwidth" is
computed bytes over measured time, and "of peak" that over the device's peak bandwidth (from
its memory clock and bus width). Memory: CuPy's pool high-water mark for eager, arena plus
outputs for ours. A column is "-" where its library is missing or has no GPU.

--tiny runs every program at toy sizes, for tests/cuda/test_benchmark_gpu.py, which runs this
script under Numba's CUDA simulator so that it keeps working on machines without a GPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import chain50, dense_relu, gelu, layernorm, mean_var, softmax, sum_xyz  # noqa: E402

import xla_explorer as xe  # noqa: E402
from xla_explorer.runtime.cuda_device import cuda_module, device_name, simulated  # noqa: E402


def cases(tiny: bool):
    if tiny:
        yield sum_xyz, "1e3", [(1000,)] * 3
        yield gelu, "256", [(256,)]
        yield softmax, "4x32", [(4, 32)]
        yield layernorm, "4x32", [(4, 32), (32,), (32,)]
        yield mean_var, "1e3", [(1000,)]
        yield chain50, "64", [(64,)]
        yield dense_relu, "16^3", [(16, 16), (16, 16), (16,)]
        return
    for k in (10**6, 10**7, 10**8):
        yield sum_xyz, f"{k:.0e}", [(k,)] * 3
    yield gelu, "1e+07", [(10**7,)]
    for rows, cols in ((4096, 1024), (16384, 4096)):
        yield softmax, f"{rows}x{cols}", [(rows, cols)]
        yield layernorm, f"{rows}x{cols}", [(rows, cols), (cols,), (cols,)]
    yield mean_var, "1e+07", [(10**7,)]
    yield chain50, "1e+07", [(10**7,)]
    yield dense_relu, "4096^3", [(4096, 4096), (4096, 4096), (4096,)]


def peak_bandwidth() -> float | None:
    """Bytes per second the device's memory moves at most: two transfers per clock (DDR)
    over the bus width."""
    if simulated():
        return None
    dev = cuda_module().get_current_device()
    return 2 * dev.MEMORY_CLOCK_RATE * 1e3 * dev.GLOBAL_MEMORY_BUS_WIDTH / 8


def ours(f, args, repeat):
    ex = xe.explore(lambda *a: f(np, *a), *args, backend="cuda")
    exe = ex.executable
    seconds = statistics.median(exe.time_kernels(args, repeat))
    outputs = sum(s.nbytes for s in exe.output_shapes)
    return seconds, exe.arena_bytes + outputs, ex.traffic.fused_bytes, len(ex.kernels)


def eager_cupy(f, args, repeat):
    try:
        import cupy
        from cupyx.profiler import benchmark
    except ImportError:
        return None, None
    if simulated():
        return None, None
    dev = [cupy.asarray(a) for a in args]
    pool = cupy.get_default_memory_pool()
    f(cupy, *dev)
    cupy.cuda.Device().synchronize()
    pool.free_all_blocks()
    f(cupy, *dev)
    cupy.cuda.Device().synchronize()
    high = pool.total_bytes()  # what the pool had to hold for one call
    result = benchmark(lambda *a: f(cupy, *a), tuple(dev), n_repeat=repeat, n_warmup=2)
    return float(np.median(result.gpu_times)), high


def jax_gpu(f, args, repeat):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    if not any(d.platform == "gpu" for d in jax.devices()):
        return None
    gpu = next(d for d in jax.devices() if d.platform == "gpu")
    dev = [jax.device_put(a, gpu) for a in args]
    g = jax.jit(lambda *a: f(jnp, *a))
    jax.block_until_ready(g(*dev))
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(g(*dev))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def fmt_time(s):
    return "-" if s is None else f"{s * 1e3:9.3f} ms"


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes (the test's)")
    parser.add_argument("--only", default=None, help="run the programs of this name only")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--json", default=None, help="write the rows to this file")
    args = parser.parse_args(argv)
    cuda_module()  # a CompileError saying what to install, before anything is timed
    print(f"device: {device_name()}")
    peak = peak_bandwidth()
    print(f"peak memory bandwidth: {'-' if peak is None else f'{peak / 1e9:.0f} GB/s'}")
    rng = np.random.default_rng(0)
    rows = []
    header = (f"{'program':<12}{'size':>12}{'eager CuPy':>14}{'jax.jit':>14}{'ours':>14}"
              f"{'vs CuPy':>9}{'vs jax':>8}{'moved':>12}{'bandwidth':>12}{'of peak':>9}"
              f"{'mem CuPy':>12}{'mem ours':>12}")
    print(header)
    for f, size, shapes in cases(args.tiny):
        if args.only and f.__name__ != args.only:
            continue
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        seconds, memory, moved, kernels = ours(f, inputs, args.repeat)
        cupy_s, cupy_mem = eager_cupy(f, inputs, args.repeat)
        jax_s = jax_gpu(f, inputs, args.repeat)
        bandwidth = moved / seconds if seconds > 0 else None
        row = {"program": f.__name__, "size": size, "ours_s": seconds, "cupy_s": cupy_s,
               "jax_s": jax_s, "moved_bytes": moved, "kernels": kernels,
               "bandwidth": bandwidth, "peak": peak, "ours_memory": memory,
               "cupy_memory": cupy_mem, "simulated": simulated()}
        rows.append(row)
        vs_cupy = f"{cupy_s / seconds:8.2f}x" if cupy_s else "       -"
        vs_jax = f"{jax_s / seconds:7.2f}x" if jax_s else "      -"
        frac = f"{bandwidth / peak:8.0%}" if bandwidth and peak else "       -"
        bw = f"{bandwidth / 1e9:8.1f} GB/s" if bandwidth and not simulated() else "           -"
        print(f"{f.__name__:<12}{size:>12}{fmt_time(cupy_s):>14}{fmt_time(jax_s):>14}"
              f"{fmt_time(seconds):>14}{vs_cupy:>9}{vs_jax:>8}{moved:>12,}{bw:>12}{frac:>9}"
              f"{'-' if cupy_mem is None else f'{cupy_mem:,}':>12}{memory:>12,}")
    if simulated():
        print("(Numba's CUDA simulator: the times are Python's, not a GPU's.)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
