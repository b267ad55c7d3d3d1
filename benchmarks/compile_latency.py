"""Time to the first answer: how long a new program waits for its first result, ours against
XLA's (jax.jit on CPU), each program in fresh Python processes.

    python benchmarks/compile_latency.py [--only NAME] [--repeats N] [--json FILE]

For each program, per round (rounds interleave the runners, so a slow moment hits them all):

  cold       a fresh process and an empty kernel cache: `xe.jit(f)(*args)` from the call to
             the result (imports and making the inputs are not counted; Numba's start-up,
             paid by the first compile of a process, is)
  disk       a second fresh process on the same cache: the program's kernel image is on
             disk (runtime/native.py), linked without starting Numba
  numba disk a third, with images turned off (XLA_EXPLORER_IMAGES=0): the kernels from
             Numba's own disk cache, Numba started
  new shape  in the cold process, right after: the same program on inputs of a new shape
  tiered     a fresh process, an empty cache, `xe.jit(f, tiered=True)`: the first answer
             (the interpreter's, while the kernels compile in the background), and the time
             until the kernels are ready
  cell       a fresh Jupyter kernel, an empty cache, a second idle after `%load_ext`: the
             program as a `%%xla --quiet` cell, its first answer (the interpreter's), and
             its run on new values once the kernel has been idle and compiled the kernels
  jax        a fresh process: `jax.jit(f)(*args)` to the result (`block_until_ready`),
             `import jax` not counted; and its new shape likewise

Medians over the rounds. Ratios are ours / jax: at or below 1 means the first answer comes as
fast as XLA's. Every process checks its answer against NumPy before it reports a time.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from programs import F32, layernorm, softmax, sum_xyz


# -- the programs, written once for NumPy and jax.numpy (xp) -----------------------------------

def attention(xp, q, k, v):
    s = q @ k.T / xp.sqrt(F32(q.shape[1]))
    s = xp.exp(s - s.max(axis=1, keepdims=True))
    return (s / s.sum(axis=1, keepdims=True)) @ v


def mlp_step(xp, x, y, w1, b1, w2, b2):
    """One step of gradient descent on a two-layer perceptron with a squared loss."""
    h = xp.maximum(x @ w1 + b1, F32(0))
    d = (h @ w2 + b2 - y) * F32(2 / y.size)
    dh = (d @ w2.T) * (h > 0)
    lr = F32(0.01)
    return (w1 - lr * (x.T @ dh), b1 - lr * dh.sum(axis=0),
            w2 - lr * (h.T @ d), b2 - lr * d.sum(axis=0))


def heat(steps):
    """`steps` explicit steps of the 1-D heat equation on a ring."""
    def heat(xp, u):
        for _ in range(steps):
            u = u + F32(0.25) * (xp.roll(u, 1) - F32(2) * u + xp.roll(u, -1))
        return u
    heat.__name__ = f"heat_{steps}"
    return heat


def gradient_descent(xp, a, b, w):
    """100 steps of gradient descent on least squares |a w - b|^2."""
    for _ in range(100):
        w = w - F32(0.01) * (a.T @ (a @ w - b))
    return w


def power_iteration(xp, a, v):
    """50 steps of power iteration towards a's dominant eigenvector."""
    for _ in range(50):
        v = a @ v
        v = v / xp.sqrt(xp.sum(v * v))
    return v


def adam_loop(xp, w, g):
    """300 steps of Adam with bias correction on |w - g|^2: Python computes 1 - 0.9 ** t
    while tracing, so each step has constants of its own."""
    m, v = xp.zeros_like(w), xp.zeros_like(w)
    for t in range(1, 301):
        grad = F32(2) * (w - g)
        m = F32(0.9) * m + F32(0.1) * grad
        v = F32(0.999) * v + F32(0.001) * grad * grad
        w = w - F32(1e-3) * (m / F32(1 - 0.9 ** t)) / (
            xp.sqrt(v / F32(1 - 0.999 ** t)) + F32(1e-8))
    return w


def driven_oscillator(xp, x, v):
    """600 steps of a damped oscillator driven by sin(0.05 i): the force, a number Python
    computes, changes each step."""
    for i in range(600):
        v = v + F32(0.01) * (F32(-4) * x - F32(0.1) * v + F32(np.sin(0.05 * i)))
        x = x + F32(0.01) * v
    return x, v


def rnn(xp, xs, w, u, h):
    """An Elman RNN over a sequence of 200 steps: each step reads its row, xs[t]."""
    for t in range(xs.shape[0]):
        h = xp.tanh(w @ h + u @ xs[t])
    return h


def adam(xp, w, g, m, v):
    """Notebook 02's Adam step."""
    m = F32(0.9) * m + F32(0.1) * g
    v = F32(0.999) * v + F32(0.001) * g * g
    return w - F32(1e-3) * (m / F32(0.1)) / (xp.sqrt(v / F32(0.001)) + F32(1e-8)), m, v


def fori_loop(xp):
    """The loop that traces its body once: `jax.lax.fori_loop` for jax, `xe.fori_loop` for
    NumPy (outside a trace, the Python loop)."""
    if xp.__name__.startswith("jax"):
        import jax
        return jax.lax.fori_loop
    import xla_explorer as xe
    return xe.fori_loop


