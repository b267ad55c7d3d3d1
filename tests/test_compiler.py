"""The compiler driver and the backend seam: every way in goes through `compiler.compile`, a
backend is one class and one registry entry, and the cached call path gives NumPy's answers."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer import compiler
from xla_explorer.backends import BACKENDS, Backend, get_backend
from xla_explorer.runtime.interpreted import InterpretedExecutable
from xla_explorer.passes.algsimp import AlgebraicSimplifier
from xla_explorer.passes.buffer_assignment import AssignBuffers
from xla_explorer.passes.cse import CSE
from xla_explorer.passes.dce import DCE
from xla_explorer.passes.schedule import Schedule
from xla_explorer.trace.tracer import trace

F32 = np.float32


class Counting(Backend):
    """A backend of one file's worth: the interpreter, counting what it is asked to compile."""

    name = "counting"

    def __init__(self):
        self.compiled = []

    def compile(self, module, assignment):
        self.compiled.append(module.name)
        return InterpretedExecutable(module, assignment)


@pytest.fixture
def counting(monkeypatch):
    backend = Counting()
    monkeypatch.setitem(BACKENDS, backend.name, backend)
    return backend


class Unfused(Backend):
    """A target with a pipeline of its own: the cleanups and buffer assignment, no fusion
    (every op its own kernel), run by the interpreter."""

    name = "unfused"
    needs_assignment = True

    def passes(self, options):
        return [AlgebraicSimplifier(), CSE(), DCE(), Schedule(), AssignBuffers()]

    def compile(self, module, assignment):
        return InterpretedExecutable(module, assignment)


def test_a_backend_chooses_its_passes(monkeypatch, rng):
    monkeypatch.setitem(BACKENDS, "unfused", Unfused())
    x, y = rng.standard_normal((6, 5)).astype(F32), rng.standard_normal(5).astype(F32)

    def f(x, y):
        return np.exp(x - y).sum(axis=1) * 2

    ex = xe.explore(f, x, y, backend="unfused")
    assert [s.name for s in ex.stages] == ["trace", "algsimp", "cse", "dce", "schedule",
                                           "buffer-assignment"]
    assert not any(i.opcode == "fusion" for i in ex.module.entry.instructions)
    np.testing.assert_allclose(ex.run(x, y), np.exp(x - y).sum(axis=1) * 2, rtol=1e-5)
    np.testing.assert_allclose(xe.jit(f, backend="unfused")(x, y), f(x, y), rtol=1e-5)
    # Without `passes` the driver asks the backend; given, they are the caller's.
    traced = trace(f, [x, y])
    assert "fusion" in [s.name for s in compiler.compile(traced.module, "cpu").stages]
    done = compiler.compile(traced.module, Unfused(), passes=[DCE(), AssignBuffers()])
    assert [s.name for s in done.stages] == ["trace", "dce", "buffer-assignment"]


def unique_between(x):
    y = np.tanh(x) * 2 + 1
    u = np.unique(np.round(y))
    return (u * u).sum()


def test_a_registered_backend_serves_jit_explore_and_autocluster(counting, rng):
    x = rng.standard_normal((4, 8)).astype(F32)
    f = xe.jit(lambda x: np.exp(x) * 2, backend="counting")
    np.testing.assert_allclose(f(x), np.exp(x) * 2, rtol=1e-6)
    f(x)
    assert len(counting.compiled) == 1  # the second call was a cache hit
    assert f.cache_info().hits == 1 and f.cache_info().misses == 1
    ex = xe.explore(lambda x: x.sum(axis=1), x, backend="counting")
    np.testing.assert_allclose(ex.run(x), x.sum(axis=1), rtol=1e-6)
    assert ex.backend == "counting" and ex.kernels == {}
    x = np.linspace(-2, 2, 64, dtype=F32)
    ex = xe.explore(unique_between, x, backend="counting", autocluster=True)
    np.testing.assert_allclose(ex.run(x), unique_between(x), rtol=1e-5)
    # Each compiled cluster was compiled by the registered backend.
    names = {s.module.name for s in ex.executable.segments if s.compiled}
    assert len(names) == 2 and names <= set(counting.compiled)


