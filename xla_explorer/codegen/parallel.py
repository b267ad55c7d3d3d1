"""How the threads of a parallel kernel share its work: they claim it, a block at a time.

A parallel loop in a generated kernel does not split its range evenly between the threads up
front (what `prange` alone does: thread t takes the t-th share). Each thread takes the next
block no thread has taken, from an atomic counter, until none are left:

    claimed = block_counter()
    for worker in prange(threads()):
        while True:
            block = next_block(claimed, BLOCKS)
            if block >= BLOCKS:
                break
            for i in range(block * n // BLOCKS, (block + 1) * n // BLOCKS):
                i = nonnegative(i)
                ...

so a thread the machine slows down does fewer blocks instead of holding up the others, as
XLA's CPU runtime and OpenMP's dynamic schedule share work: a machine may slow one of its
cores for a while (docs/machine-facts.md), and an even split then waits for that core
(docs/performance.md). Which thread computes a block changes
nothing in the result: the blocks are fixed by the loop's size alone, and sums add their
blocks' partial sums in block order.

`fetch_add`, `load_acquire`, `threads` and `thread` are also what `gemm.py`'s product shares
its blocks with.
"""
from __future__ import annotations

from . import thread_env  # noqa: F401  (before Numba starts its threads)

import numba  # noqa: E402

from . import numba_start, objects  # noqa: E402,F401  (before Numba's registries load)
from llvmlite import ir  # noqa: E402
from numba import carray, cfunc, types  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import intrinsic  # noqa: E402
from numba.np.arrayobj import populate_array  # noqa: E402

__all__ = ["block_counter", "next_block", "threads"]


@intrinsic
def fetch_add(typingctx, counters, index, step):
    """counters[index] += step, atomically; the value before. (Acquire and release: what one
    thread wrote before counting is seen by a thread that reads the count.)"""
    if not (isinstance(counters, types.Array) and counters.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(arr.data, [args[1]])
        step_ = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, step_, "acq_rel")

    return types.int64(counters, types.intp, step), codegen


@intrinsic
def load_acquire(typingctx, counters, index):
    """counters[index], read atomically: after it, what was written before it was counted."""
    if not (isinstance(counters, types.Array) and counters.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.load_atomic(builder.gep(arr.data, [args[1]]), "acquire", 8)

    return types.int64(counters, types.intp), codegen


# Kernels call two functions of Numba's threading layer by name (`threads`, `thread`): the
# names are defined once the layer is loaded, which must come before a kernel that calls them
# is loaded from the disk cache and linked.
numba.get_num_threads()


def _thread_call(symbol):
    """Code calling Numba's threading-layer function `symbol` (int(void)) by name, as Numba's
    own code does, which keeps the kernel cacheable (numba.get_num_threads and
    numba.get_thread_id in a kernel reach it through an address, and Numba will not cache
    that)."""
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(context.get_value_type(types.intp), []), symbol)
        return builder.call(fn, [])

    return types.intp(), codegen


@intrinsic
def threads(typingctx):
    """The number of threads parallel loops run on."""
    return _thread_call("get_num_threads")


@intrinsic
def thread(typingctx):
    """This thread's number in the parallel loop it runs, 0 on the calling thread."""
    return _thread_call("get_thread_id")


# int64 counters in a cache line: each region's counter has a line of its own.
LINE = 8
# Regions a parallel loop's blocks are split into at most, one per thread (`next_block`).
REGIONS = 16


def stack_array(context, builder, dtype, n: int, align: int | None = None):
    """Code making a 1-d C array of n elements of `dtype` in the calling function's stack frame
    (allocated in its entry block, once however often the code runs): gone when it returns,
    never seen by an allocator. Returns (the array's value, its data pointer)."""
    element = context.get_data_type(dtype)
    data = cgutils.alloca_once(builder, element, size=n)
    data.align = align
    intp = context.get_value_type(types.intp)
    itemsize = context.get_abi_sizeof(element)
    out = context.make_array(types.Array(dtype, 1, "C"))(context, builder)
    populate_array(out, data=data, shape=[ir.Constant(intp, n)],
                   strides=[ir.Constant(intp, itemsize)], itemsize=ir.Constant(intp, itemsize),
                   meminfo=None)
    return out._getvalue(), data


@intrinsic
def block_counter(typingctx):
    """Zeroed counters of the blocks claimed in each region of a parallel loop (an int64
    array, a cache line per region), in the calling kernel's stack frame, which lasts while
    its parallel loop runs: a parallel loop allocates nothing. Zeroed where it is called, so
    a loop inside another loop starts from 0 each time."""
    def codegen(context, builder, signature, args):
        # Aligned to a line, so each counter is alone in its own.
        array, data = stack_array(context, builder, types.int64, REGIONS * LINE, align=LINE * 8)
        for r in range(REGIONS):
            builder.store(ir.Constant(data.type.pointee, 0),
                          builder.gep(data, [ir.Constant(ir.IntType(64), r * LINE)]))
        return array

    return types.Array(types.int64, 1, "C")(), codegen


@numba.njit(cache=True)
def _next_block(counter, blocks):
    """The number of a block of a parallel loop of `blocks` blocks that no thread has
    claimed, claimed now; `blocks` once all are. The blocks are split into a region for
    each thread (up to REGIONS): a thread claims its own region's blocks in order, then
    helps with the others'. So each thread streams through memory of its own, as when a
    loop is split evenly, until one finishes early. (All threads claiming from one counter
    would put their blocks side by side, and their streams through memory would interleave:
    slower, docs/performance.md.)"""
    regions = min(threads(), REGIONS, blocks)
    first = thread() % regions
    for step in range(regions):
        r = (first + step) % regions
        lo = r * blocks // regions
        size = (r + 1) * blocks // regions - lo
        if load_acquire(counter, r * LINE) < size:  # else no block is left there
            k = fetch_add(counter, r * LINE, 1)
            if k < size:
                return lo + k
    return blocks


# next_block is compiled once (and cached on disk) as a C function, and kernels call it by
# symbol, as they call gemm.py's product: called as a Numba function it would be linked into
# every kernel, and optimised and code-generated again in each kernel's cold compile
# (docs/performance.md).
@cfunc(types.int64(types.CPointer(types.int64), types.int64), cache=True)
def _next_block_entry(counter, blocks):
    return _next_block(carray(counter, (REGIONS * LINE,)), blocks)


_NEXT_BLOCK = "xla_explorer_next_block"
objects.define(_NEXT_BLOCK, _next_block_entry)


@intrinsic
def next_block(typingctx, counter, blocks):
    """`_next_block(counter, blocks)`, called by symbol; `counter` is the loop's
    `block_counter()`."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64
            and isinstance(blocks, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i64, [i64.as_pointer(), i64]), _NEXT_BLOCK)
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        n = context.cast(builder, args[1], signature.args[1], types.int64)
        return builder.call(fn, [data, n])

    return types.int64(counter, blocks), codegen
