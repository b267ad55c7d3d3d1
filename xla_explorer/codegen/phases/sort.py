"""XLA's sort as a phase: a stable merge sort of each row's positions by the comparator, then
every operand permuted by them."""
from __future__ import annotations

from math import prod

from ...errors import CompileError
from ...ir.module import Instruction
from ..elemental import Elemental
from ..writer import index_text


def emit_sort(core: Elemental, loops, inst: Instruction) -> None:
    """For each row along the sort dimension (rows in parallel when there are many), a
    bottom-up merge sort of the row's positions, ordered by the comparator inlined (a merge
    takes the right run's element only when it goes strictly first, which keeps the sort
    stable), then every operand permuted by those positions. Numba's stable argsort would
    serve only the comparators np.sort emits; this serves any comparator. `loops` is the
    target's (`loop_nest`, `open`, `close`, `parallel_from`)."""
    core.w.comment(inst)
    (axis,) = inst.attr("dimensions")
    xs = inst.operands
    n_ops = len(xs)
    if inst.shape.is_tuple:
        stores = [core.element_storage(inst, k, needed=False) for k in range(n_ops)]
    else:
        stores = [core.storage(inst)]
        core.stored[id(inst)] = stores[0]
    comparator = core.module.computation(inst.attr("to_apply"))
    dims = xs[0].dims
    n = dims[axis]
    lanes = [dims[d] for d in range(len(dims)) if d != axis]
    parallel = prod(lanes) >= 2 and prod(dims) * max(1, n.bit_length()) >= loops.parallel_from
    lidx = loops.loop_nest(lanes, parallel=parallel)

    def at(k: str) -> tuple[str, ...]:
        idx = list(lidx)
        idx.insert(axis, k)
        return tuple(idx)

    fresh = core.w.fresh
    perm, tmp, k = fresh("perm"), fresh("tmp"), fresh("k")
    width, lo, mid, hi = (fresh(v) for v in ("width", "lo", "mid", "hi"))
    a, b, t, ia, ib = (fresh(v) for v in ("a", "b", "t", "ia", "ib"))
    w = core.w.line
    w(f"{perm} = np.empty({n}, dtype=np.int64)  # the row's positions, in sorted order so far")
    w(f"{tmp} = np.empty({n}, dtype=np.int64)")
    w(f"for {k} in range({n}):")
    w(f"    {perm}[{k}] = {k}")
    w(f"{width} = 1")
    w(f"while {width} < {n}:  # merge sorted runs pairwise into runs twice as long")
    loops.open()
    w(f"{lo} = 0")
    w(f"while {lo} < {n}:")
    loops.open()
    w(f"{mid} = min({lo} + {width}, {n})")
    w(f"{hi} = min({lo} + 2 * {width}, {n})")
    w(f"{a} = {lo}")
    w(f"{b} = {mid}")
    w(f"{t} = {lo}")
    w(f"while {a} < {mid} and {b} < {hi}:")
    loops.open()
    w(f"{ia} = {perm}[{a}]")
    w(f"{ib} = {perm}[{b}]")
    # The comparator's parameters: (lhs, rhs) of each operand; lhs is the right run's element.
    args = []
    for x in xs:
        p = f"p{x.parameter_number}" if x.opcode == "parameter" else None
        if p is None:
            raise CompileError(f"{inst.name}: a sort reads its operands from memory; nothing may "
                               "be fused into it", op="sort")
        # float16 bits compare as the float32 values they load as (NaN unordered there too)
        args += [core.load(p, index_text(p, at(ib))), core.load(p, index_text(p, at(ia)))]
    (first,) = core.combine(comparator, args, [])
    w(f"if {first}:  # the right run's element goes strictly first")
    w(f"    {tmp}[{t}] = {ib}")
    w(f"    {b} += 1")
    w("else:")
    w(f"    {tmp}[{t}] = {ia}")
    w(f"    {a} += 1")
    w(f"{t} += 1")
    loops.close(1)
    w(f"while {a} < {mid}:")
    w(f"    {tmp}[{t}] = {perm}[{a}]")
    w(f"    {a} += 1")
    w(f"    {t} += 1")
    w(f"while {b} < {hi}:")
    w(f"    {tmp}[{t}] = {perm}[{b}]")
    w(f"    {b} += 1")
    w(f"    {t} += 1")
    w(f"{lo} = {hi}")
    loops.close(1)
    # Copied back rather than swapped: swapping the two arrays makes Numba's parallel
    # compilation (its copy propagation over the loop body) extremely slow.
    w(f"for {k} in range({n}):")
    w(f"    {perm}[{k}] = {tmp}[{k}]")
    w(f"{width} *= 2")
    loops.close(1)
    w(f"for {k} in range({n}):  # every operand permuted alike (float16 as its bits)")
    loops.open()
    for x, out in zip(xs, stores):
        if out is not None:
            core.copy(out, at(k), f"p{x.parameter_number}", at(f"{perm}[{k}]"))
    loops.close(1)
    loops.close(len(lanes))
