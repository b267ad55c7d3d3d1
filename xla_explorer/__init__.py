"""xla-explorer: see how an XLA-style compiler turns NumPy into HLO, step by step."""
from .api import CheckResult, Exploration, Fusion, explore, jit
from .errors import CompileError, HloParseError, TraceError, UnsupportedOpError, VerifyError
from .ir.module import Module
from .ir.parser import parse_hlo
from .ir.verify import verify

__all__ = [
    "explore", "jit", "Exploration", "CheckResult", "Fusion", "parse_hlo", "verify", "Module",
    "CompileError", "UnsupportedOpError", "TraceError", "HloParseError", "VerifyError",
]
__version__ = "0.1.0"
