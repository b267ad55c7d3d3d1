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
# # 12: past one machine, on Dask
#
# **What this notebook teaches.** XLA's texts show a training step under a distribution
# strategy: every replica runs the same compiled step on its share of the batch, and an
# **all-reduce** sums the gradients across devices. A NumPy user whose arrays outgrow one
# machine reaches for Dask. Here the same compiled kernels run per chunk of `dask.array`
# arrays, on a `dask.distributed` cluster of two worker processes on this machine: a
# **partitioning** pass, after fusion, decides for each kernel how its work splits over the
# chunks (per chunk, a partial reduction and its combine, or a rechunk), and says why. The
# combine of the partials is the all-reduce. Dask runs the graph: this project adds no
# scheduler or worker of its own.

# %%
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

import xla_explorer as xe

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                       dashboard_address=None)
client = Client(cluster)
print(f"{len(client.scheduler_info()['workers'])} workers, one thread each")

# %% [markdown]
# ## XLA's first example, split in four
#
# `sum(x + y*z)` on arrays of 4,000 numbers in chunks of 1,000. Tracing reads only the
# arguments' shapes, dtypes and chunks: nothing is computed yet. The partitioning stage has a
# note per kernel, and one for the whole Dask graph.

# %%
rng = np.random.default_rng(0)
x_np, y_np, z_np = (rng.standard_normal(4000) for _ in range(3))
x, y, z = (da.from_array(a, chunks=1000) for a in (x_np, y_np, z_np))


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


ex = xe.explore(sum_xyz, x, y, z, backend="dask")
for note in ex.stage("partitioning").notes:
    print("-", note)

# %% [markdown]
# One kernel, fused as on the CPU, is marked **partial-reduce**: each chunk computes its own
# sum with the compiled kernel, and a tree combine adds the four partials. In the explorer
# the stage is called `partitioning`; step to it to read the same notes beside the graph.

# %%
ex

# %% [markdown]
# The call returns a dask array, lazy as Dask users expect; `.compute()` runs the graph on
# the cluster, each worker compiling the chunk's program from its HLO text.

# %%
lazy = ex.run(x, y, z)
print(lazy)
value = lazy.compute()
print(f"on the cluster {value:.10f}, NumPy on the whole arrays {sum_xyz(x_np, y_np, z_np):.10f}:"
      f" {np.isclose(value, sum_xyz(x_np, y_np, z_np), rtol=1e-12)}")

# %% [markdown]
# ## Mean and variance: partial statistics
#
# NumPy's `var` is the mean of the squared deviations from the mean: a reduction whose
# result the next reduction reads, so each chunk would wait for the total mean and be read
# again. The partitioning pass recognises that pattern in the HLO and has each chunk compute
# its own count, mean and sum of squared deviations about its own mean (M2) in one pass; the
# tree combine merges them with Chan's formula (the `partial-statistics` notes). Over the
# whole array fusion puts the sum and the M2 in one kernel; per column they are in kernels
# of their own, and the M2's takes its chunk's sum itself. What reads the totals (the
# divide by the count) runs once, after the combine: a second **step** of the kernel.

# %%
a_np = rng.standard_normal((600, 8)) + 3.0
a = da.from_array(a_np, chunks=(150, 8))


def mean_var(a):
    return a.mean(axis=0), a.var(axis=0), a.var()


mv = xe.explore(mean_var, a, backend="dask")
for note in mv.stage("partitioning").notes:
    print("-", note)
got = client.compute(mv.run(a), sync=True)
print("mean and variance agree with NumPy:",
      all(np.allclose(g, w, rtol=1e-12) for g, w in zip(got, mean_var(a_np))))

# %% [markdown]
# ## In a cell: `%%xla --backend dask`
#
# The magic takes dask arrays too. The cell below reads `x`, 4,000 rows of 100 in chunks of
# 1,000, made on the workers (`da.random`): it is traced on its shape, dtype and chunks,
# never computed, and the names it assigns are bound to **lazy** dask arrays. The summary
# shows the chunks; the check against eager NumPy, which would compute both sides, waits
# until you ask for it.

