"""Ahead-of-time export: a compiled program as a native extension module that needs only
NumPy, as XLA's tfcompile makes a library of a graph that leaves the framework behind.

`export(f, *example_args, name=..., directory=...)` (api/jit.py, beside `explore`) traces and
compiles `f` for the CPU (must-compile: an eager op such as np.unique is a CompileError), and
`export_exploration` here renders the program serial
(codegen/export/source.py), has Numba's ahead-of-time compiler build `NAME.cpython-*.so`
(codegen/export/pycc.py, the one module that knows it), and writes `NAME.pyi` beside it: the
signature, shapes and dtypes, and the HLO the module came from. `Exploration.export` and
`%%xla --export NAME` do the same for what they compiled.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import CompileError, not_compilable
from ..ir.library import library_call, runs_eagerly
from ..passes.buffer_assignment import OUTPUT
from ..trace.tracer import argument_names

# Kept small and plain: what the stub and the docs describe of an exported module.
STUB = '''"""{name}: {what}, compiled ahead of time by xla-explorer from HLO module {module}.

Needs only NumPy. `run` takes C-contiguous arrays of exactly these shapes and dtypes (others
raise ValueError naming the argument) and returns new arrays. Its loops run on one thread.
Built for {target} with Numba {numba}'s ahead-of-time compiler.

The HLO it runs, after xla-explorer's passes:

