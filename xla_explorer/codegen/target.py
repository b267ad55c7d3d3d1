"""The CPU Numba compiles for, as Numba itself chooses it: what the code generators ask before
they pick vector widths (codegen/gemm.py) or instructions (codegen/fastmath.py)."""
from __future__ import annotations

import llvmlite.binding as ll
from numba.core import config


def cpu_features() -> set[str]:
    """The features Numba's JIT compiles with, without their '+': NUMBA_CPU_FEATURES if set,
    else the host's. Numba keys its disk cache on them, so a choice made from them is never
    loaded on a CPU it does not fit."""
    text = config.CPU_FEATURES or ll.get_host_cpu_features().flatten()
    return {f[1:] for f in text.split(",") if f.startswith("+")}
