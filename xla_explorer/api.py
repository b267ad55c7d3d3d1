"""The public entry points: explore() and the Exploration it returns."""
from __future__ import annotations

import copy
import inspect
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from . import compiler
from .backends import BACKENDS, get_backend
from .errors import CompileError, TraceError, as_python_class
from .ir.module import Module
from .passes.base import Stage
from .passes.buffer_assignment import BufferAssignment
from .passes.dataflow import is_kernel
from .passes.kinds import Decision, is_row_fusion, kernel_kind
from .passes.names import traced_name
from .runtime.base import Executable
from .runtime.reference import ShapeChanged, declared_shape
from .trace.captured import free_values
from .trace.scalars import GuardFailed, guard_error
from .trace.tracer import (Traced, argument_names, active_builder, check_plain_array,
                           located, trace, unflatten)

__all__ = ["BACKENDS", "CacheInfo", "CheckResult", "Exploration", "JitFunction", "Kernel",
           "explore", "jit"]


def tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing against NumPy: a few ulps' worth of each float type."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return 2e-5, 1e-6
    if dtype == np.float64:
        return 1e-9, 1e-12
    if dtype == np.float16:  # two float16 ulps: rounded once from float32, as NumPy does
        return 2e-3, 1e-5
    return 0.0, 0.0


@dataclass(frozen=True)
class OutputCheck:
    name: str
    dtype: np.dtype
    shape: tuple
    max_abs_error: float
    max_rel_error: float
    ok: bool
    note: str = ""  # why an output outside the tolerance still counts as right

    def __str__(self) -> str:
        mark = "ok" if self.ok else "MISMATCH"
        note = f" ({self.note})" if self.note else ""
        return (f"{self.name:<12} {str(self.dtype):<8} {str(list(self.shape)):<14} "
                f"max abs {self.max_abs_error:.3g}  max rel {self.max_rel_error:.3g}  {mark}{note}")


@dataclass(frozen=True)
class CheckResult:
    outputs: tuple[OutputCheck, ...]
    note: str = ""  # a likely cause of a mismatch (a global that changed since tracing)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return "\n".join([str(o) for o in self.outputs] + ([self.note] if self.note else []))


def compare(name: str, got, want, precision=None) -> OutputCheck:
    """got against want, within the tolerance of `precision`: the least precise float type
    the value was computed through (default: want's own; a float64 result of float32 math
    carries float32 rounding)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return OutputCheck(name, want.dtype, want.shape, np.inf, np.inf, False)
    loosest = want.dtype
    if precision is not None and want.dtype.kind == "f":
        loosest = max(want.dtype, np.dtype(precision), key=lambda d: tolerance(d)[0])
    rtol, atol = tolerance(loosest)
    if want.size == 0:
        return OutputCheck(name, want.dtype, want.shape, 0.0, 0.0, True)
    if want.dtype.kind == "f":
        both_nan = np.isnan(got) & np.isnan(want)
        same_inf = np.isinf(want) & (got == want)
        exact = both_nan | same_inf
        with np.errstate(all="ignore"):
            diff = np.where(exact, 0.0, np.abs(got.astype(np.float64) - want.astype(np.float64)))
            diff = np.where(np.isnan(diff), np.inf, diff)
            rel = diff / np.maximum(np.abs(want.astype(np.float64)), np.finfo(want.dtype).tiny)
            rel = np.where(exact, 0.0, np.where(np.isnan(rel), np.inf, rel))
        # The relative part scales with finite values only: an infinite `want` met by
        # anything but the same infinity is a mismatch (inf <= rtol * inf would pass it).
        scale = np.where(np.isfinite(want), np.abs(want.astype(np.float64)), 0.0)
        ok = bool(np.all(diff <= atol + rtol * scale))
        return OutputCheck(name, want.dtype, want.shape, float(diff.max()), float(rel.max()), ok)
    equal = got == want
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    return OutputCheck(name, want.dtype, want.shape, err, 0.0 if equal.all() else np.inf,
                       bool(equal.all()))


def computed_precision(module: Module):
    """The least precise float type a module computes through (None if no float): a float64
    result computed from float32 values carries float32 rounding."""
    floats = [np.dtype(i.dtype) for c in module.all_computations
              for i in c.instructions if not i.shape.is_tuple and i.dtype.kind == "f"]
    return min(floats, key=lambda d: d.itemsize, default=None)


def _restore(value: np.ndarray, like):
    """Give an output NumPy's own form: a NumPy scalar where NumPy returned one."""
    if isinstance(like, (bool, int, float)) and not isinstance(like, np.generic):
        return type(like)(np.asarray(value)[()])  # a Python number, as Python computes it
    if isinstance(like, np.generic):
        return np.asarray(value)[()]
    return value


