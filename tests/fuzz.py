"""Fuzz xla_explorer against eager NumPy: `make fuzz N=10000 SEED=0`.

    python -m tests.fuzz -n 10000 --seed 0 [--backends interpreter,cpu] [--jobs 2]
                         [--kinds float,int,predicates,...] [--cache DIR] [--out DIR] [--only K]

Draws N random cases, runs each on every backend (`xla_explorer.backends.BACKENDS` unless
--backends says otherwise, so a new backend joins by being registered there), and compares
every result with eager NumPy. Each mismatch or exception is printed as a self-contained NumPy
script that reproduces it (and written to --out DIR if given). The last line is a summary; the
exit status is 1 if anything mismatched or failed.

Kinds (--kinds, default all of them):
- float, int: random op-chain programs, the property tests' own strategies (`programs()`,
  `int_programs()` in tests/programs.py), compared by `xla_explorer.api.compare` under the
  tests' precision rule; an output outside it is judged as `ex.check` judges it, by
  `api.referee` against the program run in float64 (a float16 sum along an outer axis rounds
  once here, after every addition in NumPy: ours is the nearer to the exact sum).
- predicates, transcendental, scalars, aliasing, retype: scenarios (tests/fuzz_cases.py, whose
  docstring says how each is drawn and judged): NaN / inf predicates and their consumers on
  computed values with NaN, inf, zeros, denormals and huge inputs; exp, sinh, log1p, arccosh,
  ... around their overflow and underflow thresholds; Python ints, floats and bools of every
  size through a warm `xe.jit` cache, where NumPy raising must be matched by an error;
  in-place updates of arguments that share memory; and dtype and shape changes between calls
  of one `xe.jit` function and of `xe.explore(...).run`. Each scenario is a short script,
  run as it is printed. A clear error where NumPy answers (an unsupported dtype, an int
  beyond int64, arguments that share memory) is a refusal: counted in the summary (and by
  reason on stderr at the end), but not a failure.
The default mix repeats float, float, float, int, <the next scenario kind>: three fifths float
programs, one fifth integer programs and one twenty-fifth each scenario kind, so
`make fuzz N=10000` runs 400 of each scenario kind. With --kinds the mix keeps its order among
the kinds asked for (`--kinds float,int` is every fourth an integer program).

How cases are drawn. Hypothesis drives each kind's strategy through `@given` with
`max_examples` = that kind's count (a scenario kind: one run per group, its functions in turn,
fuzz_cases.draw_scenarios), `@seed(SEED)`, `derandomize=False`, no example database and only
the generate phase:
- the fuzzer explores exactly the distribution the tests do, including hypothesis's lean
  towards edge cases (size-1 dimensions, 0-d inputs, one step or thirty, the first and last
  pool values), which a uniform random choice would rarely hit;
- no shrinking and no database: every case is drawn once and counts once, and the same
  SEED draws the same cases on every machine (same hypothesis version);
- `strategy.example()` is avoided: it is meant for the REPL, warns, and draws without a seed.
All cases are drawn up front in this process and only then run (in --jobs worker processes),
so what a seed finds does not depend on the number of workers, and --only K reruns case K of
a seed alone. A worker that dies (a segmentation fault in a compiled kernel) is replaced; the
case it was running is run again, one backend per process, and the backend that kills its
process is reported as an error with the case's script. `--jobs 0` runs the cases in this
process instead (for a debugger): there a crash ends the run, and the traceback that
faulthandler prints names a scenario case (`<fuzz program K ...>`).

Compile work. The cpu backend writes each program's kernels to a file named after its
content under $XLA_EXPLORER_CACHE and Numba caches their machine code beside it, so a program
traced to the same HLO again (same ops, shapes and dtypes; input values do not matter) loads
instead of compiling, within a run and, with --cache DIR, across runs. The scenario kinds draw
from small pools of functions, shapes and dtypes for that reason: their values vary freely,
their programs repeat. Without --cache (or $XLA_EXPLORER_CACHE) each run uses a temporary
directory, removed at the end, so a big run leaves nothing in the user's kernel cache. Workers
share it.
"""
from __future__ import annotations