# %%
# %load_ext xla_explorer
x = da.random.default_rng(1).random((4000, 100), chunks=(1000, 100))

# %%
# %%xla --backend dask
e = np.exp(x - x.max(axis=1, keepdims=True))
p = e / e.sum(axis=1, keepdims=True)

# %% [markdown]
# Nothing has run yet: `p` is a graph. `.compute()` runs it on the cluster (every row of a
# softmax sums to 1), and `_xla.check()` computes NumPy's answer beside ours.

# %%
print(type(p).__name__, "in chunks of", p.chunks[0])
print("rows sum to 1:", np.allclose(p.sum(axis=1).compute(), 1))
print(_xla.check())

# %% [markdown]
# ## A data-parallel training step
#
# Notebook 08's step, with the new weights returned (dask arrays are immutable). The batch
# `X`, `Y` is split in four; the weights are whole, one block every chunk reads. The forward
# and backward passes run per chunk; each weight's gradient (`X.T @ dh` contracts the
# batch axis) is a per-chunk product and a sum: the all-reduce; the update runs once.

# %%
F32 = np.float32


def train_step(W1, b1, W2, b2, X, Y, lr):
    h = np.maximum(X @ W1 + b1, 0)
    logits = h @ W2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -(Y * log_p).sum() / X.shape[0]
    dlogits = (np.exp(log_p) - Y) / X.shape[0]
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = (dlogits @ W2.T) * (h > 0)
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    return loss, W1 - lr * dW1, b1 - lr * db1, W2 - lr * dW2, b2 - lr * db2


N, D, H, C = 512, 20, 32, 4
centers = rng.standard_normal((C, D)).astype(F32) * 2
labels = rng.integers(0, C, N)
X_np = (centers[labels] + rng.standard_normal((N, D))).astype(F32)
Y_np = np.eye(C, dtype=F32)[labels]
X, Y = da.from_array(X_np, chunks=128), da.from_array(Y_np, chunks=128)
weights = [(rng.standard_normal((D, H)) * 0.1).astype(F32), np.zeros(H, F32),
           (rng.standard_normal((H, C)) * 0.1).astype(F32), np.zeros(C, F32)]

step = xe.jit(train_step, backend="dask")
plan = step.explore(*weights, X, Y, F32(0.5)).stage("partitioning")
marks = [n.rule for n in plan.notes if n.instructions]
print({m: marks.count(m) for m in sorted(set(marks))})
print(plan.notes[-1])

# %% [markdown]
# Five steps on the cluster. Each call builds the graph of one step; `client.compute` runs
# it, and the new weights come back as NumPy arrays for the next step. The first step is
# checked against NumPy on the whole batch.

# %%
losses = []
for k in range(5):
    loss, *new = client.compute(step(*weights, X, Y, F32(0.5)), sync=True)
    if k == 0:
        want = train_step(*weights, X_np, Y_np, F32(0.5))
        print("first step agrees with NumPy:",
              all(np.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in zip([loss, *new], want)))
    weights = new
    losses.append(float(loss))
print("loss", " -> ".join(f"{v:.3f}" for v in losses))

# %%
client.close()
cluster.close()

# %% [markdown]
# ## What to try next
#
# - Chunk `x` along both axes (`chunks=(150, 4)`) in the mean and variance: the stage says
#   it rechunks to whole rows first.
# - Slice the batch (`x[1:] - x[:-1]`): the kernel is marked **rechunk** and runs on the
#   whole array, with the instruction that forced it named.
# - Run `benchmarks/dask_cluster.py` and read `docs/dask.md`: our chunks against the same
#   NumPy code on plain `dask.array`, time and peak worker memory, with the workers' memory
#   limit set below the size of the inputs.
