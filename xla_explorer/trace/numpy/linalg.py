"""Linear algebra: np.matmul (and the @ operator), np.dot and np.einsum (any number of
operands, diagonals and '...'), each HLO dots with the transposes and reductions around
them; np.vdot, np.inner and np.tensordot (one dot), np.outer, np.kron and np.cross
(broadcasts, slices and products), np.trace (a strided slice and a sum) and np.linalg.norm
(vector norms, and matrix norms: Frobenius, 1, -1, inf and -inf as reductions; 2, -2 and
'nuc' from the singular values, a library call: lapack.py).
"""
from __future__ import annotations

import numpy as np

from ...errors import TraceError
from ...ir.module import Instruction
from ...ir.shape import is_supported_dtype
from ..context import active_builder, dtype_error, located
from ..tracer import node_of, value_of
from .lapack import matrix_norm
from .registry import lowers, lowers_gufunc
from .util import canonical_axes, eager, unsupported, wrap


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
    if x.shape.rank <= 2 and y.shape.rank <= 2:
        # No batch: one dot, a vector operand kept a vector, as jax.numpy.matmul writes it
        # (a reshape to a matrix would be a kernel of its own, a copy, for a parameter).
        return wrap(b.dot(x, y, (), (x.shape.rank - 1,), (), (0,)), value, "np.matmul")
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
    """np.einsum as NumPy's optimize=False reads it, pairwise from the left: in each operand a
    repeated index is its diagonal (an iota compare, a select and a sum) and an index no other
    operand nor the output has is summed away; then each pair is one dot (batch and
    contracting dimensions) and a transpose. '...' stands for the same broadcast dimensions
    in every operand."""
    if kw.get("optimize") not in (None, False, True, "greedy", "optimal") or set(kw) - {"optimize"}:
        raise unsupported("einsum", f" with {', '.join(kw)}")
    if not isinstance(subscripts, str):
        raise unsupported("einsum", " with operands and subscript lists interleaved (write "
                                    "the subscripts as one string)")
    b = active_builder()
    result = np.asarray(value).dtype
    # NumPy's float16 einsum accumulates in float32 and rounds once, at the end.
    dt = np.dtype(np.float32) if result == np.float16 else result
    nodes = [b.convert(node_of(o, result), dt) for o in operands]
    terms, out = _einsum_terms(subscripts.replace(" ", ""), [n.shape.rank for n in nodes])
    sizes: dict[str, int] = {}
    for t, n in zip(terms, nodes):
        for c, d in zip(t, n.dims):
            if d != 1 or c not in sizes:
                sizes[c] = d
    # size-1 dimensions broadcast against the others, as NumPy's einsum broadcasts them
    nodes = [b.broadcast_to(n, tuple(sizes[c] for c in t)) for t, n in zip(terms, nodes)]
    for k in range(len(nodes)):
        nodes[k], terms[k] = _einsum_diagonal(b, nodes[k], terms[k], dt)
    x, tx = _einsum_sum_alone(b, nodes[0], terms[0], terms[1:], out, dt)
    for k in range(1, len(nodes)):
        rest = terms[k + 1:]
        y, ty = _einsum_sum_alone(b, nodes[k], terms[k], [tx] + rest, out, dt)
        keep = "".join(c for c in dict.fromkeys(tx + ty) if c in out or any(c in t for t in rest))
        x, tx = _einsum_pair(b, x, tx, y, ty, keep), keep
    return b.convert(b.transpose(x, [tx.index(c) for c in out]), result)


def _einsum_terms(spec: str, ranks: list[int]):
    """The operands' and the output's index letters, '...' replaced by letters of its own
    (the output's implicit form: '...' first, then the letters used once, sorted)."""
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if len(terms) != len(ranks):
        raise unsupported("einsum", " with as many subscripts as operands only")
    letters = "".join(terms).replace(".", "")
    if not arrow:
        out = ("..." if "..." in ins else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
             if c not in letters + out]
    widest = max([r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t],
                 default=0)
    ell = "".join(spare[:widest])
    terms = [t.replace("...", ell[len(ell) - (r - len(t.replace("...", ""))):])
             if "..." in t else t for t, r in zip(terms, ranks)]
    return terms, out.replace("...", ell)


