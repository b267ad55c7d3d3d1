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
# # 04: shapes are part of the program: recompilation
#
# **What this notebook teaches.** A compiled XLA program is specialised on the shapes of its
# inputs: the loop bounds, the buffer sizes and the layout are constants in it. Call the same
# jit-compiled function on a `[1, 10]` input and then on a `[1, 100]` one, and it is compiled
# twice (TensorFlow's documentation calls this `recompiled_on_launch`); a shape seen before is
# a hit in the compilation cache. Here a new shape is a new program too, traced, optimised and
# given its buffers again; but a kernel reads its longer sizes from its arrays, so a new shape
# whose kernels come out as the same code runs on the machine code made for the first one.
# You will count the compiles, time them, see where the shape sits in the generated kernel,
# and try the usual cure for many shapes: padding to a few bucket sizes.

# %%
import time

import numpy as np
import xla_explorer as xe


def model(x):
    return np.maximum(x * 2.0 - 1.0, 0.0).sum(axis=1)


f = xe.jit(model)

# %% [markdown]
# ## One program per shape
#
# `cache_info()` counts hits (a program for this signature existed) and misses (it had to
# be traced and compiled). Each call is timed: a miss includes the compile.

# %%
rng = np.random.default_rng(0)
calls = []
for shape in [(1, 1000), (1, 2000), (1, 1000), (1, 10), (1, 2000)]:
    x = rng.random(shape, dtype=np.float32)
    before = f.cache_info().misses
    start = time.perf_counter()
    out = f(x)
    seconds = time.perf_counter() - start
    compiled = f.cache_info().misses > before
    calls.append((shape, seconds, compiled))
    print(f"{str(shape):10} {seconds * 1e3:9.3f} ms  {'compiled' if compiled else 'cache hit'}")
info = f.cache_info()
print(f"hits {info.hits}, misses {info.misses}, signatures {info.signatures}")

# %% [markdown]
# Where did the time of a compiling call go? The Exploration of each signature records the
# seconds of each pass, and its executable the seconds Numba held its compiler (making
# machine code). The rest is tracing, generating the kernel's source and, in the first
# call of the process only, starting Numba up. `(1, 2000)` is a program of its own, but its
# kernel's code is the code `(1, 1000)` gave: Numba has nothing to do. `(1, 10)` gives other
# code (below), and Numba compiles it.

# %%
hit_ms = min(s for _, s, c in calls if not c) * 1e3
for shape, seconds, compiled in calls:
    if not compiled:
        continue
    ex = f.explore(np.zeros(shape, np.float32))  # a hit: the Exploration behind that program
    passes = sum(s.seconds for s in ex.stages)
    numba = ex.executable.compile_seconds
    print(f"{str(shape):10} call {seconds * 1e3:7.1f} ms = trace and passes {passes * 1e3:5.1f} ms"
          f" + Numba {numba * 1e3:6.1f} ms + the rest {(seconds - passes - numba) * 1e3:6.1f} ms")
reused_ms, compile_ms = calls[1][1] * 1e3, calls[3][1] * 1e3  # (1, 2000), then (1, 10)
print(f"a cached call: {hit_ms:.3f} ms; the new program (1, 2000) on the kernel (1, 1000) "
      f"compiled cost {reused_ms / hit_ms:,.0f} cached calls; compiling (1, 10) cost "
      f"{compile_ms / hit_ms:,.0f}")

# %% [markdown]
# The numbers of the program are not all in the kernel's code either. `2.0` only multiplies,
# and a multiply by a number in the code is no faster than by one passed in, so the kernel
# takes it as an argument (`k0`). Edit it, and the edited program runs on the same machine
# code:

# %%
def edited(x):
    return np.maximum(x * 3.0 - 1.0, 0.0).sum(axis=1)


x = rng.random((1, 1000), dtype=np.float32)
ex = xe.explore(edited, x, backend="cpu")
assert np.allclose(ex.run(x), edited(x), rtol=1e-5)
(source,) = ex.kernels.values()
print("\n".join(line.split(": an")[0] for line in source.splitlines() if "k0" in line))
print(f"the edited program: Numba {ex.executable.compile_seconds * 1e3:.1f} ms")

