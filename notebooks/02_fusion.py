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
# # 02: fusion, and where the bytes live
#
# Eager NumPy writes every intermediate to memory and reads it back. A compiler **fuses**
# operations into one kernel so intermediates stay in registers. This notebook compiles four
# small programs from machine learning and asks the compiler what it fused, what it refused,
# and why (`_xla.decisions`), and where the remaining values live (`_xla.buffers`).
#
# `--quiet` turns off the summary and widget under each cell; we print what we need.

# %%
# %load_ext xla_explorer
import numpy as np

rng = np.random.default_rng(0)
x = rng.standard_normal((4, 8)).astype(np.float32)


def show_fusions(ex):
    """One line per kernel: its name, kind and instructions."""
    print(len(ex.fusions), "kernel(s)")
    for f in ex.fusions:
        print("  ", f)


# %% [markdown]
# ## Row softmax
#
# Softmax has two reductions over each row (a max, then a sum), each broadcast back over the
# row. Classic XLA fusion stops at each reduction whose result is broadcast back (a kernel
# boundary), so it makes several kernels; this compiler's **row fusion** makes one kernel
# that works row by row. In the HLO it is a `fusion` with `kind=kInput` and
# `backend_config={"schedule":"row"}`.

# %%
# %%xla --quiet
p = np.exp(x - x.max(axis=1, keepdims=True))
p = p / p.sum(axis=1, keepdims=True)

# %%
show_fusions(_xla)
print(_xla.check(x))
print([line.strip() for line in _xla.hlo().splitlines() if "fusion(" in line])

# %% [markdown]
# Every decision the fusion passes took, fused or not, is in `_xla.decisions` with a
# sentence. Cheap work (a subtraction, a broadcast) is fused or copied freely. `exponential`
# is expensive and has two consumers (the sum and the division), so it is not copied into
# both; each reduction whose result is broadcast back is a boundary. The last decisions are
# row fusion joining those pieces into one kernel, in which each `exp` is computed once.

# %%
for d in _xla.decisions:
    print(f"[{d.pass_name}]", d.message)

# %% [markdown]
# ## Layer normalisation
#
# Mean and variance over each row, then scale and shift: again one row kernel. `mu` and
# `var` are outputs of the cell too (every array a cell assigns is), so the kernel writes
# three results.

# %%
g = np.ones(8, np.float32)
beta = np.zeros(8, np.float32)

# %%
# %%xla --quiet
mu = x.mean(axis=1, keepdims=True)
var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
ln = (x - mu) / np.sqrt(var + 1e-5) * g + beta

# %%
show_fusions(_xla)
print(_xla.check(x, g, beta))

# %% [markdown]
# ## An Adam step
#
# Three results from the same inputs: the new first and second moments `m` and `v`, and the
# new weights. `w -= ...` updates the caller's array in place, as NumPy does (in the HLO it
# is an output aliased to its input). The hyperparameters are Python floats: inputs too,
# compiled for their type, not their value. The bias corrections `c1`, `c2` are computed
# once in Python.

# %%
w = rng.standard_normal(16).astype(np.float32)
grad = rng.standard_normal(16).astype(np.float32)
m = np.zeros(16, np.float32)
v = np.zeros(16, np.float32)
lr, b1, b2, eps, t = 1e-3, 0.9, 0.999, 1e-8, 1
c1, c2 = 1 - b1**t, 1 - b2**t
w_before, w_old = w, w.copy()

# %%
# %%xla --quiet
m = b1 * m + (1 - b1) * grad
v = b2 * v + (1 - b2) * grad * grad
w -= lr * (m / c1) / (np.sqrt(v / c2) + eps)

# %% [markdown]
# The same array object, new values:

# %%
print(w is w_before, float(np.abs(w - w_old).max()))

# %% [markdown]
# `m` and `v` are outputs, and the update of `w` needs them too. Fusion copies their cheap
# element-wise work into the kernel that updates `w`; **multi-output fusion** then sees
# them computed both there and in kernels of their own, and makes them extra outputs of
# that one kernel: one loop, three results, each input read once.

# %%
show_fusions(_xla)
for d in _xla.decisions:
    if d.pass_name == "multi-output-fusion":
        print(d.message)

# %% [markdown]
# ## A small attention block
#
# `softmax(q @ k.T / sqrt(d)) @ v`, then a feed-forward layer `relu(out @ w1 + bias)`. A
# `dot` (matrix product) reads its operands from memory, so nothing element-wise fuses *into*
# a dot. `k.T` costs nothing, though: the algebraic simplifier folds the transpose into the
# dot (it now contracts `k`'s second dimension, `rhs_contracting_dims={1}`), as XLA's does,
# and the product reads `k` as it lies. Element-wise work *after* a dot can fuse into it as an
# epilogue (`kOutput`): the bias and the `maximum`.
# The scores `s` feed both passes of the softmax, and a dot is never computed twice, so the
# scaling by `1/sqrt(d)` goes into the softmax's row kernel instead of the first dot.

# %%
q = rng.standard_normal((6, 4)).astype(np.float32)
k = rng.standard_normal((6, 4)).astype(np.float32)
val = rng.standard_normal((6, 4)).astype(np.float32)
w1 = rng.standard_normal((4, 8)).astype(np.float32)
bias = np.zeros(8, np.float32)

# %%
# %%xla --quiet
s = q @ k.T / np.sqrt(np.float32(4))
s = np.exp(s - s.max(axis=1, keepdims=True))
s = s / s.sum(axis=1, keepdims=True)
out = s @ val
h = np.maximum(out @ w1 + bias, 0)

# %%
show_fusions(_xla)
print(_xla.check(q, k, val, w1, bias))

# %% [markdown]
# The refusals say why each kernel boundary is where it is:

# %%
for d in _xla.decisions:
    if not d.fused:
        print(d.message)

# %% [markdown]
# ## Buffers
#
# Values that live *between* kernels need memory. `buffer-assignment` gives each one a live
# range over the schedule and packs the temporaries into one arena: two temporaries whose
# live ranges do not overlap can share bytes. `peak_bytes` is the arena's size;
# `lower_bound_bytes` is the most bytes live at any one step (each rounded up to 64-byte
# alignment), which no packing can beat. Parameters and outputs are arrays of their own, not
# in the arena. Here the only temporary is the first product, the scores: 6x6 float32 values
# (144 bytes, rounded up to 192), live from the dot that writes them to the row kernel that
# reads them. Before the transpose was folded into the dot, `k.T` was a second temporary.

# %%
bufs = _xla.buffers
print("arena:", bufs.peak_bytes, "bytes; lower bound:", bufs.lower_bound_bytes, "bytes")
print(bufs.csv())

# %% [markdown]
# `report()` is XLA's memory-usage report for the same assignment:

# %%
print(bufs.report())
