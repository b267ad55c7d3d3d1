"""`%load_ext xla_explorer`, `%%xla` and `%xla_cache`, driven through a real IPython shell.

Results are compared with the same code run by NumPy on copies of the inputs, never with the
cell's own earlier output."""
import copy
import re
import sys
from collections import Counter

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import xla_explorer as xe
from xla_explorer.backends import BACKENDS
from xla_explorer.cell import run as cell_run
from xla_explorer.viz import mime
from xla_explorer.viz.cell_text import summary
from xla_explorer.viz.format import bytes_text

IPYTHON_NAMES = {"In", "Out", "exit", "quit", "get_ipython"}


def forget_user_names(sh) -> None:
    """Every name a cell bound, gone, as `sh.reset()` leaves it, without the full garbage
    collection reset() runs: seconds, in a test worker whose heap holds thousands of
    compiled kernels."""
    for name in [n for n in sh.user_ns if n not in sh.user_ns_hidden]:
        del sh.user_ns[name]


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    forget_user_names(sh)
    result = sh.run_cell("%reload_ext xla_explorer")  # a fresh compile cache each test
    assert result.success
    # These tests are about the compiled program: each cell waits for its kernels, as
    # `%%xla --wait` does. The interpreter's first answer: tests/test_magic_tiered.py.
    magics(sh).tiered = False
    sh.run_cell("import numpy as np")
    yield sh
    forget_user_names(sh)


def magics(shell):
    return shell.magics_manager.registry["XlaMagics"]


def run(shell, cell: str):
    """Run a cell; (result, everything it printed)."""
    result, out, _ = run_displaying(shell, cell)
    return result, out


def run_displaying(shell, cell: str):
    """Run a cell; (result, everything it printed, the rich outputs it displayed)."""
    with capture_output() as cap:
        result = shell.run_cell(cell)
    return result, cap.stdout + cap.stderr, cap.outputs


def numpy_run(body: str, **inputs) -> dict:
    """The cell as plain NumPy, on copies of its inputs."""
    scope = {k: copy.deepcopy(v) for k, v in inputs.items()}
    exec(body, {"np": np}, scope)
    return scope


def user_vars(shell) -> dict:
    """The user's names (IPython's own history names change with every cell)."""
    return {k: v for k, v in shell.user_ns.items()
            if k not in IPYTHON_NAMES and not (k.startswith("_") and k != "_xla")}


def snapshot(shell):
    names = user_vars(shell)
    return {k: (v, copy.deepcopy(v)) for k, v in names.items() if k not in ("np", "_xla")} | {
        k: (v, None) for k, v in names.items() if k in ("np", "_xla")}


def assert_unchanged(shell, before):
    after = user_vars(shell)
    assert after.keys() == before.keys()
    for name, (obj, contents) in before.items():
        assert after[name] is obj, name
        if contents is not None:
            assert_same_contents(obj, contents, name)


def assert_same_contents(obj, contents, name):
    """`obj` holds what its deep copy `contents` holds: arrays, containers, objects' fields."""
    if isinstance(obj, np.ndarray):
        np.testing.assert_array_equal(obj, contents, err_msg=name)
        assert obj.dtype == contents.dtype, name
    elif isinstance(obj, (list, tuple, dict)):
        assert type(obj) is type(contents) and len(obj) == len(contents), name
        keys = obj.keys() if isinstance(obj, dict) else range(len(obj))
        for k in keys:
            assert_same_contents(obj[k], contents[k], f"{name}[{k!r}]")
    elif hasattr(obj, "__dict__") and not callable(obj):
        assert_same_contents(vars(obj), vars(contents), name)
    else:
        assert obj == contents, name


@pytest.fixture
def xy(shell, rng):
    x = rng.standard_normal(64).astype(np.float32)
    y = rng.standard_normal(64).astype(np.float32)
    shell.user_ns.update(x=x, y=y)
    return x, y


def test_inputs_are_read_and_outputs_written_back(shell, xy):
    body = "z = np.tanh(x) * y + 1\nm = z.max()\n"
    want = numpy_run(body, x=xy[0], y=xy[1])
    result, out = run(shell, "%%xla\n" + body)
    assert result.success, out
    ns = shell.user_ns
    assert isinstance(ns["z"], np.ndarray) and ns["z"].dtype == np.float32
    np.testing.assert_allclose(ns["z"], want["z"], rtol=2e-5, atol=1e-6)
    assert type(ns["m"]) is type(want["m"]) and np.isclose(ns["m"], want["m"], rtol=2e-5)
    assert ns["x"] is xy[0] and ns["y"] is xy[1]
    ex = ns["_xla"]
    assert isinstance(ex, xe.Exploration) and ex.backend == "cpu"  # the default backend
    assert "inputs:   x f32[64], y f32[64]" in out and "z f32[64]" in out and "m f32[]" in out


