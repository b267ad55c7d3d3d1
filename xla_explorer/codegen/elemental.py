"""The elemental core every target shares: the value of an output element, as XLA's
elemental IR emitter computes it.

`value(inst, index)` returns a scalar expression for `inst` at a multi-index, asking its
operands for their values at the indices they map to. Element-wise ops apply their scalar
expression from the op table (`exprs.scalar_expr`); broadcast, reshape, transpose, slice,
reverse, concatenate, pad, gather and the dynamic slices are index arithmetic, never
materialised arrays. A reduce, dot, scan or sort is a phase of its own that fills an array (or
holds a register) before the values that read it are computed: the target records where
(`stored`, `row_scalars`) and the core reads it from there.

A target does not subclass this: it supplies, at construction, how it keeps an array a phase
fills that is no kernel output (`allocate`: `np.empty` on a CPU, shared memory on a GPU), and
writes its loops around the values it asks for.
"""
from __future__ import annotations

import re
from math import prod
from typing import Callable, Generator

import numpy as np

from ..errors import UnsupportedOpError
from ..ir.module import Computation, Instruction, Module
from ..ir.ops import Group, elementwise_like, in_group
from . import exprs
from .analysis import tuple_rooted
from .reducers import combine
from .writer import F16, Writer, affine, index_text, np_type

# The ops that read a constant the same way whether it is a number in the code or an
# argument: a scalar constant read by these alone can be a kernel's argument (`numbers`).
PLAIN_USES = frozenset(["add", "subtract", "multiply", "maximum", "minimum", "compare",
                        "select", "clamp"])

# What computes one element: a generator that yields (operand, index) for each operand element
# it needs, is sent that element's value, and returns its own (see Elemental.value).
Values = Generator[tuple, str, str]


