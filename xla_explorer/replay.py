"""Replaying a dump: XLA's `run_hlo_module` and `hlo-opt` for this compiler.

`replay(path)` runs a dumped module (a snapshot's saved arguments, or inputs generated from
its parameters) on a backend, and the unoptimised module on the reference interpreter, and
compares them output by output with the tolerances `Exploration.check` uses. With
`bisect=True` it also finds the first pass after which the module computes something else:
the pipeline's module after each pass, run on the interpreter (cheap: nothing is compiled),
against the reference. `pipeline_passes` picks passes by name for `opt` (hlo-opt's job).
What a dump holds and why reading one is safe: `snapshot.py` and docs/replay.md.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .api.checking import CheckResult, OutputCheck, computed_precision, judge, tolerance
from .backends import Backend, PassOptions, get_backend
from .errors import DumpError, XlaExplorerError
from .ir.library import runs_eagerly
from .ir.module import Module
from .passes.base import Pass, Pipeline
from .runtime.reference import ShapeChanged, run_module
from .snapshot import Snapshot, load

REFERENCES = ("interpreter",)


@dataclass(frozen=True)
class BisectStep:
    """The module after one pass, run on the interpreter against the reference: `check` is
    None where the pass itself failed or its module could not run (`error` says why)."""

    name: str
    changed: bool
    check: CheckResult | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.check is not None and self.check.ok


@dataclass(frozen=True)
class Bisection:
    """Every pass of the pipeline, in order, and whether its module still agrees."""

    steps: tuple[BisectStep, ...]

    @property
    def first_bad(self) -> str | None:
        """The first pass after which the result differs from the reference; None if every
        pass's module agrees (a difference is then the backend's code, not a pass's)."""
        return next((s.name for s in self.steps if not s.ok), None)

    def __str__(self) -> str:
        lines = [f"{'after pass':<24} {'changed':<8} {'max abs error':<14} agrees"]
        for s in self.steps:
            if s.check is None:
                lines.append(f"{s.name:<24} {'':<8} {'-':<14} no: {s.error}")
                continue
            worst = max((o.max_abs_error for o in s.check.outputs), default=0.0)
            lines.append(f"{s.name:<24} {'yes' if s.changed else 'no':<8} {worst:<14.3g} "
                         f"{'yes' if s.ok else 'NO'}")
        bad = self.first_bad
        lines.append(f"first pass after which the result differs: {bad}" if bad else
                     "every pass's module agrees on the interpreter: a difference is in the "
                     "backend's code, not in a pass")
        return "\n".join(lines)


@dataclass(frozen=True)
class ReplayResult:
    """What `replay` found: per output, the largest errors and whether they are within the
    tolerance of its type; true when every output agrees."""

    source: str  # the module file replayed
    module: str
    backend: str
    reference: str
    inputs: str  # where the inputs came from
    seed: int | None  # the generated inputs' seed; None for saved ones
    outputs: tuple[OutputCheck, ...]
    values: tuple  # the backend's outputs
    expected: tuple  # the reference's
    # The backend's outputs against the results saved with the dump (what the unoptimised
    # module computed when dumped): a module edited since, or another NumPy, shows here.
    saved: tuple[OutputCheck, ...] = ()
    bisection: Bisection | None = None
    notes: tuple[str, ...] = ()
    precision: np.dtype | None = None  # the least precise float type the module computes in

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs + self.saved)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        reference = f"the {self.reference} backend on the unoptimised module"
        lines = [f"replay {self.source}", f"module {self.module} on {self.backend}, "
                 f"against {reference}", f"inputs: {self.inputs}", *self.notes, "",
                 *_table(self.outputs, self.precision)]
        if self.saved:
            lines += ["", "against the results saved with the dump:",
                      *_table(self.saved, self.precision)]
        bad = sum(not o.ok for o in self.outputs + self.saved)
        lines += ["", "all outputs agree" if not bad else
                  f"DIFFERS: {bad} comparison{'s' if bad > 1 else ''} outside tolerance"]
        if all(o.ok for o in self.outputs) and bad:
            lines.append("The backend agrees with the reference, and both differ from the "
                         "saved results: the module text (or NumPy) changed since the dump.")
        if self.bisection is not None:
            lines += ["", str(self.bisection)]
        return "\n".join(lines)


