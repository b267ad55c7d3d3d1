"""The one place an exported program meets Numba's ahead-of-time compiler, `numba.pycc.CC`.

Numba marks pycc "pending deprecation" and it compiles no parallel loop (numba#3336): it is
kept behind `build` so another route (a successor in Numba, or LLVM's object code linked by
hand) can replace it without touching what is exported. What is relied on, and pinned in
tests/codegen/test_export.py: `CC(name, source_module=...)`, `output_dir`, `target_cpu`
("host": the CPU this process runs on, with the features LLVM gives that model), `export(name,
signature)` with a typed signature, `compile()`, and an output that imports with nothing but
NumPy (its runtime, NRT and the helper library, linked into it).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import warnings
from pathlib import Path

from numba import from_dtype, types

from .checked import CheckedArray
from .source import ExportSource

EXPORTED_NAME = "run"


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
    with warnings.catch_warnings():  # pending deprecation: said in docs/export.md
        warnings.simplefilter("ignore")
        from numba.pycc import CC

    with tempfile.TemporaryDirectory(prefix=f"xla-export-{name}-") as build_dir:
        module = _load(source, name, Path(build_dir))
        cc = CC(name, source_module=module)
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
