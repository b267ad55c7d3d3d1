"""Numba CUDA code generation: every kernel of a scheduled module becomes one `@cuda.jit`
kernel, from the same fused computations the CPU backend compiles.

Values are computed exactly as the CPU code generator computes them: this module's emitter is
a `numba_cpu.KernelEmitter`, so an element of any instruction (element-wise ops through the
op table's scalar expressions, `exprs.scalar_expr`; broadcasts, slices, transposes, gathers
... as index arithmetic) is the same generated expression on both targets. What differs is
how the elements are shared out among threads:

  loop     one thread per output element, over a grid-stride loop (a thread takes elements
           i, i + threads in the grid, ...), so a launch of a bounded number of blocks covers
           any size.
  row      every reduction reduces the same trailing dimensions (softmax, layernorm,
           sum(x + y*z) per row): one block per row (a grid-stride loop over the rows), its
           threads striding over the row; each reduction is a per-thread partial, then the
           block's tree: warp shuffles, one value per warp in shared memory, combined by every
           thread in the same order (so every thread holds the same result, with no second
           broadcast). A row's parameters and expensive values that several passes read are
           kept in shared memory by the first pass where they fit, never re-read from global
           memory. One row (a full reduction) with nothing but scalars to write runs on many
           blocks: each block's partial goes to scratch space, and the last block to finish
           (an atomic counter) combines them in block order: deterministic, any reducer.
           Rows of a warp's width or less get a warp each, several rows to a block.
  column   reductions over leading or middle dimensions: one thread per kept element,
           looping over the reduced ones; neighbouring threads read neighbouring columns, so
           the loads of a warp coalesce.
  product  an output fusion: tiles of the result, one block each, the operands staged in
           shared memory, the element-wise epilogue applied before the store.
  one block  scatters, sorts, scans and the reductions the shapes above cannot take: phases
           one after another in one block, barriers between them (the CPU emitter's phases
           for scatter, sort and scan, shared out among the block's threads).

Launch configuration (threads per block, blocks) is chosen per kernel from its shape and
written as a header comment of the kernel's source, with the reason.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod

import numpy as np

from ..errors import UnsupportedOpError
from ..ir.module import Instruction, Module
from ..ir.ops import elementwise_like, is_expensive
from ..ir.printer import format_instruction
from . import exprs
from . import numba_cpu as cpu

# Threads per block of a loop kernel, and the most blocks a grid-stride loop launches: enough
# to fill the largest GPUs several times over (132 SMs x 2048 threads = 1056 blocks of 256).
LOOP_THREADS = 256
MAX_BLOCKS = 4096
# A row's block: as many threads as the row has elements, rounded up to whole warps, at most
# ROW_THREADS (more threads than that only shorten each thread's stride).
ROW_THREADS = 256
WARP = 32
# Shared memory a row kernel may keep a row in (of the 48 KiB a block has without opting in).
SHARED_BUDGET = 32 * 1024
# Ops that run as phases of their own in one block (the CPU emitter's, shared out among the
# block's threads): a scatter (its updates in order, on one thread), a sort and a scan (one
# thread per row).
SERIAL_PHASES = ("scatter", "sort", "reduce-window")
# A product's tile of the result (PRODUCT_TILE x PRODUCT_TILE elements, one block).
PRODUCT_TILE = 16
# Blocks a cooperative launch may have (one per multiprocessor; no GPU has more): the
# scratch space holds a partial per block.
COOPERATIVE_BLOCKS = 1024
# Blocks a full reduction spreads over, at most: each adds a grid-stride partial.
FULL_REDUCTION_BLOCKS = 1024

_F16 = np.dtype(np.float16)
_IDENTITY = {"add": 0, "multiply": 1, "or": 0, "xor": 0}


@dataclass
class CudaKernel:
    """One generated kernel: its function's name, source and launch."""

    name: str
    instruction: str
    source: str
    blocks: int
    threads: int
    reason: str
    scratch: int = 0  # bytes of scratch space it takes as its last argument (`scratch`)
    cooperative: bool = False  # launched with every block resident (a grid-wide barrier)


