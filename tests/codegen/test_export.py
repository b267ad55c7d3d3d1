"""Ahead-of-time export (api/export.py, codegen/export/): each program exported, imported by
a Python that has NumPy alone (no Numba, llvmlite or xla_explorer importable, checked in
its sys.modules), run there and compared with NumPy; wrong arguments are the ValueError that
names them; what cannot be exported is a CompileError saying what and why.

The four programs of issue 37 are exported in the normal suite and imported side by side by
one NumPy-only process (a module takes about a second to build once Numba's C helpers are
compiled and cached, the dense layer three with its product's routines); a product whose
second operand is given transposed under `make test-deep`.
"""
from __future__ import annotations

import inspect
import json
import subprocess

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.api import export
from xla_explorer.api.export import numpy_only_python
from xla_explorer.codegen.cache import cache_dir
from xla_explorer.errors import CompileError

F32 = np.float32
RNG = np.random.default_rng(0)


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x, g, b):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + F32(1e-5)) * g + b


def dense(x, w, b):
    return np.maximum(x @ w + b, F32(0))


def scores(q, k):
    return q @ k.T  # B given transposed: the product packs it from k's rows


def wide(x, w):
    # Packed w (2.5 MiB) is over what a thread packs on its stack at once: a group of its
    # columns at a time, each packed, then C's columns for it.
    return np.maximum(x @ w, F32(0))


def _normal(*shape):
    return RNG.standard_normal(shape).astype(F32)


# name -> (function, example arguments, tolerance against NumPy)
PROGRAMS = {
    "sum_xyz": (sum_xyz, lambda: (_normal(5000), _normal(5000), _normal(5000)), 1e-5),
    "softmax": (softmax, lambda: (_normal(64, 100),), 1e-6),
    "layernorm": (layernorm, lambda: (_normal(64, 100), _normal(100), _normal(100)), 1e-5),
    "dense": (dense, lambda: (_normal(96, 200), _normal(200, 48), _normal(48)), 1e-5),
    "scores": (scores, lambda: (_normal(64, 96), _normal(80, 96)), 1e-5),
    # Positive operands: no sum cancels, so every element is within rtol of NumPy's.
    "wide": (wide, lambda: (np.abs(_normal(16, 600)), np.abs(_normal(600, 1100))), 1e-5),
}

