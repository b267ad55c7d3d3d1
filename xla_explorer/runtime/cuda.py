"""A module compiled for CUDA: the generated kernels, one device arena, and a call that takes
NumPy arrays or device arrays and returns the same kind.

The arena is one `cuda.device_array` of bytes per executable, laid out by the buffer
assignment (temporaries are views of it at the assignment's offsets), followed by the
kernels' scratch space (a full reduction's per-block partials and its counter). Inputs may be
NumPy arrays (copied to the device: a transfer), Numba device arrays or anything with
`__cuda_array_interface__` (CuPy, PyTorch: used where they lie). Outputs are device arrays
allocated per call, handed back as NumPy arrays when the inputs were NumPy (a transfer), as
CuPy arrays when an input was CuPy, else as Numba device arrays. The transfers of the last
call are counted apart from its kernels (`last_call`).
"""
from __future__ import annotations

import sys
import time
import warnings
from contextlib import contextmanager
from typing import Sequence

import numpy as np

from ..codegen import cache
from ..codegen.cuda import CudaProgram, generate_cuda_program
from ..codegen.writer import identifier
from ..errors import CompileError
from ..ir.module import Module
from ..passes.buffer_assignment import BufferAssignment
from .arena import run_in_arena
from .base import F16, CallRecord, Executable, GeneratedExecutable, half_bits
from .cuda_device import cuda_module, simulated

# Python's thread switch interval while the simulator runs a program (see CudaExecutable._run).
SIMULATOR_SWITCH_INTERVAL = 1e-4


def _kind(a) -> str:
    """'numpy', 'cupy' or 'numba' (any other __cuda_array_interface__ object)."""
    if isinstance(a, np.ndarray):
        return "numpy"
    if hasattr(a, "copy_to_host"):  # a Numba device array (or the simulator's)
        return "numba"
    if not hasattr(a, "__cuda_array_interface__"):
        return "numpy"
    return "cupy" if type(a).__module__.split(".")[0] == "cupy" else "numba"


