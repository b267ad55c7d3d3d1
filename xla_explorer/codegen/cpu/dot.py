"""The CPU's product shape: a dot as a phase of its own, by codegen/gemm.py's register-tiled
product for floats (B packed into panels, C in blocks the threads claim when it is big enough
to share, the element-wise epilogue on each block while it is in cache), by a plain loop nest
for integers and booleans."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import CompileError
from ...ir.module import Instruction
from ...ir.ops import Group, in_group
from .. import exprs, packing
from ..analysis import refuse_float16
from ..packing import (CLAIMS_STACK, dot_axes, packed_b_on_stack, product_dims,
                       product_scratch, stack_holds_all_of_b, tiled_product)
from ..writer import np_type, tuple_text
from .loop import Loops


@dataclass
class Products:
    """What a kernel's products ask of the program: codegen/gemm.py imported, scratch space
    for packed B, outputs on a cache line; and whether the epilogue is written already."""

    gemm: bool = False
    workspace: int = 0
    line_outputs: list[int] = field(default_factory=list)
    epilogue_done: bool = False


def emit_dot(loops: Loops, inst: Instruction, products: Products) -> None:
    core, w = loops.core, loops.w
    refuse_float16(inst)
    w.comment(inst)
    a, b = inst.operands
    if not (isinstance(a, Instruction) and a.opcode == "parameter"
            and b.opcode == "parameter"):
        raise CompileError(f"{inst.name}: a dot reads its operands from memory; "
                           "nothing may be fused into them", op="dot")
    only = core.outputs[0] if len(core.outputs) == 1 else None
    if id(inst) not in core.out_names and only is not None and only.shape == inst.shape:
        # The epilogue reads each product element once where it writes the result: the
        # product goes into the output, and the epilogue runs over it in place.
        out = core.out_names[id(only)]
    else:
        out = core.storage(inst)
    core.stored[id(inst)] = out
    lb, lc, lf, rb, rc, rf = dot_axes(inst)
    batch, m, k, n = product_dims(inst)
    pa, pb = f"p{a.parameter_number}", f"p{b.parameter_number}"
    float_dot = tiled_product(inst)
    # No batch: matrices, a vector operand (or result) read as a matrix of one row or column.
    plain = not lb and not rb and len(a.dims) <= 2 and len(b.dims) <= 2
    la, rb_ = w.fresh("lhs"), w.fresh("rhs")
    # As (batch, m, k) and (batch, k, n) arrays, copied only where the layout needs it: an
    # operand whose contracting dimensions come first (a) or last (b), as in q @ k.T, is
    # read as the transpose of the parameter, which the product packs as it is.
    w.line(f"{la} = {_operand(pa, lb, lf, lc, batch, m, k, plain)}")
    w.line(f"{rb_} = {_operand(pb, rb, rc, rf, batch, k, n, plain)}")
    target = out
    if plain and len(inst.dims) < 2:
        target = w.fresh("product")
        w.line(f"{target} = as_matrix({out}, {m}, {n})")
    if float_dot:
        _emit_tiled_product(loops, inst, la, rb_, out, target, plain, batch, m, n, k, products)
        return
    res, t = w.fresh("product"), w.fresh("t")
    i, j, q = w.fresh("i"), w.fresh("j"), w.fresh("k")
    at = (lambda *ix: ", ".join(ix)) if plain else (lambda *ix: ", ".join((t, *ix)))
    lhs_iq, rhs_qj, out_ij = f"{la}[{at(i, q)}]", f"{rb_}[{at(q, j)}]", f"{res}[{at(i, j)}]"
    w.line(f"{res} = {target}" + ("" if plain else f".reshape(({batch}, {m}, {n}))"))
    if not plain:
        w.line(f"for {t} in range({batch}):")
        w.depth += 1
    w.line(f"for {i} in range({m}):")
    if np.dtype(inst.dtype).kind == "f":
        # A small float product (packing.SMALL_PRODUCT_MACS): C's row accumulated over
        # k, its inner loop along rows of B and C, so it runs in vectors.
        a = w.fresh("a")
        w.line(f"    for {j} in range({n}):")
        w.line(f"        {out_ij} = {exprs.literal(0, inst.dtype)}")
        w.line(f"    for {q} in range({k}):")
        w.line(f"        {a} = {lhs_iq}")
        w.line(f"        for {j} in range({n}):")
        w.line(f"            {out_ij} = {out_ij} + {a} * {rhs_qj}")
    else:
        acc = w.fresh("acc")
        w.line(f"    for {j} in range({n}):")
        w.line(f"        {acc} = {exprs.literal(0, inst.dtype)}")
        w.line(f"        for {q} in range({k}):")
        if inst.dtype == np.bool_:
            w.line(f"            {acc} = {acc} or ({lhs_iq} and {rhs_qj})")
        else:
            w.line(f"            {acc} = {np_type(inst.dtype)}({acc} + {lhs_iq} * {rhs_qj})")
        w.line(f"        {out_ij} = {acc}")
    if not plain:
        w.depth -= 1


def _emit_tiled_product(loops: Loops, inst, lhs, rhs, out, target, plain, batch, m, n, k,
                        products: Products) -> None:
    """C = A @ B by codegen/gemm.py's register-tiled product: B packed into panels, then
    C (`out`, as a matrix `target`) in blocks the threads claim, when the product is big
    enough to share. A plain product whose epilogue is element-wise runs the epilogue in
    the same loop, on the block the thread has just made, while it is in cache."""
    # Imported here, not with the module: importing it loads the product's compiled entry
    # points, which a program without a product should not wait for.
    from .. import gemm

    core, w, options = loops.core, loops.w, loops.options
    products.gemm = True
    products.line_outputs += [k for k, o in enumerate(core.outputs) if core.out_names[id(o)] == out]
    products.workspace = max(products.workspace, product_scratch(inst))
    serial = options.serial_only
    # On one thread, B is packed by all of them where it is big enough to share.
    pack = "_parallel" if k * n >= options.parallel_threshold and not serial else ""
    parallel = m * n * k >= options.gemm_parallel_macs and m > gemm.MR and not serial
    like = rhs if plain else f"{rhs}[0]"
    # The stack buffer's length is a constant of the code: the most it may hold, whatever
    # B's size, so that other shapes give the same code (cpu/sizes.py). Moving the stack
    # pointer further costs nothing, and only what is packed is touched; claims makes the
    # same groups as for B's exact length (one a thread where all of B fits).
    held = packing.STACK_B_BYTES // np.dtype(inst.dtype).itemsize
    place = _Place(w.fresh("packed"), packed_b_on_stack(inst), held,
                   stack_holds_all_of_b(inst), like)
    if not (place.stack and parallel):  # else each thread of the loop makes its own
        w.line(place.make())
    if plain:  # the epilogue in the blocks' loop indexes C as a matrix
        in_rows = parallel and len(inst.dims) == 2
        _emit_product(loops, lhs, rhs, place, target, m, n, parallel, pack, products,
                      epilogue=_epilogue_in_rows(core, inst) if in_rows else None)
        return
    res, t = w.fresh("product"), w.fresh("t")
    w.line(f"{res} = {out}.reshape(({batch}, {m}, {n}))")
    w.line(f"for {t} in range({batch}):")
    w.depth += 1
    _emit_product(loops, f"{lhs}[{t}]", f"{rhs}[{t}]", place, f"{res}[{t}]", m, n, parallel,
                  pack, products, epilogue=None)
    w.depth -= 1


@dataclass
class _Place:
    """Where a product packs its B: `name`, on the stack of the thread that packs it (a
    buffer of `elements`, holding all of B if `whole`, else a group of its panels at a
    time), or in the kernel's scratch space in the arena."""

    name: str
    stack: bool
    elements: int
    whole: bool
    like: str  # an array of B's dtype

    def make(self, parallel: bool = False) -> str:
        if not self.stack:
            return (f"{self.name} = packed_b({self.like}, work)  # in the arena: too deep for "
                    "the stack")
        held = ("this thread's packed B, a group of panels at a time" if parallel
                else "packed B, on this kernel's stack" if self.whole
                else "packed B on this kernel's stack, as many panels at a time as fit")
        return f"{self.name} = local_array({self.like}, {self.elements})  # {held}"


