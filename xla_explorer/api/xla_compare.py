"""Real XLA beside ours: `ex.compare_xla()` compiles the same program with XLA:CPU (the one in
jax's jaxlib), reads XLA's optimised HLO with our parser, lists its kernels, matches each to
ours by the instructions it contains, and times both in one process.

The route is our stage-0 HLO, not the user's function run under `jax.numpy`: the text is
handed to XLA's own HLO parser (`xla_client.hlo.hlo_module_from_text`), converted to
StableHLO (`jax.extend.mlir.hlo_to_stablehlo`) and compiled by the CPU client
(`compile_and_load`), exactly what `run_hlo_module` does with a dump. So XLA sees the very
instructions our pipeline started from, with their metadata (op_name and source line, which
XLA keeps through fusion and we match by), and it works for every exploration, one made from
HLO text too, which has no function. jax.numpy would trace a different program (its own
decompositions of mean, var, softmax), and only for functions it has equivalents of.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..errors import (CompileError, HloParseError, UnsupportedOpError, XlaExplorerError,
                      as_python_class)
from ..ir.library import library_call
from ..ir.module import Instruction, Module
from ..runtime.bench import SPREAD_WARNING, Timing, interleaved
from ..runtime.jax_env import INSTALL
from ..viz.format import bytes_text, ratio_text, seconds_text
from .kernels import Kernel

# Entry instructions that launch nothing: XLA:CPU runs every other entry instruction as a
# kernel of its own (a fusion, a library call such as a dot or a custom-call, a copy).
NOT_KERNELS = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast"})
# What a kCustom fusion's backend_config names as the library that runs it.
LIBRARIES = {"__ynn_fusion": "YNNPACK", "__onednn_fusion": "oneDNN", "__xnn_fusion": "XNNPACK"}
# Ops too common to identify a kernel by: matching by op kind ignores them.
UBIQUITOUS = frozenset({"broadcast", "constant", "reshape", "bitcast", "copy", "convert",
                        "parameter", "tuple", "get-tuple-element", "transpose"})
_WORDS = {"exponential": "exponential", "reduce": "reduce", "divide": "division",
          "multiply": "product", "add": "sum", "subtract": "difference", "rsqrt": "rsqrt",
          "dot": "matrix product", "maximum": "maximum", "broadcast": "broadcast"}


def _jax():
    """jax and its xla_client, or an error saying how to install them."""
    try:
        import jax
        import jax.extend  # noqa: F401  (backend and mlir, used below)
        from jax._src.lib import xla_client
    except ImportError as err:
        raise as_python_class(ModuleNotFoundError, XlaExplorerError)(
            f"compare_xla compiles the program with XLA, which comes with jax, and jax cannot "
            f"be imported ({err}). Install it with: {INSTALL}") from None
    return jax, xla_client


@dataclass(frozen=True)
class XlaKernel:
    """One kernel XLA:CPU launches: a fusion, or an op that runs alone (a dot, a custom-call);
    `ours` are our kernels computing the same instructions, found `matched_by` source
    metadata (op_name and line), op kind, or the kernels around it."""

    name: str
    kind: str  # kLoop | kInput | kOutput | kCustom, or the opcode of an op run alone
    library: str  # what runs it where XLA generates no code ("YNNPACK", "dot"); "" otherwise
    instructions: tuple[str, ...]
    opcodes: tuple[str, ...]
    lines: tuple[int, ...]  # source lines of the user's program it computes
    ours: tuple[str, ...] = ()
    matched_by: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "library": self.library,
                "instructions": list(self.instructions), "opcodes": list(self.opcodes),
                "lines": list(self.lines), "ours": list(self.ours),
                "matched_by": self.matched_by}


@dataclass(frozen=True)
class XlaComparison:
    """XLA:CPU's compilation of an exploration's program beside ours (`ex.compare_xla()`)."""

    name: str
    module: Module  # XLA's optimised HLO, read by xe.parse_hlo
    hlo: str  # as XLA prints it
    kernels: tuple[XlaKernel, ...]
    ours: tuple[Kernel, ...]
    ours_matched: dict  # our kernel's name -> the XLA kernels that compute its instructions
    memory: dict  # compiled.memory_analysis()'s fields, in bytes
    ours_temp_bytes: int | None  # our arena (buffer assignment); None without one
    xla_time: Timing
    xla_resident_time: Timing  # the executable alone: its inputs already jax arrays
    ours_time: Timing
    repeat: int
    max_error: float | None  # the largest difference between the two programs' outputs
    sentences: tuple[str, ...]
    jax_version: str
    backend: str  # ours
    # jaxlib's LoadedExecutable: what was timed; its get_compiled_memory_stats() is what
    # jax's Compiled.memory_analysis() returns.
    executable: object = field(default=None, compare=False, repr=False)

    @property
    def temp_bytes(self) -> int:
        """XLA's temporary buffers (memory_analysis().temp_size_in_bytes)."""
        return int(self.memory["temp_size_in_bytes"])

    @property
    def speedup(self) -> float:
        """XLA's median time over ours: above 1, ours is faster."""
        return self.xla_time.median / self.ours_time.median if self.ours_time.median else math.inf

    @property
    def spread_note(self) -> str:
        wide = [label for label, t in (("XLA", self.xla_time), ("ours", self.ours_time))
                if t.median > 0 and t.q3 - t.q1 > SPREAD_WARNING * t.median]
        return "" if not wide else (
            f"the timings spread wide ({' and '.join(wide)}): something else was using the "
            "machine; compare again, with more repeats, before trusting the ratio")

    def table(self) -> str:
        """The kernels matched row by row, then the sentences."""
        rows = [("XLA kernel", "kind", "ops", "here")]
        for k in self.kernels:
            kind = f"{k.kind} ({k.library})" if k.library else k.kind
            rows.append((k.name, kind, ", ".join(dict.fromkeys(k.opcodes)),
                         ", ".join(k.ours) or "-"))
        widths = [max(len(r[c]) for r in rows) for c in range(4)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        return "\n".join(lines + [""] + list(self.sentences))

    def __str__(self) -> str:
        return self.table()

    def to_dict(self) -> dict:
        """The explorer's "xla" comparison (viz/mime.py), plain JSON."""
        from ..viz.graphviz import to_dot

        def timing(t: Timing) -> dict:
            return {"median": t.median, "q1": t.q1, "q3": t.q3}

        return {
            "module": self.name, "jax_version": self.jax_version, "backend": self.backend,
            "hlo": self.hlo, "dot": to_dot(self.module),
            "kernels": [k.to_dict() for k in self.kernels],
            "ours": [{"name": k.name, "kind": "row fusion" if k.row else k.kind,
                      "instructions": list(k.instructions),
                      "xla": list(self.ours_matched.get(k.name, ()))} for k in self.ours],
            "temp_bytes": self.temp_bytes, "ours_temp_bytes": self.ours_temp_bytes,
            "memory": {k: int(v) for k, v in self.memory.items()},
            "times": {"xla": timing(self.xla_time), "ours": timing(self.ours_time),
                      "xla_resident": timing(self.xla_resident_time),
                      "repeat": self.repeat, "spread_note": self.spread_note},
            "max_error": None if self.max_error is None or not math.isfinite(self.max_error)
            else float(self.max_error),
            "sentences": list(self.sentences),
        }


# -- compiling with XLA ------------------------------------------------------------------------


def refuse_eager_ops(module: Module) -> None:
    """XLA cannot compile our eager ops (custom-calls to NumPy functions between clusters),
    nor our library calls, whose targets name NumPy's functions, not its own."""
    for comp in module.all_computations:
        for inst in comp.instructions:
            call = library_call(inst)
            if call is not None:
                raise UnsupportedOpError(
                    f"{module.name}: {inst.name} calls {call.function} as the library call "
                    f"{call.target}, a target XLA does not have: its own are LAPACK's, "
                    "written by jax's lowering (lapack_dgesv_ffi and the like) with HLO "
                    "around them", op=call.function,
                    source_file=inst.metadata.source_file or None,
                    source_line=inst.metadata.source_line or None,
                    hint=f"compare the part before or after it, or time jax.jit of "
                         f"jnp.{call.function.removeprefix('np.')} yourself")
            if inst.opcode == "custom-call":
                target = str(inst.attr("custom_call_target", inst.name))
                raise UnsupportedOpError(
                    f"{module.name}: {inst.name} calls {target}, which runs eagerly in NumPy; "
                    "XLA cannot compile it", op=target,
                    source_file=inst.metadata.source_file or None,
                    source_line=inst.metadata.source_line or None,
                    hint="compare_xla needs a program that compiles whole (no autocluster "
                         "eager ops): compare the part before or after it")


def xla_compile(text: str, name: str):
    """HLO text compiled by XLA:CPU: a jaxlib LoadedExecutable."""
    jax, xc = _jax()
    from jax.extend import backend as jax_backend
    from jax.extend import mlir as jax_mlir

    try:
        hlo_module = xc.hlo.hlo_module_from_text(text)
        stablehlo = jax_mlir.hlo_to_stablehlo(hlo_module.as_serialized_hlo_module_proto())
        client = jax_backend.get_backend("cpu")
        devices = xc.DeviceList(tuple(client.local_devices()[:1]))
        return client.compile_and_load(stablehlo, executable_devices=devices,
                                       compile_options=xc.CompileOptions())
    except Exception as err:  # XLA's errors are jaxlib's runtime errors, with its own text
        raise CompileError(f"XLA (jax {jax.__version__}) could not compile {name}: {err}",
                           op=name, hint="the stage-0 HLO is ex.hlo(0); XLA's message names "
                                         "the instruction it refused") from None


def _xla_call(exe, jax, dtypes: Sequence[np.dtype]):
    """A call of XLA's executable as a user makes ours: NumPy in, NumPy out (the copies to
    and from jax's arrays are part of it, as our outputs' allocation is part of ours)."""
    device = exe.local_devices()[0]

    def call(*args):
        bufs = [jax.device_put(np.asarray(a, dtype=d), device) for a, d in zip(args, dtypes)]
        return [np.asarray(o) for o in exe.execute(bufs)]

    return call


def _xla_resident(exe, jax, dtypes: Sequence[np.dtype], args: Sequence):
    """XLA's executable alone, on inputs placed once: jax's per-call costs (the copies in,
    the arrays out) left out, waited for until its outputs are ready."""
    device = exe.local_devices()[0]
    bufs = [jax.device_put(np.asarray(a, dtype=d), device) for a, d in zip(args, dtypes)]

    def call(*_ignored):
        for out in exe.execute(bufs):
            out.block_until_ready()

    return call


def compare_xla(ex, args: Sequence, repeat: int = 20) -> XlaComparison:
    """`ex.compare_xla()`: see the module's docstring."""
    from ..ir.parser import parse_hlo

    jax, _ = _jax()
    first = ex.stages[0].module
    refuse_eager_ops(first)
    exe = xla_compile(first.to_text(metadata=True), first.name)
    text = exe.hlo_modules()[0].to_string()
    try:
        module = parse_hlo(text)
    except HloParseError as err:  # the parser's error names the line and column
        raise CompileError(
            f"XLA compiled {first.name}, and our parser cannot read XLA's optimised HLO: {err}",
            op=first.name, hint="report it with the text: ex.compare_xla needs xe.parse_hlo "
                                "to read what XLA prints") from None
    params = sorted(first.entry.parameters, key=lambda p: p.parameter_number)
    dtypes = [p.dtype for p in params]
    xla_call = _xla_call(exe, jax, dtypes)
    with jax.enable_x64(True):  # float64 arguments stay float64 (ours does not use jax)
        resident = _xla_resident(exe, jax, dtypes, args)
        xla_time, resident_time, ours_time = interleaved((xla_call, resident, ex.run), args,
                                                         max(1, repeat))
        error = _max_error(xla_call(*args), ex.executable(*[np.asarray(a, dtype=d) for a, d
                                                            in zip(args, dtypes)]))
    stats = exe.get_compiled_memory_stats()
    memory = {f: int(getattr(stats, f)) for f in (
        "temp_size_in_bytes", "argument_size_in_bytes", "output_size_in_bytes",
        "alias_size_in_bytes", "generated_code_size_in_bytes")}
    ours = tuple(ex.fusions)
    kernels = match(kernels_of_xla(module), module, ours, ex.module)
    ours_matched = {k.name: tuple(x.name for x in kernels if k.name in x.ours) for k in ours}
    arena = ex.buffers.peak_bytes if ex.buffers is not None else None
    comparison = XlaComparison(
        first.name, module, text, kernels, ours, ours_matched, memory, arena, xla_time,
        resident_time, ours_time, max(1, repeat), error, (), jax.__version__, ex.backend, exe)
    sentences = differences(comparison, module, ex.decisions) + timing_sentences(comparison)
    return dataclasses.replace(comparison, sentences=tuple(sentences))


def _max_error(xla_out: list, ours_out: list) -> float | None:
    """The largest absolute difference between the outputs (None when they do not line up:
    XLA returns a one-element root tuple as its element)."""
    if len(xla_out) > len(ours_out):
        return None
    worst = 0.0
    for a, b in zip(xla_out, ours_out):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return None
        if a.size:
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            worst = max(worst, float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0)
    return worst


# -- XLA's kernels and ours, matched -----------------------------------------------------------


def kernels_of_xla(module: Module) -> list[XlaKernel]:
    """The kernels of XLA's optimised entry, in its schedule order."""
    out = []
    for inst in module.entry.instructions:
        if inst.opcode in NOT_KERNELS:
            continue
        if inst.opcode == "fusion":
            body = [i for i in module.computation(inst.attr("calls")).instructions
                    if i.opcode not in ("parameter", "tuple")]
            kind = str(inst.attr("kind", "kLoop"))
            library = _library(inst) if kind == "kCustom" else ""
        else:
            body, kind = [inst], inst.opcode
            library = inst.opcode if inst.opcode in ("dot", "convolution") else (
                str(inst.attr("custom_call_target", "")) if inst.opcode == "custom-call" else "")
        out.append(XlaKernel(
            inst.name, kind, library, tuple(i.name for i in body),
            tuple(i.opcode for i in body if i.opcode != "constant"),
            tuple(sorted({i.metadata.source_line for i in body if i.metadata.source_line}))))
    return out


def _library(inst: Instruction) -> str:
    """The library a kCustom fusion's backend_config names (YNNPACK for "__ynn_fusion")."""
    try:
        config = json.loads(str(inst.attr("backend_config", "{}")))
        kind = config.get("fusion_config", {}).get("kind", "")
    except (ValueError, AttributeError):
        kind = ""
    return LIBRARIES.get(kind, kind.strip("_") or "a library")


def _keys(insts: Sequence[Instruction]) -> set:
    """The user's operations a kernel computes: (op_name, line) from the metadata XLA keeps
    (an op_name with a "/", the function's; XLA's own helpers name only themselves)."""
    return {(i.metadata.op_name, i.metadata.source_line) for i in insts
            if "/" in i.metadata.op_name and i.opcode != "parameter"}


def _instructions(module: Module) -> dict[str, Instruction]:
    return {i.name: i for c in module.all_computations for i in c.instructions}


def producers(module: Module, kernels: Sequence[XlaKernel]) -> dict[str, list[str]]:
    """For each XLA kernel, the kernels whose results it reads (through tuples' elements)."""
    names = {k.name for k in kernels}
    out: dict[str, list[str]] = {}
    for k in kernels:
        found: list[str] = []
        todo = list(module.entry.get(k.name).operands)
        while todo:
            op = todo.pop(0)
            if op.opcode in ("get-tuple-element", "bitcast", "tuple"):
                todo.extend(op.operands)  # a while loop's state is a tuple of kernels' results
            elif op.name in names and op.name not in found:
                found.append(op.name)
        out[k.name] = found
    return out


def match(xla: list[XlaKernel], xla_module: Module, ours: Sequence[Kernel],
          our_module: Module) -> tuple[XlaKernel, ...]:
    """Each XLA kernel with the kernels of ours computing the same user operations: by source
    metadata first, then by op kind (XLA dropped the metadata), then by the kernels it reads
    or feeds (an op XLA made up, such as the reduce-window it splits a long reduce with)."""
    theirs = _instructions(xla_module)
    mine = _instructions(our_module)
    our_insts = {k.name: [mine[n] for n in k.instructions if n in mine] for k in ours}
    our_keys = {name: _keys(insts) for name, insts in our_insts.items()}
    our_ops = {name: {i.opcode for i in insts} - UBIQUITOUS for name, insts in our_insts.items()}
    matched: dict[str, XlaKernel] = {}
    for k in xla:
        keys = _keys([theirs[n] for n in k.instructions])
        by_meta = tuple(n for n in our_keys if our_keys[n] & keys)
        by_ops = tuple(n for n in our_ops if our_ops[n] & (set(k.opcodes) - UBIQUITOUS))
        ours_, how = (by_meta, "source metadata") if by_meta else (
            (by_ops, "op kind") if by_ops else ((), ""))
        matched[k.name] = _with(k, ours_, how)
    reads = producers(xla_module, xla)
    feeds: dict[str, list[str]] = {k.name: [] for k in xla}
    for name, ps in reads.items():
        for p in ps:
            feeds[p].append(name)
    for k in xla:
        if not matched[k.name].ours:
            near = [matched[n] for n in reads[k.name] + feeds[k.name] if matched[n].ours]
            if near:
                matched[k.name] = _with(k, near[0].ours, "the kernels around it")
    return tuple(matched[k.name] for k in xla)


def _with(k: XlaKernel, ours: tuple, how: str) -> XlaKernel:
    return XlaKernel(k.name, k.kind, k.library, k.instructions, k.opcodes, k.lines, ours, how)


# -- the differences, in words -----------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _kinds(kinds: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
    return ", ".join(_plural(n, k) for k, n in counts.items())


def _xla_kind(k: XlaKernel) -> str:
    if k.library and k.kind == "kCustom":
        return f"{k.library} library fusion"
    if k.library:
        return f"library {k.library}"
    return {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion"}.get(
        k.kind, f"{k.kind} op")


def _our_kind(k: Kernel) -> str:
    if k.row:
        return "row fusion"
    if len(k.instructions) == 1:
        return "unfused op"
    return {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion"}.get(
        k.kind, k.kind)


def _what(module: Module, k: XlaKernel) -> str:
    """What a kernel writes to memory, as a reader says it: "the exponential (line 12)"."""
    inst = module.entry.get(k.name)
    if inst.opcode == "fusion":
        root = module.computation(inst.attr("calls")).root
        if root.opcode == "tuple" and root.operands:
            root = root.operands[0]
    else:
        root = inst
    line = f" (line {root.metadata.source_line})" if root.metadata.source_line else ""
    return f"the {_WORDS.get(root.opcode, root.opcode)}{line}"


def differences(c: XlaComparison, module: Module, decisions: Sequence) -> list[str]:
    """XLA's kernels against ours in sentences: the counts, what XLA writes to memory between
    two kernels where one of ours computes both, what XLA fuses that we do not, and which
    kernels a library runs."""
    ours = {k.name: k for k in c.ours}
    said = [f"XLA: {_plural(len(c.kernels), 'kernel')} ({_kinds([_xla_kind(k) for k in c.kernels])}); "
            f"here: {_plural(len(c.ours), 'kernel')} "
            f"({_kinds([_our_kind(k) for k in c.ours]) or 'none'})."]
    reads = producers(module, c.kernels)
    by_name = {k.name: k for k in c.kernels}
    readers: dict[str, list[str]] = {}  # producer -> its consumers, where one of ours has both
    for k in c.kernels:
        for p in reads[k.name]:
            if set(by_name[p].ours) & set(k.ours):
                readers.setdefault(p, []).append(k.name)
    for p, consumers in readers.items():
        here = [n for n in by_name[p].ours if any(n in by_name[q].ours for q in consumers)][0]
        what = _what(module, by_name[p])
        said.append(f"{what[0].upper()}{what[1:]} is not fused into "
                    f"{'its consumer' if len(consumers) == 1 else 'its consumers'}: XLA "
                    f"writes it to memory in {p} and reads it back in {', '.join(consumers)}; "
                    f"here {here} computes {'both' if len(consumers) == 1 else 'them all'}.")
    for k in c.kernels:
        if len(k.ours) > 1:
            why = [d.reason for d in decisions if not d.fused and
                   {d.producer, d.consumer} & {i for n in k.ours for i in ours[n].instructions}]
            said.append(f"XLA fuses what {', '.join(k.ours)} compute into one kernel, {k.name}; "
                        f"here they are {len(k.ours)} kernels" + (f" ({why[0]})." if why else "."))
        if k.library:
            said.append(f"{k.name} is not generated code: XLA:CPU hands "
                        f"{', '.join(dict.fromkeys(k.opcodes))} to {k.library}.")
        if not k.ours:
            said.append(f"{k.name} ({', '.join(dict.fromkeys(k.opcodes))}) has no counterpart "
                        "here.")
    for name, theirs in c.ours_matched.items():
        if not theirs:
            said.append(f"{name} has no counterpart among XLA's kernels: XLA simplified its "
                        "instructions away or computes them elsewhere.")
    return said


def timing_sentences(c: XlaComparison) -> list[str]:
    """Temporary memory and time, each side's, in words."""
    arena = "no buffer assignment" if c.ours_temp_bytes is None else (
        f"{bytes_text(c.ours_temp_bytes)} (our arena)")
    faster = "ours is faster" if c.speedup > 1 else "XLA is faster"
    ratio = c.speedup if c.speedup >= 1 else 1 / c.speedup
    out = [f"Temporary memory: XLA {bytes_text(c.temp_bytes)} "
           f"(memory_analysis().temp_size_in_bytes); here {arena}.",
           f"Time per call, NumPy in and out, median of {c.repeat} interleaved rounds: XLA "
           f"{seconds_text(c.xla_time.median)}, here ({c.backend} backend) "
           f"{seconds_text(c.ours_time.median)}: {faster}, by {ratio_text(ratio)}. XLA's "
           f"executable alone, its inputs already jax arrays: "
           f"{seconds_text(c.xla_resident_time.median)}."]
    if c.spread_note:
        out.append(f"Warning: {c.spread_note}.")
    return out
