"""`%load_ext xla_explorer`: the `%%xla` cell magic and the `%xla_cache` line magic.

A thin front end: it parses the flags, hands the cell to `cell.run_cell` (which analyses it,
compiles it with `jit`, runs, checks and writes it back, see `xla_explorer/cell/`), and
displays what came back: the text of `viz/cell_text.py`, then the explorer widget. An error is
shown short, quoting the cell's line, unless --debug asks for the traceback.
"""
from __future__ import annotations

import asyncio
import contextlib
import html
import re

from IPython.core.displayhook import DisplayHook
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool

from .backends import BACKENDS, DEVICE_BACKENDS, LAZY_BACKENDS, get_backend
from .cell import NO_VALUE, CellCache, CellRun, cell_names, run_cell
from .cell.run import FIRST_LINE
from .viz.cell_text import cache_report, short_error, summary

# Backends planned but not registered yet: --backend names them, with what to use instead.
NOT_BUILT: dict[str, str] = {}
# After `%load_ext`, how long the kernel waits before starting Numba: long enough that the
# cell's reply has gone out, so the cell is seen done at once.
START_AFTER_SECONDS = 0.05
# How long the kernel must have run no cell before a cell's kernels (answered first by the
# interpreter) or driver are compiled (a cell run within it waits for the compile's rest).
IDLE_SECONDS = 0.5


def show(run: CellRun, cache_info) -> None:
    """What a `%%xla` cell displays: the text summary, then the explorer widget (one output
    that also carries the JSON bundle and a static HTML view, see Explorer._repr_mimebundle_)."""
    from IPython.display import display

    print(summary(run, cache_info, hlo=False))
    display(run.exploration.show())


def updatable_display(shell):
    """A function that shows HTML in one output, each call replacing the last, where the
    front end can replace an output (a Jupyter kernel); None elsewhere (a terminal would print
    every update)."""
    if getattr(shell, "kernel", None) is None:
        return None
    from IPython.display import display

    handle = None

    def show(markup: str) -> None:
        nonlocal handle
        bundle = {"text/html": markup,
                  "text/plain": html.unescape(re.sub(r"<[^>]*>", "", markup)).strip()}
        if handle is None:
            handle = display(bundle, raw=True, display_id=True)
        else:
            handle.update(bundle, raw=True)

    return show


@contextlib.contextmanager
def compile_progress(shell, backend: str, quiet: bool):
    """While a cell runs, which of its functions Numba is compiling and how far it has got
    (viz/progress.py); then what the compile cost, in one line."""
    show = None if quiet or not get_backend(backend).generates_code else \
        updatable_display(shell)
    if show is None:
        yield
        return
    from .viz.progress import CompileProgress

    with CompileProgress(show):
        yield


