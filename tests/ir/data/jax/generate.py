"""Regenerates the golden HLO text files in this folder.

Run with a Python that has jax installed:

    python tests/ir/data/jax/generate.py

For each program below it writes, into its own folder,
``<name>.lowered.hlo`` (``jax.jit(f).lower(*args).as_text(dialect="hlo")``)
and ``<name>.compiled.hlo`` (``jax.jit(f).lower(*args).compile().as_text()``).
Absolute paths of this script are replaced by ``generate.py`` so the files do
not depend on the machine. The jax/jaxlib versions used are printed.
"""

import os

import jax
import jax.numpy as jnp
import jaxlib

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.abspath(__file__)


def f32(*shape):
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def sum_xyz(x, y, z):
    return jnp.sum(x + y * z)


def softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def layernorm(x, gamma, beta):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * gamma + beta


def mlp(x, w1, b1, w2, b2):
    h = jnp.maximum(x @ w1 + b1, 0)
    return jnp.tanh(h @ w2 + b2)


def gelu(x):
    return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def argmax_rows(x):
    return jnp.argmax(x, axis=1)


def slicing(x):
    return jnp.concatenate([x[1:5, ::2], x[::-1][:4, :6]], axis=0).T.reshape(-1)


def mean_var(x):
    return jnp.mean(x), jnp.var(x)


PROGRAMS = {
    "sum_xyz": (sum_xyz, [f32(1000), f32(1000), f32(1000)]),
    "softmax": (softmax, [f32(8, 16)]),
    "layernorm": (layernorm, [f32(8, 16), f32(16), f32(16)]),
    "mlp": (mlp, [f32(4, 8), f32(8, 16), f32(16), f32(16, 3), f32(3)]),
    "gelu": (gelu, [f32(1024)]),
    "argmax_rows": (argmax_rows, [f32(8, 16)]),
    "slicing": (slicing, [f32(10, 12)]),
    "mean_var": (mean_var, [f32(4096)]),
}


def write(path, text):
    text = text.replace(SCRIPT, "generate.py")
    with open(path, "w") as fh:
        fh.write(text)


def main():
    print(f"jax {jax.__version__}, jaxlib {jaxlib.__version__}")
    for name, (f, args) in PROGRAMS.items():
        folder = os.path.join(HERE, name)
        os.makedirs(folder, exist_ok=True)
        lowered = jax.jit(f).lower(*args)
        write(os.path.join(folder, f"{name}.lowered.hlo"), lowered.as_text(dialect="hlo"))
        write(os.path.join(folder, f"{name}.compiled.hlo"), lowered.compile().as_text())
        print(f"wrote {name}/")


if __name__ == "__main__":
    main()
