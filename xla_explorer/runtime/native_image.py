"""A compiled CPU program's kernel image: its machine code, made into data a later process
links without Numba (runtime/native.py, runtime/native_load.py).

After a program's first call its kernels are compiled (or loaded from Numba's cache); after
its second, its compiled driver `run` too. The image holds the object code of what the call
runs (the compiled driver, which has every kernel linked into it, or else each kernel and the
Python driver that calls them), then that of every C function of the package their code calls
by name (codegen/objects.py: thread workers, the launcher, the block scheduler, the product's
entry points), each before the code that calls it, and the threading layer its parallel loops
ran on.
"""
from __future__ import annotations

import sys

from ..codegen import objects
from ..errors import XlaExplorerError
from .native_load import LAYER_SYMBOLS, undefined_symbols

__all__ = ["program_image"]


class _Refused(XlaExplorerError):
    """Something the image cannot carry: the program stays with Numba's cache alone."""


def program_image(executable, compiled_driver: bool) -> dict | None:
    """The image of `executable` (a CpuExecutable that has run), with its compiled driver
    (`compiled_driver`) or with its Python driver and kernels; None where it cannot be made
    (a function with more than one signature, object code Numba did not hand over)."""
    program = executable.program
    try:
        image = _Image()
        if compiled_driver:
            image.function("run", executable.entry)
        else:
            home = (sys.modules[f"xla_explorer_kernels.{executable.first_path.stem}"]
                    if executable.first_path is not None else executable._py)
            for launch in program.plan.launches:
                image.function(launch.kernel, getattr(home, launch.kernel))
        if program.line_outputs:
            image.function("to_line", executable._to_line)
        layer = image.threads()
    except _Refused:
        return None
    return {"objects": image.objects, "functions": image.functions, "threads": layer,
            "driver": "compiled" if compiled_driver else "python",
            "python_driver": "" if compiled_driver else program.python_driver,
            "arena_bytes": program.arena_bytes, "outputs": list(program.outputs),
            "line_outputs": sorted(program.line_outputs),
            "layout": program.layout if compiled_driver else None,
            "numbers": program.numbers if compiled_driver else None,
            "constants": [c.name for c in program.constants],
            # What the explorer shows of the generated code (runtime/base.Executable).
            "kernels": executable.kernels, "kernel_of": executable.kernel_of,
            "sources": executable.sources, "driver_source": executable.driver}


class _Image:
    def __init__(self):
        self.objects: list[dict] = []
        self.functions: dict[str, dict] = {}
        self._placed: dict[int, int] = {}  # id(library) -> its object's index
        self._symbols: dict[str, int] = {}  # a package symbol -> the object defining it

    def function(self, name: str, dispatcher) -> None:
        overloads = list(getattr(dispatcher, "overloads", {}).values())
        if len(overloads) != 1:
            raise _Refused(name)
        compiled = overloads[0]
        fndesc = compiled.fndesc
        self.functions[name] = {"object": self._place(compiled.library),
                                "wrapper": fndesc.llvm_cpython_wrapper_name,
                                "env": fndesc.env_name, "module": fndesc.modname}

    def _place(self, library, defines: dict | None = None) -> int:
        if id(library) in self._placed:
            return self._placed[id(library)]
        code = objects.object_code(library)
        undefined = undefined_symbols(code) if code is not None else None
        if undefined is None:
            raise _Refused(str(library))
        for symbol in undefined:  # what it calls of the package's, placed before it
            if symbol in objects.SYMBOLS and symbol not in self._symbols:
                cfunc = objects.SYMBOLS[symbol]
                self._symbols[symbol] = self._place(cfunc._library,
                                                    {symbol: cfunc.native_name})
        self.objects.append({"code": code, "undefined": undefined, "defines": defines or {}})
        self._placed[id(library)] = len(self.objects) - 1
        return len(self.objects) - 1

    def threads(self) -> str | None:
        """The threading layer the image's parallel loops ran on; None if it has none."""
        if not any(s in LAYER_SYMBOLS for o in self.objects for s in o["undefined"]):
            return None
        parallel = sys.modules.get("numba.np.ufunc.parallel")
        layer = getattr(parallel, "_threading_layer", None)
        if not isinstance(layer, str) or not layer:
            raise _Refused("threads")
        return layer
