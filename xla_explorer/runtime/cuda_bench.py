"""`ex.bench()` on the cuda backend: eager against compiled on the GPU, measured.

Eager is CuPy running the same NumPy code (the NumPy of GPUs) on the inputs already on the
device, timed with CUDA events (cupyx.profiler); without CuPy, or under the simulator, it is
eager NumPy on the host, and the table says so. Compiled is the kernels alone, timed with
CUDA events around their launches on inputs already on the device; the transfers a NumPy-in,
NumPy-out call adds are timed apart (`transfer`). Memory is device bytes allocated: CuPy's
memory pool high-water mark for eager, the arena plus the outputs for compiled. Under the
simulator every time is Python's, not a GPU's, and the table says that too.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np

from ..viz.format import bytes_text, ratio_text, seconds_text
from .bench import BenchResult, Timing, peak_bytes


@dataclass(frozen=True)
class CudaBenchResult(BenchResult):
    eager_label: str = "eager CuPy"
    transfer: Timing | None = None  # a NumPy-in, NumPy-out call's copies, apart from kernels
    device: str = ""
    simulated: bool = False

    @property
    def compiled_call_bytes(self) -> int:
        return self.compiled.peak_bytes - self.arena_bytes  # its figure counts the arena

    def table(self) -> str:
        rows = [("", "time (median)", "IQR", "memory"),
                (self.eager_label, seconds_text(self.eager.median), seconds_text(self.eager.q3 - self.eager.q1),
                 bytes_text(self.eager.peak_bytes)),
                ("compiled kernels", seconds_text(self.compiled.median),
                 seconds_text(self.compiled.q3 - self.compiled.q1), bytes_text(self.compiled.peak_bytes))]
        if self.transfer is not None:
            rows.append(("transfers (host<->device)", seconds_text(self.transfer.median),
                         seconds_text(self.transfer.q3 - self.transfer.q1), ""))
        widths = [max(len(r[k]) for r in rows) for k in range(4)]
        lines = [f"measured on {self.device}"]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        lines.append(f"speed-up {ratio_text(self.speedup)} (kernels alone) over {self.repeat} rounds; "
                     f"arena {bytes_text(self.arena_bytes)} on the device (allocated once); "
                     f"{self.memory_verdict}")
        if self.simulated:
            lines.append("Numba's CUDA simulator: these times are Python's, not a GPU's.")
        return "\n".join(lines)


def _cupy_eager(f, args, repeat):
    """(Timing, label) of f on CuPy arrays, or None without CuPy."""
    try:
        import cupy
        from cupyx.profiler import benchmark
    except ImportError:
        return None
    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    f(*[a.copy() if hasattr(a, "copy") else a for a in dev])
    cupy.cuda.Device().synchronize()
    high = pool.total_bytes()
    result = benchmark(f, tuple(dev), n_repeat=repeat, n_warmup=2)
    return Timing.of(list(result.gpu_times.reshape(-1)), int(high))


def bench_cuda(exe, name: str, eager_f, args, repeat: int) -> CudaBenchResult:
    """`exe` (a CudaExecutable) timed by its kernels against `eager_f` on the GPU."""
    from .cuda_device import device_name

    outputs = sum(s.nbytes for s in exe.output_shapes)
    kernels = exe.time_kernels(args, repeat)
    compiled = Timing.of(kernels, exe.arena_bytes + outputs)
    transfers = []
    for _ in range(max(3, min(repeat, 10))):
        exe(*[copy.deepcopy(a) for a in args])
        transfers.append(exe.last_call.transfer_seconds)
    eager = None if exe.simulated else _cupy_eager(eager_f, args, repeat)
    label = "eager CuPy"
    if eager is None:
        label = "eager NumPy (host)"
        samples = []
        with np.errstate(all="ignore"):
            for _ in range(repeat):
                a = [copy.deepcopy(x) for x in args]
                start = time.perf_counter()
                eager_f(*a)
                samples.append(time.perf_counter() - start)
            eager = Timing.of(samples, peak_bytes(lambda: eager_f(
                *[copy.deepcopy(x) for x in args])))
    return CudaBenchResult(name, eager, compiled, repeat, exe.arena_bytes,
                           exe.arena_bytes + outputs, exe.compile_seconds, label,
                           Timing.of(transfers, 0), device_name(), exe.simulated)
