"""Everyday NumPy, compiled: each entry is a small program of the kind a teacher or a scientist
writes in a notebook, compiled whole by `xe.jit` (must-compile: no eager fallback) and
compared with NumPy on the same inputs, exactly in dtype and shape, and in value within the
dtype's tolerance (exactly for integers and booleans). Every program runs on the interpreter
and a third of them on the cpu backend in `make test` (each a Numba compile); all of them on
the cpu backend in `make test-deep`.

The names are NumPy's; `docs/numpy-coverage.md` lists what stays refused and why.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xla_explorer as xe
from tests.trace.test_numpy_ops import assert_tree_same, numpy_call
from xla_explorer.trace.numpy.util import WHY_REFUSED

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

_rng = np.random.default_rng(24)


def normal(*shape, dtype=np.float64):
    return _rng.standard_normal(shape).astype(dtype)


def ints(lo, hi, *shape, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


X = normal(6, 5)
V = normal(7)
W = normal(5, 4)
F32 = normal(4, 8, dtype=np.float32)
IMG = ints(0, 256, 4, 6, 3, dtype=np.uint8)
IDX = ints(-6, 6, 9)
SORTED = np.sort(normal(10))

# name -> (program, inputs). A program takes arrays and returns an array or a tuple/dict.
EVERYDAY = {
    # element-wise math
    "add/multiply": (lambda x, v: x * 2.0 + v[:5], (X, V)),
    "divide/power": (lambda x: (x / 3.0) ** 2, (X,)),
    "sqrt/abs": (lambda x: np.sqrt(np.abs(x)), (X,)),
    "exp/log": (lambda x: np.log(np.exp(x) + 1.0), (X,)),
    "log1p/expm1": (lambda x: np.log1p(np.abs(x)) - np.expm1(x / 4), (X,)),
    "sin/cos": (lambda x: np.sin(x) ** 2 + np.cos(x), (X,)),
    "tanh": (lambda x: np.tanh(x), (F32,)),
    "arctan2": (lambda x: np.arctan2(x, x[::-1] + 0.5), (X,)),
    "sign/floor/ceil": (lambda x: (np.sign(x), np.floor(x * 3), np.ceil(x * 3)), (X,)),
    "round(decimals)": (lambda x: np.round(x * 100, 1), (X,)),
    "clip": (lambda x: np.clip(x, -0.5, 0.5), (F32,)),
    "maximum/minimum": (lambda x: np.maximum(x, 0) + np.minimum(x, 0.1), (X,)),
    "where": (lambda x: np.where(x > 0, x, 0.01 * x), (F32,)),
    "hypot": (lambda x: np.hypot(x, 2 * x), (X,)),
    "logaddexp": (lambda x: np.logaddexp(x, -x), (X,)),
    "isnan/nan_to_num": (lambda x: np.nan_to_num(np.where(x > 1, np.nan, x)), (X,)),
    "heaviside": (lambda x: np.heaviside(x, 0.5), (X,)),
    "copysign/fmod": (lambda x: (np.copysign(2.0, x), np.fmod(x * 7, 2)), (X,)),
    "sinc": (lambda x: np.sinc(x), (X,)),
    "deg2rad": (lambda x: np.deg2rad(x * 90), (X,)),
    "isclose": (lambda x: np.isclose(x, np.round(x, 1), atol=0.05), (X,)),
    "select": (lambda x: np.select([x < -1, x > 1], [-1.0, 1.0], default=x), (X,)),
    # reductions
    "sum/mean": (lambda x: (np.sum(x), np.mean(x, axis=0)), (X,)),
    "std/var": (lambda x: (np.std(x, axis=1), np.var(x, ddof=1)), (X,)),
    "max/min": (lambda x: (np.max(x, axis=1), np.min(x)), (X,)),
    "argmax/argmin": (lambda x: (np.argmax(x, axis=1), np.argmin(x)), (X,)),
    "prod": (lambda x: np.prod(x[:, :3], axis=0), (X,)),
    "any/all": (lambda x: (np.any(x > 2), np.all(x > -5, axis=0)), (X,)),
    "nansum/nanmean": (lambda x: (np.nansum(np.where(x > 1, np.nan, x)),
                                  np.nanmean(np.where(x > 1, np.nan, x), axis=0)), (X,)),
    "nanmax/nanmin": (lambda x: (np.nanmax(np.where(x > 1, np.nan, x), axis=1),
                                 np.nanmin(np.where(x > 1, np.nan, x))), (X,)),
    "count_nonzero": (lambda x: np.count_nonzero(x > 0, axis=0), (X,)),
    "ptp": (lambda x: np.ptp(x, axis=1), (X,)),
    "average": (lambda x, w: np.average(x, axis=1, weights=np.abs(w[:5])), (X, V)),
    "median": (lambda x: (np.median(x), np.median(x, axis=0)), (X,)),
    "percentile": (lambda x: np.percentile(x, [10, 50, 90], axis=1), (X,)),
    "quantile": (lambda x: np.quantile(x, 0.25), (F32,)),
    "cumsum": (lambda x: (np.cumsum(x), np.cumsum(x, axis=0)), (X,)),
    "cumprod": (lambda x: np.cumprod(1 + x / 10, axis=1), (X,)),
    "maximum.accumulate": (lambda x: np.maximum.accumulate(x, axis=1), (X,)),
    "linalg.norm": (lambda x: (np.linalg.norm(x), np.linalg.norm(x, axis=1)), (X,)),
    # shapes and data movement
    "reshape/transpose": (lambda x: x.reshape(5, 6).T, (X,)),
    "ravel(order=F)": (lambda x: np.ravel(x, order="F"), (X,)),
    "concatenate/stack": (lambda x: (np.concatenate([x, x * 2]), np.stack([x, -x], axis=2)),
                          (X,)),
    "hstack/vstack": (lambda x: (np.hstack([x, x]), np.vstack([x, x[:2]])), (X,)),
    "expand_dims/squeeze": (lambda x: np.squeeze(np.expand_dims(x, 0) + 1, 0), (X,)),
    "flip/fliplr/rot90": (lambda x: (np.flip(x, 0), np.fliplr(x), np.rot90(x)), (X,)),
    "roll": (lambda x: np.roll(x, 2, axis=1), (X,)),
    "tile/repeat": (lambda x: (np.tile(x, (2, 1)), np.repeat(x, 2, axis=0)), (X,)),
    "diff": (lambda x: np.diff(x, axis=0), (X,)),
    "tril/triu": (lambda x: (np.tril(x), np.triu(x, 1)), (X,)),
    "diag/trace": (lambda x: (np.diag(x), np.trace(x)), (X,)),
    "pad": (lambda x: (np.pad(x, 1), np.pad(x, ((1, 2), (0, 1)), mode="edge"),
                       np.pad(x, 2, mode="reflect"), np.pad(x, (1, 3), mode="wrap")), (X,)),
    "split/array_split": (lambda x: (np.split(x, 3), np.array_split(x, 4, axis=1)), (X,)),
    "broadcast_to/broadcast_arrays": (lambda x, v: (np.broadcast_to(v, (3, 7)),
                                                    np.broadcast_arrays(x[:, :1], v[:5])),
                                      (X, V)),
    "meshgrid": (lambda v: np.meshgrid(v[:3], v), (V,)),
    "column_stack/dstack": (lambda v: (np.column_stack([v, v]), np.dstack([v, v])), (V,)),
    "atleast_2d": (lambda v: np.atleast_2d(v), (V,)),
    # products
    "dot/matmul": (lambda x, w: (np.dot(x, w), x @ w), (X, W)),
    "outer/inner/vdot": (lambda v: (np.outer(v, v), np.inner(v, v), np.vdot(v, v)), (V,)),
    "tensordot": (lambda x, w: np.tensordot(x, w, axes=1), (X, W)),
    "einsum": (lambda x, w: (np.einsum("ij,jk->ik", x, w), np.einsum("ij->j", x),
                             np.einsum("ij,ij->i", x, x)), (X, W)),
    "kron": (lambda v: np.kron(v[:3], v[:2]), (V,)),
    "cross": (lambda x: np.cross(x[:, :3], x[:, 2:5]), (X,)),
    # indexing, gather and scatter
    "x[idx]": (lambda x, i: x[i % 6], (X, IDX)),
    "x[:, idx]": (lambda x, i: x[:, i % 5], (X, IDX)),
    "x[i, j]": (lambda x, i: x[i % 6, (i + 1) % 5], (X, IDX)),
    "take": (lambda v, i: np.take(v, i), (V, IDX)),
    "take_along_axis": (lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1), (X,)),
    "x[idx] = v": (lambda v, i: _assign(v, i), (V, IDX)),
    "add.at": (lambda i: _histogram(i), (IDX,)),
    # sorting and searching
    "sort": (lambda x: (np.sort(x), np.sort(x, axis=0)), (X,)),
    "argsort": (lambda x: np.argsort(x, axis=1), (X,)),
    "searchsorted": (lambda s, v: np.searchsorted(s, v), (SORTED, V)),
    # signal and statistics
    "convolve": (lambda v: (np.convolve(v, v[:3]), np.convolve(v, v[:4], mode="same"),
                            np.convolve(v, v[:3], mode="valid")), (V,)),
    "correlate": (lambda v: np.correlate(v, v[:3]), (V,)),
    "cov/corrcoef": (lambda x: (np.cov(x), np.corrcoef(x)), (X,)),
    "interp": (lambda s, v: np.interp(v, s, np.sin(s)), (SORTED, V)),
    "gradient": (lambda v: np.gradient(v), (V,)),
    "polyval": (lambda v: np.polyval([1.0, -2.0, 0.5], v), (V,)),
    "trapezoid": (lambda x: np.trapezoid(x, dx=0.5, axis=1), (X,)),
    "histogram": (lambda v: np.histogram(v, bins=4, range=(-2.0, 2.0))[0], (V,)),
    "digitize": (lambda v: np.digitize(v, [-1.0, 0.0, 1.0]), (V,)),
    "digitize(traced bins)": (lambda v, e: (np.digitize(v, e), np.digitize(v, e[::-1], right=True)),
                              (V, np.array([-1.0, 0.0, 0.5, 1.0]))),
    "isin": (lambda i: np.isin(i, [0, 2, -3]), (IDX,)),
    "nanstd/nanvar": (lambda x: (np.nanstd(np.where(x > 1, np.nan, x), axis=0),
                                 np.nanvar(np.where(x > 1, np.nan, x))), (X,)),
    "nanargmax": (lambda x: np.nanargmax(np.where(x > 1, np.nan, x), axis=1), (X,)),
    # more shapes, and functions that write in place
    "append/ediff1d": (lambda v: (np.append(v, v[:2]), np.ediff1d(v, to_begin=0.0)), (V,)),
    "delete/insert": (lambda x: (np.delete(x, [0, 2], axis=1), np.insert(x, 1, 0.0, axis=0)),
                      (X,)),
    "block": (lambda x: np.block([[x, x], [x, -x]]), (X,)),
    "vander": (lambda v: np.vander(v, 3), (V,)),
    "fix/modf": (lambda x: (np.fix(x * 3), np.modf(x * 3)), (X,)),
    "copyto": (lambda x: _copyto(x), (X,)),
    "fill_diagonal": (lambda x: _fill_diagonal(x), (X,)),
    "hsplit/vsplit": (lambda x: (np.hsplit(x, 5), np.vsplit(x, [2])), (X,)),
    "swapaxes/moveaxis": (lambda x: (np.swapaxes(x, 0, 1), np.moveaxis(x[None], 0, 2)), (X,)),
    # creation
    "arange/linspace": (lambda v: v + np.arange(7) * np.linspace(0, 1, 7), (V,)),
    "zeros/ones/full_like": (lambda x: (np.zeros_like(x) + 1, np.ones((2, 3)),
                                        np.full_like(x, 7.0)), (X,)),
    "eye": (lambda x: x[:5] @ np.eye(5), (X,)),
    # other element types
    "uint8 image to float": (lambda im: im.astype(np.float32) / 255.0, (IMG,)),
    "uint8 mean over channels": (lambda im: im.mean(axis=2), (IMG,)),
    "uint8 wrap-around": (lambda im: im + np.uint8(100), (IMG,)),
    "int8 quantised product": (lambda a: a.astype(np.int32) @ a.T.astype(np.int32),
                               (ints(-128, 128, 4, 5, dtype=np.int8),)),
    "float16": (lambda h: (h * 2 + 1, np.sum(h)), (normal(8, dtype=np.float16),)),
    "uint16/uint32/uint64": (lambda a, b, c: (a + 1, b * 3, c // 2),
                             (ints(0, 60000, 5, dtype=np.uint16),
                              ints(0, 2**32 - 1, 5, dtype=np.uint32),
                              ints(0, 2**62, 5, dtype=np.uint64))),
    "int16 sum": (lambda a: (np.sum(a), a.sum(axis=0, dtype=np.int16)),
                  (ints(-30000, 30000, 4, 3, dtype=np.int16),)),
    # small programs
    "softmax": (lambda x: np.exp(x - x.max(1, keepdims=True))
                / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True), (X,)),
    "one_hot": (lambda i: (np.arange(6) == (i % 6)[:, None]).astype(np.float32), (IDX,)),
    "standardise": (lambda x: (x - x.mean(0)) / x.std(0), (X,)),
}


def _copyto(x):
    out = np.zeros_like(x)
    np.copyto(out, x, where=x > 0)
    return out


def _fill_diagonal(x):
    x = x.copy()
    np.fill_diagonal(x, 0.0)
    return x


def _assign(v, i):
    v = v.copy()
    v[i % 7] = -1.0
    return v


def _histogram(i):
    counts = np.zeros(12, dtype=np.int64)
    np.add.at(counts, i + 6, 1)
    return counts


def test_the_list_is_long_enough():
    functions = {part for name in EVERYDAY for part in name.split("/")}
    assert len(functions) >= 80, len(functions)


def _everyday_params():
    for k, name in enumerate(EVERYDAY):
        yield pytest.param(name, "interpreter", id=f"{name}-interpreter")
        yield pytest.param(name, "cpu", id=f"{name}-cpu",
                           marks=[] if k % 3 == 0 else [pytest.mark.deep])


@pytest.mark.parametrize("name, backend", list(_everyday_params()))
def test_everyday_numpy_compiles_and_matches(name, backend):
    program, inputs = EVERYDAY[name]
    want = numpy_call(program, [np.array(a, copy=True) for a in inputs])
    got = xe.jit(program, backend=backend)(*[np.array(a, copy=True) for a in inputs])
    assert_tree_same(got, want, tol=4.0)


DOC = Path(__file__).resolve().parents[1] / "docs" / "numpy-coverage.md"


def test_every_refusal_with_a_reason_is_listed_in_the_docs():
    text = DOC.read_text()
    listed = [lambda n: f"`np.{n}`", lambda n: f"`{n.rpartition('.')[2]}`",
              lambda n: f"`np.{n.partition('.')[0]}.*`"]  # np.fft.* for all of them
    missing = [name for name in WHY_REFUSED if not any(form(name) in text for form in listed)]
    assert not missing, f"docs/numpy-coverage.md does not list {missing}"


@pytest.mark.parametrize("name, program", [
    ("linalg.matrix_rank", lambda x: np.linalg.matrix_rank(x[:, :5][:5])),
    ("bincount", lambda x: np.bincount(np.abs(x).astype(np.int64).ravel())),
    ("lexsort", lambda x: np.lexsort((x[0], x[1]))),
    ("fft.fft", lambda x: np.fft.fft(x).real),
])
def test_a_refusal_says_why_in_one_sentence(name, program):
    with pytest.raises(xe.UnsupportedOpError) as e:
        xe.jit(program)(X)
    first = str(e.value).splitlines()[0]
    assert first == f"np.{name} is not supported: {WHY_REFUSED[name]}", first