def test_the_summary_shows_fusions_buffers_and_the_check_then_the_explorer(shell, xy):
    result, out, shown = run_displaying(shell, "%%xla\nz = np.tanh(x) * y + 1\ns = np.sum(z)\n")
    assert result.success, out
    ex = shell.user_ns["_xla"]
    assert "check against eager NumPy: ok" in out
    assert f"fusions: {len(ex.fusions)} kernel" in out
    for f in ex.fusions:  # each kernel on a line of its own, by name and kind
        assert f"\n  {f.name} ({f.kind}): " in out
    b = ex.buffers
    assert (f"buffers: arena {bytes_text(b.peak_bytes)} (lower bound "
            f"{bytes_text(b.lower_bound_bytes)})") in out
    # The HLO is in the explorer widget displayed after the text, not in the text.
    assert ex.module.to_text(metadata=False) not in out and "optimised HLO" not in out
    # One output: the live widget, the extension's JSON, static HTML and a short text.
    (view,) = [o.data for o in shown]
    assert set(view) == {"application/vnd.jupyter.widget-view+json", mime.MIME_TYPE,
                         "text/html", "text/plain"}
    assert view["text/plain"].startswith("<Explorer of ")
    assert view[mime.MIME_TYPE] == mime.payload(ex)
    assert view["text/html"].startswith('<div class="xe-report">')
    # The text-only summary still has it, for front ends that want text.
    magic_run = magics(shell).last
    text = summary(magic_run, magic_run.entry.jit.cache_info())
    assert ex.module.to_text(metadata=False).rstrip() in text
    # HLO metadata counts lines as the notebook does: %%xla is line 1.
    hlo = ex.hlo(metadata=True)
    assert "source_line=3" in hlo and "source_line=2" in hlo


def test_a_loops_kernels_alike_are_one_line_and_a_count(shell, xy):
    """An unrolled loop's kernels differ only by name: the first is listed, then how many
    more (a 40-step stencil: 20 kernels of two steps)."""
    cell = ("%%xla\nu = x\nfor _ in range(40):\n"
            "    u = u + 0.25 * (np.roll(u, 1) - 2 * u + np.roll(u, -1))\n")
    result, out = run(shell, cell)
    assert result.success, out
    names = [f.name for f in shell.user_ns["_xla"].fusions]
    assert len(names) == 20
    lines = out.split("fusions: 20 kernels\n")[1].splitlines()
    assert lines[0].startswith(f"  {names[0]} (kLoop): ")
    assert lines[1] == f"  ... and 19 more like it, through {names[-1]}"
    assert not any(n in out for n in names[1:-1])


def test_a_big_kernel_is_summarised_by_opcode_counts(shell, xy):
    cell = ("%%xla\nm = x.mean()\nd = x - m\nv = (d * d).mean()\n"
            "z = d / np.sqrt(v + 1e-5) * y + np.tanh(y) * 0.5\n")
    result, out = run(shell, cell)
    assert result.success, out
    ex = shell.user_ns["_xla"]
    big = [f for f in ex.fusions if len(f.instructions) > 4]
    assert big
    moving = {"broadcast", "reshape", "transpose", "slice", "concatenate", "pad", "reverse"}
    for f in big:
        fusion = ex.module.entry.get(f.name)
        body = [i.opcode for i in ex.module.computation(fusion.attr("calls")).instructions
                if i.opcode not in ("parameter", "tuple")]
        assert len(body) == len(f.instructions)
        computed = Counter(op for op in body if op not in moving and op != "constant")
        line = next(li for li in out.splitlines() if li.startswith(f"  {f.name} ("))
        head, _, kinds = line.partition(" ops: ")
        assert head.endswith(f": {len(body)}")
        ops, _, rest = kinds.partition("; ")
        parts = ops.split(", ")
        assert {p.split(" ")[-1]: int(p.split(" ")[0]) if " " in p else 1
                for p in parts} == computed
        # most frequent first
        assert [computed[p.split(" ")[-1]] for p in parts] == sorted(computed.values(),
                                                                     reverse=True)
        plumbing = [f"{n} {k}" for k, n in (
            ("data movement", sum(op in moving for op in body)),
            ("constant", body.count("constant"))) if n]
        assert rest == ", ".join(plumbing)
        assert ", ".join(f.instructions) not in out
    assert "each kernel's instructions by name: _xla.fusions" in out


def test_a_small_kernel_is_listed_by_name(shell, xy):
    result, out = run(shell, "%%xla\nz = x * y\n")
    assert result.success, out
    (f,) = shell.user_ns["_xla"].fusions
    assert len(f.instructions) <= 4 and f"  {f}\n" in out
    assert "_xla.fusions, or the explorer" not in out


def test_in_place_updates_change_the_callers_array(shell, xy):
    x = xy[0]
    shell.user_ns["alias"] = x  # another name for the same array sees the change, as in NumPy
    body = "x += 1\nx[2:4] = 0\nw = x * 2\n"
    want = numpy_run(body, x=x)
    result, out = run(shell, "%%xla\n" + body)
    assert result.success, out
    ns = shell.user_ns
    assert ns["x"] is x and ns["alias"] is x
    np.testing.assert_allclose(x, want["x"], rtol=2e-5)
    np.testing.assert_allclose(ns["w"], want["w"], rtol=2e-5)
    assert "in place: x" in out
    assert "x (in place)" in out  # the check ran on copies: x changed once, not twice


def test_a_rebound_input_is_a_new_array_and_the_old_one_is_untouched(shell, xy):
    x = xy[0]
    before = x.copy()
    body = "x = x * 2\n"
    want = numpy_run(body, x=x)
    assert run(shell, "%%xla\n" + body)[0].success
    assert shell.user_ns["x"] is not x
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(shell.user_ns["x"], want["x"], rtol=2e-5)


def test_names_bound_to_the_same_object_stay_one_object(shell, xy):
    assert run(shell, "%%xla\nz = x + y\nv = z\nu = x\nparts = [z, v]\nname = 'z'\n")[0].success
    ns = shell.user_ns
    assert ns["v"] is ns["z"] and ns["u"] is xy[0]
    assert type(ns["parts"]) is list and all(p is ns["z"] for p in ns["parts"])
    assert "name" not in ns  # holds no array: stays local to the cell


