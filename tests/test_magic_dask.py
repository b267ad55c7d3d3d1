"""`%%xla --backend dask` on a namespace that holds dask arrays, through a real IPython shell:
the cell traces and runs without computing them, its outputs are bound as lazy dask arrays
(computed when the user asks, then compared with NumPy on the whole arrays), and a failing
cell leaves every name as it was."""
import threading

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.cell.frozen import state_read

from .test_magic import run, shell, user_vars  # noqa: F401  (shell: the fixture)

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

BODY = "e = np.exp(x - x.max(axis=1, keepdims=True))\np = e / e.sum(axis=1, keepdims=True)\n" \
       "col = (p * w).sum(axis=0)\n"


class Counted:
    """A dask array of `data` whose blocks count how often they are computed."""

    def __init__(self, data, chunks):
        self.data, self.calls, self._lock = data, 0, threading.Lock()
        self.array = da.from_array(data, chunks=chunks).map_blocks(self._seen, dtype=data.dtype)

    def _seen(self, block):
        if block.size:  # not Dask's call on an empty block, which learns the dtype
            with self._lock:
                self.calls += 1
        return block


def numpy_cell(x, w) -> dict:
    scope = {"x": x, "w": w}
    exec(BODY, {"np": np}, scope)
    return scope


def test_a_cell_on_dask_arrays_computes_nothing_and_binds_lazy_outputs(shell):  # noqa: F811
    rng = np.random.default_rng(0)
    data, w = rng.standard_normal((400, 16)), rng.standard_normal(16)
    x = Counted(data, (100, 16))
    shell.user_ns.update(x=x.array, w=w, da=da)
    result, out = run(shell, "%%xla --backend dask\n" + BODY)
    assert result.success, out
    assert x.calls == 0  # traced, compiled, the graph built: nothing computed
    ns = shell.user_ns
    assert all(isinstance(ns[n], da.Array) for n in ("e", "p", "col"))
    assert ns["p"].chunks == ((100,) * 4, (16,)) and ns["col"].shape == (16,)
    assert isinstance(ns["_xla"], xe.Exploration) and ns["_xla"].backend == "dask"
    assert "x f64[400,16] (dask, 4 chunks), w f64[16]" in out
    assert "check against eager NumPy: not run, the outputs are lazy" in out
    want = numpy_cell(data, w)
    got = dask.compute(ns["e"], ns["p"], ns["col"], scheduler="sync")
    assert x.calls > 0
    for g, name in zip(got, ("e", "p", "col")):
        np.testing.assert_allclose(g, want[name], rtol=1e-12, err_msg=name)
    # New values of the same shape and chunks: the compiled program again, on them.
    data2 = rng.standard_normal((400, 16))
    x2 = Counted(data2, (100, 16))
    ns["x"] = x2.array
    result, out = run(shell, "%%xla --backend dask\n" + BODY)
    assert result.success and "compile cache: hit" in out, out
    assert x2.calls == 0
    np.testing.assert_allclose(ns["col"].compute(scheduler="sync"), numpy_cell(data2, w)["col"],
                               rtol=1e-12)
    # A dask array is immutable: a name is bound to a new one, lazy too.
    x2.calls = 0
    result, out = run(shell, "%%xla --backend dask\nx = x * 2\n")
    assert result.success, out
    assert ns["x"] is not x2.array and x2.calls == 0
    np.testing.assert_array_equal(ns["x"].compute(scheduler="sync"), data2 * 2)


@pytest.mark.parametrize("line, error, failing, quoted", [
    ("%%xla --backend dask", "CompileError", "u = np.unique(x)", 3),
    ("%%xla --backend dask", "CellError", "x += 1", 3),  # dask arrays are immutable
    ("%%xla --backend dask", "CellError", "x[0] = 1", 3),
    ("%%xla --backend dask", "NameError", "q = x + undefined_name", 3),
    ("%%xla", "CellError", "y = x * 2", 2),  # another backend would compute x: its first read
])
def test_a_failing_dask_cell_leaves_the_namespace_exactly_as_it_was(shell, line, error,  # noqa: F811
                                                                    failing, quoted):
    x = Counted(np.arange(40.0).reshape(8, 5), (2, 5))
    shell.user_ns.update(x=x.array)
    assert run(shell, "%%xla --backend dask\ny = x * 2\n")[0].success  # _xla and y exist
    before = {k: (v, getattr(v, "name", None)) for k, v in user_vars(shell).items()}
    cell = f"z = x + 1\n{failing}\n"
    result, out = run(shell, f"{line}\n{cell}")
    assert not result.success
    text = cell.splitlines()[quoted - 2]
    assert out.startswith(f"{error}: ") and f"line {quoted} of the cell:\n    {text}" in out, out
    after = user_vars(shell)
    assert after.keys() == before.keys()
    for name, (obj, token) in before.items():
        assert after[name] is obj and getattr(obj, "name", None) == token, name
    assert x.calls == 0


def test_a_dask_array_a_helper_reads_is_keyed_by_its_token_not_computed():
    """The state a cell's helper reads (cell/frozen.py) digests NumPy arrays; a dask array's
    key is its name, which changes with its content (also when set in place, which keeps
    the object), so nothing is computed for it."""
    x = Counted(np.ones((4, 2)), (2, 2))
    scope = {"g": x.array}
    exec("def helper(v):\n    return v + g\n", scope)
    key = state_read([scope["helper"]])
    assert state_read([scope["helper"]]) == key
    scope["g"][0, 0] = 5.0  # Dask's __setitem__: the same object, a new graph
    changed = state_read([scope["helper"]])
    assert changed != key
    scope["g"] = scope["g"] + 1
    assert state_read([scope["helper"]]) not in (key, changed)
    assert x.calls == 0