def replay(path, backend: str = "cpu", reference: str = "interpreter", *,
           bisect: bool = False, module: str | None = None, seed: int = 0,
           passes: Sequence[Pass] | None = None) -> ReplayResult:
    """Run the module of a dump (a directory: its last snapshot's, or `module`'s; a manifest;
    or one HLO text file) on `backend`, and compare it with `reference`, the unoptimised
    module run op by op by the interpreter. Inputs are the snapshot's saved arguments, or
    where there are none generated from the parameters with `seed`. `passes` replaces the
    backend's pipeline (a pass of your own inserted to try it); `bisect` names the first of
    them after which the result differs."""
    if reference not in REFERENCES:
        raise ValueError(f"reference {reference!r}: the reference is the interpreter, which "
                         "runs the unoptimised module op by op; choose one of "
                         f"{REFERENCES}")
    snap = _load(path, module)
    target = get_backend(backend)
    args, inputs, used_seed = inputs_of(snap, seed)
    autocluster = needs_autocluster(snap, target)
    notes = [f"note: {snap.note}"] if snap.note else []
    pipeline = list(passes) if passes is not None else \
        target.passes(PassOptions(autocluster=autocluster))
    # Said only for the dump's own backend: another backend's pipeline differs by design.
    if snap.compiled_for == target.name and tuple(p.name for p in pipeline) != snap.passes:
        notes.append(f"note: the dump's {snap.compiled_for} run had the passes "
                     f"{', '.join(snap.passes)}; this replay runs "
                     f"{', '.join(p.name for p in pipeline) or 'none'}")
    from .api.exploration import Exploration

    ex = Exploration.from_module(snap.module, target.name, args, passes=pipeline,
                                 autocluster=autocluster)
    try:
        got = tuple(ex.executable(*_copies(args)))
        want = tuple(run_module(snap.module, _copies(args)))
    except ShapeChanged as changed:
        if snap.arguments is not None:
            raise
        raise DumpError(snap.module_file, f"on the generated inputs, {changed}: the module "
                                          "was traced for values these are not",
                        "Replay a dump with its saved arguments (ex.dump(DIR, "
                        "snapshots=True)).") from None
    precision = computed_precision(ex.module)
    checks = judge(None, args, list(got), list(want), precision)
    saved = () if snap.results is None else \
        tuple(_against(list(got), list(snap.results), precision))
    bisection = None
    if bisect:
        steps = target.passes(PassOptions(autocluster=autocluster)) if passes is None \
            else list(passes)
        bisection = bisect_passes(snap.module, steps, args, want, precision)
    return ReplayResult(str(snap.module_file), snap.module.name, target.name, reference,
                        inputs, used_seed, tuple(checks), got, want, saved, bisection,
                        tuple(notes), precision)


def _table(checks: Sequence[OutputCheck], precision) -> list[str]:
    lines = [f"{'output':<10} {'dtype':<8} {'shape':<14} {'max abs error':<14} "
             f"{'max rel error':<14} within tolerance"]
    for o in checks:
        # The tolerance `compare` applied: a float output's type's, or that of a less
        # precise type it was computed through.
        loosest = o.dtype
        if precision is not None and o.dtype.kind == "f":
            loosest = max(o.dtype, np.dtype(precision), key=lambda d: tolerance(d)[0])
        rtol, atol = tolerance(loosest)
        within = "yes" if o.ok else f"NO (rtol {rtol:g}, atol {atol:g})"
        lines.append(f"{o.name:<10} {str(o.dtype):<8} {str(list(o.shape)):<14} "
                     f"{o.max_abs_error:<14.3g} {o.max_rel_error:<14.3g} {within}")
    return lines


def _against(got: list, want: list, precision) -> list[OutputCheck]:
    """Outputs against the saved results; an output more or fewer than saved is a
    difference too (a module edited to return another tuple)."""
    checks = judge(None, (), got, want, precision)
    for i in range(len(checks), max(len(got), len(want))):
        value = np.asarray(got[i] if i < len(got) else want[i])
        checks.append(OutputCheck(f"output {i}", value.dtype, value.shape, np.inf, np.inf,
                                  False, "missing on one side"))
    return checks


def inputs_of(snap: Snapshot, seed: int) -> tuple[tuple, str, int | None]:
    """The snapshot's saved arguments, or generated ones: (arguments, where they come from,
    the seed or None)."""
    from .api.hlo_input import inputs_from_seed

    if snap.arguments is not None:
        return snap.arguments, f"saved, {snap.arguments_file.name}", None
    # The inputs xe.explore_hlo makes from the same seed.
    return (tuple(inputs_from_seed(snap.module, seed)),
            f"generated from the parameters, seed {seed}", seed)


