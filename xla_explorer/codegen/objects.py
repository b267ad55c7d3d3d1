"""The machine code behind each compiled function, kept for a kernel image (runtime/native.py).

Numba compiles a `cache=True` function's LLVM module to object code through MCJIT, which hands
the object to two hooks of Numba's code library (`_object_compiled_hook` when it compiled it,
`_object_getbuffer_hook` when Numba gives it back from its disk cache); Numba keeps it only
until it has written its cache. The hooks are wrapped here, before Numba's code generator is
made, so that every such library keeps its object (`object_code`), which an image of a
program stores: a later process then loads the kernels with llvmlite alone, without starting
Numba (docs/performance.md).

Kernels call the package's own C functions by name (the parallel launcher, the block
scheduler, the product's entry points, thread workers): `define` names one, as
`llvm.add_symbol` does, and remembers which compiled function defines it, so that an image
carries the functions its kernels call.
"""
from __future__ import annotations

import llvmlite.binding as llvm
from numba.core import codegen

__all__ = ["SYMBOLS", "define", "install", "object_code"]

# symbol -> the Numba CFunc defining it (`define`).
SYMBOLS: dict[str, object] = {}


def define(name: str, cfunc) -> None:
    """Let code linked from now on call `cfunc` (a compiled Numba CFunc) by `name`."""
    llvm.add_symbol(name, cfunc.address)
    SYMBOLS[name] = cfunc


def object_code(library) -> bytes | None:
    """The object code MCJIT loaded for `library` (a Numba code library), or None: not a
    cached function's, or compiled before `install`."""
    return getattr(library, "_xla_explorer_object", None)


def _keep(ll_module, buf) -> None:
    library = getattr(ll_module, "_CPUCodeLibrary__library", None)  # Numba's weak proxy
    if library is not None and buf is not None and library._object_caching_enabled:
        library._xla_explorer_object = bytes(buf)


def install() -> None:
    """Wrap the two hooks (once). Numba reads them when it makes its code generator, at its
    first compile or cache load: installed later, objects made before are not kept."""
    library = codegen.CPUCodeLibrary
    if getattr(library, "_xla_explorer_keeps_objects", False):
        return
    compiled = library._object_compiled_hook.__func__
    getbuffer = library._object_getbuffer_hook.__func__

    def compiled_hook(cls, ll_module, buf):
        compiled(cls, ll_module, buf)
        _keep(ll_module, buf)

    def getbuffer_hook(cls, ll_module):
        buf = getbuffer(cls, ll_module)
        _keep(ll_module, buf)
        return buf

    library._object_compiled_hook = classmethod(compiled_hook)
    library._object_getbuffer_hook = classmethod(getbuffer_hook)
    library._xla_explorer_keeps_objects = True
