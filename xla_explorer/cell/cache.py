"""The session's compiled cells: one JitFunction per cell, backend and clustering.

A re-run with the same shapes is a cache hit, a new shape compiles again (the JitFunction
holds one executable per input signature), and a change in what the cell was analysed against
starts the cell afresh.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..api import jit
from .frozen import state_read
from .plan import CellPlan


@dataclass
class CachedCell:
    """One cell compiled for one backend: its plan and the JitFunction that holds its
    executables, one per input signature."""

    plan: CellPlan
    backend: str
    autocluster: bool
    jit: object
    depends: tuple  # what the plan was analysed against; a change starts the cell afresh
    keep: tuple = field(repr=False, default=())  # the objects whose ids are in `depends`
    # What the trace of each executable found (keyed by the Exploration's id): Python control
    # flow may take other paths for other shapes.
    traces: dict = field(repr=False, default_factory=dict)

    @property
    def first_line(self) -> str:
        return next((s.strip() for s in self.plan.source.splitlines() if s.strip()), "")


@dataclass(frozen=True)
class TraceFacts:
    """What one trace of a cell found, for the runs that reuse its executable: which outputs
    are other objects, whether it printed, whether its last line's value must come from an
    eager run (a string, a dtype: not something the program returns)."""

    links: dict
    printed: bool
    eager_value: bool


class CellCache:
    """The session's compiled cells, keyed by (cell source, backend, autocluster).

    A cell's entry is replaced when what it was analysed against changed: its inputs (which
    names and paths hold arrays and numbers), the structure of the containers it uses whole,
    the constants it reads (by value) and the functions, classes and modules (by identity,
    a helper function defined again), and what those functions and methods read besides
    their arguments (`frozen.py`: a rebound global, `self.w` rebound or changed in place):
    the compiled program was traced through them, so it would be stale. The values of inputs are not in it: the executables are per shape and
    type."""

    def __init__(self):
        self.cells: dict[tuple, CachedCell] = {}

    def lookup(self, plan: CellPlan, namespace, backend: str, autocluster: bool) -> CachedCell:
        key = (plan.source, backend, autocluster)
        depends = (plan.first_line, plan.inputs, id(namespace), plan.key,
                   state_read(plan.keep))
        entry = self.cells.get(key)
        if entry is None or entry.depends != depends:
            entry = CachedCell(plan, backend, autocluster,
                               jit(plan.function, backend=backend, autocluster=autocluster),
                               depends, plan.keep)
            self.cells[key] = entry
        return entry

    def forget_failed(self, entry: CachedCell) -> None:
        """Drop a cell that never compiled (its first run failed), so the report lists what
        is compiled."""
        key = (entry.plan.source, entry.backend, entry.autocluster)
        if self.cells.get(key) is entry and not entry.jit.cache_info().signatures:
            del self.cells[key]

    def drop(self, entry: CachedCell) -> None:
        """Forget a cell whose program is stale: its next run compiles it anew."""
        key = (entry.plan.source, entry.backend, entry.autocluster)
        if self.cells.get(key) is entry:
            del self.cells[key]

    def clear(self) -> None:
        self.cells.clear()
