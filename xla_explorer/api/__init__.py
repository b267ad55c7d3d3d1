"""The public entry points: `explore`, `jit`, the `Exploration` they give, and checking
against NumPy.

  exploration.py  the Exploration: a compilation's record, and the function where there is one
  jit.py          explore(), jit() (with its cache per argument signature) and export()
  hlo_input.py    explore_hlo(): the pipeline on HLO text (ours, JAX's, XLA's dump files)
  checking.py     tolerances, one output compared, the float64 referee
  kernels.py      the kernel view: one record per kernel launched, with its decisions
  export.py       a compiled program as an extension module that needs only NumPy
"""
from ..backends import BACKENDS
from .checking import CheckResult, OutputCheck, compare, computed_precision, referee, tolerance
from .exploration import Exploration, signature
from .export import ExportedModule
from .hlo_input import HloExploration, explore_hlo
from .jit import CacheInfo, JitFunction, explore, export, jit
from .kernels import Kernel, kernels_of

__all__ = ["BACKENDS", "CacheInfo", "CheckResult", "Exploration", "ExportedModule",
           "HloExploration", "JitFunction", "Kernel", "OutputCheck", "compare",
           "computed_precision", "explore", "explore_hlo", "export", "jit", "kernels_of",
           "referee", "signature", "tolerance"]
