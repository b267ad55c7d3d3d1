"""The live explorer (`ex.show()`, what `%%xla` displays): an anywidget whose front end is the
JupyterLab extension's explorer built as one module, drawing the bundle's JSON. Here, the
kernel's side: what the widget sends (the module, the bundle), what one output carries, and
the benchmark the front end asks for. tests/extension/test_browser.py drives it in a browser.
"""
import html

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.viz import mime
from xla_explorer.viz.format import bytes_text
from xla_explorer.viz.live import Explorer
from xla_explorer.viz.page import BUNDLE, BundleNotBuilt, bundle_js

WIDGET = "application/vnd.jupyter.widget-view+json"


def exp_then_dot(x, w):
    e = np.exp(x)  # expensive with two consumers: its own kernel's output, read by the dot's
    return np.tanh(e @ w), e.sum()


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture
def cpu():
    rng = np.random.default_rng(0)
    x, w = rng.random((64, 32), dtype=np.float32), rng.random((32, 8), dtype=np.float32)
    return xe.explore(exp_then_dot, x, w, backend="cpu")


def test_show_is_the_extensions_explorer_drawing_the_bundle(monkeypatch, cpu):
    w = cpu.show()
    assert isinstance(w, Explorer) and w.exploration is cpu
    # The widget carries a loader; the module comes once a page, when the loader asks.
    assert len(w._esm) < 4096 and "mountAll" not in w._esm
    sent = []
    monkeypatch.setattr(w, "send", lambda content, buffers=None: sent.append(content))
    w._on_msg(w, {"action": "module"}, [])
    assert sent == [{"module": bundle_js()}] and "mountAll" in bundle_js()
    assert w.bundle == mime.payload(cpu)
    mime.validate(w.bundle)
    assert w.bench_unavailable == "" and w.status == ""
    assert repr(w) == ("<Explorer of exp_then_dot: "
                       f"{len(cpu.stages)} stages, {len(cpu.decisions)} fusion decisions; "
                       "backend cpu>")


def test_the_explorer_is_one_output_with_the_json_and_static_html(monkeypatch, cpu):
    import IPython.display
    from IPython.core.interactiveshell import InteractiveShell

    w = cpu.show()
    # Displayed, the explorer shows its bundle itself, with a display id (a benchmark run
    # later updates that output): IPython's formatter then has nothing left to add.
    shown = []
    monkeypatch.setattr(IPython.display, "display",
                        lambda bundle, raw=False, display_id=None: shown.append(bundle))
    assert InteractiveShell.instance().display_formatter.format(w)[0] == {}
    (data,) = shown
    assert set(data) == {WIDGET, mime.MIME_TYPE, "text/html", "text/plain"}
    assert data[WIDGET]["model_id"] == w.model_id
    assert data[mime.MIME_TYPE] == mime.payload(cpu)
    assert data["text/html"].startswith('<div class="xe-report">')
    assert data["text/plain"] == repr(w)
    # An Exploration shown as itself: the same JSON and HTML, and IPython's text.
    data, _ = InteractiveShell.instance().display_formatter.format(cpu)
    assert set(data) == {mime.MIME_TYPE, "text/html", "text/plain"}


def test_run_benchmark_asked_by_the_front_end_is_written_into_the_output(monkeypatch, cpu):
    """The front end sends {"action": "bench", "repeat": n}; the kernel runs ex.bench, sends
    the bundle back with it (the front end redraws) and updates the output, so the saved
    notebook's JSON has the benchmark (the extension shows it with no kernel)."""
    import IPython.display

    class Handle:
        def __init__(self, bundle):
            self.bundles = [bundle]

        def update(self, bundle, raw=False):
            assert raw
            self.bundles.append(bundle)

    handles: list[Handle] = []

    def display(bundle, raw=False, display_id=None):
        assert raw and display_id is True
        handles.append(Handle(bundle))
        return handles[-1]

    monkeypatch.setattr(IPython.display, "display", display)
    w = cpu.show()
    w._ipython_display_()
    (handle,) = handles
    assert handle.bundles[0][mime.MIME_TYPE]["bench"] is None
    w._on_msg(w, {"action": "bench", "repeat": 3}, [])
    result = cpu.last_bench
    assert result is not None and result.repeat == 3
    assert w.bundle["bench"] == mime.bench_dict(result) and w.status == ""
    assert len(handle.bundles) == 2
    assert handle.bundles[1][mime.MIME_TYPE]["bench"] == mime.bench_dict(result)
    assert WIDGET in handle.bundles[1]
    w._on_msg(w, {"action": "something else"}, [])  # not ours: nothing happens
    assert len(handle.bundles) == 2


def test_a_failing_benchmark_is_said_in_the_tab(monkeypatch, cpu):
    w = cpu.show()

    def broken(**kw):
        raise RuntimeError("no timer")

    monkeypatch.setattr(cpu, "bench", broken)
    assert w.run_benchmark(3) is None
    assert w.status == "benchmark failed: RuntimeError: no timer"
    assert w.bundle["bench"] is None


