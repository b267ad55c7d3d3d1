"""`%%xla` by default: a program not compiled yet is generated and answered by the
interpreter, and its kernels compile in the background (in a Jupyter kernel, once it is
idle); the runs after that take them. Every answer is compared with NumPy's."""
import asyncio
import threading

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import xla_explorer as xe
from tests.test_magic import forget_user_names, magics, numpy_run, run

SOFTMAX = ("e = np.exp(x - x.max(axis=1, keepdims=True))\n"
           "p = e / e.sum(axis=1, keepdims=True)\n")


@pytest.fixture
def shell(monkeypatch, tmp_path):
    # An empty kernel cache: the background compiles are Numba's, not an image's load.
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path))
    sh = InteractiveShell.instance()
    forget_user_names(sh)
    assert sh.run_cell("%reload_ext xla_explorer").success  # a fresh compile cache
    sh.run_cell("import numpy as np")
    assert magics(sh).tiered  # the default
    yield sh
    forget_user_names(sh)


@pytest.fixture
def x(shell):
    x = np.random.default_rng(3).standard_normal((16, 40)).astype(np.float32)
    shell.user_ns["x"] = x
    return x


def entry_of(shell):
    (entry,) = magics(shell).cache.cells.values()
    return entry


def test_the_first_run_is_the_interpreters_and_the_next_the_kernels(shell, x):
    result, out = run(shell, "%%xla\n" + SOFTMAX)
    assert result.success, out
    assert "this run: the interpreter answered" in out and "compile cache: miss" in out
    assert "check against eager NumPy: ok" in out
    first = magics(shell).last
    assert first.tier is not None and first.tier.answer.backend == "interpreter"
    ex = shell.user_ns["_xla"]
    # What the explorer shows is the cpu program, its kernels generated to be read.
    assert ex.backend == "cpu" and ex.kernels and ex is first.exploration
    want = numpy_run(SOFTMAX, x=x)["p"]
    np.testing.assert_allclose(shell.user_ns["p"], want, rtol=1e-6)

    assert entry_of(shell).jit.wait(timeout=120)  # a terminal: compiling since the cell ended
    # The kernels compiled in the background, on copies of the inputs.
    assert ex.executable.compile_seconds is not None
    shell.user_ns["x"] = x * 2
    result, out = run(shell, "%%xla\n" + SOFTMAX)
    assert result.success and "interpreter answered" not in out, out
    assert "compile cache: hit (1 hit, 1 miss)" in out
    again = magics(shell).last
    assert again.tier is None and again.exploration is ex and ex.backend == "cpu"
    np.testing.assert_allclose(shell.user_ns["p"], numpy_run(SOFTMAX, x=x * 2)["p"],
                               rtol=1e-6)


def test_in_place_updates_keep_numpys_meaning_on_both_tiers(shell):
    w, g = np.arange(6, dtype=np.float32), np.ones(6, np.float32)
    shell.user_ns.update(w=w, g=g)
    cell = "%%xla --quiet\nw -= np.float32(0.5) * g\ns = w.sum()\n"
    assert run(shell, cell)[0].success
    assert magics(shell).last.tier is not None
    np.testing.assert_array_equal(w, np.arange(6) - 0.5)
    assert shell.user_ns["s"] == np.float32((np.arange(6) - 0.5).sum())
    assert entry_of(shell).jit.wait(timeout=120)
    # The background compile ran on copies: the caller's w moved once, by the cell.
    np.testing.assert_array_equal(w, np.arange(6) - 0.5)
    assert run(shell, cell)[0].success
    assert magics(shell).last.tier is None
    assert shell.user_ns["w"] is w
    np.testing.assert_array_equal(w, np.arange(6) - 1.0)


def test_wait_bench_and_config_compile_before_answering(shell, x):
    result, out = run(shell, "%%xla --wait\n" + SOFTMAX)
    assert result.success and "interpreter answered" not in out
    assert magics(shell).last.tier is None
    assert shell.user_ns["_xla"].executable.compile_seconds is not None
    result, out = run(shell, "%%xla --bench\ny = np.tanh(x) * 2\n")
    assert result.success and magics(shell).last.tier is None and "bench" in out
    shell.run_cell("%config XlaMagics.tiered = False")
    try:
        result, out = run(shell, "%%xla\nz = np.cos(x) + 1\n")
        assert result.success and magics(shell).last.tier is None
    finally:
        del shell.config.XlaMagics["tiered"]  # the shell outlives this test
    np.testing.assert_allclose(shell.user_ns["z"], np.cos(x) + 1, rtol=1e-6)


def test_a_program_run_again_while_compiling_is_answered_again(shell, x):
    """In a Jupyter kernel (a running event loop) the kernels compile on the loop once no
    cell has run for IDLE_SECONDS: Run All is not slowed by them, and no thread compiles
    beside a cell. Until then the interpreter answers."""
    from xla_explorer import magic

    cell = "%%xla --quiet\n" + SOFTMAX

    async def cells_then_idle():
        assert run(shell, cell)[0].success
        jit = entry_of(shell).jit
        assert not jit._compiling  # not started while cells keep coming
        assert run(shell, cell)[0].success
        assert magics(shell).last.tier is not None  # the interpreter again
        await asyncio.sleep(magic.IDLE_SECONDS)
        for _ in range(200):  # idle: the loop compiles them (a busy machine's timers run late)
            if jit._compiling and jit.wait(timeout=0):
                break
            await asyncio.sleep(0.05)
        assert jit._compiling and jit.wait(timeout=0)
        assert not [t for t in threading.enumerate() if t.name.startswith("xla-explorer")]
        return jit

    jit = asyncio.run(cells_then_idle())
    info = jit.cache_info()
    assert (info.hits, info.misses, len(info.signatures)) == (1, 1, 1)
    shell.user_ns["x"] = x + 1
    assert run(shell, cell)[0].success and magics(shell).last.tier is None
    np.testing.assert_allclose(shell.user_ns["p"], numpy_run(SOFTMAX, x=x + 1)["p"],
                               rtol=1e-6)


