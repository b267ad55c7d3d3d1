"""A compiled module: the generated Numba program, its arena, and a NumPy-in, NumPy-out call
(runtime/arena_call.py). One call is one dispatch into Numba: the driver `run` calls every
kernel in schedule order. The first call runs the same driver written in Python, so that
Numba compiles each kernel once, and the second compiles `run` (which compiles its kernels
into its own machine code again), unless `compile_driver` did before (a notebook, while
idle). After the first call, and again once `run` is compiled, the program's kernel image
is written (runtime/native.py).
"""
from __future__ import annotations

import contextlib
import re
import sys
import time

import numpy as np
from numba import njit, typeof
from numba.core import event
from numba.core.errors import NumbaError

from ..codegen import cache
from ..codegen.cpu import CACHE_LINE, DEFAULT_OPTIONS, CodegenOptions, Program, generate_program
from ..codegen.writer import identifier
from ..errors import CompileError
from ..ir.module import Module
from ..ir.printer import format_instruction
from ..passes.buffer_assignment import BufferAssignment
from .arena_call import ArenaCall, aligned_bytes, copy_array
from .base import GeneratedExecutable, half_bits


@njit(cache=True)
def _to_line(raw):
    """Bytes from raw's start to the next cache line (ArenaCall._to_line): NumPy's own ways
    to tell an address weighed 300 to 400 bytes in every product's call (notebook 06's
    1024^2 product allocated more than eager NumPy's for it)."""
    return -raw.ctypes.data % CACHE_LINE