def test_the_loader_names_the_bundle_it_shares(monkeypatch, tmp_path, cpu):
    # Explorers on one page share the module fetched first: a rebuilt bundle gets a new key.
    from xla_explorer.viz import page

    first = cpu.show()._esm
    assert first == cpu.show()._esm
    rebuilt = tmp_path / "explorer.js"
    rebuilt.write_text(bundle_js() + "\n// rebuilt\n")
    monkeypatch.setattr(page, "BUNDLE", rebuilt)
    assert cpu.show()._esm != first


def test_the_interpreter_has_nothing_to_benchmark_and_says_so():
    ex = xe.explore(softmax, np.ones((4, 8), np.float32))
    assert ex.show().bench_unavailable == (
        'Benchmarks need backend="cpu": the interpreter backend runs the HLO op by op in '
        "NumPy.")


def test_an_unbuilt_front_end_is_a_clear_error(monkeypatch, tmp_path):
    from xla_explorer.viz import page

    monkeypatch.setattr(page, "BUNDLE", tmp_path / "explorer.js")
    ex = xe.explore(softmax, np.ones((4, 8), np.float32))
    with pytest.raises(BundleNotBuilt, match="make setup"):
        ex.show()
    assert BUNDLE.exists()  # the real one is built (make setup)


def test_the_buffers_tab_says_what_the_executable_allocates_for_the_arena(monkeypatch):
    from xla_explorer.codegen import packing
    from xla_explorer.viz.format import arena_note
    from xla_explorer.viz.html import fragment
    from xla_explorer.viz.panel_views import arena_note_of

    rng = np.random.default_rng(0)
    x, w = rng.random((4, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    # Packed copies of w too deep for a stack bound of 16 KiB: scratch in the arena.
    monkeypatch.setattr(packing, "STACK_B_BYTES", 16 * 1024)
    ex = xe.explore(lambda x, w: np.tanh(np.maximum(x @ w, 0) @ w), x, w, backend="cpu")
    # The CPU's assignment places the products' packed copies of w (scratch, live at their
    # own step) with the one temporary between them: its arena is the executable's, one
    # figure on every tab, and the scratch is a slot of the Buffers tab's timeline.
    a, exe = ex.buffers, ex.executable
    scratch = [x for x in a.allocations if any(v.category == "scratch" for v in x.values)]
    assert len(scratch) == 2 and all(x.size >= w.nbytes for x in scratch)
    assert exe.arena_bytes == a.peak_bytes >= w.nbytes + x.shape[0] * w.shape[1] * 4
    note = arena_note_of(ex)
    assert note == f"the executable allocates this arena, {bytes_text(a.peak_bytes)}, once"
    buffers = mime.payload(ex)["buffers"]
    assert buffers["arena_note"] == note and buffers["peak_bytes"] == exe.arena_bytes
    slots = [v for x in buffers["allocations"] for v in x["values"]]
    assert all(v.name in slots for x in scratch for v in x.values)
    assert html.escape(note) in fragment(ex)
    # Where the executable's arena is larger (scratch placed after the assignment), it says
    # by how much and why, beside the assignment's figure.
    assert arena_note(1000, 1064) == (
        "the executable allocates 1.04 KiB once: these 1000 bytes, then 64 bytes of scratch "
        "space its kernels take while they run, placed after the assignment (a while loop's "
        "body, a reduction's partials on a GPU)")
    interpreted = xe.explore(lambda x: np.tanh(x) * 2 + 1, x, backend="interpreter")
    assert arena_note_of(interpreted).startswith("the executable allocates this arena")


# A module compiled ahead of time (pycc): the deep sweeps; the live browser test clicks the
# same button in make test.
@pytest.mark.slow
@pytest.mark.deep
def test_export_asked_by_the_kernels_tab_writes_the_module(monkeypatch, tmp_path, cpu):
    monkeypatch.chdir(tmp_path)
    w = cpu.show()
    w._on_msg(w, {"action": "export", "name": "my model"}, [])
    (built,) = tmp_path.glob("my_model.cpython-*.so")
    assert w.export_status.startswith(f"wrote {built} (") and "my_model.pyi" in w.export_status
    import importlib.util

    spec = importlib.util.spec_from_file_location("my_model", built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, wt = cpu.args
    got = module.run(x, wt)
    want = exp_then_dot(x, wt)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


def test_an_export_that_cannot_be_made_says_why(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    w = xe.explore(softmax, np.ones((4, 8), np.float32)).show()  # the interpreter's
    w._on_msg(w, {"action": "export", "name": "s"}, [])
    assert w.export_status.startswith("export failed: CompileError: ") and "cpu" in w.export_status
    assert not list(tmp_path.iterdir())
