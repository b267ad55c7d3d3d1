"""What the notebooks' programs hold in memory: eager NumPy's peak during a call against what
the compiled program holds during one (its arena, allocated once and kept between calls, plus
what the call allocates), for every program the teaching notebooks compile.

    python benchmarks/memory.py [--json memory.json]

Both are measured by tracemalloc during one call after a warm-up call (runtime/bench.py's
`peak_bytes`: NumPy reports every array it allocates to it, and the compiled program allocates
its outputs with NumPy); the arena is the executable's own array, and the buffer assignment's
arena (the Buffers tab's figure) is checked to be the same number. A ratio at or below 1 is
the goal: compiled holds no more than eager NumPy's peak. The inputs are the notebooks' own
shapes, and each program is written as the notebook's cell or function computes it.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import xla_explorer as xe  # noqa: E402
from xla_explorer.runtime.bench import peak_bytes  # noqa: E402
from xla_explorer.viz.format import bytes_text  # noqa: E402

F32 = np.float32


def first_cell(x, y, z):  # 01: the first %%xla cell
    return np.sum(x + y * z)


def fusion_softmax(x):  # 02: softmax over rows
    p = np.exp(x - x.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def fusion_layernorm(x, g, beta):  # 02: mu, var and ln are all outputs of the cell
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return mu, var, (x - mu) / np.sqrt(var + F32(1e-5)) * g + beta


def fusion_adam(w, grad, m, v):  # 02: one Adam step, t = 1
    lr, b1, b2, eps = F32(1e-3), F32(0.9), F32(0.999), F32(1e-8)
    c1, c2 = 1 - b1, 1 - b2
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad * grad
    return m, v, w - lr * (m / c1) / (np.sqrt(v / c2) + eps)


def fusion_attention(q, k, val, w1, bias):  # 02: every name the cell assigns is an output
    s = q @ k.T / np.sqrt(F32(4))
    s = np.exp(s - s.max(axis=1, keepdims=True))
    s = s / s.sum(axis=1, keepdims=True)
    out = s @ val
    return s, out, np.maximum(out @ w1 + bias, 0)


def autocluster(x):  # 03: np.unique between two compiled clusters
    y = np.tanh(x) * 2 + 1
    u = np.unique(np.round(y))
    return y, u, (u * u).sum()


def recompilation(x):  # 04
    return np.maximum(x * 2.0 - 1.0, 0.0).sum(axis=1)


def heat_step(u):  # 04: the loop, unrolled by tracing and rolled back up
    for _ in range(200):
        u = u + F32(0.25) * (np.roll(u, 1) - F32(2) * u + np.roll(u, -1))
    return u


def three_layers(x, w1, w2, w3):  # 05
    return np.tanh(np.tanh(np.tanh(x @ w1) @ w2) @ w3).sum()


T, D, H = 16, 32, 128


def block(x, wqkv, wa, wb):  # 05: the transformer-style block
    n = x.shape[0] // T
    h = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    qkv = (h @ wqkv).reshape(n, T, 3, D)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    s = q @ k.transpose(0, 2, 1) / np.sqrt(F32(D))
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    x = x + (p @ v).reshape(n * T, D)
    return x + np.maximum(x @ wa, 0) @ wb


def gelu(x):  # 06
    c = F32(np.sqrt(2 / np.pi))
    return F32(0.5) * x * (F32(1) + np.tanh(c * (x + F32(0.044715) * x * x * x)))


def layernorm(x, g, b):  # 06
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + F32(1e-5)) * g + b


def dense(a, b):  # 06: the matrix product
    return a @ b


def tiny_model(x):  # 07
    for _ in range(20):
        x = np.maximum(x * F32(0.9) + F32(0.1), F32(-1))
    return x


def train_step(W1, b1, W2, b2, X, Y, lr):  # 08: the step, its weights updated in place
    h = np.maximum(X @ W1 + b1, 0)
    logits = h @ W2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -(Y * log_p).sum() / X.shape[0]
    dlogits = (np.exp(log_p) - Y) / X.shape[0]
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = (dlogits @ W2.T) * (h > 0)
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    W1 -= lr * dW1
    b1 -= lr * db1
    W2 -= lr * dW2
    b2 -= lr * db2
    return loss


def programs(rng) -> list[tuple[str, object, list, dict]]:
    """(label, function, inputs, explore options) for every notebook program, at the
    notebook's shapes."""
    def r(*shape):
        return rng.standard_normal(shape).astype(F32)

    n, centres = 2048, r(4, 20) * F32(0.5)
    labels = rng.integers(0, 4, n)
    x8 = (centres[labels] + r(n, 20)).astype(F32)
    m = r(2048, 1024)
    return [
        ("01 first cell", first_cell, [r(1000), r(1000), r(1000)], {}),
        ("02 softmax", fusion_softmax, [r(4, 8)], {}),
        ("02 layernorm", fusion_layernorm, [r(4, 8), np.ones(8, F32), np.zeros(8, F32)], {}),
        ("02 Adam step", fusion_adam, [r(16), r(16), np.zeros(16, F32), np.zeros(16, F32)], {}),
        ("02 attention", fusion_attention, [r(6, 4), r(6, 4), r(6, 4), r(4, 8),
                                            np.zeros(8, F32)], {}),
        ("03 autocluster", autocluster, [np.linspace(-1, 1, 16, dtype=F32)],
         {"autocluster": True}),
        ("04 model", recompilation, [rng.random((1, 1000), dtype=F32)], {}),
        ("04 heat equation, 200 steps", heat_step,
         [np.sin(np.linspace(0, 6, 64)).astype(F32)], {}),
        ("05 three layers", three_layers, [r(64, 32)] + [r(32, 32) * F32(0.2)] * 3, {}),
        ("05 block, 32 sequences", block, [r(32 * T, D), r(D, 3 * D) * F32(0.1),
                                           r(D, H) * F32(0.1), r(H, D) * F32(0.1)], {}),
        ("06 sum_xyz", first_cell, [r(4_000_000) for _ in range(3)], {}),
        ("06 gelu", gelu, [r(4_000_000)], {}),
        ("06 softmax", fusion_softmax, [m], {}),
        ("06 layernorm", layernorm, [m, np.ones(1024, F32), np.zeros(1024, F32)], {}),
        ("06 matrix product", dense, [r(1024, 1024), r(1024, 1024)], {}),
        ("07 tiny model", tiny_model, [np.linspace(-1, 1, 1000, dtype=F32)], {}),
        ("08 training step", train_step, [r(20, 64) * F32(0.1), np.zeros(64, F32),
                                          r(64, 4) * F32(0.1), np.zeros(4, F32), x8,
                                          np.eye(4, dtype=F32)[labels], 0.5], {}),
    ]