@pytest.mark.parametrize("body, failing", [
    ("x += 1\ny[2:4] = 0\nz = x * y\nn = 5\nu = np.unique(z)\nq = u + 1\n", "u = np.unique(z)"),
    ("x += 1\nz = x * y\nq = z + undefined_name\n", "q = z + undefined_name"),
    ("x += 1\nz = x.reshape(3, 5)\n", "z = x.reshape(3, 5)"),
])
def test_a_failing_cell_leaves_the_namespace_exactly_as_it_was(shell, xy, body, failing):
    shell.user_ns.update(s=2.5, k=np.float32(1.5), n=3, items=[1, 2])
    assert run(shell, "%%xla\nw = x * s * k\n")[0].success  # _xla and w exist before
    before = snapshot(shell)
    result, out = run(shell, "%%xla\n" + body)
    assert not result.success
    assert_unchanged(shell, before)
    assert "Traceback" not in out and "xla_explorer" not in out
    line = body.splitlines().index(failing) + 2  # the %%xla line is line 1
    assert f"line {line} of the cell:\n    {failing}" in out


def test_a_compile_error_names_the_op_and_the_line_and_suggests_autocluster(shell, xy):
    before = snapshot(shell)
    result, out = run(shell, "%%xla\na = x * 2 + 1\nu = np.unique(a)\nb = np.sum(u * u)\n")
    assert isinstance(result.error_in_exec, xe.CompileError)
    first = out.strip().splitlines()[0]
    assert first.startswith("CompileError: ") and "unique" in first
    assert "line 3 of the cell:\n    u = np.unique(a)" in out
    assert "--autocluster" in out
    assert_unchanged(shell, before)


def test_a_failure_after_the_run_writes_nothing(shell, xy, monkeypatch):
    def broken_check(*args):
        raise RuntimeError("the check broke")

    monkeypatch.setattr(cell_run, "compare", broken_check)  # the check compares each output
    before = snapshot(shell)
    result, out = run(shell, "%%xla\nx += 1\nz = x * y\n")
    assert isinstance(result.error_in_exec, RuntimeError)
    assert out.strip() == "RuntimeError: the check broke"
    assert_unchanged(shell, before)


def test_debug_shows_the_full_traceback(shell, xy):
    result, out = run(shell, "%%xla --debug\nq = x + undefined_name\n")
    assert isinstance(result.error_in_exec, NameError)
    assert "Traceback" in out and "undefined_name" in out


def test_an_unsupported_statement_is_refused_naming_the_line(shell, xy):
    before = snapshot(shell)
    result, out = run(shell, "%%xla\nz = x + 1\nimport math\n")
    assert not result.success
    assert "`import` is not supported" in out and "line 3 of the cell:\n    import math" in out
    assert_unchanged(shell, before)


def test_a_syntax_error_quotes_the_line(shell, xy):
    result, out = run(shell, "%%xla\nz = x +\n")
    assert not result.success and "line 2 of the cell:\n    z = x +" in out
    assert "Traceback" not in out


def test_rerunning_a_cell_is_a_cache_hit_and_a_new_shape_compiles_again(shell, xy, rng):
    body = "z = np.exp(x) - y\n"
    cell = "%%xla\n" + body
    result, out = run(shell, cell)
    assert result.success and "compile cache: miss (0 hits, 1 miss)" in out
    first = shell.user_ns["_xla"]
    assert not magics(shell).last.hit

    result, out = run(shell, cell)
    assert result.success and "compile cache: hit (1 hit, 1 miss)" in out
    assert magics(shell).last.hit and shell.user_ns["_xla"] is first
    (entry,) = magics(shell).cache.cells.values()
    info = entry.jit.cache_info()
    assert (info.hits, info.misses, len(info.signatures)) == (1, 1, 1)

    x, y = (rng.standard_normal((4, 8)) for _ in range(2))  # a new shape and dtype
    shell.user_ns.update(x=x, y=y)
    result, out = run(shell, cell)
    assert result.success and "compile cache: miss (1 hit, 2 misses)" in out
    assert not magics(shell).last.hit and shell.user_ns["_xla"] is not first
    info = entry.jit.cache_info()
    assert (info.hits, info.misses, len(info.signatures)) == (1, 2, 2)
    np.testing.assert_allclose(shell.user_ns["z"], numpy_run(body, x=x, y=y)["z"], rtol=1e-9)


def test_a_helper_defined_again_compiles_the_cell_again(shell, xy):
    shell.run_cell("def f(v):\n    return v * 2\n")
    assert run(shell, "%%xla\nz = f(x)\n")[0].success
    shell.run_cell("def f(v):\n    return v * 3\n")
    result, out = run(shell, "%%xla\nz = f(x)\n")
    assert result.success and "compile cache: miss" in out
    np.testing.assert_allclose(shell.user_ns["z"], xy[0] * 3, rtol=1e-6)


def test_scalars_in_and_out_as_numpy_gives_them(shell, xy):
    shell.user_ns.update(s=2.5, i=3, k=np.float32(1.5), j=np.int32(7), b=True)
    body = ("t = x.sum()\nu = s * 2\nv = k * 2\nw = i + j\nc = s * i\nd = b & (i > 2)\n"
            "e = x * s * k\nn = 4\n")
    want = numpy_run(body, **{n: shell.user_ns[n] for n in "xskijb"})
    result, out = run(shell, "%%xla\n" + body)
    assert result.success, out
    ns = shell.user_ns
    for name in "tuvwcdn":
        assert type(ns[name]) is type(want[name]), name
        assert np.isclose(ns[name], want[name], rtol=2e-5), name
    assert ns["e"].dtype == want["e"].dtype
    np.testing.assert_allclose(ns["e"], want["e"], rtol=2e-5)
    assert "s float" in out and "k f32[]" in out