def test_a_compile_in_another_thread_is_not_shown_as_the_cells(monkeypatch, tmp_path):
    """A cell's progress line counts what its own thread compiles, not a background
    compile of an earlier program (a tiered call, or a terminal's cell)."""
    from xla_explorer.viz.progress import CompileProgress

    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path))  # a compile, not a load
    shown: list[str] = []
    v = np.linspace(0, 1, 50)
    fast = xe.jit(lambda v: np.sinh(v) * 3 + 1, tiered=True)
    with CompileProgress(shown.append):
        fast(v)  # the interpreter answers; the kernels compile in a thread of their own
        assert fast.last_ran == "interpreter" and fast.wait(timeout=120)
    assert shown == []
    np.testing.assert_allclose(fast(v), np.sinh(v) * 3 + 1, rtol=1e-6)
    assert fast.last_ran == "cpu"


def test_waiting_compiles_go_one_an_idle_moment_the_latest_first(shell, x):
    """Cells edited in a row leave a program each; once idle, the latest compiles first
    and the next waits for another idle moment, so a cell run meanwhile waits for one
    compile at most."""
    cells = ["%%xla --quiet\nu = np.tanh(x) + 1\n", "%%xla --quiet\nu = np.tanh(x) + 2\n"]

    async def edits():
        for cell in cells:
            assert run(shell, cell)[0].success
        older, latest = (magics(shell).cache.cells[(c.split("\n", 1)[1], "cpu", False)].jit
                         for c in cells)
        for _ in range(200):
            await asyncio.sleep(0.05)
            if latest.wait(timeout=0) and latest._compiling:
                break
        assert latest._compiling and not older._compiling  # the latest, alone
        for _ in range(200):
            await asyncio.sleep(0.05)
            if older._compiling and older.wait(timeout=0):
                break
        assert older._compiling and older.wait(timeout=0)
        assert not magics(shell)._idle_work

    asyncio.run(edits())
    assert run(shell, cells[0])[0].success and magics(shell).last.tier is None
    # float32 tanh, a polynomial: a few units in the last place (the magic's check agreed).
    np.testing.assert_allclose(shell.user_ns["u"], np.tanh(x) + 1, rtol=1e-5, atol=1e-6)


def test_idle_work_is_done_a_piece_an_idle_moment_the_latest_first(shell):
    from xla_explorer import magic

    m, done = magics(shell), []

    async def three_pieces():
        loop = asyncio.get_running_loop()
        for name in "abc":
            m._when_idle(lambda name=name: done.append((name, loop.time())))
        m._when_idle(m._idle_work[-1])  # asked again: still once
        await asyncio.sleep(4.5 * magic.IDLE_SECONDS)

    asyncio.run(three_pieces())
    assert [name for name, _ in done] == ["c", "b", "a"]
    assert all(later - earlier >= 0.99 * magic.IDLE_SECONDS
               for (_, earlier), (_, later) in zip(done, done[1:]))


def test_a_compile_that_fails_while_idle_fails_the_next_run_and_changes_nothing(
        shell, x, monkeypatch):
    from xla_explorer.errors import CompileError
    from xla_explorer.runtime.executable import CpuExecutable

    def refuse(self, arrays, outs):
        raise CompileError("Numba could not compile the kernels (made to fail here)",
                           op="numba")

    cell = "%%xla\nw = np.cos(x) * 3\n"
    monkeypatch.setattr(CpuExecutable, "_first_run", refuse)
    assert run(shell, cell)[0].success  # the interpreter's answer: no kernel ran
    answered = shell.user_ns["w"]
    np.testing.assert_allclose(answered, np.cos(x) * 3, rtol=1e-6)
    assert entry_of(shell).jit.wait(timeout=120)  # the compile ran, and failed
    shell.user_ns["x"] = x + 1
    result, out = run(shell, cell)
    assert not result.success and "CompileError: Numba could not compile" in out, out
    assert shell.user_ns["w"] is answered  # the failed run wrote nothing
    monkeypatch.undo()
    result, out = run(shell, cell)  # compiled anew, now that it can be
    assert result.success and magics(shell).last.tier is None, out
    np.testing.assert_allclose(shell.user_ns["w"], np.cos(x + 1) * 3, rtol=1e-5, atol=1e-6)


def test_xla_cache_lists_what_waits_to_compile(shell, x):
    """A program the interpreter answered is listed as waiting (in a kernel, until it is
    idle), then as compiled."""
    async def cells():
        assert run(shell, "%%xla --quiet\n" + SOFTMAX)[0].success
        waiting = run(shell, "%xla_cache")[1]
        for _ in range(200):
            await asyncio.sleep(0.05)
            if entry_of(shell).jit.wait(timeout=0) and entry_of(shell).jit._compiling:
                break
        return waiting, run(shell, "%xla_cache")[1]

    waiting, compiled = asyncio.run(cells())
    assert "1 cell, 0 executables and 1 waiting to compile; 0 hits, 1 miss" in waiting, waiting
    assert "(x: f32[16,40])  waiting to compile" in waiting, waiting
    assert "1 cell, 1 executable; 0 hits, 1 miss" in compiled, compiled
    assert "waiting" not in compiled and "    (x: f32[16,40])\n" in compiled + "\n", compiled
