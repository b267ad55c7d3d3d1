"""The order in which fusion decides a kernel's candidate producers: by the longest path from
each to the kernel's root, nearest first, as XLA visits a fusion's producers in reverse
post-order (passes/fusion.py, `Fusion._grow`)."""
from __future__ import annotations

import math
from typing import Sequence

from ..ir.module import Instruction


class Depths:
    """The longest path from each instruction root depends on to root, in operand edges,
    found walking back from root only as far as asked: a kernel's candidates lie near its
    root, and walking the whole program back for each kernel made fusing a long unrolled loop
    quadratic in its steps."""

    def __init__(self, root: Instruction, entry: Sequence[Instruction], order: dict[int, int]):
        self.depth = {id(root): 0}
        self.root = id(root)
        self.entry = entry  # the entry's instructions, and each one's place among them
        self.order = order
        self.next = order[id(root)]  # the next instruction to walk, going back

    # How far back from the root the longest paths are walked (instructions).
    WINDOW = 256

    def key(self, inst: Instruction) -> tuple:
        """Where inst goes in the order candidates are decided: by depth, nearest first;
        after them, anything further back than the window (a scalar every step of a loop
        reads), the later ones in the program first. Either order decides every user of a
        candidate before it. The window keeps fusing a long unrolled loop linear in its
        steps: a longest path to such a producer runs back through every step."""
        n = self.order[id(inst)]
        if n < self.order[self.root] - self.WINDOW:
            return math.inf, -n
        return self[inst], 0

    def __getitem__(self, inst: Instruction) -> int:
        # Every user of inst comes after it: once they are walked, its depth is final.
        stop = self.order[id(inst)]
        while self.next > stop:
            user = self.entry[self.next]
            d = self.depth.get(id(user))
            if d is not None:
                for o in user.operands:
                    self.depth[id(o)] = max(self.depth.get(id(o), 0), d + 1)
            self.next -= 1
        return self.depth[id(inst)]
