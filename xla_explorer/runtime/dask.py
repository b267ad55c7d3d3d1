"""Running a partitioned module on Dask: each kernel's steps as tasks over the chunks, each
task the cpu backend's compiled program for that chunk's shape, and the partials of a
reduction over the batch combined in a tree (the all-reduce).

A call builds a `dask.array` graph and returns its arrays, lazy: nothing runs until the
caller computes them, on whatever scheduler is active (a `dask.distributed` client's
cluster, or Dask's threads). A task carries the text of the module it runs; a worker parses
and compiles it once (per process, by text), so a cluster's workers need only this package
installed. Two tasks of one worker may run one compiled program at once: the cpu
executable gives a second concurrent call an arena of its own (runtime/executable.py).
"""
from __future__ import annotations

import functools
import operator
import threading
import uuid
from typing import Sequence

import numpy as np

from ..ir.module import Module
from ..passes.partition import (REPLICATED, SPLIT_EVERY, Partitioning, Split, chunk_module)
from .base import Executable

# Module text -> its compiled program, in this process (a worker's cache).
_PROGRAMS: dict[str, Executable] = {}
_LOCK = threading.Lock()


def compiled(text: str) -> Executable:
    """The cpu backend's program for `text`, compiled once per process: the default
    pipeline with the cpu's scratch space, then its executable, as `backends/cpu.py` makes
    it (loops stay unrolled: a chunk's program is one step's kernels)."""
    program = _PROGRAMS.get(text)
    if program is None:
        # Imported here: a worker imports Numba when it first runs a task.
        from ..codegen.packing import cpu_scratch_bytes
        from ..ir.parser import parse_hlo
        from ..passes.base import Pipeline
        from ..passes.buffer_assignment import BufferAssignment
        from ..passes.pipeline import default_passes
        from .executable import CpuExecutable

        with _LOCK:
            program = _PROGRAMS.get(text)
            if program is None:
                pipeline = Pipeline(default_passes(roll_loops=False, scratch=cpu_scratch_bytes))
                final = pipeline.run(parse_hlo(text))
                assignment = pipeline.stages[-1].artifact
                assert isinstance(assignment, BufferAssignment)
                program = CpuExecutable(final, assignment)
                _PROGRAMS[text] = program
    return program


def run_text(text: str, *blocks) -> list:
    """A task: the program of `text` on NumPy blocks; its root tuple's values."""
    return compiled(text)(*[np.require(b, requirements="C") for b in blocks])


def combine(reducer: str, *partials):
    """A tree node of the all-reduce: partials combined by the reducer's op."""
    ufunc = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
             "minimum": np.minimum, "and": np.logical_and, "or": np.logical_or}[reducer]
    out = np.asarray(partials[0])
    for p in partials[1:]:
        out = ufunc(out, p)
    return out


def statistics(count: int, mean, m2) -> tuple:
    """A leaf of Chan's merge: one chunk's (count, mean, M2), its mean shaped as its M2."""
    m2 = np.asarray(m2)
    return count, np.asarray(mean).reshape(m2.shape), m2


def chan(*parts) -> tuple:
    """A tree node of Chan, Golub and LeVeque's parallel variance: (count, mean, M2) of
    disjoint parts merged into those of their union (passes/moments.py has the formula).
    NumPy's rules keep the partials' dtype: the counts enter as Python numbers."""
    n, mean, m2 = parts[0]
    for nb, mb, m2b in parts[1:]:
        total = n + nb
        delta = mb - mean
        mean = mean + delta * (nb / total)
        m2 = m2 + m2b + delta * delta * (n * nb / total)
        n = total
    return n, mean, m2


def m2_of(merged: tuple):
    """The total M2 of a merge's (count, mean, M2)."""
    return np.asarray(merged[2])


def concatenate(axis: int, *blocks):
    return np.concatenate(blocks, axis=axis)


