"""Random NumPy programs of 1 to 30 ops: trace, run the pipeline, interpret, compare with NumPy.

Every value in a program has a shape that broadcasts to (m, n): (m, n), (m, 1), (1, n) or
(1, 1), so any two can meet in a binary op and reductions with keepdims stay in the family.
Unary ops keep values bounded so chains of 30 stay finite (NaN and inf are compared as equal
anyway, but finite values test far more).
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xla_explorer as xe
from xla_explorer.api import compare

UNARY = [
    ("tanh", np.tanh),
    ("sin", np.sin),
    ("cos", np.cos),
    ("negative", np.negative),
    ("abs", np.abs),
    ("sqrt|x|", lambda x: np.sqrt(np.abs(x))),
    ("log1p|x|", lambda x: np.log1p(np.abs(x))),
    ("exp(-|x|)", lambda x: np.exp(-np.abs(x))),
    ("floor", np.floor),
    ("ceil", np.ceil),
    ("rint", np.rint),
    ("arctan", np.arctan),
    ("min(x*x, 10)", lambda x: np.minimum(x * x, 10)),
    ("x * 1 + 0", lambda x: x * 1 + 0),
    ("--x", lambda x: -(-x)),
    ("x.T.T", lambda x: x.T.T),
    ("flip0", lambda x: np.flip(x, 0)),
    ("flip1", lambda x: x[:, ::-1]),
    ("roll1", lambda x: np.concatenate([x[:, 1:], x[:, :1]], axis=1)),
    ("reshape-back", lambda x: x.reshape(-1).reshape(x.shape)),
    ("sign", np.sign),
    ("cosh-clip", lambda x: np.cosh(np.clip(x, -3, 3))),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("f64", lambda x: x.astype(np.float64)),
    ("f32", lambda x: x.astype(np.float32)),
    ("relu", lambda x: np.maximum(x, 0)),
    ("where-pos", lambda x: np.where(x > 0, x, 0.5 * x)),
    ("square-mean", lambda x: np.square(x) - np.mean(x)),
    ("x*2.5", lambda x: x * 2.5),
    ("3-x", lambda x: 3 - x),
    ("gram", lambda x: x @ (x.T @ x) * 0.01),  # two dots: kernels BLAS runs, fusion around them
]

BINARY = [
    ("add", np.add),
    ("subtract", np.subtract),
    ("multiply", np.multiply),
    ("maximum", np.maximum),
    ("minimum", np.minimum),
    ("safe-divide", lambda a, b: a / (1 + np.abs(b))),
    ("arctan2", np.arctan2),
    ("where", lambda a, b: np.where(a > b, a, b)),
    ("hypot-ish", lambda a, b: np.sqrt(a * a + b * b)),
    ("fmax", np.fmax),
    ("logical", lambda a, b: np.where(np.logical_and(a > 0, b < 0), a, b)),
]


def _reduce(name, fn):
    return (name, fn)


REDUCE = [
    ("sum0", lambda x: np.sum(x, axis=0, keepdims=True)),
    ("sum1", lambda x: x.sum(axis=1, keepdims=True)),
    ("mean-all", lambda x: np.mean(x, keepdims=True)),
    ("max1", lambda x: np.max(x, axis=1, keepdims=True)),
    ("min0", lambda x: x.min(axis=0, keepdims=True)),
    ("std1", lambda x: np.std(x, axis=1, keepdims=True)),
    ("var0", lambda x: np.var(x, axis=0, keepdims=True)),
    ("softmax1", lambda x: np.exp(x - x.max(1, keepdims=True))
     / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)),
    ("argmax1-as-float", lambda x: np.argmax(x, axis=1).reshape(-1, 1).astype(np.float32)),
    ("any-pos", lambda x: np.where(np.any(x > 0, axis=0, keepdims=True), 1.0, -1.0)),
]

OPS = [("u",) + u for u in UNARY] + [("b",) + b for b in BINARY] + [("r",) + r for r in REDUCE]


@st.composite
def programs(draw, ops=None):
    """(inputs, steps, number of outputs); `ops` limits the steps to those names."""
    choices = [k for k, o in enumerate(OPS) if ops is None or o[1] in ops]
    m = draw(st.integers(1, 5))
    n = draw(st.integers(1, 6))
    dtypes = draw(st.lists(st.sampled_from([np.float32, np.float64]), min_size=1, max_size=3))
    shapes = draw(st.lists(st.sampled_from([(m, n), (m, 1), (1, n), ()]),
                           min_size=len(dtypes), max_size=len(dtypes)))
    seed = draw(st.integers(0, 2**31 - 1))
    steps = draw(st.lists(st.tuples(st.sampled_from(choices), st.integers(0, 10**6),
                                    st.integers(0, 10**6)), min_size=1, max_size=30))
    n_out = draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    inputs = [np.asarray(rng.uniform(-3, 3, size=s)).astype(dt) for s, dt in zip(shapes, dtypes)]
    return inputs, steps, n_out


def build(steps, n_out):
    """The program as a plain Python function of its inputs: NumPy or traced, alike."""

    def program(*inputs):
        pool = list(inputs)
        for op_index, a, b in steps:
            kind, _, fn = OPS[op_index]
            x, y = pool[a % len(pool)], pool[b % len(pool)]
            if kind != "b" and np.ndim(x) != 2:
                x = x + np.zeros((1, 1), dtype=x.dtype)  # make it (m, n)-family 2-D
            pool.append(fn(x, y) if kind == "b" else fn(x))
        return tuple(pool[-n_out:])

    program.__name__ = "program"
    return program


def describe(steps):
    return " ; ".join(OPS[i][1] for i, _, _ in steps)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_program_matches_numpy(case):
    inputs, steps, n_out = case
    program = build(steps, n_out)
    with np.errstate(all="ignore"):
        want = program(*[x.copy() for x in inputs])
        ex = xe.explore(program, *inputs)
        got = ex.run(*[x.copy() for x in inputs])
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert np.shape(g) == np.shape(w), describe(steps)
        assert np.result_type(g) == np.result_type(w), describe(steps)
        # A float64 output may carry float32 rounding from float32 inputs (NumPy's arctan and
        # arctan2 differ by an ulp, and the f32 result then converts exactly).
        precision = np.float32 if any(x.dtype == np.float32 for x in inputs) else None
        check = compare(f"output {i}", g, w, precision)
        assert check.ok, f"{describe(steps)}\n{check}\n{ex.hlo()}"
    # Every stage still verifies and prints text that parses back to itself.
    for stage in ex.stages:
        text = stage.module.to_text()
        assert xe.parse_hlo(text).to_text() == text
        xe.verify(stage.module)


# Integer programs: wrap-around, floor division and remainder signs, bits, int64 sums.
INT_UNARY = [
    ("negative", np.negative),
    ("abs", np.abs),
    ("invert", np.invert),
    ("square", np.square),
    ("sign", np.sign),
    ("x >> 1", lambda x: x >> 1),
    ("x << 2", lambda x: np.left_shift(x, 2)),
    ("x % 7", lambda x: x % 7),
    ("x // -3", lambda x: x // -3),
    ("clip", lambda x: np.clip(x, -50, 50)),
    ("sum1-keep", lambda x: np.sum(x, axis=1, keepdims=True).astype(x.dtype)),
    ("max0-keep", lambda x: x.max(axis=0, keepdims=True)),
    ("argmin1", lambda x: np.argmin(x, axis=1).reshape(-1, 1).astype(x.dtype)),
    ("flip", lambda x: x[::-1, ::-1]),
    ("to-float-and-back", lambda x: (x * 0.5).astype(x.dtype)),
    ("where-even", lambda x: np.where(x % 2 == 0, x, -x)),
]
INT_BINARY = [
    ("add", np.add),
    ("subtract", np.subtract),
    ("multiply", np.multiply),
    ("floor_divide", lambda a, b: a // (np.abs(b) + 1)),
    ("remainder", lambda a, b: a % (np.abs(b) + 1)),
    ("negative-divisor", lambda a, b: np.floor_divide(a, -(np.abs(b) + 1))),
    ("bitwise_and", np.bitwise_and),
    ("bitwise_or", np.bitwise_or),
    ("bitwise_xor", np.bitwise_xor),
    ("maximum", np.maximum),
    ("minimum", np.minimum),
    ("where-less", lambda a, b: np.where(a < b, a, b)),
    ("logical_xor", lambda a, b: np.logical_xor(a > 0, b > 0).astype(a.dtype)),
]
INT_OPS = [("u",) + u for u in INT_UNARY] + [("b",) + b for b in INT_BINARY]


@st.composite
def int_programs(draw):
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    dtypes = draw(st.lists(st.sampled_from([np.int32, np.int64]), min_size=1, max_size=3))
    shapes = draw(st.lists(st.sampled_from([(m, n), (m, 1), (1, n)]),
                           min_size=len(dtypes), max_size=len(dtypes)))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    inputs = [rng.integers(-100, 100, size=s).astype(dt) for s, dt in zip(shapes, dtypes)]
    steps = draw(st.lists(st.tuples(st.integers(0, len(INT_OPS) - 1), st.integers(0, 10**6),
                                    st.integers(0, 10**6)), min_size=1, max_size=30))
    return inputs, steps


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(int_programs())
def test_random_integer_program_matches_numpy(case):
    inputs, steps = case

    def program(*xs):
        pool = list(xs)
        for op_index, a, b in steps:
            kind, _, fn = INT_OPS[op_index]
            x, y = pool[a % len(pool)], pool[b % len(pool)]
            pool.append(fn(x, y) if kind == "b" else fn(x))
        return pool[-1]

    with np.errstate(all="ignore"):
        want = program(*[x.copy() for x in inputs])
        got = xe.explore(program, *inputs).run(*[x.copy() for x in inputs])
    names = " ; ".join(INT_OPS[i][1] for i, _, _ in steps)
    assert got.dtype == want.dtype and got.shape == want.shape, names
    np.testing.assert_array_equal(got, want, err_msg=names)
