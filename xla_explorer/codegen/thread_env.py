"""The threads' environment, set before any thread pool starts: how OpenMP's threads wait,
and how much stack every thread gets. Imported before Numba's threading layer starts
(codegen/parallel.py) and before a kernel image's does (runtime/native_load.py): neither needs
Numba here.
"""
from __future__ import annotations

import os

from .packing import STACK_B_BYTES  # neither Numba nor its threads

# How OpenMP's threads wait, set before they start (`numba.get_num_threads()` in parallel.py).
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
