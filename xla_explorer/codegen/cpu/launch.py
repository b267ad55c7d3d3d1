"""One parallel launcher, compiled once, that runs any kernel's parallel loop on the threads.

A `prange` loop costs Numba its parfor pipeline in every kernel that has one: softmax's row
kernel compiled in 0.69 s parallel, its loop body alone, serial, in 0.18 s (docs/performance.md).
XLA:CPU compiles its fusions serially too and hands their blocks to a thread pool it compiled
once. So a kernel's parallel loop is cut out of it (codegen/cpu/outline.py): the loop's body
becomes a *thread worker*, a C function `worker(thread, args)` compiled serially, and the
kernel calls `launch`, compiled once for the package and cached beside this file, which runs
the worker once per thread:

    args = stack_empty(np.int64, 8)     # what the body reads from the kernel, by address
    put(args, 0, p0, "float32 2 C")
    put(args, 5, out0, "float32 2 C")
    launch(worker_address("xe_thread_..."), threads(), args)

The worker reads its arrays and numbers back (`array_at`, `scalar_at`) and claims blocks as
the loop did (codegen/parallel.py). Kernels reach a worker by its symbol, as they reach the
block scheduler, which keeps them cacheable; a worker is compiled (or loaded from the disk
cache) and its symbol defined by `compile_workers`, before the kernels that call it.
"""
from __future__ import annotations

import re
import sys
import threading

import numpy as np
from llvmlite import ir
from numba import cfunc, prange, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from .. import objects
from ..parallel import threads  # noqa: F401  (defines the threading layer's names first)

__all__ = ["WORKER", "array_at", "compile_workers", "launch", "put",
           "scalar_at", "thread_worker", "thread_workers", "worker_address"]

# A thread worker's C signature: (the thread's number, the address of its arguments).
WORKER = types.void(types.int64, types.int64)


def _slot(builder, address, k):
    """A pointer to the k-th int64 slot of the argument block at `address` (an int64)."""
    i64 = ir.IntType(64)
    return builder.gep(builder.inttoptr(address, i64.as_pointer()), [k])


@intrinsic
def put(typingctx, block, k, value, spec):
    """Store `value` in the argument block `block` (an int64 array) from slot k: an
    array as its data pointer, shape and strides (1 + 2 ndim slots), a number in its own
    bits (one slot). `spec` is what the worker reads there, "float32 2 C" (an array's
    element type, dimensions and layout, A for any) or "float32" (a number): a value of
    another type is refused as the kernel compiles, never read wrongly."""
    if not (isinstance(block, types.Array) and block.dtype == types.int64
            and isinstance(k, types.Integer) and isinstance(spec, types.StringLiteral)
            and isinstance(value, (types.Array, types.Number, types.Boolean))):
        return None
    wanted = spec.literal_value.split()
    if isinstance(value, types.Array):
        ok = (len(wanted) == 3 and [str(value.dtype), str(value.ndim)] == wanted[:2]
              and wanted[2] in ("A", value.layout))
    else:
        ok = wanted == [str(value)]
    if not ok:
        raise TypingError(f"a thread worker reads {spec.literal_value!r} where its kernel "
                          f"has {value}: the outliner typed it wrongly "
                          "(codegen/cpu/outline.py)")

    def codegen(context, builder, signature, args):
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        i64 = ir.IntType(64)
        start = context.cast(builder, args[1], signature.args[1], types.int64)
        base = builder.ptrtoint(arr.data, i64)

        def slot(j):
            return _slot(builder, base, builder.add(start, ir.Constant(i64, j)))

        vt = signature.args[2]
        if isinstance(vt, types.Array):
            v = context.make_array(vt)(context, builder, args[2])
            builder.store(builder.ptrtoint(v.data, i64), slot(0))
            shape = cgutils.unpack_tuple(builder, v.shape, vt.ndim)
            strides = cgutils.unpack_tuple(builder, v.strides, vt.ndim)
            for d in range(vt.ndim):
                builder.store(shape[d], slot(1 + d))
                builder.store(strides[d], slot(1 + vt.ndim + d))
        else:
            data = context.get_data_type(vt)
            builder.store(context.get_value_as_data(builder, vt, args[2]),
                          builder.bitcast(slot(0), data.as_pointer()))
        return context.get_dummy_value()

    return types.none(block, k, value, spec), codegen


def _element(dtype):
    return dtype.dtype if isinstance(dtype, types.DType) else dtype.instance_type


@intrinsic
def array_at(typingctx, address, k, dtype, ndim, layout):
    """The array `put` stored from slot k of the argument block at `address`: of `dtype`,
    `ndim` dimensions and `layout` ("C", "F" or "A"), constants. It borrows the memory:
    the kernel that launched the worker keeps it alive until every worker returns."""
    if not (isinstance(address, types.Integer) and isinstance(k, types.IntegerLiteral)
            and isinstance(dtype, (types.NumberClass, types.DType))
            and isinstance(ndim, types.IntegerLiteral)
            and isinstance(layout, types.StringLiteral)):
        return None
    element, n, start = _element(dtype), ndim.literal_value, k.literal_value
    result = types.Array(element, n, layout.literal_value)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        base = context.cast(builder, args[0], signature.args[0], types.int64)

        def load(j):
            return builder.load(_slot(builder, base, ir.Constant(i64, start + j)))

        itemsize = context.get_abi_sizeof(context.get_data_type(element))
        out = context.make_array(result)(context, builder)
        populate_array(out, data=builder.inttoptr(load(0), context.get_data_type(element)
                                                  .as_pointer()),
                       shape=cgutils.pack_array(builder, [load(1 + d) for d in range(n)], ty=i64),
                       strides=cgutils.pack_array(builder, [load(1 + n + d) for d in range(n)],
                                                  ty=i64),
                       itemsize=ir.Constant(i64, itemsize), meminfo=None, parent=None)
        return out._getvalue()

    return result(address, k, dtype, ndim, layout), codegen


