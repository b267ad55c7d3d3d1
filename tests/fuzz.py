"""Fuzz xla_explorer against eager NumPy: `make fuzz N=10000 SEED=0`.

    python -m tests.fuzz -n 10000 --seed 0 [--backends interpreter,cpu] [--jobs 2]
                         [--kinds float,int] [--cache DIR] [--out DIR] [--only K]

Draws N random programs (the same strategies the property tests use, tests/programs.py), runs
each on every backend (`xla_explorer.api.BACKENDS` unless --backends says otherwise, so a new
backend joins by being listed there), and compares every output with eager NumPy by
`xla_explorer.api.compare` under the tests' precision rule. Each mismatch or exception is
printed as a self-contained NumPy script that reproduces it (and written to --out DIR if
given). The last line is a summary; the exit status is 1 if anything mismatched or failed.

How programs are drawn. Hypothesis drives the tests' own strategies (`programs()`,
`int_programs()`) through `@given` with `max_examples=N`, `@seed(SEED)`, `derandomize=False`,
no example database and only the generate phase:
- the fuzzer explores exactly the distribution the tests do, including hypothesis's lean
  towards edge cases (size-1 dimensions, 0-d inputs, one step or thirty, the first and last
  pool values), which a uniform random choice would rarely hit;
- no shrinking and no database: every program is drawn once and counts once, and the same
  SEED draws the same programs on every machine (same hypothesis version);
- `strategy.example()` is avoided: it is meant for the REPL, warns, and draws without a seed.
All programs are drawn up front in this process and only then run (in --jobs worker
processes), so what a seed finds does not depend on the number of workers, and --only K reruns
program K of a seed alone. A quarter of the programs are integer programs when --kinds has
both (every fourth one).

Compile work. The cpu backend writes each program's kernels to a file named after its
content under $XLA_EXPLORER_CACHE and Numba caches their machine code beside it, so a program
traced to the same HLO again (same ops, shapes and dtypes; input values do not matter) loads
instead of compiling, within a run and, with --cache DIR, across runs. Without --cache (or
$XLA_EXPLORER_CACHE) each run uses a temporary directory, removed at the end, so a big run
leaves nothing in the user's kernel cache. Workers share it.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file: `python tests/fuzz.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.programs import (build, build_int, describe, describe_int, int_programs,  # noqa: E402
                            precision_of, programs, render)


def default_backends() -> list[str]:
    """Every backend xla_explorer offers: the one list, in xla_explorer.api."""
    from xla_explorer import api

    return list(api.BACKENDS)


@dataclass
class Case:
    index: int
    kind: str  # "float" or "int"
    inputs: list
    steps: list
    n_out: int | None  # None: an integer program, one output

    def function(self):
        return build_int(self.steps) if self.kind == "int" else build(self.steps, self.n_out)

    def describe(self) -> str:
        return describe_int(self.steps) if self.kind == "int" else describe(self.steps)

    def precision(self):
        return None if self.kind == "int" else precision_of(self.inputs)


@dataclass
class Finding:
    index: int
    backend: str
    status: str  # "mismatch" or "error"
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


def draw_cases(n: int, seed: int, kinds=("float", "int")) -> list[Case]:
    """N programs for `seed`: every fourth an integer program when both kinds are asked for."""
    if set(kinds) == {"float", "int"}:
        plan = ["int" if i % 4 == 3 else "float" for i in range(n)]
    else:
        plan = [kinds[0]] * n
    floats = iter(_draw(programs(), plan.count("float"), seed))
    ints = iter(_draw(int_programs(), plan.count("int"), seed))
    cases = []
    for i, kind in enumerate(plan):
        try:
            if kind == "float":
                inputs, steps, n_out = next(floats)
            else:
                (inputs, steps), n_out = next(ints), None
        except StopIteration:  # hypothesis ran out of distinct programs (tiny spaces only)
            continue
        cases.append(Case(i, kind, inputs, steps, n_out))
    return cases


def snippet(case: Case, backend: str, seed: int, message: str) -> str:
    header = (f"xla-explorer fuzz: program {case.index} of seed {seed} ({case.kind}), "
              f"backend {backend!r}\nops: {case.describe()}\n{message}")
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
    from xla_explorer.api import compare

    outcome = Outcome(case.index)
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
                for i, (g, w) in enumerate(zip(got, want)):
                    check = compare(f"output {i}", g, w, case.precision())
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
                outcome.findings.append(Finding(case.index, backend, "error", message,
                                                snippet(case, backend, seed, message)))
                continue
            if not ok:
                message = "\n".join(lines)
                outcome.findings.append(Finding(case.index, backend, "mismatch", message,
                                                snippet(case, backend, seed, message)))
    return outcome


def _init_worker():
    warnings.simplefilter("ignore")  # Numba's performance hints, NumPy's overflow notes


def _run_one(job):
    case, backends, seed = job
    return run_case(case, backends, seed)


def fuzz(n: int, seed: int = 0, backends=None, jobs: int = 1, kinds=("float", "int"),
         cache: str | None = None, out: str | None = None, only: int | None = None,
         stream=None, progress=None) -> int:
    """Run the fuzzer; print findings and the summary line to `stream`; 0 when all agree."""
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

    counts = {b: {"mismatch": 0, "error": 0} for b in backends}
    every = max(1, min(100, len(cases) // 20))
    last_report = time.perf_counter()
    done = 0
    jobs_list = [(c, backends, seed) for c in cases]
    pool = None
    try:
        if jobs > 1 and len(cases) > 1:
            pool = multiprocessing.get_context("spawn").Pool(jobs, initializer=_init_worker)
            results = pool.imap(_run_one, jobs_list, chunksize=1)
        else:
            results = (_run_one(j) for j in jobs_list)
        with warnings.catch_warnings():
            if pool is None:
                _init_worker()
            for outcome in results:
                done += 1
                for finding in outcome.findings:
                    counts.setdefault(finding.backend, {"mismatch": 0, "error": 0})
                    counts[finding.backend][finding.status] += 1
                    print(f"\n{'=' * 30} {finding.status}: program {finding.index}, backend "
                          f"{finding.backend} {'=' * 30}\n{finding.snippet}", file=stream,
                          flush=True)
                    if out_dir:
                        (out_dir / f"{finding.status}_{finding.index}_{finding.backend}.py"
                         ).write_text(finding.snippet)
                now = time.perf_counter()
                if done % every == 0 or now - last_report > 30 or done == len(cases):
                    last_report = now
                    found = sum(sum(c.values()) for c in counts.values())
                    print(f"[fuzz] {done}/{len(cases)} programs, {now - start:.1f} s, "
                          f"{found} finding(s)", file=progress, flush=True)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
        if old_cache is None:
            os.environ.pop("XLA_EXPLORER_CACHE", None)
        else:
            os.environ["XLA_EXPLORER_CACHE"] = old_cache

    seconds = time.perf_counter() - start
    per_backend = "; ".join(f"{b}: {c['mismatch']} mismatches, {c['error']} errors"
                            for b, c in counts.items())
    kinds_count = ", ".join(f"{sum(c.kind == k for c in cases)} {k}" for k in kinds)
    print(f"fuzz: {done} programs ({kinds_count}), seed {seed}; {per_backend}; "
          f"{seconds:.1f} s", file=stream, flush=True)
    return 1 if any(sum(c.values()) for c in counts.values()) or done < len(cases) else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--n", type=int, default=200, help="how many programs (200)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (0)")
    parser.add_argument("--backends", default=None,
                        help="comma-separated backends (default: all of xla_explorer.api.BACKENDS)")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="worker processes (1)")
    parser.add_argument("--kinds", default="float,int",
                        help="program kinds: float, int or both (float,int)")
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
    if not kinds or set(kinds) - {"float", "int"}:
        parser.error("--kinds takes float, int or float,int")
    return fuzz(args.n, args.seed, backends, args.jobs, kinds, args.cache, args.out, args.only)


if __name__ == "__main__":
    sys.exit(main())