def _round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def launch_for_loop(n: int) -> tuple[int, int, str]:
    """(blocks, threads, reason) of a grid-stride loop over n elements."""
    threads = min(LOOP_THREADS, max(WARP, _round_up(n, WARP)))
    blocks = max(1, min(MAX_BLOCKS, -(-n // threads)))
    why = (f"one thread per element of {n} over a grid-stride loop: {blocks} "
           f"block{'s' if blocks > 1 else ''} of {threads} threads"
           + (" (the cap: each thread takes several elements)" if blocks == MAX_BLOCKS else ""))
    return blocks, threads, why


class CudaKernelEmitter(cpu.KernelEmitter):
    """The CPU emitter's values, shared out among CUDA threads."""

    def __init__(self, module: Module, comp, name: str, kind: str, row: bool):
        super().__init__(module, comp, name, kind, row)
        self.blocks, self.threads, self.reason = 1, WARP, ""
        self.scratch = 0
        self.shared_bytes = 0
        self.declarations: list[str] = []  # shared arrays, declared at the kernel's top
        self.scalar_arrays: set[str] = set()  # one-element shared arrays standing for 0-d values
        self.cooperative = False

    # -- where materialised values live: never np.empty inside a kernel ---------------------

    # -- the kernel -------------------------------------------------------------------------

    def emit(self) -> CudaKernel:  # type: ignore[override]
        params = sorted(self.params, key=lambda p: p.parameter_number)
        args = [f"p{p.parameter_number}" for p in params]
        outs = [f"out{k}" for k in range(len(self.outputs))]
        plan = cpu.row_plan(self.comp, self.outputs)
        reduces = [i for i in self.comp.instructions if i.opcode == "reduce"]
        dots = [i for i in self.comp.instructions if i.opcode == "dot"]
        phases = [i for i in self.comp.instructions if i.opcode in SERIAL_PHASES]
        if dots:
            if phases:
                raise UnsupportedOpError(
                    f"the cuda backend does not compile {phases[0].opcode} "
                    f"({phases[0].name}) fused with a product yet", op=phases[0].opcode)
            shape = "product"
            self._emit_product_cuda(dots, reduces)
        elif phases or (plan is None and self._column_plan(reduces) is None):
            # anything else: its phases one after another in one block
            shape = "one-block"
            self._emit_one_block(phases + reduces)
        elif plan is not None and not reduces:
            shape = "loop"
            self._emit_loop()
        elif plan is not None:
            shape = "row"
            self._emit_rows_cuda(*plan)
        else:
            shape = "column"
            self._emit_columns()
        scratch = ["scratch"] if self.scratch else []
        blocks = (f"one per multiprocessor (at most {self.blocks})" if self.cooperative
                  else str(self.blocks))
        header = [f"# launch: {blocks} x {self.threads} (blocks x threads), {shape} kernel: "
                  f"{self.reason}",
                  "@cuda.jit",
                  f"def {self.name}({', '.join(args + outs + scratch)}):"]
        what = "row fusion" if self.row_config else self.kind
        doc = f'    """{what} kernel, the fused computation {self.comp.name}."""'
        body = self.declarations + self.w.lines or ["    pass"]
        return CudaKernel(self.name, self.comp.name, "\n".join(header + [doc] + body) + "\n",
                          self.blocks, self.threads, self.reason, self.scratch,
                          self.cooperative)

    # -- loops over elements ----------------------------------------------------------------

    def _unravel(self, flat: str, dims) -> tuple[str, ...]:
        """Index names for the row-major position `flat` in `dims`."""
        idx = []
        stride = prod(dims)
        for n in dims:
            stride //= n
            i = self.w.fresh("i")
            if stride == 1:
                self.w.line(f"{i} = {flat} % {n}" if n != prod(dims) else f"{i} = {flat}")
            else:
                self.w.line(f"{i} = ({flat} // {stride}) % {n}" if n * stride != prod(dims)
                            else f"{i} = {flat} // {stride}")
            idx.append(i)
        return tuple(idx)

    def _strided(self, n: int, start: str, step: str) -> str:
        """Open `for j in range(start, n, step)`; the caller closes it with close(1)."""
        j = self.w.fresh("j")
        self.w.line(f"for {j} in range({start}, {n}, {step}):")
        self.open()
        return j

    def _emit_loop(self):
        by_shape: dict[tuple, list] = {}
        for o in self.outputs:
            by_shape.setdefault(o.dims, []).append(o)
        n = max(prod(d) for d in by_shape)
        self.blocks, self.threads, self.reason = launch_for_loop(n)
        self.w.line("start = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x")
        self.w.line("step = cuda.gridDim.x * cuda.blockDim.x")
        for dims, group in by_shape.items():
            flat = self._strided(prod(dims), "start", "step")
            idx = self._unravel(flat, dims)
            for o in group:
                self.w.comment(o)
                self._store(self.out_names[id(o)], idx, self.value(o, idx))
            self.close(1)

    # -- reductions: per-thread partials, then the block's tree ------------------------------

    def _reducer_parts(self, inst):
        n = len(inst.operands) // 2
        operands, inits = inst.operands[:n], inst.operands[n:]
        reducer = self.module.computation(inst.attr("to_apply"))
        return operands, inits, reducer

    def _identity_start(self, inst, inits, reducer) -> tuple[list[str], list[str] | None]:
        """Each thread's starting accumulators, and the init to combine once at the end when
        it is not the reducer's identity (np.sum(x, initial=5)): every thread starts from
        the init, which HLO's contract says is the identity, so one that is not is applied
        once, by itself."""
        wide = cpu.wide_accumulator(reducer, np.dtype(inits[0].dtype), len(inits))
        starts = [self.value(i, ()) for i in inits]
        late = None
        root = reducer.root
        if len(inits) == 1 and cpu.simple_op(reducer) and root.opcode in _IDENTITY:
            init = inits[0]
            if init.opcode != "constant" or init.literal.reshape(-1)[0] != _IDENTITY[root.opcode]:
                late = starts
                starts = [exprs.literal(_IDENTITY[root.opcode], init.dtype)]
        accs = []
        for s, init in zip(starts, inits):
            acc = self.w.fresh("acc")
            t = wide if len(inits) == 1 else np.dtype(init.dtype)
            self.w.line(f"{acc} = {cpu.np_type(t)}({s})")
            accs.append(acc)
        return accs, late

    def _step(self, inst, reducer, accs, vals):
        wide = cpu.wide_accumulator(reducer, np.dtype(inst.operands[0].dtype), len(accs))
        if wide != np.dtype(inst.operands[0].dtype):
            vals = [f"{cpu.np_type(wide)}({v})" for v in vals]
        new = self._combine(reducer, accs, vals, inst, dtype=wide)
        for acc, v in zip(accs, new):
            self.w.line(f"{acc} = {v}")

    def _shared(self, base: str, count, dtype) -> str:
        var = self.w.fresh(base)
        shape = count if isinstance(count, int) else cpu.tuple_text(count)
        self.declarations.append(f"    {var} = cuda.shared.array({shape}, {cpu.np_type(dtype)})")
        self.shared_bytes += prod(count if not isinstance(count, int) else (count,)) \
            * np.dtype(dtype).itemsize
        return var

    def _acc_types(self, inst, reducer):
        n = len(inst.operands) // 2
        wide = cpu.wide_accumulator(reducer, np.dtype(inst.operands[0].dtype), n)
        return [wide] if n == 1 else [np.dtype(i.dtype) for i in inst.operands[n:]]

    def _block_reduce(self, inst, reducer, accs, types):
        """Combine the block's per-thread accumulators: within each warp by shuffles, then
        the warps' results through shared memory, which every thread combines in warp order,
        so that each ends with the same value. The block's threads are whole warps."""
        warps = 1 if getattr(self, "warp_rows", False) else self.threads // WARP
        for off in (16, 8, 4, 2, 1):
            others = []
            for acc in accs:
                o = self.w.fresh("other")
                self.w.line(f"{o} = shfl_down({acc}, {off})")
                others.append(o)
            # lanes whose partner is past the warp's end keep their own value (the shuffle
            # returns their own); only lane 0's result is used
            self._step_plain(inst, reducer, accs, others)
        if warps == 1:
            self.w.line("# one warp: lane 0 holds its value; every lane takes it")
            for acc in accs:
                self.w.line(f"{acc} = shfl_idx({acc}, 0)")
            return
        slots = [self._shared("warp_values", warps, t) for t in types]
        self.w.line("if lane == 0:")
        for s, acc in zip(slots, accs):
            self.w.line(f"    {s}[warp] = {acc}")
        self.w.line("cuda.syncthreads()")
        for s, acc in zip(slots, accs):
            self.w.line(f"{acc} = {s}[0]")
        w = self.w.fresh("w")
        self.w.line(f"for {w} in range(1, {warps}):")
        self.open()
        self._step_plain(inst, reducer, accs, [f"{s}[{w}]" for s in slots])
        self.close(1)
        self.w.line("cuda.syncthreads()  # every thread has read the slots before they are "
                    "reused")

    def _step_plain(self, inst, reducer, accs, vals):
        types = self._acc_types(inst, reducer)
        new = self._combine(reducer, accs, vals, inst, dtype=types[0])
        for acc, v in zip(accs, new):
            self.w.line(f"{acc} = {v}")

    def _finish(self, inst, reducer, accs, late) -> list[str]:
        """The reduce's value(s) in its own type, with a non-identity init applied once."""
        if late is not None:
            self._step_plain(inst, reducer, accs, [f"{cpu.np_type(self._acc_types(inst, reducer)[0])}({late[0]})"])
        shapes = inst.shape.elements if inst.shape.is_tuple else (inst.shape,)
        out = []
        for acc, s in zip(accs, shapes):
            var = self.w.fresh(f"{inst.name}_value")
            self.w.line(f"{var} = {cpu.np_type(s.dtype)}({acc})")
            out.append(var)
        return out

    # -- rows: one block per row -------------------------------------------------------------

    def _values_to_keep(self, lead, trail):
        """What the first pass over a row keeps in shared memory for the later ones: the
        expensive values several passes compute (softmax's exp) and the parameters several
        passes read, as long as they fit in SHARED_BUDGET."""
        full = lead + trail
        passes = [r.operands[:len(r.operands) // 2] for r in self._reduces()]
        passes.append([o for o in self.outputs if o.dims == full])
        seen: dict[int, int] = {}
        for roots in passes:
            for i in {id(x): x for x in cpu.elementwise_closure(roots, full)
                      + [o for e in cpu.elementwise_closure(roots, full) for o in e.operands]
                      + list(roots)}.values():
                seen[id(i)] = seen.get(id(i), 0) + 1
        wanted = [i for i in self.comp.instructions if seen.get(id(i), 0) > 1 and i.dims == full
                  and (is_expensive(i) or i.opcode == "parameter")]
        keep, used = [], 0
        for i in sorted(wanted, key=lambda i: i.opcode == "parameter"):
            size = prod(trail) * max(np.dtype(i.dtype).itemsize, 4)  # float16 kept as float32
            if used + size <= SHARED_BUDGET:
                keep.append(i)
                used += size
        return keep

    def _emit_rows_cuda(self, lead, trail):
        rows, per_row = prod(lead), prod(trail)
        reduces = self._reduces()
        full = [o for o in self.outputs if o.dims == lead + trail]
        small = [o for o in self.outputs if o.dims != lead + trail]
        if not lead and not full and self._independent(reduces) and per_row > ROW_THREADS:
            self._emit_full_reduction(trail, reduces)
            return
        if not lead and per_row > ROW_THREADS:
            self._emit_one_row_grid(trail, reduces, full, small)
            return
        # Rows of a warp's width or less: a warp per row, several rows to a block, so that
        # blocks stay large enough to fill the GPU; the reductions are warp shuffles alone.
        self.warp_rows = per_row <= WARP and rows > 1
        keep = self._values_to_keep(lead, trail)
        if self.warp_rows:
            per_block = min(ROW_THREADS // WARP, rows)
            self.threads = per_block * WARP
            self.blocks = max(1, min(-(-rows // per_block), MAX_BLOCKS))
            self.reason = (f"one warp per row: {rows} rows of {per_row} elements, "
                           f"{per_block} rows to a block of {self.threads} threads")
            for inst in keep:
                buf = self._shared(f"{inst.name}_rows", (per_block,) + trail, inst.dtype)
                self.stash[id(inst)] = f"{buf}[warp]"  # this warp's row
            first, step, lanes, leader = (f"cuda.blockIdx.x * {per_block} + warp",
                                          f"cuda.gridDim.x * {per_block}", "lane", "lane")
        else:
            self.threads = min(ROW_THREADS, max(WARP, _round_up(per_row, WARP)))
            self.blocks = max(1, min(rows, MAX_BLOCKS))
            self.reason = (f"one block per row: {rows} rows of {per_row} elements, "
                           f"{self.threads} threads striding over each row")
            if not lead:
                self.reason = (f"one row of {per_row} elements whose result the rest of the "
                               "kernel reads: one block")
            for inst in keep:
                self.stash[id(inst)] = self._shared(f"{inst.name}_row", trail, inst.dtype)
            first, step, lanes, leader = "cuda.blockIdx.x", "cuda.gridDim.x", "tid", "tid"
        stride = WARP if self.warp_rows else self.threads
        self.w.line("tid = cuda.threadIdx.x")
        self.w.line(f"lane = tid % {WARP}")
        self.w.line(f"warp = tid // {WARP}")
        row = self._strided(rows, first, step)
        ridx = self._unravel(row, lead)
        for inst in reduces:
            self.w.comment(inst)
            operands, inits, reducer = self._reducer_parts(inst)
            accs, late = self._identity_start(inst, inits, reducer)
            j = self._strided(per_row, lanes, stride)
            tidx = self._unravel(j, trail)
            self.row_index, self.row_tail = ridx + tidx, tidx
            self._step(inst, reducer, accs, [self.value(o, ridx + tidx) for o in operands])
            self._end_row_pass((0,))  # closes the one strided loop
            self._block_reduce(inst, reducer, accs, self._acc_types(inst, reducer))
            values = self._finish(inst, reducer, accs, late)
            if inst.shape.is_tuple:
                for k, v in enumerate(values):
                    self.row_scalars[(id(inst), k)] = v
            else:
                self.row_scalars[id(inst)] = values[0]
        if small:
            self.w.line(f"if {leader} == 0:")
            self.open()
            for o in small:
                self.w.comment(o)
                idx = ridx + ("0",) * (len(o.dims) - len(lead))
                self._store(self.out_names[id(o)], idx, self.value(o, idx))
            self.close(1)
        if full:
            j = self._strided(per_row, lanes, stride)
            tidx = self._unravel(j, trail)
            self.row_index, self.row_tail = ridx + tidx, tidx
            for o in full:
                self.w.comment(o)
                self._store(self.out_names[id(o)], ridx + tidx, self.value(o, ridx + tidx))
            self._end_row_pass((0,))
        self.close(1)

    def _emit_one_row_grid(self, trail, reduces, full, small):
        """One long row whose reductions the rest of the kernel reads (`x - x.mean()`,
        mean and variance): a cooperative launch of one block per multiprocessor (every
        block resident at once), grid-stride passes over the row, and after each
        reduction's block partials are written, a grid-wide barrier, then every thread
        combines the partials in block order (so all hold the same value)."""
        n = prod(trail)
        self.threads = ROW_THREADS
        self.blocks = -(-n // ROW_THREADS)  # at most; the launch takes one per multiprocessor
        self.cooperative = True
        self.reason = (f"one row of {n} elements whose reductions the rest of the kernel "
                       f"reads: a cooperative launch of one block of {self.threads} threads "
                       "per multiprocessor, a grid-wide barrier after each reduction's "
                       "block partials")
        offset = 8  # (past the counter a full reduction keeps at zero between its calls)
        self.w.line("grid = cuda.cg.this_grid()")
        self.w.line("tid = cuda.threadIdx.x")
        self.w.line(f"lane = tid % {WARP}")
        self.w.line(f"warp = tid // {WARP}")
        self.w.line("start = cuda.blockIdx.x * cuda.blockDim.x + tid")
        self.w.line("step = cuda.gridDim.x * cuda.blockDim.x")
        for inst in reduces:
            self.w.comment(inst)
            operands, inits, reducer = self._reducer_parts(inst)
            accs, late = self._identity_start(inst, inits, reducer)
            j = self._strided(n, "start", "step")
            tidx = self._unravel(j, trail)
            self._step(inst, reducer, accs, [self.value(o, tidx) for o in operands])
            self.close(1)
            types = self._acc_types(inst, reducer)
            self._block_reduce(inst, reducer, accs, types)
            parts = []
            for t in types:
                var = self.w.fresh("partials")
                self.w.line(f"{var} = scratch[{offset}:{offset + 8 * COOPERATIVE_BLOCKS}]"
                            f".view({cpu.np_type(t)})")
                offset += 8 * COOPERATIVE_BLOCKS
                parts.append(var)
            self.w.line("if tid == 0:")
            for part, acc in zip(parts, accs):
                self.w.line(f"    {part}[cuda.blockIdx.x] = {acc}")
            self.w.line("grid.sync()  # every block's partial is written")
            for part, acc in zip(parts, accs):
                self.w.line(f"{acc} = {part}[0]")
            b = self.w.fresh("b")
            self.w.line(f"for {b} in range(1, cuda.gridDim.x):")
            self.open()
            self._step_plain(inst, reducer, accs, [f"{part}[{b}]" for part in parts])
            self.close(1)
            values = self._finish(inst, reducer, accs, late)
            if inst.shape.is_tuple:
                for k, v in enumerate(values):
                    self.row_scalars[(id(inst), k)] = v
            else:
                self.row_scalars[id(inst)] = values[0]
        self.scratch = offset
        if small:
            self.w.line("if start == 0:")
            self.open()
            for o in small:
                self.w.comment(o)
                idx = ("0",) * len(o.dims)
                self._store(self.out_names[id(o)], idx, self.value(o, idx))
            self.close(1)
        if full:
            j = self._strided(n, "start", "step")
            tidx = self._unravel(j, trail)
            for o in full:
                self.w.comment(o)
                self._store(self.out_names[id(o)], tidx, self.value(o, tidx))
            self.close(1)

    def _independent(self, reduces) -> bool:
        """No reduce reads another's result (so each can be finished by the last block)."""
        ids = {id(r) for r in reduces}
        for r in reduces:
            stack, seen = list(r.operands), set()
            while stack:
                i = stack.pop()
                if id(i) in seen:
                    continue
                seen.add(id(i))
                if id(i) in ids:
                    return False
                stack.extend(i.operands)
        return True

    def _emit_full_reduction(self, trail, reduces):
        """One row spread over many blocks: each block's partial to scratch, the last block
        to finish combines them in block order and writes the outputs."""
        n = prod(trail)
        self.threads = ROW_THREADS
        self.blocks = max(1, min(FULL_REDUCTION_BLOCKS, -(-n // (ROW_THREADS * 4))))
        self.reason = (f"a full reduction of {n} elements: {self.blocks} blocks of "
                       f"{self.threads} threads each add a grid-stride partial; the last "
                       "block to finish combines the partials in block order")
        # scratch: [counter (8 bytes)] then per reduce and accumulator, one slot per block
        slots = []
        offset = 8
        self.w.line("tid = cuda.threadIdx.x")
        self.w.line(f"lane = tid % {WARP}")
        self.w.line(f"warp = tid // {WARP}")
        self.w.line("start = cuda.blockIdx.x * cuda.blockDim.x + tid")
        self.w.line("step = cuda.gridDim.x * cuda.blockDim.x")
        for inst in reduces:
            self.w.comment(inst)
            operands, inits, reducer = self._reducer_parts(inst)
            accs, late = self._identity_start(inst, inits, reducer)
            j = self._strided(n, "start", "step")
            tidx = self._unravel(j, trail)
            self._step(inst, reducer, accs, [self.value(o, tidx) for o in operands])
            self.close(1)
            types = self._acc_types(inst, reducer)
            self._block_reduce(inst, reducer, accs, types)
            parts = []
            for t in types:
                offset = _round_up(offset, 8)
                var = self.w.fresh("partials")
                self.w.line(f"{var} = scratch[{offset}:{offset + 8 * self.blocks}]"
                            f".view({cpu.np_type(t)})")
                offset += 8 * self.blocks
                parts.append(var)
            self.w.line("if tid == 0:")
            for p, acc in zip(parts, accs):
                self.w.line(f"    {p}[cuda.blockIdx.x] = {acc}")
            slots.append((inst, reducer, parts, late))
        self.scratch = offset
        self.w.line("# the last block to finish sees every partial (the fence publishes this "
                    "block's before it counts itself)")
        self.w.line("cuda.threadfence()")
        self.declarations.append("    done = cuda.shared.array(1, np.int64)")
        self.w.line("counter = scratch[0:8].view(np.int64)")
        self.w.line("if tid == 0:")
        self.w.line("    done[0] = cuda.atomic.add(counter, 0, 1)")
        self.w.line("cuda.syncthreads()")
        self.w.line(f"if done[0] == {self.blocks - 1}:")
        self.open()
        self.w.line("cuda.threadfence()")
        for inst, reducer, parts, late in slots:
            accs = []
            for p in parts:
                acc = self.w.fresh("acc")
                self.w.line(f"{acc} = {p}[0]")
                accs.append(acc)
            b = self.w.fresh("b")
            self.w.line(f"for {b} in range(1, {self.blocks}):")
            self.open()
            self._step_plain(inst, reducer, accs, [f"{p}[{b}]" for p in parts])
            self.close(1)
            values = self._finish(inst, reducer, accs, late)
            if inst.shape.is_tuple:
                for k, v in enumerate(values):
                    self.row_scalars[(id(inst), k)] = v
            else:
                self.row_scalars[id(inst)] = values[0]
        self.w.line("if tid == 0:")
        self.open()
        for o in self.outputs:
            self.w.comment(o)
            idx = ("0",) * len(o.dims)
            self._store(self.out_names[id(o)], idx, self.value(o, idx))
        self.w.line("counter[0] = 0  # ready for the next call")
        self.close(1)
        self.close(1)

    # -- one block: scatters, sorts and scans, phase by phase ---------------------------------

    def _emit_one_block(self, phases):
        """The CPU emitter's phases, shared out among one block's threads: every loop the CPU
        runs in parallel (a scan's or sort's rows, the outputs' elements) is a block-stride
        loop, a scatter's updates run on one thread in order (as np.add.at applies them),
        and a barrier separates the phases, which read what earlier phases wrote."""
        widest = max([prod(o.dims) for o in self.outputs] + [1])
        self.threads = min(ROW_THREADS, max(WARP, _round_up(widest, WARP)))
        self.blocks = 1
        what = ", ".join(sorted({p.opcode for p in phases}))
        self.reason = (f"one block ({what}): a phase reads what the one before wrote, which only "
                       "a block's barrier orders; its rows and elements are shared out among "
                       "the block's threads (a scatter's updates stay in order on one thread)")
        self.serial = 0
        self.w.line("tid = cuda.threadIdx.x")
        for inst in self.comp.instructions:
            if inst.opcode == "scatter":
                self._emit_scatter(inst)
        self.one_block = True
        for inst in self._reduces():
            if inst.opcode in cpu.PHASE_OPS:
                cpu.PHASE_OPS[inst.opcode](self, inst)
            else:
                self._reduce_phase(inst)
            self.w.line("cuda.syncthreads()  # the phase is written before it is read")
        self._emit_outputs(self.outputs, parallel_ok=True)
        # A row's scratch (a sort's positions) is the thread's own: local memory.
        self.w.lines = [re.sub(r"np\.empty\((\d+), dtype=([\w.]+)\)", r"cuda.local.array(\1, \2)",
                               line) for line in self.w.lines]

    def _reduce_phase(self, inst):
        """A reduce as a phase: one thread per element of its result (block-stride), each
        accumulating what it reduces, into its output or a shared-memory array."""
        cpu.refuse_float16(inst)
        self.w.comment(inst)
        n = len(inst.operands) // 2
        if inst.shape.is_tuple:
            stores = [self._element_storage(inst, k, needed=True) for k in range(n)]
            shapes = list(inst.shape.elements)
        else:
            stores = [self._storage(inst)]
            self.stored[id(inst)] = stores[0]
            shapes = [inst.shape]
        kept_dims = shapes[0].dims
        flat = self._strided(prod(kept_dims), "tid", self.threads)
        kidx = self._unravel(flat, kept_dims)
        values = self._reduce_at(inst, kidx)
        for store, v, shape in zip(stores, values, shapes):
            self._store_result(store, kidx, v, shape.dtype)
        self.close(1)

    def _storage(self, inst: Instruction, index: int | None = None) -> str:
        """In a one-block kernel, a value the phases hand on that is no output lives in
        shared memory (a 0-d one as one element)."""
        if index is None and id(inst) in self.out_names:
            return self.out_names[id(inst)]
        if not getattr(self, "one_block", False):
            raise UnsupportedOpError(
                f"the cuda backend keeps no array of {inst.name} ({inst.opcode}) inside this "
                "kernel unless it is the kernel's output", op=inst.opcode,
                source_file=inst.metadata.source_file or None,
                source_line=inst.metadata.source_line or None)
        shape = inst.shape if index is None else inst.shape.elements[index]
        size = max(np.dtype(shape.dtype).itemsize, 4) * prod(shape.dims)
        if self.shared_bytes + size > SHARED_BUDGET:
            raise UnsupportedOpError(
                f"the cuda backend keeps {inst.name} ({inst.opcode}, {shape}) for the kernel's "
                "later phases in shared memory, and it does not fit", op=inst.opcode,
                source_file=inst.metadata.source_file or None,
                source_line=inst.metadata.source_line or None)
        var = self._shared(inst.name if index is None else f"{inst.name}_{index}",
                           shape.dims or (1,), shape.dtype)
        if not shape.dims:
            self.scalar_arrays.add(var)
        return var

    def _element(self, array: str, idx: tuple[str, ...]) -> str:
        if array in self.scalar_arrays:
            return f"{array}[0]"
        return super()._element(array, idx)

    def _store(self, array: str, idx, value: str) -> None:
        super()._store(array, ("0",) if array in self.scalar_arrays else idx, value)

    def _emit_scatter(self, inst):
        self.w.line("if tid == 0:  # the updates in order, as np.add.at applies them")
        self.open()
        self.serial += 1
        super()._emit_scatter(inst)
        self.serial -= 1
        self.close(1)
        self.w.line("cuda.syncthreads()  # the phase is written before it is read")

    def loop_nest(self, dims, parallel: bool, sums=()) -> tuple[str, ...]:
        """One block-stride loop over the flattened `dims` (one thread per element), or the
        CPU's loops where the work must stay on one thread."""
        if getattr(self, "serial", 1) or not dims or sums:
            return super().loop_nest(dims, False, sums)
        flat = self._strided(prod(dims), "tid", self.threads)
        self.scopes[-1].extra = len(dims) - 1  # type: ignore[attr-defined]
        return self._unravel(flat, dims)

    def close(self, n: int) -> None:
        """Close n of the caller's loops: a block-stride loop stands for several."""
        while n > 0:
            extra = getattr(self.scopes[-1], "extra", 0)
            super().close(1)
            n -= 1 + extra

    # -- products: shared-memory tiles, the epilogue before the store ----------------------

    def _emit_product_cuda(self, dots, reduces):
        """C = A @ B in TILE x TILE tiles of C, one per block at a time (a grid-stride loop
        over the tiles), one element per thread: the block stages a TILE-wide slab of A and
        of B in shared memory, every thread reads TILE of each from there, so each element of
        A and B is read from global memory once per tile instead of once per product. The
        element-wise epilogue runs on the thread's element before it is stored."""
        if len(dots) != 1 or reduces:
            raise UnsupportedOpError("the cuda backend compiles a product fused with "
                                     "element-wise ops only", op="dot")
        (dot,) = dots
        cpu.refuse_float16(dot)
        a, b = dot.operands
        lb, lc = dot.attr("lhs_batch_dims", ()), dot.attr("lhs_contracting_dims", ())
        rb, rc = dot.attr("rhs_batch_dims", ()), dot.attr("rhs_contracting_dims", ())
        lf = [d for d in range(len(a.dims)) if d not in lb and d not in lc]
        rf = [d for d in range(len(b.dims)) if d not in rb and d not in rc]
        if not self._reads_at_kept([dot], dot.dims):
            raise UnsupportedOpError("the cuda backend compiles a product fused with element-wise "
                                     "ops of its shape only", op="dot")
        batch_dims = tuple(a.dims[d] for d in lb)
        m = prod(a.dims[d] for d in lf)
        n = prod(b.dims[d] for d in rf)
        k = prod(a.dims[d] for d in lc)
        T = PRODUCT_TILE
        tiles_m, tiles_n = -(-m // T), -(-n // T)
        tiles = prod(batch_dims) * tiles_m * tiles_n
        self.threads, self.blocks = T * T, max(1, min(MAX_BLOCKS, tiles))
        self.reason = (f"a {m}x{k} by {k}x{n} product"
                       + (f" ({prod(batch_dims)} of them)" if batch_dims else "")
                       + f": {tiles} tiles of {T}x{T} elements of the result, one block of "
                       f"{T * T} threads per tile (one element each), the operands staged "
                       f"in shared memory {T} columns at a time")
        acc_t = np.dtype(dot.dtype)
        a_tile = self._shared("a_tile", (T, T + 1), acc_t)  # +1: no bank conflicts
        b_tile = self._shared("b_tile", (T, T + 1), acc_t)
        self.w.line("tid = cuda.threadIdx.x")
        self.w.line(f"tx = tid % {T}")
        self.w.line(f"ty = tid // {T}")
        tile = self._strided(tiles, "cuda.blockIdx.x", "cuda.gridDim.x")
        self.w.line(f"t = {tile} // {tiles_m * tiles_n}")
        self.w.line(f"i = ({tile} // {tiles_n}) % {tiles_m} * {T} + ty")
        self.w.line(f"j = {tile} % {tiles_n} * {T} + tx")
        bidx = self._unravel("t", batch_dims)
        acc = self.w.fresh("acc")
        self.w.line(f"{acc} = {exprs.literal(0, acc_t)}")
        k0 = self.w.fresh("k0")
        self.w.line(f"for {k0} in range(0, {k}, {T}):")
        self.open()

        def operand_index(x, batch, free, contracting, f_flat, c_flat):
            idx = [""] * len(x.dims)
            for d, i in zip(batch, bidx):
                idx[d] = i
            for d, i in zip(free, self._unravel(f_flat, [x.dims[d] for d in free])):
                idx[d] = i
            for d, i in zip(contracting, self._unravel(c_flat, [x.dims[d] for d in contracting])):
                idx[d] = i
            return tuple(idx)

        for tile_name, x, cond, where in (
                (a_tile, a, f"i < {m} and {k0} + tx < {k}", (lb, lf, lc, "i", f"({k0} + tx)")),
                (b_tile, b, f"{k0} + ty < {k} and j < {n}", (rb, rf, rc, "j", f"({k0} + ty)"))):
            self.w.line(f"if {cond}:")
            self.open()
            v = self.value(x, operand_index(x, *where))
            self.w.line(f"{tile_name}[ty, tx] = {cpu.np_type(acc_t)}({v})")
            self.close(1)
            self.w.line("else:")
            self.w.line(f"    {tile_name}[ty, tx] = {exprs.literal(0, acc_t)}")
        self.w.line("cuda.syncthreads()")
        q = self.w.fresh("q")
        self.w.line(f"for {q} in range({T}):")
        lhs, rhs = f"{a_tile}[ty, {q}]", f"{b_tile}[{q}, tx]"
        if acc_t == np.bool_:
            self.w.line(f"    {acc} = {acc} or ({lhs} and {rhs})")
        elif acc_t.kind in "iu":
            self.w.line(f"    {acc} = {cpu.np_type(acc_t)}({acc} + {lhs} * {rhs})")
        else:
            self.w.line(f"    {acc} = {acc} + {lhs} * {rhs}")
        self.w.line("cuda.syncthreads()  # the tiles are read before the next are staged")
        self.close(1)
        self.w.line(f"if i < {m} and j < {n}:")
        self.open()
        self.row_scalars[id(dot)] = acc
        idx = (bidx + self._unravel("i", [a.dims[d] for d in lf])
               + self._unravel("j", [b.dims[d] for d in rf]))
        for o in self.outputs:
            self.w.comment(o)
            self._store(self.out_names[id(o)], idx, self.value(o, idx))
        self.close(1)
        self.close(1)

    # -- columns: one thread per kept element ------------------------------------------------

    def _column_plan(self, reduces):
        """(operand dims, reduced axes) when every reduce reduces the same axes of the same
        shape and everything computed from them reads them at the thread's own element
        (an element-wise chain of the kept shape, ending in outputs of that shape): a value
        of another thread is not in this thread's registers. None otherwise."""
        shapes = {(r.operands[0].dims, tuple(sorted(r.attr("dimensions")))) for r in reduces}
        if len(shapes) != 1:
            return None
        ((x_dims, axes),) = shapes
        kept_dims = tuple(n for d, n in enumerate(x_dims) if d not in axes)
        if not self._reads_at_kept(reduces, kept_dims):
            return None
        return x_dims, axes

    def _emit_columns(self):
        """Every reduce of the kernel keeps the same dimensions K of the same operand shape;
        one thread per element of K accumulates over the reduced ones, and writes the
        outputs at that element (those shaped K, read from the reduces' registers)."""
        reduces = self._reduces()
        x_dims, axes = self._column_plan(reduces)
        kept_dims = tuple(n for d, n in enumerate(x_dims) if d not in axes)
        n = prod(kept_dims)
        self.blocks, self.threads, _ = launch_for_loop(n)
        self.reason = (f"one thread per result element ({n}), each looping over the "
                       f"{prod(x_dims) // max(n, 1)} it reduces; neighbouring threads read "
                       "neighbouring elements, so a warp's loads coalesce")
        self.w.line("start = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x")
        self.w.line("step = cuda.gridDim.x * cuda.blockDim.x")
        flat = self._strided(n, "start", "step")
        kidx = self._unravel(flat, kept_dims)
        for inst in reduces:
            self.w.comment(inst)
            values = self._reduce_at(inst, kidx)
            if inst.shape.is_tuple:
                for k, v in enumerate(values):
                    self.row_scalars[(id(inst), k)] = v
            else:
                self.row_scalars[id(inst)] = values[0]
        for o in self.outputs:
            self.w.comment(o)
            self._store(self.out_names[id(o)], kidx, self.value(o, kidx))
        self.close(1)

    def _reduce_at(self, inst, kidx) -> list[str]:
        """The reduce's value(s) at kept index `kidx`, accumulated by this thread alone."""
        operands, inits, reducer = self._reducer_parts(inst)
        x_dims = operands[0].dims
        axes = sorted(inst.attr("dimensions"))
        kept = [d for d in range(len(x_dims)) if d not in axes]
        red_dims = tuple(x_dims[d] for d in axes)
        accs, late = self._identity_start(inst, inits, reducer)
        r = self.w.fresh("r")
        self.w.line(f"for {r} in range({prod(red_dims)}):")
        self.open()
        ridx = self._unravel(r, red_dims)
        full = [""] * len(x_dims)
        for d, i in zip(kept, kidx):
            full[d] = i
        for d, i in zip(axes, ridx):
            full[d] = i
        self._step(inst, reducer, accs, [self.value(o, tuple(full)) for o in operands])
        self.close(1)
        return self._finish(inst, reducer, accs, late)

    def _reads_at_kept(self, reduces, kept_dims) -> bool:
        """Whether everything computed from `reduces` reads them at the element it is at
        (element-wise ops of shape `kept_dims`), and every output has that shape."""
        after = {id(r) for r in reduces}
        for inst in self.comp.instructions:
            if id(inst) in after or not any(id(o) in after for o in inst.operands):
                continue
            after.add(id(inst))
            if not (inst.opcode in ("tuple", "get-tuple-element") or (
                    inst.dims == kept_dims and elementwise_like(inst.opcode))):
                return False
        return all(o.dims == kept_dims for o in self.outputs)


# ----------------------------------------------------------------------------------------------
# The program: every kernel, and the driver that launches them in schedule order.


@dataclass
class CudaProgram:
    module: Module
    source: str
    kernels: dict[str, str]
    launches: dict[str, tuple[int, int]]  # kernel -> (blocks, threads)
    constants: list[Instruction]
    outputs: list[tuple[str, int]]
    num_outputs: int
    kernel_of: dict[str, str]
    arena_bytes: int  # the assignment's temporaries, then the kernels' scratch space
    scratch_offset: int
    scratch_bytes: int


HEADER = '''"""Generated by xla-explorer from HLO module {module}: one Numba CUDA kernel per fusion,
and `run`, which launches them in schedule order with every temporary in one device arena."""
import numpy as np
from numba import cuda
from xla_explorer.runtime.cuda_device import *  # the scalar helpers, for this target
np = kernel_numpy  # noqa: F405  NumPy's names; on a GPU its scalar functions from libdevice
'''


def generate_cuda_program(module: Module, assignment) -> CudaProgram:
    """The source of every CUDA kernel of `module` and of its driver, `run(arena, params...,
    constants..., outputs...)`, where `arena` is the device arena as bytes."""
    from ..passes.buffer_assignment import OUTPUT, PARAMETER, TEMPORARY, buffer_name
    from ..passes.dataflow import is_kernel

    entry, flow, params, constants, out_index, buffer_expr = cpu.driver_inputs(module,
                                                                               assignment)
    scratch_at = _round_up(assignment.peak_bytes, 256)
    scratch = 0
    names: set[str] = set()
    kernels: dict[str, str] = {}
    launches: dict[str, tuple[int, int]] = {}
    kernel_of: dict[str, str] = {}
    sources, driver = [], []

    for inst in entry.instructions:
        if not is_kernel(inst):
            continue
        comp, kind, row = cpu.kernel_computation(module, inst)
        fname = cpu.identifier(inst.name)
        while fname in names:
            fname += "_"
        names.add(fname)
        kernel_of[inst.name] = fname
        k = CudaKernelEmitter(module, comp, fname, kind, row).emit()
        kernels[fname] = k.source
        launches[fname] = (k.blocks, k.threads)
        sources.append(k.source)
        driver.append(f"    # {format_instruction(inst, metadata=False).strip()}")
        outs = []
        for idx in flow.defined[inst.name]:
            key = (inst.name, idx)
            b = assignment.buffer(buffer_name(*key))
            expr = buffer_expr(key)
            if b.category == TEMPORARY:
                offset = assignment.offset(b)
                driver.append(f"    {expr} = arena[{offset}:{offset + b.size}]"
                              f".view({cpu.storage_type(b.shape.dtype)})"
                              f".reshape({cpu.tuple_text(b.shape.dims) if b.shape.dims else '()'})")
            outs.append(expr)
        ins = []
        for o in inst.operands:
            (key,) = flow.points_to[o.name].values()
            ins.append(buffer_expr(key))
        extra = []
        if k.scratch:
            scratch = max(scratch, k.scratch)
            extra = [f"arena[{scratch_at}:{scratch_at + k.scratch}]"]
        blocks = f"cooperative_blocks({k.blocks})" if k.cooperative else str(k.blocks)
        driver.append(f"    {fname}[{blocks}, {k.threads}]({', '.join(ins + outs + extra)})")

    outputs = []
    for key in flow.points_to[entry.root.name].values():
        b = assignment.buffer(buffer_name(*key))
        if b.category == OUTPUT:
            outputs.append(("output", out_index[b.name]))
        elif b.category == PARAMETER:
            outputs.append(("parameter", entry.get(b.instruction).parameter_number))
        else:
            outputs.append(("constant", [c.name for c in constants].index(b.instruction)))
    args = (["arena"] + [f"a{p.parameter_number}" for p in params]
            + [f"c{k}" for k in range(len(constants))] + [f"o{k}" for k in range(len(out_index))])
    driver_src = (f"def run({', '.join(args)}):\n"
                  '    """Launch every kernel in schedule order (asynchronously: the caller '
                  'synchronizes)."""\n'
                  + ("\n".join(driver) or "    pass") + "\n")
    source = HEADER.format(module=module.name) + "\n\n" + "\n\n".join(sources + [driver_src])
    return CudaProgram(module, source, kernels, launches, constants, outputs, len(out_index),
                       kernel_of, scratch_at + scratch, scratch_at, scratch)
