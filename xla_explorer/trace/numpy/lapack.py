"""np.linalg as XLA lowers it: library calls (ir/library.py), each an HLO custom-call whose
target names the routine, with the HLO NumPy wraps around them.

NumPy computes every one of them in float64, a float32 matrix included, and rounds the results
back (its `_commonType`: "use higher precision"): so does the HLO, a convert to f64 before the
call and back after it. What NumPy computes around a routine is ordinary HLO here too:
np.linalg.pinv is an SVD and products (as NumPy and JAX write it), the matrix norms of ord 2,
-2 and 'nuc' the singular values reduced, `UPLO='U'` and `upper=True` transposes, a vector
right-hand side a reshape. A matrix with no elements reads no value: its result is NumPy's,
a constant.
"""
from __future__ import annotations

import json

import numpy as np

from ...errors import TraceError
from ...ir.module import Instruction
from ...ir.shape import Shape, TupleShape
from ..context import active_builder, located
from ..tracer import Tracer, node_of, value_of
from .registry import lowers
from .util import unsupported

_F64 = np.dtype(np.float64)


def _call(target: str, operands, shapes, config: dict | None = None) -> list[Instruction]:
    """The custom-call `target(operands)` of result `shapes` (one get-tuple-element per
    result where there are several)."""
    b = active_builder()
    attrs = [("custom_call_target", target)]
    if config:
        attrs.append(("backend_config", json.dumps(config, separators=(",", ":"))))
    shape = TupleShape(tuple(shapes)) if len(shapes) > 1 else shapes[0]
    node = b.emit("custom-call", tuple(operands), shape=shape, attrs=attrs)
    if len(shapes) == 1:
        return [node]
    return [b.emit("get-tuple-element", (node,), attrs=[("index", i)]) for i in range(len(shapes))]


def _values(value) -> list:
    """NumPy's results as a list of arrays (a namedtuple's fields, or the one array)."""
    return [np.asarray(v) for v in value] if isinstance(value, tuple) else [np.asarray(value)]


def _empty(value, operands) -> list[Instruction] | None:
    """NumPy's results as constants where no operand has an element: they read no value."""
    if any(np.size(value_of(o)) for o in operands):
        return None
    b = active_builder()
    return [b.literal(v) for v in _values(value)]


def _finish(nodes: list[Instruction], value):
    """The call's float64 results in NumPy's types and shapes: a node, or a tuple of them."""
    b = active_builder()
    out = [b.reshape(b.convert(n, v.dtype), v.shape) for n, v in zip(nodes, _values(value))]
    return tuple(out) if isinstance(value, tuple) else out[0]


def _wide(x) -> Instruction:
    """A matrix operand in float64, as NumPy computes every np.linalg function."""
    return node_of(x, _F64)


def _matrix_t(b, x: Instruction) -> Instruction:
    """x with its last two axes swapped."""
    r = x.shape.rank
    return b.transpose(x, list(range(r - 2)) + [r - 1, r - 2])


def _static(x, what: str, name: str, kind=None):
    """An option's value, known when tracing: a traced array cannot choose the routine. A
    Python number passed as an argument is read as `kind` (bool, float), which makes it a
    static value of the program (a new value compiles again)."""
    if isinstance(x, Tracer) and not x._weak:
        raise located(TraceError, f"np.linalg.{name}'s {what} must be known when tracing, not "
                                  "an array the program computes", f"np.linalg.{name}",
                      f"Pass {what} as a Python number.")
    if x is None or isinstance(x, str):
        return x
    return kind(x) if kind is not None else value_of(x)


def _one(target: str, value, a, transpose_in=False, config=None):
    """A call of one matrix operand whose results are shaped as NumPy's (batch first)."""
    found = _empty(value, [a])
    if found is not None:
        return tuple(found) if isinstance(value, tuple) else found[0]
    b = active_builder()
    x = _wide(a)
    if transpose_in:
        x = _matrix_t(b, x)
    shapes = [Shape(_F64 if v.dtype.kind == "f" else v.dtype, v.shape) for v in _values(value)]
    return _finish(_call(target, [x], shapes, config), value)


@lowers(np.linalg.inv)
def _inv(value, a):
    return _one("linalg.inv", value, a)


@lowers(np.linalg.det)
def _det(value, a):
    return _one("linalg.det", value, a)


