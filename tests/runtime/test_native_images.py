"""Kernel images (runtime/native.py): a program compiled in one process runs in the next from
its image, linked by llvmlite without starting Numba, and answers as NumPy does."""
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.runtime import native
from xla_explorer.runtime.native_load import undefined_symbols

pytestmark = pytest.mark.xdist_group("subprocess")

# Each program is called `calls` times per process; every answer is checked against NumPy.
PROGRAMS = r"""
import json, sys
import numpy as np
import xla_explorer as xe

rng = np.random.default_rng(0)
def f32(*shape):
    return (rng.standard_normal(shape) * 0.5).astype(np.float32)

def softmax(x):  # one kernel, its rows on the threads
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

def centre(x):  # two kernels and a driver; returns its input too
    m = x.mean(axis=0)
    return x - m, m, x

def layer(x, w, b):  # a product on the threads, an output written on cache lines
    return np.tanh(x @ w + b)

def heat(u):  # a loop rolled into a while
    for _ in range(40):
        u = u + np.float32(0.25) * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u

def half(x):  # float16 in and out
    return (x * np.float16(2) + np.float16(1)).astype(np.float16)

cases = {"softmax": (softmax, [f32(512, 300)]), "centre": (centre, [f32(60, 50)]),
         "layer": (layer, [f32(300, 200), f32(200, 150), f32(150)]),
         "heat": (heat, [f32(64)]),
         "half": (half, [f32(1000).astype(np.float16)])}
calls = int(sys.argv[1])
report = {}
for name, (f, args) in cases.items():
    ex = xe.explore(f, *args, backend="cpu")
    ok = True
    for _ in range(calls):
        got = ex.run(*args)
        want = f(*args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        ok = ok and all(np.allclose(np.asarray(g, np.float64), w, rtol=2e-5, atol=2e-6)
                        and np.asarray(g).dtype == w.dtype for g, w in zip(got, want))
    report[name] = {"ok": ok, "executable": type(ex.executable).__name__,
                    "kernels": sorted(ex.kernels), "driver": ex.executable.driver}
    if report[name]["executable"] == "NativeExecutable":  # as a notebook asks when idle
        report[name]["compile_driver"] = ex.executable.compile_driver()
report["numba"] = "numba" in sys.modules
print(json.dumps(report))
"""


def _run(env, calls):
    done = subprocess.run([sys.executable, "-c", PROGRAMS, str(calls)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # three subprocesses, one compiling
def test_a_later_process_runs_the_programs_from_their_images_without_numba(tmp_path):
    env = dict(os.environ, XLA_EXPLORER_CACHE=str(tmp_path / "cache"))
    env.pop("XLA_EXPLORER_IMAGES", None)
    first = _run(env, calls=1)  # compiles; leaves images of the Python drivers
    assert first["numba"]
    second = _run(env, calls=3)  # from the images; no compiled driver in them yet
    third = _run(env, calls=2)
    for name in ("softmax", "centre", "layer", "heat", "half"):
        assert first[name]["ok"] and second[name]["ok"] and third[name]["ok"], name
        assert first[name]["executable"] == "CpuExecutable"
        assert second[name]["executable"] == third[name]["executable"] == "NativeExecutable"
        # The explorer's view of the generated code comes from the image.
        assert second[name]["kernels"] == first[name]["kernels"]
        assert second[name]["driver"] == first[name]["driver"]
        # An image has nothing to compile: asking must not start Numba for the full program.
        assert second[name]["compile_driver"] is None
    assert not second["numba"] and not third["numba"]
    images = list((tmp_path / "cache" / "images").glob("*.image"))
    assert len(images) == 5
    drivers = sorted(pickle.loads(p.read_bytes())["driver"] for p in images)
    # Only the first process compiled, and it called each program once: every image holds a
    # Python driver (or the one kernel's call), none a compiled one.
    assert drivers == ["python"] * 5


@pytest.mark.slow
def test_a_compiled_driver_replaces_the_python_one_in_the_image(tmp_path):
    env = dict(os.environ, XLA_EXPLORER_CACHE=str(tmp_path / "cache"))
    env.pop("XLA_EXPLORER_IMAGES", None)
    first = _run(env, calls=2)  # the second call compiles the drivers that have one
    second = _run(env, calls=2)
    assert all(second[n]["ok"] and second[n]["executable"] == "NativeExecutable"
               for n in ("softmax", "centre", "layer", "heat", "half"))
    assert not second["numba"] and first["numba"]
    kinds = {p: pickle.loads(p.read_bytes())
             for p in (tmp_path / "cache" / "images").glob("*.image")}
    # centre and layer have several kernels and a compiled driver (its kernels linked in);
    # the others are one kernel each (heat's is the while loop), called from Python.
    assert sorted(k["driver"] for k in kinds.values()) == ["compiled"] * 2 + ["python"] * 3
    for image in kinds.values():
        if image["driver"] == "compiled":
            assert list(image["functions"]) in (["run"], ["run", "to_line"])


def test_images_are_off_when_asked_and_keyed_by_the_program_and_options(rng, monkeypatch,
                                                                          tmp_path):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path))
    x = rng.standard_normal((8, 5)).astype(np.float32)
    a = xe.explore(lambda x: np.exp(x).sum(axis=1), x, backend="cpu")
    b = xe.explore(lambda x: np.exp(x).sum(axis=0), x, backend="cpu")
    assert native.image_key(a.module, ("cpu", 1)) != native.image_key(b.module, ("cpu", 1))
    assert native.image_key(a.module, ("cpu", 1)) != native.image_key(a.module, ("cpu", 2))
    assert native.image_key(a.module, ("cpu", 1)) == native.image_key(a.module, ("cpu", 1))
    monkeypatch.setenv("XLA_EXPLORER_IMAGES", "0")
    c = xe.explore(lambda x: np.exp(x).max(axis=1), x, backend="cpu")
    np.testing.assert_allclose(c.run(x), np.exp(x).max(axis=1), rtol=1e-6)
    assert not (tmp_path / "images").exists() or not any((tmp_path / "images").iterdir())