# %% [markdown]
# ## What an edit costs: a first compile, a disk hit, a new shape
#
# A notebook user pays one of three prices each time a cell runs. Editing the function makes
# a program nobody compiled yet: trace, passes, and Numba making machine code (**first
# compile**). Running it again in a later session finds the program's kernel image on disk,
# the machine code the first session left: the passes run again, and llvmlite links that code
# without starting Numba (**disk hit**; with images turned off, `XLA_EXPLORER_IMAGES=0`,
# Numba starts and loads each kernel from its own disk cache). A new shape in the running
# session is a new program (**new shape**): traced and passed again, with Numba already
# started, and compiled only where its kernels' code is new.
# The first two need fresh Python processes, so each runs in one here, with a kernel cache
# of its own that starts empty (on a 1000x2000 input: a parallel kernel, the slower kind to
# compile), and says its CPU time beside the wait: on a busy machine the wait stretches, the
# work does not.

# %%
import os
import subprocess
import sys
import tempfile
import textwrap

probe = textwrap.dedent("""
    import time
    import numpy as np
    import xla_explorer as xe

    def model(x):
        return np.maximum(x * 2.0 - 1.0, 0.0).sum(axis=1)

    x = np.ones((1000, 2000), np.float32)  # big enough that its kernel runs on every core
    start, cpu = time.perf_counter(), time.process_time()
    out = xe.jit(model)(x)
    print(time.perf_counter() - start, time.process_time() - cpu, "numba" in sys.modules)
    assert np.allclose(out, model(x))
""")


def fresh_process_seconds(kernel_cache, images=True):
    """The first call's seconds, waited and of CPU (the process's threads together: what a
    busy machine stretches the wait by, it does not add here), in a new Python process
    using that kernel cache; and whether Numba started there."""
    env = dict(os.environ, XLA_EXPLORER_CACHE=kernel_cache,
               XLA_EXPLORER_IMAGES="1" if images else "0")
    done = subprocess.run([sys.executable, "-c", "import sys\n" + probe], env=env,
                          capture_output=True, text=True, check=True)
    wall, cpu, numba = done.stdout.split()
    return float(wall), float(cpu), numba == "True"


with tempfile.TemporaryDirectory() as kernel_cache:
    first = fresh_process_seconds(kernel_cache)  # empty cache: everything compiles
    disk = fresh_process_seconds(kernel_cache)  # a later session: its kernel image on disk
    numba_disk = fresh_process_seconds(kernel_cache, images=False)  # Numba's cache alone
new_shape = calls[1][1]  # (1, 2000) in this session, after (1, 1000)
for what, seconds in (("first compile (fresh process, empty cache)", first),
                      ("disk hit (fresh process, kernel image)", disk),
                      ("disk hit without images (Numba's own cache)", numba_disk),
                      ("new shape (this process, its kernel's code seen)", new_shape),
                      ("cached call (this process)", hit_ms / 1e3)):
    wall, cpu, numba = seconds if isinstance(seconds, tuple) else (seconds, None, None)
    print(f"{what:48} {wall * 1e3:9.3f} ms" + (f"  (CPU {cpu * 1e3:.0f} ms)" if cpu else "")
          + {True: ", Numba started", False: ", Numba not started", None: ""}[numba])

# %% [markdown]
# XLA's own numbers for comparison, measured on the same kind of machine
# (`docs/performance.md`, "Time to the first answer"): `jax.jit` answers a small program's
# first call in 40-140 ms, because XLA:CPU compiles only its fusions and calls a library,
# compiled once, for everything else, and a new shape in 15-110 ms, compiling it all again.
# Numba takes about 0.25 s to start in a process and 0.05-0.2 s a kernel, so the first
# compile here is several times slower. The disk hit is as fast as XLA's first call or faster:
# it links the kernel image without starting Numba, as XLA's persistent compilation cache
# loads an executable; from Numba's own cache it is mostly Numba starting up. A new shape
# that reuses its kernels takes milliseconds.
#
# **Not waiting at all.** `xe.jit(f, tiered=True)` answers a call with a new signature on
# the interpreter (NumPy, op by op, the same HLO) while the kernels compile in a background
# thread, and switches to them when they are ready; `last_ran` says which one answered.
# The first answer costs what eager NumPy does plus the milliseconds of tracing and passes;
# the compiled speed comes when Numba is done.
#
# A `%%xla` cell does this by default, and waits for a quieter moment to compile: its first
# run is the interpreter's answer (with the kernels already generated, so the explorer shows
# them), and once the notebook has run no cell for half a second, Numba compiles them between
# cells, never beside one, so Run All is not slowed. `--wait` (or `%config XlaMagics.tiered =
# False`) compiles before answering, as `xe.jit` does; `--bench`, `--dump` and `--export`
# need the kernels and wait too.

