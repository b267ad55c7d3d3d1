"""A CPU program's call over its arena: the outputs allocated, the driver called, the root's
values handed back. Shared by the program Numba compiles (runtime/executable.py) and the one
linked from a kernel image (runtime/native.py), so it needs no Numba.

The arena is allocated once per executable and reused by every call; outputs are allocated
with NumPy for each call (NumPy's allocator fills a fresh array fastest,
docs/machine-facts.md) and handed to the caller as arrays of their own.
"""
from __future__ import annotations

import threading
from math import prod
from typing import Callable, Sequence

import numpy as np

from ..codegen.options import CACHE_LINE
from .base import F16, half_bits

__all__ = ["ArenaCall", "aligned_bytes", "copy_array"]


def aligned_bytes(nbytes: int) -> np.ndarray:
    """np.empty(nbytes, np.uint8) starting at a multiple of CACHE_LINE bytes: a view into a
    byte array CACHE_LINE bytes longer. The arena is made so (NumPy aligns to 16 bytes): the
    threads of a product split the packed B in it, and a line holding the end of one thread's
    part and the start of another's would pass between their cores at every write. So are
    the outputs a product writes (`Program.line_outputs`): it stores into C a register tile
    at a time, again and again, and a vector store that straddles two lines costs two.
    Other outputs keep np.empty: their kernels write each line once, and gain nothing on a
    line (docs/performance.md). Made when an executable is, before Numba runs anything:
    its address from NumPy."""
    raw = np.empty(nbytes + CACHE_LINE, np.uint8)
    start = -raw.__array_interface__["data"][0] % CACHE_LINE
    return raw[start:start + nbytes]


class ArenaCall:
    """The call path of a program over an arena. A subclass sets `arena`, `entry` (the
    driver: entry(arena, *parameters, *constants, *outputs, *layout)), `_kernel_constants`,
    `_layout`, `_to_line` (bytes from a uint8 array's start to the next cache line, asked of
    compiled code: NumPy's own ways to tell an address build a dict or an object for it,
    which weighed 300 to 400 bytes in every product's call), calls `_prepare_call`, and
    defines `gather`; `_call(arrays, outs)` runs the driver (`_run_entry`)."""

    arena: np.ndarray
    entry: Callable
    _kernel_constants: list
    _layout: tuple
    _to_line: Callable

    @property
    def arena_bytes(self) -> int:
        return self.arena.nbytes

    def _prepare_call(self, output_shapes, outputs: Sequence[tuple[str, int]],
                      line_outputs, params) -> None:
        """What each call allocates and returns, worked out once for the call path."""
        # Held by the call running on `arena`; a concurrent call allocates its own (`_call`).
        self._arena_free = threading.Lock()
        self._out_specs = [(s.dims, np.dtype(s.dtype), k in line_outputs)
                           for k, s in enumerate(output_shapes)]
        self._returns_outputs = list(outputs) == [("output", k)
                                                  for k in range(len(output_shapes))]
        # Output buffers only, each once but in another order: picked without `gather`'s
        # checks, which allocate (a clustered call's peak counts them).
        picks = [k for where, k in outputs if where == "output"]
        self._picks = (picks if len(picks) == len(outputs) == len(set(picks)) else None)
        # Kernels take float16 arrays as their bits (codegen/writer.storage_type).
        self._half = (any(p.dtype == F16 for p in params)
                      or any(spec[1] == F16 for spec in self._out_specs))

    def _new_output(self, dims: tuple, dtype: np.dtype, on_line: bool) -> np.ndarray:
        """An output np.empty(dims, dtype); on a cache line (`aligned_bytes`) where
        `on_line`, one array over the bytes it is cut from, so that it carries no chain of
        views (at a few elements, their headers count in what a call allocates)."""
        if not on_line:
            return np.empty(dims, dtype)
        nbytes = dtype.itemsize * prod(dims)
        raw = np.empty(nbytes + CACHE_LINE, np.uint8)
        return np.ndarray(dims, dtype, buffer=raw, offset=self._to_line(raw))

    def run_arrays(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run on arrays already of the parameters' shapes and dtypes: the cached call path,
        which checked them by its signature key, so nothing here checks them again. The
        outputs are a tuple while the kernels run (Python keeps tuples ready-made, where a
        list's items would count in the call's peak) and a list once they are done."""
        specs = self._out_specs
        if len(specs) == 1:  # no comprehension: its function object would count there too
            outs: tuple = (self._new_output(*specs[0]),)
        else:
            outs = tuple([self._new_output(*spec) for spec in specs])
        if self._half:
            self._call([half_bits(a) for a in arrays], [half_bits(o) for o in outs])
        else:
            self._call(arrays, outs)
        if self._returns_outputs:  # each output once, in order: the common case
            return list(outs)
        if self._picks is not None:
            return [outs[k] for k in self._picks]
        return self.gather(outs, arrays, self.constants, copy_array)  # type: ignore[attr-defined]

    def _call(self, arrays, outs) -> None:
        self._run_entry(arrays, outs)

    def _run_entry(self, arrays, outs) -> None:
        if self._arena_free.acquire(blocking=False):
            try:
                self.entry(self.arena, *arrays, *self._kernel_constants, *outs, *self._layout)
            finally:
                self._arena_free.release()
        else:
            # Another thread is running this program on its arena (two chunks of a Dask
            # worker at once): this call gets an arena of its own rather than share it.
            arena = aligned_bytes(self.arena.nbytes)
            self.entry(arena, *arrays, *self._kernel_constants, *outs, *self._layout)


def copy_array(a: np.ndarray) -> np.ndarray:
    return np.array(a, copy=True)
