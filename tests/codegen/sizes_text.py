"""How a size appears in a generated kernel: a name read from an argument's shape
(codegen/cpu/sizes.py), or the number itself where it was left one."""
from __future__ import annotations

import re


def size_text(source: str, array: str, axis: int, value: int) -> str:
    """The text standing for `array.shape[axis]` (which is `value`) in `source`."""
    bound = re.search(rf"^\s*(size\d+) = {array}\.shape\[{axis}\]", source, flags=re.M)
    return bound.group(1) if bound else str(value)
