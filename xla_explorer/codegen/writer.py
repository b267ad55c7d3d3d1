"""Writing generated Python: lines with indentation and fresh local names, the scopes that
hold the values computed at each level, and the small pieces of text every target spells
alike (identifiers, NumPy type names, index and tuple text)."""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

import numpy as np

from ..ir.module import Instruction
from ..ir.printer import format_instruction
from . import exprs

# Numba cannot load or store float16: a float16 buffer a kernel reads or writes (a parameter,
# an output, a temporary of the arena) is passed as its bits, a uint16 view, and each element
# is converted on load (f16_load) and rounded on store (f16_bits); in between it is a float32.
F16 = np.dtype(np.float16)


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


def storage_type(dtype) -> str:
    """The NumPy type a buffer of `dtype` is viewed as when a kernel receives it."""
    return "np.uint16" if np.dtype(dtype) == F16 else np_type(dtype)


def tuple_text(dims) -> str:
    """dims as a Python tuple literal: `(3,)`, `(2, 4)`."""
    dims = list(dims)
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def index_text(array: str, idx) -> str:
    return f"{array}[{', '.join(idx)}]" if idx else f"{array}[()]"


def affine(i: str, start: int, stride: int) -> str:
    if stride == 1:
        return f"({start} + {i})" if start else i
    return f"({start} + {i} * {stride})"


@dataclass
class KernelSource:
    """One CPU kernel's generated function: its name, its source, how it is called."""

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
    workers: bool = False  # its parallel loops are thread workers (codegen/cpu/outline.py)
    # Scalar constants it takes after its other arguments, (dtype, value) each
    # (Elemental.numbers): the driver passes them.
    numbers: tuple = ()

    @property
    def scratch(self) -> int:
        """Bytes of the arena's scratch space it takes (the program's plan reads this)."""
        return self.workspace


@dataclass
class Scope:
    """One level of indentation in a kernel: the values computed at it, the lines that follow
    it once it is closed, whether it closes with the level inside it (the levels of one
    parallel loop), and how many of its caller's loops it stands for besides itself (a CUDA
    block-stride loop over several flattened dimensions)."""

    values: dict = field(default_factory=dict)
    after: list = field(default_factory=list)
    with_inner: bool = False
    extra: int = 0


class Writer:
    """Lines of Python with indentation, fresh local names, and the scope of each level."""

    def __init__(self):
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.top = 0
        self.scopes: list[Scope] = [Scope()]

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

    # -- levels -----------------------------------------------------------------------------

    def lookup(self, key):
        """A value computed at this level or an enclosing one, or None."""
        for scope in reversed(self.scopes):
            if key in scope.values:
                return scope.values[key]
        return None

    def keep(self, key, var: str) -> None:
        self.scopes[-1].values[key] = var

    def open(self, with_inner: bool = False, after=(), extra: int = 0) -> None:
        """A new level of indentation, after a line that opens one."""
        self.depth += 1
        self.scopes.append(Scope(after=list(after), with_inner=with_inner, extra=extra))

    def for_nest(self, dims) -> tuple[str, ...]:
        """Open plain loops over `dims` (row-major), returning their indices; the caller
        closes them with `close(len(dims))`."""
        idx = []
        for n in dims:
            i = self.fresh("i")
            self.line(f"for {i} in range({n}):")
            self.open()
            idx.append(i)
        return tuple(idx)

    def close(self, n: int) -> None:
        """Close n of the caller's loops (with the levels that close with each), writing what
        follows each; a level that stands for several loops counts as all of them."""
        while n > 0:
            extra = self.scopes[-1].extra
            self._close_level()
            while self.scopes[-1].with_inner:
                self._close_level()
            n -= 1 + extra

    def _close_level(self) -> None:
        self.depth -= 1
        for line in self.scopes.pop().after:
            self.line(line)
