"""One CUDA kernel: the shape its fusion runs as, and its `@cuda.jit` function assembled with
its launch configuration (written as a header comment, with the reason).

  loop       one thread per output element over a grid-stride loop (loop.py)
  row        every reduction reduces the same trailing dimensions: a block (or a warp) per
             row, the block's tree for each reduction (rows.py)
  column     reductions over leading or middle dimensions: a thread per kept element
             (reduce.py)
  product    an output fusion: tiles of the result in shared memory (dot.py)
  one block  scatters, sorts, scans and the reductions the shapes above cannot take, as
             phases in one block (one_block.py)

Values come from the elemental core every target shares (codegen/elemental.py), so an element
of any instruction is the same generated expression here as on the CPU; what differs is how
the elements are shared out among threads.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import UnsupportedOpError
from ...ir.module import Computation, Module
from ..analysis import row_plan
from ..elemental import Elemental
from ..writer import Writer
from .dot import emit_product
from .loop import Layout, emit_loop
from .one_block import emit_one_block, shared_storage
from .reduce import column_plan, emit_columns
from .rows import emit_rows

# Ops that run as phases of their own in one block: a scatter (its updates in order, on one
# thread), a sort and a scan (one thread per row).
SERIAL_PHASES = ("scatter", "sort", "reduce-window")


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


def emit_kernel(module: Module, comp: Computation, name: str, kind: str,
                row: bool) -> CudaKernel:
    """The `@cuda.jit` kernel computing `comp` (a fusion's computation, or one op's)."""
    w = Writer()

    def allocate(core, inst, index):  # a phase's array: shared memory, which `layout` counts
        return shared_storage(layout, core, inst, index)

    core = Elemental(module, comp, w, allocate=allocate, backend="cuda")
    layout = Layout(core)
    instructions = core.comp.instructions
    plan = row_plan(core.comp, core.outputs)
    reduces = [i for i in instructions if i.opcode == "reduce"]
    dots = [i for i in instructions if i.opcode == "dot"]
    serial = [i for i in instructions if i.opcode in SERIAL_PHASES]
    if dots:
        if serial:
            raise UnsupportedOpError(
                f"the cuda backend does not compile {serial[0].opcode} "
                f"({serial[0].name}) fused with a product yet", op=serial[0].opcode)
        shape = "product"
        emit_product(layout, dots, reduces)
    elif serial or (plan is None and column_plan(core, reduces) is None):
        # anything else: its phases one after another in one block
        shape = "one-block"
        emit_one_block(layout, serial + reduces)
    elif plan is not None and not reduces:
        shape = "loop"
        emit_loop(layout)
    elif plan is not None:
        shape = "row"
        emit_rows(layout, *plan)
    else:
        shape = "column"
        emit_columns(layout)
    scratch = ["scratch"] if layout.scratch else []
    blocks = (f"one per multiprocessor (at most {layout.blocks})" if layout.cooperative
              else str(layout.blocks))
    header = [f"# launch: {blocks} x {layout.threads} (blocks x threads), {shape} kernel: "
              f"{layout.reason}",
              "@cuda.jit",
              f"def {name}({', '.join(core.arguments + scratch)}):"]
    what = "row fusion" if row else kind
    doc = f'    """{what} kernel, the fused computation {core.comp.name}."""'
    body = layout.declarations + w.lines or ["    pass"]
    return CudaKernel(name, core.comp.name, "\n".join(header + [doc] + body) + "\n",
                      layout.blocks, layout.threads, layout.reason, layout.scratch,
                      layout.cooperative)
