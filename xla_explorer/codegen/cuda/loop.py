"""How a CUDA kernel lays out its threads (`Layout`: the launch, shared memory, grid- and
block-stride loops), and the loop shape: one thread per output element over a grid-stride
loop (a thread takes elements i, i + threads in the grid, ...), so a launch of a bounded
number of blocks covers any size."""
from __future__ import annotations

from math import prod

import numpy as np

from ..elemental import Elemental
from ..writer import np_type, tuple_text

# Threads per block of a loop kernel, and the most blocks a grid-stride loop launches: enough
# to fill the largest GPUs several times over (132 SMs x 2048 threads = 1056 blocks of 256).
LOOP_THREADS = 256
MAX_BLOCKS = 4096
# A row's block: as many threads as the row has elements, rounded up to whole warps, at most
# ROW_THREADS (more threads than that only shorten each thread's stride).
ROW_THREADS = 256
WARP = 32
# Shared memory a kernel may keep values in (of the 48 KiB a block has without opting in).
SHARED_BUDGET = 32 * 1024


def round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def launch_for_loop(n: int) -> tuple[int, int, str]:
    """(blocks, threads, reason) of a grid-stride loop over n elements."""
    threads = min(LOOP_THREADS, max(WARP, round_up(n, WARP)))
    blocks = max(1, min(MAX_BLOCKS, -(-n // threads)))
    why = (f"one thread per element of {n} over a grid-stride loop: {blocks} "
           f"block{'s' if blocks > 1 else ''} of {threads} threads"
           + (" (the cap: each thread takes several elements)" if blocks == MAX_BLOCKS else ""))
    return blocks, threads, why


class Layout:
    """One CUDA kernel's launch (blocks x threads, and why), the shared arrays it declares at
    its top, the scratch space it takes, and the loops that share elements among threads."""

    def __init__(self, core: Elemental):
        self.core = core
        self.w = core.w
        self.blocks, self.threads, self.reason = 1, WARP, ""
        self.scratch = 0
        self.shared_bytes = 0
        self.declarations: list[str] = []  # shared arrays, declared at the kernel's top
        self.cooperative = False  # launched with every block resident (a grid-wide barrier)
        self.warp_rows = False  # a warp per row (rows.py): a block reduces warp by warp
        self.one_block = False  # phases in one block (one_block.py): shared arrays allowed

    def shared(self, base: str, count, dtype) -> str:
        """A shared array of `count` elements (an int, or a shape) of `dtype`."""
        var = self.w.fresh(base)
        shape = count if isinstance(count, int) else tuple_text(count)
        self.declarations.append(f"    {var} = cuda.shared.array({shape}, {np_type(dtype)})")
        self.shared_bytes += prod(count if not isinstance(count, int) else (count,)) \
            * np.dtype(dtype).itemsize
        return var

    def unravel(self, flat: str, dims) -> tuple[str, ...]:
        """Index names for the row-major position `flat` in `dims`."""
        idx = []
        stride = prod(dims)
        for n in dims:
            stride //= n
            i = self.w.fresh("i")
            if stride == 1:
                self.w.line(f"{i} = {flat} % {n}" if n != prod(dims) else f"{i} = {flat}")
            else:
                self.w.line(f"{i} = ({flat} // {stride}) % {n}" if n * stride != prod(dims)
                            else f"{i} = {flat} // {stride}")
            idx.append(i)
        return tuple(idx)

    def strided(self, n: int, start: str, step, loops: int = 1) -> str:
        """Open `for j in range(start, n, step)`, standing for `loops` of the caller's loops
        (a flattened nest); the caller closes it with close(loops)."""
        j = self.w.fresh("j")
        self.w.line(f"for {j} in range({start}, {n}, {step}):")
        self.w.open(extra=loops - 1)
        return j

    def grid_stride(self) -> None:
        """`start` and `step` of a grid-stride loop: this thread's first element, and the
        number of threads in the grid."""
        self.w.line("start = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x")
        self.w.line("step = cuda.gridDim.x * cuda.blockDim.x")


def emit_loop(layout: Layout) -> None:
    """Every output at its element, one grid-stride loop per output shape."""
    core, w = layout.core, layout.w
    by_shape: dict[tuple, list] = {}
    for o in core.outputs:
        by_shape.setdefault(o.dims, []).append(o)
    n = max(prod(d) for d in by_shape)
    layout.blocks, layout.threads, layout.reason = launch_for_loop(n)
    layout.grid_stride()
    for dims, group in by_shape.items():
        flat = layout.strided(prod(dims), "start", "step")
        idx = layout.unravel(flat, dims)
        for o in group:
            w.comment(o)
            core.store(core.out_names[id(o)], idx, core.value(o, idx))
        w.close(1)