def heat_loop(xp, u):
    """200 steps of the heat equation as one loop, its body traced once."""
    return fori_loop(xp)(0, 200, lambda i, u: u + F32(0.25) * (
        xp.roll(u, 1) - F32(2) * u + xp.roll(u, -1)), u)


def power_loop(xp, a, v):
    """50 steps of power iteration as one loop, its body traced once."""
    def step(i, v):
        v = a @ v
        return v / xp.sqrt(xp.sum(v * v))
    return fori_loop(xp)(0, 50, step, v)


# name -> (program, input shapes, the shapes of the second call)
PROGRAMS = {
    "sum(x + y*z) 1e6": (sum_xyz, [(10**6,)] * 3, [(10**6 + 1000,)] * 3),
    "softmax 1024x512": (softmax, [(1024, 512)], [(1024, 640)]),
    "layernorm 1024x512": (layernorm, [(1024, 512), (512,), (512,)],
                           [(1024, 640), (640,), (640,)]),
    "attention 256x64": (attention, [(256, 64)] * 3, [(320, 64)] * 3),
    "MLP training step": (mlp_step, [(128, 64), (128, 10), (64, 256), (256,), (256, 10), (10,)],
                          [(160, 64), (160, 10), (64, 256), (256,), (256, 10), (10,)]),
    "Adam step (notebook 02)": (adam, [(4096,)] * 4, [(5000,)] * 4),
    "heat equation, 50 steps": (heat(50), [(64,)], [(80,)]),
    "heat equation, 200 steps": (heat(200), [(64,)], [(80,)]),
    "gradient descent, 100 steps": (gradient_descent, [(256, 16), (256,), (16,)],
                                    [(320, 16), (320,), (16,)]),
    "power iteration, 50 steps": (power_iteration, [(64, 64), (64,)], [(80, 80), (80,)]),
    "Adam with bias correction, 300 steps": (adam_loop, [(64,)] * 2, [(80,)] * 2),
    "driven oscillator, 600 steps": (driven_oscillator, [(64,)] * 2, [(80,)] * 2),
    "RNN over 200 steps": (rnn, [(200, 8), (32, 32), (32, 8), (32,)],
                           [(200, 8), (40, 40), (40, 8), (40,)]),
    "heat equation, 200 steps, fori_loop": (heat_loop, [(64,)], [(80,)]),
    "power iteration, 50 steps, fori_loop": (power_loop, [(64, 64), (64,)], [(80, 80), (80,)]),
}


def inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    # Small values keep the loops' iterates finite and the answers comparable.
    return [(rng.standard_normal(s) * 0.1).astype(F32) for s in shapes]


# -- one process: one runner's first call, then its call on a new shape ------------------------

CHILD = """
import sys, json, time
sys.path.insert(0, {bench_dir!r})
import numpy as np
import compile_latency as bench
program, shapes, new_shapes = bench.PROGRAMS[{name!r}]
first, second = bench.inputs(shapes), bench.inputs(new_shapes, seed=1)
if {runner!r} == "jax":
    import jax, jax.numpy as jnp
    fast = jax.jit(lambda *a: program(jnp, *a))
    call = lambda args: jax.block_until_ready(fast(*args))
else:
    import xla_explorer as xe
    def f(*a):
        return program(np, *a)
    f.__name__ = program.__name__
    fast = xe.jit(f, backend="cpu", tiered={runner!r} == "tiered")
    call = lambda args: fast(*args)
seconds = []
for args in (first, second):
    t0 = time.perf_counter()
    out = call(args)
    seconds.append(time.perf_counter() - t0)
    if {runner!r} == "tiered" and len(seconds) == 1:
        fast.wait()
        seconds.append(time.perf_counter() - t0)  # until the kernels are ready
    want = program(np, *args)
    for o, w in zip(out if isinstance(out, (tuple, list)) else [out],
                    want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(np.asarray(o), w, rtol=2e-3, atol=2e-4)
print(json.dumps(seconds))
"""


# A notebook's wait: the program as a `%%xla --quiet` cell in a fresh Jupyter kernel, the
# kernel idle for a second after `%load_ext` (as while the next cell is written: Numba starts
# then). Its first run (the interpreter's answer, the kernels generated); then, once the
# kernel has been idle and compiled them, the same cell again on new values of the inputs.
CELL_CELLS = [
    "import sys\nsys.path.insert(0, {bench_dir!r})\n%load_ext xla_explorer\n"
    "import asyncio, json, time\nimport numpy as np\nimport compile_latency as bench\n"
    "program, shapes, _ = bench.PROGRAMS[{name!r}]\n"
    "names = ['a%d' % i for i in range(len(shapes))]\n"
    "globals().update(zip(names, bench.inputs(shapes)))\n"
    "body = 'out = program(np, ' + ', '.join(names) + ')'\n"
    "magics = get_ipython().magics_manager.registry['XlaMagics']",
    "await asyncio.sleep(1)",
    "t0 = time.perf_counter()\n"
    "get_ipython().run_cell_magic('xla', '--quiet', body)\n"
    "first = time.perf_counter() - t0",
    "for _ in range(3000):\n"
    "    await asyncio.sleep(0.1)  # idle: the kernels compile on the event loop\n"
    "    if not any(c.jit.waiting() for c in magics.cache.cells.values()):\n"
    "        break\n"
    "globals().update(zip(names, bench.inputs(shapes, seed=1)))\n"
    "t0 = time.perf_counter()\n"
    "get_ipython().run_cell_magic('xla', '--quiet', body)\n"
    "again = time.perf_counter() - t0\n"
    "want = program(np, *[globals()[n] for n in names])\n"
    "for o, w in zip(out if isinstance(out, (tuple, list)) else [out],\n"
    "                want if isinstance(want, tuple) else [want]):\n"
    "    np.testing.assert_allclose(np.asarray(o), w, rtol=2e-3, atol=2e-4)\n"
    "print(json.dumps([first, again]))",
]