def needs_autocluster(snap: Snapshot, target: Backend) -> bool:
    """Whether the module compiles as clusters around its eager ops: as the dump was
    compiled when its backend is this one, and otherwise wherever it has eager ops the
    target cannot run itself (the interpreter runs them)."""
    if snap.autocluster is not None and snap.compiled_for == target.name:
        return snap.autocluster
    return has_eager_ops(snap.module) and not target.runs_eager_ops


def has_eager_ops(module: Module) -> bool:
    return any(runs_eagerly(i) for i in module.entry.instructions)


def bisect_passes(module: Module, passes: Sequence[Pass], args, want, precision) -> Bisection:
    """Run the pipeline one pass longer each time and each resulting module on the
    interpreter, against `want`. The pipeline runs once: each stage it records is what the
    pipeline cut after that pass gives, as passes make new modules and never change the one
    they were given."""
    pipeline = Pipeline(list(passes))
    failure = None
    try:
        pipeline.run(module)
    except XlaExplorerError as err:  # a pass that fails (its module does not verify)
        failure = BisectStep(passes[len(pipeline.stages) - 1].name, True, None,
                             f"the pass failed: {err}")
    steps = []
    for stage in pipeline.stages[1:]:
        try:
            got = run_module(stage.module, _copies(args))
        except XlaExplorerError as err:
            steps.append(BisectStep(stage.name, stage.changed, None, f"its module fails: {err}"))
            continue
        check = CheckResult(tuple(judge(None, args, got, list(want), precision)))
        steps.append(BisectStep(stage.name, stage.changed, check))
    return Bisection(tuple(steps) + ((failure,) if failure else ()))


def pipeline_passes(backend: str | Backend = "cpu", names: Sequence[str] | None = None,
                    until: str | None = None, autocluster: bool = False) -> list[Pass]:
    """Passes of `backend`'s pipeline: those `names` names, in that order; or every pass up to
    and including `until`; or all. An unknown name is a ValueError listing the pipeline."""
    target = get_backend(backend) if isinstance(backend, str) else backend
    every = target.passes(PassOptions(autocluster=autocluster))
    known = [p.name for p in every]

    def index(name: str) -> int:
        if name not in known:
            raise ValueError(f"no pass {name!r} in the {target.name} backend's pipeline; its "
                             f"passes: {', '.join(known)}")
        return known.index(name)

    if names is not None and until is not None:
        raise ValueError("give the passes by name or a pass to run until, not both")
    if until is not None:
        return every[: index(until) + 1]
    if names is not None:
        fresh = []
        for name in names:
            # Each use its own pass object: a pass named twice runs twice, from scratch.
            fresh.append(target.passes(PassOptions(autocluster=autocluster))[index(name)])
        return fresh
    return every


def optimize(path, backend: str = "cpu", names: Sequence[str] | None = None,
             until: str | None = None, module: str | None = None) -> Module:
    """The module at `path` (an HLO text file, a manifest, a dump directory) after the
    chosen passes of `backend`'s pipeline (hlo-opt's job)."""
    snap = _load(path, module)
    target = get_backend(backend)
    autocluster = has_eager_ops(snap.module) and not target.runs_eager_ops
    return Pipeline(pipeline_passes(target, names, until, autocluster)).run(snap.module)


def explore_file(path, output, backend: str = "cpu", module: str | None = None,
                 seed: int = 0, bench: bool = False) -> Path:
    """The explorer of the module at `path`, compiled for `backend` (on its saved or
    generated inputs), as one HTML file at `output`."""
    from .api.exploration import Exploration
    from .viz.page import bundle_js

    bundle_js()  # BundleNotBuilt before minutes of compiling, not after
    snap = _load(path, module)
    target = get_backend(backend)
    args, _, _ = inputs_of(snap, seed)
    ex = Exploration.from_module(snap.module, target.name, args,
                                 autocluster=needs_autocluster(snap, target))
    if bench:
        ex.bench()
    output = Path(output)
    ex.save_html(output)
    return output


def _load(path, module: str | None) -> Snapshot:
    """The snapshot, its module's `call`s inlined as xe.explore_hlo inlines them (JAX wraps
    each jax.numpy function it lowers in one)."""
    from .api.hlo_input import inline_calls

    snap = load(path, module)
    return dataclasses.replace(snap, module=inline_calls(snap.module))


def _copies(args) -> list:
    return [copy.deepcopy(np.asarray(a)) for a in args]
