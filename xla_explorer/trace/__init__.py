"""Tracing NumPy code into HLO: traced arrays (`tracer`), the HLO they record (`builder`),
Python scalar arguments (`scalars`), notebook cells (`cell`), and how each NumPy call lowers
(`numpy`).
"""
# The lowerings register themselves, and set the Tracer's NumPy methods, when imported: once,
# here, so that whatever imports a module of this package traces with the full table.
from . import numpy  # noqa: F401