class CpuExecutable(ArenaCall, GeneratedExecutable):
    """`module` compiled for the CPU with its buffer assignment."""

    # Where its kernel image goes once it has run (runtime/native.py); None: nowhere.
    image_key: str | None = None

    def __init__(self, module: Module, assignment: BufferAssignment,
                 options: CodegenOptions = DEFAULT_OPTIONS, bodies: dict | None = None,
                 compiled_driver: bool = False):
        self.options = options  # the code generator's tuning (read by `generate`)
        # Each while loop's body compiled (codegen/cpu/while_loop.LoopBody), by body name.
        self.bodies = dict(bodies or {})
        self.compiled_driver = compiled_driver
        super().__init__(module, assignment)
        # The buffer assignment's temporaries, then the kernels' scratch space (packed B).
        self.arena = aligned_bytes(self.program.arena_bytes)
        self._to_line = _to_line
        # The generated Numba function: run(arena, *parameters, *constants, *outputs).
        self.entry = self._py.run
        # The first call's driver, in Python, while `entry` is not compiled (None: there is
        # none, or the compiled one is on disk; codegen/cpu/driver.FIRST_DECORATOR).
        self._first_entry = None
        # The driver's argument types, as Numba types them, once the first call ran
        # (compile_driver).
        self._driver_types: tuple | None = None
        if self.program.first and not cache.numba_cached(self.program.entry_stem, "run"):
            self._first_entry = cache.loaded_function(self.program.first_stem, "run")
        self._prepare_call(self.output_shapes, self.program.outputs, self.program.line_outputs,
                           self.params)
        self._kernel_constants = [half_bits(c) for c in self.constants]
        # The driver's offsets and shapes, then its kernels' constants, after every other
        # argument (codegen/cpu/sizes.py).
        self._layout = (() if self.program.layout is None
                        else (np.array(self.program.layout, np.int64),
                              np.array(self.program.numbers or (), np.float64)))

    def generate(self, module: Module, assignment: BufferAssignment):
        program: Program = generate_program(module, assignment, self.options, self.bodies,
                                            self.compiled_driver)
        # Each kernel a file named by its code (found again by a new shape that gives the
        # same code: its text, comments and all, is the first shape's), then the driver's,
        # which loads them.
        self.files = [cache.write_named(stem, text) for stem, text in program.files.items()]
        # Named by its code too: the numbers that change with the shapes come in `layout`.
        path = cache.write_named(program.entry_stem, program.entry)
        self.files.append(path)
        # The first call's driver in Python (Program.first): its numbers are in its text, so
        # that this file is the one whose name changes with the shapes.
        self.first_path = (cache.write_named(program.first_stem, program.first)
                           if program.first else None)
        if self.first_path is not None:
            self.files.append(self.first_path)
        return program, path

    @property
    def kernels(self) -> dict[str, str]:
        """The kernels' sources by name; a while loop's body's as `<body>/<kernel>` (its
        driver, one step, as `<body>/run`), as auto-clustering names a cluster's."""
        out = dict(self.program.kernels)
        for body, loop in self.bodies.items():
            out.update((f"{body}/{name}", source) for name, source in loop.kernels.items())
        return out

    def _compile_error(self, error: Exception) -> CompileError:
        """Numba's failure as the generated line it names and the HLO instruction above it."""
        text = str(error)
        path, lines, n = self._generated_line(text)
        where = ""
        if n is not None:
            hlo = self._hlo_behind(lines[n - 1]) or next(
                (lines[k].strip()[2:] for k in range(n - 1, -1, -1)
                 if lines[k].strip().startswith("# ")), "")
            where = f"\n  generated line {n}: {lines[n - 1].strip()}\n  from HLO: {hlo}"
        causes = re.findall(r"^\w*Error: .*$", text, flags=re.M)
        first = causes[0] if causes else (text.strip().splitlines() or [type(error).__name__])[0]
        return CompileError(f"Numba could not compile {self.module.name}: {first}{where}",
                            op="numba", hint=f"the generated source is {path}")

    def _generated_line(self, text: str) -> tuple:
        """(file, its lines, the line number) of the generated line Numba's message `text`
        names, in the driver's file or a kernel's; (driver's file, [], None) if none."""
        sources = {path: path.read_text().splitlines() for path in self.files}
        for path, lines in sources.items():
            # Numba names the file relative to the working directory: match its name.
            found = re.findall(rf'File "[^"]*{re.escape(path.name)}", line (\d+)', text)
            if found and 0 < int(found[-1]) <= len(lines):
                return path, lines, int(found[-1])
        missing = re.search(r"name '(\w+)' is not defined", text)
        for path, lines in sources.items():  # a name Numba cannot resolve: find its use
            for n, line in enumerate(lines, 1):
                if missing and re.search(rf"\b{missing.group(1)}\b", line):
                    return path, lines, n
        return self.path, [], None

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

    def profile(self, *args, repeat: int = 5) -> list:
        """The call with each kernel called alone from Python, in schedule order, as the
        driver would call it, and timed (`last_call.kernels`)."""
        self.check_count(args)
        arrays = self.host_arguments(args)
        self.run_arrays(arrays)  # compiles the program, once
        outs = [np.empty(dims, dtype) for dims, dtype, _ in self._out_specs]
        buffers = {"parameter": [half_bits(a) for a in arrays],
                   "constant": self._kernel_constants,
                   "output": [half_bits(o) for o in outs]}

        def launch(k, arguments) -> float:
            kernel = getattr(self._py, k.kernel)
            start = time.perf_counter()
            kernel(*arguments)
            return time.perf_counter() - start

        self.last_call = self.time_launches(buffers, launch, repeat)
        return self.gather(outs, arrays, self.constants, copy_array)

    def _call(self, arrays, outs) -> None:
        if self.compile_seconds is None or self._first_entry is not None:
            self._first_run(arrays, outs)
        else:
            self._run_entry(arrays, outs)

    def _first_run(self, arrays, outs) -> None:
        """Numba compiles the program (or loads it from its disk cache) on the first call:
        timed by Numba's own event for holding its compiler lock, so the seconds are
        compiling and loading alone, not the run nor the first touch of its output. A
        program with a driver in Python for its first call (`_first_entry`) runs that, and
        compiles the driver on its second call, its seconds added."""
        try:
            # Held throughout: a second first call waits here, then runs on its own arena.
            with self._compiling():
                if self.compile_seconds is None:
                    # Every generated file with thread workers imports their module: none
                    # imported, none to compile, and a serial program does not start the
                    # threads codegen/parallel.py starts on import.
                    launch = sys.modules.get("xla_explorer.codegen.cpu.launch")
                    if launch is not None:
                        launch.compile_workers(self._py)
                    first = self._first_entry
                else:
                    first = self._first_entry = None
                if first is not None:  # it takes no layout: its numbers are in its text
                    first(self.arena, *arrays, *self._kernel_constants, *outs)
                    self._driver_types = tuple(map(typeof, (
                        self.arena, *arrays, *self._kernel_constants, *outs, *self._layout)))
                else:
                    self.entry(self.arena, *arrays, *self._kernel_constants, *outs,
                               *self._layout)
        except NumbaError as e:
            raise self._compile_error(e) from e
        if self.image_key is not None:
            self._save_image(compiled=first is None and hasattr(self.entry, "overloads"))

    def compile_driver(self) -> float | None:
        """Compile the driver `run` now, for the types of the first call, instead of in the
        second call, which would wait for it (0.1 to 0.3 s for a program of several
        kernels): a notebook does this while it is idle after a cell (magic.py). Returns the
        seconds it took; None where there was nothing to compile, or where Numba refused
        (the next call compiles it again and raises the error with the generated line)."""
        types = self._driver_types
        if self._first_entry is None or types is None:
            return None
        before = self.compile_seconds or 0.0
        try:
            with self._compiling():
                self.entry.compile(types)
        except NumbaError:
            return None
        self._first_entry = None
        if self.image_key is not None:
            self._save_image(compiled=True)
        return self.compile_seconds - before

    @contextlib.contextmanager
    def _compiling(self):
        """The arena held while Numba compiles or loads in the block, and the seconds it
        held its compiler lock (its own event: compiling and loading alone, not running)
        added to `compile_seconds`, once the block is done."""
        compiling = event.TimingListener()
        with self._arena_free, event.install_listener("numba:compiler_lock", compiling):
            yield
        self.compile_seconds = ((self.compile_seconds or 0.0)
                                + (compiling.duration if compiling.done else 0.0))

    def _save_image(self, compiled: bool) -> None:
        """The kernel image of what this call ran (its compiled driver, or its Python driver
        and kernels), for a later process (runtime/native.py)."""
        from .native_image import program_image
        from .native import save_image

        image = program_image(self, compiled)
        if image is not None:
            save_image(self.image_key, image)

