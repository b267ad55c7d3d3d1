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
# # 05: memory: buffers, liveness, reuse, and the batch that fits
#
# **What this notebook teaches.** A fused kernel keeps its intermediates in registers; what
# must live *between* kernels gets a buffer. XLA's **buffer assignment** gives each such value
# a live range over the schedule and packs them into one block of memory (the arena), so two
# values that are never alive at the same time share bytes, and a kernel may write its result
# over an operand that dies there (in-place reuse). Fewer intermediates and shared bytes mean
# a lower peak: the documents report a BERT training run on 8 V100 GPUs fitting about **5x**
# larger batches with XLA. You will read an assignment, then measure how much larger a batch
# this compiler fits, in a fixed memory budget, for a transformer-style block.

# %%
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np
import xla_explorer as xe

rng = np.random.default_rng(0)

# %% [markdown]
# ## Live ranges and the arena
#
# Three layers, then a sum. Each product and the `tanh` after it are one kernel (output
# fusion); what one kernel hands to the next lives in the arena. The buffer assignment is made
# by the passes, before any kernel is compiled, so `xe.explore` on the HLO interpreter (its
# default) shows it at once. (In a `%%xla` cell, every array the cell assigns is an output, an
# array of its own returned to you; a function's intermediate values are temporaries.)

# %%
x = rng.standard_normal((64, 32)).astype(np.float32)
w1, w2, w3 = (rng.standard_normal((32, 32)).astype(np.float32) * 0.2 for _ in range(3))


def three_layers(x, w1, w2, w3):
    return np.tanh(np.tanh(np.tanh(x @ w1) @ w2) @ w3).sum()


# %% [markdown]
# `buffers.csv()` has one row per temporary: its offset in the arena, its size, the
# schedule steps where it is defined and last used. `peak_bytes` is the arena's size;
# `lower_bound_bytes` the most bytes alive at any one step (each rounded up to 64 bytes),
# which no packing can beat; `temporary_bytes` what the temporaries would take with no reuse.

# %%
bufs = xe.explore(three_layers, x, w1, w2, w3).buffers
print(bufs.csv())
print("arena", bufs.peak_bytes, "bytes; lower bound", bufs.lower_bound_bytes,
      "bytes; with no reuse", bufs.temporary_bytes, "bytes")

# %% [markdown]
# Read the offsets and the live ranges (`definition_time`, `end_time`): a temporary that
# is defined after another died may take its offset. The timeline draws the same thing, each
# buffer a rectangle, schedule step across and arena offset up.

# %%
fig, ax = plt.subplots(figsize=(7, 3))
bufs.plot(ax=ax)
plt.show()

# %% [markdown]
# ## In-place reuse
#
# A kernel that reads a buffer for the last time may write its own result over it, when the
# sizes match and each element is read before it is overwritten. Here a sort is a kernel of
# its own (notebook 02), the `tanh` after it another, and the product a third:

# %%
inplace = xe.explore(lambda x, w: np.tanh(np.sort(x, axis=1)) @ w, x, w1).buffers
for s in inplace.sharings:
    print(s)
print("arena", inplace.peak_bytes, "bytes for", len(inplace.temporaries), "temporaries")

# %% [markdown]
# ## The largest batch that fits
#
# A transformer-style block: layer normalisation, single-head self-attention over sequences
# of `T` tokens, a residual, then a two-layer MLP and a residual. The batch is `n` sequences;
# `x` holds their `n * T` tokens as rows.

# %%
T, D, H = 16, 32, 128
wqkv = rng.standard_normal((D, 3 * D)).astype(np.float32) * 0.1
wa = rng.standard_normal((D, H)).astype(np.float32) * 0.1
wb = rng.standard_normal((H, D)).astype(np.float32) * 0.1


def block(x, wqkv, wa, wb):
    n = x.shape[0] // T
    h = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    qkv = (h @ wqkv).reshape(n, T, 3, D)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    s = q @ k.transpose(0, 2, 1) / np.sqrt(np.float32(D))
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    x = x + (p @ v).reshape(n * T, D)
    return x + np.maximum(x @ wa, 0) @ wb


# %% [markdown]
# The memory a call needs beyond its inputs, two ways:
#
# - **eager NumPy**: measured, the peak of what `tracemalloc` sees allocated during one call
#   (NumPy reports every array to it), the result included;
# - **compiled**: the arena plus the outputs, from the buffer assignment. `xe.explore` on the
#   HLO interpreter gives the assignment without compiling anything, so trying a batch size
#   costs milliseconds. (Below, one compiled run checks it against a measurement.)

