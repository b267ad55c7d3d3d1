"""backend="dask": the partitioning stage's plan, tracing that never computes an argument, the
cpu executable called from two threads at once, and programs on a real
`dask.distributed.LocalCluster` (two worker processes) against NumPy on the whole arrays,
one of them with a worker killed while it runs."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import xla_explorer as xe
from xla_explorer.api import compare, computed_precision
from xla_explorer.errors import CompileError
from xla_explorer.passes.partition import PartitionDecision

from .programs import BEFORE_LINALG, build, describe, programs

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

# One xdist worker runs the whole file: its LocalCluster is started once, for all of them.
pytestmark = pytest.mark.xdist_group("dask_cluster")

F32 = np.float32


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


def mean_var(x):
    return (x.mean(), x.var(), x.mean(axis=0), x.var(axis=0), x.std(ddof=1),
            x.std(axis=0, ddof=1))


def gelu(x):
    c = F32(np.sqrt(2 / np.pi))
    return F32(0.5) * x * (F32(1) + np.tanh(c * (x + F32(0.044715) * x * x * x)))


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + F32(1e-5)) * g + b


def train_step(W1, b1, W2, b2, X, Y, lr):
    """Notebook 08's step with the new weights returned (dask arrays are immutable): the
    batch X, Y is split, the weights are whole, the gradients summed across chunks."""
    h = np.maximum(X @ W1 + b1, 0)
    logits = h @ W2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -(Y * log_p).sum() / X.shape[0]
    dlogits = (np.exp(log_p) - Y) / X.shape[0]
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = (dlogits @ W2.T) * (h > 0)
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    return loss, W1 - lr * dW1, b1 - lr * db1, W2 - lr * dW2, b2 - lr * db2


def _arrays(name: str, rng):
    """(function, NumPy arguments, their chunks along the leading axis (None: whole))."""
    r = rng.standard_normal
    if name == "sum_xyz":
        return sum_xyz, [r(4000), r(4000), r(4000)], [1000, 1000, 1000]
    if name == "mean_var":
        return mean_var, [r((600, 8)) + 3.0], [(150, 8)]
    if name == "gelu":
        return gelu, [r((400, 32)).astype(F32)], [(100, 16)]
    if name == "softmax":  # an edge chunk of 40 rows: a program of its own
        return softmax, [r((400, 24))], [(120, 24)]
    if name == "layernorm":
        x, g, b = r((400, 32)).astype(F32), r(32).astype(F32), r(32).astype(F32)
        return layernorm, [x, g, b], [(100, 32), None, None]
    n, d, h, c = 512, 20, 32, 4
    args = [(r((d, h)) * 0.1).astype(F32), np.zeros(h, F32), (r((h, c)) * 0.1).astype(F32),
            np.zeros(c, F32), r((n, d)).astype(F32),
            np.eye(c, dtype=F32)[rng.integers(0, c, n)], F32(0.1)]
    return train_step, args, [None, None, None, None, 128, 128, None]


def _dask_args(arrays, chunks):
    return [da.from_array(a, chunks=c) if c is not None else a
            for a, c in zip(arrays, chunks)]


def _check(got, want, rtol, name=""):
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want), name
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.shape(g) == np.shape(w), f"{name} output {k}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=f"{name} output {k}")


def _tol(f) -> float:
    return 2e-4 if f in (gelu, layernorm, train_step) else 1e-10


def _marks(ex) -> dict[str, str]:
    return {n.kernel: n.mark for n in ex.stage("partitioning").notes
            if isinstance(n, PartitionDecision)}


# Fast: the plan, read from the stage, without running anything.

def test_the_partitioning_stage_marks_each_kernel():
    rng = np.random.default_rng(0)
    f, arrays, chunks = _arrays("sum_xyz", rng)
    ex = xe.explore(f, *_dask_args(arrays, chunks), backend="dask")
    assert list(_marks(ex).values()) == ["partial-reduce"]
    plan = ex.stage("partitioning").artifact
    assert plan.chunks == (1000,) * 4
    f, arrays, chunks = _arrays("train_step", rng)
    marks = set(_marks(xe.explore(f, *_dask_args(arrays, chunks), backend="dask")).values())
    # The forward pass per chunk, the gradients partial and combined, the update once.
    assert {"per-chunk", "partial-reduce", "replicated"} <= marks


def test_rows_that_span_chunks_are_rechunked_first_and_said_so():
    x = da.from_array(np.ones((400, 24)), chunks=(100, 12))
    ex = xe.explore(softmax, x, backend="dask")
    notes = [str(n) for n in ex.stage("partitioning").notes]
    assert any("rechunked to whole rows" in n for n in notes), notes
    assert set(_marks(ex).values()) == {"per-chunk"}


def test_a_slice_of_the_batch_runs_whole_after_a_rechunk():
    x = da.from_array(np.arange(40.0), chunks=10)
    ex = xe.explore(lambda x: x[1:] - x[:-1], x, backend="dask")
    assert "rechunk" in _marks(ex).values()
    assert any("slices the batch axis" in str(n) for n in ex.stage("partitioning").notes)
    np.testing.assert_array_equal(ex.run(x).compute(scheduler="sync"), np.diff(np.arange(40.0)))


def test_the_task_count_is_the_graphs():
    rng = np.random.default_rng(1)
    f, arrays, chunks = _arrays("mean_var", rng)
    args = _dask_args(arrays, chunks)
    ex = xe.explore(f, *args, backend="dask")
    out = ex.run(*args)
    assert len(out[0].dask.layers[out[0].name]) == ex.stage("partitioning").artifact.tasks
    # An output is an array like any other: Dask builds on it, and computes outputs together.
    got = dask.compute(out[0] * 2, out[1].sum(), out[2], scheduler="sync")
    want = f(*arrays)
    np.testing.assert_allclose(got[0], want[0] * 2, rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1].sum(), rtol=1e-12)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)


def test_tracing_and_calling_never_compute_an_argument():
    def boom(block):
        raise AssertionError("an argument was computed")

    x = da.zeros((100, 4), chunks=(25, 4)).map_blocks(boom, dtype=float)
    fast = xe.jit(softmax, backend="dask")
    out = fast(x)  # traced, compiled and the graph built: nothing computed
    assert isinstance(out, da.Array) and out.shape == (100, 4)
    with pytest.raises(AssertionError, match="computed"):
        out.compute(scheduler="sync")


def test_numpy_arguments_are_split_with_chunks():
    x = np.linspace(-3, 3, 1000)
    ex = xe.explore(gelu, x.astype(F32), backend="dask", chunks=250)
    assert ex.stage("partitioning").artifact.chunks == (250,) * 4
    np.testing.assert_allclose(ex.run(x.astype(F32)).compute(scheduler="sync"),
                               gelu(x.astype(F32)), rtol=1e-4, atol=1e-6)


def test_in_place_updates_are_refused_by_name():
    def step(w, g):
        w -= 0.1 * g
        return w.sum()

    x = da.ones((8, 2), chunks=(4, 2))
    with pytest.raises(CompileError, match="in place.*immutable"):
        xe.explore(step, x, x, backend="dask")


def test_two_threads_share_a_compiled_program_but_not_its_arena():
    """Two chunks of one worker at once: each call must get its own temporaries."""
    fast = xe.jit(lambda x: np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1) * 2 + x.T[0],
                  backend="cpu")
    rng = np.random.default_rng(2)
    blocks = [rng.standard_normal((64, 48)) for _ in range(8)]
    fast(blocks[0])  # compiled before the threads start
    exe = fast.explore(blocks[0]).executable
    assert exe.arena_bytes > 0  # temporaries in the arena: what two calls would share
    barrier = threading.Barrier(2)

    def run(k):
        barrier.wait() if k < 2 else None
        return [fast(blocks[k % 8]) for _ in range(200)]

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, range(8)))
    for k, res in enumerate(results):
        x = blocks[k % 8]
        want = np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1) * 2 + x.T[0]
        for r in res:
            np.testing.assert_allclose(r, want, rtol=1e-12)


@pytest.mark.parametrize("dtype, rtol, rtol_far", [(F32, 1e-5, 1e-2), (np.float64, 1e-12, 1e-10)])
def test_mean_and_variance_by_partial_statistics_match_numpy(dtype, rtol, rtol_far):
    """Each chunk's (count, mean, M2), merged by Chan's formula: NumPy's var and std over
    both axes and over the batch axis, ddof 0 and 1, also where the mean is 1e4 and the
    spread 0.1, which the naive sum of squares minus n mean^2 gets wrong (checked here)."""
    rng = np.random.default_rng(4)
    # The shapes and chunks of _arrays("mean_var"): its other tests share the float64 programs.
    ex = xe.explore(mean_var, da.ones((600, 8), dtype=dtype, chunks=(150, 8)), backend="dask")
    notes = [str(n) for n in ex.stage("partitioning").notes if n.rule == "partial-statistics"]
    assert len(notes) == 2, notes  # var() and std() share one M2; var(axis=0), std(axis=0) one
    assert all("one pass per chunk, partial statistics (count, mean, M2) combined by Chan's "
               "formula" in n for n in notes)
    plan = ex.stage("partitioning").artifact
    # Each M2 in its kernel's first step, per chunk: nothing waits for the total mean.
    assert all(k == 0 and st.per_chunk for p in plan.kernels.values()
               for k, st in enumerate(p.steps) if st.statistics)
    for x, tol, far in ((rng.standard_normal((600, 8)) * 2 + 3, rtol, False),
                        (1e4 + rng.standard_normal((600, 8)) * 0.1, rtol_far, True)):
        x = x.astype(dtype)
        got = dask.compute(ex.run(da.from_array(x, chunks=(150, 8))), scheduler="sync")[0]
        want = mean_var(x)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=tol)
        naive = (x * x).mean(axis=0) - x.mean(axis=0) ** 2
        assert np.allclose(naive, want[3], rtol=tol, atol=0) != far


def test_a_mean_that_is_not_the_sum_over_the_count_is_not_taken_per_chunk():
    x = np.random.default_rng(5).standard_normal((400, 4))
    f = lambda x: ((x - x.sum(axis=0) / 7) ** 2).sum(axis=0)  # noqa: E731
    ex = xe.explore(f, da.from_array(x, chunks=(100, 4)), backend="dask")
    assert not any(n.rule == "partial-statistics" for n in ex.stage("partitioning").notes)
    got = ex.run(da.from_array(x, chunks=(100, 4))).compute(scheduler="sync")
    np.testing.assert_allclose(got, f(x), rtol=1e-12)


# On a LocalCluster: two worker processes, one thread each (their Numba kernels are
# parallel already), the scheduler in this process.

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    # A worker fetching a result from the one the test killed gives up on connecting after
    # 3 s, not Dask's default 30 s, before it asks the scheduler to recompute it. The nannies
    # hand this configuration to their worker processes.
    with dask.config.set({"distributed.comm.timeouts.connect": "3s"}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, memory_limit="1GiB")
        c = distributed.Client(cluster)
        yield c
        c.close()
        cluster.close()


# Issue 38's programs: sum(x + y*z), mean and variance, gelu, softmax and layernorm over rows,
# and a data-parallel training step.
CLUSTER_PROGRAMS = ("sum_xyz", "mean_var", "gelu", "softmax", "layernorm", "train_step")


@pytest.mark.slow
def test_the_programs_and_a_training_step_agree_with_numpy_on_a_local_cluster(client):
    """All six computed together, in one call, each against NumPy on the whole arrays. Each
    runs here first on Dask's synchronous scheduler, which compiles its chunks' programs and
    leaves Numba's machine code in the kernel cache (codegen/cache.py): the workers, which
    compile what they run from its text, then load it from there instead of each compiling
    it again (about 12 s of compiling on this machine's two cores, against under 1 s)."""
    rng = np.random.default_rng(6)
    cases = [(name, *_arrays(name, rng)) for name in CLUSTER_PROGRAMS]
    graphs = [xe.jit(f, backend="dask")(*_dask_args(arrays, chunks))
              for _, f, arrays, chunks in cases]
    dask.compute(graphs, scheduler="sync")
    results = dask.compute(graphs, scheduler=client)[0]
    for (name, f, arrays, _), got in zip(cases, results):
        _check(tuple(got) if isinstance(got, (list, tuple)) else got, f(*arrays), _tol(f), name)


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_result(client):
    """The arguments come from slow tasks (a tenth of a second a chunk), so the run is
    under way on both workers when one is killed; Dask recomputes what it held. (Chunks
    of sum_xyz's in the test above: the workers have its program compiled already.)"""
    def slowly(block):
        time.sleep(0.1)
        return block

    rng = np.random.default_rng(3)
    x, y, z = (rng.standard_normal(8000) for _ in range(3))
    args = [da.from_array(a, chunks=1000).map_blocks(slowly, dtype=float) for a in (x, y, z)]
    future = client.compute(xe.jit(sum_xyz, backend="dask")(*args))
    scheduler = client.cluster.scheduler
    deadline = time.monotonic() + 60
    victim = None
    while victim is None and time.monotonic() < deadline:
        # The first worker holding one of the program's partials (a kernel has run there).
        for ts in list(scheduler.tasks.values()):
            if "add_reduce_fusion" in str(ts.key) and ts.state == "memory" and ts.who_has:
                victim = next(iter(ts.who_has)).address
                break
        time.sleep(0.02)
    assert victim is not None and not future.done(), "the run ended before a worker was killed"
    nanny = next(n for n in client.cluster.workers.values() if n.worker_address == victim)
    nanny.process.process.kill()  # SIGKILL: no goodbye, its memory lost
    np.testing.assert_allclose(future.result(timeout=120), sum_xyz(x, y, z), rtol=1e-10)


# Random programs (tests/programs.py), their batch tripled and split in three: every kind of
# kernel the op tables make goes through the partitioning pass and back to NumPy's answer.

@pytest.mark.slow
@pytest.mark.deep
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(ops=BEFORE_LINALG))  # np.linalg: refused by the dask backend, by name
def test_random_programs_split_in_three_match_numpy(case):
    inputs, steps, n_out = case
    m = max((x.shape[0] for x in inputs if np.ndim(x) == 2), default=1)
    assume(m > 1)
    inputs = [np.concatenate([x] * 3) if np.ndim(x) == 2 and x.shape[0] == m else x
              for x in inputs]
    args = [da.from_array(x, chunks=(m,) + x.shape[1:]) if np.ndim(x) == 2 and
            x.shape[0] == 3 * m else x for x in inputs]
    program = build(steps, n_out)
    with np.errstate(all="ignore"):
        want = program(*[x.copy() for x in inputs])
        try:
            ex = xe.explore(program, *args, backend="dask")
        except CompileError:
            assume(False)  # what the cpu backend does not compile: its own tests say so
        got = dask.compute(ex.run(*args), scheduler="sync")[0]
    for i, (g, w) in enumerate(zip(got, want)):
        assert np.shape(g) == np.shape(w), describe(steps)
        check = compare(f"output {i}", np.asarray(g), w, computed_precision(ex.module))
        assert check.ok, f"{describe(steps)}\n{check}\n{ex.hlo('partitioning')}"


@pytest.mark.parametrize("init, mark", [("0", "partial-reduce"), ("5", "rechunk")])
def test_a_reduction_from_another_value_than_its_identity_is_not_partial(init, mark):
    """Each chunk's partial would count an initial value of 5 once more: that one runs whole."""
    from xla_explorer.passes.partition import Split, partition

    module = xe.parse_hlo(f"""HloModule m

add {{
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT c = f64[] add(a, b)
}}

ENTRY e {{
  x = f64[8] parameter(0)
  i = f64[] constant({init})
  ROOT r = f64[] reduce(x, i), dimensions={{0}}, to_apply=add
}}
""")
    plan = partition(module, (4, 4), (Split("batched", 0),))
    assert plan.kernels["r"].mark == mark


def test_a_fori_loop_is_refused_by_name():
    x = da.ones((8, 2), chunks=(4, 2))
    with pytest.raises(xe.UnsupportedOpError, match=r"while loops \(while\.\d+, made by"):
        xe.explore(lambda x: xe.fori_loop(0, 3, lambda i, v: v * 2, x), x, backend="dask")
