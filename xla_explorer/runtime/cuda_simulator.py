"""A block of Numba's CUDA simulator run without busy waiting.

Numba 0.68's simulator runs a block as one Python thread per CUDA thread, and the thread that
launched it polls every one of them in a loop (`BlockManager.run`) to learn when all have
reached a `syncthreads` barrier or finished. The poller holds the GIL half of the time, so
the block's own threads run at half speed: a 6x40 softmax took 1.1 s a launch, most of it in
`Thread.is_alive`. Here each thread says when it blocks or finishes, under a condition the
launching thread sleeps on; what the threads compute, the barrier's meaning and how an
exception in one thread aborts the others are the simulator's own.
"""
from __future__ import annotations

import threading

import numpy as np


def install() -> None:
    """Replace `BlockManager.run` in Numba's simulator (once per process)."""
    from numba.cuda.simulator import kernel

    if getattr(kernel.BlockManager.run, "xla_explorer_waits", False):
        return

    class _Thread(kernel.BlockThread):
        """A simulated CUDA thread that counts itself in when it blocks or finishes."""

        def __init__(self, f, manager, block, thread, debug, state):
            super().__init__(f, manager, block, thread, debug)
            self._state = state

        def run(self):
            try:
                super().run()  # the simulator's: an exception is kept on the thread
            finally:
                with self._state.cond:
                    self._state.finished += 1
                    self._state.cond.notify()

        def syncthreads(self):
            if self.abort:
                raise RuntimeError("abort flag set on syncthreads call")
            with self._state.cond:
                self.syncthreads_blocked = True
                self._state.blocked += 1
                self._state.cond.notify()
            self.syncthreads_event.wait()
            self.syncthreads_event.clear()
            if self.abort:
                raise RuntimeError("abort flag set on syncthreads clear")

    class _State:
        def __init__(self):
            self.cond = threading.Condition()
            self.blocked = self.finished = 0

    def run(self, grid_point, *args):
        state = _State()
        threads = []
        for block_point in np.ndindex(*self._block_dim):
            def target():
                self._f(*args)
            threads.append(_Thread(target, self, grid_point, block_point, self._debug, state))
        for t in threads:
            t.start()
        n = len(threads)
        with state.cond:
            while True:
                state.cond.wait_for(lambda: state.blocked + state.finished == n)
                failed = next((t for t in threads if t.exception), None)
                if failed is not None:
                    for t in threads:  # the simulator's abort: every barrier raises
                        t.abort = True
                        t.syncthreads_blocked = False
                        t.syncthreads_event.set()
                    raise failed.exception[0].with_traceback(failed.exception[1])
                if state.finished == n:
                    break
                # Every thread still running waits at the barrier: let them all through.
                # (The count is reset before any is released, under the condition they
                # need to count themselves in again.)
                state.blocked = 0
                for t in threads:
                    if t.syncthreads_blocked:
                        t.syncthreads_blocked = False
                        t.syncthreads_event.set()
        for t in threads:
            t.join()

    run.xla_explorer_waits = True
    kernel.BlockManager.run = run
