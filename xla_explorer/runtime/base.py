"""The Executable contract, and the base every generated executable shares.

A backend turns a finished module into an `Executable` (`backends/base.py`); everything that
runs or shows a compiled program (the exploration, jit's call path, the bench, the viewers,
the dumps) reads this contract alone, never which backend made it, as XLA's `Executable`
stands between its compilers and its runtime. `GeneratedExecutable` is the part that the
code-generating executables (CPU, CUDA) share: the generated program loaded from its file,
the argument checks and the plumbing of outputs that are a parameter, a constant or the same
buffer twice.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..codegen import cache
from ..ir.module import Instruction, Module
from ..passes.buffer_assignment import OUTPUT, BufferAssignment

if TYPE_CHECKING:  # codegen.program brings Numba in, which `import xla_explorer` must not
    from ..codegen.program import Launch

F16 = np.dtype(np.float16)


def half_bits(a: np.ndarray) -> np.ndarray:
    """A float16 array as the uint16 view a kernel takes (Numba has no float16); others as
    they are."""
    return a.view(np.uint16) if a.dtype == F16 else a


@dataclass
class CallRecord:
    """What one call did besides computing: the bytes it moved between host and device and
    the seconds of its transfers and of its kernels (launches and the wait for them); for a
    call profiled kernel by kernel (`Executable.profile`), each kernel's seconds."""

    to_device_bytes: int = 0
    to_host_bytes: int = 0
    transfer_seconds: float = 0.0
    kernel_seconds: float = 0.0
    kernels: dict[str, float] = field(default_factory=dict)  # kernel name -> seconds


class Executable:
    """A compiled module. Called with one array (or number) per parameter, in parameter
    order, it returns the flat list of the root's values: one per element of a root tuple,
    or the root alone. Arrays it returns belong to the caller (no views of its arena or of
    an input)."""

    # {kernel name: generated source}, {HLO instruction: kernel name}, {file: text}: what the
    # explorer shows of the generated code; empty for a backend that generates none.
    kernels: dict[str, str] = {}
    kernel_of: dict[str, str] = {}
    sources: dict[str, str] = {}
    # The driver's source: the kernels' launches in schedule order, a run of launches that
    # repeats (a loop's steps) rolled into a `for` loop; "" where there is none.
    driver: str = ""
    # Seconds spent turning generated code into machine code (None until known).
    compile_seconds: float | None = None

    @property
    def ready(self) -> bool:
        """Whether a call runs at once, with nothing left to compile first."""
        return True
    # Bytes the executable allocates once and reuses on every call (its arena).
    arena_bytes: int = 0
    # What the last call did apart from computing (`CallRecord`). The CPU records only a
    # profiled call (`profile`), so that its call path stays within a microsecond of its
    # kernels: None until then.
    last_call: CallRecord | None = None

    def __call__(self, *args) -> list:
        raise NotImplementedError

    def compile_driver(self) -> float | None:
        """Compile now what a later call would stop to compile (the CPU's driver, after a
        first call that ran it in Python), as a notebook does while idle (magic.py). The
        seconds it took; None where there is nothing to compile."""
        return None

    def run_arrays(self, arrays: Sequence) -> list:
        """The call on NumPy arrays already of the parameters' shapes and dtypes (the cached
        call path checked them): an executable may skip its own argument checks here."""
        return self(*arrays)

    def time_kernels(self, arrays: Sequence, repeat: int = 20) -> list[float]:
        """Seconds of each of `repeat` runs of the program on `arrays`, after two untimed
        runs (the first compiles the kernels, the second the CPU's driver). On the host a
        run is the kernels; a device times them apart from its transfers."""
        self(*arrays)
        self(*arrays)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            self(*arrays)
            times.append(time.perf_counter() - start)
        return times

    def profile(self, *args, repeat: int = 5) -> list:
        """A call that times each kernel on its own: the root's values, as a call gives them,
        and in `last_call` each kernel's seconds (the median of `repeat` runs, launch and
        wait) and their sum. Where there are no kernels of its own (the interpreter runs
        NumPy op by op) the call is timed whole, after one untimed call (which compiles what
        a first call compiles: an auto-clustered program's clusters)."""
        self(*args)
        start = time.perf_counter()
        results = self(*args)
        self.last_call = CallRecord(kernel_seconds=time.perf_counter() - start)
        return results

    def bench(self, name: str, eager: Callable, run: Callable, args: Sequence, repeat: int,
              output_bytes: int):
        """Eager NumPy (`eager`) against the compiled program (`run`: the call a user makes,
        outputs given NumPy's form) on the same inputs: a `BenchResult`. The arena is
        allocated once, so the predicted peak is the arena and the outputs."""
        from .bench import bench

        return bench(name, eager, run, args, repeat, self.arena_bytes,
                     self.arena_bytes + output_bytes, self.compile_seconds)


