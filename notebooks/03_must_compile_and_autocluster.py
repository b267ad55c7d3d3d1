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
# # 03: must-compile, and auto-clustering around what cannot be compiled
#
# **What this notebook teaches.** TensorFlow's `tf.function(jit_compile=True)` means
# *must-compile*: the whole function is compiled, or you get an error; nothing falls back to
# running op by op without telling you. What cannot be compiled is any operation whose result
# **shape depends on the values** of its input, such as `tf.unique`: XLA needs every array's
# shape before the program runs. You will meet the same rule here with `np.unique`, then the
# other answer XLA offers, **auto-clustering**: compile the parts that can be compiled
# (clusters) and run the rest eagerly between them, without changing the code.

# %%
# %load_ext xla_explorer
import numpy as np
import xla_explorer as xe

x = np.linspace(-3, 3, 16, dtype=np.float32)

# %% [markdown]
# ## Why `np.unique` has no static shape
#
# Two inputs of the same shape, two results of different shapes: the length is only known
# once the values are.

# %%
a = np.array([1.0, 2.0, 2.0, 3.0], np.float32)
b = np.array([1.0, 1.0, 1.0, 1.0], np.float32)
print(np.unique(a).shape, np.unique(b).shape)

# %% [markdown]
# ## Must-compile: `xe.jit`
#
# `xe.jit(f)` is must-compile, like `jit_compile=True` and `jax.jit`: it compiles the whole
# function or raises `xe.CompileError`, naming the operation and the line it came from,
# before any pass runs.

# %%
def f(x):
    y = np.tanh(x) * 2 + 1
    u = np.unique(np.round(y))
    return (u * u).sum()


try:
    xe.jit(f)(x)
except xe.CompileError as e:
    print(type(e).__name__, ":", e)

# %% [markdown]
# ## Auto-clustering: `autocluster=True`
#
# The same function with `autocluster=True` (TensorFlow's `--tf_xla_auto_jit`): the
# `auto-cluster` pass marks each instruction with where it runs, a compiled cluster or
# `eager`; what is left out says why.

# %%
g = xe.jit(f, autocluster=True)
print(g(x), f(x))
ex = g.explore(x)
for c in ex.clusters.compiled:
    print("compiled:", c)
for e in ex.clusters.eager:
    print("eager:   ", e)

# %% [markdown]
# The same in a cell: `%%xla --autocluster`. The summary's `clusters` lines say what was
# compiled and what ran eagerly, and the explorer colours each cluster.

# %%
# %%xla --autocluster
y = np.tanh(x) * 2 + 1
u = np.unique(np.round(y))
total = (u * u).sum()

# %% [markdown]
# In the HLO after the `auto-cluster` pass, `np.unique` is a `custom-call`, and each
# instruction that computes something carries where it runs:
# `frontend_attributes={_xla_cluster="cluster_0"}`, `"cluster_1"` or `"eager"`.

# %%
print(u, total)
print(_xla.hlo(stage="auto-cluster"))

# %% [markdown]
# `cluster_1` was compiled for the length `np.unique` returned this time. New data with
# another number of unique values traces the cell again for that length: the new trace is
# kept in `_xla.variants`, and only the clusters whose HLO changed compile again.

# %%
x = np.linspace(-0.5, 0.5, 16, dtype=np.float32)
print("unique values now:", np.unique(np.round(np.tanh(x) * 2 + 1)).size)

# %%
# %%xla --autocluster --quiet
y = np.tanh(x) * 2 + 1
u = np.unique(np.round(y))
total = (u * u).sum()

# %%
print(u, total)
print(len(_xla.variants), "variant(s) traced for another length")

# %% [markdown]
# ## Plain `%%xla` is must-compile
#
# This cell is expected to fail (it comes last because "Run All" stops at an error): it
# names `np.unique`, the line of the cell, and what to do instead.

# %% tags=["raises-exception"]
# %%xla
y = np.tanh(x) * 2 + 1
u = np.unique(np.round(y))
total = (u * u).sum()

# %% [markdown]
# The cell above failed, so it changed nothing: `u` and `total` are still those of the last
# successful run. (Run this cell yourself: "Run All" stops at the error.)

# %%
print(u, total)

# %% [markdown]
# ## What to try next
#
# - Replace `np.unique` by something with a static shape (`np.sort(np.round(y))`): plain
#   `%%xla` compiles it whole, one program.
# - Put `np.nonzero` or a boolean mask (`y[y > 1]`) in the cell instead: also value-dependent.
# - Fix the failing cell without `--autocluster`: compute the sum of squares of the unique
#   values some other way (hint: `np.sort`, then compare each element with the next).
# - Next: `04_recompilation.ipynb`: shapes are part of the compiled program.
