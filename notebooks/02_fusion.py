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
# # 02: fusion, its kinds, and its refusals
#
# **What this notebook teaches.** Eager NumPy writes every intermediate to memory and reads it
# back; a compiler **fuses** operations into one kernel so intermediates stay in registers.
# Not everything fuses, and the reasons are the interesting part. On four programs from
# machine learning (softmax, layer normalisation, an Adam step, attention) you will see the
# kinds of fused kernel this compiler makes, as XLA names them:
#
# - **loop fusion** (`kLoop`): element-wise work and data movement, one loop over the output;
# - **input fusion** (`kInput`): a reduction with the element-wise work that feeds it;
# - **output fusion** (`kOutput`): a matrix product with element-wise work after it;
# - **row fusion**: reductions over a row and their broadcasts back, one kernel per row
#   (softmax, layernorm; this compiler's, beyond classic XLA fusion);
# - **multi-output fusion**: kernels that read the same inputs joined, with several results;
#
# then every kind of refusal, and two exercises whose answers are checked in a cell.
# `_xla.decisions` holds every decision, taken or refused, as a sentence; `_xla.buffers`
# where the values that live between kernels are kept.
#
# `--quiet` turns off the summary and explorer under each cell; we print what we need.

# %%
# %load_ext xla_explorer
import numpy as np

rng = np.random.default_rng(0)
x = rng.standard_normal((4, 8)).astype(np.float32)


def show_fusions(ex):
    """One line per kernel: its name, kind and instructions."""
    print(len(ex.fusions), "kernel(s)")
    for f in ex.fusions:
        kind = "row fusion" if f.row else f.kind
        print(f"   {f.name} ({kind}): {', '.join(f.instructions)}")


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
# `m` and `v` are outputs, and the update of `w` needs them too. They are written to memory
# anyway, and each reads two arrays, so fusion leaves them in kernels of their own and the
# update reads them (copying them would read their inputs again: XLA copies a producer only
# when it reads one array). **Multi-output fusion** then sees the update read `m` and `v`
# element by element, and makes them extra outputs of that one kernel: one loop, three
# results, each input read once.

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
#
# Here the arena is that one temporary and nothing else. A larger product copies its second
# operand, while it runs, into panels two vector registers wide, on the stack of each thread
# that packs them, as OpenBLAS packs into buffers of its own: not in the arena, unless even
# one panel is too deep for the stack (more than 16,384 rows), and then the CPU backend
# places that space in the arena, as a row named `... scratch`, live at the product's step
# alone. These three are too small to pay for packing at all: a product of at most 4,096
# multiply-adds is a plain loop nest that reads its operands where they are.

# %%
bufs = _xla.buffers
print("arena:", bufs.peak_bytes, "bytes; lower bound:", bufs.lower_bound_bytes, "bytes")
print(bufs.csv())

# %% [markdown]
# `report()` is XLA's memory-usage report for the same assignment:

# %%
print(bufs.report())

# %% [markdown]
# ## Every kind of refusal
#
# `refusals` compiles a function with `xe.explore` (on the HLO interpreter: the passes are
# the same, and nothing is compiled by Numba, so it is quick) and prints its kernels and
# every refused decision. Each program below meets one reason a kernel boundary exists:

# %%
import xla_explorer as xe


def refusals(title, f, *args):
    ex = xe.explore(f, *args)
    print(f"{title}: {len(ex.fusions)} kernel(s):",
          ", ".join(f"{k.name} ({k.kind})" for k in ex.fusions))
    for d in ex.decisions:
        if not d.fused:
            print("   ", d.message)


v = rng.standard_normal(8).astype(np.float32)
refusals("a reduction before its broadcast", lambda x: x - x.mean(axis=0), x)
refusals("an expensive value with two readers", lambda x: np.exp(x) / np.exp(x).sum(), x)
refusals("work before a product", lambda x, w: (x * 2) @ w, x, w1[:8].T)
refusals("a scan", lambda x: np.cumsum(x, axis=1)[:, -1], x)
refusals("a sort", lambda x: np.sort(x * 2, axis=1), x)
refusals("a scatter", lambda v: np.add.at(v, [0, 1, 1], 1.0) or v, v)
refusals("an expensive value under a gather", lambda v: np.exp(v)[[0, 0, 1]], v)

# %% [markdown]
# A reduction needs all its inputs before its result exists, so what reads the result waits
# (unless row fusion joins them, as it did twice above: one kernel each). An expensive value
# read twice is computed once rather than copied into both readers. A product (BLAS-like)
# reads its operands from memory, so work before it stays outside; work after it fuses
# (output fusion). Scans, sorts and scatters visit elements in an order of their own. A
# gather may read one element many times, so an expensive producer is computed once. (What
# cannot be compiled at all runs eagerly between kernels: notebook 03.)
#
# ## Exercise 1: make this one kernel
#
# This cell scales `x` before multiplying by `w`. It compiles to two kernels: the scaling is
# refused by the product. Edit the cell so it computes the same `y` in **one** kernel, run
# it, then run the check below it. (One answer is further down.) The exercises run on
# `--backend interpreter`: the same passes and the same kernels, executed by the HLO
# interpreter instead of compiled by Numba, so each try is immediate.

# %%
w = rng.standard_normal((8, 3)).astype(np.float32)

# %%
# %%xla --backend interpreter --quiet
y = (x * 0.5) @ w


# %%
def check_exercise(ex, want, got):
    same = np.allclose(got, want, rtol=1e-5, atol=1e-5)
    n = len(ex.fusions)
    verdict = "solved" if n == 1 and same else "not yet"
    print(f"{verdict}: {n} kernel(s), same result as (x * 0.5) @ w: {same}")


check_exercise(_xla, (x * 0.5) @ w, y)

# %% [markdown]
# One answer: scale the product instead (`(x @ w) * 0.5` is the same number up to
# rounding). The multiply is now an epilogue of the product: output fusion.

# %% jupyter={"source_hidden": true}
# %%xla --backend interpreter --quiet
y = (x @ w) * 0.5

# %%
check_exercise(_xla, (x * 0.5) @ w, y)

# %% [markdown]
# ## Exercise 2: a scan where a reduction would do
#
# The last element of each row's cumulative sum is the row's sum; this cell computes it with
# a scan, which is a kernel of its own. Make it one kernel with the same `last`.

# %%
# %%xla --backend interpreter --quiet
last = np.cumsum(x, axis=1)[:, -1] * 2

# %%
print(len(_xla.fusions), "kernel(s)")

# %% jupyter={"source_hidden": true}
# %%xla --backend interpreter --quiet
last = x.sum(axis=1) * 2

# %%
print(len(_xla.fusions), "kernel(s); same result:",
      np.allclose(last, np.cumsum(x, axis=1)[:, -1] * 2, rtol=1e-5))

# %% [markdown]
# ## What to try next
#
# - In the softmax cell, compute `np.exp` twice on purpose (`np.exp(s) / np.exp(s).sum(...)`):
#   what do `cse` and fusion make of it? (`_xla.hlo("cse")` shows the program after CSE.)
# - Make the attention block bigger (`q`, `k` of 64 rows): does the arena grow as
#   `6 x 6 x 4` bytes did, with the square of the rows?
# - Open the explorer (`_xla.show()`) on the attention cell and step through the Decisions
#   tab: each decision is drawn on the graph.
# - Next: `03_must_compile_and_autocluster.ipynb`, for code that cannot be compiled whole.
