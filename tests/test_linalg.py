"""np.linalg as library calls (docs/linalg.md): each is a custom-call that compiles, one
kernel of its own that fusion never joins, kept inside auto-clustering's clusters, drawn as
XLA draws custom-calls; NumPy's LinAlgError at the user's line where NumPy raises one; refused
by name where no LAPACK is reached (cuda, dask, export). The values against NumPy, every
function, type and backend, are the op records' (tests/trace/op_records.py, LINALG); the
compiled sweep of all their cases is here, under `make test-deep`."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import xla_explorer as xe
from tests import sweeps
from tests.trace.op_records import LINALG
from tests.trace.test_numpy_ops import _args_factory, _bind, _id, assert_matches_numpy
from xla_explorer.errors import LinAlgError
from xla_explorer.ir.library import is_library_call
from xla_explorer.viz import mime

RNG = np.random.default_rng(7)
A = RNG.uniform(-1, 1, (4, 4)) + 4 * np.eye(4)
B = RNG.uniform(-1, 1, (4, 2))
SINGULAR = np.ones((4, 4))


def solve_scaled(a, b):
    x = np.linalg.solve(a, b + 1)
    return x * 2 + 1


LINE = inspect.getsourcelines(solve_scaled)[1] + 1  # the np.linalg.solve line


@pytest.fixture(scope="module")
def compiled():
    """solve_scaled compiled for the cpu once, for every test that reads or runs it."""
    return xe.explore(solve_scaled, A, B, backend="cpu")


def _call(ex):
    return next(i for i in ex.module.entry.instructions if is_library_call(i))


def test_a_library_call_is_one_kernel_of_its_own(compiled):
    np.testing.assert_allclose(compiled.run(A, B), solve_scaled(A, B), rtol=1e-12)
    call = _call(compiled)
    assert call.attr("custom_call_target") == "linalg.solve"
    (kernel,) = [k for k in compiled.fusions if call.name in k.instructions]
    assert kernel.instructions == (call.name,) and kernel.kind == "kCustom"
    reasons = " ".join(kernel.reasons)
    assert (f"{call.name} (np.linalg.solve) is a library call (LAPACK ?gesv), as XLA runs it: "
            "a kernel of its own") in reasons
    assert (f"into {call.name}: {call.name} is a library call (np.linalg.solve, LAPACK ?gesv), "
            "as XLA runs it: a kernel of its own, which reads its operands from memory"
            in reasons)
    # Its result is a temporary in the arena, as any kernel's.
    assert call.name in compiled.buffers.csv()
    source = next(s for name, s in compiled.kernels.items() if "custom_call" in name)
    assert "from xla_explorer.codegen.linalg import solve as lapack_solve" in source
    assert "status = lapack_solve(" in source


def test_the_graph_draws_it_as_xla_draws_custom_calls(compiled):
    dot = compiled.graph(-1).source
    assert "library call: LAPACK ?gesv" in dot
    assert "#1b5e20" in dot  # XLA's dark green for custom-calls
    assert "runs eagerly" not in dot
    # What the extension draws from: its kernel, kCustom, as the schema has it.
    data = mime.payload(compiled)
    mime.validate(data)
    assert "kCustom" in {f["kind"] for f in data["fusions"]}


def test_a_singular_matrix_is_numpys_linalgerror_at_the_line(compiled):
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(SINGULAR, B)
    for ex in (compiled, xe.explore(solve_scaled, A, B, backend="interpreter")):
        with pytest.raises(LinAlgError) as info:
            ex.run(SINGULAR, B)
        assert isinstance(info.value, np.linalg.LinAlgError)
        assert isinstance(info.value, xe.XlaExplorerError)
        assert info.value.source_line == LINE
        assert "np.linalg.solve: Singular matrix" in str(info.value)
    # Traced on it, NumPy's own error at the line, a LinAlgError still.
    with pytest.raises(np.linalg.LinAlgError) as info:
        xe.jit(solve_scaled, backend="interpreter")(SINGULAR, B)
    assert info.value.source_line == LINE


def test_nan_is_refused_by_the_compiled_call_not_answered(compiled):
    # NumPy's LAPACK returns NaN here; Numba's bindings refuse it: an error, never a guess.
    bad = A.copy()
    bad[1, 2] = np.nan
    with pytest.raises(LinAlgError, match="NaN or inf") as info:
        compiled.run(bad, B)
    assert info.value.source_line == LINE


def test_not_positive_definite_and_the_unread_triangle():
    def chol(a):
        return np.linalg.cholesky(a)

    ex = xe.explore(chol, A @ A.T, backend="interpreter")
    with pytest.raises(LinAlgError, match="Matrix is not positive definite"):
        ex.run(-np.eye(4))
    # NumPy reads the lower triangle alone: NaN above it changes nothing.
    junk = A @ A.T
    junk[0, 3] = np.nan
    np.testing.assert_array_equal(ex.run(junk), np.linalg.cholesky(junk))


def test_autoclustering_keeps_a_library_call_in_a_cluster():
    def around_unique(a, b):
        u = np.unique(np.round(b))
        x = np.linalg.solve(a, b) + 1
        return x * u.sum()

    ex = xe.explore(around_unique, A, B, backend="interpreter", autocluster=True)
    call = _call(ex)
    assert any(call.name in c.instructions for c in ex.clusters.compiled)
    eager = {e.op: e.name for e in ex.clusters.eager}
    assert "numpy.unique" in eager and call.name not in eager.values()
    np.testing.assert_allclose(ex.run(A, B), around_unique(A, B), rtol=1e-12)


@pytest.mark.parametrize("backend, why", [
    ("cuda", "cuSOLVER"), ("dask", "LAPACK needs the whole matrix")])
def test_backends_without_lapack_refuse_it_by_name(backend, why):
    with pytest.raises(xe.UnsupportedOpError) as info:
        xe.jit(solve_scaled, backend=backend)(A, B)
    message = str(info.value)
    assert f"the {backend} backend does not compile np.linalg.solve, a library call" in message
    assert why in message and info.value.source_line == LINE


def test_export_refuses_it_by_name(compiled, tmp_path):
    with pytest.raises(xe.CompileError, match="cannot export np.linalg.solve") as info:
        compiled.export("solved", directory=tmp_path)
    assert "SciPy" in str(info.value) and info.value.source_line == LINE


def test_the_hlo_names_the_routine_and_reads_back():
    def f(a):
        return np.linalg.svd(a, full_matrices=False)

    a = RNG.uniform(-1, 1, (2, 5, 3)).astype(np.float32)
    text = xe.explore(f, a, backend="interpreter").hlo(0)
    # NumPy computes float32 in float64: so does the call, between two converts.
    assert ("(f64[2,5,3], f64[2,3], f64[2,3,3]) custom-call(" in text
            and 'custom_call_target="linalg.svd", backend_config={"full_matrices":false}'
            in text), text
    again = xe.explore_hlo(text, a, backend="interpreter")
    for got, want in zip(again.run(a), np.linalg.svd(a, full_matrices=False)):
        np.testing.assert_allclose(np.abs(got), np.abs(want), rtol=1e-5, atol=1e-6)


def test_an_empty_matrix_is_numpys_answer_with_no_call():
    def f(a):
        return np.linalg.inv(a), np.linalg.det(a), np.linalg.eigh(a)

    a = np.zeros((3, 0, 0))
    ex = xe.explore(f, a, backend="interpreter")
    assert "custom-call" not in ex.hlo(0)
    got, want = ex.run(a), f(a)
    for g, w in zip(got[:2], want[:2]):
        np.testing.assert_array_equal(g, w)
    assert type(got[2]) is type(want[2])  # EighResult, as NumPy returns it


def test_options_the_call_cannot_take_are_refused_by_name():
    for f, what in ((lambda a: np.linalg.qr(a, mode="complete"), "mode='complete'"),
                    (lambda a: np.linalg.svd(a, hermitian=True), "hermitian=True"),
                    (lambda a: np.linalg.pinv(a, hermitian=True), "hermitian=True")):
        with pytest.raises(xe.UnsupportedOpError, match=what):
            xe.jit(f)(A)


def _compiled_cases():
    """Every LINALG record's every case and type, compiled for the cpu."""
    for r in LINALG:
        for dtype in r.dtypes:
            for shapes, variant in r.all_cases():
                if sweeps.keep(True):
                    yield pytest.param(r, np.dtype(dtype), shapes, variant,
                                       id=f"{r.name}|{np.dtype(dtype).name}|{_id(shapes)}|"
                                          f"{_id(variant)}")


