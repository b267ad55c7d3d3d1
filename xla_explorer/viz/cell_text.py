"""The text `%%xla` prints: a cell's summary (inputs, outputs, the check, kernels, buffers,
clusters, the bench), `%xla_cache`'s report, and a short error that quotes the cell's line.

The explorer widget shows the same facts graphically; this is the text-only view, for the
magic and for front ends that want text.
"""
from __future__ import annotations

import linecache
import traceback

import numpy as np

from ..cell.outputs import link_text
from ..cell.values import is_chunked
from ..errors import CompileError
from ..ir.ops import OPS, Group
from ..ir.shape import hlo_type_name
from .format import bytes_text


def cache_report(cache) -> str:
    """What `%xla_cache` prints: what is compiled, per cell of a CellCache, and the hit and
    miss counts."""
    if not cache.cells:
        return "%xla_cache: nothing compiled yet"
    infos = [(c, c.jit.cache_info(), c.jit.waiting()) for c in cache.cells.values()]
    hits, misses = sum(i.hits for _, i, _ in infos), sum(i.misses for _, i, _ in infos)
    waiting = sum(len(w) for _, _, w in infos)
    lines = [f"%xla_cache: {_count(len(infos), 'cell')}, "
             f"{_count(sum(len(i.signatures) for _, i, _ in infos), 'executable')}"
             + (f" and {waiting} waiting to compile" if waiting else "")
             + f"; {_counts(hits, misses)}"]
    for c, info, pending in infos:
        mode = " --autocluster" if c.autocluster else ""
        lines.append(f"{c.plan.name}  --backend {c.backend}{mode}  "
                     f"({_counts(info.hits, info.misses)})  {c.first_line}")
        for sig, static in zip(info.signatures, info.static):
            lines.append(f"    ({_signature_text(c.plan.inputs, sig, static)})")
        for sig, static in pending:
            lines.append(f"    ({_signature_text(c.plan.inputs, sig, static)})  waiting to "
                         "compile: the interpreter answers until the notebook is idle")
    return "\n".join(lines)


_PLURALS = {"miss": "misses", "temporary": "temporaries"}


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {_PLURALS.get(what, what + 's')}"


def _counts(hits: int, misses: int) -> str:
    return f"{_count(hits, 'hit')}, {_count(misses, 'miss')}"


def _type_text(shape, dtype) -> str:
    if dtype in ("bool", "int", "float", "complex"):
        return dtype  # a Python number: compiled for its type, whatever its value
    if dtype.startswith("np."):
        return dtype  # a NumPy scalar (np.float64), compiled apart from a 0-d array
    return f"{hlo_type_name(np.dtype(dtype))}[{','.join(map(str, shape))}]"


def _signature_text(names, signature, static=None) -> str:
    """A JitFunction signature, ((shape, dtype), ...), with the cell's input names, and the
    values of those that decided the program (`n: int = 4`)."""
    static = static or {}
    return ", ".join(f"{n}: {_type_text(shape, dtype)}"
                     + (f" = {static[i]!r}" if i in static else "")
                     for i, (n, (shape, dtype)) in enumerate(zip(names, signature)))


def _value_text(value) -> str:
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return type(value).__name__
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inside = ", ".join(map(_value_text, value))
        return f"[{inside}]" if isinstance(value, list) else \
            f"({inside}{',' if len(value) == 1 else ''})"
    if value is None:
        return "None"
    if is_chunked(value):  # its shape and chunks, never its values: they would be computed
        n = int(np.prod([len(c) for c in value.chunks]))
        return (f"{_type_text(tuple(value.shape), np.dtype(value.dtype).str)} "
                f"(dask, {n} chunk{'s' * (n != 1)})")
    return _type_text(np.shape(value), np.asarray(value).dtype.str)