@magics_class
class XlaMagics(Magics):
    """`%%xla` and `%xla_cache`; `cache` holds the session's compiled cells, `last` the last
    successful run."""

    tiered = Bool(True, help="Answer a new program's first run with the interpreter while "
                              "its kernels compile in the background (False: every cell "
                              "waits for its kernels, as --wait asks)").tag(config=True)

    def __init__(self, shell=None):
        super().__init__(shell)
        self.cache = CellCache()
        self.last: CellRun | None = None
        self.cells_started = 0  # every cell's, counted by IPython's pre_run_cell event
        self._idle_work: list = []  # compiles waiting for the kernel to be idle, oldest first
        self._idle_loop = None  # the event loop they wait on

    def count_cell(self, info=None) -> None:
        self.cells_started += 1

    def _compile_driver_when_idle(self, executable) -> None:
        """In a Jupyter kernel, what the cell's program left to compile (the CPU's driver,
        after a first call that ran it in Python: Executable.compile_driver) is compiled once
        the kernel has been idle (`_when_idle`), so that running the cell again does not
        wait for it (0.1 to 0.3 s). A terminal's IPython runs nothing between its cells."""
        self._when_idle(executable.compile_driver)

    def _compile_when_idle(self, tier) -> None:
        """A new program's kernels (the cell was answered by the interpreter) compile once
        the kernel has been idle (`_when_idle`), on its event loop, as its driver does:
        never beside a cell, whose imports and compiles a thread's would contend with for
        Numba's and the import system's locks. In a terminal, where nothing runs between
        cells, in a thread at once."""
        if not self._when_idle(tier.compile):
            tier.start()

    def _when_idle(self, work) -> bool:
        """Run `work` on the kernel's event loop once no cell has run for IDLE_SECONDS: not
        while cells keep coming (Run All). Work waiting is done one piece an idle moment,
        the latest first (the cell being edited, not the versions before it), so that a
        cell run meanwhile waits for one compile at most. False where there is no loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if work not in self._idle_work:
            self._idle_work.append(work)
        if self._idle_loop is not loop:  # nothing waiting on this loop yet
            self._idle_loop = loop
            self._next_when_idle(loop, self.cells_started)
        return True

    def _next_when_idle(self, loop, seen: int) -> None:
        def idle_or_later():
            if self.cells_started != seen:  # a cell ran meanwhile: wait for idle again
                self._next_when_idle(loop, self.cells_started)
                return
            try:
                self._idle_work.pop()()
            finally:
                if self._idle_work:
                    self._next_when_idle(loop, self.cells_started)
                else:
                    self._idle_loop = None
        loop.call_later(IDLE_SECONDS, idle_or_later)

    @magic_arguments()
    @argument("--backend", default="cpu",
              choices=sorted({*BACKENDS, *DEVICE_BACKENDS, *LAZY_BACKENDS, *NOT_BUILT}),
              help="what runs the compiled program: Numba CPU kernels (default), the HLO "
                   "interpreter, Numba CUDA kernels (a GPU, or NUMBA_ENABLE_CUDASIM=1), or "
                   "the CPU kernels per chunk of dask arrays (dask)")
    @argument("--autocluster", action="store_true",
              help="run what cannot be compiled (np.unique...) eagerly between compiled "
                   "clusters, as TensorFlow's auto-clustering does")
    @argument("--bench", action="store_true",
              help="time eager NumPy against the compiled program, on copies of the inputs")
    @argument("--dump", metavar="DIR", default=None,
              help="write HLO, kernels and buffer reports to DIR, like --xla_dump_to")
    @argument("--dump-snapshots", action="store_true",
              help="with --dump: also the inputs and a manifest, so that `python -m "
                   "xla_explorer replay DIR` runs the cell's program in another process, "
                   "like --xla_dump_hlo_snapshots")
    @argument("--export", metavar="NAME", default=None,
              help="also write the compiled program as NAME.cpython-*.so in the working "
                   "directory, a module whose run() needs only NumPy, and NAME.pyi")
    @argument("--wait", action="store_true",
              help="wait for the kernels before answering, as xe.jit does; without it a "
                   "new program's first run is answered by the interpreter while its "
                   "kernels compile in the background (--bench, --dump, --export and the "
                   "cuda backend wait)")
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
        if args.backend in NOT_BUILT:
            raise UsageError(f"--backend {args.backend}: {NOT_BUILT[args.backend]}")
        if args.dump_snapshots and not args.dump:
            raise UsageError("--dump-snapshots needs --dump DIR: the directory to write to")
        try:
            with compile_progress(self.shell, args.backend, args.quiet):
                run = run_cell(cell, self.shell.user_ns, backend=args.backend,
                               autocluster=args.autocluster, cache=self.cache,
                               check=not args.quiet, bench=args.bench, dump=args.dump,
                               dump_snapshots=args.dump_snapshots, first_line=FIRST_LINE,
                               export=args.export,
                               tiered=self.tiered and not args.wait)
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
        if run.tier is not None:
            self._compile_when_idle(run.tier)
        else:
            self._compile_driver_when_idle(run.exploration.executable)
        # A last line that is an expression is shown as a plain cell shows it (Out[n], unless
        # it ends in a semicolon): IPython's display hook shows what a cell magic returns.
        if run.value is not NO_VALUE and not DisplayHook.semicolon_at_end_of_expression(cell):
            return run.value

    @line_magic
    def xla_cache(self, line: str = ""):
        """What `%%xla` has compiled this session: per cell, its backend and the input
        signatures it has executables for, with the hit and miss counts."""
        print(cache_report(self.cache))


def load_ipython_extension(ip) -> None:
    """`%load_ext xla_explorer`: the magics; and in a Jupyter kernel, Numba started once
    this cell is done, while the next is written."""
    magics = XlaMagics(ip)
    ip.register_magics(magics)
    ip.events.register("pre_run_cell", magics.count_cell)
    try:
        # The kernel's event loop, on this thread: its callbacks run between cells. (A
        # thread of its own would import Numba beside the cell's imports, and a first
        # cell hung on llvmlite's lock; docs/performance.md.)
        loop = asyncio.get_running_loop()
    except RuntimeError:  # a terminal's IPython: nothing runs between its cells
        return
    loop.call_later(START_AFTER_SECONDS, get_backend("cpu").start)


def unload_ipython_extension(ip) -> None:
    """`%unload_ext xla_explorer`: forget the compiled cells and the magics."""
    magics = ip.magics_manager.registry.pop("XlaMagics", None)
    if magics is not None:
        magics.cache.clear()
        ip.events.unregister("pre_run_cell", magics.count_cell)
    ip.magics_manager.magics["cell"].pop("xla", None)
    ip.magics_manager.magics["line"].pop("xla_cache", None)


