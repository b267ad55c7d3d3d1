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
from . import cuda_simulator

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
    if "numba.cuda" not in sys.modules and not config.ENABLE_CUDASIM and not _driver_present():
        # Not importing numba.cuda here keeps the choice open: NUMBA_ENABLE_CUDASIM set
        # later in this process still gets the simulator.
        raise CompileError("no CUDA GPU is available here: no CUDA driver library was found",
                           op="cuda", hint=HOW_TO_GET_ONE)
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


def _driver_present() -> bool:
    """Whether the CUDA driver library (libcuda) can be found, as Numba would look for it."""
    import ctypes.util

    if os.environ.get("NUMBA_CUDA_DRIVER"):
        return True
    return ctypes.util.find_library("cuda") is not None or any(
        os.path.exists(p) for p in ("/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                    "/usr/lib64/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1",
                                    "/usr/lib/aarch64-linux-gnu/libcuda.so.1"))


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


def _rebound(overrides: dict, wrap) -> dict:
    """scalar.py's helpers with their own bodies (`py_func`) bound to globals where the
    names in `overrides` (intrinsics, `np`) are replaced, each wrapped by `wrap`."""
    from ..codegen import scalar

    ns: dict = dict(vars(scalar))  # the globals the rebound bodies see
    ns.update(overrides)
    for name, value in vars(scalar).items():
        py = getattr(value, "py_func", None)
        if py is not None and name not in overrides:
            ns[name] = wrap(pytypes.FunctionType(py.__code__, ns, py.__name__, py.__defaults__,
                                                 py.__closure__))
    return {name: ns[name] for name in scalar.__all__ if name in ns}


_shared_lock = threading.Lock()


def _allocate_shared_once() -> None:
    """Make the simulator's `cuda.shared.array` safe for the threads of a block. Numba 0.68's
    (FakeCUDAShared.array) looks up the array for the calling line, and makes one if there is
    none, without a lock: a thread preempted between the two makes an array of its own, and
    what it stages there is never seen by the others, who read uninitialised memory in its
    place (a product's column wrong, now and then, under load). The same lookup, under a
    lock."""
    from numba.core import types
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    from numba.np import numpy_support

    unsafe = FakeCUDAShared.array
    if getattr(unsafe, "xla_explorer_locked", False):
        return

    def array(self, shape, dtype):
        if shape == 0:  # dynamic shared memory: one buffer, nothing to look up
            return unsafe(self, shape, dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)  # as the simulator keys them
        with _shared_lock:
            found = self._allocations.get(key)
            if found is None:
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                found = self._allocations[key] = np.empty(shape, dtype)
        return found

    array.xla_explorer_locked = True
    FakeCUDAShared.array = array


def _simulated_helpers() -> dict:
    """scalar.py's helpers as plain Python: their own bodies, run on NumPy scalars."""
    _allocate_shared_once()
    cuda_simulator.install()
    out = _rebound({
        "maximum": np.maximum, "minimum": np.minimum,
        "maximum_nsz": np.maximum, "minimum_nsz": np.minimum,
        "add_reassoc": operator.add, "multiply_reassoc": operator.mul,
        "_f32_to_u32": lambda x: np.float32(x).view(np.uint32),
        "_u32_to_f32": lambda u: np.uint32(u).view(np.float32),
    }, lambda f: f)
    # NumPy's own functions on NumPy scalars: Inf and NaN where the math module raises
    for f, fn in _SIM_FLOAT_FUNCTIONS.items():
        for suffix, t in (("f32", np.float32), ("f64", np.float64)):
            out[f"{f}_{suffix}"] = (lambda fn, t: lambda x: fn(t(x)))(fn, t)
    for suffix, t in (("f32", np.float32), ("f64", np.float64)):
        out[f"logistic_{suffix}"] = (lambda t: lambda x: t(1) / (t(1) + np.exp(-t(x))))(t)
    out["shfl_down"] = _sim_shfl_down
    out["shfl_idx"] = _sim_shfl_idx
    out["kernel_numpy"] = np
    # the simulator runs a cooperative grid (one with grid-wide barriers) as one block
    out["cooperative_blocks"] = lambda most: 1
    return out


class _Warp:
    def __init__(self):
        self.barrier = threading.Barrier(32, timeout=120)
        self.values: list = [None] * 32


_warps_lock = threading.Lock()