class _Value:
    """An array value in the graph: its name (blocks keyed (name, *index)), shape, dtype,
    split and, when batched, its chunks along the batch axis."""

    def __init__(self, name: str, shape: tuple, dtype, split: Split):
        self.name, self.shape, self.dtype, self.split = name, tuple(shape), np.dtype(dtype), split

    def key(self, i: int = 0) -> tuple:
        index = [0] * len(self.shape)
        if self.split.kind == "batched":
            index[self.split.dim] = i
        return (self.name, *index)


class DaskExecutable(Executable):
    """A module and its partitioning: called with dask arrays (or NumPy arrays, split as the
    plan says), returns dask arrays, one per element of the root."""

    def __init__(self, module: Module, plan: Partitioning):
        if module.input_output_alias:
            from ..errors import CompileError

            raise CompileError(
                f"{module.name} updates its inputs in place, which the dask backend does not "
                "do: dask arrays are immutable", op="dask",
                hint="Return the new values instead (w = w - lr * dw; return w).")
        self.module, self.plan = module, plan
        self._texts: dict[tuple, str] = {}

    def bench(self, name: str, eager, run, args, repeat: int, output_bytes: int):
        """Eager (the function on dask arrays: Dask's own NumPy) against the compiled graph,
        each computed, on the active scheduler: a call alone only builds a graph. Peak bytes
        are this process's, so on a cluster they leave the workers out
        (benchmarks/dask_cluster.py measures those)."""
        import dask

        return super().bench(name, lambda *a: dask.compute(eager(*a)),
                             lambda *a: dask.compute(run(*a)), args, repeat, output_bytes)

    def kernel_text(self, kernel: str, step: int, rows: int) -> str:
        """The text of the module a chunk of `rows` rows runs for a step of a kernel."""
        key = (kernel, step, rows)
        if key not in self._texts:
            s = self.plan.kernels[kernel].steps[step]
            self._texts[key] = chunk_module(s, rows, f"{kernel}.{step}.r{rows}").to_text(
                metadata=False)
        return self._texts[key]

    def __call__(self, *args) -> list:
        import dask.array as da
        from dask.highlevelgraph import HighLevelGraph

        params = self.module.entry.parameters
        if len(args) != len(params):
            raise TypeError(f"{self.module.name} takes {len(params)} arguments, got {len(args)}")
        chunks = self.plan.chunks
        inputs, env = [], {}
        for p, a in zip(params, args):
            split = self.plan.parameters[p.parameter_number] if chunks else REPLICATED
            arr = a if isinstance(a, da.Array) else da.from_array(np.asarray(a))
            if tuple(arr.shape) != p.dims:
                raise TypeError(f"parameter {p.name} is {p.shape}; got shape {arr.shape}")
            arr = arr.astype(p.dtype) if arr.dtype != p.dtype else arr
            want = tuple((chunks if split.kind == "batched" and ax == 0 else (n,))
                         for ax, n in enumerate(p.dims))
            arr = arr.rechunk(want) if arr.chunks != want else arr
            inputs.append(arr)
            env[p.name] = _Value(arr.name, p.dims, p.dtype, split)
        graph: dict = {}
        rows = chunks or ()
        for inst in self.module.entry.instructions:
            if inst.opcode == "parameter":
                continue
            if inst.opcode == "get-tuple-element":
                env[inst.name] = env[inst.operands[0].name][inst.attr("index")]
            elif inst.opcode == "tuple":
                env[inst.name] = tuple(env[o.name] for o in inst.operands)
            elif inst.name in self.plan.kernels:
                out = self._kernel(inst, [env[o.name] for o in inst.operands], rows, graph)
                env[inst.name] = tuple(out) if inst.shape.is_tuple else out[0]
            else:  # an entry constant
                name = f"{inst.name}-{uuid.uuid4().hex[:8]}"
                graph[(name,) + (0,) * len(inst.dims)] = np.array(inst.literal.reshape(inst.dims))
                env[inst.name] = _Value(name, inst.dims, inst.dtype, REPLICATED)
        root = env[self.module.entry.root.name]
        values = list(root) if isinstance(root, tuple) else [root]
        given = {a.name: a for a in inputs}
        out = []
        for v in values:
            if v.name in given:  # an argument returned as it is
                out.append(given[v.name])
                continue
            # Dask finds an array's tasks in the layer named as the array: each output's
            # layer is the whole graph (one dict, shared), so that arrays built on it (p.sum())
            # and computed together (dask.compute(e, p)) see one graph.
            hlg = HighLevelGraph.from_collections(v.name, graph, dependencies=inputs)
            c = tuple((rows if v.split.kind == "batched" and ax == v.split.dim else (n,))
                      for ax, n in enumerate(v.shape))
            out.append(da.Array(hlg, v.name, c, meta=np.empty((0,) * len(v.shape), v.dtype)))
        return out

    def _kernel(self, inst, operands: list, rows: Sequence[int], graph: dict) -> list:
        plan = self.plan.kernels[inst.name]
        if plan.rechunk:  # whole arrays: batched operands concatenated into one block
            operands = [self._whole(v, rows, graph) for v in operands]
        values: dict[str, _Value] = {f"operand.{n}": v for n, v in enumerate(operands)}
        for k, step in enumerate(plan.steps):
            ins = [values[name] for name in step.inputs]
            per_chunk = step.per_chunk and not plan.rechunk
            n = len(rows) if per_chunk else 1
            task = f"{inst.name}.step{k}-{uuid.uuid4().hex[:8]}"
            for i in range(n):
                text = self.kernel_text(inst.name, k, rows[i] if per_chunk else 0)
                graph[(task, i)] = (functools.partial(run_text, text),
                                    *[v.key(i if per_chunk else 0) for v in ins])
            stats = {s.m2: s for s in step.statistics}
            for j, name in enumerate(step.outputs):
                member = step.computation.get(name)
                out = _Value(f"{name}-{uuid.uuid4().hex[:8]}", member.dims, member.dtype,
                             step.splits[name])
                if out.split.kind == "local":  # a chunk's mean: read by its M2's merge
                    continue
                if out.split.reducer == "moments":
                    stat = stats[name]
                    leaves = [(statistics, rows[i] * stat.per_row,
                               (operator.getitem, (task, i), step.outputs.index(stat.mean)),
                               (operator.getitem, (task, i), j)) for i in range(n)]
                    values[name] = self._combine(out, leaves, graph)
                    continue
                if out.split.kind == "partial":
                    leaves = [(operator.getitem, (task, i), j) for i in range(n)]
                    values[name] = self._combine(out, leaves, graph)
                    continue
                for i in range(n if out.split.kind == "batched" else 1):
                    graph[out.key(i)] = (operator.getitem, (task, i), j)
                values[name] = out
        return [values[name] for name in plan.roots]

    def _combine(self, out: _Value, leaves: list, graph: dict) -> _Value:
        """The tree combine of a step's partial output, one leaf a chunk: the all-reduce.
        An M2's leaves are (count, mean, M2), merged by Chan's formula."""
        moments = out.split.reducer == "moments"
        node = chan if moments else functools.partial(combine, out.split.reducer)
        level, depth = leaves, 0
        while len(level) > 1:
            nxt = []
            for g in range(0, len(level), SPLIT_EVERY):
                key = (f"{out.name}-combine{depth}", g // SPLIT_EVERY)
                graph[key] = (node, *level[g:g + SPLIT_EVERY])
                nxt.append(key)
            level, depth = nxt, depth + 1
        graph[(out.name,) + (0,) * len(out.shape)] = (m2_of if moments else np.asarray,
                                                     level[0])
        return _Value(out.name, out.shape, out.dtype, REPLICATED)

    def _whole(self, v: _Value, rows: Sequence[int], graph: dict) -> _Value:
        """`v` as one block: a batched value's chunks concatenated (a rechunk)."""
        if v.split.kind != "batched" or len(rows) < 2:
            return _Value(v.name, v.shape, v.dtype, REPLICATED) if len(rows) < 2 else v
        name = f"{v.name}-whole"
        graph[(name,) + (0,) * len(v.shape)] = (concatenate, v.split.dim,
                                               *[v.key(i) for i in range(len(rows))])
        return _Value(name, v.shape, v.dtype, REPLICATED)
