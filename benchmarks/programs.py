"""The programs the benchmarks time, written once for NumPy and jax.numpy (`xp`): run.py
times their speed and memory, compile_latency.py their time to a first answer."""
from __future__ import annotations

import numpy as np

F32 = np.float32

def sum_xyz(xp, x, y, z):
    return xp.sum(x + y * z)


def gelu(xp, x):
    c = F32(np.sqrt(2 / np.pi))
    return F32(0.5) * x * (F32(1) + xp.tanh(c * (x + F32(0.044715) * x * x * x)))


def softmax(xp, x):
    e = xp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(xp, x, g, b):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / xp.sqrt(v + F32(1e-5)) * g + b


def dense_relu(xp, x, w, b):
    return xp.maximum(x @ w + b, F32(0))


def mean_var(xp, x):
    return x.mean(), x.var()


def chain50(xp, x):
    for _ in range(25):
        x = x * F32(1.0001) + F32(0.5)
    return x
