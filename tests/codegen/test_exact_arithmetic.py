"""Element-wise float arithmetic in the cpu backend's kernels rounds as NumPy's does; only a
reduction's accumulation is reordered (issue 22: never a silent wrong answer).

The kernels were compiled with fastmath's reassoc, nsz, afn and contract for the whole
function, so LLVM rewrote the user's arithmetic: x + y - y became x (1.5 where NumPy gives 0
at y = 1e308), (x * 2) * 0 became 0 (NumPy: nan at x = 1e308), x * 2 - x * 2 == 0 became
True at NaN and Inf, pow(-0.0, -0.5) became -inf, and x * x - y * y a fused multiply-add (1,
not 0, at x = y = 4097 in float32). Now a kernel carries no fast-math flags, and the
accumulation step of a float sum or product alone carries reassoc (scalar.add_reassoc), which
is what LLVM's loop vectorizer needs to split a reduction into vector partial sums.

Element-wise results are compared with NumPy's bit for bit, the sign of zero included (NaN
matches any NaN), wherever NumPy's operation is correctly rounded (+ - * / and sqrt) or exact
at the inputs used. Reductions are compared within the error of a sum in another order: NumPy
sums pairwise, the kernels in vector partial sums (float32 sums in float64).
"""
from __future__ import annotations

import platform
import re

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.codegen.options import DEFAULT_OPTIONS
from xla_explorer.codegen.cpu.launch import thread_workers

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32, F64 = np.float32, np.float64
DTYPES = [F32, F64]
IDS = ["f32", "f64"]


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    # One cache directory for the whole session: compiled kernels are shared between tests.
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))


def compiled(f, *args):
    return xe.jit(f, backend="cpu")(*args)


def numpy(f, *args):
    with np.errstate(all="ignore"):
        return f(*args)


def bit_mismatches(got: dict, want: dict) -> list[str]:
    """Outputs whose elements differ from NumPy's in any bit (any NaN matches any NaN), with
    a few of the inputs' positions and values."""
    assert got.keys() == want.keys()
    bad = []
    for key, w in want.items():
        g, w = np.atleast_1d(np.asarray(got[key])), np.atleast_1d(np.asarray(w))
        if g.dtype != w.dtype or g.shape != w.shape:
            bad.append(f"{key}: {g.dtype}{g.shape} where NumPy gives {w.dtype}{w.shape}")
            continue
        if w.dtype.kind == "f":
            ints = np.dtype(f"u{w.dtype.itemsize}")
            same = (g.view(ints) == w.view(ints)) | (np.isnan(g) & np.isnan(w))
        else:
            same = g == w
        if not same.all():
            at = np.flatnonzero(~same.ravel())[:4]
            bad.append(f"{key}: {int((~same).sum())} of {same.size} differ, e.g. at {at.tolist()}: "
                       f"{g.ravel()[at].tolist()} where NumPy gives {w.ravel()[at].tolist()}")
    return bad


def specials(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    big, tiny, den = float(info.max), float(info.tiny), float(info.smallest_subnormal)
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1.5, 0.1, 3.0, big, -big,
                     big / 2, tiny, den, -den, 1e16, -1e16, float(info.eps)], dtype)


def pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every (x, y) of specials(dtype), as two 1-D arrays."""
    s = specials(dtype)
    x, y = np.meshgrid(s, s, indexing="ij")
    return x.ravel().copy(), y.ravel().copy()


# -- the reported expressions ------------------------------------------------------------------

def reported(x, y):
    return {
        "x*2 - x*2 == 0": (x * 2 - x * 2) == 0,
        "x + y - y": x + y - y,
        "(x*2)*0": (x * 2) * 0,
        "(1e16 + x) - 1e16": (1e16 + x) - 1e16,
        "x - (x + y) + y": x - (x + y) + y,
        "(x*y)/y": (x * y) / y,
        "(x + 1) - 1": (x + 1) - 1,
        "0 - x": 0 - x,  # -0.0 at x = +0.0 under nsz, +0.0 in NumPy
    }


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_the_reported_expressions_are_numpys(dtype):
    x, y = pairs(dtype)
    got, want = compiled(reported, x, y), numpy(reported, x, y)
    assert bit_mismatches(got, want) == []
    # The rows, spelled out.
    big = float(np.finfo(dtype).max)
    row = lambda *v: np.array(v, dtype)  # noqa: E731
    one = compiled(reported, row(np.nan, np.inf, -np.inf, 1.5, 1.0, big),
                   row(0.0, 0.0, np.inf, big / 2, 0.0, 0.0))
    np.testing.assert_array_equal(one["x*2 - x*2 == 0"], [False, False, False, True, True, False])
    assert np.isnan(one["x + y - y"][2])  # -inf + inf is nan
    assert one["x + y - y"][3] == 0.0  # 1.5 + big / 2 - big / 2: the 1.5 is lost, as in NumPy
    assert np.isnan(one["(x*2)*0"][5])  # big * 2 overflows: inf * 0
    assert one["(1e16 + x) - 1e16"][4] == 0.0  # the classic cancellation


# -- error-free transformations: sums whose rounding error is the answer -------------------------

def error_free(a, b):
    s = a + b
    bb = s - a
    two_sum = (a - (s - bb)) + (b - bb)  # Knuth: a + b = s + two_sum exactly
    fast = b - (s - a)  # Dekker, for |a| >= |b|
    c = a * (2 ** 12 + 1 if a.dtype == F32 else 2 ** 27 + 1)
    hi = c - (c - a)  # Veltkamp's split of a into two halves
    lo = a - hi
    return {"s": s, "two_sum": two_sum, "fast_two_sum": fast, "hi": hi, "lo": lo}


def kahan(x):
    """Kahan's compensated sum along the last axis, unrolled."""
    s = x[:, 0]
    c = np.zeros_like(s)
    for k in range(1, x.shape[1]):
        y = x[:, k] - c
        t = s + y
        c = (t - s) - y
        s = t
    return {"sum": s, "compensation": c}


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_error_free_transformations_keep_their_rounding_errors(rng, dtype):
    """Reassociation folds every one of these to 0 (the error) or to the input (the sum)."""
    a = (rng.standard_normal(500) * 10.0 ** rng.integers(0, 8, 500)).astype(dtype)
    b = rng.standard_normal(500).astype(dtype)
    want = numpy(error_free, a, b)
    assert np.count_nonzero(want["two_sum"]) > 100  # the errors are there to be lost
    assert bit_mismatches(compiled(error_free, a, b), want) == []
    x = (rng.standard_normal((300, 8)) * 10.0 ** rng.integers(-3, 5, (300, 8))).astype(dtype)
    want = numpy(kahan, x)
    assert np.count_nonzero(want["compensation"]) > 100
    assert bit_mismatches(compiled(kahan, x), want) == []


# -- NaN and Inf through chains of + - * / -----------------------------------------------------

def chains(x, y):
    return {
        "((x + y) - y) * x": ((x + y) - y) * x,
        "(x - y) + (y - x)": (x - y) + (y - x),
        "x / y * y - x": x / y * y - x,
        "(x * y + x) - x * y": (x * y + x) - x * y,
        "(x + y) * (x - y) - (x*x - y*y)": (x + y) * (x - y) - (x * x - y * y),
        "x * 0.5 * 4 / 2": x * 0.5 * 4 / 2,
        "(x / 3) * 3": (x / 3) * 3,
        "x * y * 1e-30 * 1e30": x * y * 1e-30 * 1e30,
        "(x + 1e30) + -1e30": (x + 1e30) + -1e30,
        "-(y - x) - x + y": -(y - x) - x + y,
        "sqrt(x*x)": np.sqrt(x * x),
    }


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_nan_and_inf_through_chains_of_arithmetic(dtype):
    x, y = pairs(dtype)
    assert bit_mismatches(compiled(chains, x, y), numpy(chains, x, y)) == []


# -- no fused multiply-add ---------------------------------------------------------------------

def products(a, b, c, d):
    return {"a*b - c*d": a * b - c * d, "a*b + c": a * b + c, "a*a - b*b": a * a - b * b,
            "a*2 - c": a * 2 - c}


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_products_are_rounded_before_they_are_added(rng, dtype):
    """Contraction into a fused multiply-add skips the product's rounding: a*b - c*d gave
    -1 for (1e10 + 1)(1e10 - 1) - 1e10 * 1e10 (NumPy: 0, the product rounded), a*a - b*b gave
    1 at a = b = 4097 in float32 (NumPy: 0), and a*2 - c, with a*2 past the largest float,
    a finite number (NumPy: inf)."""
    big = float(np.finfo(dtype).max)
    a = np.array([1e10 + 1, 4097, big, 0.1] + list(rng.standard_normal(200)), dtype)
    b = np.array([1e10 - 1, 4097, 2, 0.3] + list(rng.standard_normal(200)), dtype)
    c = np.array([1e10, 1e10, big, 0.03] + list(rng.standard_normal(200)), dtype)
    d = np.array([1e10, 1, 1, 1] + list(rng.standard_normal(200)), dtype)
    want = numpy(products, a, b, c, d)
    assert want["a*a - b*b"][1] == 0 and np.isinf(want["a*2 - c"][2])
    assert bit_mismatches(compiled(products, a, b, c, d), want) == []