def _einsum_diagonal(b, x, t, dt):
    """A letter repeated in one operand ('ii'): keep the elements where those indices agree
    (an iota compare and a select) and sum the second one away."""
    while len(set(t)) != len(t):
        c = next(c for c in t if t.count(c) > 1)
        i, j = t.index(c), t.index(c, t.index(c) + 1)
        same = b.compare(b.iota(np.int64, x.dims, i), b.iota(np.int64, x.dims, j), "EQ")
        x = b.select(same, x, b.full(0, dt, x.dims))
        x = b.reduce(x, (j,), "or" if dt == np.bool_ else "add")
        t = t[:j] + t[j + 1:]
    return x, t


def _einsum_sum_alone(b, x, t, others, out, dt):
    """Sum away the indices of t that neither the output nor another operand has."""
    keep = "".join(others) + out
    gone = [i for i, c in enumerate(t) if c not in keep]
    if not gone:
        return x, t
    return (b.reduce(x, gone, "or" if dt == np.bool_ else "add"),
            "".join(c for c in t if c in keep))


def _einsum_pair(b, x, ta, y, tb, keep):
    """One dot: letters in both operands are batch dimensions if kept, else contracted."""
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    node = b.dot(x, y, [ta.index(c) for c in batch], [ta.index(c) for c in contract],
                 [tb.index(c) for c in batch], [tb.index(c) for c in contract])
    got = batch + [c for c in ta if c not in tb] + [c for c in tb if c not in ta]
    return b.transpose(node, [got.index(c) for c in keep])


# -- products built from dot and broadcasts: np.outer, np.kron, np.vdot, np.inner, np.cross,
# np.tensordot; np.trace (a diagonal and a sum) ------------------------------------------------


def _result_type(value):
    dt = np.asarray(value).dtype
    if not is_supported_dtype(dt):
        raise dtype_error("the product", dt)
    return dt


@lowers(np.outer)
def _outer(value, a, c, out=None):
    b = active_builder()
    dt = _result_type(value)
    x, y = node_of(a, dt), node_of(c, dt)
    dims = np.shape(value)
    x = b.broadcast(b.reshape(x, (x.shape.size,)), dims, (0,))
    y = b.broadcast(b.reshape(y, (y.shape.size,)), dims, (1,))
    return b.ew("multiply", x, y)


@lowers(np.kron)
def _kron(value, a, c):
    b = active_builder()
    dt = _result_type(value)
    x, y = node_of(a, dt), node_of(c, dt)
    d = max(x.shape.rank, y.shape.rank)
    xd = (1,) * (d - x.shape.rank) + x.dims
    yd = (1,) * (d - y.shape.rank) + y.dims
    wide = tuple(v for p, q in zip(xd, yd) for v in (p, q))
    x = b.broadcast(b.reshape(x, xd), wide, tuple(2 * i for i in range(d)))
    y = b.broadcast(b.reshape(y, yd), wide, tuple(2 * i + 1 for i in range(d)))
    return b.reshape(b.ew("multiply", x, y), np.shape(value))


@lowers(np.vdot)
def _vdot(value, a, c):
    b, x, y = _promote_pair(a, c, value)
    x, y = b.reshape(x, (x.shape.size,)), b.reshape(y, (y.shape.size,))
    return b.dot(x, y, (), (0,), (), (0,))


@lowers(np.inner)
def _inner(value, a, c):
    b, x, y = _promote_pair(a, c, value)
    if x.shape.rank == 0 or y.shape.rank == 0:
        dims = np.shape(value)
        return b.ew("multiply", b.broadcast_to(x, dims), b.broadcast_to(y, dims))
    return b.dot(x, y, (), (x.shape.rank - 1,), (), (y.shape.rank - 1,))


@lowers(np.tensordot)
def _tensordot(value, a, c, axes=2):
    b, x, y = _promote_pair(a, c, value)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        ca, cb = list(range(x.shape.rank - n, x.shape.rank)), list(range(n))
    else:
        ca = [int(i) % x.shape.rank for i in np.atleast_1d(axes[0])]
        cb = [int(i) % y.shape.rank for i in np.atleast_1d(axes[1])]
    # dot gives a's free axes then b's, in order, as np.tensordot does
    return b.dot(x, y, (), ca, (), cb)


