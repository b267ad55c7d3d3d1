"""`%load_ext xla_explorer`, `%%xla` and `%xla_cache`, driven through a real IPython shell.

Results are compared with the same code run by NumPy on copies of the inputs, never with the
cell's own earlier output."""
import copy

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import xla_explorer as xe
from xla_explorer.magic import summary

IPYTHON_NAMES = {"In", "Out", "exit", "quit", "get_ipython"}


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    sh.reset(new_session=False)
    result = sh.run_cell("%reload_ext xla_explorer")  # a fresh compile cache each test
    assert result.success
    sh.run_cell("import numpy as np")
    yield sh
    sh.reset(new_session=False)


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
        if isinstance(obj, np.ndarray):
            np.testing.assert_array_equal(obj, contents, err_msg=name)
            assert obj.dtype == contents.dtype
        elif contents is not None:
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
    for f in ex.fusions:
        assert f"  {f}\n" in out
    b = ex.buffers
    assert f"buffers: arena {b.peak_bytes} B (lower bound {b.lower_bound_bytes} B)" in out
    # The HLO is in the explorer widget displayed after the text, not in the text.
    assert ex.module.to_text(metadata=False) not in out and "optimised HLO" not in out
    views = [o.data for o in shown if "application/vnd.jupyter.widget-view+json" in o.data]
    assert len(views) == 1 and views[0]["text/plain"].startswith("<Explorer of ")
    # The text-only summary still has it, for front ends that want text.
    magic_run = magics(shell).last
    text = summary(magic_run, magic_run.entry.jit.cache_info())
    assert ex.module.to_text(metadata=False).rstrip() in text
    # HLO metadata counts lines as the notebook does: %%xla is line 1.
    assert "source_line=3" in ex.hlo() and "source_line=2" in ex.hlo()


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
    assert run(shell, "%%xla\nz = x + y\nv = z\nu = x\nparts = [z, v]\n")[0].success
    ns = shell.user_ns
    assert ns["v"] is ns["z"] and ns["u"] is xy[0]
    assert "parts" not in ns  # not an array or a number: stays local to the cell


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
    def broken_check(self, *args):
        raise RuntimeError("the check broke")

    monkeypatch.setattr(xe.Exploration, "check", broken_check)
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


def test_cuda_is_not_built_yet(shell, xy):
    result, out = run(shell, "%%xla --backend cuda\nz = x - y\n")
    assert isinstance(result.error_in_exec, UsageError)
    assert "cuda" in out and "not built yet" in out
    assert "z" not in shell.user_ns


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
