"""Numba CPU code generation: every kernel of a scheduled module becomes one `@njit` function.

A kernel is a fusion (its fused computation) or an op that fused with nothing (a computation of
that one op). Its source is written for reading: named after the kernel, each block commented
with the HLO instruction it computes.

How values are computed, as XLA's elemental IR emitter does: `value(inst, index)` returns a
scalar expression for `inst` at a multi-index, asking its operands for their values at the
indices they map to. Element-wise ops apply their scalar expression (`exprs.scalar_expr`);
broadcast, reshape, transpose, slice, reverse, concatenate, pad and the dynamic slices are index
arithmetic, never materialised arrays. A reduce or a dot is a phase of its own that fills a
small array (or, when it is a kernel output, the output itself) before the values that need it
are computed.

Kernels run in one of two shapes:
  row      every reduction in the kernel reduces the same trailing dimensions of one loop
           space (softmax, layernorm, sum(x + y*z), a loop fusion with no reduction at all):
           one outer loop over the rows (the leading dimensions), in parallel when there are
           enough of them, and inside it one loop over the row per reduction, with its
           accumulator in a register, then one loop that writes the outputs. A row stays in
           cache across its passes. With one row (a full reduction) the inner loops run in
           parallel instead.
  general  anything else (a column sum, reductions over different dimensions, a dot with its
           epilogue): each reduction or dot fills its array in a loop nest of its own, then
           each output is written in a loop over its shape.
"""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from math import prod

import numpy as np

from ..errors import CompileError, UnsupportedOpError, not_compilable
from ..ir.module import Computation, Instruction, Module
from ..ir.ops import Group, elementwise_like, in_group, is_expensive, scan_axis
from ..ir.printer import format_instruction
from ..passes.kinds import fits_rows, is_row_fusion, kernel_kind
from . import exprs, gemm

# Element count from which a loop runs in parallel (prange), and from which it does when the
# kernel computes an expensive op (a transcendental) per element. Starting the threads costs
# tens of microseconds, a call after idle included, which the loop's work must outweigh: a
# loop that computes much per element outweighs it at fewer elements than one bound by memory.
# Set from benchmarks/parallel_threshold.py (docs/performance.md).
PARALLEL_THRESHOLD = 1 << 20
PARALLEL_THRESHOLD_EXPENSIVE = 1 << 19

# Multiply-adds from which threads share a product's rows: below it a product on one core
# takes no longer than starting the threads costs (docs/performance.md).
GEMM_PARALLEL_MACS = 1 << 22
# Threads a product can use (see _emit_product).
GEMM_WORKERS = 64

# Bytes in a cache line. The kernels' scratch space (a product's packed B, split between the
# threads) starts on one, in an arena that starts on one (runtime/executable.py).
CACHE_LINE = 64

# Blocks a parallel loop is cut into, which its threads claim one at a time (see
# _parallel_loop): enough that a thread the machine slows down holds up the others for at most
# a block, few enough that claiming them costs nothing (one atomic add each).
PARALLEL_BLOCKS = 64

# Elements per float32 block of a row's float32 sum (see _blocked_sum).
SUM_BLOCK = 128

# A row kernel fetches the next row ahead (see _prefetch_rows) when the arrays it streams
# through exceed this, the last-level cache (docs/machine-facts.md): below it they come from
# cache on every call but the first, and the prefetches only cost. And only when its rows
# are no longer than PREFETCH_ROW_BYTES, so that this row and the next of each array fit in
# L1 together (docs/performance.md).
PREFETCH_MIN_BYTES = 32 << 20
PREFETCH_ROW_BYTES = 4096

# fastmath flags of every kernel: none, so that element-wise arithmetic rounds as NumPy's
# does. Each flag changes answers: reassoc made x + y - y into x and (x * 2) * 0 into 0,
# contract x * x - y * y into a fused multiply-add (1, not 0, at x = y = 4097 in float32),
# nsz and afn pow(-0.0, -0.5) into -inf, nnan and ninf NaN and Inf tests, arcp a float32
# x / sqrt(y) into a hardware estimate. A reduction's accumulation, whose order is
# unspecified, carries reassoc on its own instruction (scalar.add_reassoc), which is what
# lets its loop vectorize. docs/floating-point.md has the details.
FASTMATH: set[str] = set()


def identifier(name: str) -> str:
    """A Python identifier for an HLO name: `add_reduce_fusion.12` -> `add_reduce_fusion_12`."""
    out = re.sub(r"\W", "_", name)
    if not out or out[0].isdigit() or keyword.iskeyword(out):
        out = "k_" + out
    return out


def np_type(dtype) -> str:
    """`np.float32`, `np.bool_`: the NumPy scalar type a value is computed in (a float16 in
    a float32, see exprs.np_type)."""
    return exprs.np_type(dtype)


# -- float16 ------------------------------------------------------------------------------
# Numba cannot load or store float16: a float16 buffer a kernel reads or writes (a parameter,
# an output, a temporary of the arena) is passed as its bits, a uint16 view, and each element
# is converted on load (f16_load) and rounded on store (f16_bits); in between it is a float32.

_F16 = np.dtype(np.float16)


def storage_type(dtype) -> str:
    """The NumPy type a buffer of `dtype` is viewed as when a kernel receives it."""
    return "np.uint16" if np.dtype(dtype) == _F16 else np_type(dtype)


@dataclass
class KernelSource:
    """One kernel's generated function: its name, its source, how it is called."""

    name: str  # the function's name in the generated file
    instruction: str  # the entry instruction it computes
    source: str
    num_inputs: int
    num_outputs: int
    parallel: bool
    gemm: bool = False  # calls codegen/gemm.py's product
    workspace: int = 0  # bytes of scratch the kernel takes as its last argument, `work`
    claims_blocks: bool = False  # has a parallel loop whose blocks it claims (parallel.py)
    # Its outputs (by position) that should start on a cache line: those a product writes,
    # tile by tile, once per KC rows of B (see `Program.line_outputs`).
    line_outputs: tuple[int, ...] = ()


@dataclass
class _Scope:
    """One level of indentation in a kernel: the values computed at it, the lines that follow
    it once it is closed, and whether it closes with the level inside it (the levels of one
    parallel loop, see `_parallel_loop`)."""

    values: dict = field(default_factory=dict)
    after: list = field(default_factory=list)
    with_inner: bool = False


class _Writer:
    """Lines of Python with indentation and fresh local names."""

    def __init__(self):
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.top = 0

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{identifier(base)}_{self.counter}"

    def line(self, text: str) -> None:
        if self.depth == 1:
            self.top = len(self.lines)  # the last line at the top level: a loop's, once inside
        self.lines.append("    " * self.depth + text)

    def insert_top(self, text: str) -> None:
        """A line at the top level, before the top-level line that opens the current loop."""
        self.lines.insert(self.top, "    " + text)
        self.top += 1

    def comment(self, inst: Instruction) -> None:
        text = format_instruction(inst, metadata=False).strip()
        self.line(f"# {text}")


