"""The public entry points: `explore`, `jit`, the `Exploration` they give, and checking
against NumPy.

  exploration.py  the Exploration: a compilation's record, and the function where there is one
  jit.py          explore() and jit(), with jit's cache per argument signature
  checking.py     tolerances, one output compared, the float64 referee
  kernels.py      the kernel view: one record per kernel launched, with its decisions
"""
from ..backends import BACKENDS
from .checking import CheckResult, OutputCheck, compare, computed_precision, referee, tolerance
from .exploration import Exploration, signature
from .jit import CacheInfo, JitFunction, explore, jit
from .kernels import Kernel, kernels_of

__all__ = ["BACKENDS", "CacheInfo", "CheckResult", "Exploration", "JitFunction",
           "Kernel", "OutputCheck", "compare", "computed_precision", "explore", "jit",
           "kernels_of", "referee", "signature", "tolerance"]
