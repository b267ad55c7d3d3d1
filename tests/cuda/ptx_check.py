"""Compile the CUDA kernels of some programs to PTX for a real GPU (NVVM, no device needed):
`python -m tests.cuda.ptx_check [cc]`. Prints one line per kernel, `OK name` or `FAIL name:
error`, and exits 1 if any failed. Run in a process of its own, without the simulator
(tests/cuda/test_ptx.py does), so that numba.cuda is the real target."""
from __future__ import annotations

import sys
import warnings

import numpy as np


def programs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 40)).astype(np.float32)
    v = rng.standard_normal(3000).astype(np.float32)
    i = rng.integers(-5, 5, (4, 8)).astype(np.int32)
    h = x.astype(np.float16)

    def softmax(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layernorm(a):
        m = a.mean(axis=-1, keepdims=True)
        var = ((a - m) ** 2).mean(axis=-1, keepdims=True)
        return (a - m) / np.sqrt(var + 1e-5)

    def gelu(a):
        return 0.5 * a * (1 + np.tanh(0.7978845608 * (a + 0.044715 * a ** 3)))

    def add_at(a, idx, u):
        a = a.copy()
        np.add.at(a, idx, u)
        return a

    return [
        ("loop", lambda a: np.tanh(a) * 2 + np.exp(a) - np.log1p(np.abs(a)), (x,)),
        ("gelu", gelu, (x,)),
        ("softmax", softmax, (x,)),
        ("short rows", lambda a: (softmax(a), np.argmax(a, axis=1)), (x.reshape(20, 8),)),
        ("layernorm", layernorm, (x,)),
        ("full sum", lambda a, b, c: np.sum(a + b * c), (v, v, v)),
        ("mean and var", lambda a: (a.mean(), a.var(), a - a.max()), (v,)),
        ("column mean", lambda a: a.mean(axis=0), (x,)),
        ("argmax", lambda a: np.argmax(a, axis=1), (x,)),
        ("int divide", lambda a, b: (a // b, a % b, a * b), (i, i + 6)),
        ("float to int", lambda a: (a * 1e9).astype(np.int32), (x,)),
        ("float16", lambda a: np.exp(a) * a, (h,)),
        ("max nan", lambda a: (a.max(axis=1), np.maximum(a, 0.5)), (x,)),
        ("data movement", lambda a: np.concatenate([a[:, ::-1], a.T.reshape(4, 40)]) + 1, (x,)),
        ("product", lambda a, w: np.maximum(a @ w + 1, 0), (x, x.T.copy())),
        ("sort and scan", lambda a: (np.sort(a, axis=1), np.cumsum(a, axis=0)), (x,)),
        ("add.at", add_at, (v[:10].copy(), i[0] + 5, v[:8].copy())),
        ("mixed axes", lambda a: (a - a.mean(axis=0), a.sum(axis=1), a.max()), (x,)),
    ]


class Recorder:
    """Stands for a kernel in the generated driver: `kernel[blocks, threads](*arrays)`
    compiles the kernel's Python function to PTX for the arrays' types."""

    def __init__(self, name, kernel, cc, results):
        self.name, self.kernel, self.cc, self.results = name, kernel, cc, results

    def __getitem__(self, launch):
        def call(*arrays):
            from numba import cuda, typeof

            sig = tuple(typeof(a) for a in arrays)
            try:
                cuda.compile_ptx(self.kernel.py_func, sig, cc=self.cc)
                self.results.append((self.name, None))
            except Exception as e:  # noqa: BLE001 - reported, line by line
                first = [ln for ln in str(e).splitlines() if ln.strip()][:3]
                self.results.append((self.name, " | ".join(first)))
        return call


def record_programs():
    """One case of every op record (the sweep of tests/cuda/test_records.py)."""
    from .test_records import _params
    from ..trace.test_numpy_ops import _args_factory, _bind

    for p in _params():
        record, dtype, shapes, variant = p.values
        yield p.id, _bind(record, variant, dtype), _args_factory(record, shapes, dtype)()


def main(cc=(9, 0), records: bool = False) -> int:
    warnings.simplefilter("ignore")
    import types

    import numba.cuda.dispatcher as dispatcher

    # Device functions a kernel calls are compiled for the current device's compute
    # capability; with no device here, for the one asked.
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    import xla_explorer as xe
    from xla_explorer.codegen import cache
    from xla_explorer.codegen.cuda import generate_cuda_program
    from xla_explorer.codegen.writer import identifier
    from xla_explorer.passes.buffer_assignment import OUTPUT

    failed = 0
    for label, f, args in (record_programs() if records else programs()):
        try:
            ex = xe.explore(f, *args)  # the pipeline; the cuda program is generated below
            module, assignment = ex.module, ex.buffers
            program = generate_cuda_program(module, assignment)
        except xe.CompileError as e:  # refused by name: not a kernel to compile
            print(f"REFUSED {label}: {str(e).splitlines()[0]}")
            continue
        if any(not isinstance(a, np.ndarray) for a in args):
            args = tuple(np.asarray(a) for a in args)
        py = cache.load(cache.write_source(identifier(module.name) + "_cuda", program.source))
        results: list = []
        for name in program.kernels:
            kernel = getattr(py, name)  # (a module seen before holds its recorders)
            kernel = kernel.kernel if isinstance(kernel, Recorder) else kernel
            setattr(py, name, Recorder(name, kernel, cc, results))
        py.cooperative_blocks = lambda most: most  # (it asks the device otherwise)
        arena = np.zeros(max(program.arena_bytes, 1), np.uint8)
        params = [np.asarray(a, order="C") for a in args]  # (ascontiguousarray makes 0-d 1-d)
        params = [a.view(np.uint16) if a.dtype == np.float16 else a for a in params]
        consts = [np.array(c.literal.reshape(c.dims)) for c in program.constants]
        outs = [np.empty(b.shape.dims, np.uint16 if b.shape.dtype == np.float16
                         else b.shape.dtype) for b in assignment.buffers if b.category == OUTPUT]
        py.run(arena, *params, *consts, *outs)
        for name, error in results:
            print(f"{'OK' if error is None else 'FAIL'} {label}: {name}"
                  + ("" if error is None else f": {error}"))
            failed += error is not None
    return 1 if failed else 0


if __name__ == "__main__":
    rest = [a for a in sys.argv[1:] if a != "--records"]
    cc = tuple(int(c) for c in rest[0].split(".")) if rest else (9, 0)
    sys.exit(main(cc, records="--records" in sys.argv))
