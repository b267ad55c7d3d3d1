"""Rolling an unrolled Python loop back into a while (`passes/loop_rolling.py`): which loops
roll, the note each loop gets, and the rolled program against NumPy's loop."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import PassOptions, get_backend
from xla_explorer.passes.loop_rolling import RollLoops, RollOptions

F32 = np.float32
BACKENDS = ["interpreter", "cpu"]


def heat(u, steps=200):
    for _ in range(steps):
        u = u + F32(0.25) * (np.roll(u, 1) - F32(2) * u + np.roll(u, -1))
    return u


def leapfrog(x, v):
    """Two values handed on, each step reading both."""
    for _ in range(300):
        v = v - F32(0.01) * np.sin(x)
        x = x + F32(0.01) * v
    return x, v


def gradient_descent(a, b, w):
    """The step reads a and b, from before the loop, and a.T, made once."""
    for _ in range(150):
        w = w - F32(0.01) * (a.T @ (a @ w - b))
    return w


def power_iteration(a, v):
    """A reduction (its `add` computation) in every step."""
    for _ in range(120):
        v = a @ v
        v = v / np.sqrt(np.sum(v * v))
    return v


def read_after(u):
    """`d`, made in the step and not handed on, is read after the loop: the last step's."""
    for _ in range(200):
        d = np.tanh(u) * F32(0.5)
        u = u - F32(0.1) * d
    return u, d


def two_loops(u):
    for _ in range(300):
        u = np.cos(u) * F32(0.9) + F32(0.05)
    s = u.sum()
    for _ in range(300):
        u = u * F32(0.99) - s * F32(1e-4)
    return u


def every_step_kept(u):
    """Each step's value is read after the loop: no while can hand them all on."""
    seen = []
    for _ in range(150):
        u = np.sin(u) + F32(1)
        seen.append(u)
    return np.stack(seen)


def forced(x, v):
    """A driven oscillator: each step adds np.sin(0.05 * i), a number Python computes while
    tracing, so the steps differ by a constant (read from a table when rolled)."""
    for i in range(200):
        v = v - F32(0.01) * (F32(4) * x + F32(0.1) * v) + F32(0.01) * F32(np.sin(0.05 * i))
        x = x + F32(0.01) * v
    return x, v


PROGRAMS = {
    "heat": (heat, [(64,)]),
    "forced": (forced, [(32,), (32,)]),
    "leapfrog": (leapfrog, [(32,), (32,)]),
    "gradient_descent": (gradient_descent, [(64, 8), (64,), (8,)]),
    "power_iteration": (power_iteration, [(16, 16), (16,)]),
    "read_after": (read_after, [(48,)]),
    "two_loops": (two_loops, [(40,)]),
}


def inputs(shapes):
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(s) * 0.1).astype(F32) for s in shapes]


def roll_stage(ex):
    (stage,) = [s for s in ex.stages if s.name == "roll-loops"]
    return stage


