"""Auto-clustered programs end to end: compiled clusters with eager NumPy between them,
compared with NumPy itself."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer import compiler

F32 = np.float32


def unique_between(x):
    y = np.tanh(x) * 2 + 1         # cluster 0
    u = np.unique(np.round(y))     # eager: its length depends on the values
    return (u * u + 3).sum(), y    # cluster 1


def around_a_cycle(x):
    a = np.exp(x) * 2
    u = np.unique(a > 3)           # eager, between a and b
    b = a + u.sum() * 1.5          # reads a directly too: a and b cannot share a cluster
    return b - 1


def opaque(x):
    y = x * 2 + 1
    m = np.linalg.cond(np.outer(y, y) + np.eye(y.size))  # the op table lacks it: NumPy runs it
    w = np.polyfit(y, y * 4, 1)      # missing too: a least-squares fit
    return (y - m) * 3 + w.sum() + w[-1]


def assert_same(got, want):
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)
        assert np.asarray(g).dtype == np.asarray(w).dtype


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_np_unique_between_two_compiled_clusters(rng, backend):
    x = rng.standard_normal(64).astype(F32)
    ex = xe.explore(unique_between, x, backend=backend, autocluster=True)
    assert [len(c.instructions) > 1 for c in ex.clusters.compiled] == [True, True]
    eager = [e for e in ex.clusters.eager if e.op == "numpy.unique"]
    assert len(eager) == 1 and "depends on" in eager[0].reason and eager[0].source_line
    assert_same(ex.run(x), unique_between(x))
    if backend == "cpu":
        assert {k.split("/")[0] for k in ex.kernels} == {"cluster_0", "cluster_1"}


def test_a_new_unique_length_compiles_only_the_cluster_after_it(rng):
    x = np.linspace(-2, 2, 64, dtype=F32)
    ex = xe.explore(unique_between, x, backend="cpu", autocluster=True)
    first = ex.run(x)
    assert_same(first, unique_between(x))
    x2 = np.linspace(-0.3, 0.3, 64, dtype=F32)  # fewer distinct rounded values
    assert len(np.unique(np.round(np.tanh(x2) * 2 + 1))) != len(np.unique(np.round(
        np.tanh(x) * 2 + 1)))
    before = dict(compiler.CLUSTER_CACHE)
    assert_same(ex.run(x2), unique_between(x2))
    assert len(ex.variants) == 1
    # The variant's cluster 0 is the same HLO: it came from the cache; cluster 1 compiled.
    assert compiler.CLUSTER_CACHE["hits"] - before["hits"] == 1
    assert compiler.CLUSTER_CACHE["misses"] - before["misses"] == 1
    # Both lengths now run without tracing again.
    assert_same(ex.run(x), unique_between(x))
    assert_same(ex.run(x2), unique_between(x2))
    assert len(ex.variants) == 1


def test_a_cycle_keeps_two_directly_connected_parts_apart(rng):
    x = rng.standard_normal(32).astype(F32)
    ex = xe.explore(around_a_cycle, x, backend="cpu", autocluster=True)
    assert len(ex.clusters.compiled) == 2
    assert_same(ex.run(x), around_a_cycle(x))


def test_numpy_functions_missing_from_the_op_table_run_eagerly(rng):
    x = rng.standard_normal(50).astype(F32)
    ex = xe.explore(opaque, x, backend="cpu", autocluster=True)
    ops = {e.op for e in ex.clusters.eager}
    assert {"numpy.linalg.cond", "numpy.polyfit"} <= ops
    assert_same(ex.run(x), opaque(x))
    x2 = rng.standard_normal(50).astype(F32)
    assert_same(ex.run(x2), opaque(x2))  # the calls are rebuilt with the new operands


def test_must_compile_refuses_unique_by_name_and_line(rng):
    x = rng.standard_normal(8).astype(F32)
    line = unique_between.__code__.co_firstlineno + 2
    for make in (lambda: xe.explore(unique_between, x, backend="cpu"),
                 lambda: xe.jit(unique_between)(x),
                 lambda: xe.jit(unique_between, backend="interpreter")(x)):
        with pytest.raises(xe.CompileError) as err:
            make()
        assert "np.unique" in str(err.value) and err.value.source_line == line
        assert "--autocluster" in err.value.hint


def test_must_compile_refuses_a_function_missing_from_the_op_table_and_suggests_autocluster():
    with pytest.raises(xe.UnsupportedOpError) as err:
        xe.jit(opaque)(np.ones(4, F32))
    assert "np.linalg.cond" in str(err.value) and "--autocluster" in str(err.value)


def test_in_place_updates_reach_the_caller_under_autocluster(rng):
    def bump(x):
        x += 1
        return np.unique(x).sum() * 2

    x = rng.integers(0, 5, 20).astype(F32)
    want_x = x.copy()
    want = bump(want_x)
    f = xe.jit(bump, autocluster=True)
    got = f(x)
    np.testing.assert_array_equal(x, want_x)
    assert_same(got, want)


def two_uniques(x):
    u = np.unique(np.round(x))      # eager
    v = np.unique(np.round(x * 3))  # eager again, after it
    return u.sum() + v.sum() * 2 + x.mean()


def test_a_later_eager_op_of_another_length_runs_a_variant_that_agrees_on_both(rng):
    x = np.linspace(0, 0.4, 16, dtype=F32)  # round(x): {0}; round(3x): {0, 1}
    ex = xe.explore(two_uniques, x, backend="cpu", autocluster=True)
    assert_same(ex.run(x), two_uniques(x))
    x2 = np.linspace(0, 0.1, 16, dtype=F32)  # the first length as before, the second not
    assert_same(ex.run(x2), two_uniques(x2))
    (variant,) = ex.variants
    lengths = sorted(i.dims for i in variant.module.entry.instructions
                     if i.opcode == "custom-call")
    assert lengths == [(1,), (1,)]
    assert_same(ex.run(x), two_uniques(x))
    assert len(ex.variants) == 1