@dataclass(frozen=True)
class Kernel:
    """One kernel the backend launches: a fusion, or an op that fused with nothing (a fusion
    of one). `instructions` are the HLO instructions it computes (as traced, so a cheap
    producer copied into several kernels appears in each); `reasons` every fusion decision
    about them, taken or refused."""

    name: str
    kind: str  # kLoop | kInput | kOutput
    instructions: tuple[str, ...]
    reasons: tuple[str, ...]
    outputs: tuple[str, ...] = ()
    row: bool = False  # a row fusion: runs row by row (kInput, backend_config schedule row)

    def __str__(self) -> str:
        what = "row fusion" if self.row else self.kind
        return f"{self.name} ({what}): {', '.join(self.instructions)}"


def kernels_of(module: Module, decisions: Sequence[Decision] = ()) -> list[Kernel]:
    """The kernels of a module's entry, in schedule order, with the decisions about each."""
    out = []
    for inst in module.entry.instructions:
        if not is_kernel(inst) or inst.opcode == "custom-call":
            continue  # custom-calls run eagerly, between kernels
        if inst.opcode == "fusion":
            comp = module.computation(inst.attr("calls"))
            body = [i for i in comp.instructions if i.opcode not in ("parameter", "tuple")]
            root = comp.root
            outs = root.operands if root.opcode == "tuple" else (root,)
            names = tuple(i.name for i in body)
            kernel = Kernel(inst.name, kernel_kind(inst), names, (),
                            tuple(o.name for o in outs), is_row_fusion(inst))
        else:
            kernel = Kernel(inst.name, kernel_kind(inst), (inst.name,), (), (inst.name,))
        traced = {traced_name(n) for n in kernel.instructions}
        reasons = tuple(d.reason for d in decisions if _about(d, traced))
        out.append(Kernel(kernel.name, kernel.kind, kernel.instructions, reasons,
                          kernel.outputs, kernel.row))
    return out


def _about(d: Decision, names: set[str]) -> bool:
    """A decision taken is about the kernel it fused into; one refused, about both sides."""
    if d.fused:
        return (d.consumer or d.producer) in names
    return d.producer in names or d.consumer in names