def test_an_unknown_backend_names_the_registered_ones():
    with pytest.raises(ValueError, match="'tpu' is not available.*interpreter.*cpu"):
        xe.jit(lambda x: x, backend="tpu")
    with pytest.raises(ValueError, match="'tpu' is not available"):
        get_backend("tpu")


def test_must_compile_reports_the_first_op_the_backend_cannot_compile(rng):
    x = rng.standard_normal(16).astype(F32)
    traced = trace(unique_between, [x])
    with pytest.raises(xe.CompileError, match=r"np\.unique is not compilable") as info:
        compiler.compile(traced.module, "cpu")
    assert info.value.source_line is not None
    # The interpreter runs NumPy's eager ops itself: without must-compile it runs them.
    done = compiler.compile(traced.module, "interpreter", must_compile=False)
    np.testing.assert_allclose(done.executable(x)[0], unique_between(x), rtol=1e-5)
    # Under jit every backend is must-compile, the interpreter too.
    with pytest.raises(xe.CompileError, match=r"np\.unique"):
        xe.jit(unique_between, backend="interpreter")(x)


def test_the_cpu_backend_needs_a_buffer_assignment(rng):
    x = rng.standard_normal(8).astype(F32)
    with pytest.raises(ValueError, match="cpu backend needs a pipeline that ends in "
                                         "buffer-assignment"):
        xe.explore(lambda x: x + 1, x, backend="cpu", passes=[])


def test_a_compilation_carries_the_stages_assignment_and_executable(rng):
    x = rng.standard_normal((3, 5)).astype(F32)
    traced = trace(lambda x: np.tanh(x) + x, [x])
    done = compiler.compile(traced.module, "cpu")
    assert [s.name for s in done.stages][-1] == "buffer-assignment"
    assert done.assignment is done.stages[-1].artifact
    assert done.assignment.module is done.module
    np.testing.assert_allclose(done.executable(x)[0], np.tanh(x) + x, rtol=2e-6)
    assert set(done.executable.kernels) and done.executable.compile_seconds is not None


# -- the cached call path ------------------------------------------------------------------

def pair(x, y):
    return x + y, {"diff": x - y, "same": x}


CASES = [
    # (function, argument makers): each called three times, args fresh each time
    (lambda x: x * 2 + 1, lambda r: (r.standard_normal(100).astype(F32),)),
    (pair, lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4)))),
    (lambda x: x.sum(), lambda r: (r.standard_normal(50).astype(F32),)),  # a NumPy scalar
    (lambda x, s: x * s, lambda r: (r.standard_normal(7), 2.5)),  # a Python float argument
    (lambda x: x[::2] * 3, lambda r: (r.standard_normal(9)[::-1],)),  # a strided view
    (lambda x: (x, x), lambda r: (r.standard_normal(4),)),  # one value returned twice
    (lambda x: x + 1, lambda r: (np.asarray(r.standard_normal()),)),  # 0-d
]


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_cached_calls_give_numpys_answers(case, backend):
    f, make = CASES[case]
    compiled = xe.jit(f, backend=backend)
    rng = np.random.default_rng(case)
    for _ in range(3):
        args = make(rng)
        got, want = compiled(*args), f(*args)
        flat_got, flat_want = _leaves(got), _leaves(want)
        assert len(flat_got) == len(flat_want)
        for g, w in zip(flat_got, flat_want):
            assert type(g) is type(w)
            np.testing.assert_allclose(g, w, rtol=2e-6)
        # Nothing returned is the caller's input or another output.
        arrays = [g for g in flat_got if isinstance(g, np.ndarray)]
        assert not any(np.shares_memory(g, a) for g in arrays for a in args
                       if isinstance(a, np.ndarray))
        assert all(a is b or not np.shares_memory(a, b)
                   for i, a in enumerate(arrays) for b in arrays[i + 1:])
    assert compiled.cache_info().misses == 1 and compiled.cache_info().hits == 2


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    if isinstance(tree, dict):
        return [leaf for t in tree.values() for leaf in _leaves(t)]
    return [tree]


