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
# # 08: a whole training step, compiled as one program
#
# **What this notebook teaches.** XLA's documentation compiles an entire training step, its
# `train_mnist` example: the forward pass, a softmax cross-entropy loss, the gradients and the
# optimizer's update, all in one `jit_compile=True` function. Compiled whole, the step's
# element-wise work fuses around the matrix products, and the gradients never leave the
# program. Here is the same for a small classifier written in NumPy, with the gradients
# written by hand: how many kernels it becomes, how much memory it needs, how fast it runs,
# and that it learns.

# %%
# %matplotlib inline
# %load_ext xla_explorer
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np

rng = np.random.default_rng(0)

# %% [markdown]
# The data: 2048 points in 20 dimensions, drawn around 4 centres, one class per centre (made
# here, so nothing is downloaded). `Y` is the one-hot encoding of the labels.

# %%
N, F, HIDDEN, CLASSES = 2048, 20, 64, 4
centres = rng.standard_normal((CLASSES, F)).astype(np.float32) * 0.5
labels = rng.integers(0, CLASSES, N)
X = (centres[labels] + rng.standard_normal((N, F))).astype(np.float32)
Y = np.eye(CLASSES, dtype=np.float32)[labels]

# %% [markdown]
# The model: a hidden layer of 64 ReLU units, then 4 logits. Weights small and random,
# biases zero; `lr` the SGD learning rate.

# %%
W1 = (rng.standard_normal((F, HIDDEN)) * 0.1).astype(np.float32)
b1 = np.zeros(HIDDEN, np.float32)
W2 = (rng.standard_normal((HIDDEN, CLASSES)) * 0.1).astype(np.float32)
b2 = np.zeros(CLASSES, np.float32)
lr = 0.5

# %% [markdown]
# ## The step, in one `%%xla` cell
#
# The step is a function inside the cell, so its intermediates (`h`, `logits`, the
# gradients) stay inside the compiled program: every name a cell assigns at its top level is
# an output, written back to you, while a function's locals are not. `W1 -= ...` updates the
# weights in place, as NumPy does; the cell's outputs are `loss` and the four updated arrays.

# %%
# %%xla
def train_step(W1, b1, W2, b2, X, Y, lr):
    # forward: dense + ReLU, dense, log-softmax, cross-entropy
    h = np.maximum(X @ W1 + b1, 0)
    logits = h @ W2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -(Y * log_p).sum() / X.shape[0]
    # backward, by hand: softmax cross-entropy's gradient is p - Y
    dlogits = (np.exp(log_p) - Y) / X.shape[0]
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = (dlogits @ W2.T) * (h > 0)
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    # SGD update, in place
    W1 -= lr * dW1
    b1 -= lr * db1
    W2 -= lr * dW2
    b2 -= lr * db2
    return loss


loss = train_step(W1, b1, W2, b2, X, Y, lr)

# %% [markdown]
# ## How many kernels
#
# Eager NumPy runs each operation of the traced program on its own; compiled, they are a
# handful of kernels. The products stay kernels of their own (they read their operands from
# memory, notebook 02), with element-wise work fused after them; the softmax and its
# reductions become one row kernel.

# %%
traced = [i for i in _xla.stage(0).module.entry.instructions
          if i.opcode not in ("parameter", "constant", "tuple")]
dots = [i for i in traced if i.opcode == "dot"]
print(f"{len(traced)} operations traced ({len(dots)} matrix products), "
      f"{len(_xla.fusions)} kernels:")
for f in _xla.fusions:
    print(f"  {f.name:32} {f.kind:12} {len(f.instructions):3} instructions")

# %% [markdown]
# ## How much memory
#
# Compiled: the arena holds what lives between kernels (the activations the backward pass
# needs, the gradients until the update); the outputs are the loss and the weights, updated
# in place. Eager: what `tracemalloc` sees allocated during one step. The cell's function is
# `_xla.function`; called directly it runs eager NumPy (on copies here, so the weights do
# not move).

# %%
bufs = _xla.buffers
scratch = [x for x in bufs.allocations if x.values[0].category == "scratch"]
print(f"compiled: arena {bufs.peak_bytes} bytes for {len(bufs.temporaries)} temporaries "
      f"and {len(scratch)} products' scratch space (lower bound {bufs.lower_bound_bytes}; "
      f"with no reuse {bufs.temporary_bytes})")
copies = [a.copy() if isinstance(a, np.ndarray) else a for a in _xla.args]
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
_xla.function(*copies)
eager_peak = tracemalloc.get_traced_memory()[1] - base
tracemalloc.stop()
print(f"eager: {eager_peak} bytes at the peak of one step")
print(f"compiled holds {bufs.peak_bytes / eager_peak:.2f}x eager's peak in its arena")

# %% [markdown]
# Which is smaller depends on the program. Eager NumPy frees each intermediate the moment
# Python drops it; the arena must hold at once everything the schedule keeps alive at one
# step. A training step keeps its activations for the backward pass either way; here two
# decisions keep the arena small. The backward pass's mask `h > 0` reads `h`, instead of
# computing relu again from `X @ W1` (the Decisions tab says why: the copy would keep
# `X @ W1`'s 512 KiB alive until then), so `X @ W1 + b1` and relu are one kernel and
# `X @ W1` is never stored. And the products take no space in the arena: each packs its
# second operand into panels while it runs, on the stacks of the threads that pack it.

# %% [markdown]
# ## How fast
#
# `bench` times eager NumPy against the compiled step, interleaved, on copies of the inputs.
# Whether compiling pays depends on the sizes and on the machine: the documents warn that
# compiling costs time which small models may not win back, and say to measure with and
# without. This is that measurement, for this step, here.

# %%
result = _xla.bench(repeat=30)
print(result.table())
result.plot()

# %% [markdown]
# ## It learns
#
# `_xla.run` runs the compiled step on the arrays given, in the order of the cell's inputs
# (`W1, b1, W2, b2, X, Y, lr`, as the summary lists them), and updates the weights in place,
# as the cell did. A hundred steps:

# %%
losses = []
for step in range(100):
    out = _xla.run(W1, b1, W2, b2, X, Y, lr)
    losses.append(float(out["loss"]))
h = np.maximum(X @ W1 + b1, 0)
accuracy = float(((h @ W2 + b2).argmax(axis=1) == labels).mean())
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; training accuracy {accuracy:.1%}")

# %%
fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(range(1, len(losses) + 1), losses)
ax.set_xlabel("training step")
ax.set_ylabel("cross-entropy loss")
ax.set_title("SGD on the compiled training step")
plt.show()

# %% [markdown]
# ## What to try next
#
# - Add a second hidden layer (and its gradients): how many kernels now?
# - Make `N` ten times larger and rerun the bench: does the compiled step gain more?
# - Add momentum: a velocity array per weight, updated in place like the weights. It joins
#   the update kernels (multi-output fusion, notebook 02).
# - Check your gradients: compare `dW1` from the cell with a finite difference of `loss`.
# - Later notebooks (GPU kernels, dumps and replay, ahead-of-time export) continue from here.