def cell_child(name: str, cache: str) -> list[float]:
    import nbformat
    from nbclient import NotebookClient

    bench_dir = os.path.dirname(os.path.abspath(__file__))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c.format(bench_dir=bench_dir, name=name))
                for c in CELL_CELLS]
    saved = {k: os.environ.get(k) for k in ("XLA_EXPLORER_CACHE", "XLA_EXPLORER_IMAGES")}
    os.environ.update(XLA_EXPLORER_CACHE=cache, XLA_EXPLORER_IMAGES="1")
    try:
        NotebookClient(nb, timeout=LIMIT_SECONDS, kernel_name="python3").execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs
                   if o.get("name") == "stdout")  # NumPy's warnings go to stderr
    return json.loads(text.strip().splitlines()[-1])


# A process that has not answered after this long is reported as "over" it (inf).
LIMIT_SECONDS = 300


def child(name: str, runner: str, cache: str, images: bool = True) -> list[float]:
    code = CHILD.format(bench_dir=os.path.dirname(os.path.abspath(__file__)), name=name,
                        runner=runner)
    env = dict(os.environ, XLA_EXPLORER_CACHE=cache, JAX_PLATFORMS="cpu",
               XLA_EXPLORER_IMAGES="1" if images else "0")
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=LIMIT_SECONDS)
    except subprocess.TimeoutExpired:
        return [float("inf"), float("inf")]
    if done.returncode:
        raise RuntimeError(f"{runner} on {name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(name: str, repeats: int) -> dict:
    rounds: dict[str, list] = {k: [] for k in ("cold", "disk", "numba disk", "new shape",
                                               "tiered", "tiered ready", "cell",
                                               "cell again", "jax", "jax new shape")}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            cold = child(name, "ours", cache)
            rounds["cold"].append(cold[0])
            rounds["new shape"].append(cold[1])
            rounds["disk"].append(child(name, "ours", cache)[0])
            rounds["numba disk"].append(child(name, "ours", cache, images=False)[0])
        with tempfile.TemporaryDirectory() as cache:
            tiered = child(name, "tiered", cache)
            rounds["tiered"].append(tiered[0])
            rounds["tiered ready"].append(tiered[1])
        with tempfile.TemporaryDirectory() as cache:
            cell = cell_child(name, cache)
            rounds["cell"].append(cell[0])
            rounds["cell again"].append(cell[1])
        jax_times = child(name, "jax", cache)
        rounds["jax"].append(jax_times[0])
        rounds["jax new shape"].append(jax_times[1])
    return {k: float(np.median(v)) for k, v in rounds.items()}


def seconds(s: float) -> str:
    if s == float("inf"):
        return f"over {LIMIT_SECONDS} s"
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def table(results: dict) -> str:
    head = ("| program | ours, empty cache | ours, kernel image on disk | Numba's cache on "
            "disk | new shape | tiered: first answer | tiered: kernels ready | %%xla cell: "
            "first answer | %%xla cell: run again | jax.jit | jax, new shape | cold / jax | "
            "disk / jax | tiered / jax | cell / jax |")
    rows = [head, "|" + "---|" * 15]
    for name, r in results.items():
        rows.append(f"| {name} | {seconds(r['cold'])} | {seconds(r['disk'])} | "
                    f"{seconds(r['numba disk'])} | "
                    f"{seconds(r['new shape'])} | {seconds(r['tiered'])} | "
                    f"{seconds(r['tiered ready'])} | {seconds(r['cell'])} | "
                    f"{seconds(r['cell again'])} | {seconds(r['jax'])} | "
                    f"{seconds(r['jax new shape'])} | {r['cold'] / r['jax']:.1f}x | "
                    f"{r['disk'] / r['jax']:.1f}x | {r['tiered'] / r['jax']:.2f}x | "
                    f"{r['cell'] / r['jax']:.2f}x |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="a program's name (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write the medians here too")
    args = parser.parse_args(argv)
    names = args.only or list(PROGRAMS)
    results = {}
    for name in names:
        results[name] = measure(name, args.repeats)
        print(name, json.dumps({k: round(v, 4) for k, v in results[name].items()}), flush=True)
    print()
    print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
