# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07: many tiny operations: the cost of each call
#
# **What this notebook teaches.** An op-by-op executor pays a fixed cost for every operation
# it dispatches, however little work the operation does. For a model made of many small
# operations, that overhead *is* the run time: the documents tell of SyntaxNet, whose latency
# went from about 200 microseconds to about 5 when compiled, because one compiled call
# replaced hundreds of dispatches. You will measure the same effect: per-call time against
# array size, eager and compiled, and then where the compiled call's remaining microseconds
# go.

# %%
import timeit

import matplotlib.pyplot as plt
import numba
import numpy as np
import xla_explorer as xe

F32 = np.float32


def tiny_model(x):
    """20 steps of three cheap element-wise operations: 60 NumPy calls."""
    for _ in range(20):
        x = np.maximum(x * F32(0.9) + F32(0.1), F32(-1))
    return x


fast = xe.jit(tiny_model)


def per_call_us(fn, *args, number=200, repeat=5):
    """The best of `repeat` batches of `number` calls, in microseconds per call."""
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=repeat)) / number * 1e6


# %% [markdown]
# Python loops unroll while tracing, so the compiled program is the 60 operations in a row,
# fused into one kernel:

# %%
x = np.linspace(-1, 1, 8, dtype=F32)
ex = fast.explore(x)
ops = [i for i in ex.stage(0).module.entry.instructions
       if i.opcode in ("multiply", "add", "maximum")]
print(len(ops), "operations traced;", len(ex.fusions), "kernel:", ex.fusions[0].name)

# %% [markdown]
# ## Per-call time against array size
#
# Each size is a new shape, so a new compile (notebook 04); the first call of each is left
# out of the timing.

# %%
sizes = [1, 10, 100, 1_000, 10_000, 100_000]
eager_us, compiled_us = [], []
for n in sizes:
    x = np.linspace(-1, 1, n, dtype=F32)
    fast(x)  # compile for this shape
    eager_us.append(per_call_us(tiny_model, x, number=50))
    compiled_us.append(per_call_us(fast, x, number=50))
    print(f"{n:>7} elements: eager {eager_us[-1]:9.1f} us, compiled {compiled_us[-1]:8.2f} us"
          f" ({eager_us[-1] / compiled_us[-1]:5.1f}x)")

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.loglog(sizes, eager_us, "o-", label="eager NumPy (60 calls)")
ax.loglog(sizes, compiled_us, "s-", label="compiled (one call)")
ax.set_xlabel("elements per array")
ax.set_ylabel("microseconds per call of tiny_model")
ax.set_title("Per-operation overhead dominates small arrays")
ax.legend()
plt.show()

# %% [markdown]
# At the small end both lines are flat: the time is overhead, not work. Counted in NumPy
# calls of one element:

# %%
one = np.ones(1, F32)
numpy_call_us = per_call_us(np.multiply, one, F32(0.9), number=2000)
print(f"one NumPy call {numpy_call_us:.2f} us; at one element eager costs "
      f"{eager_us[0] / numpy_call_us:.0f} of them, compiled {compiled_us[0] / numpy_call_us:.1f}")

# %% [markdown]
# Eager NumPy's floor is its 60 calls; the compiled floor is about one. At the large
# end the work dominates, and the ratio is about the bytes each moves (notebook 06): eager
# NumPy writes and reads back an intermediate array for each of the 60 operations.
#
# ## Where the compiled microseconds go
#
# At one element the kernel does almost nothing, so the compiled call is almost all
# overhead. Peel it apart, from the outside in:
#
# - `fast(x)`: the whole call: a cache key from the argument's shape and type, one dictionary
#   lookup, then the executable;
# - `executable.run_arrays([x])`: allocate the output and call the generated program;
# - `executable.entry(arena, x, out)`: the generated Numba function alone, output given
#   (Numba checks the arguments' types and unboxes the arrays, then runs the loop);
# - an empty `@numba.njit` function of one array: Numba's dispatch alone;
# - `np.empty(1)`: allocating a one-element array;
# - an empty Python function: calling anything at all.

# %%
x1 = np.ones(1, F32)
exe = fast.explore(x1).executable
out = np.empty(1, F32)


@numba.njit
def nothing_numba(a):
    return None


def nothing(a):
    return None


nothing_numba(x1)  # compile it
parts = {
    "fast(x)": per_call_us(fast, x1, number=2000),
    "run_arrays": per_call_us(exe.run_arrays, [x1], number=2000),
    "generated program": per_call_us(exe.entry, exe.arena, x1, out, number=2000),
    "empty njit function": per_call_us(nothing_numba, x1, number=2000),
    "np.empty(1)": per_call_us(np.empty, 1, F32, number=2000),
    "empty Python function": per_call_us(nothing, x1, number=2000),
}
for name, us in parts.items():
    print(f"{name:22} {us:6.3f} us")
print(f"eager NumPy at one element: {eager_us[0]:.1f} us, "
      f"{eager_us[0] / 60:.2f} us per operation")

# %%
labels = list(parts)
fig, ax = plt.subplots(figsize=(7, 3))
ax.barh(labels[::-1], [parts[k] for k in labels[::-1]], color="tab:blue")
ax.set_xlabel("microseconds per call (best of 5 batches)")
ax.set_ylabel("what is called")
ax.set_title("One compiled call of tiny_model on one element, peeled apart")
plt.show()

# %% [markdown]
# Read the differences: `fast(x) - run_arrays` is the cache lookup in Python;
# `run_arrays - generated program` mostly the output's allocation; the generated program
# against the empty njit function, the 60 operations' actual work and the arena argument.
# Most of what remains is crossing from Python into machine code, once. Eager NumPy pays
# a similar crossing, and an allocation, for every one of the 60 operations.

# %% [markdown]
# ## What to try next
#
# - Change `range(20)` to `range(100)`: the eager floor grows fivefold; does the compiled?
# - Put `np.tanh` around each step, which costs far more per element than a multiply: how
#   do the two lines change at the large end?
# - Next: `08_training_step.ipynb`: a whole training step compiled as one program.
