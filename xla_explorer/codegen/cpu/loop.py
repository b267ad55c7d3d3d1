"""The CPU's loops, and the loop kernel shape.

Loops are plain `for` nests, row-major; a parallel one shares its first loop's range among the
threads in blocks they claim one at a time (`parallel_loop`, codegen/parallel.py). The loop
shape writes each output not yet written in one nest over its shape: an element-wise fusion,
and the last step of the general shape, after its phases.
"""
from __future__ import annotations

from math import prod

from .. import exprs
from ...ir.module import Instruction
from ..elemental import Elemental
from ..options import CodegenOptions
from ..writer import np_type, tuple_text
from .sizes import stack_length


# A kernel's scratch array of at most this many bytes is made on its stack (scalar.stack_empty),
# not by np.empty: a row kept between passes, a parallel loop's partial sums.
STACK_SCRATCH_BYTES = 64 * 1024


def scratch_array(dims, dtype) -> str:
    """Source making an empty array of `dims` and `dtype` (computed in its NumPy type, 8
    bytes an element at most): on the stack where it is small, else np.empty."""
    n = prod(dims)
    if n * 8 <= STACK_SCRATCH_BYTES and n > 0:
        if len(dims) == 1:  # longer, so that nearby shapes share the kernel (sizes.py)
            return f"stack_empty({np_type(dtype)}, {stack_length(n, STACK_SCRATCH_BYTES // 8)})"
        return f"stack_empty({np_type(dtype)}, {n}).reshape({tuple_text(dims)})"
    return f"np.empty({tuple_text(dims)}, dtype={np_type(dtype)})"


def allocate_array(core: Elemental, inst: Instruction, index: int | None) -> str:
    """The CPU's place for a phase's value that is no kernel output: a new array."""
    shape = inst.shape if index is None else inst.shape.elements[index]
    var = core.w.fresh(inst.name if index is None else f"{inst.name}_{index}")
    core.w.line(f"{var} = np.empty({tuple_text(shape.dims)}, dtype={np_type(shape.dtype)})")
    return var


class Loops:
    """Loop nests written into a kernel's writer, as the CPU runs them. `parallel` says
    whether any loop so far is a parallel one, `claims_blocks` whether one claims its blocks
    through codegen/parallel.py (the program then imports it)."""

    def __init__(self, core: Elemental, options: CodegenOptions, parallel_from: int):
        self.core = core
        self.w = core.w
        self.options = options
        self.parallel_from = parallel_from
        self.parallel = False
        self.claims_blocks = False
        self.partial: dict[str, str] = {}  # accumulator -> its block's partial sum (in parallel)

    def open(self, with_inner: bool = False, after=()) -> None:
        self.w.open(with_inner, after)

    def close(self, n: int) -> None:
        self.w.close(n)

    def loop_nest(self, dims, parallel: bool, sums=()) -> tuple[str, ...]:
        """Open loops over `dims` (row-major); the caller closes them with `close(len)`. If
        `parallel`, the threads share the first loop's range in blocks (`parallel_loop`),
        and each accumulator in `sums` is added to in the nest as the name
        `self.partial[acc]`."""
        if parallel and dims:
            first = self.parallel_loop(dims[0], sums=sums)
            return (first,) + self.w.for_nest(dims[1:])
        return self.w.for_nest(dims)

    def parallel_loop(self, n: int, setup=None, sums=(), index: str = "i") -> str:
        """Open a loop over range(n) whose blocks the threads claim one at a time until
        none are left (codegen/parallel.py), so that a thread the machine slows down does
        fewer of them instead of holding up the others; returns its index. The loop is cut
        into `parallel_blocks` blocks whatever the thread count, so which thread runs a block
        changes nothing in the result. setup() writes what each thread needs before its
        first block (row-sized arrays); `sums` are accumulators [(name, dtype)] the loop adds
        to: each block sums into a partial of its own, `self.partial[name]`, and the
        partials are added to the accumulator in block order after the loop."""
        w = self.w
        blocks = min(n, self.options.parallel_blocks)
        claimed, worker = w.fresh("claimed"), w.fresh("worker")
        block, i = w.fresh("block"), w.fresh(index)
        parts = {acc: w.fresh("partials") for acc, _ in sums}
        for acc, dtype in sums:
            w.line(f"{parts[acc]} = {scratch_array((blocks,), dtype)}")
        self.claims_blocks = True
        w.line(f"{claimed} = block_counter()  # counts the blocks claimed, of {blocks}")
        w.line(f"for {worker} in prange(threads()):  # each thread takes the next block "
               "until none are left")
        b = w.fresh("b")
        self.open(with_inner=True, after=[
            line for acc, _ in sums for line in (f"for {b} in range({blocks}):",
                                                 f"    {acc} += {parts[acc]}[{b}]")])
        self.parallel = True
        if setup is not None:
            setup()
        w.line("while True:")
        self.open(with_inner=True)
        w.line(f"{block} = next_block({claimed}, {blocks})")
        w.line(f"if {block} >= {blocks}:")
        w.line("    break")
        for acc, dtype in sums:
            self.partial[acc] = w.fresh("partial")
            w.line(f"{self.partial[acc]} = {exprs.literal(0, dtype)}")
        span = f"{block} * {n} // {blocks}, ({block} + 1) * {n} // {blocks}"
        if blocks == n:
            span = f"{block}, {block} + 1"
        w.line(f"for {i} in range({span}):")
        self.open(after=[f"{parts[acc]}[{block}] = {self.partial[acc]}" for acc, _ in sums])
        w.line(f"{i} = nonnegative({i})  # so that indexing with it skips NumPy's "
               "wraparound, and vectorizes")
        return i


def emit_outputs(loops: Loops, outputs, parallel_ok: bool) -> None:
    """The loop shape: every output not already written by its own phase, one loop nest per
    shape, in parallel when it is big enough."""
    core, w = loops.core, loops.w
    by_shape: dict[tuple, list] = {}
    for o in outputs:
        if not core.written(o):
            by_shape.setdefault(o.dims, []).append(o)
    for dims, group in by_shape.items():
        idx = loops.loop_nest(dims, parallel_ok and prod(dims) >= loops.parallel_from)
        for o in group:
            w.comment(o)
            core.store(core.out_names[id(o)], idx, core.value(o, idx))
        loops.close(len(dims))