class KernelEmitter:
    """Generates the function for one kernel computation."""

    def __init__(self, module: Module, comp: Computation, name: str, kind: str, row: bool):
        self.module = module
        comp = _tuple_rooted(comp)
        self.comp = comp
        self.name = name
        self.kind = kind
        self.row_config = row
        self.w = _Writer()
        self.scopes: list[_Scope] = [_Scope()]
        root = comp.root
        self.outputs = list(root.operands) if root.opcode == "tuple" else [root]
        self.params = comp.parameters
        self.out_names = {}
        for k, o in enumerate(self.outputs):
            self.out_names.setdefault(id(o), f"out{k}")
        # The float16 arrays the kernel is given, as bits (see storage_type).
        self.half_arrays = ({f"p{p.parameter_number}" for p in self.params if p.dtype == _F16}
                            | {f"out{k}" for k, o in enumerate(self.outputs) if o.dtype == _F16})
        # Materialised values: reduce / dot results, as an array name or a per-row scalar.
        self.stored: dict[int, str] = {}
        self.row_scalars: dict[int, str] = {}
        self.parallel = False
        self.claims_blocks = False  # a loop claims its blocks through codegen/parallel.py
        self.parallel_from = (PARALLEL_THRESHOLD_EXPENSIVE
                              if any(is_expensive(i) for i in comp.instructions)
                              else PARALLEL_THRESHOLD)
        self.partial: dict[str, str] = {}  # accumulator -> its block's partial sum (in parallel)
        self.uses_gemm = False  # calls codegen/gemm.py
        self.workspace = 0  # bytes of scratch (packed B) the kernel needs
        self.epilogue_done = False  # the outputs were written inside the product's row loop
        self.line_outputs: list[int] = []  # outputs a product writes (KernelSource.line_outputs)
        # Row kernels: expensive values an earlier pass over the row computed, kept in a
        # row-sized array for the later passes ({id: array}); which are written so far; the
        # index of the current pass's element (row, then position in the row).
        self.stash: dict[int, str] = {}
        self.stashed: set[int] = set()
        self.stashed_now: set[int] = set()
        self.row_index: tuple[str, ...] | None = None
        self.row_tail: tuple[str, ...] = ()
        # 0-d arrays read inside loops, as scalars read before them ({array: local}, see
        # `_element`).
        self.scalar_reads: dict[str, str] = {}

    # -- scalar values at an index --------------------------------------------------------

    def lookup(self, key):
        for scope in reversed(self.scopes):
            if key in scope.values:
                return scope.values[key]
        return None

    def value(self, inst: Instruction, idx: tuple[str, ...]) -> str:
        key = (id(inst), idx)
        found = self.lookup(key)
        if found is not None:
            return found
        expr = self._expr(inst, idx)
        if re.fullmatch(r"[\w.]+|-?\d+(\.\d*)?", expr):
            return expr  # a name or a number: nothing to keep
        var = self.w.fresh(inst.name)
        self.w.line(f"{var} = {expr}")
        self.scopes[-1].values[key] = var
        if id(inst) in self.stash and id(inst) not in self.stashed and idx == self.row_index:
            buf, tidx = self.stash[id(inst)], idx[len(idx) - len(self.row_tail):]
            self.w.line(f"{_index(buf, tidx)} = {var}  # kept for the row's later passes")
            self.stashed_now.add(id(inst))
        return var

    def _expr(self, inst: Instruction, idx: tuple[str, ...]) -> str:
        op = inst.opcode
        if id(inst) in self.stashed and idx == self.row_index:
            return _index(self.stash[id(inst)], idx[len(idx) - len(self.row_tail):])
        if id(inst) in self.row_scalars:
            return self.row_scalars[id(inst)]
        if id(inst) in self.stored:
            return self._element(self.stored[id(inst)], idx)
        if op == "parameter":
            return self._element(f"p{inst.parameter_number}", idx)
        if op == "constant":
            return exprs.literal(inst.literal.reshape(-1)[0], inst.dtype)
        if op == "iota":
            ramp = f"{np_type(inst.dtype)}({idx[inst.attr('iota_dimension')]})"
            return f"f16_round({ramp})" if inst.dtype == _F16 else ramp
        if elementwise_like(op):
            # clamp's bounds may be scalars (0-d) beside an array x
            return exprs.scalar_expr(inst, [self.value(o, idx if o.dims or not inst.dims else ())
                                            for o in inst.operands])
        if in_group(op, Group.DATA_MOVEMENT):
            return self._data_movement(inst, idx)
        if op == "get-tuple-element":
            key = (id(inst.operands[0]), inst.attr("index"))
            if key in self.row_scalars:
                return self.row_scalars[key]
            if key in self.stored:
                return self._element(self.stored[key], idx)
        raise UnsupportedOpError(f"the CPU backend cannot compute {inst.name} ({op}) inside a "
                                 "kernel", op=op, source_file=inst.metadata.source_file or None,
                                 source_line=inst.metadata.source_line or None)

    def _element(self, array: str, idx: tuple[str, ...]) -> str:
        """`array[idx]`, an array the kernel reads (a parameter, a reduce's or dot's result).
        A 0-d one is read once, into a scalar at the kernel's top level, before the loop being
        written: Numba hands a 0-d array to a prange body as a scalar, where `a[()]` fails to
        compile (`getitem(float64, Tuple())`), as in x.std() beside x.argmax()."""
        if idx or self.w.depth == 1:
            return self._load(array, _index(array, idx))
        if array not in self.scalar_reads:
            var = self.w.fresh(f"{array}_value")
            self.w.insert_top(f"{var} = {self._load(array, f'{array}[()]')}  # a 0-d array, "
                              "read before the loop")
            self.scalar_reads[array] = var
        return self.scalar_reads[array]

    def _load(self, array: str, element: str) -> str:
        return f"f16_load({element})" if array in self.half_arrays else element

    def _store(self, array: str, idx, value: str) -> None:
        """`array[idx] = value`, rounded to float16 bits for a float16 array."""
        if array in self.half_arrays:
            value = f"f16_bits({value})"
        self.w.line(f"{_index(array, idx)} = {value}")

    def _store_result(self, array: str, idx, value: str, dtype) -> None:
        """`array[idx] = value`, where value is an op's float32 result of type `dtype`: a
        float16 one is rounded, to its bits in a float16 array, to float16 precision in a
        float32 temporary (which later reads take as a float16 value)."""
        if np.dtype(dtype) == _F16 and array not in self.half_arrays:
            value = f"f16_round({value})"
        self._store(array, idx, value)

    def _copy(self, dst: str, dst_idx, src: str, src_idx) -> None:
        """`dst[dst_idx] = src[src_idx]`: the bits as they are between two float16 arrays
        (a NaN's payload kept), else converted as the two are stored."""
        element = _index(src, src_idx)
        if (dst in self.half_arrays) == (src in self.half_arrays):
            self.w.line(f"{_index(dst, dst_idx)} = {element}")
        else:
            self._store(dst, dst_idx, self._load(src, element))

    def _data_movement(self, inst: Instruction, idx: tuple[str, ...]) -> str:
        op, x = inst.opcode, inst.operands[0]
        if op in ("copy",) or (op in ("reshape", "bitcast") and x.dims == inst.dims):
            return self.value(x, idx)
        if op == "broadcast":
            return self.value(x, tuple(idx[d] for d in inst.attr("dimensions")))
        if op in ("reshape", "bitcast"):
            return self.value(x, self._reindex(idx, inst.dims, x.dims))
        if op == "transpose":
            perm = inst.attr("dimensions")
            src = [""] * len(perm)
            for k, d in enumerate(perm):
                src[d] = idx[k]
            return self.value(x, tuple(src))
        if op == "slice":
            return self.value(x, tuple(_affine(i, a, c) for i, (a, _, c)
                                       in zip(idx, inst.attr("slice"))))
        if op == "reverse":
            rev = set(inst.attr("dimensions"))
            return self.value(x, tuple(f"({n - 1} - {i})" if d in rev else i
                                       for d, (i, n) in enumerate(zip(idx, x.dims))))
        if op == "concatenate":
            return self._concatenate(inst, idx)
        if op == "pad":
            return self._pad(inst, idx)
        if op == "dynamic-slice":
            starts = self._starts(inst.operands[1:], x.dims, inst.dims)
            return self.value(x, tuple(f"({s} + {i})" for s, i in zip(starts, idx)))
        if op == "dynamic-update-slice":
            return self._dynamic_update_slice(inst, idx)
        if op == "gather":
            return self._gather(inst, idx)
        raise UnsupportedOpError(f"the CPU backend has no index arithmetic for {op}", op=op)

    # -- gather and scatter ----------------------------------------------------

    def _index_vector_at(self, indices, ivd, batch_idx, k) -> str:
        """Element k of the index vector at batch position `batch_idx` of `indices`, as an
        int64 (the indices' other dimensions are the batch, in order)."""
        sub = list(batch_idx)
        if ivd < indices.shape.rank:
            sub.insert(ivd, str(k))
        return f"np.int64({self.value(indices, tuple(sub))})"

    def _gather(self, inst, idx):
        """XLA's gather as index arithmetic: read the start indices at the output's batch
        position, clamp each into [0, dim - slice_size] (as XLA does), add the offset."""
        x, indices = inst.operands
        offset_dims = tuple(inst.attr("offset_dims"))
        collapsed = set(inst.attr("collapsed_slice_dims", ()))
        start_map = tuple(inst.attr("start_index_map"))
        sizes = tuple(inst.attr("slice_sizes"))
        ivd = inst.attr("index_vector_dim")
        batch = tuple(i for d, i in enumerate(idx) if d not in offset_dims)
        offsets = iter(i for d, i in enumerate(idx) if d in offset_dims)
        src = []
        for d, n in enumerate(x.dims):
            parts = []
            if d in start_map:
                start = self._index_vector_at(indices, ivd, batch, start_map.index(d))
                var = self.w.fresh("start")
                self.w.line(f"{var} = min(max({start}, 0), {n - sizes[d]})")
                parts.append(var)
            if d not in collapsed:
                parts.append(next(offsets))
            src.append("(" + " + ".join(parts) + ")" if parts else "0")
        return self.value(x, tuple(src))

    def _emit_scatter(self, inst):
        """XLA's scatter as a loop of its own: the operand copied into the output (nothing
        to do in effect when buffer assignment let the output take the operand's buffer),
        then one sequential loop over the updates applying the combiner, so duplicate
        indices combine in order as np.add.at does. An update whose window would leave the
        operand is skipped, as XLA does."""
        x, indices, upd = inst.operands
        out = self._storage(inst)
        self.stored[id(inst)] = out
        self.w.comment(inst)
        self.w.line("# the operand first (a copy onto itself when written in place)")
        copy_idx = self.loop_nest(x.dims, False)
        if x.opcode == "parameter":
            self._copy(out, copy_idx, f"p{x.parameter_number}", copy_idx)
        else:
            self._store(out, copy_idx, self.value(x, copy_idx))
        self.close(len(x.dims))
        window = tuple(inst.attr("update_window_dims", ()))
        inserted = set(inst.attr("inserted_window_dims", ()))
        to_operand = tuple(inst.attr("scatter_dims_to_operand_dims"))
        ivd = inst.attr("index_vector_dim")
        self.w.line("# then every update, in order")
        uidx = self.loop_nest(upd.dims, False)
        batch = tuple(i for d, i in enumerate(uidx) if d not in window)
        operand_window = [d for d in range(x.shape.rank) if d not in inserted]
        target, conds = [], []
        for d, n in enumerate(x.dims):
            start = "0"
            if d in to_operand:
                start = self.w.fresh("start")
                at = self._index_vector_at(indices, ivd, batch, to_operand.index(d))
                self.w.line(f"{start} = {at}")
            size = 1
            if d in operand_window:
                w = window[operand_window.index(d)]
                size = upd.dims[w]
                target.append(f"{start} + {uidx[w]}")
            else:
                target.append(start)
            if d in to_operand:
                conds.append(f"0 <= {start} <= {n - size}")
        self.w.line(f"if {' and '.join(conds) or 'True'}:  # a window that leaves the operand is "
                    "skipped")
        self.open()
        old = self.w.fresh("old")
        self.w.line(f"{old} = {self._load(out, _index(out, tuple(target)))}")
        combiner = self.module.computation(inst.attr("to_apply"))
        (new,) = self._combine(combiner, [old], [self.value(upd, uidx)], inst, inst.dtype)
        # float16 rounds after each update, as np.add.at does: duplicates combine one by one
        self._store_result(out, tuple(target), new, inst.dtype)
        self.close(1)
        self.close(len(upd.dims))

    def _reindex(self, idx, out_dims, in_dims) -> tuple[str, ...]:
        """The operand index of a row-major reshape: linearise, then split."""
        lin = self.w.fresh("flat")
        terms = []
        stride = 1
        for i, n in reversed(list(zip(idx, out_dims))):
            terms.append(i if stride == 1 else f"{i} * {stride}")
            stride *= n
        self.w.line(f"{lin} = {' + '.join(reversed(terms)) or '0'}")
        out = []
        stride = prod(in_dims)
        for n in in_dims:
            stride //= n
            out.append(f"(({lin} // {stride}) % {n})" if stride > 1 else f"({lin} % {n})")
        return tuple(out)

    def _concatenate(self, inst, idx):
        (axis,) = inst.attr("dimensions")
        pieces, offset = [], 0
        for o in inst.operands:
            n = o.dims[axis]
            i = idx[axis]
            clamped = f"min(max({i} - {offset}, 0), {n - 1})"
            sub = tuple(clamped if d == axis else j for d, j in enumerate(idx))
            pieces.append((offset + n, self.value(o, sub)))
            offset += n
        expr = pieces[-1][1]
        for end, v in reversed(pieces[:-1]):
            expr = f"({v} if {idx[axis]} < {end} else {expr})"
        return expr

    def _pad(self, inst, idx):
        x, pad_value = inst.operands
        conds, src = [], []
        for i, n, (lo, _, interior) in zip(idx, x.dims, inst.attr("padding")):
            step = interior + 1
            rel = f"({i} - {lo})"
            conds.append(f"{rel} >= 0 and {rel} % {step} == 0 and {rel} // {step} < {n}")
            src.append(f"min(max({rel} // {step}, 0), {n - 1})")
        inside = self.value(x, tuple(src))
        fill = self.value(pad_value, ())
        return f"({inside} if ({' and '.join(conds) or 'True'}) else {fill})"

    def _starts(self, operands, full, window) -> list[str]:
        """XLA clamps dynamic start indices so the window stays inside the operand."""
        out = []
        for s, n, k in zip(operands, full, window):
            v = self.value(s, ())
            out.append(f"min(max(np.int64({v}), 0), {n - k})")
        return out

    def _dynamic_update_slice(self, inst, idx):
        x, update = inst.operands[:2]
        starts = self._starts(inst.operands[2:], x.dims, update.dims)
        names = []
        for s in starts:
            var = self.w.fresh("start")
            self.w.line(f"{var} = {s}")
            names.append(var)
        conds = [f"{s} <= {i} < {s} + {k}" for s, i, k in zip(names, idx, update.dims)]
        sub = tuple(f"min(max({i} - {s}, 0), {k - 1})" for s, i, k in zip(names, idx, update.dims))
        new = self.value(update, sub)
        old = self.value(x, idx)
        return f"({new} if ({' and '.join(conds) or 'True'}) else {old})"

    # -- loops ---------------------------------------------------------------------------

    def loop_nest(self, dims, parallel: bool, sums=()) -> tuple[str, ...]:
        """Open loops over `dims` (row-major); the caller closes them with `close(len)`. If
        `parallel`, the threads share the first loop's range in blocks (`_parallel_loop`),
        and each accumulator in `sums` is added to in the nest as the name
        `self.partial[acc]`."""
        idx = []
        for k, n in enumerate(dims):
            if parallel and k == 0:
                idx.append(self._parallel_loop(n, sums=sums))
                continue
            i = self.w.fresh("i")
            self.w.line(f"for {i} in range({n}):")
            self.open()
            idx.append(i)
        return tuple(idx)

    def open(self, with_inner: bool = False, after=()) -> None:
        """A new level of indentation, after a line that opens one."""
        self.w.depth += 1
        self.scopes.append(_Scope(after=list(after), with_inner=with_inner))

    def close(self, n: int) -> None:
        """Close n loops (with the levels that close with each), writing what follows each."""
        for _ in range(n):
            self._close_level()
            while self.scopes[-1].with_inner:
                self._close_level()

    def _close_level(self) -> None:
        self.w.depth -= 1
        for line in self.scopes.pop().after:
            self.w.line(line)

    def _parallel_loop(self, n: int, setup=None, sums=(), index: str = "i") -> str:
        """Open a loop over range(n) whose blocks the threads claim one at a time until
        none are left (codegen/parallel.py), so that a thread the machine slows down does
        fewer of them instead of holding up the others; returns its index. The loop is cut
        into PARALLEL_BLOCKS blocks whatever the thread count, so which thread runs a block
        changes nothing in the result. setup() writes what each thread needs before its
        first block (row-sized arrays); `sums` are accumulators [(name, dtype)] the loop adds
        to: each block sums into a partial of its own, `self.partial[name]`, and the
        partials are added to the accumulator in block order after the loop."""
        blocks = min(n, PARALLEL_BLOCKS)
        claimed, worker = self.w.fresh("claimed"), self.w.fresh("worker")
        block, i = self.w.fresh("block"), self.w.fresh(index)
        parts = {acc: self.w.fresh("partials") for acc, _ in sums}
        for acc, dtype in sums:
            self.w.line(f"{parts[acc]} = np.empty({blocks}, dtype={np_type(dtype)})")
        self.claims_blocks = True
        self.w.line(f"{claimed} = block_counter()  # counts the blocks claimed, of {blocks}")
        self.w.line(f"for {worker} in prange(threads()):  # each thread takes the next block "
                    "until none are left")
        b = self.w.fresh("b")
        self.open(with_inner=True, after=[
            line for acc, _ in sums for line in (f"for {b} in range({blocks}):",
                                                 f"    {acc} += {parts[acc]}[{b}]")])
        self.parallel = True
        if setup is not None:
            setup()
        self.w.line("while True:")
        self.open(with_inner=True)
        self.w.line(f"{block} = next_block({claimed}, {blocks})")
        self.w.line(f"if {block} >= {blocks}:")
        self.w.line("    break")
        for acc, dtype in sums:
            self.partial[acc] = self.w.fresh("partial")
            self.w.line(f"{self.partial[acc]} = {exprs.literal(0, dtype)}")
        span = f"{block} * {n} // {blocks}, ({block} + 1) * {n} // {blocks}"
        if blocks == n:
            span = f"{block}, {block} + 1"
        self.w.line(f"for {i} in range({span}):")
        self.open(after=[f"{parts[acc]}[{block}] = {self.partial[acc]}" for acc, _ in sums])
        self.w.line(f"{i} = nonnegative({i})  # so that indexing with it skips NumPy's "
                    "wraparound, and vectorizes")
        return i

    # -- phases --------------------------------------------------------------------------

    def emit(self) -> KernelSource:
        args = [f"p{p.parameter_number}" for p in sorted(self.params, key=lambda p: p.parameter_number)]
        outs = [f"out{k}" for k in range(len(self.outputs))]
        plan = row_plan(self.comp, self.outputs)
        if plan is not None:
            self._emit_rows(*plan)
        else:
            self._emit_general()
        work = ["work"] if self.workspace else []
        header = [f"@njit(cache=True, fastmath=FASTMATH, error_model=\"numpy\", "
                  f"parallel={self.parallel})",
                  f"def {self.name}({', '.join(args + outs + work)}):"]
        if plan is None:
            shape = "loop nests, phase by phase"
        elif plan[0]:
            shape = f"{' x '.join(map(str, plan[0]))} rows of {list(plan[1])}"
        else:
            shape = "one row"
        what = "row fusion" if self.row_config else self.kind
        doc = (f'    """{what} kernel, the fused computation {self.comp.name}: runs as '
               f'{shape}."""')
        body = self.w.lines or ["    pass"]
        return KernelSource(self.name, self.comp.name, "\n".join(header + [doc] + body) + "\n",
                            len(args), len(outs), self.parallel, self.uses_gemm,
                            self.workspace, self.claims_blocks, tuple(self.line_outputs))

    def _reduces(self):
        return [i for i in self.comp.instructions
                if i.opcode in ("reduce", "dot") or i.opcode in PHASE_OPS]

    def _emit_general(self):
        for inst in self.comp.instructions:
            if inst.opcode == "scatter":
                self._emit_scatter(inst)
        for inst in self._reduces():
            if inst.opcode == "dot":
                self._emit_dot(inst)
            elif inst.opcode in PHASE_OPS:
                PHASE_OPS[inst.opcode](self, inst)
            else:
                self._emit_reduce_general(inst)
        if not self.epilogue_done:
            self._emit_outputs(self.outputs, parallel_ok=True)

    def _emit_outputs(self, outputs, parallel_ok: bool):
        """Write every output not already written by its own phase, one loop per shape."""
        by_shape: dict[tuple, list] = {}
        for o in outputs:
            if not self._written(o):
                by_shape.setdefault(o.dims, []).append(o)
        for dims, group in by_shape.items():
            idx = self.loop_nest(dims, parallel_ok and prod(dims) >= self.parallel_from)
            for o in group:
                self.w.comment(o)
                self._store(self.out_names[id(o)], idx, self.value(o, idx))
            self.close(len(dims))

    def _written(self, o) -> bool:
        """A reduce or dot output writes itself in its phase."""
        return id(o) in self.stored and self.stored[id(o)] == self.out_names.get(id(o))

    def _element_storage(self, inst: Instruction, k: int, needed: bool) -> str | None:
        """Where element k of a tuple-shaped reduce goes: the output that is its
        get-tuple-element, else a new array if anything reads it (or if `needed`), else
        nowhere (None)."""
        gtes = [i for i in self.comp.instructions if i.opcode == "get-tuple-element"
                and i.operands[0] is inst and i.attr("index") == k]
        out = next((self.out_names[id(g)] for g in gtes if id(g) in self.out_names), None)
        if out is None and (gtes or needed):
            out = self._storage(inst, k)
        if out is not None:
            self.stored[(id(inst), k)] = out
            for g in gtes:
                if self.out_names.get(id(g)) == out:
                    self.stored[id(g)] = out  # written in the reduce's phase (`_written`)
        return out

    def _storage(self, inst: Instruction, index: int | None = None) -> str:
        """Where a materialised value goes: the output it is, or a new array."""
        target = inst if index is None else None
        if target is not None and id(target) in self.out_names:
            return self.out_names[id(target)]
        shape = inst.shape if index is None else inst.shape.elements[index]
        var = self.w.fresh(inst.name if index is None else f"{inst.name}_{index}")
        self.w.line(f"{var} = np.empty({tuple_text(shape.dims)}, dtype={np_type(shape.dtype)})")
        return var

    def _emit_dot(self, inst: Instruction):
        refuse_float16(inst)
        self.w.comment(inst)
        a, b = inst.operands
        if not (isinstance(a, Instruction) and a.opcode == "parameter"
                and b.opcode == "parameter"):
            raise CompileError(f"{inst.name}: a dot reads its operands from memory; "
                               "nothing may be fused into them", op="dot")
        only = self.outputs[0] if len(self.outputs) == 1 else None
        if id(inst) not in self.out_names and only is not None and only.shape == inst.shape:
            # The epilogue reads each product element once where it writes the result: the
            # product goes into the output, and the epilogue runs over it in place.
            out = self.out_names[id(only)]
        else:
            out = self._storage(inst)
        self.stored[id(inst)] = out
        lb, lc = inst.attr("lhs_batch_dims", ()), inst.attr("lhs_contracting_dims", ())
        rb, rc = inst.attr("rhs_batch_dims", ()), inst.attr("rhs_contracting_dims", ())
        lf = [d for d in range(len(a.dims)) if d not in lb and d not in lc]
        rf = [d for d in range(len(b.dims)) if d not in rb and d not in rc]
        batch = prod(a.dims[d] for d in lb)
        m = prod(a.dims[d] for d in lf)
        k = prod(a.dims[d] for d in lc)
        n = prod(b.dims[d] for d in rf)
        pa, pb = f"p{a.parameter_number}", f"p{b.parameter_number}"
        float_dot = np.dtype(inst.dtype).kind == "f" and np.dtype(a.dtype) == np.dtype(inst.dtype)
        plain = not lb and not rb and len(a.dims) == 2 and len(b.dims) == 2
        la, rb_ = self.w.fresh("lhs"), self.w.fresh("rhs")
        # As (batch, m, k) and (batch, k, n) arrays, copied only where the layout needs it: an
        # operand whose contracting dimensions come first (a) or last (b), as in q @ k.T, is
        # read as the transpose of the parameter, which the product packs as it is.
        self.w.line(f"{la} = {_operand(pa, lb, lf, lc, batch, m, k, plain)}")
        self.w.line(f"{rb_} = {_operand(pb, rb, rc, rf, batch, k, n, plain)}")
        if float_dot:
            self._emit_tiled_product(inst, la, rb_, out, plain, batch, m, n, k)
            return
        res = self.w.fresh("product")
        t = self.w.fresh("t")
        i, j, q = self.w.fresh("i"), self.w.fresh("j"), self.w.fresh("k")
        acc = self.w.fresh("acc")
        lhs, rhs = (f"{la}[{i}, {q}]", f"{rb_}[{q}, {j}]") if plain else \
            (f"{la}[{t}, {i}, {q}]", f"{rb_}[{t}, {q}, {j}]")
        self.w.line(f"{res} = {out}.reshape(({batch}, {m}, {n}))")
        self.w.line(f"for {t} in range({batch}):")
        self.w.line(f"    for {i} in range({m}):")
        self.w.line(f"        for {j} in range({n}):")
        self.w.line(f"            {acc} = {exprs.literal(0, inst.dtype)}")
        self.w.line(f"            for {q} in range({k}):")
        if inst.dtype == np.bool_:
            self.w.line(f"                {acc} = {acc} or ({lhs} and {rhs})")
        else:
            self.w.line(f"                {acc} = {np_type(inst.dtype)}({acc} + {lhs} * {rhs})")
        self.w.line(f"            {res}[{t}, {i}, {j}] = {acc}")

    def _emit_tiled_product(self, inst, lhs, rhs, out, plain, batch, m, n, k):
        """C = A @ B by codegen/gemm.py's register-tiled product: B packed into panels, then
        C in blocks the threads claim, when the product is big enough to share. A plain
        product whose epilogue is element-wise runs the epilogue in the same loop, on the
        block the thread has just made, while it is in cache."""
        self.uses_gemm = True
        self.line_outputs += [k for k, o in enumerate(self.outputs) if self.out_names[id(o)] == out]
        size = gemm.packed_b_size(k, n, inst.dtype)
        self.workspace = max(self.workspace, _whole_lines(max(size, 1)))
        packed = self.w.fresh("packed")
        pack = "pack_b_parallel" if k * n >= PARALLEL_THRESHOLD else "pack_b"
        parallel = m * n * k >= GEMM_PARALLEL_MACS and m > gemm.MR
        if plain:
            self.w.line(f"{packed} = packed_b({rhs}, work)")
            self._emit_product(lhs, rhs, packed, out, m, parallel, pack,
                               epilogue=self._epilogue_in_rows(inst) if parallel else None)
            return
        res, t = self.w.fresh("product"), self.w.fresh("t")
        self.w.line(f"{res} = {out}.reshape(({batch}, {m}, {n}))")
        self.w.line(f"{packed} = packed_b({rhs}[0], work)")
        self.w.line(f"for {t} in range({batch}):")
        self.w.depth += 1
        self._emit_product(f"{lhs}[{t}]", f"{rhs}[{t}]", packed, f"{res}[{t}]", m, parallel,
                           pack, epilogue=None)
        self.w.depth -= 1

    def _emit_product(self, lhs, rhs, packed, out, m, parallel, pack, epilogue):
        """C = A @ B: B packed into `packed` (by `pack` on this thread, or by the threads of
        the loop that shares the product, each its own columns, if `parallel`), then C."""
        if not parallel:
            self.w.line(f"{pack}({rhs}, {packed})  # B in panels of the register tile's width")
            self.w.line(f"product_rows({lhs}, {packed}, {out}, 0, {m})")
            return
        # prange over more iterations than there are threads: each iteration claims blocks
        # until none are left, so the first one on each thread does the work and the rest
        # find nothing. The source stays the same whatever the thread count.
        claimed, s = self.w.fresh("claimed"), self.w.fresh("s")
        r0, r1, c0, c1 = (self.w.fresh(v) for v in ("r0", "r1", "c0", "c1"))
        self.w.line(f"{claimed} = claims({rhs})  # B's columns in a group per thread; the "
                    "rows of C and of B handed out in each")
        self.w.line(f"for {s} in prange({GEMM_WORKERS}):  # each thread takes blocks of C "
                    "until none are left")
        self.open(with_inner=True)
        self.parallel = True
        self.w.line("while True:")
        self.open()
        self.w.line(f"{r0}, {r1}, {c0}, {c1} = next_product_block({rhs}, {packed}, {claimed}, "
                    f"{m})  # its own columns first; B's panels packed when first reached")
        self.w.line(f"if {r0} == {r1}:")
        self.w.line("    break")
        self.w.line(f"product_block({lhs}, {packed}, {out}, {r0}, {r1}, {c0}, {c1})")
        if epilogue:
            i, j = self.w.fresh("i"), self.w.fresh("j")
            # The columns counted unsigned: Numba wraps a signed index that may be negative,
            # and a loop from a start it cannot see is not negative stays scalar.
            self.w.line(f"for {i} in range({r0}, {r1}):  # the epilogue, on this block")
            self.open()
            self.w.line(f"for {j} in range(np.uint64({c0}), np.uint64({c1})):")
            self.open()
            for o in epilogue:
                self.w.comment(o)
                self._store(self.out_names[id(o)], (i, j), self.value(o, (i, j)))
            self.close(2)
            self.epilogue_done = True
        self.close(1)  # the while loop, and the prange with it

    def _epilogue_in_rows(self, dot: Instruction) -> list[Instruction] | None:
        """The outputs to write row by row right after the product, or None where that would
        be wrong: every output must have the product's shape, and everything that reads the
        product, directly or not, must be element-wise, so that an output's element reads
        only the same element of the product."""
        if any(o.shape.is_tuple or o.dims != dot.dims for o in self.outputs):
            return None
        after = {id(dot)}
        for inst in self.comp.instructions:  # in order: operands come first
            if inst.opcode == "tuple" or not any(id(o) in after for o in inst.operands):
                continue
            if inst.dims != dot.dims or not in_group(inst.opcode, Group.ELEMENTWISE,
                                                     Group.COMPARE_SELECT):
                return None
            after.add(id(inst))
        return [o for o in self.outputs if not self._written(o)]

    def _emit_reduce_general(self, inst: Instruction):
        """Fill the reduce's result array(s): accumulate in registers when the reduced
        dimensions are the trailing ones, else into the array in row-major order."""
        refuse_float16(inst)
        self.w.comment(inst)
        n = len(inst.operands) // 2
        operands, inits = inst.operands[:n], inst.operands[n:]
        x_dims = operands[0].dims
        axes = sorted(inst.attr("dimensions"))
        kept = [d for d in range(len(x_dims)) if d not in axes]
        reducer = self.module.computation(inst.attr("to_apply"))
        suffix = axes == list(range(len(kept), len(x_dims)))
        if inst.shape.is_tuple:
            # With the reduced dimensions trailing, an element nothing reads stays in its
            # register (argmax's value); a sweep in memory order keeps every one in an array.
            stores = [self._element_storage(inst, k, needed=not suffix) for k in range(n)]
        else:
            stores = [self._storage(inst)]
            self.stored[id(inst)] = stores[0]
        kept_dims = [x_dims[d] for d in kept]
        red_dims = [x_dims[d] for d in axes]
        if suffix:
            big = prod(kept_dims) >= 2 and prod(x_dims) >= self.parallel_from
            outer = self.loop_nest(kept_dims, parallel=big)
            accs = self._init_accs(inst, inits, reducer)
            one_row = not kept_dims and prod(x_dims) >= self.parallel_from
            sums = self._parallel_sums(reducer, accs, operands) if one_row else ()
            inner = self.loop_nest(red_dims, parallel=bool(sums), sums=sums)
            self._accumulate(inst, reducer, [self.partial[a] for a in accs] if sums else accs,
                             operands, outer + inner)
            self.close(len(red_dims))
            for s, acc, o in zip(stores, accs, inst.shape.elements if inst.shape.is_tuple
                                 else [inst.shape]):
                if s is not None:
                    self.w.line(f"{_index(s, outer)} = {np_type(o.dtype)}({acc})")
            self.close(len(kept_dims))
        else:
            # Initialise, then sweep the operand in memory order.
            init_idx = self.loop_nest(kept_dims, parallel=False)
            for s, init in zip(stores, inits):
                self.w.line(f"{_index(s, init_idx)} = {self.value(init, ())}")
            self.close(len(kept_dims))
            idx = self.loop_nest(x_dims, parallel=False)
            kidx = tuple(idx[d] for d in kept)
            accs = [_index(s, kidx) for s in stores]
            vals = [self.value(o, idx) for o in operands]
            new = self._combine(reducer, accs, vals, inst)
            for s, v in zip(stores, new):
                self.w.line(f"{_index(s, kidx)} = {v}")
            self.close(len(x_dims))

    def _parallel_sums(self, reducer, accs, operands) -> list[tuple[str, np.dtype]]:
        """The accumulators a parallel loop sums into, [(name, dtype)]: the one of a sum
        (`_parallel_reducer`), or none, and the reduce runs on one thread."""
        n = len(operands)
        if not _parallel_reducer(reducer, n):
            return []
        return [(accs[0], wide_accumulator(reducer, np.dtype(operands[0].dtype), n))]

    def _init_accs(self, inst, inits, reducer) -> list[str]:
        accs = []
        for init in inits:
            acc = self.w.fresh("acc")
            dtype = np.dtype(init.dtype)
            wide = wide_accumulator(reducer, dtype, len(inits))
            v = self.value(init, ())
            self.w.line(f"{acc} = {np_type(wide)}({v})" if wide != dtype else f"{acc} = {v}")
            accs.append(acc)
        return accs

    def _accumulate(self, inst, reducer, accs, operands, idx):
        vals = [self.value(o, idx) for o in operands]
        n = len(operands)
        dtype = np.dtype(operands[0].dtype)
        wide = wide_accumulator(reducer, dtype, n)
        if wide != dtype:
            vals = [f"{np_type(wide)}({v})" for v in vals]
        step = _reassociable_step(reducer, n, wide)
        if step is not None:
            self.w.line(f"{accs[0]} = {step}({accs[0]}, {vals[0]})")
            return
        new = self._combine(reducer, accs, vals, inst, dtype=wide)
        if n == 1 and _is_single_op(reducer, "add"):
            self.w.line(f"{accs[0]} += {vals[0]}")
            return
        for acc, v in zip(accs, new):
            self.w.line(f"{acc} = {v}")

    def _combine(self, reducer: Computation, accs, vals, inst, dtype=None) -> list[str]:
        """The reducer applied to (accumulators, values): one op in one expression, any other
        reducer inlined instruction by instruction."""
        n = len(accs)
        root = reducer.root
        if n == 1 and simple_op(reducer):
            expr = exprs.reducer_update(root.opcode, accs[0], vals[0], dtype or root.dtype)
            if expr is not None:
                return [expr]
        env = {}
        params = sorted(reducer.parameters, key=lambda p: p.parameter_number)
        for p, v in zip(params, list(accs) + list(vals)):
            env[id(p)] = v
        for i in reducer.instructions:
            if id(i) in env:
                continue
            if i.opcode == "tuple":
                continue
            if i.opcode == "constant":
                env[id(i)] = exprs.literal(i.literal.reshape(-1)[0], i.dtype)
                continue
            var = self.w.fresh(i.name)
            self.w.line(f"{var} = {exprs.scalar_expr(i, [env[id(o)] for o in i.operands])}")
            env[id(i)] = var
        outs = root.operands if root.opcode == "tuple" else (root,)
        return [env[id(o)] for o in outs]

    # -- row kernels ---------------------------------------------------------------------

    def _emit_rows(self, lead: tuple[int, ...], trail: tuple[int, ...]):
        rows = prod(lead)
        per_row = prod(trail)
        outer_parallel = rows >= 2 and rows * per_row >= self.parallel_from
        inner_parallel = rows == 1 and per_row >= self.parallel_from
        keep = [] if inner_parallel else self._values_to_keep(lead, trail)
        ridx, opened = self._row_loops(lead, trail, keep, outer_parallel)
        if self._reduces() and lead and len(trail) == 1:
            self._prefetch_rows(lead, trail, ridx)
        for inst in self._reduces():
            refuse_float16(inst)
            self.w.comment(inst)
            n = len(inst.operands) // 2
            operands, inits = inst.operands[:n], inst.operands[n:]
            reducer = self.module.computation(inst.attr("to_apply"))
            accs = self._init_accs(inst, inits, reducer)
            sums = self._parallel_sums(reducer, accs, operands) if inner_parallel else ()
            wide = wide_accumulator(reducer, np.dtype(operands[0].dtype), n)
            # In rows, float32 blocks beat converting every element into the float64 sum
            # (docs/performance.md); a single long row (a full sum) runs fastest straight
            # into float64.
            if wide != np.dtype(operands[0].dtype) and not inner_parallel and trail and lead:
                self._blocked_sum(inst, reducer, accs[0], operands[0], ridx, trail)
            else:
                tidx = self._row_pass(trail, bool(sums), ridx, sums)
                self._accumulate(inst, reducer, [self.partial[a] for a in accs] if sums else accs,
                                 operands, ridx + tidx)
                self._end_row_pass(trail)
            if inst.shape.is_tuple:
                for k, (acc, e) in enumerate(zip(accs, inst.shape.elements)):
                    var = self.w.fresh(f"{inst.name}_{k}")
                    self.w.line(f"{var} = {np_type(e.dtype)}({acc})")
                    self.row_scalars[(id(inst), k)] = var
            else:
                var = self.w.fresh(inst.name)
                self.w.line(f"{var} = {np_type(inst.dtype)}({accs[0]})")
                self.row_scalars[id(inst)] = var
        # Per-row values that outputs need, then the full-row outputs in one loop.
        full = [o for o in self.outputs if o.dims == lead + trail]
        small = [o for o in self.outputs if o.dims != lead + trail]
        for o in small:  # per row: shaped like the rows, or with the row's axes kept as 1s
            self.w.comment(o)
            idx = ridx + ("0",) * (len(o.dims) - len(lead))
            self._store(self.out_names[id(o)], idx, self.value(o, idx))
        if full:
            tidx = self._row_pass(trail, inner_parallel, ridx)
            for o in full:
                self.w.comment(o)
                v = self.value(o, ridx + tidx)
                self._store(self.out_names[id(o)], ridx + tidx, v)
            self._end_row_pass(trail)
        self.close(opened)

    def _prefetch_rows(self, lead, trail, ridx):
        """Ask for the next row of each input that the row's passes read element by element,
        and for this row of each full output, before the passes start. The passes run over a
        row held in L1, and while they compute, nothing is in flight from memory: the
        hardware prefetchers follow the stream of addresses, which stands still. Asked for
        ahead, the next row arrives while this one computes (docs/performance.md). Only for
        arrays past the last-level cache, in rows of at most PREFETCH_ROW_BYTES."""
        full = lead + trail
        roots = [o for r in self._reduces() for o in r.operands[:len(r.operands) // 2]]
        roots += [o for o in self.outputs if o.dims == full]
        at_element = roots + [o for e in elementwise_closure(roots, full) for o in e.operands]
        reads = {i.parameter_number: i for i in at_element
                 if i.opcode == "parameter" and i.dims == full}
        writes = [o for o in self.outputs if o.dims == full]
        arrays = [*reads.values(), *writes]
        if (sum(a.shape.nbytes for a in arrays) < PREFETCH_MIN_BYTES
                or max(trail[0] * np.dtype(a.dtype).itemsize for a in arrays) > PREFETCH_ROW_BYTES):
            return
        self.w.line("# Fetch ahead: the next row of each input, this row of each output.")

        def lines(array, dtype, idx, helper):
            j = self.w.fresh("line")
            step = max(1, CACHE_LINE // np.dtype(dtype).itemsize)
            self.w.line(f"for {j} in range(0, {trail[0]}, {step}):")
            self.w.line(f"    {helper}({array}, ({', '.join(idx + (j,))}))")

        if reads:
            self.w.line(f"if {ridx[-1]} + 1 < {lead[-1]}:")
            self.w.depth += 1
            for k, param in sorted(reads.items()):
                lines(f"p{k}", param.dtype, ridx[:-1] + (f"{ridx[-1]} + 1",), "prefetch_read")
            self.w.depth -= 1
        for o in writes:
            lines(self.out_names[id(o)], o.dtype, ridx, "prefetch_write")

    def _blocked_sum(self, inst, reducer, acc, operand, ridx, trail):
        """A float32 sum over the row in blocks of SUM_BLOCK: each block in float32 (which
        vectorises: the loop carries several partial sums, NumPy's pairwise sum does the
        same in blocks of 128), the blocks into the float64 accumulator."""
        outer = self.loop_nest(trail[:-1], parallel=False)
        n = trail[-1]
        blocks = n > SUM_BLOCK  # else the row is one block
        b, i = self.w.fresh("block"), self.w.fresh("i")
        if blocks:
            self.w.line(f"for {b} in range(0, {n}, {SUM_BLOCK}):")
            self.open()
        part = self.w.fresh("part")
        dtype = np.dtype(operand.dtype)
        self.w.line(f"{part} = {exprs.literal(0, dtype)}")
        span = f"{b}, min({b} + {SUM_BLOCK}, {n})" if blocks else f"{n}"
        self.w.line(f"for {i} in range({span}):")
        self.open()
        tidx = outer + (i,)
        self.row_index, self.row_tail = ridx + tidx, tidx
        self.w.line(f"{part} = add_reassoc({part}, {self.value(operand, ridx + tidx)})")
        self.close(1)
        wide = wide_accumulator(reducer, dtype, 1)
        self.w.line(f"{acc} += {np_type(wide)}({part})")
        self.close(1 if blocks else 0)
        self._end_row_pass(trail[:-1])

    def _row_pass(self, trail, parallel: bool, ridx, sums=()) -> tuple[str, ...]:
        tidx = self.loop_nest(trail, parallel=parallel, sums=sums)
        self.row_index, self.row_tail = ridx + tidx, tidx
        return tidx

    def _end_row_pass(self, trail) -> None:
        self.close(len(trail))
        self.row_index = None
        self.stashed |= self.stashed_now
        self.stashed_now = set()

    def _values_to_keep(self, lead, trail) -> list[Instruction]:
        """Expensive element-wise values that more than one pass over a row computes (the
        exponential in softmax: once for the sum, once for the output): the first pass keeps
        them in a row-sized array and the later ones read it, as a hand-written kernel would.
        Only values every pass reads at the element it is on qualify, so the array is indexed
        by the pass's own position in the row."""
        full = lead + trail
        passes = [r.operands[:len(r.operands) // 2] for r in self._reduces()]
        passes.append([o for o in self.outputs if o.dims == full])
        seen: dict[int, int] = {}
        for roots in passes:
            for i in elementwise_closure(roots, full):
                seen[id(i)] = seen.get(id(i), 0) + 1
        return [i for i in self.comp.instructions
                if seen.get(id(i), 0) > 1 and is_expensive(i)]

    def _row_loops(self, lead, trail, keep, parallel: bool) -> tuple[tuple[str, ...], int]:
        """Open the loop over rows, with a row-sized array for each value in `keep`; returns
        the row's index and how many loops to close."""
        def arrays():
            for inst in keep:
                var = self.w.fresh(f"{inst.name}_row")
                self.w.line(f"{var} = np.empty({tuple_text(trail)}, dtype={np_type(inst.dtype)})")
                self.stash[id(inst)] = var

        if not keep:
            return self.loop_nest(lead, parallel=parallel), len(lead)
        if not parallel:
            arrays()
            return self.loop_nest(lead, parallel=False), len(lead)
        # In parallel, each thread gets arrays of its own, and claims blocks of all the rows.
        rows = prod(lead)
        r = self._parallel_loop(rows, setup=arrays, index="row")
        if len(lead) == 1:
            return (r,), 1
        ridx = []
        stride = rows
        for n in lead:
            stride //= n
            i = self.w.fresh("i")
            self.w.line(f"{i} = ({r} // {stride}) % {n}" if stride > 1 else f"{i} = {r} % {n}")
            ridx.append(i)
        return tuple(ridx), 1


def _operand(param: str, batch_dims, rows, cols, batch: int, r: int, c: int,
             plain: bool) -> str:
    """A dot operand as a (batch, r, c) array (r x c if `plain`) whose dimensions are, in
    order, `batch_dims`, `rows` and `cols` of the parameter: the parameter itself where they
    are in its order already, its transpose where they are once rows and cols swap places,
    else a transposed copy."""
    order = [*batch_dims, *rows, *cols]
    if order == sorted(order):
        view = f"np.ascontiguousarray({param})"
        return view if plain else f"{view}.reshape(({batch}, {r}, {c}))"
    if [*batch_dims, *cols, *rows] == sorted(order):
        view = f"np.ascontiguousarray({param})"
        return f"{view}.T" if plain else f"{view}.reshape(({batch}, {c}, {r})).transpose(0, 2, 1)"
    return (f"np.ascontiguousarray(np.transpose({param}, {tuple_text(order)}))"
            f".reshape(({batch}, {r}, {c}))")


def refuse_float16(inst: Instruction) -> None:
    """Reductions and products accumulate in their result type here, and a float16
    accumulator would round at every step: the tracer computes them in float32 (as NumPy
    does), and a module that has one in float16 must convert first."""
    shapes = inst.shape.elements if inst.shape.is_tuple else (inst.shape,)
    if any(s.dtype == _F16 for s in shapes):
        md = inst.metadata
        raise UnsupportedOpError(
            f"the CPU backend does not compute a float16 {inst.opcode} ({inst.name}): convert "
            "its operands to f32 and its result back to f16", op=inst.opcode,
            source_file=md.source_file or None, source_line=md.source_line or None)


def _index(array: str, idx) -> str:
    return f"{array}[{', '.join(idx)}]" if idx else f"{array}[()]"


def tuple_text(dims) -> str:
    """dims as a Python tuple literal: `(3,)`, `(2, 4)`."""
    dims = list(dims)
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def _affine(i: str, start: int, stride: int) -> str:
    if stride == 1:
        return f"({start} + {i})" if start else i
    return f"({start} + {i} * {stride})"


def elementwise_closure(roots, dims) -> list[Instruction]:
    """The element-wise values of shape `dims` that computing `roots` at one element reads at
    that same element: reached from the roots through element-wise ops only."""
    found, stack, seen = [], list(roots), set()
    while stack:
        inst = stack.pop()
        if id(inst) in seen or inst.shape.is_tuple or inst.dims != dims:
            continue
        seen.add(id(inst))
        if elementwise_like(inst.opcode):
            found.append(inst)
            stack.extend(inst.operands)
    return found


def simple_op(reducer: Computation) -> bool:
    root = reducer.root
    params = set(map(id, reducer.parameters))
    return (len(reducer.instructions) == 3 and root.opcode != "tuple"
            and all(id(o) in params for o in root.operands))


def _is_single_op(reducer: Computation, opcode: str) -> bool:
    return simple_op(reducer) and reducer.root.opcode == opcode


def _parallel_reducer(reducer: Computation, n: int) -> bool:
    """A sum runs in parallel (each block into a partial sum of its own, see
    `_parallel_loop`); other reducers run serially."""
    return n == 1 and _is_single_op(reducer, "add")


def _reassociable_step(reducer: Computation, n: int, dtype: np.dtype) -> str | None:
    """The helper that accumulates a float sum or product (`scalar.add_reassoc`,
    `multiply_reassoc`): the one operation of a kernel that LLVM may reassociate, so that its
    loop vectorizes. None for any other reducer."""
    if n != 1 or np.dtype(dtype).kind != "f":
        return None
    for opcode, helper in (("add", "add_reassoc"), ("multiply", "multiply_reassoc")):
        if _is_single_op(reducer, opcode):
            return helper
    return None


def wide_accumulator(reducer: Computation, dtype: np.dtype, n: int) -> np.dtype:
    """float32 sums accumulate in float64: at least as accurate as NumPy's pairwise sum."""
    if n == 1 and dtype == np.float32 and _is_single_op(reducer, "add"):
        return np.dtype(np.float64)
    return np.dtype(dtype)


def row_plan(comp: Computation, outputs) -> tuple[tuple, tuple] | None:
    """(leading dims, trailing dims) when every reduce reduces the same trailing dims of one
    loop space and every output is per-row or full; None otherwise (and for dots)."""
    reduces = [i for i in comp.instructions if i.opcode == "reduce"]
    if any(i.opcode in ("dot", "scatter") or i.opcode in PHASE_OPS for i in comp.instructions):
        return None  # a product, a scatter's sequential loop, a scan or a sort
    if not reduces:
        dims = {o.dims for o in outputs}
        if len(dims) != 1:
            return None
        (full,) = dims
        # A loop kernel: rows are the leading dimension, a row the rest.
        return (full[:1], full[1:]) if full else ((), ())
    spaces = set()
    for r in reduces:
        x = r.operands[0].dims
        axes = sorted(r.attr("dimensions"))
        k = len(x) - len(axes)
        if axes != list(range(k, len(x))):
            return None
        spaces.add((x[:k], x[k:]))
    if len(spaces) != 1:
        return None
    lead, trail = next(iter(spaces))
    ok = {lead + trail, lead, lead + (1,) * len(trail)}
    if not all(o.dims in ok for o in outputs):
        return None
    # A reduce's result is a register holding the current row's value, so everything computed
    # from it must read it at the current row (as row fusion checks); the reduces themselves
    # run in program order, which is topological.
    after = set(map(id, reduces))
    for inst in comp.instructions:
        if id(inst) in after or not any(id(o) in after for o in inst.operands):
            continue
        after.add(id(inst))
        if inst.opcode != "tuple" and not fits_rows(inst, lead, trail):
            return None
    return lead, trail


# -- scans and sorts: ops that fill their result in a phase of their own ------------


def _emit_scan(self: KernelEmitter, inst: Instruction) -> None:
    """A reduce-window whose window grows along one axis (np.cumsum, ufunc.accumulate): one
    sequential pass along the axis with a running accumulator, for each position of the other
    axes (in parallel when there are many). A CPU makes the prefix in one pass of n steps,
    where an associative scan would do about 2n to expose parallelism it cannot use."""
    axis = scan_axis(inst)
    if axis is None:
        raise CompileError(f"{inst.name}: the CPU backend compiles a reduce-window only as a "
                           f"scan (a window growing along one axis, as np.cumsum's), not "
                           f"window={inst.attr('window')}; run it on the interpreter backend",
                           op="reduce-window", source_file=inst.metadata.source_file or None,
                           source_line=inst.metadata.source_line or None)
    self.w.comment(inst)
    x, init = inst.operands
    out = self._storage(inst)
    self.stored[id(inst)] = out
    reducer = self.module.computation(inst.attr("to_apply"))
    dims = x.dims
    lanes = [d for d in range(len(dims)) if d != axis]
    lane_dims = [dims[d] for d in lanes]
    parallel = prod(lane_dims) >= 2 and prod(dims) >= self.parallel_from
    lidx = self.loop_nest(lane_dims, parallel=parallel)
    acc = self.w.fresh("acc")
    self.w.line(f"{acc} = {np_type(inst.dtype)}({self.value(init, ())})")
    k = self.w.fresh("k")
    self.w.line(f"for {k} in range({dims[axis]}):  # the scan: one step per element")
    self.open()
    idx = list(lidx)
    idx.insert(axis, k)
    idx = tuple(idx)
    (new,) = self._combine(reducer, [acc], [self.value(x, idx)], inst, dtype=inst.dtype)
    if inst.dtype != _F16:
        self.w.line(f"{acc} = {new}")
        self.w.line(f"{_index(out, idx)} = {acc}")
    elif out in self.half_arrays:
        # NumPy's float16 accumulate rounds the running value to float16 at every step (each
        # prefix is read back from the float16 result), so the accumulator is the rounded one.
        bits = self.w.fresh("bits")
        self.w.line(f"{bits} = f16_bits({new})")
        self.w.line(f"{acc} = f16_load({bits})")
        self.w.line(f"{_index(out, idx)} = {bits}")
    else:
        self.w.line(f"{acc} = f16_round({new})  # rounded at every step, as NumPy's is")
        self.w.line(f"{_index(out, idx)} = {acc}")
    self.close(1)
    self.close(len(lane_dims))


def _emit_sort(self: KernelEmitter, inst: Instruction) -> None:
    """XLA's sort: for each row along the sort dimension (rows in parallel when there are
    many), a bottom-up merge sort of the row's positions, ordered by the comparator inlined
    (a merge takes the right run's element only when it goes strictly first, which keeps the
    sort stable), then every operand permuted by those positions. Numba's stable argsort
    would serve only the comparators np.sort emits; this serves any comparator."""
    self.w.comment(inst)
    (axis,) = inst.attr("dimensions")
    xs = inst.operands
    n_ops = len(xs)
    if inst.shape.is_tuple:
        stores = [self._element_storage(inst, k, needed=False) for k in range(n_ops)]
    else:
        stores = [self._storage(inst)]
        self.stored[id(inst)] = stores[0]
    comparator = self.module.computation(inst.attr("to_apply"))
    dims = xs[0].dims
    n = dims[axis]
    lanes = [dims[d] for d in range(len(dims)) if d != axis]
    parallel = prod(lanes) >= 2 and prod(dims) * max(1, n.bit_length()) >= self.parallel_from
    lidx = self.loop_nest(lanes, parallel=parallel)

    def at(k: str) -> tuple[str, ...]:
        idx = list(lidx)
        idx.insert(axis, k)
        return tuple(idx)

    perm, tmp, k = self.w.fresh("perm"), self.w.fresh("tmp"), self.w.fresh("k")
    width, lo, mid, hi = (self.w.fresh(v) for v in ("width", "lo", "mid", "hi"))
    a, b, t, ia, ib = (self.w.fresh(v) for v in ("a", "b", "t", "ia", "ib"))
    w = self.w.line
    w(f"{perm} = np.empty({n}, dtype=np.int64)  # the row's positions, in sorted order so far")
    w(f"{tmp} = np.empty({n}, dtype=np.int64)")
    w(f"for {k} in range({n}):")
    w(f"    {perm}[{k}] = {k}")
    w(f"{width} = 1")
    w(f"while {width} < {n}:  # merge sorted runs pairwise into runs twice as long")
    self.open()
    w(f"{lo} = 0")
    w(f"while {lo} < {n}:")
    self.open()
    w(f"{mid} = min({lo} + {width}, {n})")
    w(f"{hi} = min({lo} + 2 * {width}, {n})")
    w(f"{a} = {lo}")
    w(f"{b} = {mid}")
    w(f"{t} = {lo}")
    w(f"while {a} < {mid} and {b} < {hi}:")
    self.open()
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
        args += [self._load(p, _index(p, at(ib))), self._load(p, _index(p, at(ia)))]
    (first,) = self._combine(comparator, args, [], inst)
    w(f"if {first}:  # the right run's element goes strictly first")
    w(f"    {tmp}[{t}] = {ib}")
    w(f"    {b} += 1")
    w("else:")
    w(f"    {tmp}[{t}] = {ia}")
    w(f"    {a} += 1")
    w(f"{t} += 1")
    self.close(1)
    w(f"while {a} < {mid}:")
    w(f"    {tmp}[{t}] = {perm}[{a}]")
    w(f"    {a} += 1")
    w(f"    {t} += 1")
    w(f"while {b} < {hi}:")
    w(f"    {tmp}[{t}] = {perm}[{b}]")
    w(f"    {b} += 1")
    w(f"    {t} += 1")
    w(f"{lo} = {hi}")
    self.close(1)
    # Copied back rather than swapped: swapping the two arrays makes Numba's parallel
    # compilation (its copy propagation over the loop body) extremely slow.
    w(f"for {k} in range({n}):")
    w(f"    {perm}[{k}] = {tmp}[{k}]")
    w(f"{width} *= 2")
    self.close(1)
    w(f"for {k} in range({n}):  # every operand permuted alike (float16 as its bits)")
    self.open()
    for x, out in zip(xs, stores):
        if out is not None:
            self._copy(out, at(k), f"p{x.parameter_number}", at(f"{perm}[{k}]"))
    self.close(1)
    self.close(len(lanes))


# Ops the general kernel shape runs as a phase of their own, before the outputs are written:
# opcode -> the emitter's phase for it.
PHASE_OPS = {"reduce-window": _emit_scan, "sort": _emit_sort}


# ----------------------------------------------------------------------------------------------
# The program: every kernel, and one driver that runs them in schedule order over the arena.


@dataclass
class Program:
    """A generated file: the kernels and the driver `run(arena, args..., consts..., outs...)`."""

    module: Module
    source: str
    kernels: dict[str, str]  # kernel function name -> its source
    constants: list[Instruction]  # array constants the driver takes, in order
    outputs: list[tuple[str, int]]  # per root element: ("output", k), ("parameter", n), ("constant", k)
    num_outputs: int  # arrays the caller allocates
    kernel_of: dict[str, str] = field(default_factory=dict)  # HLO instruction -> kernel name
    # The arena: the buffer assignment's temporaries, then (on a cache line) the scratch space
    # the kernels share, one at a time (a product's packed B).
    arena_bytes: int = 0
    # The outputs (by number) to allocate starting on a cache line, as the arena's buffers
    # do: those a product writes. It stores and adds into C a register tile at a time, once
    # per KC rows of B, and a vector store that straddles two lines (NumPy starts arrays 16
    # bytes into one) costs two. (Other kernels write each line once: no faster aligned.)
    line_outputs: frozenset[int] = frozenset()


def _whole_lines(nbytes: int) -> int:
    """nbytes rounded up to whole cache lines."""
    return -(-nbytes // CACHE_LINE) * CACHE_LINE


HEADER = '''"""Generated by xla-explorer from HLO module {module}: one Numba kernel per fusion, and
`run`, which calls them in schedule order with every temporary in one arena."""
''' + exprs.PRELUDE + '''from numba import njit, prange

# Element-wise arithmetic rounds as NumPy's does; only a sum's or product's accumulation
# (add_reassoc, multiply_reassoc) may be reordered, which lets its loop vectorize.
FASTMATH = {fastmath}
'''
PARALLEL_IMPORT = ("from xla_explorer.codegen.parallel import block_counter, next_block, "
                   "nonnegative, threads\n")
GEMM_IMPORT = ("from xla_explorer.codegen.gemm import (pack_b, pack_b_parallel, packed_b, "
               "claims,\n    next_product_block, product_block, product_rows)\n")


def kernel_computation(module: Module, inst: Instruction) -> tuple[Computation, str, bool]:
    """The computation a kernel runs: a fusion's own, or one op on parameters."""
    if inst.opcode == "fusion":
        comp = module.computation(inst.attr("calls"))
        return comp, kernel_kind(inst), is_row_fusion(inst)
    params = tuple(Instruction(f"param_{n}", "parameter", o.shape, parameter_number=n)
                   for n, o in enumerate(inst.operands))
    kind = kernel_kind(inst)
    body = params + (inst.replace(operands=params),)
    return Computation(f"{inst.name}.computation", body), kind, False


def _tuple_rooted(comp: Computation) -> Computation:
    """A computation whose root makes a tuple (a variadic reduce, argmax's value and index)
    ending in get-tuple-elements and a tuple, so each output is one array."""
    root = comp.root
    if not root.shape.is_tuple or root.opcode == "tuple":
        return comp
    gtes = tuple(Instruction(f"{root.name}.{k}", "get-tuple-element", e, (root,), (("index", k),))
                 for k, e in enumerate(root.shape.elements))
    tup = Instruction(f"{root.name}.tuple", "tuple", root.shape, gtes)
    return Computation(comp.name, comp.instructions + gtes + (tup,))


def driver_inputs(module: Module, assignment):
    """What a program's driver takes, for the CPU and CUDA generators alike: the entry's
    dataflow, its parameters in order, its constants, each output buffer's position, and
    `buffer_expr(key)`, the driver's name for the buffer of a value (`a0`, `c1`, `o0`,
    `t_name`). An op left to run eagerly (a custom-call) cannot be in a compiled program:
    refused by name."""
    from ..passes.buffer_assignment import (CONSTANT, EAGER, OUTPUT, PARAMETER, TEMPORARY,
                                            buffer_name)
    from ..passes.dataflow import dataflow

    entry = module.entry
    flow = dataflow(entry)
    params = sorted(entry.parameters, key=lambda p: p.parameter_number)
    constants = [i for i in entry.instructions if i.opcode == "constant"]
    out_index: dict[str, int] = {}
    for b in assignment.buffers:
        if b.category == OUTPUT:
            out_index[b.name] = len(out_index)
        if b.category == EAGER:
            inst = entry.get(b.instruction)
            raise not_compilable(inst.attr("custom_call_target"), inst.metadata.source_file,
                                 inst.metadata.source_line)
    constant_names = [c.name for c in constants]

    def buffer_expr(key) -> str:
        name = buffer_name(*key)
        b = assignment.buffer(name)
        if b.category == PARAMETER:
            return f"a{entry.get(b.instruction).parameter_number}"
        if b.category == CONSTANT:
            return f"c{constant_names.index(b.instruction)}"
        if b.category == OUTPUT:
            return f"o{out_index[name]}"
        assert b.category == TEMPORARY
        return f"t_{identifier(name)}"

    return entry, flow, params, constants, out_index, buffer_expr


def generate_program(module: Module, assignment) -> Program:
    """The Python source of every kernel of `module` and of its driver, using `assignment`
    (the module's buffer assignment) for where every value between kernels lives."""
    from ..passes.buffer_assignment import OUTPUT, PARAMETER, TEMPORARY, buffer_name
    from ..passes.dataflow import is_kernel

    entry, flow, params, constants, out_index, buffer_expr = driver_inputs(module, assignment)

    lines = []
    uses_gemm = claims_blocks = False
    scratch = _whole_lines(assignment.peak_bytes)  # where the kernels' scratch space starts
    workspace = 0
    names: set[str] = set()
    kernels: dict[str, str] = {}
    kernel_of: dict[str, str] = {}
    line_outputs: set[int] = set()
    driver = []

    for inst in entry.instructions:
        if not is_kernel(inst):
            continue
        comp, kind, row = kernel_computation(module, inst)
        fname = identifier(inst.name)
        while fname in names:
            fname += "_"
        names.add(fname)
        kernel_of[inst.name] = fname
        kernel = KernelEmitter(module, comp, fname, kind, row).emit()
        kernels[fname] = kernel.source
        uses_gemm |= kernel.gemm
        claims_blocks |= kernel.claims_blocks
        lines.append(kernel.source)
        driver.append(f"    # {format_instruction(inst, metadata=False).strip()}")
        outs = []
        for pos, idx in enumerate(flow.defined[inst.name]):
            key = (inst.name, idx)
            b = assignment.buffer(buffer_name(*key))
            expr = buffer_expr(key)
            if b.category == OUTPUT and pos in kernel.line_outputs:
                line_outputs.add(out_index[b.name])
            if b.category == TEMPORARY:
                offset = assignment.offset(b)
                driver.append(f"    {expr} = arena[{offset}:{offset + b.size}]"
                              f".view({storage_type(b.shape.dtype)})"
                              f".reshape({tuple_text(b.shape.dims)})")
            outs.append(expr)
        ins = []
        for o in inst.operands:
            (key,) = flow.points_to[o.name].values()
            ins.append(buffer_expr(key))
        work = []
        if kernel.workspace:
            workspace = max(workspace, kernel.workspace)
            work = [f"arena[{scratch}:{scratch + kernel.workspace}]"]
        driver.append(f"    {fname}({', '.join(ins + outs + work)})")

    # What the root hands back, element by element.
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
    # The driver makes a whole call one dispatch into Numba. A program of one kernel that
    # needs no arena is already one dispatch: compiling a driver for it would only add a
    # tenth of a second to the cold compile.
    statements = sum(1 for d in driver if not d.lstrip().startswith("#"))
    decorator = ("@njit(cache=True)\n" if statements > 1 else
                 "# One kernel: calling it from Python is already one dispatch.\n")
    driver_src = (decorator + f"def run({', '.join(args)}):\n"
                  + ("\n".join(driver) or "    pass") + "\n")
    flags = ("{" + ", ".join(repr(f) for f in sorted(FASTMATH)) + "}") if FASTMATH else "set()"
    header = HEADER.format(module=module.name, fastmath=flags)
    if claims_blocks:
        header += PARALLEL_IMPORT
    if uses_gemm:
        header += GEMM_IMPORT
    source = header + "\n\n" + "\n\n".join(lines + [driver_src])
    return Program(module, source, kernels, constants, outputs, len(out_index), kernel_of,
                   scratch + workspace if workspace else assignment.peak_bytes,
                   frozenset(line_outputs))
