"""Whether real XLA (jax) is here to compare with, and how to get it: asked by the explorer's
bundle for every program (viz/mime.py) and by `compare_xla` (api/xla_compare.py), so it
lives below both."""
from __future__ import annotations

import importlib.util

INSTALL = "pip install 'xla-explorer[xla]'"


def jax_available() -> bool:
    """Whether jax can be imported here (looked up, not imported: importing it takes a
    second, and every bundle asks)."""
    return importlib.util.find_spec("jax") is not None
