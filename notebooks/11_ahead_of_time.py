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
# # 11: ahead of time, a trained model as a module that needs only NumPy
#
# **What this notebook teaches.** XLA's documents describe `tfcompile`: a graph compiled
# ahead of time into a library that runs without TensorFlow; their LSTM example's deployment
# footprint falls from 2.6 MiB to under 600 KiB (their figures). A program compiled by
# xla-explorer needs the whole toolchain when it runs: Numba, llvmlite, this package and
# its kernel cache. Here the classifier of notebook 08 is trained, then its forward pass is
# exported: compiled once, ahead of time, into a Python extension module whose only
# dependency is NumPy. A separate Python that has nothing but NumPy imports it and
# classifies. What it weighs on disk, and what it costs.

# %%
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import xla_explorer as xe
from xla_explorer.api.export import numpy_only_python

rng = np.random.default_rng(0)

# %% [markdown]
# The data and the model are notebook 08's: 2048 points in 20 dimensions around 4 centres,
# a hidden layer of 64 ReLU units, 4 logits, and the same hand-written training step,
# compiled here with `xe.jit` (one program, called a hundred times).

# %%
N, F, HIDDEN, CLASSES = 2048, 20, 64, 4
centres = rng.standard_normal((CLASSES, F)).astype(np.float32) * 0.5
labels = rng.integers(0, CLASSES, N)
X = (centres[labels] + rng.standard_normal((N, F))).astype(np.float32)
Y = np.eye(CLASSES, dtype=np.float32)[labels]
W1 = (rng.standard_normal((F, HIDDEN)) * 0.1).astype(np.float32)
b1 = np.zeros(HIDDEN, np.float32)
W2 = (rng.standard_normal((HIDDEN, CLASSES)) * 0.1).astype(np.float32)
b2 = np.zeros(CLASSES, np.float32)


def train_step(W1, b1, W2, b2, X, Y):
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
    lr = np.float32(0.5)
    return loss, W1 - lr * dW1, b1 - lr * db1, W2 - lr * dW2, b2 - lr * db2


step = xe.jit(train_step)
for _ in range(100):
    loss, W1, b1, W2, b2 = step(W1, b1, W2, b2, X, Y)
print(f"trained: loss {float(loss):.3f}")

# %% [markdown]
# ## The forward pass, exported
#
# `predict` classifies a batch of 256 points. It reads the trained weights as globals, so
# they are constants of the traced program (tfcompile freezes a graph's variables the same
# way), compiled into the module. `export` traces it for the example's shape and dtype,
# compiles it as `%%xla` would, renders every kernel serial (Numba's ahead-of-time compiler
# has no parallel loops) and builds `classifier.cpython-*.so`, with `classifier.pyi` beside
# it. (`%%xla --export NAME` does the same for a cell.)

# %%
def predict(batch):
    h = np.maximum(batch @ W1 + b1, 0)
    return (h @ W2 + b2).argmax(axis=1)


BATCH = 256
where = Path(tempfile.mkdtemp(prefix="exported-"))
exported = xe.export(predict, X[:BATCH], name="classifier", directory=where)
print(exported)
print(f"{exported.path.name}: {exported.nbytes / 1024:.0f} KiB, built in "
      f"{exported.seconds:.1f} s")

# %% [markdown]
# The stub says what `run` takes and returns, and carries the HLO the module runs (the
# weights shown as `{...}`):

# %%
stub = exported.stub.read_text()
print(stub[stub.index("def run"):])
print("\n".join(stub.splitlines()[:6]))

# %% [markdown]
# ## Run by a Python that has only NumPy
#
# `numpy_only_python` makes a virtual environment with no pip and nothing installed, and
# links this NumPy into it. Run with `-I` (no `PYTHONPATH`, no user packages), it cannot
# import Numba, llvmlite or xla_explorer. It loads the module, classifies the saved points a
# batch at a time, and says what it imported.

