"""Machine code from a kernel image, loaded and linked with llvmlite alone: no Numba.

A kernel compiled by Numba is object code that calls a few C functions by name: Numba's C
helpers and runtime (`numba._helperlib`, `numba._dynfunc`, `numba.core.runtime._nrt_python`,
C extension modules that need nothing but Python and NumPy), its threading layer's
(`numba.np.ufunc.omppool`), the package's own (the launcher, thread workers, the product's
entry points, stored in the same image) and Python's C API. Starting Numba to load it costs
about 0.25 s (its import and its registries of NumPy's implementations); loading those
extension modules, linking the objects with MCJIT and wrapping each entry point as Numba's
dispatcher would (`_dynfunc.make_function` over its CPython wrapper) costs milliseconds
(docs/performance.md).

The extension modules are loaded under their own names, so that Numba, if it starts later in
the process, finds them loaded and shares them (one allocator, one thread pool).
"""
from __future__ import annotations

import builtins
import ctypes
import importlib.machinery
import importlib.util
import os
import struct
import sys
import threading
from pathlib import Path
from types import ModuleType

from ..errors import XlaExplorerError

__all__ = ["LoadError", "link", "undefined_symbols"]

# The threading layers an image starts itself, by the name `numba.threading_layer()` gives:
# OpenMP's, whose start Numba may repeat if it starts later here (it only sets the count of
# threads; tested). An image that ran on another layer is linked only where Numba runs.
LAYERS = {"omp": "omppool"}
# What a threading layer defines for the code that calls it (Numba's parallel.py names them
# so, and so does codegen/parallel.py).
LAYER_SYMBOLS = {"numba_parallel_for": "parallel_for", "do_scheduling_signed": None,
                 "do_scheduling_unsigned": None, "allocate_sched": None,
                 "deallocate_sched": None, "get_num_threads": None, "set_num_threads": None,
                 "get_thread_id": None, "set_parallel_chunksize": None,
                 "get_parallel_chunksize": None, "get_sched_size": None}


class LoadError(XlaExplorerError):
    """The image cannot be linked here (a symbol nothing defines, another threading layer):
    the program is compiled by Numba instead."""


def undefined_symbols(obj: bytes) -> list[str] | None:
    """The symbols an ELF64 little-endian object file uses and does not define (what MCJIT
    must resolve to link it); None for any other format."""
    if obj[:4] != b"\x7fELF" or obj[4:6] != b"\x02\x01":
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize)
                for k in range(shnum)]
    names = []
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strings = sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is null
            name_at, info, _, shndx = struct.unpack_from("<IBBH", obj, at)
            if shndx == 0 and name_at and info >> 4 in (1, 2):  # undefined, global or weak
                end = obj.index(b"\0", strings + name_at)
                names.append(obj[strings + name_at:end].decode())
    return names