def measure(label, f, args, options) -> dict:
    ex = xe.explore(f, *args, backend="cpu", **options)
    run = ex.run

    def fresh():  # a call may update its inputs in place (the training step's weights)
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]

    f(*fresh())  # warm-up: compile, fault pages in
    run(*fresh())
    run(*fresh())  # the second call compiles the driver (runtime/executable.py)
    # The copies are made before tracemalloc starts: neither side is charged for them.
    eager = peak_bytes(partial(f, *fresh()))
    per_call = peak_bytes(partial(run, *fresh()))
    arena = ex.executable.arena_bytes
    # The Buffers tab's arena: the executable's, but for a while loop's body arena, which is
    # placed after the assignment (the tab says so), and auto-clustering's clusters, which
    # have one each (their sum is the executable's).
    assigned = None if options.get("autocluster") else ex.buffers.peak_bytes
    if assigned is not None and not any(i.opcode == "while" for i in ex.module.entry):
        assert assigned == arena, f"{label}: the Buffers tab says {assigned}, the arena is {arena}"
    held = arena + per_call
    return {"program": label, "eager_peak_bytes": eager, "arena_bytes": arena,
            "assigned_arena_bytes": assigned, "per_call_bytes": per_call,
            "compiled_bytes": held, "ratio": held / eager if eager else float("inf")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the rows here")
    opts = ap.parse_args(argv)
    rows = [measure(*p) for p in programs(np.random.default_rng(0))]
    print(f"{platform.processor() or platform.machine()}, NumPy {np.__version__}\n")
    print("| program | eager peak | compiled: arena + per call | compiled / eager |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['program']} | {bytes_text(row['eager_peak_bytes'])} | "
              f"{bytes_text(row['compiled_bytes'])} ({bytes_text(row['arena_bytes'])} + "
              f"{bytes_text(row['per_call_bytes'])}) | {row['ratio']:.2f} |")
    over = [row["program"] for row in rows if row["ratio"] > 1]
    print("\ncompiled holds more than eager NumPy's peak: " + (", ".join(over) or "none"))
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
