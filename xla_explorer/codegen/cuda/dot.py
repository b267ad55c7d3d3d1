"""The CUDA product shape: an output fusion as tiles of the result, one block each, the
operands staged in shared memory, the element-wise epilogue applied before the store."""
from __future__ import annotations

from math import prod

import numpy as np

from ...errors import UnsupportedOpError
from .. import exprs
from ..analysis import reads_at_kept, refuse_float16
from ..writer import np_type
from .loop import MAX_BLOCKS, Layout

# A product's tile of the result (PRODUCT_TILE x PRODUCT_TILE elements, one block).
PRODUCT_TILE = 16


def emit_product(layout: Layout, dots, reduces) -> None:
    """C = A @ B in TILE x TILE tiles of C, one per block at a time (a grid-stride loop
    over the tiles), one element per thread: the block stages a TILE-wide slab of A and
    of B in shared memory, every thread reads TILE of each from there, so each element of
    A and B is read from global memory once per tile instead of once per product. The
    element-wise epilogue runs on the thread's element before it is stored."""
    core, w = layout.core, layout.w
    if len(dots) != 1 or reduces:
        raise UnsupportedOpError("the cuda backend compiles a product fused with "
                                 "element-wise ops only", op="dot")
    (dot,) = dots
    refuse_float16(dot)
    a, b = dot.operands
    lb, lc = dot.attr("lhs_batch_dims", ()), dot.attr("lhs_contracting_dims", ())
    rb, rc = dot.attr("rhs_batch_dims", ()), dot.attr("rhs_contracting_dims", ())
    lf = [d for d in range(len(a.dims)) if d not in lb and d not in lc]
    rf = [d for d in range(len(b.dims)) if d not in rb and d not in rc]
    if not reads_at_kept(core.comp, core.outputs, [dot], dot.dims):
        raise UnsupportedOpError("the cuda backend compiles a product fused with element-wise "
                                 "ops of its shape only", op="dot")
    batch_dims = tuple(a.dims[d] for d in lb)
    m = prod(a.dims[d] for d in lf)
    n = prod(b.dims[d] for d in rf)
    k = prod(a.dims[d] for d in lc)
    T = PRODUCT_TILE
    tiles_m, tiles_n = -(-m // T), -(-n // T)
    tiles = prod(batch_dims) * tiles_m * tiles_n
    layout.threads, layout.blocks = T * T, max(1, min(MAX_BLOCKS, tiles))
    layout.reason = (f"a {m}x{k} by {k}x{n} product"
                     + (f" ({prod(batch_dims)} of them)" if batch_dims else "")
                     + f": {tiles} tiles of {T}x{T} elements of the result, one block of "
                     f"{T * T} threads per tile (one element each), the operands staged "
                     f"in shared memory {T} columns at a time")
    acc_t = np.dtype(dot.dtype)
    a_tile = layout.shared("a_tile", (T, T + 1), acc_t)  # +1: no bank conflicts
    b_tile = layout.shared("b_tile", (T, T + 1), acc_t)
    w.line("tid = cuda.threadIdx.x")
    w.line(f"tx = tid % {T}")
    w.line(f"ty = tid // {T}")
    tile = layout.strided(tiles, "cuda.blockIdx.x", "cuda.gridDim.x")
    w.line(f"t = {tile} // {tiles_m * tiles_n}")
    w.line(f"i = ({tile} // {tiles_n}) % {tiles_m} * {T} + ty")
    w.line(f"j = {tile} % {tiles_n} * {T} + tx")
    bidx = layout.unravel("t", batch_dims)
    acc = w.fresh("acc")
    w.line(f"{acc} = {exprs.literal(0, acc_t)}")
    k0 = w.fresh("k0")
    w.line(f"for {k0} in range(0, {k}, {T}):")
    w.open()

    def operand_index(x, batch, free, contracting, f_flat, c_flat):
        idx = [""] * len(x.dims)
        for d, i in zip(batch, bidx):
            idx[d] = i
        for d, i in zip(free, layout.unravel(f_flat, [x.dims[d] for d in free])):
            idx[d] = i
        for d, i in zip(contracting, layout.unravel(c_flat, [x.dims[d] for d in contracting])):
            idx[d] = i
        return tuple(idx)

    for tile_name, x, cond, where in (
            (a_tile, a, f"i < {m} and {k0} + tx < {k}", (lb, lf, lc, "i", f"({k0} + tx)")),
            (b_tile, b, f"{k0} + ty < {k} and j < {n}", (rb, rf, rc, "j", f"({k0} + ty)"))):
        w.line(f"if {cond}:")
        w.open()
        v = core.value(x, operand_index(x, *where))
        w.line(f"{tile_name}[ty, tx] = {np_type(acc_t)}({v})")
        w.close(1)
        w.line("else:")
        w.line(f"    {tile_name}[ty, tx] = {exprs.literal(0, acc_t)}")
    w.line("cuda.syncthreads()")
    q = w.fresh("q")
    w.line(f"for {q} in range({T}):")
    lhs, rhs = f"{a_tile}[ty, {q}]", f"{b_tile}[{q}, tx]"
    if acc_t == np.bool_:
        w.line(f"    {acc} = {acc} or ({lhs} and {rhs})")
    elif acc_t.kind in "iu":
        w.line(f"    {acc} = {np_type(acc_t)}({acc} + {lhs} * {rhs})")
    else:
        w.line(f"    {acc} = {acc} + {lhs} * {rhs}")
    w.line("cuda.syncthreads()  # the tiles are read before the next are staged")
    w.close(1)
    w.line(f"if i < {m} and j < {n}:")
    w.open()
    core.row_scalars[id(dot)] = acc
    idx = (bidx + layout.unravel("i", [a.dims[d] for d in lf])
           + layout.unravel("j", [b.dims[d] for d in rf]))
    for o in core.outputs:
        w.comment(o)
        core.store(core.out_names[id(o)], idx, core.value(o, idx))
    w.close(1)
    w.close(1)
