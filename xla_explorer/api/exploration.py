"""The Exploration: a compilation's record, and where there is one, the function it was
traced from, ready to run, check against NumPy, benchmark, show and dump."""
from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Callable, Sequence

import numpy as np

from .. import compiler
from ..backends import get_backend
from ..errors import as_python_class
from ..ir.library import runs_eagerly
from ..ir.module import Module
from ..passes.base import Stage
from ..passes.buffer_assignment import BufferAssignment
from ..passes.dataflow import is_kernel
from ..passes.kinds import Decision
from ..runtime.base import Executable
from ..runtime.reference import ShapeChanged, declared_shape, run_module
from ..trace.captured import free_values
from ..trace.scalars import GuardFailed, guard_error
from ..trace.tracer import Traced, check_plain_array
from ..trace.updates import pass_a_copy, refuse_updates
from ..tree import LEAF, unflatten
from .checking import CheckResult, compare, computed_precision, judge
from .kernels import Kernel, kernels_of


_ONE_LEAF = (LEAF, 0)  # the treedef of one value returned


def _restore(value: np.ndarray, like):
    """Give an output NumPy's own form: a NumPy scalar where NumPy returned one. A lazy
    result (a dask array) keeps its own: giving it NumPy's would compute it."""
    if type(like) is np.ndarray:  # the common case, first: nothing to restore
        return value
    if is_lazy(value):
        return value
    if isinstance(like, (bool, int, float)) and not isinstance(like, np.generic):
        return type(like)(np.asarray(value)[()])  # a Python number, as Python computes it
    if isinstance(like, np.generic):
        return np.asarray(value)[()]
    return value


