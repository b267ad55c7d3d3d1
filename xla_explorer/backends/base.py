"""What a backend is: a name, what it can compile, and `compile(module, assignment)`.

The driver (`xla_explorer/compiler.py`) runs the pass pipeline and hands the result to a
backend; the backend returns an `Executable`. Nothing else in the package asks which backend
it is talking to, so a new backend is this interface implemented in one file and one line in
`backends/__init__.py`.
"""
from __future__ import annotations

from ..errors import CompileError, not_compilable
from ..ir.module import Instruction, Module
from ..passes.buffer_assignment import BufferAssignment


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
    # Seconds spent turning generated code into machine code (None until known).
    compile_seconds: float | None = None
    # Bytes the executable allocates once and reuses on every call (its arena).
    arena_bytes: int = 0

    def __call__(self, *args) -> list:
        raise NotImplementedError

    def run_arrays(self, arrays) -> list:
        """The call on NumPy arrays already of the parameters' shapes and dtypes (the cached
        call path checked them): a backend may skip its own argument checks here."""
        return self(*arrays)


class Backend:
    """One target. Subclasses set `name` and implement `compile`; `unsupported` says which
    instructions the target cannot compile (must-compile raises the first one's error)."""

    name: str = ""
    # Whether `compile` needs the buffer assignment of the module it gets (the arena layout).
    needs_assignment: bool = False
    # Whether the backend runs NumPy's eager ops (custom-calls) itself, so that exploring a
    # program that has them needs neither must-compile's error nor auto-clustering.
    runs_eager_ops: bool = False

    def unsupported(self, inst: Instruction) -> CompileError | None:
        """The error must-compile raises for `inst`, or None when the backend compiles it.
        A custom-call is NumPy run eagerly (np.unique: its shape depends on values)."""
        if inst.opcode == "custom-call":
            return not_compilable(inst.attr("custom_call_target"), inst.metadata.source_file,
                                  inst.metadata.source_line)
        return None

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<backend {self.name}>"