import argparse
import collections
import faulthandler
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file: `python tests/fuzz.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fuzz_cases import STRATEGIES, Scenario, draw_scenarios  # noqa: E402
from tests.programs import (build, build_int, describe, describe_int, int_programs,  # noqa: E402
                            programs, render)
from xla_explorer.api import computed_precision  # noqa: E402

# Every kind, and the default mix: five rounds of three float programs, an integer program and
# one scenario of each kind in turn, so a fifth of a run is scenarios and `--kinds float,int`
# keeps the op-chain programs' old plan (every fourth an integer program).
KINDS = ("float", "int") + tuple(STRATEGIES)
MIX = [k for new in STRATEGIES for k in ("float", "float", "float", "int", new)]


def default_backends() -> list[str]:
    """Every backend xla_explorer offers: the one registry, in xla_explorer.backends."""
    from xla_explorer.backends import BACKENDS, DEVICE_BACKENDS

    return list(BACKENDS) + [name for name in DEVICE_BACKENDS if _device_ready(name)]


def _device_ready(name: str) -> bool:
    """Whether a device backend can run here: cuda on a GPU, or under Numba's simulator when
    NUMBA_ENABLE_CUDASIM=1 (`make fuzz` then runs it too, slowly)."""
    if name != "cuda":
        return False
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return True  # the worker processes inherit it
    from xla_explorer.errors import CompileError
    from xla_explorer.runtime.cuda_device import cuda_module, simulated

    if simulated():  # loaded by a test in this process only: workers would have no GPU
        return False
    try:
        cuda_module()
    except CompileError:
        return False
    return True


@dataclass
class Case:
    index: int
    kind: str  # one of KINDS
    inputs: list
    steps: list
    n_out: int | None  # None: an integer program, one output
    scenario: Scenario | None = None  # the kinds of tests/fuzz_cases.py: a script to run

    def function(self):
        return build_int(self.steps) if self.kind == "int" else build(self.steps, self.n_out)

    def describe(self) -> str:
        if self.scenario is not None:
            return self.scenario.title
        return describe_int(self.steps) if self.kind == "int" else describe(self.steps)

    def precision(self, module):
        return None if self.kind == "int" else computed_precision(module)


@dataclass
class Finding:
    index: int
    backend: str
    status: str  # "mismatch", "error" or "refused" (a clear error where NumPy answers)
    message: str
    snippet: str


@dataclass
class Outcome:
    index: int
    findings: list[Finding] = field(default_factory=list)


def _draw(strategy, count: int, seed: int) -> list:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    drawn = []
    if count <= 0:
        return drawn

    @hseed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], derandomize=False,
              deadline=None, suppress_health_check=list(HealthCheck), print_blob=False)
    @given(strategy)
    def collect(case):
        drawn.append(case)

    collect()
    return drawn[:count]


def plan_of(n: int, kinds=KINDS) -> list[str]:
    """The kind of each of N cases: MIX cycled, keeping the kinds asked for."""
    cycle = [k for k in MIX if k in kinds]
    return [cycle[i % len(cycle)] for i in range(n)]


def draw_cases(n: int, seed: int, kinds=KINDS, ops=None) -> list[Case]:
    """N cases for `seed`, their kinds by `plan_of`; each kind drawn by its own strategy (the
    float programs' steps from the ops named in `ops`, by default all)."""
    plan = plan_of(n, kinds)
    floats = iter(_draw(programs(ops), plan.count("float"), seed))
    ints = iter(_draw(int_programs(), plan.count("int"), seed))
    scenarios = {k: iter(draw_scenarios(k, plan.count(k), seed, _draw)) for k in STRATEGIES}
    cases = []
    for i, kind in enumerate(plan):
        try:
            if kind == "float":
                inputs, steps, n_out = next(floats)
                cases.append(Case(i, kind, inputs, steps, n_out))
            elif kind == "int":
                (inputs, steps), n_out = next(ints), None
                cases.append(Case(i, kind, inputs, steps, n_out))
            else:
                cases.append(Case(i, kind, [], [], None, next(scenarios[kind])))
        except StopIteration:  # hypothesis ran out of distinct programs (tiny spaces only)
            continue
    return cases


def snippet(case: Case, backend: str, seed: int, message: str) -> str:
    header = (f"xla-explorer fuzz: program {case.index} of seed {seed} ({case.kind}), "
              f"backend {backend!r}\nops: {case.describe()}\n{message}")
    if case.scenario is not None:  # the script that ran, with what it found on top
        return case.scenario.script(backend, header)
    try:
        return render(case.inputs, case.steps, case.n_out, backend, integer=case.kind == "int",
                      header=header)
    except Exception as e:  # rendering runs the steps eagerly: it fails where NumPy does
        return "\n".join("# " + line for line in header.splitlines()) + \
            f"\n# (no script: rendering failed with {type(e).__name__}: {e})\n"


def _outputs(value, kind: str) -> tuple:
    return (value,) if kind == "int" else tuple(value)


def run_case(case: Case, backends, seed: int) -> Outcome:
    """One program on every backend, each output compared with eager NumPy."""
    import xla_explorer as xe
    from xla_explorer.api import compare, referee

    outcome = Outcome(case.index)
    if case.scenario is not None:
        for backend in backends:
            name = f"program {case.index} ({case.kind}) on {backend}"  # in crash tracebacks
            by_status: dict[str, list[str]] = {}
            for status, message in case.scenario.run(backend, name):
                by_status.setdefault(status, []).append(message)
            for status, messages in by_status.items():  # one script per status, all calls
                message = "\n".join(messages)
                outcome.findings.append(Finding(case.index, backend, status, message,
                                                snippet(case, backend, seed, message)))
        return outcome
    f = case.function()
    with np.errstate(all="ignore"):
        try:
            want = _outputs(f(*[x.copy() for x in case.inputs]), case.kind)
        except Exception:  # the generator made a program NumPy rejects: a bug here, not there
            message = "eager NumPy failed:\n" + traceback.format_exc(limit=-3)
            outcome.findings.append(Finding(case.index, "numpy", "error", message,
                                            snippet(case, "interpreter", seed, message)))
            return outcome
        for backend in backends:
            try:
                ex = xe.explore(f, *case.inputs, backend=backend)
                got = _outputs(ex.run(*[x.copy() for x in case.inputs]), case.kind)
                lines, ok = [], len(got) == len(want)
                if not ok:
                    lines.append(f"{len(got)} outputs; NumPy gives {len(want)}")
                checks = [compare(f"output {i}", g, w, case.precision(ex.module))
                          for i, (g, w) in enumerate(zip(got, want))]
                if not all(c.ok for c in checks):  # as ex.check judges: the float64 referee
                    checks = referee(f, case.inputs, checks, list(got), list(want))
                for i, (g, w, check) in enumerate(zip(got, want, checks)):
                    ok &= check.ok
                    if not check.ok and (np.shape(g) != np.shape(w)
                                         or np.result_type(g) != np.result_type(w)):
                        lines.append(f"output {i}: got {np.result_type(g)}"
                                     f"{list(np.shape(g))}, NumPy gives {np.result_type(w)}"
                                     f"{list(np.shape(w))}")
                    else:
                        lines.append(str(check))
            except Exception as e:
                message = f"{type(e).__name__}: {e}".strip()
                # A backend's own stated limit (cuda and while loops, which np.gcd makes) is
                # a clear refusal where NumPy answers, not a bug in this program.
                limit = isinstance(e, xe.UnsupportedOpError) and \
                    f"the {backend} backend does not" in str(e)
                outcome.findings.append(Finding(case.index, backend,
                                                "refused" if limit else "error", message,
                                                snippet(case, backend, seed, message)))
                continue
            if not ok:
                message = "\n".join(lines)
                outcome.findings.append(Finding(case.index, backend, "mismatch", message,
                                                snippet(case, backend, seed, message)))
    return outcome


def _traceback_on_crash():
    """A crash in compiled code prints the Python lines that led to it (the case's name)."""
    try:
        faulthandler.enable()
    except (AttributeError, OSError, ValueError):  # stderr is no file (captured): no traceback
        pass


def _init_worker():
    warnings.simplefilter("ignore")  # Numba's performance hints, NumPy's overflow notes
    _traceback_on_crash()


def _run_one(job):
    case, backends, seed = job
    return run_case(case, backends, seed)


def _pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker)


def _alone(job) -> Outcome:
    """A job that was running when a worker died, again with each backend in a process of its
    own: the outcomes of those that survive, an error for the one that kills its process."""
    case, backends, seed = job
    outcome = Outcome(case.index)
    for backend in backends:
        with _pool(1) as alone:
            try:
                found = alone.submit(_run_one, (case, [backend], seed)).result().findings
                outcome.findings += found
            except BrokenProcessPool:
                message = ("crashed: the process running this died (a segmentation fault or "
                           "an abort in compiled code); run the script on its own to see it")
                outcome.findings.append(Finding(case.index, backend, "error", message,
                                                snippet(case, backend, seed, message)))
    return outcome


# Numba never frees a compiled kernel: a worker that ran 3000 cases held about 5 GiB. A new
# pool takes over after this many cases a worker (it loads the kernels cached on disk).
CASES_PER_WORKER = 1000


def _in_workers(jobs_list, workers: int):
    """Each job's outcome, in order, from `workers` processes, in batches of CASES_PER_WORKER
    a worker. A worker that dies breaks the pool and fails every job not yet finished; the
    first of those is rerun alone (which names the crash if it was the one), and the rest go
    to a new pool."""
    pending = list(jobs_list)
    while pending:
        size = CASES_PER_WORKER * workers
        batch, later = pending[:size], pending[size:]
        pool = _pool(workers)
        try:
            futures = [pool.submit(_run_one, job) for job in batch]
            rest = []
            for k, (job, future) in enumerate(zip(batch, futures)):
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    outcome, rest = _alone(job), batch[k + 1:]
                yield outcome
                if rest:
                    break
            pending = rest + later
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def fuzz(n: int, seed: int = 0, backends=None, jobs: int = 1, kinds=KINDS,
         cache: str | None = None, out: str | None = None, only: int | None = None,
         stream=None, progress=None) -> int:
    """Run the fuzzer; print findings and the summary line to `stream`; 0 when all agree.
    `jobs` worker processes run the cases (a crashed one is reported and the run goes on);
    `jobs=0` runs them in this process."""
    stream = stream or sys.stdout
    progress = progress or sys.stderr
    backends = list(backends or default_backends())
    start = time.perf_counter()
    cases = draw_cases(n, seed, kinds)
    if only is not None:
        cases = [c for c in cases if c.index == only]
    drawn = time.perf_counter() - start
    print(f"[fuzz] {len(cases)} programs drawn (seed {seed}) in {drawn:.1f} s; backends "
          f"{', '.join(backends)}; {jobs} job(s)", file=progress, flush=True)

    temporary = None
    old_cache = os.environ.get("XLA_EXPLORER_CACHE")
    if cache:
        os.environ["XLA_EXPLORER_CACHE"] = cache
    elif not old_cache:
        temporary = tempfile.mkdtemp(prefix="xla-explorer-fuzz-")
        os.environ["XLA_EXPLORER_CACHE"] = temporary
    out_dir = Path(out) if out else None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)

    counts = {b: {"mismatch": 0, "error": 0, "refused": 0} for b in backends}
    refusals: collections.Counter = collections.Counter()  # why, numbers blanked out
    every = max(1, min(100, len(cases) // 20))
    last_report = time.perf_counter()
    done = 0
    jobs_list = [(c, backends, seed) for c in cases]
    in_workers = jobs >= 1  # even one: a crash in compiled code must not end the run
    results = _in_workers(jobs_list, jobs) if in_workers else (_run_one(j) for j in jobs_list)
    try:
        with warnings.catch_warnings():
            if not in_workers:
                warnings.simplefilter("ignore")
            for outcome in results:
                done += 1
                for finding in outcome.findings:
                    counts.setdefault(finding.backend, {"mismatch": 0, "error": 0, "refused": 0})
                    counts[finding.backend][finding.status] += 1
                    if finding.status == "refused":  # acceptable: counted by reason, not shown
                        for line in finding.message.splitlines():
                            if line.strip().startswith("compiled: raised "):
                                reason = line.strip()[len("compiled: raised "):]
                                refusals[re.sub(r"-?\d{3,}", "#", reason)[:110]] += 1
                    else:
                        print(f"\n{'=' * 30} {finding.status}: program {finding.index}, "
                              f"backend {finding.backend} {'=' * 30}\n{finding.snippet}",
                              file=stream, flush=True)
                    if out_dir:
                        (out_dir / f"{finding.status}_{finding.index}_{finding.backend}.py"
                         ).write_text(finding.snippet)  # one per case, backend and status
                now = time.perf_counter()
                if done % every == 0 or now - last_report > 30 or done == len(cases):
                    last_report = now
                    found = sum(c["mismatch"] + c["error"] for c in counts.values())
                    print(f"[fuzz] {done}/{len(cases)} programs, {now - start:.1f} s, "
                          f"{found} finding(s)", file=progress, flush=True)
    finally:
        results.close()  # the workers stop before their kernel cache goes
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
        if old_cache is None:
            os.environ.pop("XLA_EXPLORER_CACHE", None)
        else:
            os.environ["XLA_EXPLORER_CACHE"] = old_cache

    seconds = time.perf_counter() - start
    if refusals:
        print("[fuzz] refused calls (a clear error where NumPy answers: counted, not failed), "
              "by reason:", file=progress)
        for reason, count in refusals.most_common(12):
            print(f"[fuzz] {count:6d}  {reason}", file=progress)
    per_backend = "; ".join(
        f"{b}: {c['mismatch']} mismatches, {c['error']} errors"
        + (f", {c['refused']} refused" if c["refused"] else "") for b, c in counts.items())
    kinds_count = ", ".join(f"{sum(c.kind == k for c in cases)} {k}" for k in kinds
                            if any(c.kind == k for c in cases))
    print(f"fuzz: {done} programs ({kinds_count}), seed {seed}; {per_backend}; "
          f"{seconds:.1f} s", file=stream, flush=True)
    failed = any(c["mismatch"] + c["error"] for c in counts.values())
    return 1 if failed or done < len(cases) else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--n", type=int, default=200, help="how many programs (200)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (0)")
    parser.add_argument("--backends", default=None,
                        help="comma-separated backends (default: every registered one)")
    parser.add_argument("--jobs", "-j", type=int, default=1,
                        help="worker processes (1); 0 runs the cases in this process, for a "
                             "debugger (a crash in compiled code then ends the run)")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"comma-separated kinds, of {', '.join(KINDS)} (all)")
    parser.add_argument("--cache", default=None,
                        help="kernel cache directory to use and keep (default: "
                             "$XLA_EXPLORER_CACHE, else a temporary one per run)")
    parser.add_argument("--out", default=None, help="also write each finding's script here")
    parser.add_argument("--only", type=int, default=None,
                        help="run only program K of the N drawn for the seed")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else None
    unknown = sorted(set(backends or ()) - set(default_backends()))
    if unknown:
        parser.error(f"no backend {', '.join(unknown)}; xla_explorer offers "
                     f"{', '.join(default_backends())}")
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    if not kinds or set(kinds) - set(KINDS):
        parser.error(f"--kinds takes some of {', '.join(KINDS)}")
    _traceback_on_crash()  # with --jobs 0 a crash ends the run: this names the program
    return fuzz(args.n, args.seed, backends, args.jobs, kinds, args.cache, args.out, args.only)


if __name__ == "__main__":
    sys.exit(main())