@intrinsic
def scalar_at(typingctx, address, k, dtype):
    """The number `put` stored in slot k of the argument block at `address`, of `dtype`."""
    if not (isinstance(address, types.Integer) and isinstance(k, types.IntegerLiteral)
            and isinstance(dtype, (types.NumberClass, types.DType))):
        return None
    element = _element(dtype)

    def codegen(context, builder, signature, args):
        base = context.cast(builder, args[0], signature.args[0], types.int64)
        slot = _slot(builder, base, ir.Constant(ir.IntType(64), k.literal_value))
        data = context.get_data_type(element)
        value = builder.load(builder.bitcast(slot, data.as_pointer()))
        return context.get_data_as_value(builder, element, value)

    return element(address, k, dtype), codegen


@intrinsic
def worker_address(typingctx, symbol):
    """The address of the thread worker defined under `symbol` (a string constant),
    linked by name."""
    if not isinstance(symbol, types.StringLiteral):
        return None
    name = symbol.literal_value

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i64, i64]), name)
        return builder.ptrtoint(fn, i64)

    return types.int64(symbol), codegen


@intrinsic
def _call_worker(typingctx, worker, thread, address):
    """Call the thread worker at `worker` (an address) for `thread` with `address`."""
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(ir.VoidType(), [i64, i64])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1], args[2]])
        return context.get_dummy_value()

    return types.none(types.int64, types.int64, types.int64), codegen


@cfunc(types.void(types.int64, types.int64, types.int64), parallel=True, cache=True)
def _launch(worker, count, address):
    """Run the thread worker at address `worker` as `count` loop iterations shared by the
    threads, each given `address` (its argument block's); returns once all have."""
    for thread in prange(count):
        _call_worker(worker, np.int64(thread), address)


# Kernels call the launcher by this name, as they reach a worker: a kernel calling an
# `@njit` launcher would have its parallel loop linked in and compiled again into its
# machine code (about 0.05 s of every kernel with a parallel loop, docs/performance.md).
LAUNCH_SYMBOL = "xe_launch"
objects.define(LAUNCH_SYMBOL, _launch)


@intrinsic
def launch(typingctx, worker, count, block):
    """Run the thread worker at address `worker` as `count` loop iterations shared by the
    threads, each given `block`'s address (an argument block, an int64 array); returns
    once all have. A call of the launcher compiled once, by its symbol."""
    if not (isinstance(worker, types.Integer) and isinstance(count, types.Integer)
            and isinstance(block, types.Array)):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i64, i64, i64]), LAUNCH_SYMBOL)
        arr = context.make_array(signature.args[2])(context, builder, args[2])
        builder.call(fn, [context.cast(builder, args[0], signature.args[0], types.int64),
                          context.cast(builder, args[1], signature.args[1], types.int64),
                          builder.ptrtoint(arr.data, i64)])
        return context.get_dummy_value()

    return types.none(worker, count, block), codegen


# -- thread workers: compiled lazily, when their program first runs -------------------------

class _Worker:
    """A thread worker's Python function, compiled as a C function (`WORKER`) by
    `compile_workers`, with its machine code cached on disk like a kernel's."""

    def __init__(self, symbol: str, py_func, fastmath):
        self.symbol, self.py_func, self.fastmath = symbol, py_func, fastmath
        self.compiled = None
        self.__name__ = py_func.__name__


def thread_worker(symbol: str, fastmath):
    """Decorator of a generated thread worker: defined under `symbol` once compiled."""
    return lambda py_func: _Worker(symbol, py_func, fastmath)


# Held while workers compile: two first calls of one program in two threads must not both
# compile a worker, and leave a kernel linked to the machine code of the one dropped.
_COMPILING = threading.Lock()


def compile_workers(module) -> None:
    """Compile (or load from disk) every thread worker of a generated module, and of the
    generated modules it calls (a loop's body), and define each one's symbol, before their
    kernels are compiled or loaded: they link to it by name. The compile is Numba's and
    holds its compiler lock, so a program's first call counts it among its compile time."""
    with _COMPILING:
        _compile_workers(module, set())


def _compile_workers(module, seen: set) -> None:
    seen.add(module.__name__)
    for value in list(vars(module).values()):
        if isinstance(value, _Worker) and value.compiled is None:
            value.compiled = cfunc(WORKER, cache=True, error_model="numpy",
                                   fastmath=value.fastmath)(value.py_func)
            objects.define(value.symbol, value.compiled)
        called = getattr(getattr(value, "py_func", None), "__module__", "") or ""
        if called.startswith("xla_explorer_kernels.") and called not in seen \
                and called in sys.modules:
            _compile_workers(sys.modules[called], seen)


def thread_workers(module, kernel: str) -> list:
    """The compiled thread workers (Numba CFuncs) of `kernel`, a function of a generated
    module that has run (or the module it was loaded from): what its parallel loops run, to
    inspect."""
    home = getattr(getattr(getattr(module, kernel, None), "py_func", None), "__module__", None)
    if home in sys.modules:
        module = sys.modules[home]
    return [w.compiled for name, w in vars(module).items() if isinstance(w, _Worker)
            and w.compiled is not None and re.fullmatch(rf"{kernel}_thread\d*", name)]
