"""Compilations dumped to a directory, as XLA's `--xla_dump_to` dumps them.

`XLA_EXPLORER_FLAGS="--dump_to=DIR [--dump_pass_re=REGEX] [--dump_snapshots]"` dumps every
compilation, as `XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_pass_re=REGEX
--xla_dump_hlo_snapshots"` does; `Exploration.dump(DIR)` dumps one. For a module named <name>, compilation number NNNN (a process-wide counter from
0000) writes:

    module_NNNN.<name>.before_optimizations.txt             the traced HLO (stage 0)
    module_NNNN.<name>.before_optimizations.dot             its graph
    module_NNNN.<name>.cpu_after_optimizations.txt          the final HLO
    module_NNNN.<name>.cpu_after_optimizations.dot          its graph
    module_NNNN.<name>.cpu_after_optimizations-buffer-assignment.txt    ex.buffers.report()
    module_NNNN.<name>.cpu_after_optimizations-memory-usage-report.txt  memory_usage_report()
    module_NNNN.<name>.kernels.py                           the generated Numba program
    module_NNNN.<name>.cluster_N.kernels.py                 (auto-clustered: one per cluster)
    module_NNNN.<name>.SSSS.cpu-pipeline.after_<pass>.txt   with pass_re: each matching stage
    module_NNNN.<name>.SSSS.cpu-pipeline.after_<pass>.dot
    module_NNNN.<name>.manifest.json                        with snapshots: see snapshot.py
    module_NNNN.<name>.arguments.npz
    module_NNNN.<name>.results.npz

The `cpu` is the backend's `dump_name`. For a backend without one (the interpreter, cuda) the
after-optimization files drop the prefix (`after_optimizations.txt`, as XLA names them for a
backend without one) and the pipeline is `pipeline`; a backend that generates no code (the
interpreter) writes no kernels file.

Which names are XLA's (xla/service/dump.cc, cpu_compiler.cc) and which are ours:

- exactly XLA's: `module_%04d.<name>.` + `before_optimizations.txt`, `cpu_after_optimizations.txt`,
  `after_optimizations.txt`, `-buffer-assignment.txt`, `-memory-usage-report.txt`, and `.dot`
  for `--xla_dump_hlo_as_dot`.
- close to XLA's: the per-pass files. XLA writes `module_NNNN.<name>.SSSS.<pipeline>.after_<pass>
  .before_<next pass>.txt`, SSSS counting the dumps of that module; ours drop `.before_<next>`
  and SSSS is the stage's index in `ex.stages` (0 is the trace), so a file name finds its
  stage. XLA's CPU pipelines have several names; ours is one, `cpu-pipeline`.
- ours: `kernels.py` (XLA's CPU backend dumps LLVM IR and object code, `ir-no-opt.ll`,
  `ir-with-opt.ll`, `.o`; our code generator's output is Python). NNNN counts compilations in
  this process rather than being the module's unique id, which the explorer does not keep.
- contents: the buffer-assignment file holds `BufferAssignment.report()` (itself modelled on
  XLA's MemoryUsageReport); the memory-usage-report adds XLA's "BufferAssignment stats" and
  the bytes live at each step of the schedule before that report.
"""
from __future__ import annotations

import itertools
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "XLA_EXPLORER_FLAGS"
KNOWN_FLAGS = ("--dump_to", "--dump_pass_re", "--dump_snapshots")
# Flags that are true or false: given bare they are true, as XLA's booleans are.
BOOLEAN_FLAGS = frozenset({"--dump_snapshots"})
# Flags are separated by white space; a "quoted part" may hold spaces. Not shlex: it would eat
# the backslashes of a regular expression (`fusion\.\d`).
_TOKEN = re.compile(r'(?:"[^"]*"|[^\s"])+')
_QUOTED = re.compile(r'"([^"]*)"')


@dataclass(frozen=True)
class DumpOptions:
    directory: Path
    pass_re: str | None = None
    snapshots: bool = False  # the manifest and the arguments too (snapshot.py)


