"""The ways in: `explore` (trace, compile, keep everything for inspection), `jit` (compile
once per argument signature, then call at the speed of the kernels), with jit's cache, and
`export` (compile once, ahead of time, into a module that needs only NumPy)."""
from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import compiler
from ..backends import get_backend
from ..errors import CompileError, TraceError
from ..trace.scalars import GuardFailed
from ..trace.tracer import (active_builder, argument_names, check_plain_array, located,
                            trace)
from .exploration import Exploration, dump_as_flagged, signature


def explore(f: Callable, *args, backend: str = "interpreter", passes=None,
            autocluster: bool = False, **backend_options) -> Exploration:
    """Trace f on args, run the pass pipeline, and return everything for inspection.

    With `autocluster`, what cannot compile (np.unique, NumPy functions the op table lacks)
    runs eagerly between compiled clusters, as TensorFlow's auto-clustering does; without it
    the cpu backend compiles the whole function or raises CompileError naming what cannot.
    `backend_options` are the backend's own (`chunks=` for dask)."""
    target = get_backend(backend, **backend_options)
    return _explore(f, args, target, passes, autocluster,
                    must_compile=not target.runs_eager_ops)


def export(f: Callable, *example_args, name: str | None = None, directory=".",
           target_cpu: str = "host"):
    """Compile `f` for the shapes and dtypes of `example_args` into `directory/NAME.cpython-*.so`
    with one function, `run`, that needs only NumPy, and `NAME.pyi` beside it (api/export.py).
    `name` defaults to f's name; `target_cpu` is LLVM's name of the CPU to compile for
    ("host": this one). Returns the `ExportedModule`; raises CompileError for what cannot be
    exported (an eager op, float16, a while loop)."""
    from .export import export_exploration

    ex = explore(f, *example_args, backend="cpu")
    return export_exploration(ex, name or getattr(f, "__name__", "exported"), directory,
                              target_cpu=target_cpu)


def _explore(f: Callable, args, backend, passes, autocluster: bool,
             must_compile: bool, run_on=None) -> Exploration:
    if active_builder() is not None:
        raise located(TraceError, "xe.explore was called inside a function being traced; "
                                  "nested tracing is not supported", "xe.explore",
                      "Call the function directly inside (its ops join the outer trace), or "
                      "use xe.jit, which does that when nested.")
    nested: list[JitFunction] = []
    saved, _nested.autoclustered = getattr(_nested, "autoclustered", None), nested
    try:
        # A backend may trace on stand-ins of its arguments (dask arrays are never computed).
        backend, traced_args = backend.prepare(args)
        traced = trace(f, traced_args, autocluster=autocluster)
        compiled = compiler.compile(traced.module, backend, autocluster=autocluster,
                                    passes=passes, must_compile=must_compile, run_on=run_on)
    except CompileError as e:
        if nested and not autocluster and "autocluster" in (e.hint or ""):
            raise _outer_must_compile(e, f, nested) from None
        raise
    finally:
        _nested.autoclustered = saved
    name = backend.name
    ex = Exploration(compiled, f, args, traced,
                     retrace=lambda new: explore(f, *new, backend=name, autocluster=True))
    if run_on is None:
        dump_as_flagged(ex)
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


# A Python number's key in the fast cache: its type (its value is the ScalarProgram's).
_SCALAR_TYPES = frozenset((bool, int, float, complex))


