"""A compiled module: the generated Numba program, its arena, and a NumPy-in, NumPy-out call.

The arena is allocated once per executable and reused by every call; outputs are allocated
with NumPy for each call (NumPy's allocator fills a fresh array fastest,
docs/machine-facts.md) and handed to the caller as arrays of their own. One call is one
dispatch into Numba: the driver `run` calls every kernel in schedule order.
"""
from __future__ import annotations

import re
import time
from math import prod
from typing import Sequence

import numpy as np
from numba.core import event
from numba.core.errors import NumbaError

from ..backends.base import Executable
from ..codegen import cache
from ..codegen.numba_cpu import CACHE_LINE, Program, generate_program, identifier
from ..errors import CompileError
from ..ir.module import Module
from ..ir.printer import format_instruction
from ..passes.buffer_assignment import OUTPUT, BufferAssignment


_F16 = np.dtype(np.float16)


def _bits(a: np.ndarray) -> np.ndarray:
    """A float16 array as the uint16 view a kernel takes (Numba has no float16); others as
    they are."""
    return a.view(np.uint16) if a.dtype == _F16 else a


def _aligned_bytes(nbytes: int) -> np.ndarray:
    """np.empty(nbytes, np.uint8) starting at a multiple of CACHE_LINE bytes: a view into a
    byte array CACHE_LINE bytes longer. The arena is made so (NumPy aligns to 16 bytes): the
    threads of a product split the packed B in it, and a line holding the end of one thread's
    part and the start of another's would pass between their cores at every write. So are
    the outputs a product writes (`Program.line_outputs`): it stores into C a register tile
    at a time, again and again, and a vector store that straddles two lines costs two.
    Other outputs keep np.empty: their kernels write each line once, and gain nothing on a
    line (docs/performance.md)."""
    raw = np.empty(nbytes + CACHE_LINE, np.uint8)
    start = -raw.ctypes.data % CACHE_LINE
    return raw[start:start + nbytes]