def _emit_product(loops: Loops, lhs, rhs, place: _Place, out, m, n, parallel, pack,
                  products: Products, epilogue) -> None:
    """C = A @ B: B packed into `place`, by gemm.pack_b or pack_columns with the suffix
    `pack` (threads packing B's rows, for a product on one thread), or by the threads of
    the loop that shares the product, a group of columns each, if `parallel`; then C."""
    core, w = loops.core, loops.w
    packed = place.name
    if not parallel and (place.whole or not place.stack):
        w.line(f"pack_b{pack}({rhs}, {packed})  # B in panels of the register tile's width")
        # m as np.int64, not a literal: Numba compiles a callee again for every literal
        # argument's value, so a literal would cost a product compile per matrix height.
        w.line(f"product_rows({lhs}, {packed}, {out}, 0, np.int64({m}))")
        return
    if not parallel:  # B a group of columns at a time, each packed, then C's columns for it
        width, c0, c1 = w.fresh("width"), w.fresh("c0"), w.fresh("c1")
        w.line(f"{width} = group_width({rhs}, {packed})")
        w.line(f"for {c0} in range(0, {n}, {width}):")
        w.line(f"    {c1} = min({c0} + {width}, {n})")
        w.line(f"    pack_columns{pack}({rhs}, {packed}, {c0}, {c1})")
        w.line(f"    product_block({lhs}, {packed}, {out}, np.int64(0), np.int64({m}), {c0}, {c1})")
        return
    # prange over more iterations than there are threads: each iteration claims blocks
    # until none are left, so the first one on each thread does the work and the rest
    # find nothing. The source stays the same whatever the thread count.
    claimed, s = w.fresh("claimed"), w.fresh("s")
    r0, r1, c0, c1, g = (w.fresh(v) for v in ("r0", "r1", "c0", "c1", "g"))
    room = place.elements if place.stack else 0
    w.line(f"{claimed} = claims({rhs}, np.int64({room}), stack_empty(np.int64, {CLAIMS_STACK}))"
           "  # B's columns in groups, a group per thread at first; the rows of C handed out "
           "in each; counters on this kernel's stack")
    w.line(f"for {s} in prange({loops.options.gemm_workers}):  # each thread takes blocks of C "
           "until none are left")
    loops.open(with_inner=True)
    loops.parallel = True
    if place.stack:
        w.line(place.make(parallel=True))
    w.line("while True:")
    loops.open()
    w.line(f"{r0}, {r1}, {c0}, {c1}, {g} = next_product_block({rhs}, {packed}, {claimed}, "
           f"np.int64({m}))  # its own group's rows first; a group packed when first reached")
    w.line(f"if {r0} == {r1}:")
    w.line("    break")
    w.line(f"product_claimed({lhs}, {claimed}, {g}, {out}, {r0}, {r1}, {c0}, {c1})")
    if epilogue:
        i, j = w.fresh("i"), w.fresh("j")
        # The columns counted unsigned: Numba wraps a signed index that may be negative,
        # and a loop from a start it cannot see is not negative stays scalar.
        w.line(f"for {i} in range({r0}, {r1}):  # the epilogue, on this block")
        loops.open()
        w.line(f"for {j} in range(np.uint64({c0}), np.uint64({c1})):")
        loops.open()
        for o in epilogue:
            w.comment(o)
            core.store(core.out_names[id(o)], (i, j), core.value(o, (i, j)))
        loops.close(2)
        products.epilogue_done = True
    loops.close(1)  # the while loop, and the prange with it