# %%
def eager_bytes(n):
    x = rng.standard_normal((n * T, D)).astype(np.float32)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    block(x, wqkv, wa, wb)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def compiled_bytes(n):
    a = xe.explore(block, np.zeros((n * T, D), np.float32), wqkv, wa, wb).buffers
    outputs = sum(b.size for b in a.buffers if b.category == "output")
    return a.peak_bytes + outputs


def largest_batch(bytes_of, budget):
    """The largest n with bytes_of(n) <= budget: doubling, then bisection."""
    lo, hi = 0, 1
    while bytes_of(hi) <= budget:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if bytes_of(mid) <= budget else (lo, mid)
    return lo


budget = 2**19  # 512 KiB
n_eager = largest_batch(eager_bytes, budget)
n_compiled = largest_batch(compiled_bytes, budget)
print(f"budget {budget} bytes: eager fits {n_eager} sequences "
      f"({eager_bytes(n_eager)} bytes), compiled {n_compiled} "
      f"({compiled_bytes(n_compiled)} bytes): {n_compiled / n_eager:.2f}x the batch")

# %% [markdown]
# Memory grows linearly with the batch for both, with different slopes:

# %%
ns = [1, 4, 16, 32, 64]
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.plot(ns, [eager_bytes(n) / 2**20 for n in ns], "o-", label="eager NumPy (measured)")
ax.plot(ns, [compiled_bytes(n) / 2**20 for n in ns], "s-",
        label="compiled (arena + outputs)")
ax.axhline(budget / 2**20, color="gray", linestyle=":", label="budget")
ax.set_xlabel("batch (sequences of 16 tokens)")
ax.set_ylabel("memory beyond the inputs, MiB")
ax.set_title("Transformer-style block: memory per call against batch size")
ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)  # beside the data
fig.tight_layout()
plt.show()

# %% [markdown]
# Is the assignment what the compiled program really uses? Compile the block for the CPU at
# that batch size, run it, and measure: the outputs it allocates per call (`tracemalloc`)
# plus the arena, allocated once per executable (`executable.arena_bytes`). A matrix product
# packs its second operand into panels while it runs, on the stack of the thread that packs
# them (up to 2 MiB at a time), as it packs the rows of the first operand; only an operand
# too deep for that (more than 16,384 rows) is packed into scratch space that the CPU's own
# buffer assignment places in the arena, where no value lives at that step. So this block's
# arena holds values only, as the interpreter's assignment, used above, does.

# %%
xc = rng.standard_normal((n_compiled * T, D)).astype(np.float32)
ex = xe.explore(block, xc, wqkv, wa, wb, backend="cpu")
ex.run(xc, wqkv, wa, wb)  # the first call compiles
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
ex.run(xc, wqkv, wa, wb)
per_call = tracemalloc.get_traced_memory()[1] - base
tracemalloc.stop()
arena = ex.executable.arena_bytes
scratch = sum(x.size for x in ex.buffers.allocations
              if any(v.category == "scratch" for v in x.values))
extra = arena - xe.explore(block, xc, wqkv, wa, wb).buffers.peak_bytes  # scratch's cost
print(f"{len(ex.fusions)} kernels; measured {per_call + arena} bytes: per call {per_call}, "
      f"arena {arena} (the CPU's assignment said {ex.buffers.peak_bytes}, with {scratch} "
      f"bytes of scratch, {extra} more than the interpreter's arena); the interpreter's "
      f"assignment said {compiled_bytes(n_compiled)} in all")
print(ex.check(xc, wqkv, wa, wb))

# %% [markdown]
# Counting what scratch space adds to the arena (nothing here; a larger weight's packed copy
# would not grow with the batch), the largest compiled batch within the budget is:

# %%
n_fit = largest_batch(lambda n: compiled_bytes(n) + extra, budget)
print(f"compiled fits {n_fit} sequences, eager {n_eager}: {n_fit / n_eager:.2f}x the batch")

# %% [markdown]
# Where does eager NumPy's extra memory go? Every intermediate of `block` is a full array:
# the normalised `h`, `qkv`, the scores `s` and `p` (and the temporaries inside each line,
# such as `s - s.max(...)`), alive until Python drops them. Compiled, the element-wise work
# happens inside kernels, and the arena reuses the bytes of values that died.
# The documents' 5x was measured on BERT training on GPUs, with gradients and optimizer
# state; this is one block's forward pass on a CPU: measure, do not assume.

# %% [markdown]
# ## What to try next
#
# - Change `budget`, `T` or `H`, and rerun: which grows faster, eager or compiled memory?
# - In the first program, make `a` an output again and compare `_xla.buffers.peak_bytes`.
# - In `block`, compute `q`, `k` and `v` with three separate products: more kernels, and
#   is the arena larger?
# - Next: `06_speed.ipynb`: bytes moved become time.
