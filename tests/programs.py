"""Random NumPy programs: the op tables, the hypothesis strategies, and the programs as code.

Shared by the property tests (tests/test_random_programs.py and those that import it) and the
fuzzer (tests/fuzz.py, `make fuzz`).

Every value in a float program has a shape that broadcasts to (m, n): (m, n), (m, 1), (1, n)
or (1, 1), so any two can meet in a binary op and reductions with keepdims stay in the family.
Unary ops keep values bounded so chains of 30 stay finite (NaN and inf are compared as equal
anyway, but finite values test far more).

Each op is written (name, NumPy function, source template). The template is the same
expression as NumPy source, with `{x}` (and `{y}` for binary ops) standing for operand names;
`render` writes a program with it as a runnable snippet, and tests/test_fuzz.py checks that
every template computes exactly what its function does. `OPS[i]` stays (kind, name, function)
and `TEMPLATES[i]` is its template. The order of the tables is part of the hypothesis
examples (a step draws an index into them): append, never insert.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

UNARY = [
    ("tanh", np.tanh, "np.tanh({x})"),
    ("sin", np.sin, "np.sin({x})"),
    ("cos", np.cos, "np.cos({x})"),
    ("negative", np.negative, "np.negative({x})"),
    ("abs", np.abs, "np.abs({x})"),
    ("sqrt|x|", lambda x: np.sqrt(np.abs(x)), "np.sqrt(np.abs({x}))"),
    ("log1p|x|", lambda x: np.log1p(np.abs(x)), "np.log1p(np.abs({x}))"),
    ("exp(-|x|)", lambda x: np.exp(-np.abs(x)), "np.exp(-np.abs({x}))"),
    ("floor", np.floor, "np.floor({x})"),
    ("ceil", np.ceil, "np.ceil({x})"),
    ("rint", np.rint, "np.rint({x})"),
    ("arctan", np.arctan, "np.arctan({x})"),
    ("min(x*x, 10)", lambda x: np.minimum(x * x, 10), "np.minimum({x} * {x}, 10)"),
    ("x * 1 + 0", lambda x: x * 1 + 0, "{x} * 1 + 0"),
    ("--x", lambda x: -(-x), "-(-{x})"),  # noqa: B002 - a double negation is the case
    ("x.T.T", lambda x: x.T.T, "{x}.T.T"),
    ("flip0", lambda x: np.flip(x, 0), "np.flip({x}, 0)"),
    ("flip1", lambda x: x[:, ::-1], "{x}[:, ::-1]"),
    ("roll1", lambda x: np.concatenate([x[:, 1:], x[:, :1]], axis=1),
     "np.concatenate([{x}[:, 1:], {x}[:, :1]], axis=1)"),
    ("reshape-back", lambda x: x.reshape(-1).reshape(x.shape), "{x}.reshape(-1).reshape({x}.shape)"),
    ("sign", np.sign, "np.sign({x})"),
    ("cosh-clip", lambda x: np.cosh(np.clip(x, -3, 3)), "np.cosh(np.clip({x}, -3, 3))"),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), "1 / (1 + np.exp(-{x}))"),
    ("f64", lambda x: x.astype(np.float64), "{x}.astype(np.float64)"),
    ("f32", lambda x: x.astype(np.float32), "{x}.astype(np.float32)"),
    ("relu", lambda x: np.maximum(x, 0), "np.maximum({x}, 0)"),
    ("where-pos", lambda x: np.where(x > 0, x, 0.5 * x), "np.where({x} > 0, {x}, 0.5 * {x})"),
    ("square-mean", lambda x: np.square(x) - np.mean(x), "np.square({x}) - np.mean({x})"),
    ("x*2.5", lambda x: x * 2.5, "{x} * 2.5"),
    ("3-x", lambda x: 3 - x, "3 - {x}"),
    # two dots: kernels BLAS runs, fusion around them
    ("gram", lambda x: x @ (x.T @ x) * 0.01, "{x} @ ({x}.T @ {x}) * 0.01"),
]

BINARY = [
    ("add", np.add, "np.add({x}, {y})"),
    ("subtract", np.subtract, "np.subtract({x}, {y})"),
    ("multiply", np.multiply, "np.multiply({x}, {y})"),
    ("maximum", np.maximum, "np.maximum({x}, {y})"),
    ("minimum", np.minimum, "np.minimum({x}, {y})"),
    ("safe-divide", lambda a, b: a / (1 + np.abs(b)), "{x} / (1 + np.abs({y}))"),
    ("arctan2", np.arctan2, "np.arctan2({x}, {y})"),
    ("where", lambda a, b: np.where(a > b, a, b), "np.where({x} > {y}, {x}, {y})"),
    ("hypot-ish", lambda a, b: np.sqrt(a * a + b * b), "np.sqrt({x} * {x} + {y} * {y})"),
    ("fmax", np.fmax, "np.fmax({x}, {y})"),
    ("logical", lambda a, b: np.where(np.logical_and(a > 0, b < 0), a, b),
     "np.where(np.logical_and({x} > 0, {y} < 0), {x}, {y})"),
]

REDUCE = [
    ("sum0", lambda x: np.sum(x, axis=0, keepdims=True), "np.sum({x}, axis=0, keepdims=True)"),
    ("sum1", lambda x: x.sum(axis=1, keepdims=True), "{x}.sum(axis=1, keepdims=True)"),
    ("mean-all", lambda x: np.mean(x, keepdims=True), "np.mean({x}, keepdims=True)"),
    ("max1", lambda x: np.max(x, axis=1, keepdims=True), "np.max({x}, axis=1, keepdims=True)"),
    ("min0", lambda x: x.min(axis=0, keepdims=True), "{x}.min(axis=0, keepdims=True)"),
    ("std1", lambda x: np.std(x, axis=1, keepdims=True), "np.std({x}, axis=1, keepdims=True)"),
    ("var0", lambda x: np.var(x, axis=0, keepdims=True), "np.var({x}, axis=0, keepdims=True)"),
    ("softmax1", lambda x: np.exp(x - x.max(1, keepdims=True))
     / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True),
     "np.exp({x} - {x}.max(1, keepdims=True)) / np.exp({x} - {x}.max(1, keepdims=True)).sum(1, keepdims=True)"),
    ("argmax1-as-float", lambda x: np.argmax(x, axis=1).reshape(-1, 1).astype(np.float32),
     "np.argmax({x}, axis=1).reshape(-1, 1).astype(np.float32)"),
    ("any-pos", lambda x: np.where(np.any(x > 0, axis=0, keepdims=True), 1.0, -1.0),
     "np.where(np.any({x} > 0, axis=0, keepdims=True), 1.0, -1.0)"),
]


# Scans and sorts: each keeps its operand's shape (or reduces an axis with
# keepdims), so they run as unary steps.
SCAN_SORT = [
    ("cumsum1", lambda x: np.cumsum(x, axis=1), "np.cumsum({x}, axis=1)"),
    ("cumsum0", lambda x: np.cumsum(x, axis=0), "np.cumsum({x}, axis=0)"),
    ("cumprod1-tanh", lambda x: np.cumprod(np.tanh(x), axis=1), "np.cumprod(np.tanh({x}), axis=1)"),
    ("cummax0", lambda x: np.maximum.accumulate(x, axis=0), "np.maximum.accumulate({x}, axis=0)"),
    ("running-mean1", lambda x: np.cumsum(x, axis=1) / np.arange(1, x.shape[1] + 1),
     "np.cumsum({x}, axis=1) / np.arange(1, {x}.shape[1] + 1)"),
    ("sort1", lambda x: np.sort(x, axis=1), "np.sort({x}, axis=1)"),
    ("sort0", lambda x: np.sort(x, axis=0), "np.sort({x}, axis=0)"),
    ("argsort1-as-float", lambda x: np.argsort(x, axis=1, kind="stable").astype(x.dtype),
     "np.argsort({x}, axis=1, kind=\"stable\").astype({x}.dtype)"),
    ("median1", lambda x: np.median(x, axis=1, keepdims=True),
     "np.median({x}, axis=1, keepdims=True)"),
]


def _table(**groups):
    """(ops, templates): ops[i] = (kind, name, function) as the tests unpack it (their source is
    part of their derandomized examples, so it stays as it was); templates[i] is its source."""
    rows = [(kind, name, fn, template) for kind, table in groups.items()
            for name, fn, template in table]
    return [r[:3] for r in rows], [r[3] for r in rows]


# kind "u" unary, "b" binary, "r" reduce, "s" scan or sort (a unary step too).
OPS, TEMPLATES = _table(u=UNARY, b=BINARY, r=REDUCE, s=SCAN_SORT)

# Gather and scatter: index arrays made from the value's shape, so always in range
# (repeats and negative indices included); appended after the others, whose indices stay.
GATHER = [
    ("gather-rows", lambda x: x[(np.arange(x.shape[0]) * 3 + 1) % x.shape[0]],
     "{x}[(np.arange({x}.shape[0]) * 3 + 1) % {x}.shape[0]]"),
    ("gather-cols-negative", lambda x: x[:, -1 - np.arange(x.shape[1]) // 2],
     "{x}[:, -1 - np.arange({x}.shape[1]) // 2]"),
    ("take-wrap", lambda x: np.take(x, np.arange(x.shape[1]) + 2, axis=1, mode="wrap"),
     "np.take({x}, np.arange({x}.shape[1]) + 2, axis=1, mode='wrap')"),
    ("take-along-argmax", lambda x: np.take_along_axis(x, np.argmax(x, axis=1, keepdims=True),
                                                       axis=1),
     "np.take_along_axis({x}, np.argmax({x}, axis=1, keepdims=True), axis=1)"),
    ("add-at-rows", lambda x: (lambda y: (np.add.at(y, np.arange(x.shape[0]) // 2, x), y)[1])(
        np.zeros_like(x)),
     "(lambda y: (np.add.at(y, np.arange({x}.shape[0]) // 2, {x}), y)[1])(np.zeros_like({x}))"),
]
_GATHER_OPS, _GATHER_TEMPLATES = _table(u=GATHER)
OPS += _GATHER_OPS
TEMPLATES += _GATHER_TEMPLATES

# Issue 39's functions, appended after the others (whose indices stay). Each keeps the
# (m, n) family: np.partition's and np.argpartition's arrangements are NumPy's introselect's,
# so only what they define is kept (the kth values, the sorted slice).
ISSUE_39 = [
    ("nancumsum1", lambda x: np.nancumsum(np.where(x > 2, np.nan, x), axis=1),
     "np.nancumsum(np.where({x} > 2, np.nan, {x}), axis=1)"),
    ("nancumprod0-tanh", lambda x: np.nancumprod(np.where(x < -2, np.nan, np.tanh(x)), axis=0),
     "np.nancumprod(np.where({x} < -2, np.nan, np.tanh({x})), axis=0)"),
    ("partition-kth1", lambda x: np.partition(x, x.shape[1] // 2, axis=1)[
        :, x.shape[1] // 2:x.shape[1] // 2 + 1],
     "np.partition({x}, {x}.shape[1] // 2, axis=1)[:, {x}.shape[1] // 2:{x}.shape[1] // 2 + 1]"),
    ("argpartition-min0", lambda x: np.take_along_axis(x, np.argpartition(x, 0, axis=0), 0)[:1],
     "np.take_along_axis({x}, np.argpartition({x}, 0, axis=0), 0)[:1]"),
    ("partition-sorted1", lambda x: np.sort(np.partition(x, -1, axis=1), axis=1),
     "np.sort(np.partition({x}, -1, axis=1), axis=1)"),
    ("unwrap1", lambda x: np.unwrap(x * 3, axis=1), "np.unwrap({x} * 3, axis=1)"),
    ("i0-tanh", lambda x: np.i0(np.tanh(x)), "np.i0(np.tanh({x}))"),
    ("nextafter-up", lambda x: np.nextafter(x, np.inf), "np.nextafter({x}, np.inf)"),
    ("angle", np.angle, "np.angle({x})"),
    ("inf-to-zero", lambda x: np.where(np.isposinf(x) | np.isneginf(x), 0.0, x),
     "np.where(np.isposinf({x}) | np.isneginf({x}), 0.0, {x})"),
    ("allclose-where", lambda x: np.where(np.allclose(x, x.T.T), x, -x),
     "np.where(np.allclose({x}, {x}.T.T), {x}, -{x})"),
    ("array-equal-where", lambda x: np.where(np.array_equal(x, np.abs(x)), x, 0.5 * x),
     "np.where(np.array_equal({x}, np.abs({x})), {x}, 0.5 * {x})"),
    ("put-corners", lambda x: (lambda y: (np.put(y, [0, -1], [1.5, -2.5]), y)[1])(x.copy()),
     "(lambda y: (np.put(y, [0, -1], [1.5, -2.5]), y)[1])({x}.copy())"),
    ("ix-flip0", lambda x: x[np.ix_(np.arange(x.shape[0])[::-1], np.arange(x.shape[1]))],
     "{x}[np.ix_(np.arange({x}.shape[0])[::-1], np.arange({x}.shape[1]))]"),
    ("quantile-hazen1", lambda x: np.quantile(x, 0.3, axis=1, keepdims=True, method="hazen"),
     "np.quantile({x}, 0.3, axis=1, keepdims=True, method='hazen')"),
    ("percentile-nearest0", lambda x: np.percentile(x, 60, axis=0, keepdims=True,
                                                    method="nearest"),
     "np.percentile({x}, 60, axis=0, keepdims=True, method='nearest')"),
    ("nanquantile1", lambda x: np.nanquantile(np.where(x > 1, np.nan, x), 0.4, axis=1,
                                              keepdims=True),
     "np.nanquantile(np.where({x} > 1, np.nan, {x}), 0.4, axis=1, keepdims=True)"),
    ("pad-ramp-crop", lambda x: np.pad(x, 2, mode="linear_ramp", end_values=1)[2:-2, 1:-3],
     "np.pad({x}, 2, mode='linear_ramp', end_values=1)[2:-2, 1:-3]"),
    ("pad-odd-crop", lambda x: np.pad(x, 3, mode="reflect", reflect_type="odd")[:-6, 6:],
     "np.pad({x}, 3, mode='reflect', reflect_type='odd')[:-6, 6:]"),
    ("norm-inf", lambda x: np.full((1, 1), np.linalg.norm(x, np.inf), x.dtype),
     "np.full((1, 1), np.linalg.norm({x}, np.inf), {x}.dtype)"),
]
ISSUE_39_BINARY = [
    ("nextafter", np.nextafter, "np.nextafter({x}, {y})"),
]
_ISSUE_39_OPS, _ISSUE_39_TEMPLATES = _table(u=ISSUE_39, b=ISSUE_39_BINARY)
OPS += _ISSUE_39_OPS
TEMPLATES += _ISSUE_39_TEMPLATES


# np.linalg's library calls, appended (the earlier indices stay). Each first makes its operand
# s bounded, finite and at least float32 (np.linalg takes no float16; a NaN a chain made would
# make Numba's LAPACK refuse what NumPy answers with NaN), then works on g = s s^T + p I,
# symmetric positive definite with a condition number of at most 1 + n, or on s itself where
# the result does not depend on its conditioning; whatever depends on a sign LAPACK chooses
# (eigenvectors, singular vectors, Q) is multiplied back together.
_SANE = "np.where(np.isfinite({x}), np.tanh({x}), 0.5).astype(np.result_type({x}.dtype, np.float32))"
_GRAM = "s @ s.T + s.shape[0] * np.eye(s.shape[0], dtype=s.dtype)"


def _sane(x):
    return np.where(np.isfinite(x), np.tanh(x), 0.5).astype(np.result_type(x.dtype, np.float32))


def _gram(s):
    return s @ s.T + s.shape[0] * np.eye(s.shape[0], dtype=s.dtype)


def _on_gram(body: str) -> str:
    """A template: `body` of s and g, s the sane operand and g its Gram matrix plus p I."""
    return f"(lambda s: (lambda g: {body})({_GRAM}))({_SANE})"


def _eigh_rebuilt(g):
    w, v = np.linalg.eigh(g)
    return (v * w) @ v.T


def _svd_rebuilt(s):
    u, sv, vt = np.linalg.svd(s, full_matrices=False)
    return (u * sv) @ vt


def _qr_rebuilt(s):
    q, r = np.linalg.qr(s)
    return q @ r


LINALG = [
    ("solve-spd", lambda x: (lambda s: np.linalg.solve(_gram(s), s))(_sane(x)),
     _on_gram("np.linalg.solve(g, s)")),
    ("inv-spd", lambda x: (lambda s: np.linalg.inv(_gram(s)) @ s)(_sane(x)),
     _on_gram("np.linalg.inv(g) @ s")),
    ("cholesky-spd", lambda x: (lambda s: np.linalg.cholesky(_gram(s)) @ s)(_sane(x)),
     _on_gram("np.linalg.cholesky(g) @ s")),
    ("eigh-rebuilt", lambda x: (lambda s: _eigh_rebuilt(_gram(s)) @ s
                                + np.linalg.eigvalsh(_gram(s)).max())(_sane(x)),
     _on_gram("(lambda w, v: (v * w) @ v.T)(*np.linalg.eigh(g)) @ s "
              "+ np.linalg.eigvalsh(g).max()")),
    ("svd-rebuilt", lambda x: (lambda s: _svd_rebuilt(s) * np.linalg.norm(s, 2))(_sane(x)),
     f"(lambda s: (lambda u, sv, vt: (u * sv) @ vt)(*np.linalg.svd(s, full_matrices=False)) "
     f"* np.linalg.norm(s, 2))({_SANE})"),
    ("qr-rebuilt", lambda x: (lambda s: _qr_rebuilt(s) + np.linalg.norm(s, "nuc"))(_sane(x)),
     f"(lambda s: (lambda q, r: q @ r)(*np.linalg.qr(s)) + np.linalg.norm(s, 'nuc'))"
     f"({_SANE})"),
    ("logdet-spd", lambda x: (lambda s: s * np.linalg.slogdet(_gram(s))[1]
                              / (1 + np.log(np.linalg.det(_gram(s)))))(_sane(x)),
     _on_gram("s * np.linalg.slogdet(g)[1] / (1 + np.log(np.linalg.det(g)))")),
    ("lstsq-spd", lambda x: (lambda s: np.linalg.lstsq(_gram(s), s)[0])(_sane(x)),
     _on_gram("np.linalg.lstsq(g, s)[0]")),
    ("pinv-spd", lambda x: (lambda s: np.linalg.pinv(_gram(s)) @ s
                            - s * np.linalg.norm(s, -2))(_sane(x)),
     _on_gram("np.linalg.pinv(g) @ s - s * np.linalg.norm(s, -2)")),
]
# Every op but these: each library call compiles a kernel and loads its routine, which would
# lengthen `make test`'s hundred random programs (they draw from the ops before them, the
# same programs as before); the deep sweeps and the fuzzer draw from all.
BEFORE_LINALG = frozenset(name for _, name, _ in OPS)
_LINALG_OPS, _LINALG_TEMPLATES = _table(u=LINALG)
OPS += _LINALG_OPS
TEMPLATES += _LINALG_TEMPLATES


# float16 now and then: NumPy computes it in float32 and rounds each function's result.
FLOAT_DTYPES = [np.float32, np.float64, np.float32, np.float64, np.float16]


@st.composite
def programs(draw, ops=None):
    """(inputs, steps, number of outputs); `ops` limits the steps to those names."""
    choices = [k for k, o in enumerate(OPS) if ops is None or o[1] in ops]
    m = draw(st.integers(1, 5))
    n = draw(st.integers(1, 6))
    dtypes = draw(st.lists(st.sampled_from(FLOAT_DTYPES), min_size=1, max_size=3))
    shapes = draw(st.lists(st.sampled_from([(m, n), (m, 1), (1, n), ()]),
                           min_size=len(dtypes), max_size=len(dtypes)))
    seed = draw(st.integers(0, 2**31 - 1))
    steps = draw(st.lists(st.tuples(st.sampled_from(choices), st.integers(0, 10**6),
                                    st.integers(0, 10**6)), min_size=1, max_size=30))
    n_out = draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    inputs = [np.asarray(rng.uniform(-3, 3, size=s)).astype(dt) for s, dt in zip(shapes, dtypes)]
    return inputs, steps, n_out


def _needs_2d(kind, x) -> bool:
    return kind != "b" and np.ndim(x) != 2


def build(steps, n_out):
    """The program as a plain Python function of its inputs: NumPy or traced, alike."""

    def program(*inputs):
        pool = list(inputs)
        for op_index, a, b in steps:
            kind, _, fn = OPS[op_index]
            x, y = pool[a % len(pool)], pool[b % len(pool)]
            if _needs_2d(kind, x):
                x = x + np.zeros((1, 1), dtype=x.dtype)  # make it (m, n)-family 2-D
            pool.append(fn(x, y) if kind == "b" else fn(x))
        return tuple(pool[-n_out:])

    program.__name__ = "program"
    return program


def describe(steps):
    return " ; ".join(OPS[i][1] for i, _, _ in steps)


# Integer programs: wrap-around, floor division and remainder signs, bits, int64 sums.
INT_UNARY = [
    ("negative", np.negative, "np.negative({x})"),
    ("abs", np.abs, "np.abs({x})"),
    ("invert", np.invert, "np.invert({x})"),
    ("square", np.square, "np.square({x})"),
    ("sign", np.sign, "np.sign({x})"),
    ("x >> 1", lambda x: x >> 1, "{x} >> 1"),
    ("x << 2", lambda x: np.left_shift(x, 2), "np.left_shift({x}, 2)"),
    ("x % 7", lambda x: x % 7, "{x} % 7"),
    ("x // -3", lambda x: x // -3, "{x} // -3"),
    ("clip", lambda x: np.clip(x, -50, 50), "np.clip({x}, -50, 50)"),
    ("sum1-keep", lambda x: np.sum(x, axis=1, keepdims=True).astype(x.dtype),
     "np.sum({x}, axis=1, keepdims=True).astype({x}.dtype)"),
    ("max0-keep", lambda x: x.max(axis=0, keepdims=True), "{x}.max(axis=0, keepdims=True)"),
    ("argmin1", lambda x: np.argmin(x, axis=1).reshape(-1, 1).astype(x.dtype),
     "np.argmin({x}, axis=1).reshape(-1, 1).astype({x}.dtype)"),
    ("flip", lambda x: x[::-1, ::-1], "{x}[::-1, ::-1]"),
    ("to-float-and-back", lambda x: (x * 0.5).astype(x.dtype), "({x} * 0.5).astype({x}.dtype)"),
    ("where-even", lambda x: np.where(x % 2 == 0, x, -x), "np.where({x} % 2 == 0, {x}, -{x})"),
]
INT_BINARY = [
    ("add", np.add, "np.add({x}, {y})"),
    ("subtract", np.subtract, "np.subtract({x}, {y})"),
    ("multiply", np.multiply, "np.multiply({x}, {y})"),
    ("floor_divide", lambda a, b: a // (np.abs(b) + 1), "{x} // (np.abs({y}) + 1)"),
    ("remainder", lambda a, b: a % (np.abs(b) + 1), "{x} % (np.abs({y}) + 1)"),
    ("negative-divisor", lambda a, b: np.floor_divide(a, -(np.abs(b) + 1)),
     "np.floor_divide({x}, -(np.abs({y}) + 1))"),
    ("bitwise_and", np.bitwise_and, "np.bitwise_and({x}, {y})"),
    ("bitwise_or", np.bitwise_or, "np.bitwise_or({x}, {y})"),
    ("bitwise_xor", np.bitwise_xor, "np.bitwise_xor({x}, {y})"),
    ("maximum", np.maximum, "np.maximum({x}, {y})"),
    ("minimum", np.minimum, "np.minimum({x}, {y})"),
    ("where-less", lambda a, b: np.where(a < b, a, b), "np.where({x} < {y}, {x}, {y})"),
    ("logical_xor", lambda a, b: np.logical_xor(a > 0, b > 0).astype(a.dtype),
     "np.logical_xor({x} > 0, {y} > 0).astype({x}.dtype)"),
]
INT_OPS, INT_TEMPLATES = _table(u=INT_UNARY, b=INT_BINARY)
# Issue 39's integer functions, appended (the earlier indices stay).
_INT_39, _INT_39_TEMPLATES = _table(
    u=[("bitwise_count", lambda x: np.bitwise_count(x).astype(x.dtype),
        "np.bitwise_count({x}).astype({x}.dtype)")],
    b=[("gcd", np.gcd, "np.gcd({x}, {y})"),
       ("lcm-small", lambda a, b: np.lcm(a % 16, b % 16), "np.lcm({x} % 16, {y} % 16)")])
INT_OPS += _INT_39
INT_TEMPLATES += _INT_39_TEMPLATES


# The integer types one program's inputs are drawn from. NumPy promotes within each family to
# an integer type (uint8 + int8 is int16); uint64 meets only unsigned types, as uint64 + int64
# is float64, where the bit ops have no loop.
INT_FAMILIES = [
    [np.int32, np.int64],
    [np.int8, np.int16, np.int32, np.int64],
    [np.uint8, np.uint16, np.uint32, np.int8, np.int16, np.int32, np.int64],
    [np.uint8, np.uint16, np.uint32, np.uint64],
]
# A negative Python int with an unsigned array is NumPy's OverflowError.
_SIGNED_ONLY = {"x // -3"}


@st.composite
def int_programs(draw):
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    family = draw(st.sampled_from(INT_FAMILIES))
    dtypes = draw(st.lists(st.sampled_from(family), min_size=1, max_size=3))
    shapes = draw(st.lists(st.sampled_from([(m, n), (m, 1), (1, n)]),
                           min_size=len(dtypes), max_size=len(dtypes)))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    # -100..100 wraps to near the top of an unsigned type: wrap-around on every op
    inputs = [rng.integers(-100, 100, size=s).astype(dt) for s, dt in zip(shapes, dtypes)]
    unsigned = any(np.dtype(t).kind == "u" for t in family)
    choices = [k for k, o in enumerate(INT_OPS) if not (unsigned and o[1] in _SIGNED_ONLY)]
    steps = draw(st.lists(st.tuples(st.sampled_from(choices), st.integers(0, 10**6),
                                    st.integers(0, 10**6)), min_size=1, max_size=30))
    return inputs, steps


def build_int(steps):
    """An integer program as a function of its inputs; it returns its last value."""

    def program(*xs):
        pool = list(xs)
        for op_index, a, b in steps:
            kind, _, fn = INT_OPS[op_index]
            x, y = pool[a % len(pool)], pool[b % len(pool)]
            pool.append(fn(x, y) if kind == "b" else fn(x))
        return pool[-1]

    program.__name__ = "program"
    return program


def describe_int(steps):
    return " ; ".join(INT_OPS[i][1] for i, _, _ in steps)


# ---------------------------------------------------------------------------------------------
# Programs as runnable NumPy source.

def _number(v, dtype: np.dtype) -> str:
    """One element as a literal that gives back exactly the same value in `dtype`."""
    if dtype.kind in "iub":
        return repr(int(v))
    v = dtype.type(v)
    if np.isnan(v):
        return "np.nan"
    if np.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    # The shortest digits for the dtype, positional or (for tiny and huge values) scientific.
    for short in sorted([np.format_float_positional(v, unique=True, trim="0"),
                         np.format_float_scientific(v, unique=True, trim="0")], key=len):
        if dtype.type(float(short)) == v and np.signbit(dtype.type(float(short))) == np.signbit(v):
            return short
    return repr(float(v))  # the exact float64 value, which `dtype` holds exactly


def _nested(a: np.ndarray) -> str:
    if a.ndim == 0:
        return _number(a[()], a.dtype)
    return "[" + ", ".join(_nested(row) for row in a) + "]"


def array_source(a) -> str:
    """`np.array(...)` source that rebuilds `a` exactly: shape, dtype and every bit of value."""
    a = np.asarray(a)
    shape = f".reshape({a.shape})" if a.size == 0 else ""
    return f"np.array({_nested(a)}, dtype=np.{a.dtype.name}){shape}"


def function_source(steps, inputs, n_out: int | None, ops=OPS, templates=TEMPLATES,
                    promote: bool = True) -> str:
    """`def f(x0, ...)`: the program as straight-line NumPy, one line per step.

    The float programs make a unary or reduce operand 2-D first when it is not (a 0-d input, or
    a binary op of two 0-d values); that depends on the operand's rank, so `inputs` are run
    through the steps to learn it. `n_out=None` returns the last value alone (integer
    programs), else the tuple of the last `n_out` values, as `build` does."""
    names = [f"x{i}" for i in range(len(inputs))]
    pool = list(inputs)
    lines = [f"def f({', '.join(names)}):"]
    with np.errstate(all="ignore"):
        for op_index, a, b in steps:
            (kind, name, fn), template = ops[op_index], templates[op_index]
            i, j = a % len(names), b % len(names)
            x, y = names[i], names[j]
            out = f"t{len(names)}"
            xv, yv = pool[i], pool[j]
            if promote and _needs_2d(kind, xv):
                lines.append(f"    {out}_x = {x} + np.zeros((1, 1), dtype={x}.dtype)  # make it 2-D")
                x = f"{out}_x"
                xv = xv + np.zeros((1, 1), dtype=xv.dtype)
            lines.append(f"    {out} = {template.format(x=x, y=y)}  # {name}")
            pool.append(fn(xv, yv) if kind == "b" else fn(xv))
            names.append(out)
    if n_out is None:
        lines.append(f"    return {names[-1]}")
    else:
        outs = names[-n_out:]
        lines.append(f"    return ({outs[0]},)" if len(outs) == 1 else f"    return ({', '.join(outs)})")
    return "\n".join(lines)


SNIPPET = '''\
{header}
import numpy as np
import xla_explorer as xe
from xla_explorer.api import compare, computed_precision, referee

{inputs}


{function}


args = [{args}]
with np.errstate(all="ignore"):
    want = f(*[a.copy() for a in args])  # eager NumPy
    ex = xe.explore(f, *args, backend={backend!r})
    got = ex.run(*[a.copy() for a in args])
{unpack}bad = len(got) != len(want)
checks = [compare(f"output {{i}}", g, w, {precision}) for i, (g, w) in enumerate(zip(got, want))]
if not all(c.ok for c in checks):  # judged as ex.check judges: against the float64 result
    checks = referee(f, args, checks, list(got), list(want))
for i, (g, w, check) in enumerate(zip(got, want, checks)):
    print(check)
    if not check.ok:
        bad = True
        print("  numpy:        ", np.asarray(w).dtype, np.array2string(np.asarray(w), precision=17, separator=", "))
        print("  xla_explorer: ", np.asarray(g).dtype, np.array2string(np.asarray(g), precision=17, separator=", "))
print("MISMATCH" if bad else "all outputs match")
raise SystemExit(1 if bad else 0)
'''


def render(inputs, steps, n_out, backend: str = "cpu", integer: bool = False,
           header: str = "") -> str:
    """A self-contained script: the inputs as exact literals, the program as `def f`, and a
    run of eager NumPy against xla_explorer on `backend` that prints every output's error
    (and both values where they differ) and exits 1 on a mismatch."""
    comment = "\n".join("# " + line for line in header.splitlines()) if header else ""
    text = SNIPPET.format(
        header=comment,
        inputs="\n".join(f"x{i} = {array_source(x)}" for i, x in enumerate(inputs)),
        function=function_source(steps, inputs, None if integer else n_out,
                                 *((INT_OPS, INT_TEMPLATES) if integer else (OPS, TEMPLATES)),
                                 promote=not integer),
        args=", ".join(f"x{i}" for i in range(len(inputs))),
        backend=backend,
        unpack="want, got = (want,), (got,)  # f returns one array\n" if integer else "",
        precision="None" if integer else "computed_precision(ex.module)",
    )
    return text.lstrip("\n")
