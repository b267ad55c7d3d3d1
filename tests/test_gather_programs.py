"""Programs built on gather and scatter, traced from NumPy and run on every backend
against NumPy itself: an embedding lookup followed by a layernorm, a histogram by np.add.at,
a one-hot encoding by scatter, a permutation, and an index out of range: NumPy's IndexError at
trace time, the reference interpreter's at the user's line on a later call."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import BACKENDS

pytestmark = pytest.mark.parametrize("backend", sorted(BACKENDS))


def _same(got, want, rtol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def embed_layernorm(W, tokens, gamma, beta):
    h = W[tokens]
    mu = h.mean(axis=-1, keepdims=True)
    var = ((h - mu) ** 2).mean(axis=-1, keepdims=True)
    return (h - mu) / np.sqrt(var + 1e-5) * gamma + beta


def histogram(values, nbins):
    bins = np.clip((values * nbins).astype(np.int64), 0, nbins - 1)
    counts = np.zeros(nbins, np.int64)
    np.add.at(counts, bins, 1)
    return counts


def one_hot(labels, classes):
    out = np.zeros((labels.shape[0], classes), np.float32)
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


def permute(x, perm):
    return x[perm], x[:, perm[:4]]


def test_embedding_lookup_then_layernorm(backend):
    rng = np.random.default_rng(0)
    W = rng.standard_normal((50, 16)).astype(np.float32)
    tokens = rng.integers(-50, 50, (4, 7))  # negative token ids count from the end, as in NumPy
    gamma = rng.standard_normal(16).astype(np.float32)
    beta = rng.standard_normal(16).astype(np.float32)
    f = xe.jit(embed_layernorm, backend=backend)
    _same(f(W, tokens, gamma, beta), embed_layernorm(W, tokens, gamma, beta), rtol=1e-4)
    other = rng.integers(0, 50, (4, 7))
    _same(f(W, other, gamma, beta), embed_layernorm(W, other, gamma, beta), rtol=1e-4)


def test_histogram_by_add_at(backend):
    rng = np.random.default_rng(1)
    values = rng.random(1000)
    f = xe.jit(lambda v: histogram(v, 10), backend=backend)
    _same(f(values), histogram(values, 10))
    skewed = values ** 4  # many repeats of the low bins: each counts
    _same(f(skewed), histogram(skewed, 10))


def test_one_hot_by_scatter(backend):
    labels = np.array([3, 0, 2, 3, 1, 0])
    f = xe.jit(lambda y: one_hot(y, 5), backend=backend)
    _same(f(labels), one_hot(labels, 5))
    _same(f(labels[::-1].copy()), one_hot(labels[::-1].copy(), 5))


def test_permutation(backend):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 6))
    perm = rng.permutation(6)
    f = xe.jit(permute, backend=backend)
    for got, want in zip(f(x, perm), permute(x, perm)):
        _same(got, want)


def test_assignment_with_repeated_indices_keeps_the_last_write(backend):
    def f(x, idx, v):
        x = x.copy()
        x[idx] = v
        return x

    x = np.zeros(5)
    idx = np.array([1, 3, 1, 1])
    v = np.array([10.0, 20.0, 30.0, 40.0])
    _same(xe.jit(f, backend=backend)(x, idx, v), f(x, idx, v))


def test_index_out_of_range(backend):
    def f(x, idx):
        return x[idx] * 2

    x = np.arange(5.0)
    with pytest.raises(IndexError):  # NumPy's own, at trace time
        xe.jit(f, backend=backend)(x, np.array([0, 5]))
    g = xe.jit(f, backend=backend)
    _same(g(x, np.array([0, 4])), f(x, np.array([0, 4])))
    if backend == "interpreter":  # the compiled program meets the bad index on a later call
        with pytest.raises(IndexError) as info:
            g(x, np.array([0, 7]))
        assert info.value.op == "gather" and "return x[idx] * 2" in str(info.value)


def test_a_traced_integer_scalar_indexes_like_numpy(backend):
    def f(v, k):
        return v[k], v[k, 1:], np.take(v, k)

    v = np.arange(12.0).reshape(4, 3)
    for k in (np.int64(1), np.int64(-1), np.array(2)):
        got, want = xe.jit(f, backend=backend)(v, k), f(v, k)
        for g, w in zip(got, want):
            _same(g, w)
            assert type(g) is type(w)
