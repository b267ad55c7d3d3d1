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

import os

from .packing import STACK_B_BYTES  # neither Numba nor its threads

# How OpenMP's threads wait, set before Numba starts them (below, `numba.get_num_threads()`).
# A parallel kernel after idle must not wait milliseconds for them to wake
# (docs/machine-facts.md), so they sleep when idle (passive); but first they spin
# GOMP_SPINCOUNT times (GNU OpenMP's count, a fraction of a millisecond), so that a kernel
# called straight after another finds its second thread awake, and a loop's threads meet at
# its end without a wake-up.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("GOMP_SPINCOUNT", "5000")


def _thread_stack_default() -> int | None:
    """The stack GNU OpenMP gives its threads without OMP_STACKSIZE: glibc's default for a new
    thread, RLIMIT_STACK's soft limit, or 2 MiB where that is unlimited (both measured in the
    threads of a parallel loop here: 8 MiB under `ulimit -s 8192`, 2 MiB unlimited). None
    where there is no such limit to read."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    return 2 << 20 if soft == resource.RLIM_INFINITY else soft


# A thread of a parallel product packs its group of B's panels on its own stack (up to
# STACK_B_BYTES, codegen/gemm_threads.py) below its packed A block (192 KiB at most) and the
# frames of Numba's loop: twice STACK_B_BYTES leaves room. Where the default is less (an
# unlimited or small RLIMIT_STACK), OpenMP is told the size; a larger default is left alone.
# (Under `ulimit -s unlimited` with 2 MiB threads, a 1024^3 product crashed here; with this,
# it ran. The calling thread, the loop's thread 0, keeps its own stack: the main thread's
# grows to RLIMIT_STACK.)
_THREAD_STACK = 2 * STACK_B_BYTES
_default = _thread_stack_default()
if _default is None or _default < _THREAD_STACK:
    os.environ.setdefault("OMP_STACKSIZE", f"{_THREAD_STACK >> 10}K")


def _raise_thread_stack_default(size: int) -> bool:
    """Give every thread started from now on at least `size` bytes of stack, where glibc
    lets a process set its default (`pthread_setattr_default_np`): the threads that
    OMP_STACKSIZE does not reach (Numba's workqueue layer, a Dask worker's threads, a
    user's) also run products, and a serial one packs its B on the calling thread's stack
    too. Returns whether the default is now at least `size`."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        get, set_ = libc.pthread_getattr_default_np, libc.pthread_setattr_default_np
    except (OSError, AttributeError):  # not glibc
        return False
    attr = ctypes.create_string_buffer(128)  # a pthread_attr_t (56 bytes on x86-64 glibc)
    if get(attr) != 0:
        return False
    try:
        have = ctypes.c_size_t()
        libc.pthread_attr_getstacksize(attr, ctypes.byref(have))
        if have.value >= size:
            return True
        return (libc.pthread_attr_setstacksize(attr, ctypes.c_size_t(size)) == 0
                and set_(attr) == 0)
    finally:
        libc.pthread_attr_destroy(attr)


_raise_thread_stack_default(_THREAD_STACK)

import llvmlite.binding as llvm  # noqa: E402
import numba  # noqa: E402

from . import numba_start  # noqa: E402,F401  (before Numba's registries load)
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
llvm.add_symbol(_NEXT_BLOCK, _next_block_entry.address)


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
