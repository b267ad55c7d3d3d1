"""The default pass pipeline, one pass a line, in the order XLA runs their namesakes."""
from __future__ import annotations

from .algsimp import AlgebraicSimplifier
from .base import Pass
from .cse import CSE
from .dce import DCE


def default_passes() -> list[Pass]:
    return [
        # Local algebra first: x*1, transpose of transpose, folding small constants. It
        # exposes duplicates for CSE and leaves dead operands for DCE.
        AlgebraicSimplifier(),
        # Merge identical instructions (tracing repeats constants, broadcasts, converts).
        CSE(),
        # Last, drop what nothing uses: the leftovers of both passes above.
        DCE(),
        # Later issues add: auto-cluster, fusion, multi-output-fusion, schedule,
        # buffer-assignment.
    ]