class Exploration:
    """One function traced, run through the pipeline, and ready to run and compare."""

    def __init__(self, f: Callable, args: Sequence, traced: Traced,
                 compiled: compiler.Compilation):
        self.function = f
        self.args = [copy.deepcopy(a) for a in args]
        self.signature = signature(args)
        self._captured = _captured_values(f)  # to explain a check that fails because of them
        self.traced = traced
        self.compiled = compiled
        self.stages = list(compiled.stages)
        self.backend = compiled.backend.name
        self.autocluster = compiled.autocluster
        self.last_bench = None  # what `bench` measured last: the viewers show it
        # Auto-clustered programs traced again for other value-dependent shapes (np.unique's
        # length): each compiles the clusters that shape changes, as XLA compiles per shape.
        self.variants: list[Exploration] = []

    @property
    def module(self) -> Module:
        return self.stages[-1].module

    def stage(self, stage: int | str = -1) -> Stage:
        if isinstance(stage, str):
            for s in self.stages:
                if s.name == stage:
                    return s
            raise KeyError(f"no stage named {stage!r}; stages: {[s.name for s in self.stages]}")
        return self.stages[stage]

    def hlo(self, stage: int | str = -1, metadata: bool = False) -> str:
        """HLO text of one stage (name or index). Without `metadata=True` the
        `metadata={op_name=... source_file=... source_line=N}` of each instruction is left
        out: it doubles a line's length, and the explorer shows the source line beside it."""
        return self.stage(stage).module.to_text(metadata=metadata)

    def graph(self, stage: int | str = -1, **options):
        """One stage as a `graphviz.Digraph`, drawn as XLA's graph dumper draws HLO."""
        from .viz.graphviz import graph

        return graph(self.stage(stage).module, **options)

    def show(self):
        """The step-through explorer (an ipywidgets widget): stages, decisions, buffers,
        kernels and performance. Displayed, it is one output that also carries the JSON the
        JupyterLab extension renders without a kernel and a static HTML view
        (docs/explorer.md)."""
        from .viz.widgets import explorer

        return explorer(self)

    def save_html(self, path) -> None:
        """One self-contained HTML file of everything `show` shows (the last `bench` too): no
        kernel, no network."""
        from .viz.html import save_html

        save_html(self, path, self.last_bench)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The JupyterLab extension's JSON (application/vnd.xla-explorer.v1+json) and an HTML
        fallback for every other front end."""
        from .viz.display import bundle

        return bundle(self, self.last_bench)

    def dump(self, directory, pass_re: str | None = None) -> list:
        """Write this compilation's files as XLA's --xla_dump_to does; returns their paths."""
        from .dump import dump_exploration

        return dump_exploration(self, directory, pass_re)

    @property
    def decisions(self) -> list[Decision]:
        """Every fusion decision, taken or refused, each with its `.reason`, in pass order."""
        return [n for s in self.stages for n in s.notes if isinstance(n, Decision)]

    @property
    def fusions(self) -> list[Kernel]:
        """One per kernel the backend launches, in schedule order."""
        return kernels_of(self.module, self.decisions)

    @property
    def executable(self) -> Executable:
        """The backend's compiled program (`runtime.base.Executable`): for the cpu backend
        the generated Numba program over its arena; under auto-clustering a
        `ClusteredProgram` of compiled clusters and eager ops."""
        return self.compiled.executable

    @property
    def clusters(self):
        """What runs compiled and what eagerly (`.compiled`, `.eager` with reasons). Without
        auto-clustering (must-compile) the whole function is one cluster."""
        from .passes.autocluster import Cluster, Clustering

        for s in self.stages:
            if isinstance(s.artifact, Clustering):
                return s.artifact
        names = tuple(i.name for i in self.stages[0].module.entry.instructions
                      if is_kernel(i))
        return Clustering((Cluster("cluster_0", names),), ())

    @property
    def kernels(self) -> dict[str, str]:
        """{kernel name: generated source}; empty for a backend that generates no code."""
        return self.executable.kernels

    def kernel_of(self, instruction: str) -> str | None:
        """The `kernels` key of the kernel that computes an entry instruction (a fusion, or an
        op that fused with nothing), or None (the interpreter, or not a kernel)."""
        return self.executable.kernel_of.get(instruction)

    @property
    def traffic(self):
        """Bytes moved to and from memory, COMPUTED from the program (never measured): each
        op of the program before fusion run eagerly, against each kernel of the compiled
        one (`runtime.traffic.Traffic`; `.to_dict()` is the viewers' "traffic" payload).
        The same on every machine and backend."""
        from .runtime.traffic import traffic

        names = [s.name for s in self.stages]
        before = names.index("fusion") - 1 if "fusion" in names else len(names) - 1
        return traffic(self.stages[max(before, 0)].module, self.module)

    @property
    def buffers(self) -> BufferAssignment | None:
        """The buffer assignment (None if the pipeline had no buffer-assignment pass)."""
        return compiler.assignment_of(self.stages)

    def run(self, *args):
        """Run the compiled program: NumPy in, NumPy out; in-place updates reach the inputs.

        Every temporary lives in one arena laid out by the buffer assignment, so a wrong
        assignment gives a wrong answer."""
        args = args or [copy.deepcopy(a) for a in self.args]
        self._check_signature(args)
        try:
            self.traced.scalars.replay(args)
        except GuardFailed as failed:
            raise guard_error(failed, self.module.name) from None
        return self._run(args)

    def _check_signature(self, args) -> None:
        """A TypeError naming the argument whose shape or type differs from the trace's."""
        names = self.traced.arg_names
        if len(args) != len(names):
            raise TypeError(f"{self.module.name}() takes {len(names)} arguments "
                            f"({', '.join(names)}), got {len(args)}")
        for name, a in zip(names, args):
            check_plain_array(a, name)  # np.matrix, a masked array: refused, not run as arrays
        for name, given, want in zip(names, signature(args), self.signature):
            if given != want:
                raise TypeError(f"argument {name!r} is {_describe(given)}; this exploration "
                                f"was traced for {_describe(want)}. Explore again for the "
                                "new shape or type, or use xe.jit, which compiles one "
                                "program per signature")

    def _check_writes(self, args) -> None:
        """NumPy writes an in-place update into the caller's array, through every view of it;
        the compiled program takes each argument as a separate input, so an update to one
        argument that another shares memory with is refused rather than lost."""
        for out, p in self.traced.aliases:
            conflict = update_conflict(args, p)
            if conflict is None:
                continue
            name = self.traced.arg_names[p]
            site = self.traced.module.entry.root.operands[out].metadata  # the last write
            where = dict(op=f"{name} (in place)", source_file=site.source_file or None,
                         source_line=site.source_line or None)
            if conflict == READ_ONLY:
                raise as_python_class(ValueError)(
                    f"argument {name!r} is updated in place but is read-only (assignment "
                    "destination is read-only: NumPy refuses this too)",
                    hint=f"Pass a copy: {name}.copy().", **where)
            other_name = self.traced.arg_names[conflict]
            raise as_python_class(ValueError)(
                f"argument {name!r} is updated in place and shares memory with argument "
                f"{other_name!r} (one is a view of the other, or they are the same array); "
                "the compiled program takes them as separate inputs, so the update would "
                f"not show through {other_name!r} as it does in NumPy",
                hint=f"Pass a copy: {other_name}.copy().", **where)

    def _run(self, args):
        """Run on arguments already checked against the signature and the scalar guards."""
        if self.traced.aliases:
            self._check_writes(args)
        ran, flat = self._run_clustered(args) if self.autocluster else (self, self._run_whole(args))
        # The outputs as the trace that ran gives them: a variant traced for other shapes may
        # return another form (a Python int where this trace returned an np.int64).
        traced = ran.traced
        if ran is not self and traced.aliases:
            ran._check_writes(args)
        n = traced.num_outputs
        for (_, param), new in zip(traced.aliases, flat[n:]):
            np.copyto(args[param], new)
        leaves = [_restore(v, like) for v, like in zip(flat[:n], traced.eager_outputs)]
        return unflatten(traced.treedef, leaves)

    def _run_whole(self, args) -> list:
        """The executable without auto-clustering: only the interpreter runs eager ops here,
        and one that gives another shape than traced means other values than traced."""
        try:
            return self.executable(*args)
        except ShapeChanged as changed:
            inst = changed.inst
            what = str(inst.attr("custom_call_target", inst.name)).replace("numpy.", "np.")
            line = f" (line {inst.metadata.source_line})" if inst.metadata.source_line else ""
            raise TypeError(
                f"{self.module.name} was traced for other values: {what}{line} gives shape "
                f"{changed.observed[inst.name]} for these arguments, and the program was "
                f"traced for {declared_shape(inst)}. Explore again with these arguments, or "
                "use xe.jit(f, autocluster=True), which traces a program for each such "
                "shape") from None

    def call_path(self) -> Callable[[Sequence], object]:
        """What a call of the compiled program does once its arguments' signature matched:
        replay the scalar checks (GuardFailed when a Python value decided another program),
        run, and give the outputs NumPy's form. Worked out once, so that a cached call
        does only what it must (what `jit` calls on a cache hit)."""
        traced = self.traced
        replay = traced.scalars.replay if traced.scalars else None
        if self.autocluster or traced.aliases or replay is not None:
            def checked(args):
                if replay is not None:
                    replay(args)
                return self._run(args)

            return checked
        exe = self.executable
        run = exe.run_arrays  # the signature matched: the arguments are the traced arrays
        if any(kind in _PYTHON_NUMBERS for _, kind in self.signature):
            def run(args):  # Python numbers become arrays of the parameters' types
                return exe(*args)
        if traced.treedef == ("leaf", 0) and isinstance(traced.eager_outputs[0], np.ndarray):
            return lambda args: run(args)[0]  # one array out: nothing to rebuild
        treedef, likes = traced.treedef, traced.eager_outputs
        return lambda args: unflatten(treedef, [_restore(v, like)
                                                for v, like in zip(run(args), likes)])

    def _run_clustered(self, args) -> tuple[Exploration, list]:
        """Run the clusters; where an eager op gives a shape this trace did not see, run the
        variant traced for it (tracing one the first time: its clusters that did not change
        come from the compile cache). Returns the exploration that ran and its outputs."""
        tried = []
        candidate = self
        while True:
            tried.append(candidate)
            try:
                return candidate, candidate.executable(*args)
            except ShapeChanged as changed:
                observed = changed.observed
            candidate = next((v for v in self.variants if v not in tried
                              and v._eager_shapes_agree(observed) and v._guards_hold(args)),
                             None)
            if candidate is None:
                candidate = explore(self.function, *args, backend=self.backend,
                                    autocluster=True)
                self.variants.append(candidate)

    def _eager_shapes_agree(self, observed: dict[str, tuple]) -> bool:
        shapes = {i.name: declared_shape(i) for i in self.module.entry.instructions
                  if i.opcode == "custom-call"}
        return all(shapes.get(name) == shape for name, shape in observed.items())

    def _guards_hold(self, args) -> bool:
        """Whether the Python scalar arguments read as this variant's trace read them: past
        a new shape, a trace may read them differently."""
        try:
            self.traced.scalars.replay(args)
        except GuardFailed:
            return False
        return True

    def bench(self, *args, repeat: int = 20):
        """Eager NumPy against the compiled program on the same inputs: medians over
        interleaved rounds, and peak memory of each (a `BenchResult`; `.table()`, `.plot()`).
        How the program is timed is its executable's (a GPU's kernels by its events)."""
        from .passes.buffer_assignment import OUTPUT

        args = args or self.args
        a = self.buffers
        outputs = sum(b.size for b in a.buffers if b.category == OUTPUT) if a else 0
        self.last_bench = self.executable.bench(self.module.name, self.function, self.run,
                                                args, repeat, outputs)
        return self.last_bench

    def check(self, *args) -> CheckResult:
        """Compiled against eager NumPy on the same inputs: error per output, within tolerance."""
        args = args or self.args
        eager_args = [copy.deepcopy(a) for a in args]
        run_args = [copy.deepcopy(a) for a in args]
        want = self.function(*eager_args)
        got = self.run(*run_args)
        want_leaves, got_leaves = _leaves(want), _leaves(got)
        precision = computed_precision(self.module)
        checks = [compare(f"output {i}", g, w, precision)
                  for i, (g, w) in enumerate(zip(got_leaves, want_leaves))]
        if not all(c.ok for c in checks):
            checks = referee(self.function, args, checks, got_leaves, want_leaves)
        for _, param in self.traced.aliases:
            name = self.traced.arg_names[param]
            checks.append(compare(f"{name} (in place)", run_args[param], eager_args[param]))
        changed = [] if all(c.ok for c in checks) else [
            name for name, value in self._captured.items()
            if not _same_value(value, _captured_values(self.function).get(name))]
        note = "" if not changed else (
            f"{', '.join(map(repr, changed))} changed since {self.module.name} was traced: "
            "the compiled program holds the value each global or closure variable had then, "
            "as jax.jit does. Pass it as an argument, or compile again (xe.jit(f) anew).")
        return CheckResult(tuple(checks), note)

    def __repr__(self) -> str:
        changed = [s.name for s in self.stages if s.changed]
        return (f"<Exploration of {self.module.name}: {len(self.stages)} stages "
                f"({', '.join(changed)} changed), backend={self.backend}>")


def referee(function, args, checks, got, want) -> list[OutputCheck]:
    """Outputs outside the tolerance, judged against the same NumPy code run in float64:
    a float32 sum of 1e7 terms may differ from NumPy's by more than float32's tolerance
    because NumPy's own is the less accurate one, and two float32 products of length 1024
    that round in different orders differ by more than it near zero. Such an output counts
    as right when its largest error from the float64 result is within twice NumPy's: the
    same accuracy, up to the chance of which rounding order lands nearer (for products of
    1024 and 4096 terms the two root-mean-square errors agree within 6%)."""
    wide = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
            else copy.deepcopy(a) for a in args]
    try:
        with np.errstate(all="ignore"):
            exact = _leaves(function(*wide))
    except Exception:  # the float64 run is only a referee; without it the check stands
        return checks
    judged = []
    for c, g, w, e in zip(checks, got, want, exact):
        g, w, e = (np.asarray(v) for v in (g, w, e))
        if (c.ok or g.dtype.kind != "f" or g.shape != w.shape or e.shape != w.shape
                or not np.all(np.isfinite(w))):
            judged.append(c)
            continue
        e = e.astype(np.float64)
        ours = float(np.max(np.abs(g.astype(np.float64) - e), initial=0.0))
        numpy = float(np.max(np.abs(w.astype(np.float64) - e), initial=0.0))
        if ours <= 2 * numpy:
            c = OutputCheck(c.name, c.dtype, c.shape, c.max_abs_error, c.max_rel_error,
                            True, f"NumPy is {numpy:.3g} from the float64 result, "
                                  f"compiled {ours:.3g}")
        judged.append(c)
    return judged


