"""In-place updates a compiled program cannot make as NumPy makes them.

NumPy writes an in-place update (`x += 1`, `x[2:4] = 0`) into the caller's array, through
every view of it, and refuses to write a read-only one. A compiled program takes each argument
as a separate input and copies its updates back at the end, so an update to an argument that
another argument shares memory with would not show through the other. Both are refused, with
one wording, by `xe.jit` and `xe.explore` (whose arguments are a function's) and by `%%xla`
(whose inputs are a cell's names); each says in its own hint what to do instead.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

READ_ONLY = -1  # update_conflict's answer for an argument NumPy cannot write to either


def update_conflict(args: Sequence, p: int) -> int | None:
    """Why argument `p`, which the program updates in place, cannot be updated as NumPy would
    update it: READ_ONLY, or the number of another argument it shares memory with; None when
    nothing stands in the way."""
    a = args[p]
    if not a.flags.writeable:
        return READ_ONLY
    return next((q for q, other in enumerate(args)
                 if q != p and isinstance(other, np.ndarray) and np.shares_memory(a, other)),
                None)


def refuse_updates(args: Sequence, sites: Mapping[int, tuple], names: Sequence[str], *,
                   error: type, advice: Callable[[str, str | None], str]) -> None:
    """Raise `error` for the first argument updated in place that NumPy's update would reach
    differently. `sites` maps each updated argument's number to the (file, line) of its
    update, `names` are the arguments as the caller knows them, and `advice(name, other)` is
    the hint, `other` naming the argument that shares memory (None for a read-only one)."""
    for p, (source_file, source_line) in sites.items():
        conflict = update_conflict(args, p)
        if conflict is None:
            continue
        name = names[p]
        other = None if conflict == READ_ONLY else names[conflict]
        where = dict(op=f"{name} (in place)", source_file=source_file,
                     source_line=source_line, hint=advice(name, other))
        if other is None:
            raise error(f"{name} is read-only; NumPy refuses to update it in place too",
                        **where)
        raise error(f"{name} is updated in place and shares memory with {other} (one is a "
                    "view of the other, or they are the same array); the compiled program "
                    "takes them as separate inputs, so the update would not show through "
                    f"{other} as it does in NumPy", **where)


def pass_a_copy(name: str, other: str | None) -> str:
    """The advice of a function's call (`xe.jit`, `xe.explore`): the fix is in what it is
    passed."""
    return f"Pass a copy: {other or name}.copy()."