# %%
g = xe.jit(model, tiered=True)
x = rng.random((1, 1000), dtype=np.float32)
start = time.perf_counter()
got = g(x)
print(f"first answer   {(time.perf_counter() - start) * 1e3:9.3f} ms  ran on {g.last_ran}")
g.wait()  # the kernels, compiling in the background
start = time.perf_counter()
got_compiled = g(x)
print(f"after wait()   {(time.perf_counter() - start) * 1e3:9.3f} ms  ran on {g.last_ran}")
assert np.allclose(got, model(x), rtol=1e-5) and np.allclose(got_compiled, got, rtol=1e-5)

# %%
# %load_ext xla_explorer
w = rng.random(1000, dtype=np.float32)

# %%
# %%xla --quiet
h = np.tanh(w) * 2 + 1

# %%
magics = get_ipython().magics_manager.registry["XlaMagics"]  # `last`: the last cell's run
print("first run answered by", "the interpreter" if magics.last.tier else "the kernels")

# %%
import asyncio

await asyncio.sleep(2)  # a moment idle, as while you read: the kernels compile now

# %%
# %%xla --quiet
h = np.tanh(w) * 2 + 1

# %%
print("run again, answered by", "the interpreter" if magics.last.tier else "the kernels")
assert np.allclose(h, np.tanh(w) * 2 + 1, rtol=1e-6)

# %% [markdown]
# ## Where the shape lives
#
# A size up to 16, or up to 128 where it is the length of an innermost loop, is a number
# written into the kernel's source: the compiler knows the loop's trip count, vectorizes it
# to its last element and unrolls a short one whole. Any other size is read from the array
# as the kernel starts (`size0 = p0.shape[1]`), and the loop runs to that: every shape that
# gives the same code shares the kernel's machine code.

# %%
ex10 = f.explore(np.zeros((1, 10), np.float32))
for name, source in ex10.kernels.items():
    print("\n".join(line for line in source.splitlines() if "range(" in line))
ex1000 = f.explore(np.zeros((1, 1000), np.float32))
for name, source in ex1000.kernels.items():
    print("\n".join(line.split("  #")[0] for line in source.splitlines()
                    if "range(" in line or ".shape[" in line))

# %% [markdown]
# The HLO and the buffer assignment stay one per shape, as XLA's are: a fully
# **shape-polymorphic** program would need symbolic dimensions in the HLO itself (XLA has
# *bounded* dynamic shapes for this, an array with a maximum size and a run-time size) and
# buffer sizes that are formulas rather than numbers. Only the machine code is shared, and
# only where the code is the same: a number computed from the shapes that is not a size (a
# mean over all of `x` divides by `x.size`; a divisor stays in the code, where a division
# by 4.0 can be a multiplication) makes other code, and so does a size that crosses a
# threshold of the code generator (16 and 128 here; the size from which a loop runs on every
# core).
#
# ## Many shapes: padding to buckets
#
# Sequences of every length from 1 to 20 would compile 20 programs (their sizes are all
# written into the code: each is new code). Padding each input to
# the next power of two (with a value that does not change the answer: here 0, since
# `max(0 * 2 - 1, 0)` is 0) needs one program per bucket.

# %%
lengths = [3, 5, 6, 7, 9, 12, 17, 20]
exact, padded = xe.jit(model), xe.jit(model)
timeline = []
for n in lengths:
    x = rng.random((1, n), dtype=np.float32)
    bucket = 1 << (n - 1).bit_length()  # the next power of two
    xp = np.zeros((1, bucket), np.float32)
    xp[:, :n] = x
    for name, fn, arg in (("exact shapes", exact, x), ("padded to buckets", padded, xp)):
        start = time.perf_counter()
        got = fn(arg)
        timeline.append((name, n, time.perf_counter() - start))
        assert np.allclose(got, model(x), rtol=1e-5)
print("exact shapes:", exact.cache_info().misses, "compiles for", len(lengths), "lengths")
print("padded:      ", padded.cache_info().misses, "compiles, buckets",
      sorted(sig[0][0][1] for sig in padded.cache_info().signatures))

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 3.2))
for name, marker in (("exact shapes", "o"), ("padded to buckets", "s")):
    ns = [n for k, n, _ in timeline if k == name]
    ms = [t * 1e3 for k, _, t in timeline if k == name]
    ax.plot(ns, ms, marker=marker, label=name)
