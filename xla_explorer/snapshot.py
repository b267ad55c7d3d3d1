"""Snapshots: dumps a fresh process can replay, as XLA's `--xla_dump_hlo_snapshots` makes them.

`ex.dump(DIR, snapshots=True)` (and `%%xla --dump DIR --dump-snapshots`) writes, beside the
files `dump.py` lists for module_NNNN.<name>:

    module_NNNN.<name>.manifest.json     what was run, and how (below)
    module_NNNN.<name>.arguments.npz     the run's arguments, arg0, arg1, ... (under a size cap)
    module_NNNN.<name>.results.npz       the results they gave, result0, result1, ...

The manifest is JSON: `format` and `format_version`; `module` (its name) and `module_file`
(the dump's `before_optimizations.txt`, the unoptimised module: replay compiles it again);
`backend`, `passes` (the pipeline's pass names, in order) and `options` (`autocluster`);
`arguments`, the signature (each parameter's `name`, `shape`, `dtype`, and `python` for a
Python number) and `arguments_file`; `results` (each output's shape and dtype) and
`results_file`, what the unoptimised module computed from them on the reference interpreter
when dumped; `snapshot_bytes`, `max_snapshot_bytes` and `note` (why the arrays were not
saved: both files are then null); `xla_explorer_version` and `numpy_version`.

Reading a snapshot runs nothing from it, so a stranger's dump is safe to open: the manifest is
JSON, the arrays are loaded with `allow_pickle=False` and must match the signature, the files
it names must be plain names in its own directory, and an eager op in the module text runs only
a function `trace.numpy.eager_calls` registers. Whatever is wrong with a dump is a `DumpError`
naming the file.
"""
from __future__ import annotations

import json
import re
import sys
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import DumpError, HloParseError, XlaExplorerError
from .ir.module import Instruction, Module

FORMAT = "xla-explorer-snapshot"
FORMAT_VERSION = 1
MANIFEST = ".manifest.json"
ARGUMENTS = ".arguments.npz"
RESULTS = ".results.npz"
BEFORE = ".before_optimizations.txt"
# Large enough for any notebook's arrays, small enough that a dump attached to a bug report
# stays a reasonable download.
DEFAULT_MAX_BYTES = 64 << 20
# The element types an argument may have: what the explorer computes with (never object
# arrays, which only pickle can hold).
ARRAY_KINDS = "biuf"


class SnapshotTooLarge(XlaExplorerError, UserWarning):
    """A warning: a snapshot's arguments were over the size cap and were not saved. Of the
    package's base class too, as everything the package raises or warns with is."""


def _results(module: Module, arrays: list) -> list[np.ndarray] | None:
    """What the unoptimised module computes from `arrays` on the reference interpreter: the
    results a replay is held to, so that a module edited after the dump is caught. None
    where it cannot run here (an eager op kept only in the tracing process)."""
    from .runtime.reference import run_module

    try:
        return [np.asarray(r) for r in run_module(module, [a.copy() for a in arrays])]
    except XlaExplorerError:
        return None


def parameters(module: Module) -> list[Instruction]:
    """The entry computation's parameters, by number."""
    return sorted(module.entry.parameters, key=lambda p: p.parameter_number)


# -- writing ------------------------------------------------------------------------------------


def write_snapshot(ex, directory: Path, prefix: str, module_file: str, args: Sequence | None,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> list[Path]:
    """The manifest and the arguments of `ex`'s run on `args` (default: its own); returns the
    paths written. Arguments over `max_bytes` are left out, with a note in the manifest and a
    SnapshotTooLarge warning: replay then generates inputs from the signature."""
    # The package is imported (its Exploration called here); importing it from this module
    # would be an import cycle.
    version = getattr(sys.modules.get("xla_explorer"), "__version__", "unknown")
    params = parameters(ex.stages[0].module)
    args = list(ex.args if args is None else args)
    names = list(ex.traced.arg_names) if ex.traced is not None else [p.name for p in params]
    signature = []
    for n, p in enumerate(params):
        entry = {"name": names[n] if n < len(names) else p.name, "shape": list(p.dims),
                 "dtype": np.dtype(p.dtype).name}
        if n < len(args) and isinstance(args[n], (bool, int, float)) \
                and not isinstance(args[n], np.generic):
            entry["python"] = type(args[n]).__name__  # a Python number, passed as a 0-d array
        signature.append(entry)
    written: list[Path] = []
    arrays = results = None
    if len(args) == len(params):
        arrays = [np.asarray(a, dtype=p.dtype) for a, p in zip(args, params)]
        results = _results(ex.stages[0].module, arrays)
    size = sum(a.nbytes for a in (arrays or []) + (results or []))
    note = ""
    if arrays is None:
        note = (f"the run's {len(args)} arguments are not the module's {len(params)} "
                "parameters: not saved; replay generates inputs from the signature")
    elif size > max_bytes:
        note = (f"the arguments and results take {size} bytes, over the cap of {max_bytes} "
                "(max_snapshot_bytes): not saved; replay generates inputs from the signature")
        warnings.warn(f"{prefix}: {note}. Pass a larger max_snapshot_bytes to save them.",
                      SnapshotTooLarge, stacklevel=4)
    files = {"arguments_file": None, "results_file": None}
    if arrays is not None and not note:
        for key, suffix, stem, values in (("arguments_file", ARGUMENTS, "arg", arrays),
                                          ("results_file", RESULTS, "result", results)):
            if values is None:
                continue
            files[key] = prefix + suffix
            with open(directory / files[key], "wb") as f:  # np.savez would add ".npz"
                np.savez(f, **{f"{stem}{i}": v for i, v in enumerate(values)})
            written.append(directory / files[key])
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "module": ex.stages[0].module.name, "module_file": module_file,
        "backend": ex.backend, "passes": [s.name for s in ex.stages[1:]],
        "options": {"autocluster": bool(ex.autocluster)},
        "arguments": signature, "arguments_file": files["arguments_file"],
        "results": [{"shape": list(r.shape), "dtype": r.dtype.name} for r in results or []],
        "results_file": files["results_file"], "snapshot_bytes": size,
        "max_snapshot_bytes": max_bytes, "note": note,
        "xla_explorer_version": version, "numpy_version": np.__version__,
    }
    path = directory / (prefix + MANIFEST)
    path.write_text(_layout(manifest), encoding="utf-8")
    written.append(path)
    return written


