"""The source of an exported program: the CPU program's kernels, rendered serial, and an
entry `run(<parameters>)` that allocates the arena and the outputs, calls the kernels in
schedule order and returns the outputs.

It is the CPU driver's program (cpu/driver.py) with three changes an ahead-of-time module
needs: the product imports gemm.py's `aot_*` routines, which Numba compiles into the module,
where the JIT's kernels reach the product through symbols of this process; the parameters are
`CheckedArray`s (export/checked.py), checked before they are read; and the arena and the
outputs are made by the entry itself, since the module has no executable to keep them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ...errors import CompileError
from ...ir.module import Module
from ..cpu.driver import FASTMATH, HEADER, Program
from ..program import Launch, call_arguments, driver_lines
from ..writer import identifier, storage_type, tuple_text

EXPORT_IMPORTS = ("from xla_explorer.codegen.cpu.views import arena_view\n"
                  "from xla_explorer.codegen.export.checked import plain\n"
                  "from xla_explorer.codegen.export.pages import huge_pages\n")
# The product's routines compiled into the module (gemm.py's aot_*), under the names the
# kernels call.
EXPORT_GEMM_IMPORT = ("from xla_explorer.codegen.gemm import (group_width, packed_b,\n"
                      "    aot_pack_b as pack_b, aot_pack_columns as pack_columns,\n"
                      "    aot_product_block as product_block, aot_product_rows as product_rows)\n"
                      "from xla_explorer.codegen.gemm_ir import local_array\n")

# The arena starts on a cache line, as the executable's does (runtime/executable.py): a
# product's packed B lies in it.
ALIGNED_BYTES = '''

@njit
def aligned_bytes(n):
    """n bytes starting on a 64-byte cache line."""
    raw = np.empty(n + 64, np.uint8)
    huge_pages(raw)
    start = -raw.ctypes.data % 64
    return raw[start:start + n]
'''


@dataclass(frozen=True)
class Parameter:
    """One argument of the exported `run`: its name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class ExportSource:
    """The rendered module: its source, the entry's name in it, its parameters, the
    constants it holds (name -> array, bound as globals, which Numba compiles into the
    module), and what `run` returns."""

    source: str
    entry: str
    parameters: tuple[Parameter, ...]
    constants: dict[str, np.ndarray]
    results: tuple[tuple[tuple[int, ...], np.dtype], ...]
    returns_tuple: bool  # `run` returns several arrays, as a tuple (else one array)


def refuse(module: Module, why: str, op: str | None = None) -> CompileError:
    return CompileError(f"cannot export {module.name}: {why}", op=op or "export")


def render(program: Program, output_shapes: list, names: list[str]) -> ExportSource:
    """The exported module's source for `program` (generated with `serial_only`), whose
    outputs (the buffer assignment's, in order) have `output_shapes`; its parameters are
    called `names`."""
    plan, module = program.plan, program.module
    assert plan is not None
    _refuse_unexportable(module, plan.launches)
    codes = [launch.code for launch in plan.launches]
    header = HEADER.format(module=module.name, fastmath="set()" if not FASTMATH else
                           "{" + ", ".join(map(repr, sorted(FASTMATH))) + "}")
    header += EXPORT_IMPORTS
    if any(k.gemm for k in codes):
        header += EXPORT_GEMM_IMPORT
    # No disk cache: the kernels are compiled once, into the extension, from a source file
    # in a temporary directory that goes when the build ends.
    kernels = [re.sub(r"@njit\(cache=True, ", "@njit(", k.source) for k in codes]
    params = tuple(Parameter(names[p.parameter_number], tuple(p.shape.dims),
                             np.dtype(p.shape.dtype)) for p in plan.parameters)
    # (np.array, not np.ascontiguousarray: that makes a 0-d constant 1-d.)
    constants = {f"c{k}": np.array(c.literal.reshape(c.dims), order="C")
                 for k, c in enumerate(plan.constants)}
    lines = [f"def run({', '.join(_argument(p.name) for p in params)}):",
             '    """The program, on checked arguments."""']
    lines += [f"    a{n} = plain({_argument(p.name)})" for n, p in enumerate(params)]
    lines.append(f"    arena = aligned_bytes({max(plan.layout.arena_bytes, 1)})")
    shapes = [(tuple(s.dims), np.dtype(s.dtype)) for s in output_shapes]
    for k, (dims, dtype) in enumerate(shapes):
        lines.append(f"    o{k} = np.empty({tuple_text(dims)}, dtype={storage_type(dtype)})")
        lines.append(f"    huge_pages(o{k})")
    lines += driver_lines(plan, _call, _arena_view)
    results, returned = [], []
    for kind, number in plan.outputs:
        name = {"output": "o", "parameter": "a", "constant": "c"}[kind] + str(number)
        # What comes back is the caller's own: never an argument or a constant itself, nor
        # one array twice.
        returned.append(name if kind == "output" and name not in returned else f"{name}.copy()")
        if kind == "output":
            results.append(shapes[number])
        else:
            array = (plan.parameters if kind == "parameter" else plan.constants)[number].shape
            results.append((tuple(array.dims), np.dtype(array.dtype)))
    single = len(returned) == 1  # one array, as the function returned it
    lines.append(f"    return {returned[0] if single else '(' + ', '.join(returned) + ',)'}")
    source = "\n\n".join([header + ALIGNED_BYTES] + kernels + ["\n".join(lines) + "\n"])
    return ExportSource(source, "run", params, constants, tuple(results), not single)


def _argument(name: str) -> str:
    return f"arg_{identifier(name)}"


def _call(launch: Launch) -> str:
    return f"{launch.function}({', '.join(call_arguments(launch))})"


def _arena_view(b) -> str:
    return f"arena_view(arena, {b.offset}, {tuple_text(b.shape)}, {storage_type(b.dtype)})"


def _refuse_unexportable(module: Module, launches) -> None:
    """What an exported module cannot hold, refused by name: float16 (its kernels take the
    bits, which the checked arguments do not give them), a while loop (its body is a
    program of its own, not yet exported with it), and any parallel loop (pycc compiles
    none; the program is rendered serial, so one here is a bug)."""
    for inst in module.entry.instructions:
        if inst.opcode == "while":
            raise refuse(module, f"{inst.name} is a while loop, whose body is a program of "
                         "its own that export does not yet carry", op="while")
        shapes = inst.shape.elements if inst.shape.is_tuple else (inst.shape,)
        if any(np.dtype(s.dtype) == np.float16 for s in shapes):
            raise refuse(module, f"{inst.name} is float16, which exported kernels do not take "
                         "yet; convert to float32 first", op=inst.opcode)
    for launch in launches:
        code = launch.code
        if code.parallel or code.claims_blocks:
            raise refuse(module, f"kernel {code.name} has a parallel loop, which Numba's "
                         "ahead-of-time compiler cannot compile (render it with serial_only)")
