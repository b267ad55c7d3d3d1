"""`xe.fori_loop`: a loop traced once as an HLO `while`, run by the interpreter and compiled
once for the CPU, against the same loop run by NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.ir.parser import parse_hlo
from xla_explorer.ir.verify import verify
from xla_explorer.runtime.reference import run_module
from xla_explorer.tree import leaves

F32 = np.float32
BACKENDS = ["interpreter", "cpu"]


def heat_step(i, u):
    return u + F32(0.25) * (np.roll(u, 1) - F32(2) * u + np.roll(u, -1))


def numpy_loop(lower, upper, body, value):
    for i in range(lower, upper):
        value = body(i, value)
    return value


def same(got, want):
    got_leaves, want_leaves = leaves(got), leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert np.asarray(g).dtype == np.asarray(w).dtype


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("steps", [0, 1, 2, 7, 200])
def test_a_stencil_loop_matches_numpys(backend, steps):
    u = np.sin(np.linspace(0, 6, 64)).astype(F32)
    f = xe.jit(lambda u: xe.fori_loop(0, steps, heat_step, u), backend=backend)
    same(f(u), numpy_loop(0, steps, heat_step, u))


def test_the_loop_is_one_while_whose_body_is_one_step():
    u = np.ones(16, F32)
    ex = xe.explore(lambda u: xe.fori_loop(0, 200, heat_step, u), u, backend="interpreter")
    traced = ex.stages[0].module
    (loop,) = [i for i in traced.entry.instructions if i.opcode == "while"]
    body = traced.computation(loop.attr("body"))
    assert sum(i.opcode == "concatenate" for i in body.instructions) == 2  # the two rolls
    assert len(traced.entry.instructions) < 10
    assert '"known_trip_count":{"n":"200"}' in loop.attr("backend_config")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strided_or_transposed_starting_state(backend):
    # The state starts as a copy of the operand: the cpu's copy read only C-contiguous
    # arrays, and a view of a column failed to compile.
    f = xe.jit(lambda u: xe.fori_loop(0, 5, heat_step, u), backend=backend)
    grid = np.sin(np.linspace(0, 6, 96)).astype(F32).reshape(4, 24)
    for u in (grid[:, 3], grid.T, grid[::2, ::-3]):
        same(f(u), numpy_loop(0, 5, heat_step, u))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_body_reads_the_counter_and_values_it_closes_over(backend):
    a = np.random.default_rng(0).standard_normal((12, 12)).astype(F32)
    w = np.linspace(1, 2, 12).astype(F32)  # a NumPy array: a constant, carried in the state

    def program(a, v):
        def step(i, state):
            v, total = state
            v = a @ v * w
            v = v / np.sqrt(np.sum(v * v))
            return v, total + i
        return xe.fori_loop(3, 40, step, (v, np.int64(0)))

    def numpy_program(a, v):
        def step(i, state):
            v, total = state
            v = a @ v * w
            return v / np.sqrt(np.sum(v * v)), total + i
        return numpy_loop(3, 40, step, (v, np.int64(0)))

    v = np.ones(12, F32)
    got = xe.jit(program, backend=backend)(a, v)
    want = numpy_program(a, v)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert int(got[1]) == int(want[1]) == sum(range(3, 40))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("steps", [3, 4])  # an odd count ends in the second set of buffers
def test_state_elements_that_swap_or_stay(backend, steps):
    def program(x, y, z):
        return xe.fori_loop(0, steps, lambda i, s: (s[1], s[0] + 1, s[2], s[1] * 2), (x, y, z, x))

    x, y, z = np.zeros(3), np.arange(3.0), np.full(3, 7.0)
    got = xe.jit(program, backend=backend)(x, y, z)
    same(got, numpy_loop(0, steps, lambda i, s: (s[1], s[0] + 1, s[2], s[1] * 2), (x, y, z, x)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dict_state_and_a_python_number(backend):
    def program(x):
        return xe.fori_loop(0, 5, lambda i, s: {"x": s["x"] * 2, "n": s["n"] + 0.5},
                            {"x": x, "n": 1.0})

    got = xe.jit(program, backend=backend)(np.ones(4, np.int32))
    assert isinstance(got, dict)
    same(got, {"x": np.full(4, 32, np.int32), "n": np.float64(3.5)})


def test_not_tracing_it_is_the_python_loop():
    calls = []
    out = xe.fori_loop(0, 4, lambda i, v: calls.append(i) or v + i, 10)
    assert out == 16 and calls == [0, 1, 2, 3]


def test_a_loop_of_a_thousand_steps_traces_its_body_once():
    u = np.sin(np.linspace(0, 6, 32)).astype(F32)
    ex = xe.explore(lambda u: xe.fori_loop(0, 1000, heat_step, u), u, backend="cpu")
    assert len(ex.stages[0].module.entry.instructions) < 10
    np.testing.assert_array_equal(ex.run(u), numpy_loop(0, 1000, heat_step, u))


def test_the_hlo_text_reads_back_and_runs():
    u = np.cos(np.linspace(0, 3, 8)).astype(F32)
    ex = xe.explore(lambda u: xe.fori_loop(0, 9, heat_step, u), u, backend="interpreter")
    module = verify(parse_hlo(ex.stages[0].module.to_text()))
    (got,) = run_module(module, [u])
    np.testing.assert_array_equal(got, numpy_loop(0, 9, heat_step, u))


@pytest.mark.parametrize("body, message", [
    (lambda i, v: (v, v), "another structure"),
    (lambda i, v: v[:2], "changes element 0"),
    (lambda i, v: v.astype(np.float64), "changes element 0"),
])
def test_a_body_that_changes_the_state_is_refused_at_its_line(body, message):
    with pytest.raises(TypeError, match=message) as err:
        xe.explore(lambda v: xe.fori_loop(0, 3, body, v), np.ones(4, F32))
    assert "test_fori_loop.py" in str(err.value)


def test_a_traced_bound_is_refused():
    with pytest.raises(TypeError, match="bound is a traced value"):
        xe.explore(lambda v, n: xe.fori_loop(0, n.sum(), lambda i, v: v, v),
                   np.ones(4, F32), np.ones(2))


def test_the_cpu_backend_refuses_a_loop_of_unknown_count_and_the_interpreter_runs_it():
    text = """
