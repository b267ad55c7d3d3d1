"""One `%%xla` run: analyse, compile (or find compiled), run, check, bench and dump a cell,
then write its results into the namespace, only once all of that succeeded.

The compiled program runs once per cell (the bench aside): the check judges the outputs of
that run, the ones written back, against an eager NumPy run on copies of the inputs. What the
cell prints is printed once, by an eager NumPy run of the cell: the trace's prints (of
Tracers) and those of the check's and the bench's runs are dropped.
"""
from __future__ import annotations

import contextlib
import copy
import io
import re
from dataclasses import dataclass

import numpy as np

from .. import tree
from ..api import CheckResult, compare, computed_precision, jit, referee
from ..backends import get_backend
from ..errors import MismatchError
from ..trace.updates import refuse_updates
from .cache import CachedCell, CellCache, TraceFacts
from .plan import CellPlan, analyse
from .values import LAST, NO_VALUE, CellError, is_chunked

FIRST_LINE = 2  # the cell's first line, under the %%xla line: errors count lines as the notebook


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
    exported: object = None  # the ExportedModule `--export NAME` wrote, if asked
    lazy: bool = False  # the outputs are dask arrays, bound uncomputed and not checked
    # Run by the interpreter: its kernels compile at `tier.compile()` (or in a thread,
    # `tier.start()`).
    tier: object = None


def run_cell(cell: str, namespace: dict, *, backend: str = "cpu", autocluster: bool = False,
             cache: CellCache, check: bool = True, bench: bool = False, dump: str | None = None,
             dump_snapshots: bool = False, first_line: int = FIRST_LINE,
             export: str | None = None, tiered: bool = False) -> CellRun:
    """Analyse, compile (or find compiled), run, check, bench and dump a cell, then write its
    results into `namespace`: only once all of that succeeded. The analysis is done on every
    run: it reads the inputs' current values, and decides whether the compiled cell is still
    the one to run.

    With `tiered`, a program not compiled yet is generated (its kernels' source is there to
    see) and run by the interpreter (what the backend's passes made, op by op in NumPy);
    `CellRun.tier.compile()` then compiles its kernels (`start()`: in a thread;
    `JitFunction.tier`), and the runs after that take them once they are ready. The bench,
    a dump, an export and auto-clustering need the kernels: with any of them the cell
    waits for them, as does a backend whose kernels cannot compile in the background
    (`Backend.tiers`: cuda's, and those that generate no code: `JitFunction.tier`)."""
    fresh = analyse(cell, namespace, first_line=first_line)
    lazy = get_backend(backend).lazy
    _refuse_chunked(fresh, backend, lazy)
    entry = cache.lookup(fresh, namespace, backend, autocluster)
    plan = entry.plan
    args = list(fresh.values)
    tiered = tiered and not (bench or dump or export or autocluster)
    ex, hit, facts, tier = _explore(entry, cache, args, tiered)
    updated = tuple(p for _, p in ex.traced.aliases)
    _check_updatable(fresh, args, updated)
    # In-place updates land in copies; the caller's arrays take them at the end.
    run_args = [copy.deepcopy(a) if i in updated else a for i, a in enumerate(args)]
    runner = tier.answer if tier is not None else ex  # the interpreter, while compiling
    with _silenced():  # an auto-clustered run may trace again
        result = runner.run(*run_args)
    bindings = fresh.bindings(result, args, facts.links)
    value = bindings.pop(LAST, NO_VALUE)
    done = CellRun(plan, entry, ex, hit, bindings, tuple(plan.inputs[p] for p in updated),
                   facts.links, value, lazy=lazy, tier=tier)
    with _silenced():  # the check's and the bench's eager runs print what the cell prints
        if check and not lazy:  # lazy outputs are computed when the user asks, not here
            done.check = _judge(ex, args, result, run_args)
            if not done.check.ok:
                raise MismatchError(
                    "the compiled results differ from eager NumPy's, so no name was "
                    f"changed:\n{done.check}\n"
                    + (_FROZEN if hit and _stale(entry, cache, args) else _UNSPECIFIED))
        if bench:
            done.bench = ex.bench(*_copies(args))
    if dump:
        done.dumped = _dump(ex, dump, dump_snapshots, args)
    if export:
        done.exported = _export(ex, export, plan)
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


_UNSPECIFIED = (
    "A difference NumPy leaves unspecified (the order of equal keys in np.argsort without "
    "kind='stable', an index out of range) is listed in docs/numpy-coverage.md; --quiet skips "
    "the check and writes the compiled results.")
_FROZEN = (
    "The program was compiled on an earlier run of this cell; traced again now, it agrees "
    "with NumPy. So a function or method the cell calls reads something besides its "
    "arguments that the trace froze into the program and that has changed since, where the "
    "cell does not look for changes (an attribute reached through a module or a property). "
    "The stale program is dropped: run the cell again to compile it anew, or read the value "
    "in the cell itself (m.w, cfg.scale) and pass it on, so that each run reads it afresh.")