class CudaExecutable(GeneratedExecutable):
    """`module` compiled for CUDA with its buffer assignment."""

    def __init__(self, module: Module, assignment: BufferAssignment):
        self.cuda = cuda_module()  # a CompileError naming what to install, before any work
        super().__init__(module, assignment)
        self.simulated = simulated()
        cuda = self.cuda
        self.arena = cuda.device_array(max(self.program.arena_bytes, 1), np.uint8)
        if self.program.scratch_bytes:  # a full reduction's counter starts at zero
            at = self.program.scratch_offset
            self.arena[at:at + self.program.scratch_bytes].copy_to_device(
                np.zeros(self.program.scratch_bytes, np.uint8))
        self._device_constants = [cuda.to_device(half_bits(c)) for c in self.constants]
        self.last_call = CallRecord()

    def generate(self, module: Module, assignment: BufferAssignment):
        program: CudaProgram = generate_cuda_program(module, assignment)
        return program, cache.write_source(identifier(module.name) + "_cuda", program.source)

    @property
    def arena_bytes(self) -> int:
        return int(self.arena.size)

    # -- a call -----------------------------------------------------------------------------

    def __call__(self, *args) -> list:
        self.check_count(args)  # each argument is checked as it moves to the device
        return self.run_arrays(args)

    def run_arrays(self, arrays: Sequence) -> list:
        cuda = self.cuda
        record = CallRecord()
        kinds = [_kind(a) for a in arrays]
        device_kind = next((k for k in kinds if k != "numpy"), None)
        t0 = time.perf_counter()
        dev_args = []
        for n, (a, p) in enumerate(zip(arrays, self.params)):
            dev_args.append(self._to_device(a, p, n, record))
        record.transfer_seconds += time.perf_counter() - t0
        outs = [cuda.device_array(s.dims, np.uint16 if s.dtype == F16 else s.dtype)
                for s in self.output_shapes]
        t1 = time.perf_counter()
        self._launch(dev_args, outs)
        cuda.synchronize()
        record.kernel_seconds = time.perf_counter() - t1
        final = self._results(outs, dev_args, device_kind, record)
        self.last_call = record
        return final

    def _results(self, outs, dev_args, device_kind, record: CallRecord) -> list:
        """The root's values, handed back as the inputs' kind (a transfer for NumPy)."""
        results = self.gather(outs, dev_args, self._device_constants,
                              lambda dev: _device_copy(self.cuda, dev))
        start = time.perf_counter()
        shapes = [self._result_dtype(where, k) for where, k in self.program.outputs]
        final = [self._hand_back(v, dt, device_kind, record) for v, dt in zip(results, shapes)]
        record.transfer_seconds += time.perf_counter() - start
        return final

    def profile(self, *args, repeat: int = 5) -> list:
        """The call with each kernel launched alone, in schedule order, as the driver would
        launch it, and timed to the end of its work (`last_call.kernels`)."""
        self.check_count(args)
        self.run_arrays(args)  # compiles every kernel, once
        cuda = self.cuda
        moved = CallRecord()
        device_kind = next((k for k in map(_kind, args) if k != "numpy"), None)
        dev_args = [self._to_device(a, p, n, moved)
                    for n, (a, p) in enumerate(zip(args, self.params))]
        outs = [cuda.device_array(s.dims, np.uint16 if s.dtype == F16 else s.dtype)
                for s in self.output_shapes]
        buffers = {"parameter": dev_args, "constant": self._device_constants, "output": outs}

        def launch(k, arguments) -> float:
            grid = k.shape
            blocks = (self._py.cooperative_blocks(grid.blocks) if grid.cooperative
                      else grid.blocks)
            start = time.perf_counter()
            with self._simulating():
                getattr(self._py, k.kernel)[blocks, grid.threads](*arguments)
                cuda.synchronize()
            return time.perf_counter() - start

        record = self.time_launches(buffers, launch, repeat)
        record.to_device_bytes = moved.to_device_bytes
        final = self._results(outs, dev_args, device_kind, record)
        self.last_call = record
        return final

    def _result_dtype(self, where, k) -> np.dtype:
        if where == "output":
            return np.dtype(self.output_shapes[k].dtype)
        if where == "parameter":
            return np.dtype(self.params[k].dtype)
        return self.constants[k].dtype

    def _run(self, dev_args, outs) -> None:
        with self._simulating():
            self._py.run(self.arena, *dev_args, *self._device_constants, *outs)

    @contextmanager
    def _simulating(self):
        """Where the simulator runs the kernels: it runs a block as one Python thread per
        CUDA thread, which meet at every barrier and shuffle, and switching between them
        often makes that several times faster than Python's default 5 ms switch interval.
        Its threads compute with NumPy scalars, which warn on the wrap-around and overflow
        that a GPU (and HLO) does silently; np.errstate would not reach those threads."""
        if not self.simulated:
            yield
            return
        before = sys.getswitchinterval()
        sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                yield
        finally:
            sys.setswitchinterval(before)

    def _launch(self, dev_args, outs) -> None:
        if self.compile_seconds is not None:
            self._run(dev_args, outs)
            return
        start = time.perf_counter()
        try:
            self._run(dev_args, outs)
        except CompileError:
            raise
        except Exception as e:
            if self.simulated:
                raise
            raise CompileError(f"Numba could not compile or launch {self.module.name}'s CUDA "
                               f"kernels: {str(e).splitlines()[0] if str(e) else e!r}",
                               op="numba-cuda", hint=f"the generated source is {self.path}"
                               ) from e
        # the first call compiles every kernel (the simulator compiles nothing)
        self.compile_seconds = time.perf_counter() - start

    def time_kernels(self, arrays: Sequence, repeat: int = 20) -> list[float]:
        """Seconds of each of `repeat` launches of the whole program on `arrays` (moved to
        the device first, untimed), timed by CUDA events around the launches, so neither
        transfers nor Python's own time between calls count. The simulator's events keep no
        time: there it is the wall time of the launches and a synchronize."""
        cuda = self.cuda
        dev = [self._to_device(a, p, n, CallRecord())
               for n, (a, p) in enumerate(zip(arrays, self.params))]
        outs = [cuda.device_array(s.dims, np.uint16 if s.dtype == F16 else s.dtype)
                for s in self.output_shapes]
        self._launch(dev, outs)  # compiles, once
        cuda.synchronize()
        times = []
        for _ in range(repeat):
            if self.simulated:
                t = time.perf_counter()
                self._run(dev, outs)
                cuda.synchronize()
                times.append(time.perf_counter() - t)
                continue
            start, end = cuda.event(), cuda.event()
            start.record()
            self._py.run(self.arena, *dev, *self._device_constants, *outs)
            end.record()
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end) / 1e3)
        return times

    def bench(self, name: str, eager, run, args, repeat: int, output_bytes: int):
        """Kernels timed by CUDA events on inputs already on the device, transfers apart,
        against CuPy running the NumPy code (`runtime/cuda_bench.py`)."""
        from .cuda_bench import bench_cuda

        return bench_cuda(self, name, eager, args, repeat)

    def _to_device(self, a, p, n: int, record: CallRecord):
        cuda = self.cuda
        dtype = np.dtype(p.dtype)
        if _kind(a) != "numpy":
            dev = a if hasattr(a, "copy_to_host") else cuda.as_cuda_array(a)
            if tuple(dev.shape) != tuple(p.dims) or np.dtype(dev.dtype) != dtype:
                raise TypeError(f"argument {n} is a device array {dev.dtype}{list(dev.shape)}; "
                                f"it was compiled for {p.shape}")
            if not dev.is_c_contiguous():
                raise TypeError(f"argument {n} is a device array that is not C-contiguous; "
                                "pass a contiguous copy")
            return dev.view(np.uint16) if dtype == F16 else dev
        arr = np.asarray(self.host_argument(a, n), order="C")  # (ascontiguousarray: 0-d 1-d)
        record.to_device_bytes += arr.nbytes
        return cuda.to_device(half_bits(arr))

    def _hand_back(self, dev, dtype: np.dtype, kind: str | None, record: CallRecord):
        if kind is None:  # NumPy in, NumPy out
            host = dev.copy_to_host()
            record.to_host_bytes += host.nbytes
            return host.view(F16) if dtype == F16 else host
        if dtype == F16:
            dev = dev.view(F16)
        if kind == "cupy":
            import cupy

            return cupy.asarray(dev)
        return dev


