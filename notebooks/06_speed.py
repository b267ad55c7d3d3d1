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
# # 06: speed: where the time goes, and why each ratio is what it is
#
# **What this notebook teaches.** A fused kernel is faster than eager NumPy mostly because it
# moves fewer bytes: most NumPy operations do one or two arithmetic operations per element
# they read, so they wait on memory, not on arithmetic. You will time four programs against
# NumPy with `ex.bench`, measure your machine's memory bandwidth, count the bytes each
# version moves, and place every program on a **roofline** picture (arithmetic per byte
# against arithmetic per second) to see which limit each one meets.
#
# Timings are of *your* machine, now: another run, or another machine, gives other numbers.

# %%
# %matplotlib inline
import time

import matplotlib.pyplot as plt
import numpy as np
import xla_explorer as xe

rng = np.random.default_rng(0)
F32 = np.float32


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


def gelu(x):
    c = F32(np.sqrt(2 / np.pi))
    return F32(0.5) * x * (F32(1) + np.tanh(c * (x + F32(0.044715) * x * x * x)))


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + F32(1e-5)) * g + b


# Three vectors of 16 MB, matrices of 8 MB: together larger than most CPUs' caches, so most
# bytes come from main memory, as a model's activations would.
n = 4_000_000
v = [rng.standard_normal(n).astype(F32) for _ in range(3)]
m = rng.standard_normal((2048, 1024)).astype(F32)
g, b = np.ones(1024, F32), np.zeros(1024, F32)
programs = {"sum_xyz": (sum_xyz, v), "gelu": (gelu, v[:1]),
            "softmax": (softmax, [m]), "layernorm": (layernorm, [m, g, b])}

# %% [markdown]
# ## Eager against compiled
#
# `ex.bench` runs eager NumPy and the compiled program on the same inputs, interleaved
# (one call of each per round, so a slow moment of the machine hits both), and reports
# medians and peak memory. Each program is compiled once, here.

# %%
explorations, benches = {}, {}
for name, (f, args) in programs.items():
    ex = xe.explore(f, *args, backend="cpu")
    explorations[name] = ex
    benches[name] = ex.bench(*args, repeat=8)
    r = benches[name]
    print(f"{name:10} {len(ex.fusions)} kernel(s)  eager {r.eager.median * 1e3:7.3f} ms  "
          f"compiled {r.compiled.median * 1e3:7.3f} ms  {r.speedup:5.2f}x")

# %% [markdown]
# One of them in full, as `%%xla --bench` and the explorer's Performance tab show it:

# %%
print(benches["softmax"].table())
benches["softmax"].plot()

# %% [markdown]
# ## Your machine's memory bandwidth
#
# Copying a large array reads it and writes it once; summing one reads it once. Arrays of
# 64 MiB are larger than the caches, so this is main memory.

# %%
big = np.ones(16 * 2**20, F32)  # 64 MiB
dst = np.empty_like(big)


