"""The fusion passes run on while loops' bodies too (`passes/loop_bodies.py`): the explorer
shows the step fused, as the CPU backend compiles it."""
from __future__ import annotations

import numpy as np

import xla_explorer as xe
from xla_explorer.ir.module import Module

F32 = np.float32


def step(i, u):
    return u + F32(0.25) * (np.roll(u, 1) - F32(2) * u + np.roll(u, -1))


def fusion_stage(ex) -> Module:
    return next(s for s in ex.stages if s.name == "fusion").module


def body_of(module: Module, name: str | None = None):
    (loop,) = [i for i in module.entry.instructions if i.opcode == "while"]
    return module.computation(loop.attr("body"))


def fused_in(comp) -> list[str]:
    return [i.name for i in comp.instructions if i.opcode == "fusion"]


def test_the_explorer_shows_a_loops_step_fused_as_the_cpu_compiles_it():
    u = np.sin(np.linspace(0, 6, 64)).astype(F32)
    ex = xe.explore(lambda u: xe.fori_loop(0, 50, step, u), u, backend="cpu")
    body = body_of(fusion_stage(ex))
    fusions = fused_in(body)
    assert fusions and not any(i.opcode == "concatenate" for i in body.instructions)
    # The kernels the CPU compiled for the body are the ones the explorer shows.
    compiled = {k.split("/")[1] for k in ex.executable.kernels if "/" in k} - {"run"}
    assert compiled == {f.replace(".", "_") for f in fusions}
    # Fusion's decisions about the step are the stage's notes, with the entry's.
    step_names = {i.name for i in body_of(ex.stages[0].module).instructions}
    assert any(d.producer in step_names or d.consumer in step_names for d in ex.decisions)
    want = u
    for i in range(50):
        want = step(i, want)
    np.testing.assert_array_equal(ex.run(u), want)


def test_a_loop_in_a_loops_body_is_fused_too():
    def nested(u):
        return xe.fori_loop(0, 3, lambda i, u: xe.fori_loop(0, 4, step, u) * F32(0.5), u)

    u = np.cos(np.linspace(0, 6, 32)).astype(F32)
    for backend in ("interpreter", "cpu"):
        ex = xe.explore(nested, u, backend=backend)
        outer = body_of(fusion_stage(ex))
        (inner_loop,) = [i for i in outer.instructions if i.opcode == "while"]
        inner = fusion_stage(ex).computation(inner_loop.attr("body"))
        assert fused_in(outer) and fused_in(inner)
        want = u
        for _ in range(3):
            for i in range(4):
                want = step(i, want)
            want = want * F32(0.5)
        np.testing.assert_allclose(ex.run(u), want, rtol=1e-6)


def test_the_fused_module_prints_and_parses_back():
    u = np.ones(16, F32)
    ex = xe.explore(lambda u: xe.fori_loop(0, 5, step, u), u, backend="interpreter")
    text = ex.module.to_text()
    assert xe.parse_hlo(text).to_text() == text