class _Runtime:
    """What every image links against, set up once per process: llvmlite's target, Numba's
    C helpers and runtime, and (at the first image with parallel loops) the threads."""

    def __init__(self):
        import llvmlite.binding as ll

        self.ll = ll
        ll.initialize_native_target()
        ll.initialize_native_asmprinter()
        self.machine = ll.Target.from_default_triple().create_target_machine(
            codemodel="jitdefault", jit=True)
        # Every engine stays alive, as Numba's do. Making one also lets LLVM find symbols in
        # the process itself (Python's C API, the C library), as it links.
        self.engines: list = [ll.create_mcjit_compiler(ll.parse_assembly(""), self.machine)]
        self.layer: str | None = None
        helper = _extension("numba._helperlib")
        self.dynfunc = _extension("numba._dynfunc")
        nrt = _extension("numba.core.runtime._nrt_python")
        nrt.memsys_use_cpython_allocator()  # as Numba does at import: the same allocator
        for table, prefix in ((helper.c_helpers, "numba_"), (self.dynfunc.c_helpers, "numba_")):
            for name, address in table.items():
                ll.add_symbol(prefix + name, address)
        for name, address in nrt.c_helpers.items():
            ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
        ll.add_symbol("_Py_NoneStruct", id(None))
        for value in vars(builtins).values():
            if isinstance(value, type) and issubclass(value, BaseException):
                ll.add_symbol("PyExc_" + value.__name__, id(value))

    def threads(self, layer: str) -> None:
        """Start `layer`'s threads as Numba would, or use Numba's if it started them."""
        if self.layer == layer:
            return
        parallel = sys.modules.get("numba.np.ufunc.parallel")
        if parallel is not None:  # Numba runs here: its own start, once
            parallel._launch_threads()
            started = parallel._threading_layer
        else:
            if self.layer is not None or layer not in LAYERS:
                raise LoadError(f"threading layer {layer!r}")
            from ..codegen import thread_env  # noqa: F401  (before the threads start)

            try:
                lib = _extension(f"numba.np.ufunc.{LAYERS[layer]}")
            except ImportError as e:
                raise LoadError(str(e)) from e
            for symbol, attribute in LAYER_SYMBOLS.items():
                self.ll.add_symbol(symbol, getattr(lib, attribute or symbol))
            count = _thread_count()
            ctypes.CFUNCTYPE(None, ctypes.c_int)(lib.launch_threads)(count)
            ctypes.CFUNCTYPE(None, ctypes.c_int)(lib.set_num_threads)(count)
            started = layer
        if started != layer:
            raise LoadError(f"the threads run on {started}, the image on {layer}")
        self.layer = started

    def load(self, code: bytes, undefined: list[str], defined: set[str]) -> object:
        """An engine holding `code`, linked; LoadError before linking if a symbol it uses is
        neither in `defined` (by an earlier object of the image) nor known to the process
        (MCJIT would abort the process on it)."""
        missing = [s for s in undefined
                   if s not in defined and not self.ll.address_of_symbol(s)]
        if missing:
            raise LoadError(f"nothing here defines {', '.join(sorted(missing)[:3])}")
        engine = self.ll.create_mcjit_compiler(self.ll.parse_assembly(""), self.machine)
        engine.add_object_file(self.ll.ObjectFileRef.from_data(code))
        engine.finalize_object()
        self.engines.append(engine)
        return engine


def _thread_count() -> int:
    """Numba's number of threads: NUMBA_NUM_THREADS, else the CPUs this process may run on."""
    if os.environ.get("NUMBA_NUM_THREADS"):
        return int(os.environ["NUMBA_NUM_THREADS"])
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _numba_dir() -> Path:
    spec = importlib.util.find_spec("numba")
    if spec is None or spec.origin is None:
        raise LoadError("Numba is not installed")
    return Path(spec.origin).parent


def _extension(name: str) -> ModuleType:
    """Numba's C extension module `name`, from sys.modules or loaded from its file alone (its
    package's `__init__`, which starts Numba, is not run)."""
    if name in sys.modules:
        return sys.modules[name]
    parts = name.split(".")
    where = _numba_dir().joinpath(*parts[1:-1])
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    path = next((where / (parts[-1] + s) for s in suffixes
                 if (where / (parts[-1] + s)).exists()), None)
    if path is None:
        raise ImportError(f"no {name} in {where}")
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


_RUNTIME: _Runtime | None = None
_LOCK = threading.Lock()


def link(image: dict) -> dict:
    """The image's functions, by name, as callables that take NumPy arrays and numbers as
    Numba's compiled function did. LoadError where it cannot be linked here."""
    global _RUNTIME
    with _LOCK:
        if _RUNTIME is None:
            _RUNTIME = _Runtime()
        runtime = _RUNTIME
        if image["threads"] is not None:
            runtime.threads(image["threads"])
        engines, defined = [], set()
        for obj in image["objects"]:
            engine = runtime.load(obj["code"], obj["undefined"], defined)
            for public, native in obj["defines"].items():
                runtime.ll.add_symbol(public, _address(engine, native))
                defined.add(public)
            engines.append(engine)
        functions = {}
        for name, f in image["functions"].items():
            engine = engines[f["object"]]
            env = runtime.dynfunc.Environment({"__name__": f["module"]})
            # Numba's wrapper reads its environment from this global (cpu.py's set_env).
            slot = engine.get_global_value_address(f["env"])
            if not slot:
                raise LoadError(f"no {f['env']} in the image")
            ctypes.c_void_p.from_address(slot).value = id(env)
            functions[name] = runtime.dynfunc.make_function(
                ModuleType(f["module"]), name, f"{name}, from a kernel image",
                _address(engine, f["wrapper"]), env, (engine, env))
        return functions


def _address(engine, symbol: str) -> int:
    address = engine.get_function_address(symbol)
    if not address:
        raise LoadError(f"no {symbol} in the image")
    return address