def _captured_values(f) -> dict:
    """Copies of the arrays and numbers `f` reads from its globals and closure: tracing
    freezes them into the program as constants."""
    return {n: v.copy() if isinstance(v, np.ndarray) else v for n, v in free_values(f).items()
            if isinstance(v, (np.ndarray, np.generic, bool, int, float))}


READ_ONLY = -1  # update_conflict's answer for an argument NumPy cannot write to either


def update_conflict(args: Sequence, p: int) -> int | None:
    """Why argument `p`, which the program updates in place, cannot be updated as NumPy would
    update it: READ_ONLY, or the number of another argument it shares memory with (a compiled
    program takes each argument as a separate input, so the update would not show through the
    other); None when nothing stands in the way."""
    a = args[p]
    if not a.flags.writeable:
        return READ_ONLY
    return next((q for q, other in enumerate(args)
                 if q != p and isinstance(other, np.ndarray) and np.shares_memory(a, other)),
                None)


def _same_value(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def _leaves(tree) -> list:
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    if isinstance(tree, dict):
        return [leaf for t in tree.values() for leaf in _leaves(t)]
    if tree is None:
        return []
    return [tree]


def explore(f: Callable, *args, backend: str = "interpreter", passes=None,
            autocluster: bool = False) -> Exploration:
    """Trace f on args, run the pass pipeline, and return everything for inspection.

    With `autocluster`, what cannot compile (np.unique, NumPy functions the op table lacks)
    runs eagerly between compiled clusters, as TensorFlow's auto-clustering does; without it
    the cpu backend compiles the whole function or raises CompileError naming what cannot."""
    target = get_backend(backend)
    return _explore(f, args, target, passes, autocluster,
                    must_compile=not target.runs_eager_ops)


def _explore(f: Callable, args, backend, passes, autocluster: bool,
             must_compile: bool) -> Exploration:
    if active_builder() is not None:
        raise located(TraceError, "xe.explore was called inside a function being traced; "
                                  "nested tracing is not supported", "xe.explore",
                      "Call the function directly inside (its ops join the outer trace), or "
                      "use xe.jit, which does that when nested.")
    nested: list[JitFunction] = []
    saved, _nested.autoclustered = getattr(_nested, "autoclustered", None), nested
    try:
        traced = trace(f, args, autocluster=autocluster)
        compiled = compiler.compile(traced.module, backend, autocluster=autocluster,
                                    passes=passes, must_compile=must_compile)
    except CompileError as e:
        if nested and not autocluster and "autocluster" in (e.hint or ""):
            raise _outer_must_compile(e, f, nested) from None
        raise
    finally:
        _nested.autoclustered = saved
    ex = Exploration(f, args, traced, compiled)
    from .dump import options_from_env

    dump = options_from_env()  # XLA_EXPLORER_FLAGS="--dump_to=DIR": every compilation
    if dump is not None:
        ex.dump(dump.directory, dump.pass_re)
    return ex


# The xe.jit functions with autocluster=True called inside the trace being made (their ops
# join it, and follow its setting): a must-compile error then names the outer function.
_nested = threading.local()


def _outer_must_compile(error: CompileError, f: Callable, nested: list[JitFunction]
                        ) -> CompileError:
    """`error` (an op must-compile refuses) with a hint that names the outer function: the
    autocluster=True of an xe.jit traced into it does not apply there."""
    def named(g) -> str:  # `<lambda> (defined at cell.py:3)`
        code = getattr(g, "__code__", None)
        where = f" (defined at {code.co_filename}:{code.co_firstlineno})" if code else ""
        return getattr(g, "__name__", "f") + where

    name = getattr(f, "__name__", "f")
    call = f"xe.jit({name}, autocluster=True)" if name.isidentifier() else \
        "xe.jit(..., autocluster=True)"
    inner = ", ".join(named(j.function) for j in nested)
    hint = (f"The outer function {named(f)} is compiled whole (must-compile: xe.jit without "
            f"autocluster=True), and the xe.jit functions it calls with autocluster=True "
            f"({inner}) are traced into its program and follow its setting. Pass "
            f"autocluster=True to the outer one: {call} (or xe.explore(..., autocluster=True), "
            "%%xla --autocluster).")
    return type(error)(error.message, op=error.op, source_file=error.source_file,
                       source_line=error.source_line, hint=hint)


@dataclass(frozen=True)
class CacheInfo:
    hits: int
    misses: int
    signatures: tuple[tuple, ...]  # ((shape, dtype), ...) per compiled program
    # per compiled program, {argument number: value} of the Python scalars that decided it
    static: tuple[dict, ...] = ()


def signature(args) -> tuple:
    """What a compiled program is specialised on: each argument's shape and type (a Python
    number by its type: NumPy treats it as weakly typed; what its value decides is checked
    on each call by the trace's ScalarProgram). A NumPy scalar is apart from a 0-d array of
    its type (`np.float64` against `float64[]`): NumPy gives the two different outputs
    (`s.copy()`, `s` itself), so each gets a program of its own."""
    sig = []
    for a in args:
        if isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
            sig.append(((), type(a).__name__))  # one of _PYTHON_NUMBERS
        elif isinstance(a, np.generic):
            sig.append(((), f"np.{a.dtype.name}"))  # a NumPy scalar: its type, as np. names it
        else:
            a = np.asarray(a)
            sig.append((a.shape, a.dtype.str))
    return tuple(sig)


_PYTHON_NUMBERS = ("bool", "int", "float", "complex")  # a Python number's kind in a signature


def _describe(sig: tuple) -> str:
    """One argument's signature as a reader writes it: `float64[4]`, `a Python int`."""
    shape, kind = sig
    if kind in _PYTHON_NUMBERS:
        return f"a Python {kind}"
    if kind.startswith("np."):
        return f"a NumPy scalar ({kind})"
    return f"an array of shape {shape} and type {np.dtype(kind)}"


# A Python number's key in the fast cache: its type (its value is the ScalarProgram's).
_SCALAR_TYPES = frozenset((bool, int, float, complex))


def _fast_key(args) -> tuple | None:
    """The cache key of a call whose arguments are all NumPy arrays or Python numbers: each
    array's shape and dtype, each number's type; None for anything else (the full
    `signature` decides those). Cheaper than `signature`: no conversion, no dtype.str."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.shape, a.dtype))
        elif t in _SCALAR_TYPES:
            key.append(t)
        else:
            return None
    return tuple(key)


class JitFunction:
    """`f` compiled whole for a backend, once per argument signature (as XLA recompiles for
    new shapes); NumPy in, NumPy out."""

    def __init__(self, f: Callable, backend: str, autocluster: bool = False):
        self._backend = get_backend(backend)
        self.function = f
        self.backend = backend
        self.autocluster = autocluster
        self._compiled: dict[tuple, list[Exploration]] = {}
        # The call path of each signature seen, for the next call with it (`_fast_key`).
        self._fast: dict[tuple | None, Callable] = {}
        self._hits = self._misses = 0
        self.__name__ = getattr(f, "__name__", "jit")
        self.__doc__ = getattr(f, "__doc__", None)
        self._parameters: inspect.Signature | None = None  # f's, read at the first keyword
        # Calls with keywords that cannot be positions: (positions, keywords) -> their jit.
        self._by_keywords: dict[tuple, JitFunction] = {}

    def explore(self, /, *args, **kwargs) -> Exploration:
        """The Exploration behind the compiled program for these arguments: one per signature,
        and per value of a Python scalar argument that decided the program (a shape, an
        index, a branch), as JAX compiles per value of a static argument."""
        if kwargs:
            target, args = self._bind(args, kwargs)
            if target is not self:
                return target.explore(*args)
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray) and type(a) is not np.ndarray:
                check_plain_array(a, argument_names(self.function, len(args))[i])
        key = signature(args)
        programs = self._compiled.setdefault(key, [])
        for ex in programs:
            try:
                ex.traced.scalars.replay(args)  # raises NumPy's or Python's error for args
            except GuardFailed:
                continue
            self._hits += 1
            return ex
        self._misses += 1
        ex = _explore(self.function, args, self._backend, None, self.autocluster,
                      must_compile=True)
        programs.append(ex)
        return ex

    def __call__(self, /, *args, **kwargs):
        if kwargs:
            target, args = self._bind(args, kwargs)
            if target is not self:
                return target(*args)
        b = active_builder()
        if b is not None:
            # Called while another function is traced: its ops join that trace, as JAX
            # inlines a nested jit.
            if self.autocluster and not b.autocluster:
                calls = getattr(_nested, "autoclustered", None)
                if calls is not None and self not in calls:
                    calls.append(self)  # for the outer's error, should one of its ops fail
            return self.function(*args)
        key = _fast_key(args)
        call = self._fast.get(key)
        if call is not None:
            try:
                result = call(args)
            except GuardFailed:  # a Python value decided another program: find or make it
                pass
            else:
                self._hits += 1
                return result
        ex = self.explore(*args)
        result = ex._run(args)
        if key is not None:
            self._fast[key] = ex.call_path()
        return result

    def _bind(self, args: tuple, kwargs: dict) -> tuple[JitFunction, tuple]:
        """A call with keyword arguments as a call by position, as jax.jit takes them: the
        keywords bound to f's parameters (inspect.signature), so that `f(x, scale=3.0)` is
        `f(x, 3.0)` and shares its programs. Keywords that cannot be positions (a
        keyword-only parameter, one after a default left out, **kwargs) come last, to a
        JitFunction of their own that passes them to f by keyword; f's defaults are f's."""
        if self._parameters is None:
            try:
                self._parameters = inspect.signature(self.function)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{self.__name__}() was called with keyword arguments "
                                f"({', '.join(kwargs)}), but its parameters cannot be read "
                                f"({e}); pass them by position") from None
        try:
            bound = self._parameters.bind(*args, **kwargs)
        except TypeError as e:  # Python's own complaint, as calling f would give
            raise TypeError(f"{self.__name__}(): {e}") from None
        if not bound.kwargs:
            return self, bound.args
        key = (len(bound.args), tuple(bound.kwargs))
        target = self._by_keywords.get(key)
        if target is None:
            target = self._by_keywords[key] = JitFunction(
                _KeywordCall(self.function, *key), self.backend, self.autocluster)
        return target, (*bound.args, *bound.kwargs.values())

    def cache_info(self) -> CacheInfo:
        jits = [self, *self._by_keywords.values()]
        programs = [(k, ex) for j in jits for k, exs in j._compiled.items() for ex in exs]
        return CacheInfo(sum(j._hits for j in jits), sum(j._misses for j in jits),
                         tuple(k for k, _ in programs),
                         tuple(ex.traced.scalars.static_arguments() for _, ex in programs))


class _KeywordCall:
    """`f` called with its last `len(keywords)` arguments by keyword: what xe.jit traces for
    a call whose keywords cannot be positions. It names its parameters, and shows its code,
    globals and closure, as `f` does, so that errors, metadata and `check` speak of `f`."""

    def __init__(self, f: Callable, positional: int, keywords: tuple[str, ...]):
        self.function, self.positional, self.keywords = f, positional, keywords
        self.__name__ = getattr(f, "__name__", "f")
        for attr in ("__code__", "__globals__", "__closure__", "__doc__"):
            if hasattr(f, attr):
                setattr(self, attr, getattr(f, attr))
        names = argument_names(f, positional) + list(keywords)
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(n if n.isidentifier() else f"arg{i}",
                               inspect.Parameter.POSITIONAL_ONLY) for i, n in enumerate(names)])

    def __call__(self, *args):
        k = self.positional
        return self.function(*args[:k], **dict(zip(self.keywords, args[k:])))


def jit(f: Callable | None = None, *, backend: str = "cpu", autocluster: bool = False):
    """Compile the whole of `f` (must-compile: a part that cannot be compiled is a
    CompileError naming it), or with `autocluster` the parts that can, the rest running
    eagerly between them; usable as `@xe.jit` or `xe.jit(f, backend="cpu")`."""
    if f is None:
        return lambda g: JitFunction(g, backend, autocluster)
    return JitFunction(f, backend, autocluster)
