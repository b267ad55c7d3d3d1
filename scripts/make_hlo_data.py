"""Writes tests/data/hlo/: real HLO from JAX for `xe.explore_hlo`, with JAX's answers.

Run with a Python that has jax installed, from the repository root:

    python scripts/make_hlo_data.py

For each program below (the benchmark programs of benchmarks/programs.py and ten more) it
writes into tests/data/hlo/<name>/:

  <name>.hlo                   jax.jit(f).lower(*args).as_text(dialect="hlo")
  module_*.before_optimizations.txt
                               XLA's own dump of the module before its passes, made by a
                               child process run with XLA_FLAGS=--xla_dump_to=DIR
  <name>.npz                   the inputs (arg0, arg1, ...) and JAX's outputs (out0, ...)

and into tests/data/hlo/unsupported/ the text JAX prints for what explore_hlo refuses
(a fori_loop's while, lax.cond's conditional, a convolution, bfloat16, a sharded
computation). The script's absolute path in the metadata is replaced by its name, so the
files do not depend on the machine. The jax version used is printed.

A script of its own, not tests/ir/data/jax/generate.py: that one's golden files record its
line numbers, so adding programs there would rewrite every file the parser tests compare.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "hlo"
SCRIPT = str(Path(__file__).resolve())
sys.path.insert(0, str(ROOT))


def programs(jnp, lax):
    """{name: (function, inputs)}: small shapes, so the whole set stays well under 2 MB."""
    from benchmarks import programs as bp

    rng = np.random.default_rng(2026)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def i32(*shape):
        return rng.integers(-20, 21, shape).astype(np.int32)

    def named(name, f):
        f.__name__ = name  # JAX names the module jit_<name>: one module, one dump file
        return f

    def bench(name):
        g = getattr(bp, name)
        return named(name, lambda *a: g(jnp, *a))

    def reductions(x):  # sums, maxima and means over different axes of one array
        return x.sum(axis=0), x.max(axis=(1, 2)), x.mean(axis=-1), x.min()

    def broadcasting(x, y, z):
        return x[:, None] * y[None, :] + z - x.mean()

    def concat_slice(x, y):
        return jnp.concatenate([x[1:4, ::2], y[::-1, 1:4][:3], x[:3, -3:]], axis=1)

    def compare_select(x, y):
        return jnp.where(x > y, x - y, jnp.clip(y, -0.5, 0.5)), (x == y) | (x < 0)

    def int_math(a, b):
        return (a * b + 3) // 4, jnp.abs(a) % 5, jnp.maximum(a, b) - jnp.minimum(a, b), a.sum()

    def mlp(x, w1, b1, w2, b2):
        h = jnp.maximum(x @ w1 + b1, 0)
        return jnp.tanh(h @ w2 + b2)

    def log_softmax(x):
        s = x - x.max(axis=0, keepdims=True)
        return s - jnp.log(jnp.exp(s).sum(axis=0, keepdims=True))

    def argmax(x):
        return jnp.argmax(x, axis=0), jnp.argmin(x, axis=1)

    def transpose_reshape(x):
        return jnp.swapaxes(x, 0, 2).reshape(6, -1) * 2, x.T.sum(axis=0)

    def mixed_types(a, x):
        n = (a > 0).sum(axis=1)
        return x * a.astype(jnp.float32), n, n.astype(jnp.float32) / x.shape[1]

    return {
        "sum_xyz": (bench("sum_xyz"), [f32(1000), f32(1000), f32(1000)]),
        "gelu": (bench("gelu"), [f32(512)]),
        "softmax": (bench("softmax"), [f32(8, 16)]),
        "layernorm": (bench("layernorm"), [f32(8, 16), f32(16), f32(16)]),
        "dense_relu": (bench("dense_relu"), [f32(4, 8), f32(8, 16), f32(16)]),
        "mean_var": (bench("mean_var"), [f32(2048)]),
        "chain50": (bench("chain50"), [f32(256)]),
        "reductions": (reductions, [f32(4, 5, 6)]),
        "broadcasting": (broadcasting, [f32(6), f32(7), f32(6, 7)]),
        "concat_slice": (concat_slice, [f32(6, 8), f32(5, 6)]),
        "compare_select": (compare_select, [f32(5, 9), f32(5, 9)]),
        "int_math": (int_math, [i32(7, 3), i32(7, 3)]),
        "mlp": (mlp, [f32(4, 8), f32(8, 16), f32(16), f32(16, 3), f32(3)]),
        "log_softmax": (log_softmax, [f32(10, 4)]),
        "argmax": (argmax, [f32(6, 9)]),
        "transpose_reshape": (transpose_reshape, [f32(3, 4, 6)]),
        "mixed_types": (mixed_types, [i32(4, 5), f32(4, 5)]),
    }


def unsupported(jax, jnp, lax):
    """{name: (function, input shapes and types)}: constructs explore_hlo refuses."""
    f32 = jax.ShapeDtypeStruct((8,), jnp.float32)

    def fori_loop(x):
        return lax.fori_loop(0, 3, lambda i, v: v * 2 + i, x)

    def cond(x):
        return lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)

    def convolution(x, k):
        return jnp.convolve(x, k, mode="same")

    def bf16(x):
        return (x * 2).sum()

    return {
        "fori_loop": (fori_loop, [f32]),
        "cond": (cond, [f32]),
        "convolution": (convolution, [f32, jax.ShapeDtypeStruct((3,), jnp.float32)]),
        "bf16": (bf16, [jax.ShapeDtypeStruct((8,), jnp.bfloat16)]),
    }


def sharded_text(jax, jnp) -> str:
    """A computation split over two (simulated) CPU devices: `sharding={...}` attributes."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
    spec = NamedSharding(mesh, PartitionSpec("x"))
    f = jax.jit(lambda x: jnp.sin(x) * 2, in_shardings=spec, out_shardings=spec)
    return f.lower(jax.ShapeDtypeStruct((8,), jnp.float32)).as_text(dialect="hlo")