def loops(module):
    return [i for i in module.entry.instructions if i.opcode == "while"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_rolled_loop_matches_numpys(backend, name):
    f, shapes = PROGRAMS[name]
    args = inputs(shapes)
    ex = xe.explore(f, *args, backend=backend)
    rolled = loops(roll_stage(ex).module)
    assert rolled, [str(n) for n in roll_stage(ex).notes]
    got, want = ex.run(*args), f(*args)
    for g, w in zip(got if isinstance(got, tuple) else [got],
                    want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


def test_each_loop_rolls_into_one_while_of_its_count():
    ex = xe.explore(two_loops, *inputs([(40,)]), backend="interpreter")
    counts = [int(i.attr("backend_config").split('"n":"')[1].split('"')[0])
              for i in loops(roll_stage(ex).module)]
    assert counts == [300, 299]  # the second's first step makes s * 1e-4
    assert [n.rule for n in roll_stage(ex).notes] == ["rolled", "rolled"]


def test_the_first_step_is_in_the_loop_and_the_body_is_one_step():
    """Tracing made the step's constants in the first step; the pass moves them before the
    loop (and into the body), so all 200 steps roll, none left unrolled."""
    ex = xe.explore(heat, np.ones(64, F32), backend="interpreter")
    module = roll_stage(ex).module
    (loop,) = loops(module)
    assert '"n":"200"' in loop.attr("backend_config")
    assert sum(i.opcode == "concatenate" for i in module.entry.instructions) == 0
    body = module.computation(loop.attr("body"))
    assert sum(i.opcode == "concatenate" for i in body.instructions) == 2  # its two rolls
    (note,) = roll_stage(ex).notes
    assert "200 steps of 11 instructions" in note.message and "line" in note.message


def test_the_cpu_compiles_the_step_once():
    ex = xe.explore(heat, np.ones(64, F32), backend="cpu")
    ex.run(np.ones(64, F32))
    names = list(ex.executable.kernels)
    assert any("/" in n for n in names)  # the body's kernels, listed under its name
    assert len(names) <= 4, names


def test_the_last_steps_values_are_read_after_the_loop_not_the_first():
    u = inputs([(48,)])[0]
    got_u, got_d = xe.jit(read_after, backend="cpu")(u)
    want_u, want_d = read_after(u)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-6)
    np.testing.assert_allclose(got_u, want_u, rtol=1e-6)


def test_a_loop_whose_every_step_is_read_after_it_stays_unrolled_and_says_why():
    u = inputs([(8,)])[0]
    # On the interpreter: the pass decides alike for every target, and the CPU would spend
    # 20 s of the suite compiling 150 unrolled steps to say the same.
    ex = xe.explore(every_step_kept, u, backend="interpreter")
    assert not loops(roll_stage(ex).module)
    (note,) = roll_stage(ex).notes
    assert note.rule == "not-rolled" and "after the loop, reads a value of an earlier step" in \
        note.message
    np.testing.assert_allclose(ex.run(u), every_step_kept(u), rtol=1e-6)


def test_a_short_loop_stays_unrolled_and_says_why():
    ex = xe.explore(heat, np.ones(64, F32), 10, backend="interpreter")
    (note,) = roll_stage(ex).notes
    assert note.rule == "not-rolled" and "110 instructions in all, under" in note.message
    assert not loops(roll_stage(ex).module)


def test_a_loop_on_large_arrays_stays_unrolled_so_fusion_can_join_steps():
    u = np.ones(1 << 19, F32)  # 2 MiB
    ex = xe.explore(heat, u, 100, backend="interpreter")
    (note,) = roll_stage(ex).notes
    assert note.rule == "not-rolled" and "2.0 MiB" in note.message


def test_a_value_from_two_steps_back_is_no_loop_to_roll():
    """Fibonacci: each step reads the step before and the one before that."""
    def fibonacci(a, b):
        for _ in range(60):
            a, b = b, a + b
        return b
    ex = xe.explore(fibonacci, np.ones(4), np.ones(4), backend="interpreter")
    module = ex.stages[[s.name for s in ex.stages].index("dce")].module
    result = RollLoops(RollOptions(min_instructions=0)).run(module)
    assert not loops(result.module)
    (note,) = result.notes
    assert "reads a value made 2 steps before its own" in note.message
    np.testing.assert_array_equal(ex.run(np.ones(4), np.ones(4)),
                                  fibonacci(np.ones(4), np.ones(4)))


def test_the_cuda_backend_keeps_loops_unrolled():
    """It compiles no while loop; the other backends roll."""
    names = {b: [p.name for p in get_backend(b).passes(PassOptions())]
             for b in ("cuda", "cpu", "interpreter")}
    assert "roll-loops" not in names["cuda"]
    assert "roll-loops" in names["cpu"] and "roll-loops" in names["interpreter"]


def test_a_rolled_loop_in_an_autoclustered_program():
    def f(u):
        u = heat(u, 150)
        return np.unique(np.round(u, 1))
    u = np.sin(np.linspace(0, 6, 64)).astype(F32)
    ex = xe.explore(f, u, backend="cpu", autocluster=True)
    np.testing.assert_array_equal(ex.run(u), f(u))


def running_mean(xs):
    m = np.zeros(xs.shape[1])
    for k in range(xs.shape[0]):
        m = m + (xs[k] - m) / (k + 1)
    return m


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_slice_at_the_counter_is_read_with_a_dynamic_slice(backend):
    """`xs[k]` slices each step at the next row: the body reads the row at its counter
    (and `/ (k + 1)` from a table)."""
    xs = np.random.default_rng(0).standard_normal((150, 5))
    ex = xe.explore(running_mean, xs, backend=backend)
    (note,) = roll_stage(ex).notes
    assert note.rule == "rolled" and "slices xs" in note.message
    assert "moves with the counter" in note.message and "table of" in note.message
    module = roll_stage(ex).module
    (loop,) = loops(module)
    body = module.computation(loop.attr("body"))
    (row,) = [i for i in body.instructions
              if i.opcode == "dynamic-slice" and i.operands[0].shape.dims == (150, 5)]
    assert row.attr("dynamic_slice_sizes") == (1, 5)
    np.testing.assert_allclose(ex.run(xs), running_mean(xs), rtol=1e-12)


def test_a_slice_that_moves_unevenly_stays_unrolled_and_points_to_fori_loop():
    """`xs[k * k % 97]` reads rows no counter arithmetic of this pass makes: no while here,
    and the note says why and what would trace it once."""
    def squares(xs):
        m = np.zeros(xs.shape[1])
        for k in range(45):  # k * k % 97: no row twice
            m = m * 0.5 + xs[k * k % 97]
        return m

    xs = np.random.default_rng(0).standard_normal((97, 8))
    ex = xe.explore(squares, xs, backend="interpreter")
    (note,) = roll_stage(ex).notes
    assert note.rule == "not-rolled" and "do not move by the same amount" in note.message
    assert "xe.fori_loop" in note.message and "counter" in note.message
    assert not loops(roll_stage(ex).module)
    np.testing.assert_allclose(ex.run(xs), squares(xs))
    # A loop that rolls gets its own note, not this one too.
    ex = xe.explore(heat, np.ones(64, F32), backend="interpreter")
    assert [n.rule for n in roll_stage(ex).notes] == ["rolled"]


def test_steps_that_differ_by_an_array_of_indices_are_pointed_to_fori_loop():
    """`xs[[k, k + 1]]` gathers with an index array of each step's own: the steps are alike
    by opcode and shape alone, and the note says what would trace such a loop once."""
    def pairs(xs):
        m = np.zeros(xs.shape[1])
        for k in range(40):
            m = m * 0.5 + xs[[k, k + 1]].sum(axis=0)
        return m

    xs = np.random.default_rng(0).standard_normal((41, 8))
    ex = xe.explore(pairs, xs, backend="interpreter")
    (note,) = roll_stage(ex).notes
    assert note.rule == "not-rolled" and "alike but for an index" in note.message
    assert "xe.fori_loop" in note.message and not loops(roll_stage(ex).module)
    np.testing.assert_allclose(ex.run(xs), pairs(xs))


def test_a_first_step_read_after_the_loop_stays_before_it():
    """The first step's value is kept: the loop rolls from the second step on."""
    def first_kept(u):
        for k in range(200):
            u = u + F32(0.25) * (np.roll(u, 1) - F32(2) * u + np.roll(u, -1))
            if k == 0:
                first = u
        return u, first

    u = inputs([(64,)])[0]
    for backend in BACKENDS:
        ex = xe.explore(first_kept, u, backend=backend)
        (loop,) = loops(roll_stage(ex).module)
        assert '"n":"199"' in loop.attr("backend_config")
        (note,) = roll_stage(ex).notes
        assert "The first step stays unrolled before it" in note.message
        for got, want in zip(ex.run(u), first_kept(u)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_rotation_of_three_values_says_what_would_trace_it_once():
    def rotate3(a, b, c):
        for _ in range(300):
            a, b, c = b, c, 0.3 * a + 0.5 * b - 0.25 * c
        return a, b, c

    x = np.linspace(0, 1, 4)
    ex = xe.explore(rotate3, x, x * 2, x * 3, backend="interpreter")
    (note,) = roll_stage(ex).notes
    assert note.rule == "not-rolled" and "steps before its own" in note.message
    assert "xe.fori_loop(0, n, body, (a, b, c))" in note.message
    for got, want in zip(ex.run(x, x * 2, x * 3), rotate3(x, x * 2, x * 3)):
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_steps_that_differ_by_constants_read_them_from_a_table(backend):
    """Adam's bias correction reads t: Python computes 1 - 0.9 ** t and 1 - 0.999 ** t while
    tracing, so each step has constants of its own. The loop rolls all the same: the body
    reads them from tables of their values, one a step, by its counter."""
    def adam(w, target):
        m, v = np.zeros_like(w), np.zeros_like(w)
        for t in range(1, 41):
            g = 2 * (w - target)
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            w = w - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        return w

    w, target = np.linspace(0.5, 1.5, 8), np.zeros(8)
    ex = xe.explore(adam, w, target, backend=backend)
    (note,) = roll_stage(ex).notes
    module = roll_stage(ex).module
    (loop,) = loops(module)
    # A step or two at the ends stay unrolled: m and v start as zeros, which the simplifier
    # folds into the first step, and the last step's w is the result.
    n = int(loop.attr("backend_config").split('"n":"')[1].split('"')[0])
    assert 35 <= n <= 40 and note.rule == "rolled" and f"{n} steps" in note.message
    assert "2 constants that change" in note.message and f"tables of {n} values" in note.message
    tables = sorted((tuple(i.literal) for i in module.entry.instructions
                     if i.opcode == "constant" and i.dims == (n,)), reverse=True)
    first = round(np.log(1 - tables[0][0]) / np.log(0.9))  # the t of the loop's first step
    t = np.arange(first, first + n)
    assert 1 <= first and first + n - 1 <= 40
    assert np.allclose(tables, [1 - 0.9 ** t, 1 - 0.999 ** t], rtol=1e-15)
    body = module.computation(loop.attr("body"))
    assert sum(i.opcode == "dynamic-slice" for i in body.instructions) == 2
    np.testing.assert_allclose(ex.run(w, target), adam(w, target), rtol=1e-12)


def test_a_long_sequence_sliced_a_row_a_step_rolls_however_large():
    """Each step reads one row of xs: the sequence's size (2 MiB here, over the 1 MiB a step's
    arrays may take) does not keep the loop unrolled."""
    xs = np.random.default_rng(0).standard_normal((2048, 128))
    assert xs.nbytes > RollOptions().max_array_bytes

    def first_rows(xs):
        m = np.zeros(xs.shape[1])
        for k in range(200):
            m = m * 0.9 + xs[k]
        return m

    ex = xe.explore(first_rows, xs, backend="interpreter")
    (note,) = roll_stage(ex).notes
    assert note.rule == "rolled", note.message
    np.testing.assert_allclose(ex.run(xs), first_rows(xs))


def test_one_loop_rolled_as_two_says_so():
    """From about step 165, 1 - 0.9 ** t is 1 in float32: the simplifier drops the division
    by it, the steps get shorter, and the loop rolls as two whiles; the second's note says
    they are the same lines."""
    def adam(w, target):
        m, v = np.zeros_like(w), np.zeros_like(w)
        for t in range(1, 301):
            g = F32(2) * (w - target)
            m = F32(0.9) * m + F32(0.1) * g
            v = F32(0.999) * v + F32(0.001) * g * g
            w = w - F32(0.01) * (m / F32(1 - 0.9 ** t)) / (
                np.sqrt(v / F32(1 - 0.999 ** t)) + F32(1e-8))
        return w

    w, target = np.linspace(0.5, 1.5, 16, dtype=F32), np.zeros(16, F32)
    ex = xe.explore(adam, w, target, backend="interpreter")
    first, second = roll_stage(ex).notes
    assert "The same lines" not in first.message
    assert f"The same lines rolled into {first.instructions[0]} before it" in second.message
    np.testing.assert_allclose(ex.run(w, target), adam(w, target), rtol=1e-5)
