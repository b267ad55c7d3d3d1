"""`ex.compare_xla()`: the program compiled by real XLA (XLA:CPU from jax) beside ours. XLA's
kernel counts are read here from XLA's own optimised HLO text with a regular expression, not
through our parser; the temporary bytes from XLA's memory stats; the outputs against ours."""
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.api import xla_compare
from xla_explorer.runtime import jax_env
from xla_explorer.viz import mime
from xla_explorer.viz.live import Explorer

from .programs import layernorm, softmax

FIXTURE = Path(__file__).resolve().parents[2] / "extension" / "test" / "xla_bundle.json"


def needs_jax() -> None:
    """jax comes with the test extra: CI has it, and a run without it says so."""
    try:
        import jax  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("jax is missing: CI installs the test extra, which has it")
        pytest.skip("jax is not installed (pip install 'xla-explorer[xla]')")


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


# Kernels are what XLA's entry computation launches: every instruction but these.
NOT_LAUNCHED = ("parameter", "constant", "tuple", "get-tuple-element", "bitcast")


def xla_kernels_in(text: str) -> list[str]:
    """The names of the kernels in XLA's printed entry computation, read with a regex."""
    entry = text[text.index("\nENTRY"):]
    found = re.findall(r"^\s*(?:ROOT )?%(\S+) = .*? ([a-z][a-z0-9-]*)\(", entry, re.M)
    return [name for name, opcode in found if opcode not in NOT_LAUNCHED]


def f32(*shape):
    return np.random.default_rng(0).random(shape, dtype=np.float32)


CASES = {  # two sizes each, across the sizes where XLA:CPU changes its kernels
    "sum small": (sum_xyz, lambda: [f32(256) for _ in range(3)]),
    "sum large": (sum_xyz, lambda: [f32(4096) for _ in range(3)]),
    "softmax small": (softmax, lambda: [f32(16, 64)]),
    "softmax large": (softmax, lambda: [f32(64, 256)]),
    "layernorm small": (layernorm, lambda: [f32(16, 64)]),
    "layernorm large": (layernorm, lambda: [f32(64, 256)]),
}


@pytest.fixture(scope="module")
def compared():
    needs_jax()
    out = {}
    for name, (f, args) in CASES.items():
        ex = xe.explore(f, *args())
        out[name] = (ex, ex.compare_xla(repeat=2))
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_xla_kernel_counts_are_those_of_xlas_own_text(compared, case):
    ex, c = compared[case]
    assert "is_scheduled=true" in c.hlo.splitlines()[0]  # XLA's optimised module, as printed
    assert [k.name for k in c.kernels] == xla_kernels_in(c.hlo)
    assert c.temp_bytes == c.executable.get_compiled_memory_stats().temp_size_in_bytes
    assert c.memory["temp_size_in_bytes"] == c.temp_bytes
    assert c.xla_time.median > 0 and c.ours_time.median > 0 and c.xla_resident_time.median > 0
    # Ours fuse each program into one kernel, and every XLA kernel is found in it.
    assert len(ex.fusions) == 1 and len(c.ours) == 1
    assert all(k.ours == (ex.fusions[0].name,) for k in c.kernels)
    assert c.max_error is not None and c.max_error < 1e-4
    assert c.sentences[0].startswith(f"XLA: {len(c.kernels)} kernel")


def test_xla_cpus_kernel_count_changes_with_size(compared):
    """Several kernels for a small sum (the reduce split in two), one for a large one."""
    small = xla_kernels_in(compared["sum small"][1].hlo)
    large = xla_kernels_in(compared["sum large"][1].hlo)
    assert len(small) > 1 and len(large) == 1
    for program in ("softmax", "layernorm"):
        assert (xla_kernels_in(compared[f"{program} small"][1].hlo)
                != xla_kernels_in(compared[f"{program} large"][1].hlo))


def test_the_split_reduce_is_said_in_words(compared):
    _, c = compared["softmax small"]
    assert len(c.kernels) > 2
    said = " ".join(c.sentences)
    assert "is not fused into its consumer" in said and "row_fusion" in said
    assert "here: 1 kernel (1 row fusion)" in c.sentences[0]
    assert c.table().splitlines()[0].split() == ["XLA", "kernel", "kind", "ops", "here"]


