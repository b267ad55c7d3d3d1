"""How much room the CPU's matrix product packs its B operand into, worked out from the HLO
alone, before any code is generated and without importing Numba.

The buffer assignment asks this (through the CPU backend's `scratch_bytes`) to place each
kernel's scratch space in the arena with the temporaries, so the arena it shows is the one
the executable allocates; the tiered first answer runs that pipeline before Numba is loaded.
codegen/cpu/dot.py sizes the same space with the same functions when it generates the kernel.
"""
from __future__ import annotations

import sys
from math import prod

import numpy as np

from ..ir.module import Instruction, Module
from .options import CACHE_LINE

# NR, a packed panel's width, is at most two 512-bit registers (codegen/gemm_ir.py's NV = 2
# vectors); sized for the widest, the generated source is the same on every host.
WIDEST_PANEL_BYTES = 2 * 64


def whole_lines(nbytes: int) -> int:
    """nbytes rounded up to whole cache lines."""
    return -(-nbytes // CACHE_LINE) * CACHE_LINE


def packed_b_size(k: int, n: int, dtype) -> int:
    """Bytes that B (k x n) packed into panels takes at most, on any host: every panel NR wide
    (the last one padded with zeros)."""
    itemsize = np.dtype(dtype).itemsize
    widest = WIDEST_PANEL_BYTES // itemsize
    return -(-n // widest) * widest * k * itemsize


def dot_axes(inst: Instruction) -> tuple[tuple, tuple, list, tuple, tuple, list]:
    """A dot's axes: the lhs's batch, contracting and free dimensions, then the rhs's."""
    a, b = inst.operands
    lb, lc = inst.attr("lhs_batch_dims", ()), inst.attr("lhs_contracting_dims", ())
    rb, rc = inst.attr("rhs_batch_dims", ()), inst.attr("rhs_contracting_dims", ())
    lf = [d for d in range(len(a.dims)) if d not in lb and d not in lc]
    rf = [d for d in range(len(b.dims)) if d not in rb and d not in rc]
    return lb, lc, lf, rb, rc, rf


def product_dims(inst: Instruction) -> tuple[int, int, int, int]:
    """A dot as (batch, m, k, n): its batch, free and contracting dimensions multiplied out."""
    a, b = inst.operands
    lb, lc, lf, _, _, rf = dot_axes(inst)
    return (prod(a.dims[d] for d in lb), prod(a.dims[d] for d in lf),
            prod(a.dims[d] for d in lc), prod(b.dims[d] for d in rf))


# Float products of at most this many multiply-adds are plain loop nests that read B where
# it is. Packed B's panels are 32 float32 columns wide whatever B's width, so a product this
# small would hold several times its B in scratch (a 4-column B, 8 times), and it runs faster
# without: 6x4 @ 4x8 in 5.9 us against 9.1, 16x16 @ 16x16 in 7.1 against 10.0; at 16K (32x16
# @ 16x32) the tiled product wins, 9.4 us against 11.0 (docs/performance.md).
SMALL_PRODUCT_MACS = 1 << 12


def tiled_product(inst: Instruction) -> bool:
    """Whether codegen/gemm.py's packed product computes this dot: floats in and out of one
    type, more than SMALL_PRODUCT_MACS multiply-adds. Other dots are plain loop nests, which
    pack nothing."""
    return (np.dtype(inst.dtype).kind == "f"
            and np.dtype(inst.operands[0].dtype) == np.dtype(inst.dtype)
            and prod(product_dims(inst)) > SMALL_PRODUCT_MACS)


# Packed B goes on the stack of the thread that packs it, at most this many bytes of it at
# a time: a group of whole panels (codegen/gemm_threads.py; `gemm.group_width` on one
# thread), as OpenBLAS packs into buffers of its own for each thread, not into the arena,
# where it would be held between calls beside the output (notebook 06's 1024^3 product:
# 4 MiB of arena for a 4 MiB output). Threads are given the stack for it (codegen/parallel.py)
# where that can be done: on Linux. Elsewhere threads may have far less and no way to give
# them more (macOS gives a Numba workqueue thread 512 KiB), so a smaller bound holds there.
STACK_B_BYTES = 2 << 20 if sys.platform.startswith("linux") else 128 << 10

# The int64 counters the threads of a parallel product share (gemm_threads.claims) are made
# on the calling kernel's stack where they fit in this many: 128 cache lines, 8 KiB, room for
# 63 groups of B's columns and 64 threads. A product that needs more allocates them.
CLAIMS_STACK = 128 * 8


def _depth_bytes(inst: Instruction) -> int:
    """Bytes of one packed panel of this product's B, NR wide on any host: K rows of it."""
    _, _, k, _ = product_dims(inst)
    return k * WIDEST_PANEL_BYTES


def packed_b_on_stack(inst: Instruction) -> bool:
    """Whether a tiled product packs its B on the stack: whenever one panel of it fits
    there (K <= 16,384 rows, of either float type: a panel's row is 128 bytes at most);
    else into the arena."""
    return _depth_bytes(inst) <= STACK_B_BYTES


def stack_holds_all_of_b(inst: Instruction) -> bool:
    """Whether that buffer holds all of packed B at once (else a product on one thread packs
    and makes C a group of B's columns at a time)."""
    _, _, k, n = product_dims(inst)
    return packed_b_size(k, n, inst.dtype) <= STACK_B_BYTES


def product_scratch(inst: Instruction) -> int:
    """The arena's scratch space a tiled product takes: none where its B is packed on the
    stack; else all of packed B, on whole cache lines."""
    if packed_b_on_stack(inst):
        return 0
    _, _, k, n = product_dims(inst)
    return whole_lines(max(packed_b_size(k, n, inst.dtype), 1))


def cpu_scratch_bytes(module: Module, inst: Instruction) -> int:
    """The scratch space CPU kernel `inst` takes while it runs: the largest packed B of its
    tiled products (they run one after another), 0 for a kernel without one. A while loop's
    scratch, its body's arena, is known only once the body is compiled: placed then
    (codegen/program.py), not here."""
    body = (module.computation(inst.attr("calls")).instructions if inst.opcode == "fusion"
            else (inst,))
    return max((product_scratch(d) for d in body if d.opcode == "dot" and tiled_product(d)),
               default=0)
