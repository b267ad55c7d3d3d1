"""Eager NumPy against the compiled program: time and peak memory, measured fairly.

Both are warmed up first (the compiled one compiles then), then timed interleaved, one eager
call and one compiled call per round, so a slow moment of the machine hits both; the median
is reported with the spread (interquartile range). Peak memory is what `tracemalloc` sees
during one call of each: NumPy reports every array it allocates to it, and the compiled
program allocates its outputs with NumPy and reuses its arena, so the compiled peak is the
outputs (the arena is allocated once per executable and is reported beside it).
"""
from __future__ import annotations

import copy
import time
import tracemalloc
from dataclasses import dataclass
from functools import partial
from typing import Callable, Sequence

import numpy as np

from ..viz.format import bytes_text, ratio_text, seconds_text


@dataclass(frozen=True)
class Timing:
    median: float  # seconds
    q1: float
    q3: float
    peak_bytes: int

    @classmethod
    def of(cls, samples: Sequence[float], peak: int) -> "Timing":
        q1, med, q3 = np.percentile(samples, [25, 50, 75])
        return cls(float(med), float(q1), float(q3), peak)


@dataclass(frozen=True)
class BenchResult:
    """Eager NumPy against compiled, on the same inputs."""

    name: str
    eager: Timing
    compiled: Timing
    repeat: int
    arena_bytes: int  # allocated once per executable, reused by every call
    predicted_peak_bytes: int  # buffer assignment: arena plus outputs
    compile_seconds: float | None

    @property
    def speedup(self) -> float:
        return self.eager.median / self.compiled.median

    def table(self) -> str:
        rows = [("", "time (median)", "IQR", "peak memory")]
        rows += [(label, seconds_text(t.median), seconds_text(t.q3 - t.q1),
                  bytes_text(t.peak_bytes))
                 for label, t in (("eager NumPy", self.eager), ("compiled", self.compiled))]
        widths = [max(len(r[k]) for r in rows) for k in range(4)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        lines.append(f"speed-up {ratio_text(self.speedup)} over {self.repeat} interleaved rounds; "
                     f"arena {bytes_text(self.arena_bytes)} (allocated once), predicted peak "
                     f"{bytes_text(self.predicted_peak_bytes)} (arena + outputs)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def plot(self):
        """A matplotlib Figure: time and peak memory, eager against compiled."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(8, 3.2), layout="constrained")
        ax_t, ax_m = fig.subplots(1, 2)
        labels = ["eager NumPy", "compiled"]
        colors = ["tab:gray", "tab:blue"]
        med = [self.eager.median * 1e3, self.compiled.median * 1e3]
        err = [[(t.median - t.q1) * 1e3 for t in (self.eager, self.compiled)],
               [(t.q3 - t.median) * 1e3 for t in (self.eager, self.compiled)]]
        ax_t.bar(labels, med, yerr=err, color=colors, capsize=4)
        ax_t.set_ylabel("ms per call (median, IQR)")
        ax_t.set_title(f"{self.name}: {self.speedup:.2f}x faster", fontsize=10)
        mem = [self.eager.peak_bytes / 2**20, self.compiled.peak_bytes / 2**20]
        ax_m.bar(labels, mem, color=colors)
        ax_m.axhline(self.predicted_peak_bytes / 2**20, color="tab:green", linestyle=":",
                     label="buffer assignment's prediction")
        ax_m.set_ylabel("peak MiB during a call (tracemalloc)")
        ax_m.legend(fontsize=7)
        return fig


def peak_bytes(call: Callable[[], object]) -> int:
    """The most bytes traced allocations reached during one call."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        peak = tracemalloc.get_traced_memory()[1] - base
        del result
    finally:
        tracemalloc.stop()
    return peak


def bench(name: str, eager: Callable, compiled: Callable, args: Sequence, repeat: int,
          arena_bytes: int, predicted_peak_bytes: int, compile_seconds=None) -> BenchResult:
    """Time eager(*args) against compiled(*args); each call gets its own copy of the inputs
    (so in-place updates do not pile up), made outside the timed region."""
    def fresh():
        return [copy.deepcopy(a) for a in args]

    for fn in (eager, compiled):  # warm-up: compile, fault pages in, fill caches
        fn(*fresh())
    times: dict[Callable, list[float]] = {eager: [], compiled: []}
    with np.errstate(all="ignore"):
        for _ in range(repeat):
            for fn in (eager, compiled):
                a = fresh()
                start = time.perf_counter()
                fn(*a)
                times[fn].append(time.perf_counter() - start)
        peaks = {fn: peak_bytes(partial(fn, *fresh())) for fn in (eager, compiled)}
    return BenchResult(name, Timing.of(times[eager], peaks[eager]),
                       Timing.of(times[compiled], peaks[compiled]), repeat, arena_bytes,
                       predicted_peak_bytes, compile_seconds)