def has_empty_array(module: Module) -> bool:
    """Whether any value of the program has no elements (a dimension of size 0)."""
    def empty(shape) -> bool:
        return any(map(empty, shape.elements)) if shape.is_tuple else shape.size == 0
    return any(empty(i.shape) for c in module.all_computations for i in c.instructions)


class EmptyArrayExecutable(Executable):
    """A program with an array of no elements: a kernel cannot be laid out over zero threads
    or zero blocks, and there is nothing for the GPU to do, so the reference interpreter
    computes the results (empty arrays, or reductions of nothing such as sum's zeros) on the
    host and they are handed back as the inputs' kind, as CudaExecutable does."""

    def __init__(self, module: Module, assignment: BufferAssignment):
        self.cuda = cuda_module()
        self.module, self.assignment = module, assignment
        self.compile_seconds: float | None = 0.0
        self.arena_bytes = 0
        self.kernels: dict[str, str] = {}
        self.kernel_of: dict[str, str] = {}
        self.sources = {"": "# no CUDA kernel: an array of this program has no elements, so "
                            "the host computes it\n"}
        self.last_call = CallRecord()

    def __call__(self, *args) -> list:
        return self.run_arrays(args)

    def run_arrays(self, arrays: Sequence) -> list:
        kinds = [_kind(a) for a in arrays]
        device_kind = next((k for k in kinds if k != "numpy"), None)
        host = [np.asarray(a) if k == "numpy" else
                (a.copy_to_host() if hasattr(a, "copy_to_host")
                 else self.cuda.as_cuda_array(a).copy_to_host())
                for a, k in zip(arrays, kinds)]
        results = run_in_arena(self.module, self.assignment, host)
        if device_kind is None:
            return results
        device = [self.cuda.to_device(np.ascontiguousarray(r)) for r in results]
        if device_kind == "cupy":
            import cupy

            return [cupy.asarray(d) for d in device]
        return device


def _device_copy(cuda, dev):
    out = cuda.device_array(dev.shape, dev.dtype)
    out.copy_to_device(dev)
    return out
