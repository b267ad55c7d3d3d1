"""What a backend is: a name, what it can compile, the passes it runs, and
`compile(module, assignment)`.

The driver (`xla_explorer/compiler.py`) asks the backend for its pass pipeline (as XLA's
`Compiler::RunHloPasses` is each target's), runs it, and hands the result to the backend,
which returns an `Executable` (the contract in `runtime/base.py`). Nothing else in the
package asks which backend it is talking to: what differs between targets is said here, by
the backend, so a new backend is this interface implemented in one file and one line in
`backends/__init__.py`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..errors import CompileError, UnsupportedOpError, not_compilable
from ..ir.library import library_call, runs_eagerly
from ..ir.module import Instruction, Module
from ..passes.base import Pass
from ..passes.buffer_assignment import BufferAssignment, assign_buffers
from ..passes.pipeline import default_passes
from ..runtime.base import Executable


@dataclass(frozen=True)
class PassOptions:
    """What the caller asked of the pipeline: with `autocluster`, ops the target cannot
    compile run eagerly between compiled clusters."""

    autocluster: bool = False


class Backend:
    """One target. Subclasses set `name` and implement `compile`; `unsupported` says which
    instructions the target cannot compile (must-compile raises the first one's error)."""

    name: str = ""
    # Whether `compile` needs the buffer assignment of the module it gets (the arena layout).
    needs_assignment: bool = False
    # Whether the backend runs NumPy's eager ops (custom-calls) itself, so that exploring a
    # program that has them needs neither must-compile's error nor auto-clustering.
    runs_eager_ops: bool = False
    # Whether it generates code whose speed is worth measuring against NumPy (the viewer's
    # benchmark); the interpreter runs NumPy itself, op by op.
    generates_code: bool = True
    # The target's word in dump file names (`cpu_after_optimizations.txt`, `cpu-pipeline`),
    # as XLA's dumps name the CPU compiler's files; "" for the plain names.
    dump_name: str = ""
    # Whether it runs HLO while loops: the pipeline then rolls a long unrolled loop into one.
    runs_loops: bool = True
    # Whether its programs export ahead of time into a module that needs only NumPy
    # (api/export.py: the cpu backend's kernels, built by Numba's pycc).
    exports: bool = False
    # Whether it takes lazy arrays (dask arrays) as arguments and returns them, computed
    # only when asked: `%%xla` then binds them as they are and skips its check, which would
    # compute them.
    lazy: bool = False
    # Whether a first answer may come from the interpreter while the kernels compile, and
    # first run, in a thread of their own (`tiered`). Numba's CUDA simulator runs one
    # kernel at a time in a process: a compile run beside the next cell's would collide.
    tiers: bool = False

    def passes(self, options: PassOptions) -> list[Pass]:
        """The pass pipeline for this target: by default the one every target runs
        (`passes/pipeline.py`). A target that needs others (no fusion for a reference, a
        partitioning pass for a distributed one) overrides this."""
        return default_passes(autocluster=options.autocluster, roll_loops=self.runs_loops,
                              scratch=self.scratch_bytes)

    def start(self) -> None:
        """Do now what this target's first compile in a process would wait for, so that
        it does not (called while a notebook is idle: `%load_ext xla_explorer`). Nothing,
        by default."""

    def configured(self, **options) -> Backend:
        """This backend with options of its own (`xe.jit(f, backend="dask", chunks=...)`):
        none by default."""
        if options:
            raise TypeError(f"the {self.name} backend takes no options (got "
                            f"{', '.join(sorted(options))})")
        return self

    def prepare(self, args: Sequence) -> tuple[Backend, list]:
        """The backend for a trace on `args`, and what the trace runs on: this backend and
        `args` themselves by default. A target whose arguments are not NumPy arrays (dask
        arrays) gives stand-ins of their shapes and dtypes, and itself bound to what it
        reads of them (their chunks)."""
        return self, list(args)

    def scratch_bytes(self, module: Module, inst: Instruction) -> int:
        """The scratch space kernel `inst` takes while it runs on this target, for the buffer
        assignment to place in the arena with the temporaries: none by default."""
        return 0

    def assign_buffers(self, module: Module) -> BufferAssignment:
        """`module`'s buffer assignment for this target (its kernels' scratch placed too)."""
        return assign_buffers(module, self.scratch_bytes)

    def compile_key(self) -> tuple:
        """What, besides the module, decides what `compile` makes: executables cached across
        compilations (auto-clustering's clusters) are shared only under an equal key."""
        return (self.name,)

    def unsupported(self, inst: Instruction) -> CompileError | None:
        """The error must-compile raises for `inst`, or None when the backend compiles it.
        A custom-call is NumPy run eagerly (np.unique: its shape depends on values), but a
        library call (np.linalg.solve), which compiles."""
        if runs_eagerly(inst):
            return not_compilable(inst.attr("custom_call_target"), inst.metadata.source_file,
                                  inst.metadata.source_line, inst.metadata.op_name)
        return None

    def refuse_library_call(self, inst: Instruction, why: str) -> CompileError | None:
        """For a target that does not run library calls: `inst`'s refusal (naming the NumPy
        function, its line and `why`) if it is one, else None."""
        call = library_call(inst)
        if call is None:
            return None
        md = inst.metadata
        return UnsupportedOpError(
            f"the {self.name} backend does not compile {call.function}, a library call: {why}",
            op=call.function, source_file=md.source_file or None,
            source_line=md.source_line or None,
            hint="Run it with backend='cpu' (or 'interpreter'), or compute it outside the "
                 "function and pass its result in.")

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<backend {self.name}>"
