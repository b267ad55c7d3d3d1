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
# # 03: auto-clustering around what cannot be compiled
#
# A compiled program has static shapes: every array's size is known before it runs.
# `np.unique` breaks that: how many values it returns depends on the data. XLA cannot
# compile it. TensorFlow's answer is **auto-clustering**: compile the parts that can be
# compiled (clusters) and run the rest eagerly between them. `%%xla --autocluster` does the
# same.

# %%
# %load_ext xla_explorer
import numpy as np

x = np.linspace(-3, 3, 16, dtype=np.float32)

# %%
# %%xla --autocluster
y = np.tanh(x) * 2 + 1
u = np.unique(np.round(y))
total = (u * u).sum()

# %% [markdown]
# The summary's `clusters` lines say what was compiled and what ran eagerly. The same is in
# `_xla.clusters`: `compiled` lists the clusters (each one compiled program), `eager` the
# instructions left to NumPy, each with its reason.

# %%
print(u, total)
for c in _xla.clusters.compiled:
    print("compiled:", c)
for e in _xla.clusters.eager:
    print("eager:   ", e)

# %% [markdown]
# In the HLO after the `auto-cluster` pass, `np.unique` is a `custom-call`, and each
# instruction that computes something is marked with where it runs:
# `frontend_attributes={_xla_cluster="cluster_0"}`, `"cluster_1"` or `"eager"`.

# %%
print(_xla.hlo(stage="auto-cluster"))

# %% [markdown]
# `cluster_1` was compiled for the length `np.unique` returned this time (`f32[5]`). New
# data with another number of unique values (3 here) traces the cell again for that length:
# the new trace is kept in `_xla.variants`, and only the clusters whose HLO changed compile
# again.

# %%
x = np.linspace(-0.5, 0.5, 16, dtype=np.float32)

# %%
# %%xla --autocluster --quiet
y = np.tanh(x) * 2 + 1
u = np.unique(np.round(y))
total = (u * u).sum()

# %%
print(u, total)
print(len(_xla.variants), "variant(s) traced for another length")

# %% [markdown]
# ## Without `--autocluster`
#
# Plain `%%xla` is **must-compile**, like `jax.jit`: the whole cell compiles or nothing
# runs. It refuses `np.unique`, names the op and the line of the cell, and says what to do.
# A failed cell writes nothing back: `u` and `total` keep the values of the run above. (This
# cell is expected to fail; it is last because "Run All" stops at an error.)

# %% tags=["raises-exception"]
# %%xla
y = np.tanh(x) * 2 + 1
u = np.unique(np.round(y))
total = (u * u).sum()
