"""The CPU backend: each kernel generated as Numba source (`codegen/cpu/`, one module per
kernel shape) and run over one arena laid out by the buffer assignment
(`runtime/executable.py`). `CpuBackend(options=CodegenOptions(...))` compiles with other
tuning values (parallel thresholds, prefetching) than the measured defaults."""
from __future__ import annotations

import dataclasses
import sys
import threading

from ..codegen.options import DEFAULT_OPTIONS, CodegenOptions
from ..codegen.packing import cpu_scratch_bytes
from ..ir.module import Instruction, Module
from ..passes.buffer_assignment import BufferAssignment
from ..runtime.base import Executable
from ..passes.base import Pipeline
from .base import Backend, PassOptions


class CpuBackend(Backend):
    name = "cpu"
    needs_assignment = True
    dump_name = "cpu"
    exports = True
    tiers = True

    def __init__(self, options: CodegenOptions = DEFAULT_OPTIONS, loop_body: bool = False):
        self.options = options  # the code generator's tuning values, for every compile
        # Compiling a while loop's body, whose driver the loop's kernel calls from compiled
        # code (so it is compiled even for one kernel).
        self.loop_body = loop_body

    def compile_key(self) -> tuple:
        return (self.name, self.options, self.loop_body)

    def scratch_bytes(self, module: Module, inst: Instruction) -> int:
        # A product's packed B (codegen/packing.py), placed in the arena's free space at
        # its step: a training step's 512 KiB of it goes where the activations were.
        return cpu_scratch_bytes(module, inst)

    def start(self) -> None:
        """Numba started: imported (as codegen/numba_start.py imports it) and its registries
        of NumPy's implementations loaded, about 0.3 s of a process's first answer. Not
        where Numba is imported already, or may be being imported by a compile in a thread
        of ours (`tiered=True`): two threads importing it at once can hang on llvmlite's
        lock."""
        if "numba" in sys.modules or any(t.name.startswith("xla-explorer")
                                         for t in threading.enumerate()):
            return
        from ..codegen import numba_start  # noqa: F401
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target

        with global_compiler_lock:  # as a compile holds it while it loads them
            cpu_target.target_context.refresh()
            cpu_target.typing_context.refresh()

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        """The program from its kernel image where an earlier process left one and Numba
        has not started here (runtime/native.py: images are there to spare its start; once
        it runs, its own cache loads a kernel in milliseconds), else compiled by Numba."""
        from ..runtime import native

        if self.loop_body or assignment is None or not native.enabled():
            return self._compile(module, assignment, None)
        key = native.image_key(module, self.compile_key())
        found = None
        if "numba" not in sys.modules:
            found = native.open_image(module, assignment, key,
                                      lambda: self._compile(module, assignment, key))
        return found if found is not None else self._compile(module, assignment, key)

    def _compile(self, module: Module, assignment, image_key: str | None) -> Executable:
        # Imported here: Numba takes a while to import, and `import xla_explorer` should not.
        from ..runtime.executable import CpuExecutable

        executable = CpuExecutable(module, assignment, self.options, self._loop_bodies(module),
                                   compiled_driver=self.loop_body)
        executable.image_key = image_key  # its image is written after its first calls
        return executable

    def _loop_bodies(self, module: Module) -> dict:
        """Each while loop's body, compiled by the same pipeline as a program of its own
        (codegen/cpu/while_loop.py), by body computation."""
        from ..codegen.cpu.while_loop import LoopBody, body_module, refuse

        bodies: dict = {}
        for inst in module.entry.instructions:
            if inst.opcode != "while" or inst.attr("body") in bodies:
                continue
            pipeline = Pipeline(self.passes(PassOptions()))
            final = pipeline.run(body_module(module, inst))
            assignment = pipeline.stages[-1].artifact  # buffer assignment's, last
            # Its kernels with their sizes as numbers: a body's program is made for its loop
            # at one shape, whose while kernel holds them anyway, and a size read at run time
            # cost its compile more there (gradient descent, 100 steps: 1.6 s, 2.1 s).
            body_options = dataclasses.replace(self.options, generic_sizes=False)
            executable = CpuBackend(body_options, loop_body=True).compile(final, assignment)
            program = executable.program
            if program.constants:
                raise refuse(inst, "its body keeps constants its compiled program would take "
                                   f"as arguments ({', '.join(c.name for c in program.constants)}"
                                   "): pass them in the loop's state")
            bodies[inst.attr("body")] = LoopBody(
                executable.path.stem, program.arena_bytes, tuple(program.outputs),
                program.num_outputs, tuple(pipeline.stages),
                {**executable.kernels, "run": program.driver})
        return bodies