class Elemental:
    """One kernel's values: its computation, its outputs' names, and where each phase left
    its result; every line goes to the writer `w`."""

    def __init__(self, module: Module, comp: Computation, w: Writer,
                 allocate: Callable[[Elemental, Instruction, int | None], str], backend: str):
        self.module = module
        self.comp = comp = tuple_rooted(comp)
        self.w = w
        self.allocate = allocate  # (core, inst, tuple index or None) -> a new array's name
        self.backend = backend  # its name in error messages
        root = comp.root
        self.outputs = list(root.operands) if root.opcode == "tuple" else [root]
        self.params = comp.parameters
        self.out_names = {}
        for k, o in enumerate(self.outputs):
            self.out_names.setdefault(id(o), f"out{k}")
        # The float16 arrays the kernel is given, as bits (see writer.storage_type).
        self.half_arrays = ({f"p{p.parameter_number}" for p in self.params if p.dtype == F16}
                            | {f"out{k}" for k, o in enumerate(self.outputs) if o.dtype == F16})
        # Materialised values: reduce / dot results, as an array name or a per-row scalar.
        self.stored: dict = {}
        self.row_scalars: dict = {}
        # Row kernels: expensive values an earlier pass over the row computed, kept in a
        # row-sized array for the later passes ({id: array}); which are written so far; the
        # index of the current pass's element (row, then position in the row).
        self.stash: dict[int, str] = {}
        self.stashed: set[int] = set()
        self.stashed_now: set[int] = set()
        self.row_index: tuple[str, ...] | None = None
        self.row_tail: tuple[str, ...] = ()
        # 0-d arrays read inside loops, as scalars read before them ({array: local}, see
        # `element`); one-element arrays standing for 0-d values (a GPU's shared memory).
        self.scalar_reads: dict[str, str] = {}
        self.scalar_arrays: set[str] = set()
        # Scalar constants the kernel takes as arguments rather than as numbers in its code
        # ({id: (name, dtype, value, the constant's name)}), where its target asks for them
        # (`numbers = {}`): an edited learning rate, or a mean's 1 / n at a new shape, then
        # gives the same code.
        self.numbers: dict[int, tuple[str, np.dtype, float, str]] | None = None
        self._users: dict | None = None

    @property
    def arguments(self) -> list[str]:
        """The kernel's parameters then its outputs, as the driver passes them."""
        return ([f"p{p.parameter_number}" for p in self._params_in_order()]
                + [f"out{k}" for k in range(len(self.outputs))])

    @property
    def argument_shapes(self) -> list:
        """The shapes of `arguments`, in their order."""
        return [p.shape for p in self._params_in_order()] + [o.shape for o in self.outputs]

    def _params_in_order(self) -> list:
        return sorted(self.params, key=lambda p: p.parameter_number)

    # -- scalar values at an index --------------------------------------------------------

    def value(self, inst: Instruction, idx: tuple[str, ...]) -> str:
        """`inst`'s element at `idx`, as a name or a literal; the lines that compute it (and
        the operands' elements it needs, first) go to the writer, each once.

        The recursion over operands is played with a stack of our own (`_computed` is a
        generator that yields the operand elements it needs): a kernel fusing thousands of
        ops in a chain (an unrolled loop, with transposes or reshapes between its steps)
        would take several Python frames per op and pass the recursion limit. The lines come
        out in the order the plain recursion would write them."""
        stack = [self._computed(inst, idx)]
        sent: str | None = None
        while stack:
            try:
                operand, at = stack[-1].send(sent)  # type: ignore[arg-type]
            except StopIteration as done:
                stack.pop()
                sent = done.value
                continue
            sent = self.w.lookup((id(operand), at))
            if sent is None:
                stack.append(self._computed(operand, at))
        assert sent is not None
        return sent

    def _computed(self, inst: Instruction, idx: tuple[str, ...]) -> Values:
        """`value`'s body for one element: yields (operand, index) for each element it reads,
        and is sent its value."""
        key = (id(inst), idx)
        found = self.w.lookup(key)
        if found is not None:
            return found
        expr = yield from self._expr(inst, idx)
        if re.fullmatch(r"[\w.]+|-?\d+(\.\d*)?", expr):
            return expr  # a name or a number: nothing to keep
        var = self.w.fresh(inst.name)
        self.w.line(f"{var} = {expr}")
        self.w.keep(key, var)
        if id(inst) in self.stash and id(inst) not in self.stashed and idx == self.row_index:
            buf, tidx = self.stash[id(inst)], idx[len(idx) - len(self.row_tail):]
            self.w.line(f"{index_text(buf, tidx)} = {var}  # kept for the row's later passes")
            self.stashed_now.add(id(inst))
        return var

    def _expr(self, inst: Instruction, idx: tuple[str, ...]) -> Values:
        op = inst.opcode
        if id(inst) in self.stashed and idx == self.row_index:
            return index_text(self.stash[id(inst)], idx[len(idx) - len(self.row_tail):])
        if id(inst) in self.row_scalars:
            return self.row_scalars[id(inst)]
        if id(inst) in self.stored:
            return self.element(self.stored[id(inst)], idx)
        if op == "parameter":
            return self.element(f"p{inst.parameter_number}", idx)
        if op == "constant":
            return self._number(inst) or exprs.literal(inst.literal.reshape(-1)[0], inst.dtype)
        if op == "iota":
            ramp = f"{np_type(inst.dtype)}({idx[inst.attr('iota_dimension')]})"
            return f"f16_round({ramp})" if inst.dtype == F16 else ramp
        if elementwise_like(op):
            # clamp's bounds may be scalars (0-d) beside an array x
            values = []
            for o in inst.operands:
                values.append((yield o, idx if o.dims or not inst.dims else ()))
            return exprs.scalar_expr(inst, values)
        if in_group(op, Group.DATA_MOVEMENT):
            return (yield from self._data_movement(inst, idx))
        if op == "get-tuple-element":
            key = (id(inst.operands[0]), inst.attr("index"))
            if key in self.row_scalars:
                return self.row_scalars[key]
            if key in self.stored:
                return self.element(self.stored[key], idx)
        raise UnsupportedOpError(f"the {self.backend} backend cannot compute {inst.name} ({op}) "
                                 "inside a kernel", op=op,
                                 source_file=inst.metadata.source_file or None,
                                 source_line=inst.metadata.source_line or None)

    def _number(self, inst: Instruction) -> str | None:
        """The name of the kernel's argument holding scalar constant `inst`, if it is one:
        a float other than 0, 1 and the non-finite, read only by ops that a number in the
        code would not make faster (a division by 2.0 is a multiplication, a power of 2.0 a
        product, where the number is known)."""
        if self.numbers is None:
            return None
        if id(inst) in self.numbers:
            return self.numbers[id(inst)][0]
        dtype = np.dtype(inst.dtype)
        if dtype.kind != "f" or dtype == F16 or inst.literal.size != 1:
            return None
        value = float(inst.literal.reshape(-1)[0])
        if not np.isfinite(value) or value in (0.0, 1.0) or \
                not all(u.opcode in PLAIN_USES for u in self._uses(inst)):
            return None
        name = f"k{len(self.numbers)}"
        self.numbers[id(inst)] = (name, dtype, value, inst.name)
        return name

    def _uses(self, inst: Instruction) -> list[Instruction]:
        """What reads `inst`'s values in the kernel, through broadcasts and reshapes."""
        if self._users is None:
            self._users = self.comp.users()
        out = []
        for u in self._users.get(inst, []):
            out += self._uses(u) if u.opcode in ("broadcast", "reshape") else [u]
        return out

    # -- loads and stores -------------------------------------------------------------------

    def element(self, array: str, idx: tuple[str, ...]) -> str:
        """`array[idx]`, an array the kernel reads (a parameter, a reduce's or dot's result).
        A 0-d one is read once, into a scalar at the kernel's top level, before the loop being
        written: Numba hands a 0-d array to a prange body as a scalar, where `a[()]` fails to
        compile (`getitem(float64, Tuple())`), as in x.std() beside x.argmax()."""
        if array in self.scalar_arrays:
            return f"{array}[0]"
        if idx or self.w.depth == 1:
            return self.load(array, index_text(array, idx))
        if array not in self.scalar_reads:
            var = self.w.fresh(f"{array}_value")
            self.w.insert_top(f"{var} = {self.load(array, f'{array}[()]')}  # a 0-d array, "
                              "read before the loop")
            self.scalar_reads[array] = var
        return self.scalar_reads[array]

    def load(self, array: str, element: str) -> str:
        return f"f16_load({element})" if array in self.half_arrays else element

    def store(self, array: str, idx, value: str) -> None:
        """`array[idx] = value`, rounded to float16 bits for a float16 array."""
        if array in self.scalar_arrays:
            idx = ("0",)
        if array in self.half_arrays:
            value = f"f16_bits({value})"
        self.w.line(f"{index_text(array, idx)} = {value}")

    def store_result(self, array: str, idx, value: str, dtype) -> None:
        """`array[idx] = value`, where value is an op's float32 result of type `dtype`: a
        float16 one is rounded, to its bits in a float16 array, to float16 precision in a
        float32 temporary (which later reads take as a float16 value)."""
        if np.dtype(dtype) == F16 and array not in self.half_arrays:
            value = f"f16_round({value})"
        self.store(array, idx, value)

    def copy(self, dst: str, dst_idx, src: str, src_idx) -> None:
        """`dst[dst_idx] = src[src_idx]`: the bits as they are between two float16 arrays
        (a NaN's payload kept), else converted as the two are stored."""
        element = index_text(src, src_idx)
        if (dst in self.half_arrays) == (src in self.half_arrays):
            self.w.line(f"{index_text(dst, dst_idx)} = {element}")
        else:
            self.store(dst, dst_idx, self.load(src, element))

    # -- where a phase's result goes ----------------------------------------------------------

    def storage(self, inst: Instruction, index: int | None = None) -> str:
        """Where a materialised value goes: the output it is, or the target's new array."""
        if index is None and id(inst) in self.out_names:
            return self.out_names[id(inst)]
        return self.allocate(self, inst, index)

    def element_storage(self, inst: Instruction, k: int, needed: bool) -> str | None:
        """Where element k of a tuple-shaped reduce goes: the output that is its
        get-tuple-element, else a new array if anything reads it (or if `needed`), else
        nowhere (None)."""
        gtes = [i for i in self.comp.instructions if i.opcode == "get-tuple-element"
                and i.operands[0] is inst and i.attr("index") == k]
        out = next((self.out_names[id(g)] for g in gtes if id(g) in self.out_names), None)
        if out is None and (gtes or needed):
            out = self.storage(inst, k)
        if out is not None:
            self.stored[(id(inst), k)] = out
            for g in gtes:
                if self.out_names.get(id(g)) == out:
                    self.stored[id(g)] = out  # written in the reduce's phase (`written`)
        return out

    def written(self, o) -> bool:
        """A reduce or dot output writes itself in its phase."""
        return id(o) in self.stored and self.stored[id(o)] == self.out_names.get(id(o))

    def hold(self, inst: Instruction, values: list[str]) -> None:
        """A reduce's value(s) held in registers for what reads it at this element."""
        if inst.shape.is_tuple:
            for k, v in enumerate(values):
                self.row_scalars[(id(inst), k)] = v
        else:
            self.row_scalars[id(inst)] = values[0]

    def combine(self, reducer: Computation, accs, vals, dtype=None) -> list[str]:
        return combine(self.w, reducer, accs, vals, dtype)

    # -- data movement as index arithmetic ----------------------------------------------------

    def _data_movement(self, inst: Instruction, idx: tuple[str, ...]) -> Values:
        op, x = inst.opcode, inst.operands[0]
        if op in ("copy",) or (op in ("reshape", "bitcast") and x.dims == inst.dims):
            return (yield x, idx)
        if op == "broadcast":
            return (yield x, tuple(idx[d] for d in inst.attr("dimensions")))
        if op in ("reshape", "bitcast"):
            return (yield x, self._reindex(idx, inst.dims, x.dims))
        if op == "transpose":
            perm = inst.attr("dimensions")
            src = [""] * len(perm)
            for k, d in enumerate(perm):
                src[d] = idx[k]
            return (yield x, tuple(src))
        if op == "slice":
            return (yield x, tuple(affine(i, a, c) for i, (a, _, c)
                                       in zip(idx, inst.attr("slice"))))
        if op == "reverse":
            rev = set(inst.attr("dimensions"))
            return (yield x, tuple(f"({n - 1} - {i})" if d in rev else i
                                       for d, (i, n) in enumerate(zip(idx, x.dims))))
        if op == "concatenate":
            return (yield from self._concatenate(inst, idx))
        if op == "pad":
            return (yield from self._pad(inst, idx))
        if op == "dynamic-slice":
            starts = yield from self._starts(inst.operands[1:], x.dims, inst.dims)
            return (yield x, tuple(f"({s} + {i})" for s, i in zip(starts, idx)))
        if op == "dynamic-update-slice":
            return (yield from self._dynamic_update_slice(inst, idx))
        if op == "gather":
            return (yield from self._gather(inst, idx))
        raise UnsupportedOpError(f"the {self.backend} backend has no index arithmetic for {op}",
                                 op=op)


    def index_vector_at(self, indices, ivd, batch_idx, k) -> str:
        """Element k of the index vector at batch position `batch_idx` of `indices`, as an
        int64 (the indices' other dimensions are the batch, in order)."""
        sub = list(batch_idx)
        if ivd < indices.shape.rank:
            sub.insert(ivd, str(k))
        return f"np.int64({self.value(indices, tuple(sub))})"

    def _gather(self, inst, idx) -> Values:
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
                sub = list(batch)  # as index_vector_at reads it
                if ivd < indices.shape.rank:
                    sub.insert(ivd, str(start_map.index(d)))
                start = f"np.int64({(yield indices, tuple(sub))})"
                var = self.w.fresh("start")
                self.w.line(f"{var} = min(max({start}, 0), {n - sizes[d]})")
                parts.append(var)
            if d not in collapsed:
                parts.append(next(offsets))
            src.append("(" + " + ".join(parts) + ")" if parts else "0")
        return (yield x, tuple(src))

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
        for k, n in enumerate(in_dims):
            stride //= n
            part = lin if stride == 1 else f"({lin} // {stride})"
            # The first index needs no remainder (the linear index is below the size), and
            # a dimension of one is index 0: no division left where none is needed.
            out.append("0" if n == 1 else part if k == 0 else f"({part} % {n})")
        return tuple(out)

    def _concatenate(self, inst, idx) -> Values:
        (axis,) = inst.attr("dimensions")
        pieces, offset = [], 0
        for o in inst.operands:
            n = o.dims[axis]
            i = idx[axis]
            clamped = f"min(max({i} - {offset}, 0), {n - 1})"
            sub = tuple(clamped if d == axis else j for d, j in enumerate(idx))
            pieces.append((offset + n, (yield o, sub)))
            offset += n
        expr = pieces[-1][1]
        for end, v in reversed(pieces[:-1]):
            expr = f"({v} if {idx[axis]} < {end} else {expr})"
        return expr

    def _pad(self, inst, idx) -> Values:
        x, pad_value = inst.operands
        conds, src = [], []
        for i, n, (lo, _, interior) in zip(idx, x.dims, inst.attr("padding")):
            step = interior + 1
            rel = f"({i} - {lo})"
            conds.append(f"{rel} >= 0 and {rel} % {step} == 0 and {rel} // {step} < {n}")
            src.append(f"min(max({rel} // {step}, 0), {n - 1})")
        inside = yield x, tuple(src)
        fill = yield pad_value, ()
        return f"({inside} if ({' and '.join(conds) or 'True'}) else {fill})"

    def _starts(self, operands, full, window) -> Generator[tuple, str, list[str]]:
        """XLA clamps dynamic start indices so the window stays inside the operand."""
        out = []
        for s, n, k in zip(operands, full, window):
            v = yield s, ()
            out.append(f"min(max(np.int64({v}), 0), {n - k})")
        return out

    def _dynamic_update_slice(self, inst, idx) -> Values:
        x, update = inst.operands[:2]
        starts = yield from self._starts(inst.operands[2:], x.dims, update.dims)
        names = []
        for s in starts:
            var = self.w.fresh("start")
            self.w.line(f"{var} = {s}")
            names.append(var)
        conds = [f"{s} <= {i} < {s} + {k}" for s, i, k in zip(names, idx, update.dims)]
        sub = tuple(f"min(max({i} - {s}, 0), {k - 1})" for s, i, k in zip(names, idx, update.dims))
        new = yield update, sub
        old = yield x, idx
        return f"({new} if ({' and '.join(conds) or 'True'}) else {old})"
