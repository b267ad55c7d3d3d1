"""The dask backend: the cpu backend's compiled kernels run per chunk of `dask.array`
arrays, the split planned by a partitioning pass after fusion (`passes/partition.py`) and
run by Dask (`runtime/dask.py`): on a `dask.distributed` cluster when a client is active.

Arguments are dask arrays (NumPy arrays too, split with `chunks=`: `xe.jit(f,
backend="dask", chunks=1000)`), results dask arrays, lazy. The trace never computes an
argument: it runs on stand-ins of the arguments' shapes and dtypes, so the program is
specialised on shapes, dtypes and chunks alone. Dask itself is imported only when a program
is compiled or run for this backend.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import CompileError, UnsupportedOpError
from ..ir.module import Instruction, Module
from ..passes.base import Note, Pass, PassResult
from ..passes.buffer_assignment import AssignBuffers, BufferAssignment
from ..passes.partition import REPLICATED, Partition, Split, partition
from ..passes.schedule import Schedule
from ..runtime.base import Executable
from .base import Backend, PassOptions


class DaskBackend(Backend):
    name = "dask"
    generates_code = False  # its speed is the cluster's: benchmarks/dask_cluster.py
    runs_loops = False  # a while loop would run whole on one worker: loops stay unrolled
    lazy = True  # dask arrays in and out

    def __init__(self, chunks=None, split: tuple[tuple[int, ...] | None,
                                                 tuple[Split, ...], tuple[str, ...]] | None = None):
        self.chunks = chunks  # for NumPy arguments: the leading axis's chunk length(s)
        # The batch's chunks, each parameter's split and what was rechunked to get them:
        # set by `prepare` for the arguments of one trace.
        self.split = split

    def unsupported(self, inst: Instruction) -> CompileError | None:
        if inst.opcode == "while":
            md = inst.metadata
            return UnsupportedOpError(
                f"the dask backend does not split while loops ({inst.name}, made by "
                "xe.fori_loop): a chunk's program is compiled without its body",
                op="while", source_file=md.source_file or None,
                source_line=md.source_line or None,
                hint="Write the loop as a Python loop (it unrolls while tracing), or run it "
                     "with backend='cpu'.")
        return self.refuse_library_call(inst, "LAPACK needs the whole matrix, and the "
                                               "dask backend runs each kernel on a chunk of "
                                               "its operands") or super().unsupported(inst)

    def configured(self, **options) -> Backend:
        unknown = set(options) - {"chunks"}
        if unknown:
            raise TypeError(f"the dask backend takes chunks=, not {', '.join(sorted(unknown))}")
        return DaskBackend(chunks=options.get("chunks"))

    def compile_key(self) -> tuple:
        return (self.name, self.split[:2] if self.split else None)

    def prepare(self, args: Sequence) -> tuple[Backend, list]:
        """This backend for `args` (their chunks decide the split) and the stand-ins the
        trace runs on: arrays of their shapes and dtypes whose values are never read from
        the arguments, so no dask array is computed."""
        import dask.array as da

        arrays = [a if isinstance(a, da.Array) else
                  da.from_array(a, chunks=self._numpy_chunks(a)) if isinstance(a, np.ndarray)
                  else None for a in args]
        split = split_of(arrays)
        stand_ins = [_stand_in(a.shape, a.dtype) if a is not None else x
                     for a, x in zip(arrays, args)]
        return DaskBackend(self.chunks, split), stand_ins

    def _numpy_chunks(self, a: np.ndarray):
        if self.chunks is None or a.ndim == 0:
            return a.shape or ()
        lead = self.chunks if isinstance(self.chunks, int) else tuple(self.chunks)
        return (lead,) + tuple((d,) for d in a.shape[1:])

    def passes(self, options: PassOptions) -> list[Pass]:
        # The default pipeline with the partitioning pass after the fusion passes (it plans
        # kernels) and no buffer assignment: each chunk's program gets its own where it
        # is compiled, on a worker.
        chunks, splits, notes = self.split or (None, (), ())
        out: list[Pass] = []
        for p in super().passes(options):
            if isinstance(p, AssignBuffers):
                continue
            if isinstance(p, Schedule):
                out.append(_WithNotes(Partition(chunks, splits), notes))
            out.append(p)
        return out

    def compile(self, module: Module, assignment: BufferAssignment | None) -> Executable:
        from ..runtime.dask import DaskExecutable

        chunks, splits, _ = self.split or (None, (), ())
        return DaskExecutable(module, partition(module, chunks, splits))


def _stand_in(shape, dtype) -> np.ndarray:
    """What the trace runs on in place of a dask array: ones, plus the identity on the last
    two axes of a matrix (1 + I is neither singular nor indefinite), so that NumPy's eager
    run of np.linalg.solve & co. answers and the backend can refuse them by name."""
    x = np.ones(shape, dtype)
    if len(shape) >= 2 and np.dtype(dtype).kind in "iuf":
        x += np.eye(*shape[-2:], dtype=dtype)
    return x


class _WithNotes(Pass):
    """A pass with notes of the backend's put first (what was rechunked to split)."""

    def __init__(self, inner: Pass, notes: tuple[str, ...]):
        self.inner, self.notes, self.name = inner, notes, inner.name

    def run(self, module: Module) -> PassResult:
        r = self.inner.run(module)
        first = tuple(Note(n, rule="rechunk") for n in self.notes)
        return PassResult(r.module, r.changed, first + r.notes, r.artifact)


def split_of(arrays: list) -> tuple[tuple[int, ...] | None, tuple[Split, ...], tuple[str, ...]]:
    """(the batch's chunks, each argument's split, the rechunks this needs, in words): the
    batch is the leading axis of the first argument chunked along it; every argument as long
    on its leading axis is split alike; other axes, and other arguments, are whole."""
    lead = next((a for a in arrays if a is not None and a.ndim and len(a.chunks[0]) > 1), None)
    if lead is None:
        return None, tuple(REPLICATED for _ in arrays), ()
    n, chunks = lead.shape[0], tuple(lead.chunks[0])
    splits, notes = [], []
    for k, a in enumerate(arrays):
        if a is None or not a.ndim or a.shape[0] != n:
            splits.append(REPLICATED)
            if a is not None and a.ndim and any(len(c) > 1 for c in a.chunks):
                notes.append(f"argument {k} ({a.shape}) is not as long as the batch ({n}): "
                             "rechunked to one chunk, whole on every worker")
            continue
        splits.append(Split("batched", 0))
        if tuple(a.chunks[0]) != chunks:
            notes.append(f"argument {k}'s rows are chunked {tuple(a.chunks[0])}: rechunked "
                         f"to the batch's chunks {chunks}")
        spans = [ax for ax, c in enumerate(a.chunks[1:], 1) if len(c) > 1]
        if spans:
            notes.append(f"argument {k} is chunked along axis {spans[0]} too: its rows span "
                         "chunks, so it is rechunked to whole rows (a row's reduction then "
                         "runs within one chunk)")
    return chunks, tuple(splits), tuple(notes)