@lowers(np.linalg.slogdet)
def _slogdet(value, a):
    return _one("linalg.slogdet", value, a)


@lowers(np.linalg.eigvalsh)
def _eigvalsh(value, a, UPLO="L"):
    # The upper triangle of a is the lower one of its transpose, which LAPACK then reads.
    return _one("linalg.eigvalsh", value, a, _uplo(UPLO, "eigvalsh") == "U")


@lowers(np.linalg.eigh)
def _eigh(value, a, UPLO="L"):
    return _one("linalg.eigh", value, a, _uplo(UPLO, "eigh") == "U")


def _uplo(uplo, name: str) -> str:
    uplo = str(_static(uplo, "UPLO", name)).upper()
    if uplo not in ("L", "U"):
        raise unsupported(f"linalg.{name}", f" with UPLO={uplo!r} (only 'L' and 'U')")
    return uplo


@lowers(np.linalg.cholesky)
def _cholesky(value, a, upper=False):
    if not _static(upper, "upper", "cholesky", bool):
        return _one("linalg.cholesky", value, a)
    # NumPy's upper factor reads a's upper triangle: the lower factor of a's transpose,
    # transposed.
    found = _empty(value, [a])
    if found is not None:
        return found[0]
    b = active_builder()
    (low,) = _call("linalg.cholesky", [_matrix_t(b, _wide(a))], [Shape(_F64, value.shape)])
    return _finish([_matrix_t(b, low)], value)


@lowers(np.linalg.qr)
def _qr(value, a, mode="reduced"):
    mode = _static(mode, "mode", "qr")
    if mode not in ("reduced", "r"):
        raise unsupported("linalg.qr", f" with mode={mode!r} (only 'reduced' and 'r', whose "
                                       "Q and R are LAPACK's ?orgqr and ?geqrf's)")
    if mode == "reduced":
        return _one("linalg.qr", value, a)
    found = _empty(value, [a])
    if found is not None:
        return found[0]
    m, n = np.shape(value_of(a))[-2:]
    batch, k = np.shape(value)[:-2], min(m, n)
    _, r = _call("linalg.qr", [_wide(a)], [Shape(_F64, batch + (m, k)), Shape(_F64, value.shape)])
    return _finish([r], value)


@lowers(np.linalg.svd)
def _svd(value, a, full_matrices=True, compute_uv=True, hermitian=False):
    if _static(hermitian, "hermitian", "svd", bool):
        raise unsupported("linalg.svd", " with hermitian=True (NumPy computes it by eigh: "
                                        "call np.linalg.eigh)")
    if not _static(compute_uv, "compute_uv", "svd", bool):
        return _one("linalg.svdvals", value, a)
    config = {"full_matrices": _static(full_matrices, "full_matrices", "svd", bool)}
    return _one("linalg.svd", value, a, config=config)


@lowers(np.linalg.svdvals)
def _svdvals(value, a):
    return _one("linalg.svdvals", value, a)


@lowers(np.linalg.solve)
def _solve(value, a, c):
    found = _empty(value, [a, c])
    if found is not None:
        return found[0]
    b = active_builder()
    x, y = _wide(a), _wide(c)
    n = x.dims[-1]
    if y.shape.rank == 1:  # NumPy 2: a vector b only when b is 1-D
        y = b.reshape(y, (n, 1))
    batch = tuple(np.broadcast_shapes(x.dims[:-2], y.dims[:-2]))
    x, y = b.broadcast_to(x, batch + (n, n)), b.broadcast_to(y, batch + y.dims[-2:])
    return _finish(_call("linalg.solve", [x, y], [Shape(_F64, y.dims)]), value)


@lowers(np.linalg.lstsq)
def _lstsq(value, a, c, rcond=None):
    """LAPACK's ?gelsd on a (M, N) and b (M, K) in float64, rcond NumPy's default (float64's
    machine epsilon times max(M, N)) unless given; a vector b is (M, 1) in the call."""
    found = _empty(value, [a, c])
    if found is not None:
        return tuple(found)
    if any(np.size(value_of(o)) == 0 for o in (a, c)):
        raise unsupported("linalg.lstsq", " of an empty matrix with a non-empty right-hand "
                                          "side (its residuals are the right-hand side's)")
    b = active_builder()
    x, y = _wide(a), _wide(c)
    m, n = x.dims
    if y.shape.rank == 1:
        y = b.reshape(y, (m, 1))
    rcond = _static(rcond, "rcond", "lstsq", float)
    rcond = float(np.finfo(_F64).eps * max(m, n) if rcond is None else rcond)
    sol, res, rank, s = _values(value)
    shapes = [Shape(_F64, (n, y.dims[1])), Shape(_F64, res.shape), Shape(rank.dtype, ()),
              Shape(_F64, s.shape)]
    nodes = _call("linalg.lstsq", [x, y], shapes, {"rcond": rcond})
    return _finish(nodes, value)