def best_seconds(fn, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


copy_gbs = 2 * big.nbytes / best_seconds(lambda: np.copyto(dst, big)) / 1e9
read_gbs = big.nbytes / best_seconds(lambda: big.sum()) / 1e9
print(f"copy {copy_gbs:.1f} GB/s (read + write), sum {read_gbs:.1f} GB/s (read)")

# %% [markdown]
# ## Bytes moved, and the time they would take
#
# The same count as notebook 01: an eager operation reads its operands and writes its
# result; a fused kernel reads its inputs and writes its outputs. It is **computed** from the
# HLO of the first stage (eager) and the last (compiled). Dividing by the copy bandwidth gives
# the time the traffic alone would take.

# %%
SKIP = ("parameter", "constant", "tuple", "get-tuple-element")


def bytes_moved(module):
    total = 0
    for inst in module.entry.instructions:
        if inst.opcode in SKIP:
            continue
        total += sum(o.shape.nbytes for o in inst.operands if o.opcode != "constant")
        total += inst.shape.nbytes
    return total


def flops(module):
    """Arithmetic of the traced program: one per element of each element-wise result or
    reduced input (exp and tanh count as one: a simplification), 2mnk per product."""
    total = 0
    for inst in module.entry.instructions:
        if inst.opcode in SKIP or inst.opcode in ("broadcast", "reshape", "transpose"):
            continue
        if inst.opcode == "reduce":
            total += inst.operands[0].shape.size
        else:
            total += inst.shape.size
    return total


rows = []
for name, ex in explorations.items():
    r = benches[name]
    eager_b, fused_b = bytes_moved(ex.stage(0).module), bytes_moved(ex.module)
    work = flops(ex.stage(0).module)
    rows.append((name, eager_b, fused_b, work, r.eager.median, r.compiled.median))
    print(f"{name:10} bytes eager {eager_b / 1e6:6.1f} MB, fused {fused_b / 1e6:5.1f} MB "
          f"({eager_b / fused_b:4.1f}x fewer); at {copy_gbs:.0f} GB/s that is "
          f"{eager_b / copy_gbs / 1e6:6.3f} ms and {fused_b / copy_gbs / 1e6:6.3f} ms; "
          f"measured {r.eager.median * 1e3:6.3f} and {r.compiled.median * 1e3:6.3f} ms")

# %% [markdown]
# Read each line as: *how far is each version from the time its bytes need?* Where the
# measured time is close to the bandwidth time, the program is memory-bound and the
# speed-up follows the bytes saved. Where it is far above, something else costs: the
# arithmetic (`tanh` and `exp` are dozens of instructions per element), allocating fresh
# outputs (eager NumPy allocates one per operation), or, at small sizes, calling overhead
# (notebook 07).
#
# ## The roofline
#
# A program doing `I` operations per byte moved can run no faster than `bandwidth x I`
# operations per second, nor faster than the machine's peak arithmetic. The peak here is
# measured with a float32 matrix product, the most arithmetic-dense thing NumPy does (it runs
# NumPy's BLAS, whatever BLAS your NumPy was built with).

# %%
a = rng.standard_normal((1024, 1024)).astype(F32)
peak_gflops = 2 * 1024**3 / best_seconds(lambda: a @ a) / 1e9
print(f"float32 matrix product: {peak_gflops:.0f} GFLOP/s")

# %%
fig, ax = plt.subplots(figsize=(7, 4))
intensity = np.logspace(-2.5, 2, 100)
ax.plot(intensity, np.minimum(copy_gbs * intensity, peak_gflops), "k-",
        label=f"roofline: {copy_gbs:.0f} GB/s, {peak_gflops:.0f} GFLOP/s")
for (name, eager_b, fused_b, work, t_eager, t_comp), color in zip(
        rows, ["tab:blue", "tab:orange", "tab:green", "tab:red"]):
    ax.plot(work / eager_b, work / t_eager / 1e9, "o", color=color, mfc="none",
            label=f"{name} eager")
    ax.plot(work / fused_b, work / t_comp / 1e9, "o", color=color, label=f"{name} compiled")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("arithmetic intensity (operations per byte moved)")
ax.set_ylabel("achieved GFLOP/s")
ax.set_title("Roofline: fusion moves each program to the right")
ax.legend(fontsize=7, ncol=2)
plt.show()

# %% [markdown]
# Fusion does not change the arithmetic, only the bytes, so each program moves to the right
# (more operations per byte), where the roof is higher. Open circles are eager NumPy, filled
# ones compiled.
#
# ## The project's benchmark table
#
# The full benchmark (`python benchmarks/run.py`, described in `docs/performance.md`) times
# larger sizes against NumPy, numexpr and XLA itself (`jax.jit`). A few rows **as
# docs/benchmarks.md reports them**, from one run on the project's machine (2 cores, AMD
# Zen 5 with AVX-512, NumPy's OpenBLAS held to its AVX2 kernels), not measured here:
#
# | program | size | NumPy ms | ours ms | vs NumPy | XLA ms | vs XLA |
# |---|---|---|---|---|---|---|
# | sum_xyz | 1e+07 | 8.520 | 1.605 | 5.31x | 1.913 | 1.28x |
# | gelu | 1e+07 | 30.017 | 4.335 | 6.92x | 13.254 | 3.03x |
# | softmax | 4096x1024 | 5.511 | 0.894 | 6.17x | 1.135 | 1.18x |
# | layernorm | 4096x1024 | 6.659 | 0.585 | 11.39x | 0.870 | 1.16x |
# | dense_relu | 1024^3 | 9.258 | 4.612 | 2.01x | 4.619 | 1.00x |
#
# Against NumPy the ratios follow the bytes (and NumPy's allocations); against XLA, which
# fuses too, they are close to 1 where both are memory-bound. The dense layer is a product:
# compute-bound, and there the ratio is about the two products' speed.

# %% [markdown]
# ## What to try next
#
# - Make `n` 10x smaller (it then fits in the caches), then 1000x smaller, and rerun: does the speed-up grow or shrink?
#   (Notebook 07 explains the small end.)
# - Add `np.exp` to `sum_xyz` and watch its point move up the roofline.
# - Time `dense_relu = np.maximum(x @ w + b, 0)` yourself: where does it land?
# - Next: `07_tiny_ops.ipynb`: many tiny operations, and the cost of each call.