def test_a_guard_on_a_python_value_still_picks_the_program_on_a_cached_call():
    f = xe.jit(lambda x, n: x[:n] * 2)
    x = np.arange(10.0)
    for n in (3, 5, 3, 5, 7):
        np.testing.assert_array_equal(f(x, n), x[:n] * 2)
    info = f.cache_info()
    assert info.misses == 3 and info.hits == 2
    assert sorted(s[1] for s in info.static) == [3, 5, 7]


def test_an_in_place_update_reaches_the_caller_on_every_cached_call():
    def bump(x):
        x += 1
        return x.sum()

    f = xe.jit(bump)
    x, y = np.zeros(4), np.zeros(4)
    for _ in range(3):
        assert f(x) == bump(y)
    np.testing.assert_array_equal(x, y)
    assert np.all(x == 3)


def test_a_new_shape_or_dtype_on_the_cached_path_compiles_again():
    f = xe.jit(lambda x: x * 2)
    for x in (np.ones(3, F32), np.ones(4, F32), np.ones(3, np.float64), np.ones(3, F32)):
        out = f(x)
        assert out.dtype == x.dtype and out.shape == x.shape
    assert f.cache_info().misses == 3 and f.cache_info().hits == 1


def unique_sum(x):
    return np.unique(x).sum()


def test_must_compile_names_the_outer_function_that_an_autoclustered_jit_was_traced_into():
    inner = xe.jit(unique_sum, autocluster=True)

    def outer(x):
        return inner(x) * 2

    x = np.array([1.0, 1.0, 2.0])
    with pytest.raises(xe.CompileError, match=r"np\.unique is not compilable") as info:
        xe.jit(outer)(x)
    err = info.value
    assert err.source_line == unique_sum.__code__.co_firstlineno + 1  # the op's own line
    assert f"outer function outer (defined at {__file__}:{outer.__code__.co_firstlineno})" \
        in err.hint and "unique_sum" in err.hint, err.hint
    assert "xe.jit(outer, autocluster=True)" in err.hint
    assert xe.jit(outer, autocluster=True)(x) == outer(x) == 6.0  # what the hint says works
    with pytest.raises(xe.CompileError) as info:  # an inner without autocluster: as before
        xe.jit(lambda x: xe.jit(unique_sum)(x) * 2)(x)
    assert "outer function" not in str(info.value)


def test_clusters_compiled_with_other_codegen_options_are_not_shared():
    # Auto-clustering caches each cluster's executable across compilations; a cpu backend
    # with other tuning values must get its own, or it would run code made for the first.
    from xla_explorer.backends.cpu import CpuBackend
    from xla_explorer.codegen.options import CodegenOptions

    def f(x):
        return np.unique(np.tanh(x) * 2.0)

    x = np.linspace(-1, 1, 64, dtype=np.float32)
    module = trace(f, [x], autocluster=True).module
    plain, serial = CpuBackend(), CpuBackend(CodegenOptions(serial_only=True))
    assert plain.compile_key() != serial.compile_key()
    first = compiler.compile(module, plain, autocluster=True)
    np.testing.assert_allclose(first.executable(x)[0], f(x), rtol=1e-6)
    misses = compiler.CLUSTER_CACHE["misses"]
    again = compiler.compile(module, serial, autocluster=True)
    np.testing.assert_allclose(again.executable(x)[0], f(x), rtol=1e-6)
    assert compiler.CLUSTER_CACHE["misses"] > misses
