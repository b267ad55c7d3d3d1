"""`xe.jit(f, tiered=True)`: the first call of a signature is answered by the interpreter
running the same optimized program, the kernels compile in the background, and later calls
switch to them; every answer is NumPy's."""
from __future__ import annotations

import subprocess
import sys

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


def test_the_first_answer_does_not_wait_for_numba():
    # In a process of its own, where importing Numba from the main thread is an error: the
    # compile thread starts only once the answer is in, so until then any import of Numba
    # would be the answer's own.
    code = """
import sys, threading
import numpy as np

class Gate:
    def find_spec(self, name, path=None, target=None):
        if name == "numba" and threading.current_thread() is threading.main_thread():
            raise ImportError("the first answer imported Numba")
        return None

sys.meta_path.insert(0, Gate())
import xla_explorer as xe

def f(x):
    return np.tanh(x) * 2 + x.sum()

fast = xe.jit(f, tiered=True)
x = np.linspace(-1, 1, 100).astype(np.float32)
got = fast(x)
print(fast.last_ran)
np.testing.assert_allclose(got, f(x), rtol=1e-5, atol=1e-6)
assert fast.wait(timeout=120)
np.testing.assert_allclose(fast(x), f(x), rtol=1e-5, atol=1e-6)
print(fast.last_ran)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["interpreter", "cpu"]


def test_explore_during_the_compile_gives_the_compiled_program():
    x = np.ones((4, 7), np.float32)
    fast = xe.jit(softmax, tiered=True)
    fast(x)
    ex = fast.explore(x)  # waits for the kernels compiling in the background
    assert ex.backend == "cpu" and ex.executable.ready
    assert fast.cache_info().misses == 1