# -- powers with constant exponents --------------------------------------------------------------

EXPONENTS = [0.5, -0.5, 1.0, -1.0, 2.0, 3.0, -2.0, 1.5]


def powers(x):
    return {f"x**{e}": np.power(x, e) for e in EXPONENTS}


def power_inputs(dtype) -> np.ndarray:
    big = float(np.finfo(dtype).max)
    return np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, 1.0, -1.0, 4.0, 0.25, -8.0, 2.0,
                     big, -big, float(np.finfo(dtype).smallest_subnormal)], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_powers_with_constant_exponents_at_special_values(dtype):
    """pow(-0.0, -0.5) is +inf (C99 and NumPy); under afn and nsz LLVM made it 1 / sqrt(-0.0)
    = -inf. The other exponents at -0, +-inf, NaN and where the power is exact."""
    x = power_inputs(dtype)
    assert bit_mismatches(compiled(powers, x), numpy(powers, x)) == []


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_powers_with_constant_exponents_elsewhere(rng, dtype):
    """Within an ulp of NumPy's, whose vectorized pow differs from libm's (the kernels') in the
    last bit. Under afn, x ** -0.5 was 1 / sqrt(x), rounded twice: 2 ulps off in float64."""
    x = np.abs(rng.standard_normal(2000) * 10.0 ** rng.integers(-3, 4, 2000)).astype(dtype)
    got, want = compiled(powers, x), numpy(powers, x)
    for key, w in want.items():
        np.testing.assert_array_max_ulp(got[key], w, maxulp=1, dtype=dtype)


# -- inside fused reductions -----------------------------------------------------------------

def reduced(x, y, z):
    v = x + y - y  # 0 where y is large, about x where it is 1: NumPy's, element by element
    w = (y * 8) * z  # nan where y * 8 overflows and z is 0
    return {
        "sum": np.sum(v), "mean": np.mean(v), "rows": np.sum(v.reshape(50, -1), axis=1),
        "columns": np.sum(v.reshape(50, -1), axis=0), "max": np.max(v), "min": np.min(v),
        "prod": np.prod(v * 1e-3 + 1), "sum(w)": np.sum(w),
        "row max(w)": np.max(w.reshape(50, -1), axis=1),
    }


def reduce_inputs(rng, dtype, n):
    x = rng.standard_normal(n).astype(dtype)
    y = np.where(rng.random(n) < 0.5, float(np.finfo(dtype).max) / 4, 1.0).astype(dtype)
    z = np.ones(n, dtype)
    z[::7] = 0
    return x, y, z


def sum_tolerance(terms: np.ndarray, pairwise: bool = True) -> float:
    """How far NumPy's sum of `terms` can be from the exact one, and so from ours (which
    accumulates float32 in float64): NumPy's pairwise sum (blocks of 128 in 8 partial sums,
    then halves) is within (16 + log2 n) eps sum|terms|, a sum along a leading axis (row
    after row) within n eps sum|terms|."""
    n = terms.size
    steps = 16 + 2 * np.log2(max(n, 2)) if pairwise else n
    return steps * float(np.finfo(terms.dtype).eps) * float(np.sum(np.abs(terms.astype(F64))))


@pytest.mark.parametrize("n", [1000, DEFAULT_OPTIONS.parallel_threshold + 1000],
                         ids=["serial", "parallel"])
