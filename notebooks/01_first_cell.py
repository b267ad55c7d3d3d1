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
# # 01: a first `%%xla` cell
#
# `%%xla` takes an ordinary cell of NumPy code, traces it into an XLA-style HLO program,
# runs the compiler's passes over it (simplification, fusion, scheduling, buffer assignment),
# compiles what is left into Numba CPU kernels, runs them, and checks the answer against
# eager NumPy. This notebook runs one small cell and looks at what came out.

# %%
# %load_ext xla_explorer
import numpy as np

# %% [markdown]
# Small inputs keep every cell fast: the first compile of a cell takes a second or so
# (Numba), and re-running it with the same shapes is a cache hit.

# %%
x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
b = np.arange(4, dtype=np.float32)

# %% [markdown]
# The cell's **inputs** are the names it reads that hold arrays or numbers (`x`, `b`); its
# **outputs** are the array names it assigns (`y`, `total`), written back to the notebook
# after the compiled run.
#
# The summary printed under the cell says:
#
# - `inputs` / `outputs`: names with HLO types (`f32[3,4]` is a float32 array of shape (3, 4));
# - `check against eager NumPy`: the same cell run by NumPy, compared output by output;
# - `fusions`: the kernels the program compiled to, each with its kind and the HLO
#   instructions inside it;
# - `buffers`: the arena that holds the temporaries between kernels (0 B here: with one
#   kernel nothing waits between kernels).
#
# Below the summary is the explorer widget (the same one `ex.show()` returns, below).

# %%
# %%xla
y = np.tanh(x) * 2 + b
total = y.sum()

# %% [markdown]
# The outputs are ordinary NumPy arrays now:

# %%
print(y.dtype, y.shape, float(total))

# %% [markdown]
# The last compilation is bound to `_xla`, an `Exploration`. `hlo()` prints the optimised
# program in XLA's HLO text; with `metadata=True` every instruction carries the line of the cell
# it came from in `metadata={... source_line=N}` (line 1 is the `%%xla` line). `b` is broadcast along the
# rows (`broadcast ... dimensions={1}`), as NumPy broadcasts it.

# %%
print(_xla.hlo(metadata=True))

# %% [markdown]
# Every pass is one recorded stage; `hlo(0)` is the program as traced, before any pass.

# %%
print([s.name for s in _xla.stages])
print(_xla.hlo(0))

# %% [markdown]
# `fusions` lists one entry per kernel. Here everything became **one** kernel: the
# element-wise work (`tanh`, `multiply`, `add`) and the sum share one loop, and `y` and
# `total` both come out of it (a multi-output fusion). Each fusion keeps the reasons behind
# it; a refused decision starts with "not fused".

# %%
for f in _xla.fusions:
    print(f)
    for reason in f.reasons:
        print("   ", reason)

# %% [markdown]
# `check` runs the compiled program and eager NumPy on the same inputs and reports the
# largest absolute and relative error of each output. A float32 sum may differ from NumPy's
# in the last bits: the order of the additions differs.

# %%
print(_xla.check(x, b))

# %% [markdown]
# `show()` returns the explorer: step through the stages (what each pass changed is
# highlighted), read every fusion decision, the buffer timeline and the generated kernels.

# %%
ex = _xla
ex.show()
