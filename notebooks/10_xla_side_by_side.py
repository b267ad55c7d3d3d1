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
# # 10: real XLA beside ours
#
# **What this notebook teaches.** Everything so far was this project's word for what XLA
# does. Here the real XLA (XLA:CPU, which comes with jax) compiles the same program, and
# `ex.compare_xla()` lays its kernels beside ours: which instructions each kernel computes,
# what XLA writes to memory between two kernels where ours has one, its temporary memory,
# and both timed in one process. The program is a softmax; at two sizes XLA:CPU compiles it
# into different kernels, and reading why is the lesson: a compiler's fusion is a decision
# about the shapes it sees, not a fixed property of the program.
#
# It needs jax (`pip install 'xla-explorer[xla]'`); Binder has it.

# %%
import numpy as np

import xla_explorer as xe

rng = np.random.default_rng(0)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


small = rng.standard_normal((16, 64)).astype(np.float32)
large = rng.standard_normal((64, 256)).astype(np.float32)
ex_small = xe.explore(softmax, small, backend="cpu")
ex_large = xe.explore(softmax, large, backend="cpu")
print("ours, small:", [str(k) for k in ex_small.fusions])
print("ours, large:", [str(k) for k in ex_large.fusions])

# %% [markdown]
# Ours is one row fusion at both sizes: each row's maximum, exponentials, sum and division in
# one kernel, the row never written to memory in between (notebook 02).
#
# ## The same HLO, handed to XLA
#
# `compare_xla` gives XLA our first stage, the HLO as traced, before any pass of ours: XLA
# parses the text, optimises it with its own pipeline and compiles it, as XLA's
# `run_hlo_module` tool does with a dump. Its optimised module comes back as text, which our
# parser reads, so its kernels can be listed and matched to ours by the instructions inside
# them (the `op_name` and source line each instruction carries survive XLA's passes).

# %%
c_small = ex_small.compare_xla(repeat=20)
print(c_small.table())

# %% [markdown]
# Read the table a row at a time: each of XLA's kernels, its kind, the operations inside it,
# and which of ours computes the same ones. Every one of XLA's kernels here is a part of our
# single row fusion; the sentences below the table say what that costs XLA, a value written
# to memory by one kernel and read back by the next.
#
# XLA's entry computation shows where the extra kernels come from:

# %%
entry = c_small.hlo[c_small.hlo.index("\nENTRY"):]
for line in entry.splitlines():
    if " fusion(" in line:
        print(line.split(", metadata=")[0].strip())
windows = [line for line in c_small.hlo.splitlines() if "reduce-window(" in line]
print(f"\n{len(windows)} reduce-window instructions; the first:",
      windows[0].split("window=")[1].split("}")[0] + "}" if windows else "none")

# %% [markdown]
# Each reduction along a row of 64 became two kernels: a `reduce-window` that sums (or takes
# the maximum of) windows of the row into a short vector of partials, and a `reduce` of those
# partials. That is XLA's tree reduction rewrite: partial results in independent lanes
# vectorise, and adding up fewer numbers in a long chain loses less precision. The price is
# the partials' round trip through memory between two kernels.
#
# ## The larger size

# %%
c_large = ex_large.compare_xla(repeat=20)
print(c_large.table())

# %%
for label, c in (("16 x 64", c_small), ("64 x 256", c_large)):
    kinds = [f"{k.kind} ({k.library})" if k.library else k.kind for k in c.kernels]
    print(f"{label}: XLA {len(c.kernels)} kernels {kinds}; here {len(c.ours)}; "
          f"XLA's temporaries {c.temp_bytes} bytes")

# %% [markdown]
# ## Why the count changes with size
#
# At 64 x 256 the reductions are no longer split: XLA:CPU hands them (and the elementwise
# work that fuses into them) to a library, YNNPACK, as `kCustom` fusions whose
# `backend_config` names it, and generates loops only for what is left. Below a threshold
# a library call costs more than it saves, and XLA generates every kernel itself; among
# generated reductions, only rows long enough are split into a tree. So XLA:CPU's kernel
# count follows the shape: a few loops for tiny arrays, split reductions for small ones,
# library calls for large ones. Ours follows the program: a softmax's rows fit one row
# fusion at every size here.
#
# Neither count is a score. The times below are the two compiled programs on this machine,
# called as a user calls them (NumPy arrays in, NumPy arrays out, the copies to and from
# jax's arrays included in XLA's), each median over interleaved rounds in this one process;
# then XLA's executable alone, on inputs already placed as jax arrays. At these sizes most
# of XLA's call is jax's own per-call work, not the kernels: the two numbers differ by it.

# %%
for label, c in (("16 x 64", c_small), ("64 x 256", c_large)):
    print(f"{label}: XLA {c.xla_time.median * 1e6:.1f} µs "
          f"(its executable alone {c.xla_resident_time.median * 1e6:.1f} µs), "
          f"ours {c.ours_time.median * 1e6:.1f} µs; outputs differ by at most {c.max_error:.1e}")

# %% [markdown]
# The explorer has an **XLA** tab: XLA's fused graph beside ours, the kernel table and the
# sentences. Displayed after `compare_xla`, it carries the comparison in the notebook's
# saved output, so the tab draws without a kernel; `ex.show()` has a "Compare with XLA"
# button that runs it.

# %%
ex_small

# %% [markdown]
# ## Replaying a dump
#
# A comparison starts from HLO text, and so does a dump: the module XLA's
# `--xla_dump_to` writes, with the inputs saved beside it, can be compiled and run again in
# another process, on another backend, and compared. `ex.dump(dir, snapshots=True)` writes
# XLA's dump files and, beside them, a manifest (JSON) and the arguments and results of the
# run (`.npz`). A fresh Python process, with nothing from this notebook, replays it:

# %%
import subprocess
import sys
import tempfile

dump = tempfile.mkdtemp(prefix="softmax_dump_")
ex_large.dump(dump, snapshots=True)
replay = subprocess.run([sys.executable, "-m", "xla_explorer", "replay", dump,
                         "--backend", "cpu"], capture_output=True, text=True)
print(replay.stdout, replay.stderr)
print("exit status:", replay.returncode)

# %% [markdown]
# The other process compiled the saved module on the cpu backend, ran it on the saved
# arguments, and compared it with the reference interpreter running the module as traced, and
# with the results saved in the dump; exit status 0 says every output agreed. This is XLA's
# `run_hlo_module` workflow: a dump attached to a bug report is run again on another machine.
# `--bisect` would name the first pass after which the answer changes, and `xla-explorer opt
# FILE --until fusion` prints the HLO after our passes, as `hlo-opt` does (docs/replay.md).

# %% [markdown]
# ## What to try next
#
# - Compare the layer normalisation of notebook 02 (`x.mean`, `x.var`): count XLA's
#   kernels at 16 x 64 and at 64 x 256, and find which reduction XLA hands to YNNPACK.
# - Try a row of 8 elements (`(4, 8)`): is the reduction still split into a tree?
# - `sum(x + y*z)` of notebook 01 at 256 and at 4,096 elements: how many kernels each?
