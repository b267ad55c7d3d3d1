"""What one call of a compiled program costs beyond its kernel, against array size.

    python benchmarks/call_overhead.py [--budget SECONDS] [--json PATH]

One cheap element-wise program, `x * 2 + 1` on float32, at sizes 1 to 1e6, called through:

- `numpy`: eager NumPy (two ufunc calls and a temporary);
- `njit`: the very kernel xla-explorer generated for the program, called bare: the output
  allocated with `np.empty` and the generated Numba function called once, as the executable
  calls it, so the difference to the next row is xla-explorer's own call path;
- `xla_explorer`: `xe.jit(f)(x)` on a warm cache (signature lookup, dispatch, output);
- `jax`: `jax.jit(f)(x)` with `block_until_ready`, on an array already on the device.

Then the 50-op chain (`x * 1.0001 + 0.5`, 25 times) on 1000 elements, where eager NumPy pays
50 dispatches and the compiled program one: the documents' point about per-operation overhead.

Each runner is called in batches sized to take about a millisecond, the batches interleaved
round by round (a slow moment hits every runner); the figure is the median batch's seconds
per call.
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # the [bench] extra is not installed
    jax = jnp = None

import xla_explorer as xe

F32 = np.float32
SIZES = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)


def cheap(x):
    return x * F32(2) + F32(1)


def chain50(x):
    for _ in range(25):
        x = x * F32(1.0001) + F32(0.5)
    return x


def per_call(runners: dict, budget: float) -> dict[str, float]:
    """Median seconds per call of each runner, batches interleaved over about `budget` s."""
    batch = {}
    for name, call in runners.items():
        call()
        start = time.perf_counter()
        call()
        once = max(time.perf_counter() - start, 1e-7)
        batch[name] = max(1, int(1e-3 / once))
    samples = {name: [] for name in runners}
    deadline = time.perf_counter() + budget
    rounds = 0
    while rounds < 7 or (time.perf_counter() < deadline and rounds < 200):
        for name, call in runners.items():
            n = batch[name]
            start = time.perf_counter()
            for _ in range(n):
                call()
            samples[name].append((time.perf_counter() - start) / n)
        rounds += 1
    return {name: float(np.median(s)) for name, s in samples.items()}


def bare_kernel(compiled, x):
    """The generated program's own Numba function, called as its executable calls it."""
    exe = compiled.explore(x).executable
    run, arena, constants = exe.entry, exe.arena, exe.constants
    (shape,) = exe.output_shapes

    def call():
        out = np.empty(shape.dims, shape.dtype)
        run(arena, x, *constants, out)
        return out
    return call


def runners_for(f, x) -> dict:
    compiled = xe.jit(f)
    compiled(x)
    runners = {"numpy": lambda: f(x), "xla_explorer": lambda: compiled(x)}
    if f is cheap:
        runners["njit"] = bare_kernel(compiled, x)
    if jax is not None:
        jitted, jx = jax.jit(f), jax.device_put(x)
        runners["jax"] = lambda: jax.block_until_ready(jitted(jx))
    return runners


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per size (1)")
    parser.add_argument("--json", help="write the measurements here")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{platform.machine()}, NumPy {np.__version__}, "
          f"jax {jax.__version__ if jax else 'absent'}; microseconds per call (median)")
    cols = ("numpy", "njit", "xla_explorer", "jax")
    print(f"{'size':>9} " + " ".join(f"{c:>13}" for c in cols) + "  ours - njit")
    rows = []
    for n in SIZES:
        x = rng.standard_normal(n).astype(F32)
        t = per_call(runners_for(cheap, x), args.budget)
        rows.append({"size": n, **{k: v * 1e6 for k, v in t.items()}})
        cells = " ".join(f"{t[c] * 1e6:13.2f}" if c in t else f"{'-':>13}" for c in cols)
        print(f"{n:>9} {cells}  {(t['xla_explorer'] - t['njit']) * 1e6:11.2f}")
    x = rng.standard_normal(1000).astype(F32)
    chain = per_call(runners_for(chain50, x), args.budget)
    print("chain of 50 ops on 1000 elements: " + ", ".join(
        f"{k} {v * 1e6:.2f} us" for k, v in chain.items())
        + f"; xla_explorer {chain['numpy'] / chain['xla_explorer']:.1f}x eager NumPy")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cheap": rows, "chain50": {k: v * 1e6 for k, v in chain.items()}}, f,
                      indent=1)


if __name__ == "__main__":
    main()