# Run by the NumPy-only Python: each module's results on the saved inputs, then each argument
# given with a wrong shape and with a wrong dtype, and what it had imported.
CHILD = r"""
import json, sys
import numpy as np
directory, names = sys.argv[1], sys.argv[2:]
sys.path.insert(0, directory)
report = {}
for name in names:
    module = __import__(name)
    saved = np.load(f"{directory}/{name}_inputs.npz")
    args = [saved[f"a{k}"] for k in range(len(saved.files))]
    np.save(f"{directory}/{name}_result.npy", module.run(*args))
    errors = []
    for k, a in enumerate(args):
        for bad in (np.zeros(a.shape + (2,), a.dtype), a.astype(np.float64), a.tolist()):
            try:
                module.run(*args[:k], bad, *args[k + 1:])
                errors.append(None)
            except Exception as e:
                errors.append([type(e).__name__, str(e)])
    try:
        module.run(*args[:-1])
        missing = None
    except Exception as e:
        missing = [type(e).__name__, str(e)]
    report[name] = {"errors": errors, "missing": missing, "file": module.__file__}
report["imported"] = sorted(m for m in sys.modules
                            if m.split(".")[0] in ("numba", "llvmlite", "xla_explorer"))
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def numpy_python(tmp_path_factory):
    return numpy_only_python(tmp_path_factory.mktemp("numpy-only") / "venv")


def _exported_and_run(names, directory, numpy_python):
    expected = {}
    for name in names:
        f, make, _ = PROGRAMS[name]
        args = make()
        exported = export(f, *args, name=name, directory=directory)
        assert exported.path.name.startswith(f"{name}.cpython-") and exported.path.exists()
        assert exported.nbytes == exported.path.stat().st_size
        np.savez(directory / f"{name}_inputs.npz", **{f"a{k}": a for k, a in enumerate(args)})
        expected[name] = (f(*args), args, exported)
    # -I: no PYTHONPATH, no user site-packages, no working directory on the path.
    done = subprocess.run([str(numpy_python), "-I", "-c", CHILD, str(directory), *names],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report.pop("imported") == []
    return expected, report


def _product_error(a, b) -> np.ndarray:
    """How far each element of a float32 product a @ b (or a @ b.T) may be from NumPy's: k
    rounding errors of the terms' magnitudes, |a| @ |b|. (Where terms cancel, the result is
    far smaller than what was rounded, and a relative tolerance alone fails.)"""
    b = b if a.shape[1] == b.shape[0] else b.T
    return 1e-6 + a.shape[1] * np.finfo(F32).eps * (np.abs(a) @ np.abs(b))


def _check(name, expected, report, directory):
    want, args, exported = expected[name]
    got = np.load(directory / f"{name}_result.npy")
    assert got.dtype == want.dtype and got.shape == np.shape(want)
    atol = _product_error(*args[:2]) if name in ("dense", "scores") else 1e-6
    off = np.abs(got.astype(np.float64) - want) > atol + PROGRAMS[name][2] * np.abs(want)
    assert not off.any(), f"{name}: {off.sum()} elements off, first at {np.argwhere(off)[0]}"
    names = [p.name for p in exported.parameters]
    assert names == list(inspect.signature(PROGRAMS[name][0]).parameters)
    errors = report[name]["errors"]
    assert len(errors) == 3 * len(args)
    for k, error in enumerate(errors):
        assert error is not None and error[0] == "ValueError", (k, error)
        arg = args[k // 3]
        assert f"argument {names[k // 3]} must be a C-contiguous float32 array of shape " \
               f"{arg.shape}" in error[1]
    assert report[name]["missing"][0] == "TypeError"
    assert report[name]["missing"][1].startswith(f"run expected {len(args)} argument")
    stub = exported.stub.read_text()
    assert f"def run({names[0]}: npt.NDArray[np.float32]" in stub
    assert "HloModule" in stub and "ENTRY" in stub


@pytest.mark.slow  # a C compiler links the modules; a subprocess runs them
def test_sum_softmax_layernorm_and_dense_export_and_run_with_numpy_alone(tmp_path,
                                                                        numpy_python):
    names = ["sum_xyz", "softmax", "layernorm", "dense"]
    expected, report = _exported_and_run(names, tmp_path, numpy_python)
    for name in names:
        _check(name, expected, report, tmp_path)
    # A 0-d array, as the program's f32[] result.
    assert np.load(tmp_path / "sum_xyz_result.npy").shape == ()
    # Numba's C helpers were compiled once, under one name, for all four modules.
    mixins = list((cache_dir() / "export-mixins").iterdir())
    assert len(mixins) == 1 and list(mixins[0].glob("*.o")), mixins


@pytest.mark.deep
@pytest.mark.slow
def test_a_product_of_a_transposed_operand_exports_and_runs_with_numpy_alone(tmp_path,
                                                                            numpy_python):
    expected, report = _exported_and_run(["scores"], tmp_path, numpy_python)
    _check("scores", expected, report, tmp_path)


@pytest.mark.slow
def test_a_product_whose_packed_b_is_packed_a_group_at_a_time_exports(tmp_path, numpy_python):
    expected, report = _exported_and_run(["wide"], tmp_path, numpy_python)
    _check("wide", expected, report, tmp_path)


def test_an_eager_op_cannot_be_exported(tmp_path):
    x = np.arange(6.0)
    with pytest.raises(CompileError, match="unique"):
        export(lambda x: np.unique(x), x, name="u", directory=tmp_path)
    ex = xe.explore(lambda x: np.unique(x) * 2, x, backend="cpu", autocluster=True)
    with pytest.raises(CompileError, match="cannot export: .*unique"):
        ex.export("u", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_only_the_cpu_backend_exports(tmp_path):
    ex = xe.explore(softmax, np.ones((2, 3), F32), backend="interpreter")
    with pytest.raises(CompileError, match="(?s)the interpreter backend.*backend='cpu'"):
        ex.export("s", tmp_path)


def test_what_export_does_not_carry_is_refused_by_name(tmp_path):
    with pytest.raises(CompileError, match="float16"):
        export(lambda x: x * x, np.ones(4, np.float16), name="h", directory=tmp_path)
    body = lambda i, v: v * F32(1.5) + F32(1)  # noqa: E731
    with pytest.raises(CompileError, match="while loop"):
        export(lambda v: xe.fori_loop(0, 10, body, v), np.ones(4, F32), name="w",
               directory=tmp_path)
    with pytest.raises(CompileError, match="identifier"):
        export(softmax, np.ones((2, 3), F32), name="not-a-name", directory=tmp_path)


def test_the_pycc_api_export_relies_on():
    """What codegen/export/pycc.py uses of numba.pycc: a change here is where to look."""
    from numba.pycc import CC

    assert "source_module" in inspect.signature(CC).parameters
    for attribute in ("output_dir", "output_file", "target_cpu"):
        assert isinstance(getattr(CC, attribute), property), attribute
    assert list(inspect.signature(CC.export).parameters) == ["self", "exported_name", "sig"]
    assert callable(CC.compile)
    # The private parts that let the C mixins be compiled once (pycc.py's _CachedMixins).
    for method in ("_compile_mixins", "_get_mixin_defines", "_get_mixin_sources",
                   "_get_extra_cflags"):
        assert callable(getattr(CC, method)), method
    assert "('PYCC_MODULE_NAME', self._basename)" in inspect.getsource(CC._get_mixin_defines)
    assert "self._init_function = 'pycc_init_' + extension_name" in inspect.getsource(CC)
    assert "self._init_function" in inspect.getsource(CC._compile_object_files)


def test_a_cuda_program_is_refused_naming_the_backend(tmp_path):
    from types import SimpleNamespace

    from xla_explorer.api.export import export_exploration
    from xla_explorer.backends import get_backend

    # What export reads first of an Exploration: the backend it was compiled for.
    cuda = SimpleNamespace(backend="cuda", compiled=SimpleNamespace(backend=get_backend("cuda")))
    with pytest.raises(CompileError, match="the cuda backend: .*CPU alone"):
        export_exploration(cuda, "m", tmp_path)