HloModule m

cond {
  cs = (f32[4]) parameter(0)
  cx = f32[4] get-tuple-element(cs), index=0
  czero = f32[] constant(0)
  csum = f32[] reduce(cx, czero), dimensions={0}, to_apply=add
  climit = f32[] constant(100)
  ROOT clt = pred[] compare(csum, climit), direction=LT
}

add {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT s = f32[] add(lhs, rhs)
}

body {
  bs = (f32[4]) parameter(0)
  bx = f32[4] get-tuple-element(bs), index=0
  btwo = f32[] constant(2)
  bb = f32[4] broadcast(btwo), dimensions={}
  by = f32[4] multiply(bx, bb)
  ROOT bt = (f32[4]) tuple(by)
}

ENTRY e {
  x = f32[4] parameter(0)
  t = (f32[4]) tuple(x)
  w = (f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=0
}
"""
    module = verify(parse_hlo(text))
    x = np.ones(4, F32)
    np.testing.assert_array_equal(xe.Exploration.from_module(module, backend="interpreter")
                                  .run(x), np.full(4, 32, F32))  # 4 * 32 = 128 >= 100
    with pytest.raises(xe.UnsupportedOpError, match="trip count is not known"):
        xe.Exploration.from_module(module, backend="cpu")


def test_the_cuda_backend_says_it_does_not_compile_loops_yet():
    with pytest.raises(xe.UnsupportedOpError, match="cuda backend does not compile while"):
        xe.explore(lambda u: xe.fori_loop(0, 3, heat_step, u), np.ones(4, F32), backend="cuda")


def test_the_kernels_tab_lists_the_loop_kernel_and_its_bodys_kernels():
    u = np.ones(32, F32)
    ex = xe.explore(lambda u: xe.fori_loop(0, 5, heat_step, u), u, backend="cpu")
    (loop,) = [i for i in ex.module.entry.instructions if i.opcode == "while"]
    body = loop.attr("body")
    names = list(ex.kernels)
    assert names[0] == ex.kernel_of(loop.name) and "loaded_function(" in ex.kernels[names[0]]
    inside = [n for n in names if n.startswith(f"{body}/")]
    # The step's stencil kernel, the counter's, and the body's driver (one step).
    assert len(inside) == 3 and f"{body}/run" in inside
    assert all("@njit" in ex.kernels[n] for n in inside)
    assert f"\n{body} {{" in ex.module.to_text()  # the body, beside the entry that calls it


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_in_a_loops_body(backend):
    # The inner loop's starting count is a constant of the outer body's program, which makes
    # it itself (the loop kernel passes the state alone).
    def nested(x):
        return xe.fori_loop(0, 3, lambda i, x: xe.fori_loop(2, 6, lambda j, y: y * 1.5 + j, x)
                            - i, x)

    x = np.linspace(0, 1, 5)
    same(xe.jit(nested, backend=backend)(x), nested(x))


@pytest.mark.parametrize("closes_over", [False, True], ids=["plain-steps", "traced-steps"])
def test_the_traces_value_of_the_loop_is_numpys(monkeypatch, closes_over):
    # A body that reads nothing from the trace has its later steps computed by NumPy alone
    # (trace/loops._plain_steps); one that closes over a traced array has them traced again.
    # Either way the value tracing gives (the eager answer) is NumPy's loop, bit for bit.
    from xla_explorer.trace import loops
    from xla_explorer.trace.tracer import trace

    ran = []
    plain = loops._plain_steps
    monkeypatch.setattr(loops, "_plain_steps", lambda *a: ran.append(a[1:3]) or plain(*a))
    u = np.sin(np.linspace(0, 6, 48)).astype(F32)
    w = np.cos(np.linspace(0, 3, 48)).astype(F32)

    def body(i, state):  # reads the counter (int64 in NumPy), keeps float32 and a tuple
        v, s = state
        v = heat_step(i, v) + F32(1e-3) * (i % 7).astype(F32) * (w if closes_over else v)
        return v, s + v.sum()

    def f(u, w_traced):
        nonlocal w
        if closes_over:
            w = w_traced
        return loops.fori_loop(2, 60, body, (u, F32(0)))

    traced = trace(f, (u, w))
    w = np.cos(np.linspace(0, 3, 48)).astype(F32)
    want = numpy_loop(2, 60, lambda i, state: body(np.int64(i), state), (u, F32(0)))
    same(tuple(traced.eager_outputs), want)
    assert ran == ([] if closes_over else [(3, 60)])
