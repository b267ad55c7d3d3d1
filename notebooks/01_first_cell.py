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
# # 01: one fused kernel instead of three operations
#
# **What this notebook teaches.** XLA's documentation opens with a three-operation function,
# `model_fn(x, y, z) = reduce_sum(x + y * z)`. Run eagerly, NumPy launches three operations
# (a multiply, an add, a sum) and writes the two intermediate arrays to memory. Compiled, it
# is **one** kernel: each product and sum is used the moment it is computed and never stored.
# Memory bandwidth is what accelerators (and CPUs) run short of first, so the bytes that are
# never written are the point of fusion.
#
# Here you compile that function from a `%%xla` cell and see it three ways: the graph before
# and after the passes, the generated kernel's source, and the bytes each version moves.
# Every cell is yours to edit: change the code and run the cells below it again.

# %%
# %load_ext xla_explorer
import numpy as np

# %% [markdown]
# The inputs: three float32 vectors. Small sizes keep the cells fast; the first compile of a
# cell takes about a second (Numba), and running it again with the same shapes is a cache hit.

# %%
n = 1000
rng = np.random.default_rng(0)
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
z = rng.standard_normal(n).astype(np.float32)

# %% [markdown]
# `%%xla` turns the cell into a function: its **inputs** are the names it reads that hold
# arrays or numbers (`x`, `y`, `z`), its **outputs** the names it assigns (`total`). The cell
# is traced into HLO (XLA's program format), optimised, turned into a Numba CPU kernel, run,
# and checked against eager NumPy. Under the cell: a summary (inputs, outputs, the check,
# the kernels, the buffers) and the explorer, whose tabs step through every pass.
#
# Numba takes a second or so to compile a new cell's kernels, so the first run of a new cell
# does not wait for it: the HLO interpreter runs the optimised program (NumPy, op by op) and
# answers in milliseconds, the summary says so, and Numba compiles the kernels once the
# notebook is idle. Run the cell again and the compiled kernel answers. (`%%xla --wait`
# waits for the kernels instead.)

# %%
# %%xla
total = np.sum(x + y * z)

# %% [markdown]
# `total` is an ordinary NumPy value now, and the last compilation is `_xla`. Before any
# pass, the program is what NumPy would run: three operations, a `multiply`, an `add` and a
# `reduce` (`hlo(0)` is the first stage: the trace).

# %%
print(float(total), float(np.sum(x + y * z)))
print(_xla.hlo(0))

# %%
ops = [i.opcode for i in _xla.stage(0).module.entry.instructions
       if i.opcode not in ("parameter", "constant", "tuple")]
print("eager operations:", ops)
print("compiled kernels:", [f"{f.name} ({f.kind})" for f in _xla.fusions])

# %% [markdown]
# After the passes, the three are one `fusion` of kind `kInput` (a reduction with the
# element-wise work that feeds it). Each fusion keeps the decisions that made it:

# %%
print(_xla.hlo())
for f in _xla.fusions:
    for reason in f.reasons:
        print(reason)

# %% [markdown]
# The graphs, as XLA's graph dumper draws HLO: the trace, then the final program, where the
# fusion is a labelled box.

# %%
_xla.graph(0)

# %%
_xla.graph()

# %% [markdown]
# The kernel the CPU backend generated is plain Python for Numba, with the HLO it came from
# as comments. Look for the loop: the product and the sum are local variables inside it, so
# no array holds `y * z` or `x + y * z`.

# %%
for name, source in _xla.kernels.items():
    print(source)

# %% [markdown]
# ## Bytes moved
#
# The cost of each version in memory traffic, **computed** from the programs (not
# measured): an eager operation reads each of its operands from memory and writes its
# result; a fused kernel reads its inputs and writes only its outputs. The function below
# counts both from the HLO of the first stage and of the last.

# %%
def bytes_moved(module):
    """(read, written) bytes of each instruction that runs as its own operation or kernel."""
    rows = []
    for inst in module.entry.instructions:
        if inst.opcode in ("parameter", "constant", "tuple"):
            continue
        read = sum(o.shape.nbytes for o in inst.operands if o.opcode != "constant")
        rows.append((inst.name, read, inst.shape.nbytes))
    return rows


eager = bytes_moved(_xla.stage(0).module)
fused = bytes_moved(_xla.module)
for title, rows in (("eager NumPy", eager), ("compiled", fused)):
    print(title)
    for name, read, written in rows:
        print(f"  {name:24} reads {read:6} B, writes {written:5} B")
eager_total = sum(r + w for _, r, w in eager)
fused_total = sum(r + w for _, r, w in fused)
print(f"eager moves {eager_total} bytes, compiled {fused_total}: "
      f"{eager_total / fused_total:.2f}x fewer")

# %% [markdown]
# The three inputs are read once either way; what fusion removed is writing the two
# intermediates and reading them back. Since the sum is a single number, the compiled
# version moves little more than the inputs. Notebook 06 turns bytes into time.
#
# `check` compares the compiled program with eager NumPy on the same inputs. A float32 sum
# may differ from NumPy's in the last bits (the additions happen in another order):

# %%
print(_xla.check(x, y, z))

# %% [markdown]
# The explorer under the `%%xla` cell is also what `show()` returns for any Exploration
# (`xe.explore(f, *args)` gives one for a plain function): step through the stages, read the
# decisions, the buffers and the kernel, and time it on the Performance tab.

# %%
_xla.show()

# %% [markdown]
# ## What to try next
#
# - Add work to the cell (`np.sum(np.exp(x) + y * z)`, or `np.max` instead of `np.sum`) and
#   rerun it and the cells below: it stays one kernel, and the bytes moved barely change.
# - Return the intermediate too (`t = x + y * z` on a line of its own, then
#   `total = np.sum(t)`): `t` becomes an output, so it is written after all. How many
#   kernels now, and how many bytes?
# - Change `n`: a new shape compiles again (notebook 04 is about that).
# - Next: `02_fusion.ipynb`, where fusion meets softmax, layer normalisation, Adam and
#   attention, and where it refuses.