def test_a_python_number_input_is_compiled_for_its_type_not_its_value(shell, xy):
    shell.user_ns["s"] = 2.0
    assert run(shell, "%%xla\nz = x * s\n")[0].success
    shell.user_ns["s"] = 5.0
    result, out = run(shell, "%%xla\nz = x * s\n")
    assert "compile cache: hit" in out
    np.testing.assert_allclose(shell.user_ns["z"], xy[0] * 5.0, rtol=1e-6)


def test_quiet_prints_nothing(shell, xy):
    result, out = run(shell, "%%xla --quiet\nz = x - y\n")
    assert result.success and out == ""
    np.testing.assert_array_equal(shell.user_ns["z"], xy[0] - xy[1])


def test_an_unknown_flag_is_a_usage_error(shell, xy):
    before = snapshot(shell)
    result, out = run(shell, "%%xla --fast\nz = x - y\n")
    assert isinstance(result.error_in_exec, UsageError) and "unrecognized arguments: --fast" in out
    result, out = run(shell, "%%xla --backend tpu\nz = x - y\n")
    assert isinstance(result.error_in_exec, UsageError) and "invalid choice" in out
    assert_unchanged(shell, before)


def test_cuda_runs_a_cell(shell, xy, monkeypatch):
    # On the simulator where there is no GPU, switched on for this test only: a numba.cuda
    # imported for real in this process (no device) would fail every later CUDA test of this
    # worker. Without either, the error is tests/cuda/test_numba_cuda.py's, in a subprocess.
    cuda = sys.modules.get("numba.cuda")
    if cuda is None or "simulator" in cuda.to_device.__module__:
        monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    result, out = run(shell, "%%xla --backend cuda\nz = x - y\n")
    assert result.success, out
    np.testing.assert_allclose(shell.user_ns["z"], shell.user_ns["x"] - shell.user_ns["y"])


def test_the_interpreter_backend(shell, xy):
    body = "z = np.maximum(x, 0) @ y\n"
    result, out = run(shell, "%%xla --backend interpreter\n" + body)
    assert result.success, out
    assert shell.user_ns["_xla"].backend == "interpreter"
    assert np.isclose(shell.user_ns["z"], numpy_run(body, x=xy[0], y=xy[1])["z"], rtol=2e-5)


def test_an_in_place_update_of_an_input_that_shares_memory_is_refused(shell, xy):
    shell.user_ns["v"] = xy[0][:8]  # a view of x
    before = snapshot(shell)
    result, out = run(shell, "%%xla\nx += 1\nz = v * 2\n")
    assert not result.success and "shares memory with v" in out
    assert "line 2 of the cell:\n    x += 1" in out
    assert_unchanged(shell, before)


def test_an_in_place_update_of_a_read_only_array_is_refused(shell, xy):
    xy[0].flags.writeable = False
    before = snapshot(shell)
    result, out = run(shell, "%%xla\nx *= 2\n")
    assert not result.success and "read-only" in out
    assert_unchanged(shell, before)


def test_bench_shows_its_table_and_leaves_the_inputs_alone(shell, xy):
    x = xy[0]
    want = numpy_run("x += 1\n", x=x)["x"]
    result, out = run(shell, "%%xla --bench\nx += 1\n")
    assert result.success, out
    assert "eager NumPy" in out and "compiled" in out and "speed-up" in out
    np.testing.assert_allclose(x, want)  # one update: the bench ran on copies


def test_dump_writes_files_and_lists_them(shell, xy, tmp_path):
    result, out = run(shell, f"%%xla --dump {tmp_path}\nz = x * y\n")
    assert result.success, out
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert files and "dumped" in out
    for p in files:
        assert str(p) in out