def test_timed_on_the_cpu_backend_with_the_outputs_agreeing():
    needs_jax()
    x = f32(16, 64)
    ex = xe.explore(softmax, x, backend="cpu")
    c = ex.compare_xla(repeat=3)
    assert ex.last_xla is c and c.repeat == 3 and c.backend == "cpu"
    assert 0 < c.xla_time.q1 <= c.xla_time.median <= c.xla_time.q3
    assert 0 < c.ours_time.q1 <= c.ours_time.median <= c.ours_time.q3
    assert 0 < c.xla_resident_time.median
    assert c.ours_temp_bytes == ex.buffers.peak_bytes
    # XLA's answer against NumPy's, not only against ours.
    (out,) = xla_compare._xla_call(c.executable, __import__("jax"), [np.float32])(x)
    np.testing.assert_allclose(out, softmax(x), rtol=1e-5)
    data = mime.payload(ex)
    mime.validate(data)
    got = data["xla"]["comparison"]
    assert got["temp_bytes"] == c.temp_bytes and len(got["kernels"]) == len(c.kernels)
    assert got["dot"].startswith("digraph") and got["sentences"] == list(c.sentences)


def test_eager_ops_are_refused_by_name():
    needs_jax()

    def f(x):
        return np.unique(x).sum() + x.sum()

    ex = xe.explore(f, np.array([3.0, 1.0, 3.0]), autocluster=True)
    with pytest.raises(xe.UnsupportedOpError, match=r"numpy\.unique.*XLA cannot compile it"):
        ex.compare_xla(repeat=1)


def test_without_jax_the_error_and_the_tab_say_how_to_get_it(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_jax(name, *args, **kwargs):
        if name == "jax" or name.startswith("jax."):
            raise ImportError("No module named 'jax'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jax)
    monkeypatch.setattr(jax_env, "jax_available", lambda: False)
    ex = xe.explore(softmax, f32(4, 8))
    with pytest.raises(ModuleNotFoundError, match=re.escape("pip install 'xla-explorer[xla]'")):
        ex.compare_xla()
    data = mime.payload(ex)
    assert data["xla"] == {"jax": False, "install": "pip install 'xla-explorer[xla]'",
                           "comparison": None}
    mime.validate(data)


def test_the_live_explorer_compares_on_request_and_keeps_it_in_the_output(monkeypatch):
    needs_jax()
    import IPython.display

    updates = []

    class Handle:
        def update(self, bundle, raw=False):
            updates.append(bundle)

    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: Handle())
    ex = xe.explore(softmax, f32(4, 8))
    w = ex.show()
    w._ipython_display_()
    assert w.bundle["xla"]["comparison"] is None and w.bundle["xla"]["jax"] is True
    w._on_msg(w, {"action": "compare_xla", "repeat": 2}, [])
    assert w.xla_status == "" and ex.last_xla is not None and ex.last_xla.repeat == 2
    assert w.bundle["xla"]["comparison"]["kernels"] == [k.to_dict() for k in ex.last_xla.kernels]
    (saved,) = updates  # the output's JSON, what a saved notebook keeps
    assert saved[mime.MIME_TYPE]["xla"] == w.bundle["xla"]

    def broken(**kw):
        raise RuntimeError("no XLA today")

    monkeypatch.setattr(ex, "compare_xla", broken)
    assert isinstance(w, Explorer) and w.compare_xla(2) is None
    assert w.xla_status == "comparison failed: RuntimeError: no XLA today"


def keys(value):
    """A JSON value's structure: its keys, all the way down (a list by its first item)."""
    if isinstance(value, dict):
        return {k: keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keys(value[0])] if value else []
    return type(value).__name__ if value is not None else None


def test_the_tabs_jest_fixture_is_what_the_python_side_makes_today():
    """extension/test/xla_bundle.json (scripts/xla_tab_fixture.py) is drawn by the tab's jest
    test: it must still be the payload this code writes."""
    needs_jax()
    saved = json.loads(FIXTURE.read_text(encoding="utf-8"))
    mime.validate(saved)
    ex = xe.explore(softmax, f32(4, 8), backend="cpu")
    ex.compare_xla(repeat=1)
    fresh = mime.payload(ex)
    assert set(saved) == set(fresh)
    assert keys(saved["xla"]) == keys(fresh["xla"])


def test_an_exploration_of_hlo_text_compares_too():
    """The route is our stage-0 HLO, so an exploration with no Python function works: here
    the text JAX prints for its own softmax."""
    needs_jax()
    import jax

    x = f32(16, 64)
    text = jax.jit(lambda x: jax.nn.softmax(x, axis=-1)).lower(x).as_text(dialect="hlo")
    ex = xe.explore_hlo(text, x)
    c = ex.compare_xla(repeat=1)
    assert [k.name for k in c.kernels] == xla_kernels_in(c.hlo) and len(c.kernels) > 1
    assert all(k.ours == (ex.fusions[0].name,) for k in c.kernels)
    assert c.max_error is not None and c.max_error < 1e-6
