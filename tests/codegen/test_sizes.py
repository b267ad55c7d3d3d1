"""Sizes read from a kernel's arrays (codegen/cpu/sizes.py): a new shape whose code comes out
the same reuses the compiled kernels and driver, and answers as NumPy does."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.codegen.cpu.sizes import SHORT_LOOP, SMALL, code_key, generalize, lift_numbers

from ..test_fusion_programs import layernorm, softmax

F32 = np.float32

KERNEL = '''@njit(cache=True)
def k(p0, out0):
    """runs as 300 rows of [200]: the docstring keeps its numbers."""
    acc = np.float64(0.0)  # 300 in a comment stays
    claimed = stack_empty(np.int64, 200)
    for i in range(0, 300, 64):
        for j in range(200):
            out0[i, j] = p0[i, j] * np.float32(200.0) + np.float32(2.5) + 7 + 200.5
    put(args, 300, out0, "float32 300 C")
'''


def test_a_number_equal_to_a_size_is_read_from_the_array_everywhere_else_it_stays():
    got = generalize(KERNEL, [("p0", (300, 200)), ("out0", (300, 200))])
    lines = got.splitlines()
    # Bound after the docstring, in the order the arrays' axes give them.
    assert lines[3].strip().startswith("size0 = p0.shape[0]")
    assert lines[4].strip().startswith("size1 = p0.shape[1]")
    assert "for i in range(0, size0, 64):" in got and "for j in range(size1):" in got
    # A whole float of a NumPy type that holds the size exactly is the size, converted.
    assert "p0[i, j] * np.float32(size1) + np.float32(2.5) + 7 + 200.5" in got
    # Comments, docstrings, strings, and calls that need constants keep their numbers.
    assert "runs as 300 rows of [200]" in got and "# 300 in a comment stays" in got
    assert "stack_empty(np.int64, 200)" in got and 'put(args, 300, out0, "float32 300 C")' in got


def test_where_a_number_buys_speed_it_stays_a_number():
    source = "def k(p0):\n    for i in range(8):\n        p0[i] = 0\n"
    assert generalize(source, [("p0", (8,))]) == source  # a small size, anywhere
    source = "def k(p0):\n    p0[0] = 1\n"
    assert generalize(source, [("p0", (SMALL + 1,))]) == source  # nothing bound unused
    source = ("def k(p0, out0):\n"
              "    for i in range(100):\n"
              "        for j in range(100):\n"
              "            out0[i, j] = p0[(i * 100 + j) // 300, (i * 100 + j) % 300]\n")
    got = generalize(source, [("p0", (100, 300)), ("out0", (100, 100))])
    # The outer loop's bound and the row's length become sizes; the innermost loop's short
    # trip count and the divisors stay numbers.
    assert "for i in range(size0):" in got and "for j in range(100):" in got
    assert "p0[(i * size0 + j) // 300, (i * size0 + j) % 300]" in got
    assert "size1" not in got
    long = source.replace("100", str(SHORT_LOOP + 1))
    got = generalize(long, [("p0", (SHORT_LOOP + 1, 300))])
    assert f"range({SHORT_LOOP + 1})" not in got


def test_a_kernels_identity_is_its_code_without_comments_or_docstrings():
    a = 'def k(p0):\n    """300 rows"""\n    x = 1  # f32[300]\n'
    b = 'def k(p0):\n    """400 rows"""\n    x = 1  # f32[400]\n'
    assert code_key(a) == code_key(b)
    assert code_key(a) != code_key(a.replace("x = 1", "x = 2"))
    # A file's header counts whole: the digest of the helpers its kernels inline is a
    # comment there, and other helpers must not load machine code made with the old ones.
    assert code_key(a, "import x  # helpers 1\n") != code_key(a, "import x  # helpers 2\n")


def test_a_drivers_numbers_come_from_its_layout_and_numbers_arguments():
    body = ["    t = arena_view(arena, 4096, (128, 256), np.float32)",
            "    kernel(a0, t, np.float32(0.01), np.float64(-2.5))  # 128 in a comment",
            "    u = arena_view(arena, 0, (256,), np.float32)",
            "    other(u, np.float32(0.01), np.float32(-0.0), np.float32(0.0))"]
    lines, ints, floats = lift_numbers(body, "layout", "numbers")
    assert ints == [4096, 128, 256, 0] and floats == [0.01, -2.5, -0.0, 0.0]
    assert np.signbit(floats[2]) and not np.signbit(floats[3])  # each zero its own
    assert lines[0] == "    t = arena_view(arena, layout[0], (layout[1], layout[2]), np.float32)"
    assert lines[1] == ("    kernel(a0, t, np.float32(numbers[0]), np.float64(numbers[1]))"
                        "  # 128 in a comment")
    assert lines[2] == "    u = arena_view(arena, layout[3], (layout[2],), np.float32)"
    assert lines[3] == ("    other(u, np.float32(numbers[0]), np.float32(numbers[2]), "
                        "np.float32(numbers[3]))")


def step(lr):
    def adam_like(w, g):
        m = F32(0.9) * g + F32(0.1) * g * g
        return w - F32(lr) * m / (np.sqrt(m * m) + F32(1e-8)), (w * F32(lr)).sum()
    return adam_like


def test_a_constant_is_an_argument_so_another_value_compiles_nothing(rng):
    w, g = (rng.standard_normal((300, 200)).astype(F32) for _ in range(2))
    first = None
    for lr in (0.01, 0.003, 0.5):
        f = step(lr)
        ex = xe.explore(f, w, g, backend="cpu")
        for got, want in zip(ex.run(w, g), f(w, g)):
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
        if first is None:
            first = ex.executable
            assert any("k0" in src.split(":")[0] for src in ex.kernels.values())
            continue
        # The same kernels; the driver, one call from Python here, passes the new value.
        kernels = set(ex.executable.files) - {ex.executable.path}
        assert kernels and kernels == set(first.files) - {first.path}
        assert ex.executable.compile_seconds == 0.0


def test_a_divisor_stays_a_number_in_the_code(rng):
    x = rng.standard_normal((300, 200)).astype(F32)
    ex = xe.explore(lambda x: x / F32(3.0) + F32(0.25), x, backend="cpu")
    (source,) = ex.kernels.values()
    divisor = re.search(r" / (constant_\w+)\)", source)
    assert divisor and f"{divisor.group(1)} = np.float32(3.0)" in source, source
    assert "+ k0)" in source  # an addend is an argument
    np.testing.assert_allclose(ex.run(x), x / F32(3.0) + F32(0.25), rtol=1e-6)


def attention(q, k, v):  # three kernels and a driver with temporaries in the arena
    s = q @ k.T / np.sqrt(F32(q.shape[1]))
    s = np.exp(s - s.max(axis=1, keepdims=True))
    return (s / s.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("f, shapes", [
    (softmax, [[(300, 200)], [(333, 257)], [(129, 1000)]]),
    (softmax, [[(1000, 700)], [(1200, 641)]]),  # on every core
    (layernorm, [[(300, 200), (200,), (200,)], [(401, 333), (333,), (333,)]]),
    (attention, [[(200, 64)] * 3, [(240, 64)] * 3, [(131, 64)] * 3]),
    (attention, [[(300, 64)] * 3, [(420, 64)] * 3]),  # products on every core
])
def test_a_new_shape_with_the_same_code_compiles_nothing_and_answers_as_numpy(rng, f, shapes):
    first = None
    for shape in shapes:
        args = [rng.standard_normal(s).astype(F32) for s in shape]
        ex = xe.explore(f, *args, backend="cpu")
        np.testing.assert_allclose(ex.run(*args), f(*args), rtol=2e-5, atol=1e-5)
        exe = ex.executable
        if first is None:
            first = exe
            continue
        # The same files, the compiled driver's included, and nothing for Numba to do; the
        # first call's driver, in Python, has the shape's numbers in its text.
        assert exe.path == first.path
        assert set(exe.files) - {exe.first_path} == set(first.files) - {first.first_path}
        assert exe.compile_seconds == 0.0, (shape, exe.compile_seconds)
        if exe.program.layout is not None:  # the driver's offsets and shapes differ
            assert exe.program.layout != first.program.layout


def test_a_size_that_crosses_a_threshold_is_new_code(rng):
    x = rng.standard_normal((4, 300)).astype(F32)
    short = rng.standard_normal((4, SHORT_LOOP)).astype(F32)  # the row's length a number
    a, b = (xe.explore(softmax, v, backend="cpu") for v in (x, short))
    assert a.executable.path != b.executable.path
    assert f"range({SHORT_LOOP})" in next(iter(b.kernels.values()))
    for ex, v in ((a, x), (b, short)):
        np.testing.assert_allclose(ex.run(v), softmax(v), rtol=2e-5, atol=1e-6)


def test_every_loop_that_starts_at_a_name_tells_llvm_it_is_not_negative(rng):
    # A loop from a start LLVM cannot see is not negative keeps NumPy's wraparound in every
    # access it indexes, and does not vectorize: with the sizes read at run time a row sum's
    # blocks were no longer unrolled into constants, and 4096x1024 row sums ran 8x slower.
    programs = [lambda x: x.sum(axis=1), softmax, lambda x: (x - x.mean(axis=1)[:, None]) ** 2,
                lambda x: np.cumsum(x, axis=1), lambda x: x.std(axis=1)]
    for shape in [(300, 1000), (2048, 1024)]:  # serial and parallel, rows of several blocks
        x = rng.standard_normal(shape).astype(F32)
        for f in programs:
            ex = xe.explore(f, x, backend="cpu")
            for source in ex.kernels.values():
                for index, body in _innermost_loops_from_a_name(source):
                    assert body[0].strip().startswith(f"{index} = nonnegative({index})"), source
            np.testing.assert_allclose(ex.run(x), f(x), rtol=1e-4, atol=1e-4)


def _innermost_loops_from_a_name(source: str):
    """(index, body lines) of each loop of `source` that starts at a name or an expression
    (not 0) and has no loop inside it."""
    lines = source.splitlines()
    for k, line in enumerate(lines):
        loop = re.match(r"(\s*)for (\w+) in range\(([^,()]+), ", line)
        if not loop or loop.group(3) == "0":
            continue
        depth = len(loop.group(1))
        body = []
        for inner in lines[k + 1:]:
            if inner.strip() and len(inner) - len(inner.lstrip()) <= depth:
                break
            body.append(inner)
        if not any(b.strip().startswith("for ") for b in body):
            yield loop.group(2), body