@pytest.mark.slow  # Numba's ahead-of-time compiler and a C compiler build the module
@pytest.mark.deep  # make test exports through the API and the explorer's button
def test_export_writes_a_module_named_after_the_flag(shell, xy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x, y = xy
    result, out = run(shell, "%%xla --export cellmod\nz = np.tanh(x) * y\n")
    assert result.success, out
    exported = magics(shell).last.exported
    assert f"exported {exported.path}" in out and "needs only NumPy" in out
    assert exported.path.parent == tmp_path and (tmp_path / "cellmod.pyi").exists()
    assert [p.name for p in exported.parameters] == ["x", "y"]
    np.testing.assert_allclose(exported.load().run(x, y), np.tanh(x) * y, rtol=1e-6)


def test_xla_cache_lists_what_is_compiled(shell, xy, rng):
    result, out = run(shell, "%xla_cache")
    assert "nothing compiled yet" in out
    run(shell, "%%xla\nz = x + y\n")
    run(shell, "%%xla\nz = x + y\n")
    shell.user_ns.update(x=rng.standard_normal(3), y=rng.standard_normal(3))
    run(shell, "%%xla\nz = x + y\n")
    run(shell, "%%xla --quiet\nq = x * 2\n")
    result, out = run(shell, "%xla_cache")
    assert result.success
    assert "2 cells, 3 executables; 1 hit, 3 misses" in out
    assert "--backend cpu  (1 hit, 2 misses)  z = x + y" in out
    assert "(x: f32[64], y: f32[64])" in out and "(x: f64[3], y: f64[3])" in out
    assert "q = x * 2" in out


def test_python_ints_that_fix_a_shape_are_static_and_listed_with_their_values(shell, xy):
    body = "y = np.zeros(n) + x[:n]\nfor k in range(n):\n    y = y + 1\nz = x[i] * 2\n"
    for n, i in ((4, 2), (5, 3), (4, 2)):
        shell.user_ns.update(n=n, i=i)
        result, out = run(shell, "%%xla --quiet\n" + body)
        assert result.success, out
        want = numpy_run(body, x=xy[0], n=n, i=i)
        np.testing.assert_allclose(shell.user_ns["y"], want["y"])
        assert shell.user_ns["z"] == want["z"]
    out = run(shell, "%xla_cache")[1]
    assert "2 executables; 1 hit, 2 misses" in out, out
    assert "(n: int = 4, x: f32[64], i: int = 2)" in out and "n: int = 5" in out, out


def test_a_helpers_global_rebound_compiles_the_cell_again(shell):
    shell.run_cell("K = 2.0\ndef scale(v):\n    return v * K\nx = np.ones(3)")
    assert run(shell, "%%xla --quiet\ny = scale(x)")[0].success
    np.testing.assert_array_equal(shell.user_ns["y"], [2.0, 2.0, 2.0])
    shell.run_cell("K = 3.0\nx = np.full(3, 5.0)")
    result, out = run(shell, "%%xla --quiet\ny = scale(x)")
    assert result.success, out
    np.testing.assert_array_equal(shell.user_ns["y"], [15.0, 15.0, 15.0])  # not the old K


def test_a_failed_first_compile_is_not_listed(shell, xy):
    run(shell, "%%xla\nu = np.unique(x)\n")
    assert "nothing compiled yet" in run(shell, "%xla_cache")[1]


def test_unload_forgets_the_cache_and_the_magics(shell, xy):
    run(shell, "%%xla\nz = x + y\n")
    cache = magics(shell).cache
    assert cache.cells
    shell.run_cell("%unload_ext xla_explorer")
    assert not cache.cells
    result, _ = run(shell, "%%xla\nz = x + y\n")
    assert not result.success


# -- auto-clustering ------------------------------------------------------------------------------

UNIQUE_BETWEEN = "a = np.round(x * 4) + y * 0\nu = np.unique(a)\nb = np.sum(u * u) + 1\n"


def test_autocluster_runs_unique_eagerly_between_two_compiled_clusters(shell, xy):
    want = numpy_run(UNIQUE_BETWEEN, x=xy[0], y=xy[1])
    result, out = run(shell, "%%xla --autocluster\n" + UNIQUE_BETWEEN)
    assert result.success, out
    ns = shell.user_ns
    clusters = ns["_xla"].clusters
    assert len(clusters.compiled) == 2 and len(clusters.eager) == 1
    assert "unique" in str(clusters.eager[0])
    np.testing.assert_allclose(ns["a"], want["a"], rtol=2e-5)
    np.testing.assert_array_equal(ns["u"], want["u"])
    assert type(ns["b"]) is type(want["b"]) and np.isclose(ns["b"], want["b"], rtol=2e-5)
    assert "clusters: 2 compiled, 1 run eagerly" in out


def test_without_autocluster_the_same_cell_fails_and_changes_nothing(shell, xy):
    before = snapshot(shell)
    result, out = run(shell, "%%xla\n" + UNIQUE_BETWEEN)
    assert isinstance(result.error_in_exec, xe.CompileError)
    assert "unique" in out and "line 3 of the cell:\n    u = np.unique(a)" in out
    assert_unchanged(shell, before)


def test_identity_follows_the_path_python_took_for_each_shape(shell, rng):
    cell = "%%xla\nif x.ndim == 2:\n    z = x\nelse:\n    z = x * 2\n"
    square, flat = rng.standard_normal((3, 3)), rng.standard_normal(4)
    for x in (square, flat, square):  # the last run is a cache hit for the first shape
        shell.user_ns["x"] = x
        result, out = run(shell, cell)
        assert result.success, out
        if x.ndim == 2:
            assert shell.user_ns["z"] is x
        else:
            np.testing.assert_array_equal(shell.user_ns["z"], x * 2)
    assert "compile cache: hit" in out


# -- values read through containers and attributes ---------------------------------------------


class Config:
    def __init__(self, scale, act="relu"):
        self.scale = scale
        self.act = act


@pytest.fixture
def deep(shell, rng):
    x = rng.standard_normal(16)
    values = dict(x=x, params={"w": rng.standard_normal(16)}, lst=[2, 5], cfg=Config(2.0),
                  ws=[rng.standard_normal(16), rng.standard_normal(16)])
    shell.user_ns.update(values)
    return values


def numpy_ns(shell, body: str, *names) -> dict:
    """The cell as plain NumPy on deep copies of the namespace's values it reads."""
    scope = {n: copy.deepcopy(shell.user_ns[n]) for n in names}
    exec(body, {"np": np, **scope}, scope)
    return scope


PATH_CELL = "y = x * params['w'] + lst[0] * cfg.scale\n"


def test_values_read_through_containers_and_attributes_are_inputs(shell, deep):
    # The cpu backend: a re-run with new values is a hit of the compiled kernels.
    cell = "%%xla\n" + PATH_CELL
    result, out = run(shell, cell)
    assert result.success, out
    assert "inputs:   x f64[16], params['w'] f64[16], lst[0] int, cfg.scale float" in out
    ns = shell.user_ns
    for change in ("params['w'][:] = -1", "params['w'] = params['w'] + 3", "lst[0] = 1000",
                   "cfg.scale = 5.0", "cfg = Config(7.5)"):
        shell.run_cell(change)
        result, out = run(shell, cell)
        assert result.success and "compile cache: hit" in out, change
        want = numpy_ns(shell, PATH_CELL, "x", "params", "lst", "cfg")["y"]
        np.testing.assert_allclose(ns["y"], want, rtol=1e-12, err_msg=change)
    ns["params"]["w"] = np.ones((2, 16))  # a new shape compiles again
    result, out = run(shell, cell)
    assert result.success and "compile cache: miss" in out
    np.testing.assert_allclose(ns["y"], numpy_ns(shell, PATH_CELL, "x", "params", "lst",
                                                 "cfg")["y"], rtol=1e-12)


def test_a_change_of_structure_or_constant_compiles_again(shell, deep):
    body = ("y = x * 0\nfor w in ws:\n    y = y + w\nif cfg.act == 'relu':\n"
            "    y = np.maximum(y, 0)\n")
    cell = "%%xla --backend interpreter --quiet\n" + body
    # A new value of a leaf is a hit; a new length or a new constant compiles again.
    for change in ("", "ws[1] = ws[1] * 3", "ws.append(x)", "cfg.act = 'none'"):
        shell.run_cell(change)
        assert run(shell, cell)[0].success, change
        want = numpy_ns(shell, body, "x", "ws", "cfg")["y"]
        np.testing.assert_allclose(shell.user_ns["y"], want, rtol=1e-12, err_msg=change)
        assert magics(shell).last.hit == (change == "ws[1] = ws[1] * 3"), change


def test_in_place_updates_through_paths_change_the_callers_arrays(shell, deep):
    w, w1 = deep["params"]["w"], deep["ws"][1]
    body = "params['w'] -= 0.5 * x\nws[1][:4] = 0\n"
    want = numpy_ns(shell, body, "x", "params", "ws")
    result, out = run(shell, "%%xla --backend interpreter\n" + body)
    assert result.success, out
    assert shell.user_ns["params"]["w"] is w and shell.user_ns["ws"][1] is w1
    np.testing.assert_allclose(w, want["params"]["w"], rtol=1e-12)
    np.testing.assert_allclose(w1, want["ws"][1], rtol=1e-12)
    assert "in place: params['w'], ws[1]" in out


REFUSED = [  # (cell, its failing line, what the error says)
    ("y = x + 1\nparams['w'] = y\n", "params['w'] = y", "changes params, a dict"),
    ("y = x + 1\ncfg.scale = 5\n", "cfg.scale = 5", "changes cfg, an object of type Config"),
    ("y = x + 1\nws.append(y)\n", "ws.append(y)", "changes ws (a list of the namespace)"),
    ("y = x + 1\nz = np.sum(x * helper(cfg))\n", "z = np.sum(x * helper(cfg))",
     "cfg is an object of type Config, used whole"),
    ("x += 1\npair = (x * 2, 'label')\n", "pair = (x * 2, 'label')", "pair[1] is a str"),
]


def test_a_refused_value_leaves_the_namespace_exactly_as_it_was(shell, deep):
    shell.run_cell("def helper(c):\n    return c.scale\n")
    assert run(shell, "%%xla --backend interpreter\nw0 = x * 2\n")[0].success
    for body, failing, what in REFUSED:
        before = snapshot(shell)
        params, ws = dict(deep["params"]), list(deep["ws"])
        result, out = run(shell, "%%xla --backend interpreter\n" + body)
        assert not result.success, body
        assert_unchanged(shell, before)
        assert shell.user_ns["params"].keys() == params.keys()
        assert all(shell.user_ns["params"][k] is v for k, v in params.items())
        assert len(shell.user_ns["ws"]) == 2
        assert all(a is b for a, b in zip(shell.user_ns["ws"], ws))
        assert what in out and "Traceback" not in out, out
        line = body.splitlines().index(failing) + 2
        assert f"line {line} of the cell:\n    {failing}" in out


def test_a_tuple_assigned_in_the_cell_is_written_back(shell, deep):
    body = "pair = (x + 1, x - 1)\nparts = {'x': x, 'sum': [x.sum()]}\n"
    want = numpy_ns(shell, body, "x")
    result, out = run(shell, "%%xla --backend interpreter\n" + body)
    assert result.success, out
    pair = shell.user_ns["pair"]
    assert type(pair) is tuple and len(pair) == 2
    for got, ref in zip(pair, want["pair"]):
        assert type(got) is np.ndarray
        np.testing.assert_allclose(got, ref, rtol=1e-12)
    parts = shell.user_ns["parts"]
    assert parts["x"] is deep["x"] and type(parts["sum"][0]) is type(want["parts"]["sum"][0])
    assert np.isclose(parts["sum"][0], want["parts"]["sum"][0])
    assert "pair (f64[16], f64[16])" in out and "pair[1]" in out  # in the check too


# -- what the cell shows --------------------------------------------------------------------------


@pytest.mark.parametrize("flags", ["--backend interpreter", "--backend interpreter --quiet"])
def test_print_prints_once_with_numpys_values(shell, xy, flags):
    body = "z = x * 2\nprint('total', z.sum())\nfor i in range(2):\n    print(i, z[i])\n"
    want = numpy_ns(shell, body, "x")
    lines = [f"total {want['z'].sum()!s}", f"0 {want['z'][0]!s}", f"1 {want['z'][1]!s}"]
    for _ in range(2):  # a miss, then a hit
        result, out = run(shell, f"%%xla {flags}\n" + body)
        assert result.success, out
        assert "Tracer" not in out
        assert out.splitlines()[:3] == lines and all(out.count(line) == 1 for line in lines)
    assert magics(shell).last.hit


def test_a_failing_cell_shows_numpys_prints_before_its_error(shell, xy):
    body = "z = x * 2\nprint('first', z[0])\nu = np.unique(z)\n"
    result, out = run(shell, "%%xla --backend interpreter\n" + body)
    assert not result.success and "Tracer" not in out
    assert out.count(f"first {xy[0][0] * 2!s}") == 1 and "np.unique" in out


LAST_LINES = [  # (the cell's last line, what a plain cell shows, from the namespace)
    ("z.sum()", lambda ns: (ns["x"] * 2).sum()),
    ("z", lambda ns: ns["z"]),
    ("x", lambda ns: ns["x"]),
    ("z.dtype", lambda ns: np.dtype(np.float32)),
    ("f'{z[0]}'", lambda ns: f"{ns['x'][0] * 2}"),  # the trace's would name a Tracer
    ("z.sum();", None),
    ("w = z.sum()", None),
    ("print(1)", None),
]


def test_a_last_line_expression_is_shown_as_a_plain_cell_shows_it(shell, xy):
    for last, shown in LAST_LINES:
        for _ in range(2):  # a miss, then a hit
            cell = "%%xla --backend interpreter --quiet\nz = x * 2\n" + last + "\n"
            result, out = run(shell, cell)
            assert result.success, out
            if shown is None:
                assert result.result is None and "Out[" not in out, last
                continue
            want = shown(shell.user_ns)
            assert "Out[" in out and type(result.result) is type(want), last
            if isinstance(want, np.ndarray):
                np.testing.assert_array_equal(result.result, want)
                assert (result.result is shell.user_ns["x"]) == (last == "x")
            else:
                assert result.result == want, last
        assert magics(shell).last.hit, last
    assert "__xla_last" not in shell.user_ns


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_an_array_subclass_input_is_refused_naming_its_line(shell):
    # NumPy's answers (a matrix product, a masked sum of 4.0) are not a plain array's.
    shell.user_ns.update(a=np.matrix([[1.0, 2.0], [3.0, 4.0]]),
                         m=np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]))
    for body, failing, fix in [("c = a * a\n", "c = a * a", "a = np.asarray(a)"),
                               ("t = m.sum()\n", "t = m.sum()", "m = m.filled(")]:
        before = snapshot(shell)
        result, out = run(shell, "%%xla\n" + body)
        assert isinstance(result.error_in_exec, xe.TraceError), out
        assert "subclass of np.ndarray" in out and fix in out, out
        assert f"line 2 of the cell:\n    {failing}" in out
        assert_unchanged(shell, before)


