"""What a `%%xla` cell shows while Numba compiles its kernels, so that nobody waits blind.

Tracing and the passes take milliseconds; Numba's compile of a new cell's kernels takes 0.1 to
a few seconds (docs/performance.md). While it runs, the cell shows which kernel is compiling,
how many of the program's functions are done, and for how long it has been compiling, read
from Numba's compile events; once done, one line says what it cost.
"""
from __future__ import annotations

import html
import threading
import time
from typing import Callable

# Generated programs are imported as modules under this package name (codegen/cache.py).
GENERATED = "xla_explorer_kernels."


class CompileProgress:
    """A context manager that calls `show(html)` as each function of a generated program
    starts compiling, and once at the end if any did; functions of the package's own
    routines (loaded from their cache) and of other code are not counted."""

    def __init__(self, show: Callable[[str], None]):
        self.show = show
        self.started: float | None = None
        self.seen: set[int] = set()
        self.compiled: list[str] = []
        self.loaded: list[str] = []  # found in Numba's cache on disk, not compiled
        self._hits: dict[int, int] = {}
        self.functions: dict[int, object] = {}  # generated functions met, by id
        self._listener = None
        # The cell's own thread: a kernel compiling in the background for an earlier cell
        # (%%xla answers a new program first on the interpreter) is not this cell's.
        self._thread = threading.get_ident()

    def __enter__(self) -> CompileProgress:
        from numba.core import event

        progress = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                progress._started(ev.data.get("dispatcher"))

            def on_end(self, ev):
                progress._ended(ev.data.get("dispatcher"))

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        if self.started is not None and exc[0] is None:
            self.show(html.escape(self.summary()))

    def summary(self) -> str:
        """`Numba compiled 2 functions in 0.91 s (run, multiply_add_fusion_655)`, and says how
        many it loaded from its cache on disk instead."""
        compiled = [n for n in self.compiled if n not in self.loaded]
        parts = []
        if compiled:
            parts.append(f"compiled {_count(compiled)} ({', '.join(compiled)})")
        if self.loaded:
            parts.append(f"loaded {_count(self.loaded)} from its cache on disk")
        return (f"Numba {' and '.join(parts)} in "
                f"{time.perf_counter() - self.started:.2f} s")

    def _started(self, dispatcher) -> None:
        if threading.get_ident() != self._thread:
            return
        fn = getattr(dispatcher, "py_func", None)
        module = getattr(fn, "__module__", "") or ""
        if not module.startswith(GENERATED) or id(dispatcher) in self.seen:
            return
        self.seen.add(id(dispatcher))
        self._hits[id(dispatcher)] = sum(dispatcher._cache_hits.values())
        if self.started is None:
            self.started = time.perf_counter()
        self.compiled.append(fn.__name__)
        # Every generated file met so far: each kernel's, the driver's that loads them, and
        # a while loop's body's, a program of its own. What is left is what none of them
        # has compiled yet (another program may have compiled the same kernel).
        self.functions.update(_functions_in(fn.__globals__))
        left = [d for k, d in self.functions.items()
                if k not in self.seen and not getattr(d, "overloads", None)]
        total = len(self.compiled) + len(left)
        done = len(self.compiled) - 1
        seconds = time.perf_counter() - self.started
        self.show(f'<progress value="{done}" max="{total}"></progress> '
                  f"compiling with Numba: <code>{html.escape(fn.__name__)}</code> "
                  f"({len(self.compiled)} of {total}, {seconds:.1f} s so far)")

    def _ended(self, dispatcher) -> None:
        if threading.get_ident() != self._thread:
            return
        before = self._hits.pop(id(dispatcher), None)
        if before is not None and sum(dispatcher._cache_hits.values()) > before:
            self.loaded.append(dispatcher.py_func.__name__)


def _count(names: list[str]) -> str:
    return f"{len(names)} function{'s' * (len(names) != 1)}"


def _functions_in(namespace: dict) -> dict[int, object]:
    """The generated functions a generated file holds or loads, by id: a driver's file, its
    kernels (one function for kernels of one structure) and itself."""
    from numba.core.dispatcher import Dispatcher

    return {id(v): v for v in namespace.values() if isinstance(v, Dispatcher)
            and (v.py_func.__module__ or "").startswith(GENERATED)}
