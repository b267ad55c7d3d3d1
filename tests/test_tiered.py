"""`xe.jit(f, tiered=True)`: the first call of a signature is answered by the interpreter
running the same optimized program, the kernels compile in the background, and later calls
switch to them; every answer is NumPy's."""
from __future__ import annotations

import numpy as np

import xla_explorer as xe


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_first_answer_comes_from_the_interpreter_then_the_kernels_take_over():
    x = np.random.default_rng(0).standard_normal((8, 33)).astype(np.float32)
    fast = xe.jit(softmax, tiered=True)
    first = fast(x)
    assert fast.last_ran == "interpreter"
    np.testing.assert_allclose(first, softmax(x), rtol=1e-6)
    assert fast.wait(timeout=120)
    again = fast(x * 2)
    assert fast.last_ran == "cpu"
    np.testing.assert_allclose(again, softmax(x * 2), rtol=1e-6)
    assert fast.explore(x).executable.ready
    info = fast.cache_info()
    assert (info.misses, len(info.signatures)) == (1, 1)
    # A new shape is a new program: the interpreter answers it first again.
    fast(x[:4])
    assert fast.last_ran == "interpreter"
    assert fast.wait(timeout=120)


def test_in_place_updates_keep_numpys_meaning_on_both_tiers():
    def step(w, g):
        w -= np.float32(0.5) * g
        return w.sum()

    w, g = np.arange(6, dtype=np.float32), np.ones(6, np.float32)
    fast = xe.jit(step, tiered=True)
    total = fast(w, g)
    assert fast.last_ran == "interpreter"
    np.testing.assert_array_equal(w, np.arange(6) - 0.5)
    assert total == np.float32((np.arange(6) - 0.5).sum())
    assert fast.wait(timeout=120)
    fast(w, g)
    assert fast.last_ran == "cpu"
    np.testing.assert_array_equal(w, np.arange(6) - 1.0)


def test_without_tiered_the_first_call_waits_for_the_kernels():
    x = np.ones((4, 5), np.float32)
    fast = xe.jit(softmax)
    fast(x)
    assert fast.last_ran == "cpu"
    assert fast.wait()  # nothing was compiling