def test_a_numpy_scalar_input_keeps_numpys_output_forms(shell):
    shell.user_ns.update(s=np.float64(2.5), z=np.array(2.5))
    body = "c = s.copy()\nd = s * 2\nr = np.sqrt(s)\ne = z.copy()\n"
    want = numpy_run(body, s=np.float64(2.5), z=np.array(2.5))
    result, out = run(shell, "%%xla --quiet\n" + body)
    assert result.success, out
    for name in "cdre":
        assert type(shell.user_ns[name]) is type(want[name]), name
        assert shell.user_ns[name] == want[name], name
    assert "s: np.float64" in run(shell, "%xla_cache")[1]


def test_a_result_that_differs_from_numpy_is_not_written(shell, xy, monkeypatch):
    # A backend with a bug (the fuzzer's, registered as every backend is): the check against
    # eager NumPy catches it, and the cell changes nothing, as any failing cell.
    from tests.test_fuzz import Broken
    monkeypatch.setitem(BACKENDS, "interpreter", Broken())  # --backend's choices are fixed
    before = snapshot(shell)
    result, out = run(shell, "%%xla --backend interpreter\nc = x * 2 + y")
    assert isinstance(result.error_in_exec, xe.MismatchError), out
    assert "differ from eager NumPy's, so no name was changed" in out and "MISMATCH" in out
    assert_unchanged(shell, before)
    result, out = run(shell, "%%xla --backend interpreter --quiet\nc = x * 2 + y")
    assert result.success and "c" in shell.user_ns  # the check skipped, as asked