{hlo}
"""
import numpy as np
import numpy.typing as npt


def run({parameters}) -> {returns}:
    """{doc}"""
'''


@dataclass(frozen=True)
class ExportedModule:
    """What `export` wrote: the module (`path`, `nbytes` on disk), its stub, how long the
    build took, and the signature of its `run`."""

    name: str
    path: Path
    stub: Path
    nbytes: int
    seconds: float
    parameters: tuple  # codegen.export.source.Parameter, in order
    results: tuple  # (dims, dtype) of each array `run` returns

    def load(self):
        """The module imported from `path` (in this process: a test, a notebook)."""
        spec = importlib.util.spec_from_file_location(self.name, self.path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def __repr__(self) -> str:
        args = ", ".join(f"{p.name}: {_type_text(p.shape, p.dtype)}" for p in self.parameters)
        return (f"<exported {self.name}.run({args}): {self.path.name}, "
                f"{self.nbytes / 1024:.0f} KiB, built in {self.seconds:.1f} s>")


def export_exploration(ex, name: str, directory=".", names: list[str] | None = None,
                       target_cpu: str = "host") -> ExportedModule:
    """`ex` (an Exploration) exported as `export` does; `names` are run's parameters' names
    (default: the function's, else the HLO parameters')."""
    from ..codegen.cpu.driver import generate_program
    from ..codegen.export.pycc import build
    from ..codegen.export.source import render

    _refuse(ex, name)
    module, assignment = ex.module, ex.buffers
    options = dataclasses.replace(ex.compiled.backend.options, serial_only=True)
    program = generate_program(module, assignment, options)
    outputs = [b.shape for b in assignment.buffers if b.category == OUTPUT]
    params = sorted(module.entry.parameters, key=lambda p: p.parameter_number)
    source = render(program, outputs, _unique(names or _names(ex, params)))
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    path = build(source, name, directory, target_cpu)
    seconds = time.perf_counter() - start
    stub = directory / f"{name}.pyi"
    what = (f"`{ex.function.__name__}`" if ex.function is not None
            and getattr(ex.function, "__name__", "<lambda>") != "<lambda>" else "a program")
    stub.write_text(_stub(name, what, module, source, target_cpu))
    return ExportedModule(name, path, stub, path.stat().st_size, seconds, source.parameters,
                          source.results)


def _refuse(ex, name: str) -> None:
    """What export cannot make, refused by name before anything is built."""
    if not name.isidentifier():
        raise CompileError(f"cannot export as {name!r}: a module's name is a Python "
                           "identifier", op="export", hint="name=... with letters, digits "
                           "and underscores, not starting with a digit")
    if not ex.compiled.backend.exports:
        raise CompileError(
            f"cannot export a program compiled for the {ex.backend} backend: an exported "
            "module is the cpu backend's kernels, built by Numba's ahead-of-time compiler, "
            "which compiles for the CPU alone", op="export",
            hint="explore (or %%xla) it with backend='cpu', then export")
    for inst in ex.module.entry.instructions:
        call = library_call(inst)
        if call is not None:
            # Built, it imports; run, it needs SciPy (a fatal error without it: Numba's
            # bindings find LAPACK's routines in scipy.linalg.cython_lapack when first called).
            raise CompileError(
                f"cannot export {call.function} ({inst.name}): its compiled call reaches "
                "LAPACK through Numba's bindings, which load SciPy's LAPACK when the module "
                "runs, and an exported module needs only NumPy", op=call.function,
                source_file=inst.metadata.source_file or None,
                source_line=inst.metadata.source_line or None,
                hint="export the part before or after it, or call xe.jit (which runs it) "
                     "where SciPy is installed")
        if runs_eagerly(inst):  # auto-clustered: NumPy runs it, between clusters
            error = not_compilable(inst.attr("custom_call_target"), inst.metadata.source_file,
                                   inst.metadata.source_line, inst.metadata.op_name)
            raise CompileError(f"cannot export: {error}", op="export",
                               hint="an exported module runs compiled code only, without "
                                    "NumPy's eager ops; take the op out of the function")


def _names(ex, params) -> list[str]:
    """run's parameters' names: the function's own where it has them, else the HLO's
    (`x.1` -> `x`)."""
    if ex.function is not None:
        return argument_names(ex.function, len(params))
    return [re.sub(r"\.\d+$", "", p.name) for p in params]


def _unique(names: list[str]) -> list[str]:
    """Identifiers, each once: `params['w']` -> `params_w`, a second `x` -> `x_1`."""
    out: list[str] = []
    for n in names:
        base = re.sub(r"\W+", "_", n).strip("_") or "arg"
        base = base if base[0].isalpha() or base[0] == "_" else f"arg_{base}"
        candidate, k = base, 1
        while candidate in out:
            candidate, k = f"{base}_{k}", k + 1
        out.append(candidate)
    return out


def _type_text(shape, dtype) -> str:
    return f"{np.dtype(dtype).name}[{', '.join(map(str, shape))}]"


def _annotation(dtype) -> str:
    return f"npt.NDArray[np.{np.dtype(dtype).name}]"


def _stub(name: str, what: str, module, source, target_cpu: str) -> str:
    import numba

    from ..ir.printer import print_module

    # Large constants (a model's weights, compiled into the module) as `{...}`.
    text = print_module(module, metadata=False, large_constants=False)
    hlo = "\n".join("    " + line for line in text.splitlines())
    parameters = ", ".join(f"{p.name}: {_annotation(p.dtype)}" for p in source.parameters)
    results = [_annotation(dtype) for _, dtype in source.results]
    returns = results[0] if len(results) == 1 else f"tuple[{', '.join(results)}]"
    lines = [f"{p.name}: {_type_text(p.shape, p.dtype)}" for p in source.parameters]
    shown = [_type_text(dims, dtype) + (" (a 0-d array)" if not dims else "")
             for dims, dtype in source.results]
    doc = ("Arguments, C-contiguous: " + (", ".join(lines) or "none") + ".\n    Returns "
           + ", ".join(shown) + ".")
    target = "this machine's CPU" if target_cpu == "host" else (target_cpu or "a generic CPU")
    return STUB.format(name=name, what=what, module=module.name, target=target,
                       numba=numba.__version__, hlo=hlo.replace('"""', "'''"),
                       parameters=parameters, returns=returns, doc=doc)


def numpy_only_python(directory) -> Path:
    """A Python that imports NumPy and nothing else this one has installed: a virtual
    environment made in `directory` without pip (nothing is downloaded), with this NumPy
    linked into its site-packages. What an exported module is checked in; run it with `-I`
    so that PYTHONPATH and the user's site-packages stay out too."""
    import subprocess
    import sys

    directory = Path(directory)
    python = directory / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)],
                       check=True, capture_output=True)
        site = next((directory / "lib").glob("python*/site-packages"))
        installed = Path(np.__file__).resolve().parent.parent
        for entry in installed.iterdir():
            if entry.name == "numpy" or entry.name.startswith("numpy.libs") or (
                    entry.name.startswith("numpy-") and entry.name.endswith(".dist-info")):
                (site / entry.name).symlink_to(entry)
    return python
