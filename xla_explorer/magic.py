"""`%load_ext xla_explorer`: the `%%xla` cell magic and the `%xla_cache` line magic.

A thin front end: `trace/cell.py` turns the cell into a function, `jit` compiles it (one
JitFunction per cell, backend and clustering, so a re-run with the same shapes is a cache hit
and a new shape compiles again), and this module runs it, writes the results back and prints
what the compiler did. Nothing is written to the user's namespace until everything succeeded.

What the cell prints is printed once, by an eager NumPy run of the cell: the trace's prints
(of Tracers) and those of the check's and the bench's runs are dropped.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import linecache
import traceback
from dataclasses import dataclass, field

import numpy as np
from IPython.core.displayhook import DisplayHook
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .backends import BACKENDS, DEVICE_BACKENDS
from .errors import CompileError, MismatchError
from .ir.shape import hlo_type_name
from .trace.captured import free_values
from .trace.cell import (LAST, NO_VALUE, CellError, CellPlan, analyse, cell_names,
                         link_text)

FIRST_LINE = 2  # the cell's first line, under the %%xla line: errors count lines as the notebook
# Backends planned but not registered yet: --backend names them, with what to use instead.
NOT_BUILT: dict[str, str] = {}


# -- the compile cache ----------------------------------------------------------------------------


@dataclass
class CachedCell:
    """One cell compiled for one backend: its plan and the JitFunction that holds its
    executables, one per input signature."""

    plan: CellPlan
    backend: str
    autocluster: bool
    jit: object
    depends: tuple  # what the plan was analysed against; a change starts the cell afresh
    keep: tuple = field(repr=False, default=())  # the objects whose ids are in `depends`
    # What the trace of each executable found (keyed by the Exploration's id): Python control
    # flow may take other paths for other shapes.
    traces: dict = field(repr=False, default_factory=dict)

    @property
    def first_line(self) -> str:
        return next((s.strip() for s in self.plan.source.splitlines() if s.strip()), "")


@dataclass(frozen=True)
class TraceFacts:
    """What one trace of a cell found, for the runs that reuse its executable: which outputs
    are other objects, whether it printed, whether its last line's value must come from an
    eager run (a string, a dtype: not something the program returns)."""

    links: dict
    printed: bool
    eager_value: bool


def helpers_read(objects, seen=None) -> tuple:
    """What the functions a cell calls read from their globals and closures, which the trace
    froze into the program: numbers by value, arrays by identity, shape and type, functions
    by what they read in turn. A helper's global rebound (K = 3.0) compiles the cell again
    instead of running it with the old value."""
    seen = set() if seen is None else seen
    out = []
    for f in objects:
        code = getattr(f, "__code__", None)
        if code is None or id(f) in seen:
            continue
        seen.add(id(f))
        for name, v in sorted(free_values(f).items()):
            if isinstance(v, np.ndarray):
                out.append((name, "array", id(v), v.shape, v.dtype.str))
            elif isinstance(v, (bool, int, float, complex, np.generic)):
                out.append((name, type(v).__name__, repr(v)))
            elif callable(v) and hasattr(v, "__code__"):
                out.append((name, "function", id(v), helpers_read((v,), seen)))
    return tuple(out)


class CellCache:
    """The session's compiled cells, keyed by (cell source, backend, autocluster).

    A cell's entry is replaced when what it was analysed against changed: its inputs (which
    names and paths hold arrays and numbers), the structure of the containers it uses whole,
    the constants it reads (by value) and the functions, classes and modules (by identity,
    a helper function defined again): the compiled program was traced through them, so it
    would be stale. The values of inputs are not in it: the executables are per shape and
    type."""

    def __init__(self):
        self.cells: dict[tuple, CachedCell] = {}

    def lookup(self, plan: CellPlan, namespace, backend: str, autocluster: bool) -> CachedCell:
        from .api import jit

        key = (plan.source, backend, autocluster)
        depends = (plan.first_line, plan.inputs, id(namespace), plan.key,
                   helpers_read(plan.keep))
        entry = self.cells.get(key)
        if entry is None or entry.depends != depends:
            entry = CachedCell(plan, backend, autocluster,
                               jit(plan.function, backend=backend, autocluster=autocluster),
                               depends, plan.keep)
            self.cells[key] = entry
        return entry

    def forget_failed(self, entry: CachedCell) -> None:
        """Drop a cell that never compiled (its first run failed), so the report lists what
        is compiled."""
        key = (entry.plan.source, entry.backend, entry.autocluster)
        if self.cells.get(key) is entry and not entry.jit.cache_info().signatures:
            del self.cells[key]

    def clear(self) -> None:
        self.cells.clear()

    def report(self) -> str:
        """What is compiled, per cell, and the hit and miss counts."""
        if not self.cells:
            return "%xla_cache: nothing compiled yet"
        infos = [(c, c.jit.cache_info()) for c in self.cells.values()]
        hits, misses = sum(i.hits for _, i in infos), sum(i.misses for _, i in infos)
        lines = [f"%xla_cache: {_count(len(infos), 'cell')}, "
                 f"{_count(sum(len(i.signatures) for _, i in infos), 'executable')}; "
                 f"{_counts(hits, misses)}"]
        for c, info in infos:
            mode = " --autocluster" if c.autocluster else ""
            lines.append(f"{c.plan.name}  --backend {c.backend}{mode}  "
                         f"({_counts(info.hits, info.misses)})  {c.first_line}")
            for sig, static in zip(info.signatures, info.static):
                lines.append(f"    ({_signature_text(c.plan.inputs, sig, static)})")
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
    return _type_text(np.shape(value), np.asarray(value).dtype.str)


# -- running a cell ---------------------------------------------------------------------------


@dataclass
class CellRun:
    """One successful `%%xla` run: what `_xla` is bound to, and what was written back."""

    plan: CellPlan
    entry: CachedCell
    exploration: object
    hit: bool
    bindings: dict
    updated: tuple  # inputs changed in place
    links: dict  # outputs that are (or hold) an input or another output, see CellPlan.links
    value: object = NO_VALUE  # the value of the last line, if it is an expression
    check: object = None
    bench: object = None
    dumped: tuple = ()


def run_cell(cell: str, namespace: dict, *, backend: str = "cpu", autocluster: bool = False,
             cache: CellCache, check: bool = True, bench: bool = False, dump: str | None = None,
             first_line: int = FIRST_LINE) -> CellRun:
    """Analyse, compile (or find compiled), run, check, bench and dump a cell, then write its
    results into `namespace`: only once all of that succeeded. The analysis is done on every
    run: it reads the inputs' current values, and decides whether the compiled cell is still
    the one to run."""
    fresh = analyse(cell, namespace, first_line=first_line)
    entry = cache.lookup(fresh, namespace, backend, autocluster)
    plan = entry.plan
    args = list(fresh.values)
    ex, hit, facts = _explore(entry, cache, args)
    updated = tuple(p for _, p in ex.traced.aliases)
    _check_updatable(fresh, args, updated)
    # In-place updates land in copies; the caller's arrays take them at the end.
    run_args = [copy.deepcopy(a) if i in updated else a for i, a in enumerate(args)]
    with _silenced():  # an auto-clustered run may trace again
        result = ex.run(*run_args)
    bindings = fresh.bindings(result, args, facts.links)
    value = bindings.pop(LAST, NO_VALUE)
    done = CellRun(plan, entry, ex, hit, bindings, tuple(plan.inputs[p] for p in updated),
                   facts.links, value)
    with _silenced():  # the check's and the bench's eager runs print what the cell prints
        if check:
            done.check = _named(ex.check(*_copies(args)), _leaf_names(result))
            if not done.check.ok:
                raise MismatchError(
                    "the compiled results differ from eager NumPy's, so no name was "
                    f"changed:\n{done.check}\nA difference NumPy leaves unspecified (the order "
                    "of equal keys in np.argsort without kind='stable', an index out of range) "
                    "is listed in docs/numpy-coverage.md; --quiet skips the check and writes the "
                    "compiled results.")
        if bench:
            done.bench = ex.bench(*_copies(args))
    if dump:
        done.dumped = _dump(ex, dump)
    if facts.printed or facts.eager_value:
        eager_value = _run_eagerly(plan, args)
        if facts.eager_value:
            done.value = eager_value
    # Everything succeeded: now, and only now, the namespace changes.
    for p in updated:
        np.copyto(args[p], run_args[p])
    namespace.update(bindings)
    namespace["_xla"] = ex
    # The cached plan came from the first run's analysis: it need not keep that run's arrays.
    plan.values, plan.objects = (), {}
    return done


def _explore(entry: CachedCell, cache: CellCache, args):
    """The Exploration for these arguments (traced and compiled on a miss), whether it was a
    cache hit, and what its trace found. What the trace prints is Tracers: it is dropped, and
    shown by an eager run instead if the trace fails."""
    fn, plan = entry.jit, entry.plan
    hits = fn.cache_info().hits
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            ex = fn.explore(*args)
    except Exception:
        cache.forget_failed(entry)
        if printed.getvalue():
            with contextlib.suppress(Exception):  # the trace's error is the one to show
                plan.function(*_copies(args))
        raise
    facts = entry.traces.setdefault(id(ex), TraceFacts(
        dict(plan.links), bool(printed.getvalue()), plan.last_value is not NO_VALUE))
    return ex, fn.cache_info().hits > hits, facts


def _run_eagerly(plan: CellPlan, args):
    """The cell run by NumPy on copies of its inputs, printing what it prints; the value of
    its last line."""
    result = plan.function(*_copies(args))
    return result.get(LAST, plan.last_value)


def _silenced():
    return contextlib.redirect_stdout(io.StringIO())


def _copies(args) -> list:
    return [copy.deepcopy(a) for a in args]


def _check_updatable(plan: CellPlan, args, updated) -> None:
    """NumPy would write into the caller's array; refuse what the copy-in, copy-out of the
    compiled program cannot do the same way."""
    from .api import READ_ONLY, update_conflict

    for p in updated:
        conflict = update_conflict(args, p)
        if conflict is None:
            continue
        name = plan.inputs[p]
        where = dict(op=f"{name} (in place)", source_file=plan.filename,
                     source_line=plan.update_line(name))
        if conflict == READ_ONLY:
            raise CellError(f"{name} is read-only; NumPy refuses to update it in place too",
                            hint=f"Take a copy first: {name} = {name}.copy().", **where)
        other = plan.inputs[conflict]
        raise CellError(
            f"{name} is updated in place and shares memory with {other} (one is a view of the "
            "other, or they are the same array); the compiled program takes them as separate "
            f"inputs, so the update would not show through {other} as it does in NumPy",
            hint=f"Use one name in the cell, or copy: {other} = {other}.copy().", **where)


def _leaf_names(result) -> list[str]:
    """A name for each value the program returns, in its order: `z`, `pair[0]`, `d['a']`."""
    names: list[str] = []

    def walk(value, text):
        if isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, f"{text}[{i}]")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{text}[{k!r}]")
        elif value is not None:  # a part linked to another object
            names.append(text)

    for name, value in result.items():
        walk(value, "the last line" if name == LAST else name)
    return names


def _named(result, names: list[str]):
    """The check's outputs under the cell's names instead of "output 0", "output 1"."""
    outputs = []
    for c in result.outputs:
        if c.name.startswith("output "):
            i = int(c.name.split()[1])
            if i < len(names):
                c = dataclasses.replace(c, name=names[i])
        outputs.append(c)
    return dataclasses.replace(result, outputs=tuple(outputs))


def _dump(ex, directory: str) -> tuple[str, ...]:
    """ex.dump(directory): the paths of the files written."""
    return tuple(str(p) for p in ex.dump(directory))


# -- what the user sees -----------------------------------------------------------------------


def summary(run: CellRun, cache_info, hlo: bool = True) -> str:
    """A compact text summary; with `hlo`, the optimised HLO after it (the explorer widget
    shows the HLO of every stage, so the display leaves it out)."""
    ex, plan = run.exploration, run.plan
    state = "hit" if run.hit else "miss"
    lines = [f"%%xla {plan.name}: backend {ex.backend}, compile cache: {state} "
             f"({_counts(cache_info.hits, cache_info.misses)})"]
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
    fusions = ex.fusions
    lines.append(f"fusions: {_count(len(fusions), 'kernel')}")
    lines += [f"  {kernel_line(ex.module, f)}" for f in fusions]
    if any(len(f.instructions) > LIST_UP_TO for f in fusions):
        lines.append("  (each kernel's instructions by name: _xla.fusions, or the explorer's "
                     "Kernels tab)")
    buffers = ex.buffers
    if buffers is not None:
        lines.append(f"buffers: arena {_bytes(buffers.peak_bytes)} (lower bound "
                     f"{_bytes(buffers.lower_bound_bytes)}), "
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
    if hlo:
        # Without metadata: the source lines are in ex.hlo() and the explorer; here they would
        # double every line's length.
        lines += ["optimised HLO (with source lines: _xla.hlo()):",
                  ex.module.to_text(metadata=False).rstrip()]
    return "\n".join(lines)


# A kernel of up to this many instructions is listed by name; a bigger one by opcode counts.
LIST_UP_TO = 4


def kernel_line(module, kernel) -> str:
    """`add_fusion.3 (kLoop): tanh.2, multiply.5, add.8`; a big kernel by what it computes,
    counted by opcode, then how much of it moves data or holds constants:
    `row_fusion.9 (row fusion): 50 ops: 6 multiply, 4 add, ..., tanh; 17 data movement, 9
    constant`."""
    from .ir.ops import OPS, Group

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


def show(run: CellRun, cache_info) -> None:
    """What a `%%xla` cell displays: the text summary, then the explorer widget (one output
    that also carries the JSON bundle and a static HTML view, see Explorer._repr_mimebundle_)."""
    from IPython.display import display

    print(summary(run, cache_info, hlo=False))
    display(run.exploration.show())


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.1f} MiB"


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


@magics_class
class XlaMagics(Magics):
    """`%%xla` and `%xla_cache`; `cache` holds the session's compiled cells, `last` the last
    successful run."""

    def __init__(self, shell=None):
        super().__init__(shell)
        self.cache = CellCache()
        self.last: CellRun | None = None

    @magic_arguments()
    @argument("--backend", default="cpu", choices=sorted({*BACKENDS, *DEVICE_BACKENDS, *NOT_BUILT}),
              help="what runs the compiled program: Numba CPU kernels (default), the HLO "
                   "interpreter, or Numba CUDA kernels (a GPU, or NUMBA_ENABLE_CUDASIM=1)")
    @argument("--autocluster", action="store_true",
              help="run what cannot be compiled (np.unique...) eagerly between compiled "
                   "clusters, as TensorFlow's auto-clustering does")
    @argument("--bench", action="store_true",
              help="time eager NumPy against the compiled program, on copies of the inputs")
    @argument("--dump", metavar="DIR", default=None,
              help="write HLO, kernels and buffer reports to DIR, like --xla_dump_to")
    @argument("--quiet", action="store_true", help="print nothing")
    @argument("--debug", action="store_true", help="show the full traceback of an error")
    @cell_magic
    def xla(self, line: str, cell: str):
        """Compile and run a cell of NumPy code through the XLA-style pipeline.

        The cell's inputs are the arrays and numbers it reads, by name or by a path of
        attributes and constant subscripts (`params['w']`); its outputs the names it assigns,
        written back after the compiled run (in-place updates of inputs reach the caller's
        arrays). If anything fails, no name changes. The Exploration is bound to `_xla`, and
        the value of a last line that is an expression is shown as a plain cell shows it."""
        args = parse_argstring(self.xla, line)
        if args.backend not in BACKENDS and args.backend not in DEVICE_BACKENDS:
            raise UsageError(f"--backend {args.backend}: {NOT_BUILT[args.backend]}")
        try:
            run = run_cell(cell, self.shell.user_ns, backend=args.backend,
                           autocluster=args.autocluster, cache=self.cache,
                           check=not args.quiet, bench=args.bench, dump=args.dump,
                           first_line=FIRST_LINE)
        except Exception as e:
            if args.debug:
                raise
            text = "\n".join(short_error(e, cell_names(cell, FIRST_LINE)[1]))
            # IPython (and Jupyter) show what this returns instead of the traceback; the
            # traceback stays on the exception for %debug and %tb.
            e._render_traceback_ = lambda: [text]
            raise
        self.last = run
        if not args.quiet:
            show(run, run.entry.jit.cache_info())
        # A last line that is an expression is shown as a plain cell shows it (Out[n], unless
        # it ends in a semicolon): IPython's display hook shows what a cell magic returns.
        if run.value is not NO_VALUE and not DisplayHook.semicolon_at_end_of_expression(cell):
            return run.value

    @line_magic
    def xla_cache(self, line: str = ""):
        """What `%%xla` has compiled this session: per cell, its backend and the input
        signatures it has executables for, with the hit and miss counts."""
        print(self.cache.report())


def load_ipython_extension(ip) -> None:
    """`%load_ext xla_explorer`."""
    ip.register_magics(XlaMagics(ip))


def unload_ipython_extension(ip) -> None:
    """`%unload_ext xla_explorer`: forget the compiled cells and the magics."""
    magics = ip.magics_manager.registry.pop("XlaMagics", None)
    if magics is not None:
        magics.cache.clear()
    ip.magics_manager.magics["cell"].pop("xla", None)
    ip.magics_manager.magics["line"].pop("xla_cache", None)