def test_a_new_cell_shows_which_kernel_numba_is_compiling_then_what_it_cost(
        shell, monkeypatch, tmp_path):
    from xla_explorer import magic

    shown: list[str] = []
    monkeypatch.setattr(magic, "updatable_display", lambda sh: shown.append)
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path))  # nothing on disk: a compile
    shell.user_ns["u"] = np.linspace(0, 1, 64).astype(np.float32)
    cell = ("%%xla\nv = u\nfor _ in range(8):\n"
            "    v = v + np.float32(0.25) * (np.roll(v, 1) - 2 * v + np.roll(v, -1))\n")
    result, _ = run(shell, cell)
    assert result.success, result.error_in_exec
    progress, final = shown[:-1], shown[-1]
    # One kernel (the steps are one kernel), as it starts compiling; the first call's
    # driver is Python, and Numba compiles the driver at a second call.
    assert len(progress) == 1 and "<progress" in progress[0] and "(1 of 1" in progress[0]
    (kernel,) = {k for k in shell.user_ns["_xla"].kernels if k in progress[0]}
    assert final.startswith(f"Numba compiled 1 function ({kernel})") and final.endswith(" s")
    # Run again: the driver compiles; then everything is compiled, so nothing is shown.
    shown.clear()
    result, _ = run(shell, cell)
    assert result.success and shown[-1].startswith("Numba compiled 1 function (run)")
    shown.clear()
    result, _ = run(shell, cell)
    assert result.success and shown == []
    want = shell.user_ns["u"]
    for _ in range(8):
        want = want + np.float32(0.25) * (np.roll(want, 1) - 2 * want + np.roll(want, -1))
    np.testing.assert_allclose(shell.user_ns["v"], want, rtol=1e-6)