@pytest.mark.parametrize("dtype", [F32, pytest.param(F64, marks=pytest.mark.deep)], ids=IDS)
def test_reductions_of_exact_element_wise_values(rng, dtype, n):
    """np.sum(x + y - y) is NumPy's sum of NumPy's x + y - y, within a sum's rounding; under
    reassoc it was sum(x), off by x where y is large. Max and min, exact in any order, are
    NumPy's bit for bit; NaN made by inf * 0 propagates through the sum and the max."""
    n -= n % 50
    x, y, z = reduce_inputs(rng, dtype, n)
    got, want = compiled(reduced, x, y, z), numpy(reduced, x, y, z)
    v = numpy(lambda x, y: x + y - y, x, y)
    assert np.count_nonzero(v != x) > n // 4  # half the x are lost, in NumPy
    rows, cols = v.reshape(50, -1), v.reshape(50, -1).T
    for key, terms in (("sum", v), ("mean", v / n)):
        assert abs(float(got[key]) - float(want[key])) <= sum_tolerance(terms), key
    for key, terms in (("rows", rows), ("columns", cols)):
        tol = [sum_tolerance(t, pairwise=key == "rows") for t in terms]
        assert np.all(np.abs(got[key].astype(F64) - want[key].astype(F64)) <= tol), key
    prod_terms = np.log(np.abs(numpy(lambda v: v * 1e-3 + 1, v).astype(F64)))
    assert abs(np.log(abs(float(got["prod"]) / float(want["prod"])))) <= sum_tolerance(
        prod_terms) + 4 * n * float(np.finfo(dtype).eps), "prod"
    assert bit_mismatches({k: got[k] for k in ("max", "min", "sum(w)", "row max(w)")},
                          {k: want[k] for k in ("max", "min", "sum(w)", "row max(w)")}) == []
    assert np.isnan(got["sum(w)"]) and np.isnan(got["row max(w)"]).any()


# -- a dense layer's epilogue -------------------------------------------------------------------

def dense(x, w, b):
    return np.maximum((x @ w + b) - b, 0)


def product(x, w):
    return x @ w


@pytest.mark.parametrize("shapes", [((8, 4), (4, 6)), ((256, 128), (128, 192))],
                         ids=["serial", "parallel"])
def test_a_dense_layer_s_epilogue_is_numpys_arithmetic_on_the_product(rng, shapes):
    """The product has its own order (codegen/gemm.py); what the kernel does with it after,
    `(p + b) - b` here (the parallel product runs it in the same loop, block by block), is
    NumPy's arithmetic on our product, bit for bit: where b is large it loses p."""
    x, w = (rng.standard_normal(s).astype(F32) for s in shapes)
    b = np.where(rng.random(shapes[1][1]) < 0.5, 1e9, 0.5).astype(F32)
    b[:3] = [np.inf, -np.inf, np.nan]
    p = compiled(product, x, w)
    want = numpy(lambda p, b: np.maximum((p + b) - b, F32(0)), p, b)
    assert bit_mismatches({"dense": compiled(dense, x, w, b)}, {"dense": want}) == []


# -- reductions still vectorize ----------------------------------------------------------------

X86 = platform.machine().lower() in ("x86_64", "amd64")


def _packed(asm: str, op: str) -> int:
    """Packed (vector register) instructions `op` (add, mul, max) in x86 assembly."""
    return len(re.findall(rf"\bv{op}p[sd]\s+%[xyz]mm", asm))


@pytest.mark.skipif(not X86, reason="reads x86 assembly")
@pytest.mark.parametrize("name, f, op, shape, dtype", [
    ("sum", lambda x: np.sum(x * 2), "add", (4000,), F64),
    ("float32 sum, in float64", lambda x: np.sum(x * 2), "add", (4000,), F32),
    ("row sums, float32 blocks", lambda x: np.sum(x * 2, axis=1), "add", (64, 512), F32),
    ("product", lambda x: np.prod(x * 2), "mul", (4000,), F32),
    ("max", lambda x: np.max(x * 2), "max", (4000,), F32),
    ("parallel sum", lambda x: np.sum(x * 2), "add", (DEFAULT_OPTIONS.parallel_threshold,), F32),
])
def test_reductions_still_vectorize(name, f, op, shape, dtype):
    """The reduction loop holds packed adds (multiplies, maxima): LLVM split it into vector
    partial sums, which it does only where the accumulation carries reassoc. (Without it, a
    sum's loop is scalar: one add at a time, each waiting for the last.)"""
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    ex = xe.explore(f, x, backend="cpu")
    assert ex.check().ok
    ex.run(x)
    (kernel,) = ex.kernels
    workers = thread_workers(ex.executable._py, kernel)
    if workers:  # a parallel loop runs in its thread worker (codegen/cpu/launch.py)
        ir = "".join(w.inspect_llvm() for w in workers)
        vectors = re.findall(rf"= f{op} reassoc[^\n]*<\d+ x (?:float|double)>", ir)
        assert len(vectors) >= 2, f"{name}: no vector f{op} in the kernel's thread worker"
        return
    fn = getattr(ex.executable._py, kernel)
    asm = fn.inspect_asm(fn.signatures[0])
    assert _packed(asm, op) >= 2, f"{name}: no packed v{op}p[sd] in the kernel"