def clean(text: str) -> str:
    return text.replace(SCRIPT, "make_hlo_data.py").replace(str(ROOT) + "/", "")


def child(dump_dir: str) -> None:
    """In a process whose XLA_FLAGS dump every compilation into `dump_dir`: write the lowered
    text and the .npz files, compile each program once (XLA dumps it as it compiles)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    print(f"jax {jax.__version__}")
    for name, (f, args) in programs(jnp, lax).items():
        folder = OUT / name
        folder.mkdir(parents=True, exist_ok=True)
        lowered = jax.jit(f).lower(*args)
        (folder / f"{name}.hlo").write_text(clean(lowered.as_text(dialect="hlo")))
        outs = lowered.compile()(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        arrays = {f"arg{i}": a for i, a in enumerate(args)}
        arrays.update({f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
        np.savez_compressed(folder / f"{name}.npz", **arrays)
        print(f"  {name}: {len(args)} inputs, {len(outs)} outputs")
    folder = OUT / "unsupported"
    folder.mkdir(parents=True, exist_ok=True)
    for name, (f, shapes) in unsupported(jax, jnp, lax).items():
        text = jax.jit(f).lower(*shapes).as_text(dialect="hlo")
        (folder / f"{name}.hlo").write_text(clean(text))
    (folder / "sharding.hlo").write_text(clean(sharded_text(jax, jnp)))
    print("  unsupported/: " + ", ".join(sorted(p.stem for p in folder.glob("*.hlo"))))


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    with tempfile.TemporaryDirectory() as dump:
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump} "
                                         "--xla_force_host_platform_device_count=2",
                   JAX_PLATFORMS="cpu")
        subprocess.run([sys.executable, SCRIPT, "--child", dump], env=env, check=True)
        for name in sorted(p.name for p in OUT.iterdir() if p.name != "unsupported"):
            found = sorted(Path(dump).glob(f"module_*.jit_{name}.before_optimizations.txt"))
            if len(found) != 1:
                raise SystemExit(f"{name}: expected one dump file, found {found}")
            (OUT / name / found[0].name).write_text(clean(found[0].read_text()))
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"wrote {OUT.relative_to(ROOT)}: {size / 1e3:.0f} kB")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