ax.set_yscale("log")
ax.set_xlabel("input length (elements in the row)")
ax.set_ylabel("first call, ms (log scale)")
ax.set_title("A call that compiles costs milliseconds; a cached one microseconds")
ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)  # beside the data
fig.tight_layout()
plt.show()

# %% [markdown]
# Padding trades compiles for wasted work (up to twice the elements here). XLA users make the
# same trade: bucketing sequence lengths, or fixing the batch size and padding the last
# batch.

# %% [markdown]
# ## A loop: unrolled, rolled back up, or traced once
#
# A Python loop unrolls while tracing, as under `jax.jit`: a 200-step stencil is 200 copies
# of its step in the traced HLO. Right after the cleanups, the `roll-loops` pass sees that the
# copies are alike, each reading the one before, and rolls them back into one HLO `while`
# whose body is one step: fusion and the code generator then see the step once. (A short
# loop, or one on arrays over 1 MiB, stays unrolled: the stage says why.) `xe.fori_loop`
# (JAX's `lax.fori_loop`) traces the step once in the first place, so tracing is shorter too.
# Both are compiled here in this process, then compared with NumPy's loop.

# %%
def step(i, u):
    return u + np.float32(0.25) * (np.roll(u, 1) - 2 * u + np.roll(u, -1))


def unrolled(u):
    for i in range(200):
        u = step(i, u)
    return u


def traced_once(u):
    return xe.fori_loop(0, 200, step, u)


u = np.sin(np.linspace(0, 6, 64)).astype(np.float32)
want = unrolled(u)  # NumPy's loop: not traced, so plain NumPy
for f in (unrolled, traced_once):
    start = time.perf_counter()
    ex = xe.explore(f, u, backend="cpu")
    got = ex.run(u)
    seconds = time.perf_counter() - start
    traced = len(ex.stages[0].module.entry.instructions)
    print(f"{f.__name__:12} first answer {seconds:5.2f} s, {traced:5} traced instructions, "
          f"largest difference from NumPy {np.abs(got - want).max()}")
    rolled = next(s for s in ex.stages if s.name == "roll-loops")
    print("   roll-loops:", *(n.message for n in rolled.notes) or ["nothing to roll"])
ex.show()  # the while loop: its body drawn once, in the box of its 200 steps

# %% [markdown]
# A step that reads the loop's counter as a number (`np.sin(0.05 * i)` below, or Adam's
# bias correction `1 - 0.9 ** t`) has constants of its own: Python computes them while
# tracing, so no two steps are quite the same instructions. The pass rolls such a loop all
# the same: each constant that changes goes into a table, one value a step, and the body
# reads it at the loop's counter (a `dynamic-slice`). Unrolled, the 300 copies would each be
# fused and compiled into one long kernel.

# %%
def driven(x, v):
    for i in range(300):
        force = np.float32(np.sin(0.05 * i))  # a Python number: a constant in the trace
        v = v + np.float32(0.01) * (-4 * x - np.float32(0.1) * v + force)
        x = x + np.float32(0.01) * v
    return x, v


x0, v0 = np.linspace(-1, 1, 64, dtype=np.float32), np.zeros(64, np.float32)
start = time.perf_counter()
ex = xe.explore(driven, x0, v0, backend="cpu")
got = ex.run(x0, v0)
seconds = time.perf_counter() - start
print(f"first answer {seconds:.2f} s, largest difference from NumPy",
      max(np.abs(g - w).max() for g, w in zip(got, driven(x0, v0))))
print(*(n.message for s in ex.stages if s.name == "roll-loops" for n in s.notes))

# %% [markdown]
# ## What to try next
#
# - Call `f` on a `float64` array of a shape it has seen: the element type is part of the
#   signature too (`f.cache_info().signatures`).
# - Call `f` on `(1, 3000)`, then `(3, 3000)`: which is a new program, and which needs Numba?
# - In a `%%xla` cell, change the shape of an input and run the cell again: its summary
#   says `compile cache: miss`, and `%xla_cache` lists every signature compiled.
# - Make the buckets coarser (powers of four) and count compiles and wasted elements.
# - Next: `05_memory.ipynb`: where the compiled program keeps its arrays.