class GeneratedExecutable(Executable):
    """A module compiled by a code generator with its buffer assignment: the generated file
    loaded as a Python module whose `run(arena, *parameters, *constants, *outputs)` calls
    every kernel in schedule order. Subclasses generate (`generate`) and launch."""

    @property
    def ready(self) -> bool:
        return self.compile_seconds is not None  # Numba compiles on the first call

    def __init__(self, module: Module, assignment: BufferAssignment):
        if assignment.module is not module:
            raise ValueError("the buffer assignment must be the module's own")
        self.module, self.assignment = module, assignment
        start = time.perf_counter()
        self.program, self.path = self.generate(module, assignment)
        self._py = cache.load(self.path)
        self.generate_seconds = time.perf_counter() - start
        # Seconds turning the program into machine code (or loading it from Numba's disk
        # cache), known after the first call.
        self.compile_seconds: float | None = None
        self.params = sorted(module.entry.parameters, key=lambda p: p.parameter_number)
        self.output_shapes = [b.shape for b in assignment.buffers if b.category == OUTPUT]
        # (np.array, not np.ascontiguousarray: that makes a 0-d constant 1-d.)
        self.constants = [np.array(c.literal.reshape(c.dims), order="C")
                          for c in self.program.constants]

    def generate(self, module: Module, assignment: BufferAssignment):
        """(the generated program, the path of the file holding its source)."""
        raise NotImplementedError

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

    @property
    def driver(self) -> str:
        return self.program.driver

    def __call__(self, *args) -> list:
        self.check_count(args)
        return self.run_arrays(self.host_arguments(args))

    def check_count(self, args: Sequence) -> None:
        check_count(self.module.name, self.params, args)

    def host_arguments(self, args: Sequence) -> tuple:
        """Each argument as a NumPy array of its parameter's shape and dtype (a TypeError
        naming a wrong shape); the CPU's arguments, and a device's before their transfer.
        A tuple, which Python keeps ready-made, where a list's items would be allocated
        during the call."""
        return tuple([self.host_argument(a, n) for n, a in enumerate(args)])

    def host_argument(self, a, n: int) -> np.ndarray:
        return host_argument(self.params[n], a, n)

    def launch_arguments(self, launch: Launch, buffers: dict[str, Sequence]) -> list:
        """What the driver passes `launch`, for calling its kernel alone: a temporary as its
        view of the arena, a parameter, constant or output from `buffers` (by kind, in the
        kernel's storage: float16 as bits), then the kernel's scratch space and the
        constants it takes as arguments."""
        from ..codegen.program import BufferRef  # here: see the imports above

        arena = self.arena  # type: ignore[attr-defined]  # each target allocates its own
        args = []
        for b in launch.inputs + launch.outputs:
            if isinstance(b, BufferRef):
                storage = np.uint16 if b.dtype == F16 else b.dtype
                args.append(arena[b.offset:b.end].view(storage).reshape(b.shape))
            else:
                args.append(buffers[b.kind][b.number])
        if launch.scratch is not None:
            args.append(arena[launch.scratch.offset:launch.scratch.offset + launch.scratch.size])
        args += [np.dtype(t).type(v) for t, v in getattr(launch.code, "numbers", ())]
        return args

    def time_launches(self, buffers: dict[str, Sequence], launch: Callable[[Launch, list], float],
                      repeat: int) -> CallRecord:
        """Every kernel of the program run alone, in schedule order, `repeat` + 1 times
        (the first pass readies each kernel for a call of its own, and is not counted):
        `launch(launch, arguments)` runs one and says its seconds."""
        launches = self.program.plan.launches
        seconds: dict[str, list[float]] = {k.kernel: [] for k in launches}
        for n in range(repeat + 1):
            for k in launches:
                took = launch(k, self.launch_arguments(k, buffers))
                if n:
                    seconds[k.kernel].append(took)
        kernels = {name: float(np.median(s)) for name, s in seconds.items()}
        return CallRecord(kernel_seconds=sum(kernels.values()), kernels=kernels)

    def gather(self, outs: list, arguments: Sequence, constants: Sequence,
               copy: Callable) -> list:
        """The root's values in order, from the program's outputs (`gather`)."""
        return gather(self.program.outputs, outs, arguments, constants, copy)


def check_count(name: str, params: Sequence, args: Sequence) -> None:
    if len(args) != len(params):
        raise TypeError(f"{name} takes {len(params)} arguments, got {len(args)}")


def host_argument(p: Instruction, a, n: int) -> np.ndarray:
    """Argument `n`, `a`, as a NumPy array of parameter `p`'s shape and dtype (a TypeError
    naming a wrong shape), C-contiguous and aligned: kernels read their arrays C-contiguous
    (a parallel loop's thread workers rely on it, codegen/cpu/launch.py) and are compiled
    for aligned elements (Numba would compile another signature; a kernel image has none),
    so a strided or unaligned input is copied, which kernels only read."""
    arr = np.asarray(a)
    if arr.shape != p.dims:
        raise TypeError(f"argument {n} has shape {arr.shape}; it was compiled for {p.shape}")
    if arr.dtype != p.dtype:
        return arr.astype(p.dtype)
    return arr if arr.flags.c_contiguous and arr.flags.aligned else np.array(arr, order="C")


def gather(outputs: Sequence[tuple[str, int]], outs: Sequence, arguments: Sequence,
           constants: Sequence, copy: Callable) -> list:
    """The root's values in order, from a program's `outputs`: each an output buffer, a
    parameter, or a constant, `copy`'d where the caller would otherwise share it (an input,
    a constant, one buffer returned twice)."""
    results: list = []
    for where, k in outputs:
        if where == "output":
            value = outs[k]
            # The same array returned twice is the caller's twice: copy the repeat.
            results.append(value if not any(r is value for r in results) else copy(value))
        elif where == "parameter":
            results.append(copy(arguments[k]))
        else:
            results.append(copy(constants[k]))
    return results