def _fast_key(args) -> tuple | None:
    """The cache key of a call whose arguments are all NumPy arrays or Python numbers: each
    array's shape and dtype, each number's type; None for anything else (the full
    `signature` decides those). Cheaper than `signature`: no conversion, no dtype.str. A
    strided array is None too: the full path passes kernels a C-contiguous copy; so is one
    whose elements are not aligned (kernels are compiled for aligned ones)."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            flags = a.flags
            if not (flags.c_contiguous and flags.aligned):
                return None
            key.append((a.shape, a.dtype))
        elif t in _SCALAR_TYPES:
            key.append(t)
        else:
            return None
    return tuple(key)


@dataclass
class Tier:
    """A program answered by the interpreter while its kernels compile (`JitFunction.tier`):
    `answer` runs it; `exploration` is what to show (the backend's, when generated at once).
    `start()` compiles the kernels in a thread, `compile()` in the caller's (once, either
    way); `ready` is set once that is done (a compile's error is raised by the next call,
    as it would have been)."""

    exploration: Exploration
    answer: Exploration
    start: Callable[[], None]
    compile: Callable[[], None]
    ready: threading.Event


class JitFunction:
    """`f` compiled whole for a backend, once per argument signature (as XLA recompiles for
    new shapes); NumPy in, NumPy out."""

    def __init__(self, f: Callable, backend: str, autocluster: bool = False,
                 tiered: bool = False, **backend_options):
        self._backend = get_backend(backend, **backend_options)
        self.function = f
        self.backend = backend
        self.autocluster = autocluster
        self.tiered = tiered and not autocluster and self._backend.tiers
        # Which backend gave the last call's answer: with `tiered`, "interpreter" until the
        # kernels of that signature are compiled.
        self.last_ran: str | None = None
        self._compiling: dict[tuple | None, threading.Event] = {}
        self._compiled: dict[tuple, list[Exploration]] = {}
        self._tiers: dict[tuple, Tier] = {}  # the interpreter's programs, by _fast_key
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
        pending = self._compiling.get(_fast_key(args))
        if pending is not None:
            pending.wait()  # its kernels are compiling: that program, not a second one
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
        # The key is not held while the program runs: its tuples would count in what a
        # call allocates (benchmarks/memory.py); a miss makes it again.
        call = self._fast.get(_fast_key(args))
        if call is not None:
            try:
                result = call(args)
            except GuardFailed:  # a Python value decided another program: find or make it
                pass
            else:
                self._hits += 1
                return result
        key = _fast_key(args)
        if self.tiered and key is not None and key not in self._compiling \
                and key not in self._tiers:
            return self._first_answer(key, args)
        ex = self.explore(*args)
        result = ex._run(args)
        self.last_ran = self.backend
        if key is not None:
            self._fast[key] = ex.call_path()
        return result

    def _first_answer(self, key: tuple, args):
        """The interpreter's answer, running what this backend's passes made, at once; then
        the kernels are generated and compiled in a thread of their own (Numba itself is
        imported there), and calls switch to them when they are ready. A new program
        answers in milliseconds of passes and NumPy instead of seconds of Numba."""
        tier = self.tier(*args)
        result = tier.answer.call_path()(args)  # the answer waits for no compile
        tier.start()
        return result

    def tier(self, /, *args, generate: bool = False) -> Tier | None:
        """For a signature with no program yet: the interpreter's Exploration of what this
        backend's passes made, to answer with now, and `start()`, which compiles the kernels
        in a thread; the calls after that switch to them once they are ready. While they
        compile, the same Tier again (its compile runs once). None when the signature's
        program is compiled, or where the backend's kernels cannot compile in the background
        (`Backend.tiers`): `explore` has it, or compiles it.

        With `generate`, the backend's program is generated now (its kernels' source, for
        the explorer: `Tier.exploration`), and only their compile waits for `start`; without
        it, the code generator is not even imported here (a fresh process answers in
        milliseconds)."""
        key = _fast_key(args)
        if key is None or not self._backend.tiers or self._compiled.get(signature(args)):
            return None
        tier = self._tiers.get(key)
        if tier is not None:
            if tier.ready.is_set():
                return None  # compiled, or failed: explore has it, or raises the error
            try:
                tier.answer.traced.scalars.replay(args)
            except GuardFailed:  # another program: compiled at once, as explore does
                return None
            self._hits += 1
            return tier
        if key in self._compiling:
            return None
        interpreter = get_backend("interpreter")
        if generate:
            shown = _explore(self.function, args, self._backend, None, False,
                             must_compile=True)
            answer = shown.with_executable(interpreter, interpreter.compile(
                shown.module, shown.compiled.assignment))
        else:
            shown = answer = _explore(self.function, args, self._backend, None, False,
                                      must_compile=True, run_on=interpreter)
        self._misses += 1
        slow = answer.call_path()
        # The kernels compile on a run of their own: on copies of what it updates in place
        # (the inputs themselves would take its updates), made before the answer runs them.
        # The rest is only read, whatever values it holds by then.
        updated = {p for _, p in answer.traced.aliases}
        copies = [np.array(a) if i in updated and isinstance(a, np.ndarray) else a
                  for i, a in enumerate(args)]
        ready, done, failed = threading.Event(), [], []

        def compile_kernels():
            try:
                exe = shown.executable if generate else \
                    self._backend.compile(answer.module, answer.compiled.assignment)
                exe(*copies)  # Numba compiles (or loads) the kernels on the first call,
                exe(*copies)  # and the driver on the second
                compiled = shown if generate else answer.with_executable(self._backend, exe)
                self._compiled.setdefault(signature(args), []).append(compiled)
                if not generate:  # explore dumped the generated one
                    dump_as_flagged(compiled)
                done.append(compiled.call_path())
            except BaseException as e:  # raised at the next call, as it would have been
                failed.append(e)
            finally:
                ready.set()

        def call(args):
            if not ready.is_set():
                self.last_ran = interpreter.name
                return slow(args)
            if failed:
                raise failed[0]
            self._fast[key] = done[0]
            self.last_ran = self.backend
            return done[0](args)

        started = []

        def begin() -> bool:  # once, whichever of start and compile comes first
            if started:
                return False
            started.append(True)
            self._fast[key] = call
            self._compiling[key] = ready
            return True

        def start():
            if begin():
                threading.Thread(target=compile_kernels, daemon=True,
                                 name=f"xla-explorer: compiling {self.__name__}").start()

        def compile_now():
            if begin():
                compile_kernels()

        self.last_ran = interpreter.name
        tier = self._tiers[key] = Tier(shown, answer, start, compile_now, ready)
        return tier

    def waiting(self) -> tuple[tuple[tuple, dict], ...]:
        """(signature, static values) of each program the interpreter answers while its
        kernels have not compiled yet (`tier`), as `cache_info` gives the compiled ones."""
        return tuple((signature(t.answer.args), t.answer.traced.scalars.static_arguments())
                     for t in self._tiers.values() if not t.ready.is_set())

    def wait(self, timeout: float | None = None) -> bool:
        """With `tiered`, wait until the kernels compiling in the background are ready;
        False if `timeout` seconds passed first."""
        return all(ready.wait(timeout) for ready in list(self._compiling.values()))

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
                _KeywordCall(self.function, *key), self.backend, self.autocluster, self.tiered)
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


def jit(f: Callable | None = None, *, backend: str = "cpu", autocluster: bool = False,
        tiered: bool = False, **backend_options):
    """Compile the whole of `f` (must-compile: a part that cannot be compiled is a
    CompileError naming it), or with `autocluster` the parts that can, the rest running
    eagerly between them; usable as `@xe.jit` or `xe.jit(f, backend="cpu")`.

    With `tiered`, a call with a new signature is answered by the interpreter (the same
    optimized program, op by op in NumPy) while its kernels compile in the background;
    later calls run the kernels once they are ready (`last_ran` says which answered,
    `wait()` waits for them); on a backend whose kernels cannot compile in the background
    (`Backend.tiers`: cuda's), every call waits for them. `backend_options` are the
    backend's own (`chunks=` for dask: how NumPy arguments are split)."""
    if f is None:
        return lambda g: JitFunction(g, backend, autocluster, tiered, **backend_options)
    return JitFunction(f, backend, autocluster, tiered, **backend_options)

