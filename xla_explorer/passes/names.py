"""Fresh instruction names for passes: `<opcode>.<n>` with n above every number in use."""
from __future__ import annotations

import itertools
import re

from ..ir.module import Module


class NameGen:
    def __init__(self, module: Module):
        highest = 0
        for comp in module.all_computations:
            for inst in comp.instructions:
                m = re.search(r"\.(\d+)$", inst.name)
                if m:
                    highest = max(highest, int(m.group(1)))
        self._ids = itertools.count(highest + 1)
        self._used = {i.name for c in module.all_computations for i in c.instructions}

    def __call__(self, base: str) -> str:
        while True:
            name = f"{base}.{next(self._ids)}"
            if name not in self._used:
                self._used.add(name)
                return name


# Fusion copies a cheap producer into each kernel that reads it, as `<name>.clone.N`.
_CLONE = re.compile(r"(\.clone\.\d+)+$")


def traced_name(name: str) -> str:
    """The name an instruction was traced as: a cheap producer copied into several kernels
    is named `<name>.clone.N` in each."""
    return _CLONE.sub("", name)
