"""Numba's CUDA target, a real GPU or Numba's simulator, and the scalar helpers that
generated CUDA kernels call.

The helpers are `codegen/scalar.py`'s, the same definitions the CPU kernels inline, bound for
the target the kernels run on:
  on a GPU        scalar.py's `@njit` helpers and intrinsics as they are: Numba compiles a
                  CPU `@njit` function called from a CUDA kernel for the GPU. The float
                  functions (exp, log, tanh, ...) are CUDA's libdevice ones (fastmath.py's
                  polynomials are written for CPU vector units), and the warp shuffles
                  `cuda.shfl_*_sync`, any element type carried in a 32- or 64-bit lane.
  simulated       (NUMBA_ENABLE_CUDASIM=1) the simulator runs kernels as Python, one thread
                  per CUDA thread: the helpers' own Python bodies (`py_func`), with NumPy's
                  scalar functions for the few that are LLVM intrinsics, and warp shuffles
                  played by the 32 threads of a warp meeting at a barrier.
Nothing here restates an op's semantics: those stay in the op table and scalar.py.
"""
from __future__ import annotations

import math
import operator
import os
import sys
import threading
import types as pytypes

import numpy as np

from ..errors import CompileError

HOW_TO_GET_ONE = (
    "The cuda backend needs an NVIDIA GPU with its driver and Numba's CUDA target "
    "(pip install 'xla-explorer[cuda]', which brings numba-cuda), or Numba's CUDA simulator "
    "for trying it without one: set the environment variable NUMBA_ENABLE_CUDASIM=1 before "
    "Python starts (slow: one Python thread per CUDA thread; small shapes only).")


def _wants_simulator() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")


def cuda_module():
    """`numba.cuda`, real or simulated; a CompileError that says how to get either when
    there is neither. NUMBA_ENABLE_CUDASIM is Numba's own switch, read when numba.cuda is
    first imported: set after `import numba` (as in a notebook), it is honoured here as long
    as numba.cuda has not been imported yet."""
    from numba.core import config

    if "numba.cuda" not in sys.modules and _wants_simulator() and not config.ENABLE_CUDASIM:
        config.ENABLE_CUDASIM = 1
    try:
        from numba import cuda
    except ImportError as e:  # a Numba built without its CUDA target
        raise CompileError(f"Numba's CUDA target cannot be imported ({e})", op="cuda",
                           hint=HOW_TO_GET_ONE) from e
    if not cuda.is_available():
        where = ("numba.cuda was imported before NUMBA_ENABLE_CUDASIM was set, so the "
                 "simulator is off in this process; "
                 if _wants_simulator() and not simulated() else "")
        raise CompileError(f"no CUDA GPU is available here: {where}numba.cuda finds no device",
                           op="cuda", hint=HOW_TO_GET_ONE)
    return cuda


def simulated() -> bool:
    """Whether numba.cuda (imported) is Numba's simulator."""
    mod = sys.modules.get("numba.cuda")
    return mod is not None and "simulator" in getattr(mod.to_device, "__module__", "")


def device_name() -> str:
    cuda = cuda_module()
    if simulated():
        return "Numba CUDA simulator (no GPU: kernels run as Python threads)"
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    return f"{name} (compute capability {dev.compute_capability[0]}.{dev.compute_capability[1]})"


# -- the helpers -------------------------------------------------------------------------------

FULL_MASK = 0xFFFFFFFF
_SIM_FLOAT_FUNCTIONS = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
                        "tanh": np.tanh}


def _simulated_helpers() -> dict:
    """scalar.py's helpers as plain Python: their own bodies, run on NumPy scalars."""
    from ..codegen import scalar

    ns: dict = dict(vars(scalar))  # the globals the rebound bodies see
    intrinsics = {
        "maximum": np.maximum, "minimum": np.minimum,
        "maximum_nsz": np.maximum, "minimum_nsz": np.minimum,
        "add_reassoc": operator.add, "multiply_reassoc": operator.mul,
        "_f32_to_u32": lambda x: np.float32(x).view(np.uint32),
        "_u32_to_f32": lambda u: np.uint32(u).view(np.float32),
    }
    ns.update(intrinsics)
    for name, value in vars(scalar).items():
        py = getattr(value, "py_func", None)
        if py is not None and name not in intrinsics:
            ns[name] = pytypes.FunctionType(py.__code__, ns, py.__name__, py.__defaults__,
                                            py.__closure__)
    out = {name: ns[name] for name in scalar.__all__ if name in ns}
    # NumPy's own functions on NumPy scalars: Inf and NaN where the math module raises
    for f, fn in _SIM_FLOAT_FUNCTIONS.items():
        for suffix, t in (("f32", np.float32), ("f64", np.float64)):
            out[f"{f}_{suffix}"] = (lambda fn, t: lambda x: fn(t(x)))(fn, t)
    for suffix, t in (("f32", np.float32), ("f64", np.float64)):
        out[f"logistic_{suffix}"] = (lambda t: lambda x: t(1) / (t(1) + np.exp(-t(x))))(t)
    out["shfl_down"] = _sim_shfl_down
    out["shfl_idx"] = _sim_shfl_idx
    return out


