"""One CPU kernel: the shape its fusion runs as, and its `@njit` function assembled.

  row      every reduction in the kernel reduces the same trailing dimensions of one loop
           space, or there is no reduction and one output shape (rows.py)
  general  anything else (a column sum, reductions over different dimensions, a dot with its
           epilogue, a scatter, scan or sort): each phase fills its array in a loop nest of
           its own (reduce.py, dot.py, codegen/phases/), then each output is written in a loop
           over its shape (loop.py).
"""
from __future__ import annotations

from ...ir.module import Computation, Module
from ...ir.ops import is_expensive
from .. import exprs
from ..analysis import phases, row_plan
from ..elemental import Elemental
from ..options import DEFAULT_OPTIONS, CodegenOptions
from ..phases.scan import emit_scan
from ..phases.scatter import emit_scatter
from ..phases.sort import emit_sort
from ..writer import KernelSource, Writer, np_type, storage_type
from .dot import Products, emit_dot
from .loop import Loops, allocate_array, emit_outputs
from .outline import outline
from .reduce import emit_reduce
from .rows import emit_rows
from .sizes import generalize

# The general shape's phase body for the ops codegen/phases/ writes for every target.
PHASES = {"reduce-window": emit_scan, "sort": emit_sort}


def emit_kernel(module: Module, comp: Computation, name: str, kind: str, row: bool,
                options: CodegenOptions = DEFAULT_OPTIONS) -> KernelSource:
    """The `@njit` function computing `comp` (a fusion's computation, or one op's)."""
    core = Elemental(module, comp, Writer(), allocate=allocate_array, backend="CPU")
    if options.generic_sizes:
        core.numbers = {}  # scalar constants as arguments, as sizes are read (sizes.py)
    expensive = any(is_expensive(i) for i in core.comp.instructions)
    loops = Loops(core, options, options.parallel_from(expensive))
    products = Products()
    plan = row_plan(core.comp, core.outputs)
    if plan is not None:
        emit_rows(loops, *plan)
    else:
        _emit_general(loops, products)
    work = ["work"] if products.workspace else []
    numbers = list((core.numbers or {}).values())
    header = [f"@njit(cache=True, fastmath=FASTMATH, error_model=\"numpy\", "
              f"parallel={loops.parallel})",
              f"def {name}({', '.join(core.arguments + work + [n[0] for n in numbers])}):"]
    if plan is None:
        shape = "loop nests, phase by phase"
    elif plan[0]:
        shape = f"{' x '.join(map(str, plan[0]))} rows of {list(plan[1])}"
    else:
        shape = "one row"
    what = "row fusion" if row else kind
    doc = (f'    """{what} kernel, the fused computation {core.comp.name}: runs as '
           f'{shape}."""')
    # What each constant taken as an argument is (a comment: the code is the same for any).
    body = [f"    # {n} = {exprs.literal(value, dtype)}, {hlo}: an argument, so that another "
            "value reuses this kernel" for n, dtype, value, hlo in numbers]
    body += core.w.lines or ["    pass"]
    source = "\n".join(header + [doc] + body) + "\n"
    if options.generic_sizes:
        source = generalize(source, [(a, s.dims) for a, s in
                                     zip(core.arguments, core.argument_shapes)])
    outlined = None
    if loops.parallel and options.thread_workers:
        outlined = outline(source, name, {
            **{a: ("array", storage_type(s.dtype), s.rank, "C")
               for a, s in zip(core.arguments, core.argument_shapes)},
            **{n: ("scalar", np_type(dtype)) for n, dtype, _, _ in numbers}})
    return KernelSource(name, core.comp.name, outlined or source,
                        len(core.params), len(core.outputs), loops.parallel, products.gemm,
                        products.workspace, loops.claims_blocks, tuple(products.line_outputs),
                        workers=outlined is not None,
                        numbers=tuple((dtype, value) for _, dtype, value, _ in numbers))


def _emit_general(loops: Loops, products: Products) -> None:
    """Scatters first, then every phase in program order, then the outputs not yet written."""
    core = loops.core
    for inst in core.comp.instructions:
        if inst.opcode == "scatter":
            emit_scatter(core, loops, inst)
    for inst in phases(core.comp):
        if inst.opcode == "dot":
            emit_dot(loops, inst, products)
        elif inst.opcode in PHASES:
            PHASES[inst.opcode](core, loops, inst)
        else:
            emit_reduce(loops, inst)
    if not products.epilogue_done:
        emit_outputs(loops, core.outputs, parallel_ok=True)
