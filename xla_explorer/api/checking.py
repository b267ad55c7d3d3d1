"""Checking a compiled program against NumPy: the tolerance per float type, one output
compared, and the float64 referee for outputs outside the tolerance."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .. import tree
from ..ir.module import Module


def tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing against NumPy: a few ulps' worth of each float type."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return 2e-5, 1e-6
    if dtype == np.float64:
        return 1e-9, 1e-12
    if dtype == np.float16:  # two float16 ulps: rounded once from float32, as NumPy does
        return 2e-3, 1e-5
    return 0.0, 0.0


@dataclass(frozen=True)
class OutputCheck:
    name: str
    dtype: np.dtype
    shape: tuple
    max_abs_error: float
    max_rel_error: float
    ok: bool
    note: str = ""  # why an output outside the tolerance still counts as right

    def __str__(self) -> str:
        mark = "ok" if self.ok else "MISMATCH"
        note = f" ({self.note})" if self.note else ""
        return (f"{self.name:<12} {str(self.dtype):<8} {str(list(self.shape)):<14} "
                f"max abs {self.max_abs_error:.3g}  max rel {self.max_rel_error:.3g}  {mark}{note}")


@dataclass(frozen=True)
class CheckResult:
    outputs: tuple[OutputCheck, ...]
    note: str = ""  # a likely cause of a mismatch (a global that changed since tracing)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return "\n".join([str(o) for o in self.outputs] + ([self.note] if self.note else []))


def compare(name: str, got, want, precision=None) -> OutputCheck:
    """got against want, within the tolerance of `precision`: the least precise float type
    the value was computed through (default: want's own; a float64 result of float32 math
    carries float32 rounding)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return OutputCheck(name, want.dtype, want.shape, np.inf, np.inf, False)
    loosest = want.dtype
    if precision is not None and want.dtype.kind == "f":
        loosest = max(want.dtype, np.dtype(precision), key=lambda d: tolerance(d)[0])
    rtol, atol = tolerance(loosest)
    if want.size == 0:
        return OutputCheck(name, want.dtype, want.shape, 0.0, 0.0, True)
    if want.dtype.kind == "f":
        both_nan = np.isnan(got) & np.isnan(want)
        same_inf = np.isinf(want) & (got == want)
        exact = both_nan | same_inf
        with np.errstate(all="ignore"):
            diff = np.where(exact, 0.0, np.abs(got.astype(np.float64) - want.astype(np.float64)))
            diff = np.where(np.isnan(diff), np.inf, diff)
            rel = diff / np.maximum(np.abs(want.astype(np.float64)), np.finfo(want.dtype).tiny)
            rel = np.where(exact, 0.0, np.where(np.isnan(rel), np.inf, rel))
        # The relative part scales with finite values only: an infinite `want` met by
        # anything but the same infinity is a mismatch (inf <= rtol * inf would pass it).
        scale = np.where(np.isfinite(want), np.abs(want.astype(np.float64)), 0.0)
        ok = bool(np.all(diff <= atol + rtol * scale))
        return OutputCheck(name, want.dtype, want.shape, float(diff.max()), float(rel.max()), ok)
    equal = got == want
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    return OutputCheck(name, want.dtype, want.shape, err, 0.0 if equal.all() else np.inf,
                       bool(equal.all()))


def computed_precision(module: Module):
    """The least precise float type a module computes through (None if no float): a float64
    result computed from float32 values carries float32 rounding."""
    floats = [np.dtype(i.dtype) for c in module.all_computations
              for i in c.instructions if not i.shape.is_tuple and i.dtype.kind == "f"]
    return min(floats, key=lambda d: d.itemsize, default=None)



def referee(function, args, checks, got, want) -> list[OutputCheck]:
    """Outputs outside the tolerance, judged against the same NumPy code run in float64:
    a float32 sum of 1e7 terms may differ from NumPy's by more than float32's tolerance
    because NumPy's own is the less accurate one, and two float32 products of length 1024
    that round in different orders differ by more than it near zero. Such an output counts
    as right when its largest error from the float64 result is within twice NumPy's: the
    same accuracy, up to the chance of which rounding order lands nearer (for products of
    1024 and 4096 terms the two root-mean-square errors agree within 6%)."""
    wide = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
            else copy.deepcopy(a) for a in args]
    try:
        with np.errstate(all="ignore"):
            exact = tree.leaves(function(*wide))
    except Exception:  # the float64 run is only a referee; without it the check stands
        return checks
    judged = []
    for c, g, w, e in zip(checks, got, want, exact):
        g, w, e = (np.asarray(v) for v in (g, w, e))
        if (c.ok or g.dtype.kind != "f" or g.shape != w.shape or e.shape != w.shape
                or not np.all(np.isfinite(w))):
            judged.append(c)
            continue
        e = e.astype(np.float64)
        ours = float(np.max(np.abs(g.astype(np.float64) - e), initial=0.0))
        numpy = float(np.max(np.abs(w.astype(np.float64) - e), initial=0.0))
        if ours <= 2 * numpy:
            c = OutputCheck(c.name, c.dtype, c.shape, c.max_abs_error, c.max_rel_error,
                            True, f"NumPy is {numpy:.3g} from the float64 result, "
                                  f"compiled {ours:.3g}")
        judged.append(c)
    return judged



def judge(function: Callable | None, args: Sequence, got, want,
          precision=None) -> list[OutputCheck]:
    """Each output leaf of `got` against `want`'s, within the tolerance of `precision`;
    those outside it judged again by the `referee` when there is a `function` to run in
    float64."""
    got_leaves, want_leaves = tree.leaves(got), tree.leaves(want)
    checks = [compare(f"output {i}", g, w, precision)
              for i, (g, w) in enumerate(zip(got_leaves, want_leaves))]
    if function is not None and not all(c.ok for c in checks):
        checks = referee(function, args, checks, got_leaves, want_leaves)
    return checks
