"""cell.run_cell without IPython: a namespace dict in, the names written back out."""
import builtins
import contextlib

import numpy as np
import pytest

from xla_explorer.cell import CellCache, run_cell


def namespace(**values) -> dict:
    """A notebook's namespace: builtins, NumPy as np, and the given values."""
    return {"__builtins__": builtins, "np": np, **values}


@contextlib.contextmanager
def counting_compiled_runs(executable):
    """Count the calls of the compiled program (its class's __call__ and run_arrays, the
    outermost only: one may call the other)."""
    cls = type(executable)
    calls = {"runs": 0, "depth": 0}
    saved = {name: cls.__dict__.get(name) for name in ("__call__", "run_arrays")}

    def counted(method):
        def wrapper(self, *args, **kwargs):
            calls["runs"] += calls["depth"] == 0
            calls["depth"] += 1
            try:
                return method(self, *args, **kwargs)
            finally:
                calls["depth"] -= 1
        return wrapper

    for name in saved:
        setattr(cls, name, counted(getattr(cls, name)))
    try:
        yield calls
    finally:
        for name, method in saved.items():
            if method is None:
                delattr(cls, name)
            else:
                setattr(cls, name, method)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_a_checked_cell_runs_its_compiled_program_once(backend, rng):
    cell = "x += 1\nz = np.tanh(x) * y\ns = z.sum()\n"
    x, y = rng.standard_normal(16), rng.standard_normal(16)
    ns = namespace(x=x.copy(), y=y)
    cache = CellCache()
    run_cell(cell, ns, backend=backend, cache=cache)  # compiles
    for _ in range(2):  # a hit: the check judges the run the user gets
        want_x = ns["x"] + 1
        with counting_compiled_runs(ns["_xla"].executable) as calls:
            done = run_cell(cell, ns, backend=backend, cache=cache)
        assert done.hit and done.check.ok
        assert calls["runs"] == 1
        np.testing.assert_allclose(ns["x"], want_x)  # updated once, not twice
        np.testing.assert_allclose(ns["z"], np.tanh(want_x) * y, rtol=1e-12)
        assert [c.name for c in done.check.outputs] == ["z", "s", "x (in place)"]


def test_the_check_judges_what_was_written(rng, monkeypatch):
    # A compiled run that is wrong only on its second call would pass a check that runs the
    # program again; judged on the run the user gets, it is caught, and nothing is written.
    from xla_explorer.errors import MismatchError

    x = rng.standard_normal(8)
    ns = namespace(x=x)
    cache = CellCache()
    run_cell("z = x * 2\n", ns, backend="interpreter", cache=cache)
    cls = type(ns["_xla"].executable)
    right = cls.__call__
    calls = []

    def wrong_first(self, *args):
        calls.append(1)
        out = right(self, *args)
        return [o + 1 for o in out] if len(calls) == 1 else out

    monkeypatch.setattr(cls, "__call__", wrong_first)
    before = ns["z"]
    with pytest.raises(MismatchError):
        run_cell("z = x * 2\n", ns, backend="interpreter", cache=cache)
    assert ns["z"] is before
    np.testing.assert_array_equal(before, x * 2)