def _epilogue_in_rows(core, dot: Instruction) -> list[Instruction] | None:
    """The outputs to write row by row right after the product, or None where that would
    be wrong: every output must have the product's shape, and everything that reads the
    product, directly or not, must be element-wise, so that an output's element reads
    only the same element of the product."""
    if any(o.shape.is_tuple or o.dims != dot.dims for o in core.outputs):
        return None
    after = {id(dot)}
    for inst in core.comp.instructions:  # in order: operands come first
        if inst.opcode == "tuple" or not any(id(o) in after for o in inst.operands):
            continue
        if inst.dims != dot.dims or not in_group(inst.opcode, Group.ELEMENTWISE,
                                                 Group.COMPARE_SELECT):
            return None
        after.add(id(inst))
    return [o for o in core.outputs if not core.written(o)]


def _operand(param: str, batch_dims, rows, cols, batch: int, r: int, c: int,
             plain: bool) -> str:
    """A dot operand as a (batch, r, c) array (r x c if `plain`) whose dimensions are, in
    order, `batch_dims`, `rows` and `cols` of the parameter: the parameter itself where they
    are in its order already, its transpose where they are once rows and cols swap places,
    else a transposed copy."""
    order = [*batch_dims, *rows, *cols]
    if order == sorted(order):
        view = f"contiguous({param})"
        if plain and len(order) < 2:  # a vector
            return f"as_matrix({view}, {r}, {c})"
        return view if plain else f"{view}.reshape(({batch}, {r}, {c}))"
    if [*batch_dims, *cols, *rows] == sorted(order):
        view = f"contiguous({param})"
        return f"{view}.T" if plain else f"{view}.reshape(({batch}, {c}, {r})).transpose(0, 2, 1)"
    return (f"contiguous(np.transpose({param}, {tuple_text(order)}))"
            f".reshape(({batch}, {r}, {c}))")