@lowers(np.cross)
def _cross(value, a, c, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None or (axisa, axisb, axisc) != (-1, -1, -1):
        raise unsupported("cross", " with axis arguments (only along the last axis)")
    b, x, y = _promote_pair(a, c, value)
    n, m = x.dims[-1], y.dims[-1]
    if (n, m) not in ((3, 3), (2, 2)):
        raise unsupported("cross", " of vectors of different lengths (only 3 x 3 and 2 x 2)")
    batch = np.broadcast_shapes(x.dims[:-1], y.dims[:-1])
    x, y = b.broadcast_to(x, batch + (n,)), b.broadcast_to(y, batch + (n,))

    def part(t, i):
        spec = [(0, d, 1) for d in batch] + [(i, i + 1, 1)]
        return b.reshape(b.slice(t, spec), batch)

    def term(i, j):  # x[i] * y[j] - x[j] * y[i]
        return b.ew("subtract", b.ew("multiply", part(x, i), part(y, j)),
                    b.ew("multiply", part(x, j), part(y, i)))

    if n == 2:
        return term(0, 1)
    parts = [b.reshape(term(i, j), batch + (1,)) for i, j in ((1, 2), (2, 0), (0, 1))]
    return b.concatenate(parts, len(batch))


@lowers(np.trace)
def _trace(value, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    b = active_builder()
    x = node_of(a)
    if x.shape.rank != 2 or (int(axis1) % 2, int(axis2) % 2) != (0, 1):
        raise unsupported("trace", " except of a 2-D array on its own axes")
    dt = _result_type(value)
    rows, cols = x.dims
    k = int(offset)
    length = max(0, min(rows, cols - k) if k >= 0 else min(rows + k, cols))
    flat = b.reshape(x, (rows * cols,))
    if length == 0:
        diag = b.slice(flat, [(0, 0, 1)])
    else:
        start = k if k >= 0 else -k * cols
        diag = b.slice(flat, [(start, start + (length - 1) * (cols + 1) + 1, cols + 1)])
    return b.reduce(b.convert(diag, dt), (0,), "or" if dt == np.bool_ else "add")


@lowers(np.linalg.norm)
def _norm(value, x, ord=None, axis=None, keepdims=False):
    """Vector norms of order 2, 1, inf and -inf, and the Frobenius norm of matrices: a square,
    an absolute value, a reduction and a square root, in NumPy's float result type; the
    matrix norms of the other orders NumPy has."""
    b = active_builder()
    dt = _result_type(value)
    a = node_of(x, dt)
    rank = a.shape.rank
    axes = canonical_axes(axis, rank) if axis is not None or ord is None else canonical_axes(
        None, rank)
    matrix = len(axes) == 2
    if len(axes) not in (1, 2) and not (ord is None and axis is None):
        raise unsupported("linalg.norm", f" of {len(axes)} axes")
    if matrix and ord in (1, -1, np.inf, -np.inf):
        return b.reshape(_matrix_norm(b, a, axis, ord), np.shape(value))
    if matrix and isinstance(ord, (int, float, str)) and ord in (2, -2, "nuc"):
        return b.reshape(matrix_norm(b, a, axis, ord), np.shape(value))
    if matrix and ord not in (None, "fro"):
        raise unsupported("linalg.norm", f" with ord={ord!r} of a matrix (only 'fro', 'nuc', "
                                         "1, -1, 2, -2, inf and -inf)")
    if not matrix and ord not in (None, 2, 1, np.inf, -np.inf):
        raise unsupported("linalg.norm", f" with ord={ord!r} (only 2, 1, inf and -inf)")
    if ord in (None, 2, "fro"):
        node = b.ew("sqrt", b.reduce(b.ew("multiply", a, a), axes, "add"))
    else:
        which = {1: "add", np.inf: "maximum", -np.inf: "minimum"}[ord]
        node = b.reduce(b.ew("abs", a), axes, which)
    return b.reshape(node, np.shape(value))


def _matrix_norm(b, a: Instruction, axis, ord) -> Instruction:
    """NumPy's matrix norms of order 1 and -1 (the largest or smallest column sum of |a|) and
    inf and -inf (the same of the row sums): a sum over one axis, then a max or min over
    the other, as NumPy reduces them."""
    rank = a.shape.rank
    row, col = (0, 1) if axis is None else (int(axis[0]) % rank, int(axis[1]) % rank)
    summed, kept = (row, col) if ord in (1, -1) else (col, row)
    sums = b.reduce(b.ew("abs", a), (summed,), "add")
    kept -= kept > summed
    return b.reduce(sums, (kept,), "maximum" if ord > 0 else "minimum")
