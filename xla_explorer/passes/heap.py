"""Offsets, a step of buffer assignment: best fit over one arena, as XLA's
GlobalDecreasingSizeBestFitHeap (`heap_simulator.cc`). Each slot goes in the smallest gap that
fits among the slots live at the same time; two orders are tried and the smaller arena kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # buffer assignment imports this module
    from .buffer_assignment import LogicalBuffer


@dataclass(frozen=True)
class Slot:
    """Bytes one or more values occupy, from the first's definition to the last's end."""

    values: tuple[LogicalBuffer, ...]
    start: int
    end: int
    size: int


def smallest_gap(busy: list[tuple[int, int]], size: int) -> int:
    """The lowest offset of the smallest gap between `busy` byte ranges that fits `size`,
    or the top of them when none does."""
    best, cursor = None, 0
    for lo, hi in sorted(busy):
        if lo - cursor >= size and (best is None or lo - cursor < best[0]):
            best = (lo - cursor, cursor)
        cursor = max(cursor, hi)
    return best[1] if best else cursor


def best_fit(slots: list[Slot], order: list[int]) -> tuple[list[int], int]:
    """Offsets of `slots` placed one by one in `order`, each in the smallest gap among the
    slots already placed that are live at the same time; and the arena size that needs."""
    offsets = [0] * len(slots)
    placed: list[int] = []
    for i in order:
        s = slots[i]
        if s.size == 0:
            continue
        busy = [(offsets[j], offsets[j] + slots[j].size) for j in placed
                if slots[j].start <= s.end and s.start <= slots[j].end]
        offsets[i] = smallest_gap(busy, s.size)
        placed.append(i)
    return offsets, max((offsets[i] + slots[i].size for i in placed), default=0)


# The two orders XLA's heap simulator tries: biggest first (ties: longest-lived first), and
# earliest first.
HEAP_ORDERS = {
    "decreasing size": lambda s, i: (-s.size, -(s.end - s.start), s.start, i),
    "start time": lambda s, i: (s.start, -s.size, i),
}


def lower_bound(slots: list[Slot], steps: int) -> tuple[int, int]:
    """The most slot bytes live at one step, and the first step where that many are."""
    best = (0, 0)
    for t in range(steps):
        live = sum(s.size for s in slots if s.start <= t <= s.end)
        if live > best[0]:
            best = (live, t)
    return best


