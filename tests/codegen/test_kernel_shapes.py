"""How the CPU kernels compute, checked against NumPy: dots by codegen/gemm.py, values kept
across a row's passes, blocked float32 sums, and fusions whose outputs include a variadic
reduce."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.codegen import packing
from xla_explorer.codegen.analysis import elementwise_closure
from xla_explorer.codegen.options import DEFAULT_OPTIONS
from xla_explorer.codegen.cpu.outline import runs_on_threads

from .sizes_text import size_text


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))


def normal(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# -- dots --------------------------------------------------------------------------------------

def test_a_dot_is_the_tiled_product_and_as_accurate_as_numpys(rng):
    # float32, against the float64 product (tests/codegen/test_gemm.py bounds float64's error).
    x, w, b = normal(rng, 96, 800), normal(rng, 800, 72), normal(rng, 72)
    ex = xe.explore(lambda x, w, b: np.maximum(x @ w + b, 0), x, w, b, backend="cpu")
    (source,) = ex.kernels.values()
    assert "product_block(" in source and "np.dot(" not in source
    exact = np.maximum(x.astype(np.float64) @ w + b, 0)
    ours = np.abs(ex.run(x, w, b) - exact)
    numpy = np.abs(np.maximum(x @ w + b, 0) - exact)
    # Rounded in another order, so equal only in distribution: the root-mean-square errors
    # of two correct float32 products of this size agree within a few percent.
    assert np.sqrt(np.mean(ours ** 2)) <= 1.1 * np.sqrt(np.mean(numpy ** 2))
    assert ours.max() <= 2 * numpy.max()


def test_a_dot_with_no_elements_to_sum_is_zero_and_empty_dots_run(rng):
    for (m, k, n) in [(3, 0, 4), (0, 5, 4), (3, 5, 0)]:
        x, w = normal(rng, m, k), normal(rng, k, n)
        ex = xe.explore(lambda x, w: x @ w, x, w, backend="cpu")
        got = ex.run(x, w)
        assert got.shape == (m, n) and np.array_equal(got, x @ w)


@pytest.mark.parametrize("tiled", [False, True], ids=["loop-nest", "tiled"])
def test_batched_transposed_and_strided_dots(rng, monkeypatch, tiled):
    # Products this small are loop nests (packing.SMALL_PRODUCT_MACS); made tiled too, so
    # that both paths see every layout.
    if tiled:
        monkeypatch.setattr(packing, "SMALL_PRODUCT_MACS", 0)
    a, b = normal(rng, 4, 6, 5), normal(rng, 4, 5, 3)
    programs = [
        (lambda a, b: np.einsum("bij,bjk->bik", a, b), (a, b)),
        (lambda a, b: a @ b, (a, b)),
        (lambda x, w: x.T @ w, (normal(rng, 7, 6), normal(rng, 7, 5))),
        (lambda x, w: x[:, ::2] @ w, (normal(rng, 6, 10), normal(rng, 5, 4))),
        (lambda x, w: np.tanh(x) @ w[::-1], (normal(rng, 6, 9), normal(rng, 9, 4))),
    ]
    for f, args in programs:
        ex = xe.explore(f, *args, backend="cpu")
        source = "\n".join(ex.kernels.values())
        assert ("product_rows(" in source) == tiled, source
        got = ex.run(*args)
        np.testing.assert_allclose(got, f(*args), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_small_product_packs_nothing(rng, dtype):
    # 6x4 @ 4x8, as notebook 02's attention: packed B would take a 32-column panel.
    x, w, b = normal(rng, 6, 4, dtype=dtype), normal(rng, 4, 8, dtype=dtype), normal(rng, 8)
    ex = xe.explore(lambda x, w, b: np.tanh(x @ w + b), x, w, b, backend="cpu")
    assert not any(b.category == "scratch" for b in ex.buffers.buffers)
    assert ex.executable.arena_bytes == ex.buffers.peak_bytes
    np.testing.assert_allclose(ex.run(x, w, b), np.tanh(x @ w + b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch", [(), (3,)], ids=["plain", "batched"])
def test_a_small_b_is_packed_on_the_stack_not_in_the_arena(rng, batch):
    # A 32x32 weight: 65K multiply-adds, tiled; its packed B (4 KiB) on the kernel's stack.
    x, w = normal(rng, *batch, 64, 32), normal(rng, *batch, 32, 32)
    ex = xe.explore(lambda x, w: np.tanh(x @ w), x, w, backend="cpu")
    source = "\n".join(ex.kernels.values())
    assert "local_array(" in source and "packed_b(" not in source, source
    assert not any(b.category == "scratch" for b in ex.buffers.buffers)
    np.testing.assert_allclose(ex.run(x, w), np.tanh(x @ w), rtol=1e-5, atol=1e-5)


def test_a_batched_product_shared_by_the_threads_packs_each_b_anew(rng):
    # Big enough that each batch's product is shared: the threads pack that batch's B, each
    # its own columns.
    a, b = normal(rng, 3, 160, 128), normal(rng, 3, 128, 256)
    ex = xe.explore(lambda a, b: a @ b, a, b, backend="cpu")
    (source,) = ex.kernels.values()
    assert "next_product_block(" in source and runs_on_threads(source)
    np.testing.assert_allclose(ex.run(a, b), a @ b, rtol=2e-5, atol=1e-4)


def test_a_product_of_a_strided_operand_runs_on_a_copy_every_call(rng):
    # A strided operand is copied inside the kernel before it is packed.
    x, w = normal(rng, 256, 512)[:, ::2], normal(rng, 256, 128)
    ex = xe.explore(lambda x, w: np.maximum(x @ w, 0), x, w, backend="cpu")
    want = np.maximum(x @ w, 0)
    for _ in range(5):
        got = ex.run(x, w)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-4)


# -- row kernels -------------------------------------------------------------------------------

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape, dtype", [
    ((64, 200), np.float32),          # serial rows
    ((1100, 1000), np.float32),       # parallel rows in chunks, a tail block of the sum
    ((3, 700, 512), np.float32),      # two leading dimensions, in parallel
    ((64, 200), np.float64),
])
def test_softmax_computes_each_exponential_once(rng, shape, dtype):
    x = normal(rng, *shape, dtype=dtype)
    ex = xe.explore(softmax, x, backend="cpu")
    (source,) = ex.kernels.values()
    suffix = "f32" if dtype == np.float32 else "f64"
    assert source.count(f"exp_{suffix}(") == 1, source
    assert "kept for the row's later passes" in source
    parallel = x.size >= DEFAULT_OPTIONS.parallel_threshold_expensive  # exp is expensive
    assert runs_on_threads(source) == parallel
    assert ex.check(x).ok, str(ex.check(x))


@pytest.mark.parametrize("shape, transposed", [((64, 200), False), ((3, 70, 512), False),
                                               ((200, 64), True)])
def test_row_kernels_past_the_last_level_cache_fetch_the_next_row_ahead(
        rng, codegen_options, shape, transposed):
    # The threshold lowered to these small arrays: the next row of the input (the last
    # leading index plus one, inside its dimension) and this row of the output.
    codegen_options(prefetch_min_bytes=1024)
    x = normal(rng, *shape)
    x = x.T if transposed else x
    ex = xe.explore(softmax, x, backend="cpu")
    (source,) = ex.kernels.values()
    *lead, row = ("row_2",) if "row_2" in source else ("i_2", "i_3")[:len(shape) - 1]
    last = size_text(source, "p0", x.ndim - 2, x.shape[-2])
    assert f"if {row} + 1 < {last}:" in source, source
    assert f"prefetch_read(p0, ({', '.join(lead + [f'{row} + 1'])}, line_" in source, source
    assert f"prefetch_write(out0, ({', '.join(lead + [row])}, line_" in source, source
    assert ex.check(x).ok, str(ex.check(x))
    # Rows longer than PREFETCH_ROW_BYTES, and arrays within the cache, are left alone.
    codegen_options(prefetch_row_bytes=4 * x.shape[-1] - 4)
    assert "prefetch" not in next(iter(xe.explore(softmax, x, backend="cpu").kernels.values()))
    codegen_options(prefetch_row_bytes=DEFAULT_OPTIONS.prefetch_row_bytes,
                    prefetch_min_bytes=DEFAULT_OPTIONS.prefetch_min_bytes)
    assert "prefetch" not in next(iter(xe.explore(softmax, x, backend="cpu").kernels.values()))


def test_only_values_read_at_the_element_the_pass_is_on_can_be_kept():
    # exp is read by the divide at the same element, and through a reverse at another one:
    # only what the roots reach through element-wise ops (the subtract, the exp, the divide)
    # can come from a row array indexed by the pass's own position.
    m = xe.parse_hlo("""HloModule m

