"""`python -m xla_explorer` (installed as `xla-explorer`): XLA's debugging tools for this
compiler. `replay` is run_hlo_module, `opt` is hlo-opt, `explore` writes the explorer as one
HTML file. Exit status: 0 when all is well (replay: every output agrees), 1 when a replayed
output differs, 2 for a usage error or a dump or file that cannot be read."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .backends import BACKENDS, DEVICE_BACKENDS
from .errors import XlaExplorerError

OK, DIFFERS, BAD_INPUT = 0, 1, 2

DESCRIPTION = """\
Debugging tools modelled on XLA's: run a dumped HLO module on a backend and compare it with
the reference interpreter (run_hlo_module), run passes of the pipeline on HLO text (hlo-opt),
and write the explorer of a module as one HTML file.

A dump is a directory written by ex.dump(DIR, snapshots=True), %%xla --dump DIR
--dump-snapshots, or XLA_EXPLORER_FLAGS=--dump_to=DIR; a FILE is HLO text (the explorer's,
`jax.jit(f).lower(x).as_text(dialect="hlo")`, XLA's *.before_optimizations.txt)."""

EXAMPLES = """\
examples:
  xla-explorer replay /tmp/dump
  xla-explorer replay /tmp/dump --backend interpreter --bisect
  xla-explorer replay module_0000.f.before_optimizations.txt --seed 7
  xla-explorer opt module.hlo --until fusion
  xla-explorer opt module.hlo --passes algsimp,cse,dce
  xla-explorer explore /tmp/dump -o report.html

exit status: 0 all agree, 1 an output differs, 2 bad usage or an unreadable dump."""

BACKEND_NAMES = sorted({*BACKENDS, *DEVICE_BACKENDS})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xla-explorer", description=DESCRIPTION, epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    replay = commands.add_parser(
        "replay",
        help="run a dumped module on a backend, compare it with the reference",
        description="Run a dumped HLO module on --backend and the unoptimised module on the "
                    "--reference interpreter, on the dump's saved inputs (or inputs generated "
                    "from the parameters, seeded), and print per output the largest error and "
                    "whether it is within tolerance. Like XLA's run_hlo_module "
                    "--platform=cpu --reference_platform=interpreter.",
        epilog="exit status: 0 every output agrees, 1 an output differs, 2 bad usage or an "
               "unreadable dump (the message names the file).")
    replay.add_argument("path", metavar="DUMP_DIR_OR_FILE",
                        help="a dump directory (its last module with a manifest), a "
                             "*.manifest.json, or an HLO text file")
    replay.add_argument("--backend", default="cpu", choices=BACKEND_NAMES,
                        help="the platform to run the optimised module on (default: cpu)")
    replay.add_argument("--reference", default="interpreter", choices=["interpreter"],
                        help="the reference platform: the unoptimised module, op by op")
    replay.add_argument("--bisect", action="store_true",
                        help="run the pipeline one pass longer each time, on the interpreter, "
                             "and name the first pass after which the result differs")
    replay.add_argument("--module", metavar="NAME",
                        help="in a dump of several modules, the one to replay: its name or "
                             "its module_NNNN prefix (default: the last)")
    replay.add_argument("--seed", type=int, default=0,
                        help="the seed of generated inputs, where the dump saved none "
                             "(default: 0)")

    opt = commands.add_parser(
        "opt", help="run passes of the pipeline on HLO text and print the result",
        description="Run passes of a backend's pipeline on an HLO module and print the HLO "
                    "after them, like XLA's hlo-opt. With neither --passes nor --until, the "
                    "whole pipeline.")
    opt.add_argument("path", metavar="FILE",
                     help="an HLO text file (or a dump directory or manifest)")
    which = opt.add_mutually_exclusive_group()
    which.add_argument("--passes", metavar="PASS,PASS,...",
                       help="these passes, in this order (e.g. algsimp,cse,dce)")
    which.add_argument("--until", metavar="PASS",
                       help="every pass of the pipeline up to and including PASS "
                            "(e.g. fusion)")
    opt.add_argument("--backend", default="cpu", choices=BACKEND_NAMES,
                     help="whose pipeline (default: cpu)")
    opt.add_argument("--module", metavar="NAME", help="in a dump directory, which module")
    opt.add_argument("--list-passes", action="store_true",
                     help="print the backend's pipeline, one pass a line, and exit")

    explore = commands.add_parser(
        "explore", help="write the explorer of a module as one HTML file",
        description="Compile an HLO module (or a dump's) and write the explorer (stages, "
                    "fusion decisions, buffers, kernels) as one self-contained HTML file that "
                    "opens with no kernel and no network.")
    explore.add_argument("path", metavar="FILE", help="an HLO text file, dump directory or "
                                                      "manifest")
    explore.add_argument("-o", "--output", required=True, metavar="REPORT.html",
                         help="the HTML file to write")
    explore.add_argument("--backend", default="cpu", choices=BACKEND_NAMES,
                         help="the backend to compile for (default: cpu)")
    explore.add_argument("--module", metavar="NAME", help="in a dump directory, which module")
    explore.add_argument("--seed", type=int, default=0,
                         help="the seed of generated inputs (default: 0)")
    explore.add_argument("--bench", action="store_true",
                         help="time the module's eager run against the compiled one first")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage error (2), already printed
        return int(done.code or 0)
    try:
        return COMMANDS[args.command](args)
    except (XlaExplorerError, ValueError, OSError) as err:
        # A dump or file that cannot be read, an unknown pass, a module the backend cannot
        # compile: the message names the file, pass or instruction.
        print(f"xla-explorer {args.command}: error: {err}", file=sys.stderr)
        return BAD_INPUT


def _replay(args) -> int:
    from .replay import replay

    result = replay(args.path, args.backend, args.reference, bisect=args.bisect,
                    module=args.module, seed=args.seed)
    print(result)
    return OK if result.ok else DIFFERS


def _opt(args) -> int:
    from .replay import optimize, pipeline_passes

    if args.list_passes:
        print("\n".join(p.name for p in pipeline_passes(args.backend)))
        return OK
    names = [n.strip() for n in args.passes.split(",") if n.strip()] if args.passes else None
    print(optimize(args.path, args.backend, names, args.until, args.module).to_text(), end="")
    return OK


def _explore(args) -> int:
    from .replay import explore_file

    out = explore_file(args.path, args.output, args.backend, args.module, args.seed,
                       args.bench)
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")
    return OK


COMMANDS = {"replay": _replay, "opt": _opt, "explore": _explore}

if __name__ == "__main__":
    sys.exit(main())