def _layout(manifest: dict) -> str:
    """The manifest as JSON a person reads: a field a line, an argument a line."""
    def value(key, v) -> str:
        if key == "arguments" and v:
            return "[\n  " + ",\n  ".join(json.dumps(a) for a in v) + "\n ]"
        return json.dumps(v)

    fields = [f" {json.dumps(k)}: {value(k, v)}" for k, v in manifest.items()]
    return "{\n" + ",\n".join(fields) + "\n}\n"


# -- reading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """A module to replay, and what its dump says about it. From a single HLO text file only
    the module is known: `compiled_for` (the manifest's `backend`) is None and `arguments`
    None (generated from the parameters)."""

    source: Path  # the manifest, or the HLO text file
    module_file: Path
    module: Module
    compiled_for: str | None = None  # the backend the dump's program was compiled for
    passes: tuple[str, ...] = ()
    autocluster: bool | None = None
    arguments: tuple[np.ndarray, ...] | None = None
    arguments_file: Path | None = None
    results: tuple[np.ndarray, ...] | None = None  # the unoptimised module's, at dump time
    note: str = ""


_NUMBERED = re.compile(r"module_(\d+)\.")


def _order(path: Path) -> tuple:
    """Dump files in the order they were written: by module number, which may pass 9999."""
    m = _NUMBERED.match(path.name)
    return (int(m.group(1)) if m else -1, path.name)


def find(path, module: str | None = None) -> Path:
    """The file to replay at `path`: the file itself, or in a dump directory the manifest of
    the last module (or of `module`, a module's name or its `module_NNNN` prefix); in a dump
    without manifests, its last before_optimizations.txt."""
    path = Path(path)
    if not path.exists():
        raise DumpError(path, "no such file or directory")
    if not path.is_dir():
        return path
    for suffix in (MANIFEST, BEFORE):
        found = sorted(path.glob("*" + suffix), key=_order)
        if module is not None:
            found = [f for f in found if module in (f.name.split(".")[0], _module_name(f, suffix))]
        if found:
            return found[-1]
    if module is not None:
        raise DumpError(path, f"holds no module {module!r}",
                        "Name a module by its name or its module_NNNN prefix, or leave "
                        "--module out to replay the last one.")
    raise DumpError(path, f"holds no dump: no *{MANIFEST} and no *{BEFORE}",
                    "Write one with ex.dump(DIR, snapshots=True) or %%xla --dump DIR "
                    "--dump-snapshots.")


def _module_name(path: Path, suffix: str) -> str:
    """<name> of module_NNNN.<name><suffix>."""
    return path.name[: -len(suffix)].partition(".")[2]


def load(path, module: str | None = None) -> Snapshot:
    """The snapshot at `path` (a dump directory, a manifest, or an HLO text file), checked:
    a DumpError names the file that is wrong."""
    source = find(path, module)
    if not source.name.endswith(MANIFEST):
        return Snapshot(source, source, _parse(source, _read(source, None)))
    data = _manifest(source)
    module_file = _own_file(source, data, "module_file")
    parsed = _parse(module_file, _read(module_file, source))
    signature = _signature(source, data)
    _check_parameters(module_file, parsed, signature)
    arguments_file = results = None
    arguments = None
    if data.get("arguments_file") is not None:
        arguments_file = _own_file(source, data, "arguments_file")
        arguments = _arrays(arguments_file, source, "arg", signature)
    if data.get("results_file") is not None and arguments is not None:
        results_signature = _signature(source, data, "results")
        results = _arrays(_own_file(source, data, "results_file"), source, "result",
                          results_signature)
    options = data.get("options", {})
    if not isinstance(options, dict) or not isinstance(options.get("autocluster", False), bool):
        raise DumpError(source, "\"options\" must be an object whose autocluster is true or false")
    return Snapshot(source, module_file, parsed, _text_field(source, data, "backend"),
                    tuple(_string_list(source, data, "passes")),
                    options.get("autocluster", False), arguments, arguments_file, results,
                    str(data.get("note") or ""))


def _read(path: Path, named_by: Path | None) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        by = f" (named by {named_by.name})" if named_by is not None else ""
        raise DumpError(path, f"missing{by}",
                        "Copy the whole dump directory; every file the manifest names is "
                        "needed.") from None
    except (UnicodeDecodeError, OSError) as err:
        raise DumpError(path, f"cannot be read as text: {err}") from None


def _parse(path: Path, text: str) -> Module:
    from .ir.parser import parse_hlo

    try:
        return parse_hlo(text)
    except HloParseError as err:
        raise DumpError(path, f"is not HLO text the parser reads: {err}",
                        "A truncated file ends mid-computation: dump it again.") from None


def _manifest(path: Path) -> dict:
    try:
        data = json.loads(_read(path, None))
    except json.JSONDecodeError as err:
        raise DumpError(path, f"is not valid JSON (line {err.lineno}, column {err.colno}: "
                              f"{err.msg})", "A truncated manifest: dump again.") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DumpError(path, f"is not an xla-explorer snapshot manifest (\"format\" is not "
                              f"\"{FORMAT}\")")
    version = data.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise DumpError(path, f"has format_version {version!r}; this xla-explorer reads "
                              f"{FORMAT_VERSION} and older", "Update xla-explorer.")
    return data


def _text_field(path: Path, data: dict, key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise DumpError(path, f"\"{key}\" must be a non-empty string, not {value!r}")
    return value


def _string_list(path: Path, data: dict, key: str) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DumpError(path, f"\"{key}\" must be a list of strings")
    return value


def _own_file(manifest: Path, data: dict, key: str) -> Path:
    """The file `key` names, which must be a plain name in the manifest's own directory: a
    manifest from elsewhere must not make replay read /etc/passwd or ../secrets."""
    name = _text_field(manifest, data, key)
    if Path(name).name != name or name in (".", "..") or "\\" in name:
        raise DumpError(manifest, f"\"{key}\" is {name!r}, which is not a file name in the "
                                  "dump's own directory", "A manifest names only the files "
                                  "beside it.")
    return manifest.parent / name


def _signature(path: Path, data: dict, key: str = "arguments") -> list[tuple[str, tuple,
                                                                          np.dtype]]:
    entries = data.get(key)
    if not isinstance(entries, list):
        raise DumpError(path, f"\"{key}\" must be a list (each value's shape and dtype)")
    signature = []
    for n, e in enumerate(entries):
        e = e if isinstance(e, dict) else {}
        shape = e.get("shape")
        try:
            dtype = np.dtype(e["dtype"]) if isinstance(e.get("dtype"), str) else None
        except TypeError:
            dtype = None
        if (not isinstance(shape, list) or dtype is None or dtype.kind not in ARRAY_KINDS
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                           for d in shape)):
            raise DumpError(path, f"entry {n} of \"{key}\" is {e!r}: each must be an "
                                  "object with a shape (a list of sizes) and a dtype "
                                  "(bool, int, uint or float)")
        signature.append((str(e.get("name", f"{key[:-1]} {n}")), tuple(shape), dtype))
    return signature


def _check_parameters(path: Path, module: Module, signature) -> None:
    params = parameters(module)
    if len(params) != len(signature):
        raise DumpError(path, f"has {len(params)} parameters; the manifest's signature has "
                              f"{len(signature)} arguments")
    for p, (name, shape, dtype) in zip(params, signature):
        if p.dims != shape or np.dtype(p.dtype) != dtype:
            raise DumpError(path, f"parameter {p.parameter_number} ({p.name}) is {p.shape}; "
                                  f"the manifest's signature says {name} is "
                                  f"{dtype.name}{list(shape)}")


def _arrays(path: Path, manifest: Path, stem: str, signature) -> tuple[np.ndarray, ...]:
    """The saved arrays `stem`0, `stem`1, ..., each checked against the signature."""
    keys = [f"{stem}{i}" for i in range(len(signature))]
    try:
        with np.load(path, allow_pickle=False) as z:
            if sorted(z.files) != sorted(keys):
                raise DumpError(path, f"holds {sorted(z.files)}; the manifest's signature "
                                      f"has {len(keys)} ({', '.join(keys)})")
            arrays = tuple(z[k] for k in keys)
    except FileNotFoundError:
        raise DumpError(path, f"missing (named by {manifest.name})",
                        "Copy the whole dump directory.") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as err:
        raise DumpError(path, f"cannot be read as .npz arrays (truncated, or not written by "
                              f"np.savez): {err}") from None
    for key, a, (name, shape, dtype) in zip(keys, arrays, signature):
        if a.shape != shape or a.dtype != dtype:
            raise DumpError(path, f"{key} ({name}) is {a.dtype.name}{list(a.shape)}; the "
                                  f"manifest's signature says {dtype.name}{list(shape)}")
    return arrays