def summary(run, cache_info, hlo: bool = True) -> str:
    """A compact text summary of a CellRun; with `hlo`, the optimised HLO after it (the
    explorer widget shows the HLO of every stage, so the display leaves it out)."""
    ex, plan = run.exploration, run.plan
    state = "hit" if run.hit else "miss"
    lines = [f"%%xla {plan.name}: backend {run.entry.backend}, compile cache: {state} "
             f"({_counts(cache_info.hits, cache_info.misses)})"]
    if run.tier is not None:
        lines.append(f"this run: the interpreter answered (the program after the passes, op "
                     f"by op in NumPy); the {run.entry.backend} kernels compile in the "
                     f"background (in a notebook, once it is idle), and the next run takes "
                     f"them (--wait: wait for them)")
    args = ", ".join(f"{n} {_value_text(v)}" for n, v in zip(plan.inputs, ex.args))
    lines.append(f"inputs:   {args or '(none)'}")
    outs = []
    for name, value in run.bindings.items():
        same = link_text(run.links[name]) if name in run.links else None
        outs.append(f"{name} = {same}" if same and name != same else
                    f"{name} {_value_text(value)}")
    lines.append(f"outputs:  {', '.join(outs) or '(none)'}")
    if run.updated:
        lines.append(f"in place: {', '.join(run.updated)}")
    if run.check is not None:
        lines.append(f"check against eager NumPy: {'ok' if run.check.ok else 'MISMATCH'}")
        lines += ["  " + str(c) for c in run.check.outputs]
    elif run.lazy:
        lines.append("check against eager NumPy: not run, the outputs are lazy (dask arrays, "
                     "computed when you call .compute()); _xla.check() computes both and "
                     "compares them")
    fusions = ex.fusions
    lines.append(f"fusions: {_count(len(fusions), 'kernel')}")
    lines += [f"  {line}" for line in _kernel_lines(ex.module, fusions)]
    if any(len(f.instructions) > LIST_UP_TO for f in fusions):
        lines.append("  (each kernel's instructions by name: _xla.fusions, or the explorer's "
                     "Kernels tab)")
    buffers = ex.buffers
    if buffers is not None:
        lines.append(f"buffers: arena {bytes_text(buffers.peak_bytes)} (lower bound "
                     f"{bytes_text(buffers.lower_bound_bytes)}), "
                     f"{_count(len(buffers.temporaries), 'temporary')} in "
                     f"{_count(len(buffers.allocations), 'allocation')}, "
                     f"{_count(len(buffers.buffers), 'buffer')} in all")
    if run.entry.autocluster:
        clusters = ex.clusters
        compiled, eager = list(clusters.compiled), list(clusters.eager)
        lines.append(f"clusters: {len(compiled)} compiled, {len(eager)} run eagerly")
        lines += [f"  compiled: {c}" for c in compiled]
        lines += [f"  eager: {e}" for e in eager]
    if run.bench is not None:
        lines += ["bench (copies of the inputs):", run.bench.table()]
    if run.dumped:
        lines.append(f"dumped {_count(len(run.dumped), 'file')}:")
        lines += [f"  {p}" for p in run.dumped]
    if run.exported is not None:
        e = run.exported
        lines.append(f"exported {e.path} ({e.nbytes / 1024:.0f} KiB; needs only NumPy: "
                     f"import {e.name}; {e.name}.run(...)), stub {e.stub.name}")
    if hlo:
        # Without metadata: the source lines are in ex.hlo() and the explorer; here they would
        # double every line's length.
        lines += ["optimised HLO (with source lines: _xla.hlo()):",
                  ex.module.to_text(metadata=False).rstrip()]
    return "\n".join(lines)


# A kernel of up to this many instructions is listed by name; a bigger one by opcode counts.
LIST_UP_TO = 4


def _kernel_lines(module, fusions) -> list[str]:
    """A line per kernel; a run of kernels alike but for their names (an unrolled loop's
    steps) as its first, then how many more."""
    lines: list[str] = []
    run: list[str] = []  # the names of the kernels like the last line's

    def close():
        if len(run) > 1:
            lines.append(f"... and {len(run) - 1} more like it, through {run[-1]}")

    for f in fusions:
        line = kernel_line(module, f)
        if lines and run and line[len(f.name):] == lines[-1][len(run[0]):]:
            run.append(f.name)
            continue
        close()
        lines.append(line)
        run = [f.name]
    close()
    return lines


def kernel_line(module, kernel) -> str:
    """`add_fusion.3 (kLoop): tanh.2, multiply.5, add.8`; a big kernel by what it computes,
    counted by opcode, then how much of it moves data or holds constants:
    `row_fusion.9 (row fusion): 50 ops: 6 multiply, 4 add, ..., tanh; 17 data movement, 9
    constant`."""
    what = "row fusion" if kernel.row else kernel.kind
    names = kernel.instructions
    if len(names) <= LIST_UP_TO:
        return f"{kernel.name} ({what}): {', '.join(names)}"
    opcodes = {i.name: i.opcode for c in module.all_computations for i in c.instructions}
    computed: dict[str, int] = {}
    plumbing = {"data movement": 0, "constant": 0}
    for n in names:
        op = opcodes.get(n, "?")
        group = OPS[op].group if op in OPS else None
        if group is Group.DATA_MOVEMENT:
            plumbing["data movement"] += 1
        elif group is Group.LEAF:
            plumbing["constant"] += 1
        else:
            computed[op] = computed.get(op, 0) + 1
    ranked = sorted(computed.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = ", ".join(op if n == 1 else f"{n} {op}" for op, n in ranked)
    rest = ", ".join(f"{n} {kind}" for kind, n in plumbing.items() if n)
    return f"{kernel.name} ({what}): {len(names)} ops: {parts}" + (f"; {rest}" if rest else "")


def short_error(e: BaseException, filename: str) -> list[str]:
    """The class, the message, the cell's line quoted, the hint: no traceback through the
    package. `filename` is the cell's (see `cell_names`)."""
    message = getattr(e, "message", None) or str(e)
    lines = [f"{type(e).__name__}: {message}"]
    source_file, source_line = getattr(e, "source_file", None), getattr(e, "source_line", None)
    if source_file == filename:
        cell_line = source_line
    else:  # where the cell was when it failed (a NameError, a helper function's error)
        cell_line = next((f.lineno for f in reversed(traceback.extract_tb(e.__traceback__))
                          if f.filename == filename), None)
    if cell_line:
        lines += [f"line {cell_line} of the cell:",
                  f"    {linecache.getline(filename, cell_line).strip()}"]
    if source_file and source_line and source_file != filename:
        code = linecache.getline(source_file, source_line).strip()
        lines.append(f"  at {source_file}:{source_line}" + (f": {code}" if code else ""))
    hint = getattr(e, "hint", None)
    if hint:
        lines.append(hint)
    elif isinstance(e, CompileError):
        lines.append("Parts that cannot be compiled can run eagerly between compiled clusters: "
                     "%%xla --autocluster.")
    return lines


