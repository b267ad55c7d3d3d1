"""The one place an exported program meets Numba's ahead-of-time compiler, `numba.pycc.CC`.

Numba marks pycc "pending deprecation" and it compiles no parallel loop (numba#3336): it is
kept behind `build` so another route (a successor in Numba, or LLVM's object code linked by
hand) can replace it without touching what is exported. What is relied on, and pinned in
tests/codegen/test_export.py: `CC(name, source_module=...)`, `output_dir`, `target_cpu`
("host": the CPU this process runs on, with the features LLVM gives that model), `export(name,
signature)` with a typed signature, `compile()`, and an output that imports with nothing but
NumPy (its runtime, NRT and the helper library, linked into it).

Two private parts are used too, for speed: every module links the same C "mixins" (Numba's
helper library, its runtime, the module's init code), which pycc compiles afresh for each:
2.4 s of a 3.3 s export here. They are compiled once, under one fixed module name, and kept
in the kernel cache (`_CachedMixins`: `CC._compile_mixins`, `CC._get_mixin_defines`,
`CC._init_function`, also pinned in the test).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path

import numba
from numba import from_dtype, types

from ..cache import cache_dir
from .checked import CheckedArray
from .source import ExportSource

EXPORTED_NAME = "run"
# The name the cached mixins are compiled under: their init function is
# `pycc_init_<MIXIN_NAME>` in every module (each .so keeps its own copy; Python loads
# extensions with RTLD_LOCAL, so the copies never meet).
MIXIN_NAME = "xla_explorer_export"


def signature(source: ExportSource):
    """`run`'s Numba signature: checked arrays in, C arrays (or a tuple of them) out."""
    args = [CheckedArray(from_dtype(p.dtype), p.shape, p.name) for p in source.parameters]
    results = [types.Array(from_dtype(dtype), len(dims), "C") for dims, dtype in source.results]
    returned = results[0] if len(results) == 1 and not source.returns_tuple else \
        types.Tuple(results)
    return returned(*args)


def build(source: ExportSource, name: str, directory: Path, target_cpu: str = "host") -> Path:
    """Compiles `source`'s entry into the extension module `name` in `directory` and returns
    its path (`NAME.cpython-*.so` on Linux)."""
    with tempfile.TemporaryDirectory(prefix=f"xla-export-{name}-") as build_dir:
        module = _load(source, name, Path(build_dir))
        cc = _compiler_class()(name, source_module=module)
        cc._init_function = f"pycc_init_{MIXIN_NAME}"
        cc.output_dir = str(directory)
        cc.target_cpu = target_cpu
        cc.export(EXPORTED_NAME, signature(source))(getattr(module, source.entry))
        cc.compile()
        sys.modules.pop(module.__name__, None)
    return directory / cc.output_file


def _load(source: ExportSource, name: str, where: Path):
    """The source as a module (the kernels' globals are its namespace), its constants bound
    before it runs; Numba compiles them into the extension as read-only data."""
    module_name = f"_xla_export_{name}_{os.getpid()}"
    path = where / f"{module_name}.py"
    path.write_text(source.source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(source.constants)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _compiler_class():
    with warnings.catch_warnings():  # pending deprecation: said in docs/export.md
        warnings.simplefilter("ignore")
        from numba.pycc import CC

    class _CachedMixins(CC):
        """pycc's compiler with its C mixins compiled once, under MIXIN_NAME."""

        def _get_mixin_defines(self):
            return [(k, MIXIN_NAME if k == "PYCC_MODULE_NAME" else v)
                    for k, v in super()._get_mixin_defines()]

        def _compile_mixins(self, build_dir):
            key = repr((numba.__version__, sys.version, sysconfig.get_config_var("CC"),
                        self._get_mixin_sources(), self._get_mixin_defines(),
                        self._get_extra_cflags(), self._toolchain.get_python_include_dirs()))
            where = cache_dir() / "export-mixins" / hashlib.sha256(key.encode()).hexdigest()[:16]
            if not where.is_dir():
                _keep(super()._compile_mixins(build_dir), where)
            return [str(p) for p in sorted(where.glob("*.o"))]

    return _CachedMixins


def _keep(objects: list[str], where: Path) -> None:
    """The object files, in their order, moved into `where` whole or not at all (another
    process may be making the same directory: the first to finish keeps its own)."""
    where.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=where.parent, prefix=".partial-"))
    for k, obj in enumerate(objects):
        shutil.copy(obj, partial / f"{k:02d}_{Path(obj).name}")
    try:
        partial.rename(where)
    except OSError:  # made meanwhile by another process
        shutil.rmtree(partial, ignore_errors=True)
