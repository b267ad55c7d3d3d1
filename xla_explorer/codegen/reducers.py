"""What a reduce's reducer is, for every target: one op or a computation to inline, whether
its accumulation may run in parallel or be reordered, the type it accumulates in, and the
reducer applied to accumulators and values as generated lines."""
from __future__ import annotations

import numpy as np

from ..ir.module import Computation
from . import exprs


def simple_op(reducer: Computation) -> bool:
    """Whether the reducer is one op on its two parameters (add, max, ...)."""
    root = reducer.root
    params = set(map(id, reducer.parameters))
    return (len(reducer.instructions) == 3 and root.opcode != "tuple"
            and all(id(o) in params for o in root.operands))


def is_single_op(reducer: Computation, opcode: str) -> bool:
    return simple_op(reducer) and reducer.root.opcode == opcode


def is_sum(reducer: Computation, n: int) -> bool:
    """A single sum (`x += v` accumulates it)."""
    return n == 1 and is_single_op(reducer, "add")


def parallel_reducer(reducer: Computation, n: int) -> bool:
    """A sum runs in parallel (each block into a partial sum of its own, see
    `cpu/loop.py`'s parallel loop); other reducers run serially."""
    return is_sum(reducer, n)


def reassociable_step(reducer: Computation, n: int, dtype: np.dtype) -> str | None:
    """The helper that accumulates a float sum or product (`scalar.add_reassoc`,
    `multiply_reassoc`): the one operation of a kernel that LLVM may reassociate, so that its
    loop vectorizes. None for any other reducer."""
    if n != 1 or np.dtype(dtype).kind != "f":
        return None
    for opcode, helper in (("add", "add_reassoc"), ("multiply", "multiply_reassoc")):
        if is_single_op(reducer, opcode):
            return helper
    return None


def wide_accumulator(reducer: Computation, dtype: np.dtype, n: int) -> np.dtype:
    """float32 sums accumulate in float64: at least as accurate as NumPy's pairwise sum."""
    if n == 1 and dtype == np.float32 and is_single_op(reducer, "add"):
        return np.dtype(np.float64)
    return np.dtype(dtype)


def combine(w, reducer: Computation, accs, vals, dtype=None) -> list[str]:
    """The reducer applied to (accumulators, values): one op in one expression, any other
    reducer inlined instruction by instruction as lines of `w` (a writer)."""
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
        var = w.fresh(i.name)
        w.line(f"{var} = {exprs.scalar_expr(i, [env[id(o)] for o in i.operands])}")
        env[id(i)] = var
    outs = root.operands if root.opcode == "tuple" else (root,)
    return [env[id(o)] for o in outs]