def _sim_exchange(v, source):
    """The 32 simulated threads of a warp meet, each leaves its value, and each takes the
    value of lane `source(lane)`: what a shuffle does in hardware, in lockstep."""
    t = threading.current_thread()
    lane = t.thread_id % 32
    with _warps_lock:  # kept on the launch's block manager, so they go with it
        warps = t._manager.__dict__.setdefault("xla_explorer_warps", {})
        w = warps.setdefault((tuple(t.blockIdx), t.thread_id // 32), _Warp())
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


# NumPy functions generated code and scalar.py call that Numba's CUDA target does not type
# on scalars: on the device they are libdevice's functions of the same IEEE semantics.
_LIBDEVICE = {"floor": "floor", "ceil": "ceil", "rint": "rint", "sqrt": "sqrt", "cbrt": "cbrt",
              "trunc": "trunc", "fmod": "fmod", "power": "pow", "copysign": "copysign"}


def _numpy_on_device(cuda):
    """A stand-in for the `numpy` module in CUDA kernels: NumPy's own names, except the
    functions above (libdevice's, float32 or float64 by the argument) and `iinfo` (the
    bits, min and max of an integer type, as constants)."""
    from collections import namedtuple

    from numba import njit, types
    from numba.core.extending import overload
    from numba.cuda import libdevice

    shim = pytypes.ModuleType("numpy_on_device")
    shim.__dict__.update({k: v for k, v in vars(np).items() if not k.startswith("__")})

    def stand_in(name, fn):
        unary = name not in ("fmod", "power", "copysign")

        def f1(x):
            raise NotImplementedError(f"np.{name} on a CUDA device")

        def f2(x, y):
            raise NotImplementedError(f"np.{name} on a CUDA device")

        f = f1 if unary else f2
        f.__name__ = name

        def pick(*args):
            single = all(a == types.float32 for a in args)
            return getattr(libdevice, fn + ("f" if single else ""))

        if unary:
            @overload(f, target="cuda")
            def _unary(x):
                impl = pick(x)
                return lambda x: impl(x)
        else:
            @overload(f, target="cuda")
            def _binary(x, y):
                impl = pick(x, y)
                return lambda x, y: impl(x, y)
        return f

    for name, fn in _LIBDEVICE.items():
        setattr(shim, name, stand_in(name, fn))
    IInfo = namedtuple("IInfo", "bits min max")

    def iinfo(t):
        raise NotImplementedError("np.iinfo on a CUDA device")

    @overload(iinfo, target="cuda")
    def _iinfo(t):
        info = np.iinfo(str(getattr(t, "instance_type", t)))
        bits, lo, hi = info.bits, info.dtype.type(info.min), info.dtype.type(info.max)
        return lambda t: IInfo(bits, lo, hi)

    shim.iinfo = iinfo
    del njit
    return shim


def _device_helpers(cuda) -> dict:
    """scalar.py's helpers for a real GPU: their bodies as `@njit(inline="always")`
    functions (Numba compiles an @njit function a CUDA kernel calls for the device) with
    NumPy's scalar functions from libdevice; the float functions libdevice's (fastmath.py's
    polynomials are written for CPU vector units); warp shuffles per element type."""
    from numba import njit, types
    from numba.core.extending import overload

    from ..codegen import scalar

    np_device = _numpy_on_device(cuda)
    # Python's min and max of two values, as Python defines them (the first on a tie): the
    # built-in target does not compile the builtins' variadic implementation for the device.
    two_min = njit(inline="always")(lambda a, b: b if b < a else a)
    two_max = njit(inline="always")(lambda a, b: b if b > a else a)
    out = _rebound({"np": np_device, "maximum_nsz": scalar.maximum,
                    "minimum_nsz": scalar.minimum, "min": two_min, "max": two_max},
                   njit(inline="always"))
    out["min"], out["max"] = two_min, two_max
    round_f64, round_f32 = out["f16_round_f64"], out["f16_round"]

    def f16_from(x):
        raise NotImplementedError("a device function")

    @overload(f16_from, target="cuda")
    def _f16_from(x):  # as scalar.f16_from's overload, with the device's helpers
        if x == types.float64:
            return lambda x: round_f64(x)
        return lambda x: round_f32(np.float32(x))

    out["f16_from"] = f16_from
    out["kernel_numpy"] = np_device

    def device(fn):
        return njit(inline="always")(fn)

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

    # 32- and 64-bit values move as they are; narrower ones (and bools) widened to int32
    def wide(v):
        return isinstance(v, types.Float) or (isinstance(v, types.Integer) and v.bitwidth >= 32)

    @overload(shfl_down, target="cuda")
    def _shfl_down(v, delta):
        if wide(v):
            return lambda v, delta: cuda.shfl_down_sync(FULL_MASK, v, delta)
        if isinstance(v, types.Boolean):
            return lambda v, delta: cuda.shfl_down_sync(FULL_MASK, np.int32(v), delta) != 0
        back = getattr(np, str(v))
        return lambda v, delta: back(cuda.shfl_down_sync(FULL_MASK, np.int32(v), delta))

    @overload(shfl_idx, target="cuda")
    def _shfl_idx(v, src):
        if wide(v):
            return lambda v, src: cuda.shfl_sync(FULL_MASK, v, src)
        if isinstance(v, types.Boolean):
            return lambda v, src: cuda.shfl_sync(FULL_MASK, np.int32(v), src) != 0
        back = getattr(np, str(v))
        return lambda v, src: back(cuda.shfl_sync(FULL_MASK, np.int32(v), src))

    out["shfl_down"], out["shfl_idx"] = shfl_down, shfl_idx

    def cooperative_blocks(most: int) -> int:
        """Blocks of a cooperative launch: one per multiprocessor, which are all resident
        at once whatever the kernel's registers and shared memory (a grid-wide barrier
        needs every block running)."""
        return max(1, min(most, cuda.get_current_device().MULTIPROCESSOR_COUNT))

    out["cooperative_blocks"] = cooperative_blocks
    return out


_HELPERS: dict | None = None


def helpers() -> dict:
    global _HELPERS
    if _HELPERS is None:
        # no device is needed to bind them (kernels compile to PTX without one)
        from numba.core import config

        if "numba.cuda" not in sys.modules and _wants_simulator():
            config.ENABLE_CUDASIM = 1
        from numba import cuda

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