def _image_of(rng, tmp_path, monkeypatch):
    """A parallel softmax compiled here (Numba runs in this process), and its image."""
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path))
    x = rng.standard_normal((2048, 600)).astype(np.float32)
    ex = xe.explore(lambda x: np.exp(x) / np.exp(x).sum(axis=1, keepdims=True), x,
                    backend="cpu")
    ex.run(x)
    images = list((tmp_path / "images").glob("*.image"))
    assert len(images) == 1
    return ex, x, images[0]


def test_an_image_links_here_and_names_what_its_code_calls(rng, tmp_path, monkeypatch):
    ex, x, path = _image_of(rng, tmp_path, monkeypatch)
    image = pickle.loads(path.read_bytes())
    # The kernel calls the launcher and its thread worker by name, each placed before it;
    # the worker calls the block scheduler. undefined_symbols reads them from the ELF file.
    kernel = image["objects"][image["functions"][next(iter(image["functions"]))]["object"]]
    assert "xe_launch" in kernel["undefined"]
    defined = [name for o in image["objects"] for name in o["defines"]]
    assert "xe_launch" in defined and "xla_explorer_next_block" in defined
    assert any(name.startswith("xe_thread_") for name in defined)
    # Its CPython wrapper unboxes with Python's C API and Numba's runtime, found by name too.
    assert {"PyArg_UnpackTuple", "NRT_adapt_ndarray_from_python"} <= set(kernel["undefined"])
    assert image["threads"] in ("omp", "tbb", "workqueue")
    exe = native.open_image(ex.module, ex.buffers, path.stem, lambda: ex.executable)
    assert isinstance(exe, native.NativeExecutable)
    want = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    for _ in range(2):
        np.testing.assert_allclose(exe(x)[0], want, rtol=2e-6, atol=1e-7)
    # An array whose elements are not aligned is copied first (the kernels were compiled for
    # aligned ones, the image's with no other signature), by the image's call and by the
    # program Numba compiled, which then compiles no unaligned signature.
    odd = np.frombuffer(b"\0" + x.tobytes(), np.float32, offset=1).reshape(x.shape)
    assert not odd.flags.aligned
    np.testing.assert_allclose(exe(odd)[0], want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(ex.run(odd), want, rtol=2e-6, atol=1e-7)
    kernel_name = next(iter(image["functions"]))
    assert len(getattr(ex.executable._py, kernel_name).signatures) == 1
    # What the image does not carry comes from the program Numba compiled.
    assert exe.program is ex.executable.program


def test_an_image_that_cannot_link_or_read_is_passed_over(rng, tmp_path, monkeypatch):
    ex, x, path = _image_of(rng, tmp_path, monkeypatch)
    image = pickle.loads(path.read_bytes())
    image["objects"][-1]["undefined"].append("xla_explorer_defined_nowhere")
    path.write_bytes(pickle.dumps(image))
    assert native.open_image(ex.module, ex.buffers, path.stem, lambda: ex.executable) is None
    path.write_bytes(b"not an image")
    assert native.open_image(ex.module, ex.buffers, path.stem, lambda: ex.executable) is None
    assert undefined_symbols(b"\x7fELF\x01\x01" + bytes(64)) is None  # 32-bit: not read
