"""Kernel counts on the programs fusion exists for, from NumPy through the whole pipeline.

XLA's CPU compiler launches 3 kernels for sum(x + y*z), 4 for a row softmax and 5 for
layernorm; the aim here is one each. Every program is also checked against eager NumPy, run
through the buffer assignment's arena.
"""
import numpy as np
import pytest

import xla_explorer as xe


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def rmsnorm(x, gamma):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * gamma


def logsumexp(x):
    m = x.max(axis=1, keepdims=True)
    return np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m


def normalize_rows(x):
    return x / np.abs(x).sum(axis=1, keepdims=True)


def dense_relu(x, w, b):
    return np.maximum(x @ w + b, 0)


def adam(p, g, m, v):
    v = np.abs(v)  # a second moment (the test feeds it random normals)
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return p - 0.01 * m / (np.sqrt(v) + 1e-8), m, v


def moments(x):
    return x.sum(), (x * x).sum()


def min_max(x):
    return x.min(), x.max()


def mean_var(x):
    return x.mean(), x.var()


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (program, argument shapes, kernels, kinds). A kind "row" is a row fusion (kInput).
PROGRAMS = [
    (sum_xyz, [(1000,), (1000,), (1000,)], ["kInput"]),
    (gelu, [(64, 128)], ["kLoop"]),
    (softmax, [(64, 128)], ["row"]),
    (layernorm, [(64, 128), (128,), (128,)], ["row"]),
    (rmsnorm, [(64, 128), (128,)], ["row"]),
    (logsumexp, [(64, 128)], ["row"]),
    (normalize_rows, [(64, 128)], ["row"]),
    (dense_relu, [(64, 128), (128, 32), (32,)], ["kOutput"]),
    (adam, [(1000,)] * 4, ["kLoop"]),
    (moments, [(1000,)], ["kInput"]),
    (min_max, [(1000,)], ["kInput"]),
    (mean_var, [(1000,)], ["row"]),  # the mean is needed before the second pass: one row
]


@pytest.mark.parametrize("program, shapes, kinds", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_kernel_count_and_kind(rng, program, shapes, kinds):
    args = [f32(rng, *s) for s in shapes]
    ex = xe.explore(program, *args)
    got = ["row" if k.row else k.kind for k in ex.fusions]
    assert got == kinds, "\n".join(str(k) for k in ex.fusions)
    # One kernel reads the inputs and writes the outputs: nothing lives between kernels.
    assert ex.buffers.temporaries == () and ex.buffers.peak_bytes == 0
    assert ex.check(), ex.check()


def test_the_three_adam_outputs_are_one_kernel_with_a_tuple_root(rng):
    ex = xe.explore(adam, *[f32(rng, 1000) for _ in range(4)])
    (kernel,) = ex.fusions
    assert len(kernel.outputs) == 3
    fusion = next(i for i in ex.module.entry.instructions if i.opcode == "fusion")
    assert fusion.shape.is_tuple and len(fusion.shape.elements) == 3
    assert any(d.rule == "producer-consumer" or d.rule == "siblings" for d in ex.decisions)


def test_an_expensive_value_two_kernels_need_is_computed_once(rng):
    # e feeds a dot (BLAS reads it from memory) and a sum: exp may not be copied into both.
    def program(x, w):
        e = np.exp(x)
        return e @ w, e.sum()

    ex = xe.explore(program, f32(rng, 32, 16), f32(rng, 16, 8))
    text = ex.hlo()
    assert text.count(" exponential(") == 1, text
    assert len(ex.fusions) == 2  # exp with the sum (one kernel, two outputs), then the dot
    refusals = [d.reason for d in ex.decisions if not d.fused]
    assert any("is expensive (exponential) and has 2 consumers" in r for r in refusals), refusals
    assert ex.check()


def test_a_cheap_value_two_kernels_need_is_copied_into_both(rng):
    # y = 2x feeds a dot's epilogue kernel and a sum: cheap, so each kernel computes its own.
    def program(x, w):
        y = x * 2.0
        return (x @ w) + y[:, :8], y.sum()

    ex = xe.explore(program, f32(rng, 32, 16), f32(rng, 16, 8))
    assert ex.hlo().count(" multiply(") == 2
    assert any("cheap, so copied into this kernel" in d.reason for d in ex.decisions)
    assert ex.check()


def test_every_decision_has_a_reason_and_every_kernel_its_decisions(rng):
    for program, shapes, _ in PROGRAMS:
        ex = xe.explore(program, *[f32(rng, *s) for s in shapes])
        assert ex.decisions, program.__name__
        for d in ex.decisions:
            assert d.reason and d.reason == str(d)
            assert d.reason.startswith(("fused ", "not fused ", "row fusion", "multi-output",
                                        "not row-fused")) or "copied" in d.reason, d.reason
        for k in ex.fusions:
            if len(k.instructions) > 1:
                assert k.reasons, k


def test_a_kernels_reasons_are_the_decisions_that_name_it_in_order(rng):
    from xla_explorer.passes.names import traced_name

    def heat(u):  # 20 kernels of two steps, each named by dozens of decisions (and short
        for _ in range(40):  # enough to stay unrolled: passes/loop_rolling.py)
            u = u + np.float32(0.25) * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
        return u

    ex = xe.explore(heat, f32(rng, 32), backend="interpreter")
    for k in ex.fusions:
        names = {traced_name(n) for n in k.instructions}
        want = [d.reason for d in ex.decisions
                if ((d.consumer or d.producer) in names if d.fused
                    else d.producer in names or d.consumer in names)]
        assert list(k.reasons) == want and want, k.name


def test_an_op_that_fuses_with_nothing_is_a_fusion_of_one(rng):
    ex = xe.explore(lambda x, w: x @ w, f32(rng, 8, 4), f32(rng, 4, 2))
    (kernel,) = ex.fusions
    assert kernel.kind == "kOutput" and kernel.instructions == (kernel.name,)
    assert "fusion(" not in ex.hlo()  # XLA leaves a lone op as itself


def test_a_non_compilable_op_is_never_fused(rng):
    def program(x):
        u = np.unique(x)
        return u * 2.0, x + 1.0

    ex = xe.explore(program, np.array([3.0, 1.0, 3.0, 2.0], dtype=np.float32))
    assert "custom-call(" in ex.hlo()
    assert any("not compilable" in d.reason for d in ex.decisions)
    got, want = ex.run(np.array([3.0, 1.0, 3.0, 2.0], dtype=np.float32)), program(
        np.array([3.0, 1.0, 3.0, 2.0], dtype=np.float32))
    np.testing.assert_array_equal(got[0], want[0])


def test_fusion_stages_print_and_parse_back(rng):
    for program, shapes, _ in PROGRAMS:
        ex = xe.explore(program, *[f32(rng, *s) for s in shapes])
        for stage in ("fusion", "multi-output-fusion", "schedule"):
            text = ex.hlo(stage)
            assert xe.parse_hlo(text).to_text() == text
