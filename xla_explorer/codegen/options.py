"""The code generators' tuning values, passed in rather than read from module globals, so a
test or a benchmark sets them for one compilation without touching anyone else's.

Each default was measured; docs/performance.md says how. Facts about the machine (a cache
line's size) are constants where they are used, not options.
"""
from __future__ import annotations

from dataclasses import dataclass

# Bytes in a cache line: a fact, not a choice. The kernels' scratch space (a product's packed
# B, split between the threads) starts on one, in an arena that starts on one
# (runtime/executable.py), and a row kernel's prefetch asks for one at a time.
CACHE_LINE = 64


@dataclass(frozen=True)
class CodegenOptions:
    # Element count from which a loop runs in parallel (prange), and from which it does when
    # the kernel computes an expensive op (a transcendental) per element. Starting the
    # threads costs tens of microseconds, a call after idle included, which the loop's work
    # must outweigh: a loop that computes much per element outweighs it at fewer elements
    # than one bound by memory. Set from benchmarks/parallel_threshold.py.
    parallel_threshold: int = 1 << 20
    parallel_threshold_expensive: int = 1 << 19
    # Multiply-adds from which threads share a product's rows: below it a product on one
    # core takes no longer than starting the threads costs.
    gemm_parallel_macs: int = 1 << 22
    # Threads a product can use (its prange's iterations; see cpu/dot.py).
    gemm_workers: int = 64
    # Blocks a parallel loop is cut into, which its threads claim one at a time: enough that
    # a thread the machine slows down holds up the others for at most a block, few enough
    # that claiming them costs nothing (one atomic add each).
    parallel_blocks: int = 64
    # Elements per float32 block of a row's float32 sum (cpu/rows.py, `blocked_sum`).
    sum_block: int = 128
    # A row kernel fetches the next row ahead when the arrays it streams through exceed this,
    # the last-level cache (docs/machine-facts.md): below it they come from cache on every
    # call but the first, and the prefetches only cost. And only when its rows are no longer
    # than prefetch_row_bytes, so that this row and the next of each array fit in L1.
    prefetch_min_bytes: int = 32 << 20
    prefetch_row_bytes: int = 4096
    # Every loop on one thread, whatever its size (a kernel's source then has no prange).
    serial_only: bool = False
    # Each parallel loop a thread worker, compiled serially and run by one launcher compiled
    # once (codegen/cpu/launch.py), rather than a `prange` Numba compiles in every kernel.
    thread_workers: bool = True
    # Sizes in a kernel's code read from its arrays (codegen/cpu/sizes.py), so that a new
    # shape whose code comes out the same reuses the compiled kernel.
    generic_sizes: bool = True

    def parallel_from(self, expensive: bool) -> int:
        """The element count from which a kernel's loops run in parallel (never, with
        `serial_only`)."""
        if self.serial_only:
            return 1 << 62
        return self.parallel_threshold_expensive if expensive else self.parallel_threshold


DEFAULT_OPTIONS = CodegenOptions()