# %%
python = numpy_only_python(where / "numpy-only")
np.save(where / "points.npy", X)
child = f"""
import json, sys, time
import numpy as np
sys.path.insert(0, {str(where)!r})
t = time.perf_counter()
import classifier
imported = time.perf_counter() - t
points = np.load({str(where / "points.npy")!r})
t = time.perf_counter()
first = classifier.run(np.ascontiguousarray(points[:{BATCH}]))
first_call = time.perf_counter() - t
found = [classifier.run(np.ascontiguousarray(points[k:k + {BATCH}]))
         for k in range(0, len(points), {BATCH})]
np.save({str(where / "found.npy")!r}, np.concatenate(found))
print(json.dumps({{"import_ms": imported * 1e3, "first_call_ms": first_call * 1e3,
                  "toolchain": sorted(m for m in sys.modules
                                      if m.split(".")[0] in ("numba", "llvmlite",
                                                             "xla_explorer"))}}))
"""
done = subprocess.run([str(python), "-I", "-c", child], capture_output=True, text=True,
                      check=True)
report = json.loads(done.stdout)
found = np.load(where / "found.npy")
want = np.concatenate([predict(X[k:k + BATCH]) for k in range(0, N, BATCH)])
print(f"imported in {report['import_ms']:.1f} ms, first call {report['first_call_ms']:.2f} ms")
print(f"toolchain modules imported by the child: {report['toolchain']}")
print(f"the same classes as NumPy's forward pass: {np.array_equal(found, want)}")
print(f"training accuracy: {(found == labels).mean():.1%}")

# %% [markdown]
# A wrong argument is refused before anything reads it, with the argument's name: the module
# checks the shape, the dtype and the layout it was compiled for.

# %%
module = exported.load()
try:
    module.run(X[:100])
except ValueError as e:
    print(e)

# %% [markdown]
# ## What it weighs
#
# On disk: the module, against what the JIT path needs installed to run the same program
# (NumPy aside, which both need). Most of the module is the runtime every such module
# carries: Numba's reference counting and helper library, about 650 KiB; the kernels and
# the weights are the rest.

# %%
def tree_bytes(name):
    import importlib.util

    root = Path(importlib.util.find_spec(name).origin).parent
    return sum(p.stat().st_size for p in root.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts)


toolchain = {name: tree_bytes(name) for name in ("numba", "llvmlite", "xla_explorer")}
for name, size in toolchain.items():
    print(f"{name:14} {size / 2**20:8.1f} MiB")
print(f"{'JIT path':14} {sum(toolchain.values()) / 2**20:8.1f} MiB, plus its kernel cache")
print(f"{'exported':14} {exported.nbytes / 2**20:8.2f} MiB: "
      f"{sum(toolchain.values()) / exported.nbytes:.0f}x smaller")

# %% [markdown]
# ## What it costs
#
# The exported module's loops run on one thread. On a batch this small the JIT's kernels do
# too (parallel loops start from a million elements), so the two take about the same time
# per call; on large arrays the JIT's parallel loops win (docs/export.md has the table).

# %%
jitted = xe.jit(predict)
batch = np.ascontiguousarray(X[:BATCH])
jitted(batch)
times = {"exported": [], "xe.jit": []}
for _ in range(200):
    for name, call in (("exported", module.run), ("xe.jit", jitted)):
        t = time.perf_counter()
        call(batch)
        times[name].append(time.perf_counter() - t)
for name, t in times.items():
    print(f"{name:9} {np.median(t) * 1e6:7.1f} us per call (median)")

# %% [markdown]
# ## What to try next
#
# - Export `train_step` itself: a training step that runs where only NumPy is installed.
# - Make `BATCH` 4096 and compare the per-call times again: where do the JIT's parallel
#   loops start to pay?
# - Export with `target_cpu=""`: a module for any x86-64, not just this CPU. How much
#   slower is it?
# - Try to export a function that calls `np.unique`: the error says why it cannot be.