class _Warp:
    def __init__(self):
        self.barrier = threading.Barrier(32, timeout=120)
        self.values: list = [None] * 32


_warps: dict = {}
_warps_lock = threading.Lock()


def _sim_exchange(v, source):
    """The 32 simulated threads of a warp meet, each leaves its value, and each takes the
    value of lane `source(lane)`: what a shuffle does in hardware, in lockstep."""
    t = threading.current_thread()
    lane = t.thread_id % 32
    key = (id(t._manager), tuple(t.blockIdx), t.thread_id // 32)
    with _warps_lock:
        w = _warps.setdefault(key, _Warp())
    w.values[lane] = v
    w.barrier.wait()
    src = source(lane)
    out = w.values[src] if 0 <= src < 32 else v
    w.barrier.wait()
    return type(v)(out)


def _sim_shfl_down(v, delta):
    return _sim_exchange(v, lambda lane: lane + delta)


def _sim_shfl_idx(v, src):
    return _sim_exchange(v, lambda lane: src)


def _device_helpers(cuda) -> dict:
    """scalar.py's helpers for a real GPU: called from CUDA kernels, Numba compiles the
    `@njit` ones for the device; float functions from libdevice; shuffles per type."""
    from numba import types
    from numba.core.extending import overload

    from ..codegen import scalar

    out = {name: getattr(scalar, name) for name in scalar.__all__}
    out["maximum_nsz"], out["minimum_nsz"] = scalar.maximum, scalar.minimum

    def device(fn):
        return cuda.jit(device=True, inline=True)(fn)

    out["exp_f32"] = out["exp_f64"] = device(lambda x: math.exp(x))
    out["expm1_f32"] = out["expm1_f64"] = device(lambda x: math.expm1(x))
    out["log_f32"] = out["log_f64"] = device(lambda x: math.log(x))
    out["log1p_f32"] = out["log1p_f64"] = device(lambda x: math.log1p(x))
    out["tanh_f32"] = out["tanh_f64"] = device(lambda x: math.tanh(x))
    out["logistic_f32"] = out["logistic_f64"] = device(
        lambda x: type(x)(1) / (type(x)(1) + math.exp(-x)))

    def shfl_down(v, delta):
        raise NotImplementedError("a device function")

    def shfl_idx(v, src):
        raise NotImplementedError("a device function")

    def lanes(v, shuffle):
        # 32- and 64-bit values move as they are; narrower ones (and bools) widened to int32
        if isinstance(v, types.Float) or (isinstance(v, types.Integer) and v.bitwidth >= 32):
            return lambda v, k: shuffle(FULL_MASK, v, k)
        if isinstance(v, types.Boolean):
            return lambda v, k: shuffle(FULL_MASK, np.int32(v), k) != 0
        back = getattr(np, str(v))
        return lambda v, k: back(shuffle(FULL_MASK, np.int32(v), k))

    @overload(shfl_down, target="cuda")
    def _shfl_down(v, delta):
        return lanes(v, cuda.shfl_down_sync)

    @overload(shfl_idx, target="cuda")
    def _shfl_idx(v, src):
        return lanes(v, cuda.shfl_sync)

    out["shfl_down"], out["shfl_idx"] = shfl_down, shfl_idx
    return out


_HELPERS: dict | None = None


def helpers() -> dict:
    global _HELPERS
    if _HELPERS is None:
        cuda = cuda_module()
        _HELPERS = _simulated_helpers() if simulated() else _device_helpers(cuda)
    return _HELPERS


def __getattr__(name: str):
    # `from xla_explorer.runtime.cuda_device import *` in a generated file binds the helpers
    # of the target this process has; only then is numba.cuda imported.
    if name == "__all__":
        return sorted(helpers())
    table = helpers()
    if name in table:
        return table[name]
    raise AttributeError(name)