class Exploration:
    """A compilation to explore (`compiler.Compilation`, the record every viewer reads) and,
    where there is one, the Python function it was traced from and its trace: with them it
    runs, checks and benchmarks as the function does, against NumPy; without them (a module
    parsed from HLO text, a dump) it runs the module, checked against the same module run
    by the reference interpreter."""

    def __init__(self, compiled: compiler.Compilation, function: Callable | None = None,
                 args: Sequence = (), traced: Traced | None = None,
                 retrace: Callable[[Sequence], Exploration] | None = None):
        self.function = function
        self.args = [copy.deepcopy(a) for a in args]
        self.signature = signature(args)
        # To explain a check that fails because of them.
        self._captured = _captured_values(function) if function is not None else {}
        self.traced = traced
        self.compiled = compiled
        self.stages = list(compiled.stages)
        self.backend = compiled.backend.name
        self.autocluster = compiled.autocluster
        self.last_bench = None  # what `bench` measured last: the viewers show it
        self.last_xla = None  # what `compare_xla` found last: the XLA tab shows it
        # Auto-clustered programs traced again for other value-dependent shapes (np.unique's
        # length): each compiles the clusters that shape changes, as XLA compiles per shape.
        # `retrace` makes one for new arguments.
        self.retrace = retrace
        self.variants: list[Exploration] = []

    @classmethod
    def from_module(cls, module: Module, backend: str = "interpreter", args: Sequence = (),
                    passes=None, autocluster: bool = False) -> Exploration:
        """A module with no Python function (HLO text parsed by `xe.parse_hlo`, a dump)
        through the backend's pipeline; `args` are what `run`, `check` and `bench` run it on
        when called without any."""
        target = get_backend(backend)
        compiled = compiler.compile(module, target, autocluster=autocluster, passes=passes,
                                    must_compile=not target.runs_eager_ops)
        ex = cls(compiled, args=args)
        dump_as_flagged(ex)
        return ex

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
        from ..viz.graphviz import graph

        return graph(self.stage(stage).module, **options)

    def show(self):
        """The explorer (an anywidget drawn by the JupyterLab extension's own code): stages,
        decisions, buffers, kernels and performance, with a benchmark the kernel runs.
        Displayed, it is one output that also carries the JSON the extension renders without
        a kernel and a static HTML view (docs/explorer.md)."""
        from ..viz.live import explorer

        return explorer(self)

    def save_html(self, path) -> None:
        """One self-contained HTML file: the explorer the notebook shows (the last `bench`
        too), drawn by its own script from the bundle's JSON; no kernel, no network."""
        from ..viz.page import save_html

        save_html(self, path, self.last_bench)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The JupyterLab extension's JSON (application/vnd.xla-explorer.v1+json) and an HTML
        fallback for every other front end."""
        from ..viz.display import bundle

        return bundle(self, self.last_bench)

    def dump(self, directory, pass_re: str | None = None, snapshots: bool = False,
             args=None, max_snapshot_bytes: int | None = None) -> list:
        """Write this compilation's files as XLA's --xla_dump_to does; returns their paths.
        With `snapshots=True`, also a manifest and the arguments of the run (`args`, default
        this exploration's; none over `max_snapshot_bytes`, 64 MiB by default), so that
        `xe.replay(directory)` or `python -m xla_explorer replay` runs it in another process
        (xla_explorer/snapshot.py)."""
        from ..dump import dump_exploration

        return dump_exploration(self, directory, pass_re, snapshots, args, max_snapshot_bytes)

    def export(self, name: str, directory=".", names: list[str] | None = None,
               target_cpu: str = "host"):
        """This cpu program as `directory/NAME.cpython-*.so`, a module whose one function,
        `run`, needs only NumPy, with `NAME.pyi` beside it (api/export.py); `names` are
        run's parameters' names. Returns the `ExportedModule`."""
        from .export import export_exploration

        return export_exploration(self, name, directory, names, target_cpu)

    @property
    def decisions(self) -> list[Decision]:
        """Every fusion decision, taken or refused, each with its `.reason`, in pass order."""
        return self.compiled.decisions

    @property
    def fusions(self) -> list[Kernel]:
        """One per kernel the backend launches, in schedule order."""
        return kernels_of(self.module, self.decisions)

    @functools.cached_property
    def _flat_arrays(self) -> bool:
        """Whether the function returns a tuple of arrays, nothing else (NumPy scalars and
        Python numbers are given back their form by `_restore`)."""
        traced = self.traced
        return traced.treedef == (tuple, tuple((LEAF, k) for k in range(traced.num_outputs))) \
            and all(type(like) is np.ndarray for like in traced.eager_outputs)

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
        from ..passes.autocluster import Cluster, Clustering

        if self.compiled.clustering is not None:
            return self.compiled.clustering
        names = tuple(i.name for i in self.stages[0].module.entry.instructions
                      if is_kernel(i))
        return Clustering((Cluster("cluster_0", names),), ())

    @property
    def kernels(self) -> dict[str, str]:
        """{kernel name: generated source}; empty for a backend that generates no code."""
        return self.executable.kernels

    @property
    def driver(self) -> str:
        """The source of the driver that launches the kernels in order, repeated launches
        rolled into loops; "" for a backend that generates no code."""
        return self.executable.driver

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
        from ..runtime.traffic import traffic

        return traffic(self.compiled.unfused, self.module)

    @property
    def buffers(self) -> BufferAssignment | None:
        """The buffer assignment (None if the pipeline had no buffer-assignment pass)."""
        return self.compiled.assignment

    def with_executable(self, backend, executable: Executable) -> Exploration:
        """This exploration with another backend's executable of the same module: what
        `jit(..., tiered=True)` answers with while the kernels compile."""
        other = copy.copy(self)
        other.compiled = dataclasses.replace(self.compiled, backend=backend,
                                             executable=executable)
        other.backend = backend.name
        return other

    def run(self, *args):
        """Run the compiled program: NumPy in, NumPy out; in-place updates reach the inputs.

        Every temporary lives in one arena laid out by the buffer assignment, so a wrong
        assignment gives a wrong answer."""
        args = args or [copy.deepcopy(a) for a in self.args]
        if self.traced is None:
            return self._run_module(args)
        self._check_signature(args)
        try:
            self.traced.scalars.replay(args)
        except GuardFailed as failed:
            raise guard_error(failed, self.module.name) from None
        return self._run(args)

    def _run_module(self, args):
        """A module's own run, with no function to give its outputs a form: the root's
        value, or a tuple of them for a root tuple."""
        params = sorted(self.module.entry.parameters, key=lambda p: p.parameter_number)
        if len(args) != len(params):
            raise TypeError(f"{self.module.name} takes {len(params)} arguments, got "
                            f"{len(args)}")
        for p, a in zip(params, args):
            if np.shape(a) != p.dims:
                raise TypeError(f"parameter {p.name} is {p.shape}; got shape {np.shape(a)}")
        flat = self.executable(*args)
        return tuple(flat) if self.module.entry.root.shape.is_tuple else flat[0]

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
        """An in-place update NumPy would make through another argument's memory (or refuse,
        for a read-only array) is refused rather than lost (trace/updates.py)."""
        refuse_updates(args, self.traced.update_sites(), self.traced.arg_names,
                       error=as_python_class(ValueError), advice=pass_a_copy)

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
        if traced.aliases:
            for (_, param), new in zip(traced.aliases, flat[n:]):
                np.copyto(args[param], new)
        # No list more than needed: at a few elements, the containers a call makes are a
        # visible part of what it allocates (benchmarks/memory.py).
        if ran._flat_arrays and len(flat) == n:
            return tuple(flat)  # a tuple of arrays, as NumPy returned: nothing to restore
        if traced.treedef == _ONE_LEAF:
            return _restore(flat[0], traced.eager_outputs[0])
        leaves = [_restore(v, like) for v, like in zip(flat, traced.eager_outputs)]
        del flat
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
        if any(kind in PYTHON_NUMBERS for _, kind in self.signature):
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
        try:  # the common case first, allocating nothing beside the call's own values
            return self, self.executable(*args)
        except ShapeChanged as changed:
            return self._run_variant(args, changed.observed)

    def _run_variant(self, args, observed: dict[str, tuple]) -> tuple[Exploration, list]:
        """`_run_clustered` past an eager op that gave a shape this trace did not see. (Apart
        from it: the generator below makes cells of its variables, which a call would
        allocate even when it needs no variant.)"""
        tried = [self]
        while True:
            candidate = next((v for v in self.variants if v not in tried
                              and v._eager_shapes_agree(observed) and v._guards_hold(args)),
                             None)
            if candidate is None:
                candidate = self.retrace(args)
                self.variants.append(candidate)
            tried.append(candidate)
            try:
                return candidate, candidate.executable(*args)
            except ShapeChanged as changed:
                observed = changed.observed

    def _eager_shapes_agree(self, observed: dict[str, tuple]) -> bool:
        shapes = {i.name: declared_shape(i) for i in self.module.entry.instructions
                  if runs_eagerly(i)}
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
        How the program is timed is its executable's (a GPU's kernels by its events).
        Without a Python function, eager is the module run op by op by the interpreter."""
        from ..passes.buffer_assignment import OUTPUT

        args = args or self.args
        a = self.buffers
        outputs = sum(b.size for b in a.buffers if b.category == OUTPUT) if a else 0
        self.last_bench = self.executable.bench(self.module.name, self._eager(), self.run,
                                                args, repeat, outputs)
        return self.last_bench

    def compare_xla(self, *args, repeat: int = 20):
        """The same program compiled by real XLA (XLA:CPU, from jax): its optimised HLO read
        by our parser, its kernels matched to ours, its temporary bytes, and both timed
        interleaved in one process (an `XlaComparison`; `.table()`). Needs jax:
        pip install 'xla-explorer[xla]'. The explorer's XLA tab shows the last one."""
        from .xla_compare import compare_xla

        self.last_xla = compare_xla(self, args or self.args, repeat)
        return self.last_xla

    def _eager(self) -> Callable:
        """What the compiled program is measured and checked against: the function, or the
        module as parsed, run op by op in NumPy."""
        if self.function is not None:
            return self.function
        first = self.stages[0].module
        return lambda *args: run_module(first, args)

    def check(self, *args) -> CheckResult:
        """Compiled against eager NumPy on the same inputs: error per output, within tolerance."""
        args = args or self.args
        eager_args = [copy.deepcopy(a) for a in args]
        run_args = [copy.deepcopy(a) for a in args]
        want = self._eager()(*eager_args)
        got = self.run(*run_args)
        checks = judge(self.function, args, got, want, computed_precision(self.module))
        if self.traced is None:
            return CheckResult(tuple(checks))
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