class CpuExecutable(Executable):
    """`module` compiled for the CPU with its buffer assignment."""

    def __init__(self, module: Module, assignment: BufferAssignment):
        if assignment.module is not module:
            raise ValueError("the buffer assignment must be the module's own")
        self.module = module
        self.assignment = assignment
        start = time.perf_counter()
        self.program: Program = generate_program(module, assignment)
        self.path = cache.write_source(identifier(module.name), self.program.source)
        self._py = cache.load(self.path)
        self.generate_seconds = time.perf_counter() - start
        # Seconds Numba spent compiling the program, or loading it from its disk cache, in
        # the first call; None before it.
        self.compile_seconds: float | None = None
        # The buffer assignment's temporaries, then the kernels' scratch space (packed B).
        self.arena = _aligned_bytes(self.program.arena_bytes)
        # (np.array, not np.ascontiguousarray: that makes a 0-d constant 1-d.)
        self.constants = [np.array(c.literal.reshape(c.dims), order="C")
                          for c in self.program.constants]
        self.params = sorted(module.entry.parameters, key=lambda p: p.parameter_number)
        self.output_shapes = [b.shape for b in assignment.buffers if b.category == OUTPUT]
        # The generated Numba function: run(arena, *parameters, *constants, *outputs).
        self.entry = self._py.run
        # What each call allocates and returns, worked out once for the call path.
        self._out_specs = [(s.dims, np.dtype(s.dtype), k in self.program.line_outputs)
                           for k, s in enumerate(self.output_shapes)]
        self._returns_outputs = list(self.program.outputs) == [
            ("output", k) for k in range(len(self.output_shapes))]
        # Kernels take float16 arrays as their bits (codegen/numba_cpu.storage_type).
        self._half = (any(p.dtype == _F16 for p in self.params)
                      or any(spec[1] == _F16 for spec in self._out_specs))
        self._kernel_constants = [_bits(c) for c in self.constants]

    @property
    def arena_bytes(self) -> int:
        return self.arena.nbytes

    @property
    def kernels(self) -> dict[str, str]:
        return dict(self.program.kernels)

    @property
    def kernel_of(self) -> dict[str, str]:
        """{HLO instruction (a fusion, or an op alone): the kernel that computes it}."""
        return dict(self.program.kernel_of)

    @property
    def sources(self) -> dict[str, str]:
        """The generated file's text (one file, so one entry, unnamed)."""
        return {"": self.program.source}

    def _arguments(self, args: Sequence) -> list[np.ndarray]:
        if len(args) != len(self.params):
            raise TypeError(f"{self.module.name} takes {len(self.params)} arguments, got "
                            f"{len(args)}")
        out = []
        for n, (a, p) in enumerate(zip(args, self.params)):
            arr = np.asarray(a)
            if arr.shape != p.dims:
                raise TypeError(f"argument {n} has shape {arr.shape}; it was compiled for "
                                f"{p.shape}")
            if arr.dtype != p.dtype:
                arr = arr.astype(p.dtype)
            out.append(arr)
        return out

    def _compile_error(self, error: Exception) -> CompileError:
        """Numba's failure as the generated line it names and the HLO instruction above it."""
        text = str(error)
        lines = self.program.source.splitlines()
        # Numba names the file relative to the working directory: match its name.
        found = [int(n) for n in re.findall(rf'File "[^"]*{re.escape(self.path.name)}", line '
                                             r'(\d+)', text)]
        if not found:  # a name Numba cannot resolve comes without a location: find its use
            missing = re.search(r"name '(\w+)' is not defined", text)
            found = [n for n, line in enumerate(lines, 1)
                     if missing and re.search(rf"\b{missing.group(1)}\b", line)][:1]
        where = ""
        if found and 0 < found[-1] <= len(lines):
            n = found[-1]
            hlo = self._hlo_behind(lines[n - 1]) or next(
                (lines[k].strip()[2:] for k in range(n - 1, -1, -1)
                 if lines[k].strip().startswith("# ")), "")
            where = f"\n  generated line {n}: {lines[n - 1].strip()}\n  from HLO: {hlo}"
        causes = re.findall(r"^\w*Error: .*$", text, flags=re.M)
        first = causes[0] if causes else (text.strip().splitlines() or [type(error).__name__])[0]
        return CompileError(f"Numba could not compile {self.module.name}: {first}{where}",
                            op="numba", hint=f"the generated source is {self.path}")

    def _hlo_behind(self, line: str) -> str:
        """The HLO instruction a generated assignment computes: its variable is the
        instruction's name made an identifier, then a number (`tanh_2_3` from tanh.2)."""
        assigned = re.match(r"\s*(\w+?)_\d+ = ", line)
        if not assigned:
            return ""
        for comp in self.module.all_computations:
            for inst in comp.instructions:
                if identifier(inst.name) == assigned.group(1):
                    return format_instruction(inst, metadata=False).strip()
        return ""

    def __call__(self, *args) -> list[np.ndarray]:
        return self.run_arrays(self._arguments(args))

    def run_arrays(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run on arrays already of the parameters' shapes and dtypes: the cached call path,
        which checked them by its signature key, so nothing here checks them again."""
        outs = [np.empty(dims, dtype) if not on_line else
                _aligned_bytes(dtype.itemsize * prod(dims)).view(dtype).reshape(dims)
                for dims, dtype, on_line in self._out_specs]
        if self._half:
            self._call([_bits(a) for a in arrays], [_bits(o) for o in outs])
        else:
            self._call(arrays, outs)
        if self._returns_outputs:  # each output once, in order: the common case
            return outs
        results = []
        for where, k in self.program.outputs:
            if where == "output":
                value = outs[k]
                # The same array returned twice is the caller's twice: copy the repeat.
                results.append(value if not any(r is value for r in results) else value.copy())
            elif where == "parameter":
                results.append(np.array(arrays[k], copy=True))
            else:
                results.append(self.constants[k].copy())
        return results

    def _call(self, arrays, outs) -> None:
        if self.compile_seconds is None:
            self._first_run(arrays, outs)
        else:
            self.entry(self.arena, *arrays, *self._kernel_constants, *outs)

    def _first_run(self, arrays, outs) -> None:
        """Numba compiles the program (or loads it from its disk cache) on the first call:
        timed by Numba's own event for holding its compiler lock, so the seconds are
        compiling and loading alone, not the run nor the first touch of its output."""
        compiling = event.TimingListener()
        try:
            with event.install_listener("numba:compiler_lock", compiling):
                self.entry(self.arena, *arrays, *self._kernel_constants, *outs)
        except NumbaError as e:
            raise self._compile_error(e) from e
        self.compile_seconds = compiling.duration if compiling.done else 0.0