@lowers(np.linalg.pinv)
def _pinv(value, a, rcond=None, hermitian=False, **kw):
    """NumPy's pinv: the SVD (a library call, in float64, rounded to a's type), then in a's
    type the reciprocals of the singular values above rcond times the largest (the cutoff in
    float64, as NumPy's 0-d rcond makes it), and vt.T @ (s_inv[:, None] * u.T)."""
    if _static(hermitian, "hermitian", "pinv", bool):
        raise unsupported("linalg.pinv", " with hermitian=True (NumPy computes it by eigh)")
    if set(kw) - {"rtol"}:
        raise unsupported("linalg.pinv", f" with {', '.join(kw)}")
    found = _empty(value, [a])
    if found is not None:
        return found[0]
    b = active_builder()
    dt = np.asarray(value).dtype
    m, n = np.shape(value_of(a))[-2:]
    batch, k = np.shape(value)[:-2], min(m, n)
    for name, given in (("rcond", rcond), ("rtol", kw.get("rtol"))):
        if np.ndim(value_of(given)):
            raise unsupported("linalg.pinv", f" with an array {name} (only a number)")
    rcond = _static(rcond, "rcond", "pinv", float)
    if rcond is None and "rtol" not in kw:
        rcond = 1e-15  # NumPy's default
    elif rcond is None:  # rtol=None is max(m, n) machine epsilons
        rtol = _static(kw["rtol"], "rtol", "pinv", float)
        rcond = max(m, n) * float(np.finfo(dt).eps) if rtol is None else rtol
    u, s, vt = (b.convert(v, dt) for v in _call(
        "linalg.svd", [_wide(a)], [Shape(_F64, batch + (m, k)), Shape(_F64, batch + (k,)),
                                   Shape(_F64, batch + (k, n))], {"full_matrices": False}))
    top = b.convert(b.reduce(s, (len(batch),), "maximum"), _F64)
    cutoff = b.ew("multiply", b.full(float(rcond), _F64, top.dims), top)
    large = b.compare(b.convert(s, _F64), b.broadcast(cutoff, batch + (k,),
                                                      tuple(range(len(batch)))), "GT")
    inverse = b.select(large, b.ew("divide", b.full(1, dt, s.dims), s), b.full(0, dt, s.dims))
    scaled = b.ew("multiply", b.broadcast(inverse, batch + (k, m), tuple(range(len(batch) + 1))),
                  _matrix_t(b, u))
    nb = len(batch)
    prod = b.dot(_matrix_t(b, vt), scaled, tuple(range(nb)), (nb + 1,), tuple(range(nb)), (nb,))
    return b.reshape(prod, np.shape(value))


def matrix_norm(b, a: Instruction, axis, ord) -> Instruction:
    """np.linalg.norm of matrices with ord 2, -2 or 'nuc': the singular values (a library
    call, in float64, rounded to a's type) reduced by max, min or sum, as NumPy's
    _multi_svd_norm does. `a` is already in NumPy's result type."""
    rank = a.shape.rank
    row, col = (0, 1) if axis is None else (int(axis[0]) % rank, int(axis[1]) % rank)
    rest = [d for d in range(rank) if d not in (row, col)]
    y = b.transpose(a, rest + [row, col])
    if 0 in y.dims:
        raise unsupported("linalg.norm", f" with ord={ord!r} of an empty matrix")
    batch, k = y.dims[:-2], min(y.dims[-2:])
    (s,) = _call("linalg.svdvals", [b.convert(y, _F64)], [Shape(_F64, batch + (k,))])
    which = {2: "maximum", -2: "minimum", "nuc": "add"}[ord]
    return b.reduce(b.convert(s, a.dtype), (len(batch),), which)