def _captured_values(f) -> dict:
    """Copies of the arrays and numbers `f` reads from its globals and closure: tracing
    freezes them into the program as constants."""
    return {n: v.copy() if isinstance(v, np.ndarray) else v for n, v in free_values(f).items()
            if isinstance(v, (np.ndarray, np.generic, bool, int, float))}


def _same_value(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    return type(a) is type(b) and (a == b or (a != a and b != b))



def signature(args) -> tuple:
    """What a compiled program is specialised on: each argument's shape and type (a Python
    number by its type: NumPy treats it as weakly typed; what its value decides is checked
    on each call by the trace's ScalarProgram). A NumPy scalar is apart from a 0-d array of
    its type (`np.float64` against `float64[]`): NumPy gives the two different outputs
    (`s.copy()`, `s` itself), so each gets a program of its own."""
    sig = []
    for a in args:
        if isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
            sig.append(((), type(a).__name__))  # one of PYTHON_NUMBERS
        elif isinstance(a, np.generic):
            sig.append(((), f"np.{a.dtype.name}"))  # a NumPy scalar: its type, as np. names it
        elif is_lazy(a):  # a dask array: its chunks too, read without computing it
            sig.append((tuple(a.shape), f"{np.dtype(a.dtype).str}{CHUNKED}{a.chunks}"))
        else:
            a = np.asarray(a)
            sig.append((a.shape, a.dtype.str))
    return tuple(sig)


PYTHON_NUMBERS = ("bool", "int", "float", "complex")  # a Python number's kind in a signature
CHUNKED = " in chunks "  # a chunked array's kind: its dtype, this, its chunks


def is_lazy(a) -> bool:
    """Whether `a` is a lazy collection (Dask's protocol), never to be made a NumPy array
    here: that would compute it. (A NumPy array is answered first: on a type, a failed
    hasattr makes an AttributeError and its message, which would count in a call's peak.)"""
    return type(a) is not np.ndarray and hasattr(type(a), "__dask_graph__")


def _describe(sig: tuple) -> str:
    """One argument's signature as a reader writes it: `float64[4]`, `a Python int`."""
    shape, kind = sig
    if kind in PYTHON_NUMBERS:
        return f"a Python {kind}"
    if kind.startswith("np."):
        return f"a NumPy scalar ({kind})"
    if CHUNKED in kind:
        dtype, chunks = kind.split(CHUNKED)
        return f"an array of shape {shape} and type {np.dtype(dtype)} in chunks {chunks}"
    return f"an array of shape {shape} and type {np.dtype(kind)}"



def dump_as_flagged(ex: Exploration) -> None:
    """XLA_EXPLORER_FLAGS="--dump_to=DIR" dumps every compilation, as XLA_FLAGS does."""
    from ..dump import options_from_env

    dump = options_from_env()
    if dump is not None:
        ex.dump(dump.directory, dump.pass_re, snapshots=dump.snapshots)
