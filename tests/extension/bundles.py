"""The bundles the extension's tests render: one per program of the test corpus.

The corpus is tests/test_fusion_programs.PROGRAMS (the programs fusion exists for), the viewer
tests' programs (tests/viz/test_mime.explorations: interpreter, auto-clustering, escaping) and
the issue's attention block and Adam step; and one graph large enough to fold. The notebooks
holding them (notebooks.py) are written with nbformat, so the tests do not depend on what
`%%xla` emits.
"""
from __future__ import annotations

import numpy as np

import xla_explorer as xe
from xla_explorer.viz import mime

from ..test_fusion_programs import PROGRAMS, f32
from ..viz.test_mime import explorations


def adam_step(w, g, m, v):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * np.abs(v) + 0.001 * g * g
    w = w - 0.001 * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-8)
    return w, m, v


def attention(q, k, v):
    s = q @ k.T / np.float32(4.0)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v


def long_chain(x):
    """35 element-wise steps: one fusion of about 90 instructions, a graph of about 90 nodes,
    past the renderer's folding threshold."""
    for i in range(35):
        x = np.tanh(x * 1.01 + 0.5) if i % 2 else x * x - 0.25
    return x


def large_program() -> dict:
    return {"long_chain": xe.explore(long_chain, np.ones(64, np.float32), backend="cpu")}


def issue_programs() -> dict:
    """The two programs whose stage-step redraw time the browser test reports."""
    rng = np.random.default_rng(0)
    return {
        "attention": xe.explore(attention, *[f32(rng, 8, 16) for _ in range(3)], backend="cpu"),
        "adam_step": xe.explore(adam_step, *[f32(rng, 64) for _ in range(4)], backend="cpu"),
    }


def corpus() -> dict:
    """name -> Exploration, every program of the corpus."""
    rng = np.random.default_rng(0)
    out = {}
    for program, shapes, _kinds in PROGRAMS:
        out[program.__name__] = xe.explore(program, *[f32(rng, *s) for s in shapes],
                                           backend="cpu")
    out.update(explorations())
    out.update(issue_programs())
    return out


def payloads(explorations_: dict, bench: dict | None = None) -> dict:
    bench = bench or {}
    return {name: mime.payload(ex, bench.get(name)) for name, ex in explorations_.items()}
