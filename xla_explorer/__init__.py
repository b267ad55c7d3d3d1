"""xla-explorer: see how an XLA-style compiler turns NumPy into HLO, step by step."""
from .api import CheckResult, Exploration, ExportedModule, Kernel, explore, explore_hlo, export, jit
from .errors import (CompileError, HloParseError, LinAlgError, MismatchError, TraceError,
                     UnsupportedOpError, VerifyError, XlaExplorerError)
from .ir.module import Module
from .ir.parser import parse_hlo
from .ir.verify import verify
from .replay import replay
from .trace.loops import fori_loop

__all__ = [
    "explore", "explore_hlo", "export", "ExportedModule", "jit", "fori_loop", "Exploration", "CheckResult", "Kernel",
    "parse_hlo", "verify", "Module", "replay",
    "XlaExplorerError", "CompileError", "UnsupportedOpError", "TraceError", "HloParseError",
    "VerifyError", "MismatchError", "LinAlgError",
]
__version__ = "0.1.0"


def load_ipython_extension(ip):
    """`%load_ext xla_explorer`: registers %%xla and %xla_cache (IPython loads on demand)."""
    from .magic import load_ipython_extension as load

    load(ip)


def unload_ipython_extension(ip):
    from .magic import unload_ipython_extension as unload

    unload(ip)
