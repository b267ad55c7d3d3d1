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
# # 09: the same fusions on a GPU
#
# **What this notebook teaches.** XLA's high-level optimiser works on the program,
# independent of the target; the target is a parameter of the last step. The CUDA backend
# compiles the same HLO, the same fusions and the same buffer assignment as the CPU backend:
# only the last step differs. A CPU kernel is a loop a few threads share; a
# CUDA kernel is one function that thousands of threads run at once, each on its own
# elements, so the code generator's job is to decide **which thread computes what**. This
# notebook compiles one program for both, reads the CUDA kernels and their launch
# configuration, and counts the bytes fusion saves.
#
# The first cell looks for a GPU. Where there is none (most laptops, and the machines this
# project is tested on) it turns on **Numba's CUDA simulator**, which runs each CUDA thread as
# a Python thread: the kernels are the same and the answers are checked, but the times mean
# nothing, so the shapes here are small.

# %%
import ctypes.util
import os

GPU = ctypes.util.find_library("cuda") is not None
if not GPU:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba.cuda is first imported
print("a GPU driver is here: kernels run on the GPU" if GPU else
      "no GPU here: Numba's CUDA simulator runs the kernels (correct answers, no timings)")

# %%
# %load_ext xla_explorer
import numpy as np

import xla_explorer as xe

rng = np.random.default_rng(0)
x = rng.standard_normal((6, 40)).astype(np.float32)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


on_cpu = xe.explore(softmax, x, backend="cpu")
on_gpu = xe.explore(softmax, x, backend="cuda")
print("same HLO after every pass:", on_cpu.hlo() == on_gpu.hlo())
print("kernels:", [f.name for f in on_gpu.fusions])
print(on_gpu.check(x))

# %% [markdown]
# ## One block per row
#
# Softmax is one **row fusion**: two reductions per row (a max, then a sum) and the output.
# On the CPU one thread takes a row at a time. On the GPU each row gets a **block** of threads
# that stride over the row together. A reduction is then two steps: each thread reduces its
# own elements, then the block combines its threads' partial results, first within each
# warp of 32 threads by **shuffles** (`shfl_down`: a thread reads a register of the thread
# 16, 8, 4, 2 and 1 lanes down), then across warps through **shared memory**. The first line
# of each kernel says how it is launched, and why.

# %%
(name, source), = on_gpu.kernels.items()
print(source)

# %% [markdown]
# Look for `param_0_..._row` and `exponential_..._row`: the first pass over a row keeps the
# row and its exponentials in shared memory, so the later passes never read them from
# global memory again.
#
# ## Other shapes of kernel
#
# A full sum runs on many blocks, each adding its own partial; the last block to finish
# combines them. A column sum gives each thread one column. A product stages tiles of its
# operands in shared memory.

# %%
v = rng.standard_normal(3000).astype(np.float32)
w = rng.standard_normal((40, 16)).astype(np.float32)
for label, f, args in [("sum(x + y*z)", lambda a, b, c: np.sum(a + b * c), (v, v, v)),
                       ("column mean", lambda a: a.mean(axis=0), (x,)),
                       ("relu(x @ w)", lambda a, b: np.maximum(a @ b, 0), (x, w))]:
    ex = xe.explore(f, *args, backend="cuda")
    print(f"{label}: {ex.check(*args).ok and 'ok'}")
    for src in ex.kernels.values():
        print("  ", src.splitlines()[0])

# %% [markdown]
# ## Bytes moved: what fusion saves
#
# A GPU computes far faster than it reads memory, so what fusion buys is **bytes not moved**.
# `ex.traffic` counts them from the program itself (computed, not measured, and the same on
# every machine): eager NumPy runs each op on its own, reading its operands from memory and
# writing its result back; the fused program reads each input once and writes each output
# once.

# %%
t = on_gpu.traffic
print(t.table())
print(f"eager moves {t.eager_bytes / t.fused_bytes:.1f}x the bytes of the fused kernel")

# %%
from matplotlib.figure import Figure

d = t.to_dict()
fig = Figure(figsize=(6, 2.4), layout="constrained")
ax = fig.subplots()
ax.barh(["fused", "eager"], [d["fused"]["read_bytes"], d["eager"]["read_bytes"]],
        label="read", color="tab:blue")
ax.barh(["fused", "eager"], [d["fused"]["write_bytes"], d["eager"]["write_bytes"]],
        left=[d["fused"]["read_bytes"], d["eager"]["read_bytes"]], label="written",
        color="tab:orange")
ax.set_xlabel("bytes moved, computed")
ax.legend()
fig

# %% [markdown]
# ## Measured
#
# `ex.bench()` times the kernels alone with CUDA events, the copies between host and device
# apart, against eager CuPy (NumPy's code on the GPU) where CuPy is installed. Under the
# simulator the times are Python's, and the table says so.

# %%
print(on_gpu.bench(repeat=1 if not GPU else 50).table())

# %% [markdown]
# ## `%%xla --backend cuda`
#
# A cell compiled for the GPU reads its inputs from the notebook and writes its outputs back,
# as NumPy arrays.

# %%
# %%xla --backend cuda --quiet
y = np.tanh(x) * 2 + 1

# %%
print(y.dtype, y.shape, np.allclose(y, np.tanh(x) * 2 + 1))

# %% [markdown]
# ## What to try next
#
# - Give `softmax` rows of 20 elements, then of 2000: the launch comment says when a row gets
#   a warp, a block, or (one long row read back) the whole grid.
# - Add a second output (`x.sum(axis=1)`) and see the row kernel write both: a multi-output
#   fusion, and `on_gpu.traffic` still reads `x` once.
# - On a machine with a GPU (`pip install '.[cuda]'`), run `benchmarks/gpu.py` for kernel
#   times against eager CuPy and `jax.jit`.