def test_a_terminal_gets_no_progress_updates(shell):
    from xla_explorer import magic

    assert magic.updatable_display(shell) is None  # no Jupyter kernel behind this shell


def test_the_progress_counts_a_loop_bodys_functions_too(shell, monkeypatch, tmp_path):
    from xla_explorer import magic

    shown: list[str] = []
    monkeypatch.setattr(magic, "updatable_display", lambda sh: shown.append)
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path))
    shell.user_ns["u"] = np.linspace(0, 1, 16)
    shell.user_ns["xe"] = xe
    result, _ = run(shell, "%%xla\nv = xe.fori_loop(0, 3, lambda i, v: v * 2 + 1, u)\n")
    assert result.success, result.error_in_exec
    counts = [tuple(map(int, re.search(r"\((\d+) of (\d+)", p).groups())) for p in shown[:-1]]
    assert counts and all(done <= total for done, total in counts)
    # The loop kernel, the body's own driver and its kernels (the cell's driver is Python at
    # a first call): counted as they come, and the last to start is the last the summary
    # names. (A kernel that another test in this process compiled, the same code, is
    # neither counted nor compiled again.)
    compiled = int(re.search(r"Numba compiled (\d+) functions", shown[-1]).group(1))
    assert counts[-1][1] >= 3 and counts[-1][0] == compiled
    want = np.linspace(0, 1, 16)
    for _ in range(3):
        want = want * 2 + 1
    np.testing.assert_array_equal(shell.user_ns["v"], want)


@pytest.mark.slow  # a Jupyter kernel of its own
def test_a_jupyter_kernel_starts_numba_while_idle_after_load_ext(tmp_path):
    # Between cells, on the kernel's own thread: Numba imported without SciPy's linear
    # algebra, and the next %%xla cell compiles and answers.
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (
        "%load_ext xla_explorer\nimport sys\nimport numpy as np\n"
        "print('numba' in sys.modules)",
        "import asyncio\nawait asyncio.sleep(1)  # idle, as while the next cell is written\n"
        "print('numba.np.arraymath' in sys.modules, 'scipy.linalg' in sys.modules)",
        "x = np.linspace(-1, 1, 300, dtype=np.float32)",
        "%%xla --quiet\ny = np.tanh(x) * 2",
        "print(np.allclose(y, np.tanh(x) * 2, rtol=1e-6))")]
    env = {"XLA_EXPLORER_CACHE": str(tmp_path)}
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={
        "metadata": {"path": str(tmp_path)}})
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        client.execute()
    texts = ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells]
    assert texts[0] == "False\n"  # loading the extension imports no Numba itself
    assert texts[1] == "True False\n"
    assert texts[4] == "True\n"


def test_a_cells_driver_compiles_while_the_kernel_is_idle(shell):
    """In a Jupyter kernel (a running event loop), the driver a cell's first run ran in
    Python is compiled once the cell is done; running the cell again compiles nothing."""
    import asyncio
    import time

    from xla_explorer import magic

    rng = np.random.default_rng(7)
    a = rng.standard_normal((30, 18)).astype(np.float32)
    b = rng.standard_normal((18, 22)).astype(np.float32)
    shell.user_ns.update(a=a, b=b)
    cell = ("%%xla --quiet\n"
            "h = np.cosh(a @ b) - np.float32(0.25)\n"
            "g = h / h.sum(axis=1, keepdims=True)\n"
            "out = g @ b.T + a\n")

    async def run_then_idle():
        result, _ = run(shell, cell)
        assert result.success
        exe = shell.user_ns["_xla"].executable
        assert not exe.entry.signatures  # the first run ran the driver in Python
        # Another cell right after (Run All): the compile waits until no cell has run for
        # IDLE_SECONDS, so not before twice that from here.
        start = time.perf_counter()
        shell.run_cell("pass")
        await asyncio.sleep(1.2 * magic.IDLE_SECONDS)
        if time.perf_counter() - start < 1.9 * magic.IDLE_SECONDS:
            assert not exe.entry.signatures
        for _ in range(100):
            await asyncio.sleep(0.05)
            if exe.entry.signatures:
                break
        return exe

    exe = asyncio.run(run_then_idle())
    assert len(exe.entry.signatures) == 1
    counted = exe.compile_seconds
    result, _ = run(shell, cell)
    assert result.success and shell.user_ns["_xla"].executable is exe
    assert exe.compile_seconds == counted
    h = np.cosh(a @ b) - np.float32(0.25)
    np.testing.assert_allclose(shell.user_ns["out"], (h / h.sum(axis=1, keepdims=True)) @ b.T + a,
                               rtol=1e-4, atol=1e-4)
