"""Eager NumPy against the compiled program: time and peak memory, measured fairly.

Both are warmed up first (the compiled one compiles then), then timed interleaved, one eager
call and one compiled call per round, so a slow moment of the machine hits both; the median
is reported with the spread (interquartile range). Peak memory is what `tracemalloc` sees
during one call of each: NumPy reports every array it allocates to it, and the compiled
program allocates its outputs with NumPy and reuses its arena. The arena, allocated once per
executable and kept between calls, is memory the compiled program holds all the same: what
it holds during a call (`compiled_held_bytes`) is the arena plus the call's own peak, and that
is what every view compares with eager's peak.
"""
from __future__ import annotations

import copy
import time
import tracemalloc
from dataclasses import dataclass
from functools import partial
from typing import Callable, Sequence

import numpy as np

from ..viz.format import bytes_text, memory_verdict, ratio_text, seconds_text


# An interquartile range wider than this fraction of the median is called out: on a quiet
# machine ours stay under a tenth (docs/benchmarks.md); a busy one scatters them.
SPREAD_WARNING = 0.25


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

    @property
    def compiled_call_bytes(self) -> int:
        """What a compiled call allocates beyond the arena (its outputs), measured."""
        return self.compiled.peak_bytes

    @property
    def compiled_held_bytes(self) -> int:
        """What the compiled program holds during a call: its arena (allocated once and kept
        between calls; the matrix products' scratch is in it) plus what the call allocates.
        Eager NumPy's counterpart is its peak during a call."""
        return self.arena_bytes + self.compiled_call_bytes

    @property
    def spread_note(self) -> str:
        """A warning when either side's timings spread wide (interquartile range over a
        quarter of the median): the machine was busy, and the speed-up may not hold; "" if
        they are steady."""
        wide = [(label, (t.q3 - t.q1) / t.median) for label, t in
                (("eager NumPy", self.eager), ("compiled", self.compiled))
                if t.median > 0 and (t.q3 - t.q1) > SPREAD_WARNING * t.median]
        if not wide:
            return ""
        said = " and ".join(f"{label}'s by {r:.0%} of its median" for label, r in wide)
        return (f"the timings spread wide ({said}): something else was using the machine; "
                "run the benchmark again, with more repeats, before trusting the ratio")

    @property
    def memory_verdict(self) -> str:
        return memory_verdict(self.eager.peak_bytes, self.compiled_held_bytes)

    def memory_texts(self) -> tuple[str, str]:
        """The memory column's entries: eager's peak, and what compiled holds, its parts named."""
        return (f"{bytes_text(self.eager.peak_bytes)} (peak during a call)",
                f"{bytes_text(self.compiled_held_bytes)} (arena {bytes_text(self.arena_bytes)}, "
                f"kept between calls, + {bytes_text(self.compiled_call_bytes)} per call)")

    def table(self) -> str:
        rows = [("", "time (median)", "IQR", "memory during a call")]
        rows += [(label, seconds_text(t.median), seconds_text(t.q3 - t.q1), memory)
                 for label, t, memory in zip(("eager NumPy", "compiled"),
                                             (self.eager, self.compiled), self.memory_texts())]
        widths = [max(len(r[k]) for r in rows) for k in range(4)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        lines.append(f"speed-up {ratio_text(self.speedup)} over {self.repeat} interleaved rounds; "
                     f"{self.memory_verdict}; predicted {bytes_text(self.predicted_peak_bytes)} "
                     "(arena + outputs)")
        if self.spread_note:
            lines.append(f"warning: {self.spread_note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def plot(self):
        """A matplotlib Figure: time, and memory during a call, eager against compiled (the
        Performance tab's chart)."""
        from ..viz.charts import bench_figure

        return bench_figure(self)


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


def interleaved(calls: Sequence[Callable], args: Sequence, repeat: int) -> list[Timing]:
    """Time each of `calls` on `args`: warmed up first, then one call of each per round, so a
    slow moment of the machine hits them all; each call gets its own copy of the inputs (so
    in-place updates do not pile up), made outside the timed region. Also what `compare_xla`
    times XLA's executable and ours with (api/xla_compare.py)."""
    def fresh():
        return [copy.deepcopy(a) for a in args]

    for fn in calls:  # warm-up: compile, fault pages in, fill caches
        fn(*fresh())
        fn(*fresh())  # a CPU program's second call compiles its driver
    times: list[list[float]] = [[] for _ in calls]
    with np.errstate(all="ignore"):
        for _ in range(repeat):
            for k, fn in enumerate(calls):
                a = fresh()
                start = time.perf_counter()
                fn(*a)
                times[k].append(time.perf_counter() - start)
        peaks = [peak_bytes(partial(fn, *fresh())) for fn in calls]
    return [Timing.of(t, p) for t, p in zip(times, peaks)]


def bench(name: str, eager: Callable, compiled: Callable, args: Sequence, repeat: int,
          arena_bytes: int, predicted_peak_bytes: int, compile_seconds=None) -> BenchResult:
    """Time eager(*args) against compiled(*args), interleaved."""
    eager_t, compiled_t = interleaved((eager, compiled), args, repeat)
    return BenchResult(name, eager_t, compiled_t, repeat, arena_bytes, predicted_peak_bytes,
                       compile_seconds)