@pytest.mark.deep
@pytest.mark.slow  # a Numba compile per case: about 6 minutes on one core
@pytest.mark.parametrize("record,dtype,shapes,variant", list(_compiled_cases()))
def test_every_case_compiled_agrees_with_numpy(record, dtype, shapes, variant):
    f = _bind(record, variant, dtype)
    assert_matches_numpy(f, _args_factory(record, shapes, dtype), tol=record.tol,
                         backend="cpu")


@pytest.mark.deep
def test_cuda_refuses_it_inside_a_cluster_too():
    def around_unique(a, b):
        u = np.unique(np.round(b))
        return np.linalg.solve(a, b) * u.sum()

    with pytest.raises(xe.UnsupportedOpError, match="cuSOLVER") as info:
        xe.explore(around_unique, A, B, backend="cuda", autocluster=True).run(A, B)
    assert info.value.source_line == inspect.getsourcelines(around_unique)[1] + 2


@pytest.mark.deep
def test_a_library_call_in_a_loop_body_compiles_with_it():
    def steps(a, x):
        return xe.fori_loop(0, 3, lambda i, v: np.linalg.solve(a, v) + 1, x)

    x = np.ascontiguousarray(B[:, 0])  # (a strided start fails to compile: main's while loops)
    want = x
    for _ in range(3):
        want = np.linalg.solve(A, want) + 1
    np.testing.assert_allclose(xe.jit(steps)(A, x), want, rtol=1e-12)