ENTRY e {
  x = f32[4,8] parameter(0)
  s = f32[4,8] parameter(1)
  sub = f32[4,8] subtract(x, s)
  e = f32[4,8] exponential(sub)
  r = f32[4,8] reverse(e), dimensions={1}
  t = f32[4,8] tanh(r)
  ROOT d = f32[4,8] divide(e, t)
}
""")
    found = {i.name for i in elementwise_closure([m.entry.root], (4, 8))}
    assert found == {"d", "e", "sub", "t"}


@pytest.mark.parametrize("n", [100, 128, 1000, 4099])
def test_row_sums_in_float32_blocks_are_as_accurate_as_numpy(rng, n):
    # Rows of positive values with a large spread: rounding accumulates in a sequential sum.
    x = (rng.random((64, n)) * 1e3).astype(np.float32) ** 2
    ex = xe.explore(lambda x: x.sum(axis=1), x, backend="cpu")
    (source,) = ex.kernels.values()
    assert "part" in source and ("block" in source) == (n > DEFAULT_OPTIONS.sum_block)
    got = ex.run(x)
    exact = x.astype(np.float64).sum(axis=1)
    ours = np.abs(got.astype(np.float64) - exact) / exact
    numpy = np.abs(x.sum(axis=1).astype(np.float64) - exact) / exact
    # Over the rows, the worst error and the typical one are no worse than NumPy's (any one
    # row's rounding is luck: either sum can land closer on it).
    eps = np.finfo(np.float32).eps
    assert ours.max() <= max(numpy.max(), eps), (ours.max(), numpy.max())
    assert ours.mean() <= numpy.mean(), (ours.mean(), numpy.mean())


# -- fusions with a variadic reduce among their outputs ---------------------------------------

def test_a_fusion_lists_a_variadic_reduce_output_element_by_element(rng):
    def f(x):
        t = np.tanh(x)
        return t, np.argmax(x, axis=1).reshape(-1, 1).astype(np.float32)

    x = normal(rng, 5, 7)
    for backend in ("interpreter", "cpu"):
        ex = xe.explore(f, x, backend=backend)
        assert ex.check(x).ok
    roots = [line for line in ex.hlo().splitlines() if "ROOT tuple" in line]
    assert roots and not any("((" in line.split("=")[1].split("tuple(")[0] for line in roots), roots


def test_a_value_read_by_a_dot_and_its_epilogue_stays_in_memory(rng):
    # Found by `make fuzz`: g fused into the add's kernel would become the dot's operand.
    def f(x):
        g = x * np.float32(0.01)
        return g + g @ x

    x = normal(rng, 3, 3)
    ex = xe.explore(f, x, backend="cpu")
    assert ex.check(x).ok
    assert any("reads its operands from memory" in str(d) for d in ex.decisions)
