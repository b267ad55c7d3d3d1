"""Linear algebra: np.matmul (and the @ operator), np.dot and np.einsum (one or two
operands), each one HLO dot with the transposes and reductions around it.
"""
from __future__ import annotations

import numpy as np

from ...errors import TraceError
from ...ir.shape import is_supported_dtype
from ..tracer import active_builder, dtype_error, located, node_of, value_of
from .registry import lowers, lowers_gufunc
from .util import eager, unsupported, wrap


def _promote_pair(a, c, value):
    # NumPy's result type is the operands' common type (a Python scalar operand of np.dot is
    # a 0-d float64 array there, not a weak scalar, so take the type from NumPy's answer).
    b = active_builder()
    dt = np.asarray(value).dtype
    if not is_supported_dtype(dt):
        raise dtype_error("the product", dt)
    return b, node_of(a, dt), node_of(c, dt)


@lowers_gufunc(np.matmul)
def matmul(a, c):
    b = active_builder()
    value = eager(np.matmul, "np.matmul", value_of(a), value_of(c))
    _, x, y = _promote_pair(a, c, value)
    if x.shape.rank == 0 or y.shape.rank == 0:
        raise located(TraceError, "np.matmul does not take scalars", "np.matmul", "Use *.")
    xv = x if x.shape.rank > 1 else b.reshape(x, (1,) + x.dims)
    yv = y if y.shape.rank > 1 else b.reshape(y, y.dims + (1,))
    batch = np.broadcast_shapes(xv.dims[:-2], yv.dims[:-2])
    xv = b.broadcast_to(xv, batch + xv.dims[-2:])
    yv = b.broadcast_to(yv, batch + yv.dims[-2:])
    nb = len(batch)
    node = b.dot(xv, yv, tuple(range(nb)), (nb + 1,), tuple(range(nb)), (nb,))
    node = b.reshape(node, np.shape(value))
    return wrap(node, value, "np.matmul")


@lowers(np.dot)
def _dot(value, a, c, out=None):
    b, x, y = _promote_pair(a, c, value)
    if x.shape.rank == 0 or y.shape.rank == 0:
        return b.ew("multiply", b.broadcast_to(x, np.shape(value)), b.broadcast_to(y, np.shape(value)))
    rc = 0 if y.shape.rank == 1 else y.shape.rank - 2
    return b.dot(x, y, (), (x.shape.rank - 1,), (), (rc,))


@lowers(np.einsum)
def _einsum(value, subscripts, *operands, **kw):
    if kw.get("optimize") not in (None, False, True, "greedy", "optimal") or set(kw) - {"optimize"}:
        raise unsupported("einsum", f" with {', '.join(kw)}")
    if not isinstance(subscripts, str) or "..." in subscripts:
        raise unsupported("einsum", " in this form (use explicit subscripts without '...')")
    b = active_builder()
    spec = subscripts.replace(" ", "")
    ins, _, out = spec.partition("->")
    terms = ins.split(",")
    if "->" not in spec:
        letters = "".join(terms)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(terms) != len(operands) or len(terms) > 2:
        raise unsupported("einsum", " with more than two operands")
    dt = np.asarray(value).dtype
    nodes = [node_of(o, dt) for o in operands]
    for t in terms:
        if len(set(t)) != len(t):
            raise unsupported("einsum", f" with a repeated index in {t!r} (a diagonal or trace)")
    # First sum away indices that appear in one operand only and not in the output.
    for k, t in enumerate(terms):
        others = "".join(terms[:k] + terms[k + 1:]) + out
        gone = [i for i, c in enumerate(t) if c not in others]
        if gone:
            nodes[k] = b.reduce(nodes[k], gone, "or" if dt == np.bool_ else "add")
            terms[k] = "".join(c for c in t if c in others)
    if len(terms) == 1:
        (t,) = terms
        return b.transpose(nodes[0], [t.index(c) for c in out])
    (ta, tb), (x, y) = terms, nodes
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    node = b.dot(x, y, [ta.index(c) for c in batch], [ta.index(c) for c in contract],
                 [tb.index(c) for c in batch], [tb.index(c) for c in contract])
    got = batch + [c for c in ta if c not in tb] + [c for c in tb if c not in ta]
    return b.transpose(node, [got.index(c) for c in out])