def _refuse_chunked(plan: CellPlan, backend: str, lazy: bool) -> None:
    """A dask array is taken by --backend dask only (another backend would compute it), and
    never changed in place: dask arrays are immutable."""
    for name, value in zip(plan.inputs, plan.values):
        if not is_chunked(value):
            continue
        line = plan.update_line(name)
        if lazy and line is not None:
            raise CellError(
                f"the cell changes {name}, a dask array, in place; dask arrays are immutable",
                op=name, source_file=plan.filename, source_line=line,
                hint=f"Assign a new array instead ({name} = {name} + 1, or with np.where "
                     "for a part of it): the name is then bound to the new lazy array.")
        if not lazy:
            root = re.split(r"[.\[]", name)[0]
            line = next((n for n, text in enumerate(plan.source.splitlines(), plan.first_line)
                         if re.search(rf"\b{root}\b", text)), plan.first_line)
            raise CellError(
                f"{name} is a dask array; --backend {backend} takes NumPy arrays, and making "
                f"it one would compute it", op=name, source_file=plan.filename,
                source_line=line,
                hint=f"Run the cell with --backend dask (its kernels per chunk, its outputs "
                     f"dask arrays), or compute it first: {name} = {name}.compute().")


def _stale(entry: CachedCell, cache: CellCache, args) -> bool:
    """Whether the cell traced and compiled afresh agrees with NumPy where the cached program
    did not: the difference is state frozen at the earlier trace. The stale entry is then
    dropped."""
    fresh = jit(entry.plan.function, backend=entry.backend, autocluster=entry.autocluster)
    try:
        with _silenced():
            ex = fresh.explore(*_copies(args))
            updated = {p for _, p in ex.traced.aliases}
            run_args = [copy.deepcopy(a) if i in updated else a for i, a in enumerate(args)]
            ok = _judge(ex, args, ex.run(*run_args), run_args).ok
    except Exception:  # the original mismatch is the error to show
        return False
    if ok:
        cache.drop(entry)
    return ok


def _explore(entry: CachedCell, cache: CellCache, args, tiered: bool = False):
    """The Exploration for these arguments (traced and compiled on a miss), whether it was a
    cache hit, what its trace found, and with `tiered`, the Tier whose interpreter runs it
    while the kernels compile (None once they are ready). What the trace prints is Tracers:
    it is dropped, and shown by an eager run instead if the trace fails."""
    fn, plan = entry.jit, entry.plan
    hits = fn.cache_info().hits
    printed = io.StringIO()
    tier = None
    try:
        with contextlib.redirect_stdout(printed):
            tier = fn.tier(*args, generate=True) if tiered else None
            ex = tier.exploration if tier is not None else fn.explore(*args)
    except Exception:
        cache.forget_failed(entry)
        if printed.getvalue():
            with contextlib.suppress(Exception):  # the trace's error is the one to show
                plan.function(*_copies(args))
        raise
    # By trace: the interpreter's Exploration and the compiled one share theirs.
    facts = entry.traces.setdefault(id(ex.traced), TraceFacts(
        dict(plan.links), bool(printed.getvalue()), plan.last_value is not NO_VALUE))
    return ex, fn.cache_info().hits > hits, facts, tier


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
    sites = {p: (plan.filename, plan.update_line(plan.inputs[p])) for p in updated}
    refuse_updates(args, sites, plan.inputs, error=CellError, advice=_advice)


def _advice(name: str, other: str | None) -> str:
    if other is None:
        return f"Take a copy first: {name} = {name}.copy()."
    return f"Use one name in the cell, or copy: {other} = {other}.copy()."


def _judge(ex, args, result, run_args) -> CheckResult:
    """The compiled run the user gets (`result`, and the updated inputs in `run_args`) against
    eager NumPy on copies of the same inputs, as `Exploration.check` judges, without running
    the compiled program again."""
    eager_args = _copies(args)
    want = tree.leaves(ex.function(*eager_args))
    got = tree.leaves(result)
    names = _leaf_names(result)
    precision = computed_precision(ex.module)
    checks = [compare(names[i] if i < len(names) else f"output {i}", g, w, precision)
              for i, (g, w) in enumerate(zip(got, want))]
    if not all(c.ok for c in checks):
        checks = referee(ex.function, args, checks, got, want)
    for _, p in ex.traced.aliases:
        checks.append(compare(f"{ex.traced.arg_names[p]} (in place)", run_args[p],
                              eager_args[p]))
    return CheckResult(tuple(checks))


def _leaf_names(result: dict) -> list[str]:
    """A name for each value the program returns, in its order: `z`, `pair[0]`, `d['a']`."""
    _, treedef = tree.flatten(result)
    return [("the last line" if path[0] == LAST else path[0])
            + "".join(f"[{key!r}]" for key in path[1:])
            for path, part in tree.walk(treedef) if part[0] == tree.LEAF]


def _export(ex, name: str, plan: CellPlan):
    """ex.export(name) into the working directory, `run`'s parameters named after the
    cell's inputs (`params['w']` as params_w) where each input is one parameter."""
    params = len(ex.module.entry.parameters)
    names = list(plan.inputs) if len(plan.inputs) == params else None
    return ex.export(name, ".", names)


def _dump(ex, directory: str, snapshots: bool, args) -> tuple[str, ...]:
    """ex.dump(directory): the paths of the files written. A snapshot saves this run's
    arguments (a cached exploration keeps those of the run that compiled it), as they were
    before any in-place update."""
    return tuple(str(p) for p in ex.dump(directory, snapshots=snapshots, args=args))
