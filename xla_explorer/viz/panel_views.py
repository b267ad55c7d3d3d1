"""What more than one view says the same way, as plain functions of the exploration: the
static HTML (html.py) and the bundle's JSON (mime.py), which the explorer draws."""
from __future__ import annotations

from .diff import diff
from .format import arena_note

# The driver's heading (the extension's explorer.ts says the same).
DRIVER_TITLE = "run: every kernel launch in order, a loop's repeated steps rolled into one for loop"


def changed_names(ex, index: int) -> frozenset[str]:
    """What stage `index` added or rewrote since the stage before (nothing for the trace)."""
    if index == 0:
        return frozenset()
    return diff(ex.stages[index - 1].module, ex.stages[index].module).changed


def arena_note_of(ex) -> str:
    """`format.arena_note` for the exploration's executable, when it was made from this very
    buffer assignment (not an auto-clustered program's clusters); "" otherwise."""
    exe = ex.executable
    if ex.buffers is None or getattr(exe, "assignment", None) is not ex.buffers:
        return ""
    return arena_note(ex.buffers.peak_bytes, exe.arena_bytes)