def options_from_flags(text: str) -> DumpOptions | None:
    """DumpOptions from XLA_EXPLORER_FLAGS text (`--dump_to=DIR --dump_pass_re=REGEX
    --dump_snapshots`);
    None when nothing asks for a dump. Unknown flags are a ValueError, as XLA rejects them."""
    values: dict[str, str] = {}
    for token in _TOKEN.findall(text or ""):
        flag, eq, value = token.partition("=")
        value = _QUOTED.sub(r"\1", value)
        if flag not in KNOWN_FLAGS:
            raise ValueError(f"unknown flag {flag!r} in {ENV_VAR}; known flags: "
                             f"{', '.join(f + '=...' for f in KNOWN_FLAGS)}")
        if flag in BOOLEAN_FLAGS:
            if value.lower() not in ("", "true", "false", "1", "0"):
                raise ValueError(f"{flag} in {ENV_VAR} is true or false, not {value!r}")
            values[flag] = "" if value.lower() in ("false", "0") else "true"
            continue
        if not eq or not value:
            raise ValueError(f"{flag} in {ENV_VAR} needs a value: {flag}=...")
        values[flag] = value
    pass_re = values.get("--dump_pass_re")
    if pass_re is not None:
        try:
            re.compile(pass_re)
        except re.error as err:
            raise ValueError(f"--dump_pass_re={pass_re!r} is not a regular expression: "
                             f"{err}") from None
    snapshots = bool(values.get("--dump_snapshots"))
    if "--dump_to" not in values:
        for flag in ("--dump_pass_re", "--dump_snapshots"):
            if values.get(flag):  # XLA too dumps nothing without a directory
                raise ValueError(f"{flag} in {ENV_VAR} needs --dump_to=DIR as well")
        return None
    return DumpOptions(Path(values["--dump_to"]).expanduser(), pass_re, snapshots)


def options_from_env() -> DumpOptions | None:
    """The dump asked for by $XLA_EXPLORER_FLAGS, read afresh at every compilation."""
    return options_from_flags(os.environ.get(ENV_VAR, ""))


# One number per compilation, shared by every thread, as XLA numbers modules.
_counter = itertools.count()
_counter_lock = threading.Lock()


def next_module_number() -> int:
    with _counter_lock:
        return next(_counter)


def _safe_name(name: str) -> str:
    """A module name fit for a file name (XLA's SanitizeFileName: `/` and `\\` and other
    characters a file system dislikes become `_`)."""
    return re.sub(r"[^\w.\-]", "_", name)


def _write(path: Path, text: str, written: list[Path]) -> None:
    path.write_text(text)
    written.append(path)


def dump_exploration(ex, directory, pass_re: str | None = None, snapshots: bool = False,
                     args=None, max_snapshot_bytes: int | None = None) -> list[Path]:
    """Write one compilation's files (see the module docstring) into `directory`, creating
    it; return the paths written, in the order written. With `snapshots`, also the manifest
    and the arguments (`args`, default the exploration's own) that make the dump replayable
    (`snapshot.py`), the arguments only up to `max_snapshot_bytes`."""
    from .viz.graphviz import to_dot

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    prefix = f"module_{next_module_number():04d}.{_safe_name(ex.module.name)}"
    target = ex.compiled.backend.dump_name  # XLA's files name the CPU compiler: cpu_...
    after = f"{target}_after_optimizations" if target else "after_optimizations"
    written: list[Path] = []

    def stage_files(stem: str, stage) -> None:
        _write(directory / f"{prefix}.{stem}.txt", stage.module.to_text(), written)
        _write(directory / f"{prefix}.{stem}.dot", to_dot(stage.module), written)

    stage_files("before_optimizations", ex.stages[0])
    stage_files(after, ex.stages[-1])
    buffers = ex.buffers
    if buffers is not None:
        _write(directory / f"{prefix}.{after}-buffer-assignment.txt", buffers.report(), written)
        _write(directory / f"{prefix}.{after}-memory-usage-report.txt",
               buffers.memory_usage_report(), written)
    # Every compiling backend's generated source (the interpreter generates none).
    for part, source in ex.executable.sources.items():
        _write(directory / f"{prefix}.{part + '.' if part else ''}kernels.py", source, written)
    if snapshots:
        from .snapshot import DEFAULT_MAX_BYTES, write_snapshot

        cap = DEFAULT_MAX_BYTES if max_snapshot_bytes is None else max_snapshot_bytes
        written += write_snapshot(ex, directory, prefix, written[0].name, args, cap)
    if pass_re is not None:
        pipeline = f"{target}-pipeline" if target else "pipeline"
        pattern = re.compile(pass_re)
        for index, stage in enumerate(ex.stages):
            if pattern.search(stage.name):
                stage_files(f"{index:04d}.{pipeline}.after_{_safe_name(stage.name)}", stage)
    return written
