"""State a cell reaches through the functions and methods it calls (`self.w`, a helper's global)
is frozen into the compiled program at the trace: a change to it compiles the cell again, with
the check (`%%xla`) or without it (`--quiet`), and a mismatch it causes where the cell cannot
see the change says so. Every answer is compared with NumPy's run of the same code."""
import builtins
import types

import numpy as np
import pytest

from xla_explorer.cell import CellCache, run_cell
from xla_explorer.errors import MismatchError


class Scaler:
    def __init__(self, w):
        self.w = w
        self.cfg = types.SimpleNamespace(bias=0.0)

    def apply(self, x):
        return x * self.w + self.cfg.bias

    def twice(self, x):
        return self.apply(x) * 2  # a method of self, read through it


def want(m, x, method="apply"):
    return getattr(m, method)(x)


@pytest.mark.parametrize("method", ["apply", "twice"])
def test_an_attribute_a_method_reads_is_read_again_with_or_without_the_check(method):
    # --quiet once returned [0, 1, 2] after m.w was rebound to 2s (NumPy: [0, 2, 4]); with
    # the check it was a MismatchError that spoke of argsort ties.
    x = np.arange(3.0)
    m = Scaler(np.ones(3))
    ns = {"__builtins__": builtins, "np": np, "m": m, "x": x}
    cache = CellCache()
    cell = f"y = m.{method}(x)\n"
    for check in (False, True):
        m.w = np.ones(3)
        run_cell(cell, ns, backend="cpu", cache=cache, check=check)
        np.testing.assert_array_equal(ns["y"], want(m, x, method))
        m.w = np.full(3, 2.0)  # rebound
        run_cell(cell, ns, backend="cpu", cache=cache, check=check)
        np.testing.assert_array_equal(ns["y"], want(m, x, method))
        m.w[:] = 3.0  # changed in place
        run_cell(cell, ns, backend="cpu", cache=cache, check=check)
        np.testing.assert_array_equal(ns["y"], want(m, x, method))
        m.cfg.bias = 0.5  # a number on an object the method reaches
        run_cell(cell, ns, backend="cpu", cache=cache, check=check)
        np.testing.assert_array_equal(ns["y"], want(m, x, method))
        m.cfg.bias = 0.0


def test_an_unchanged_state_is_still_a_cache_hit():
    m, x = Scaler(np.ones(3)), np.arange(3.0)
    ns = {"__builtins__": builtins, "np": np, "m": m, "x": x}
    cache = CellCache()
    run_cell("y = m.apply(x)\n", ns, backend="interpreter", cache=cache, check=False)
    assert run_cell("y = m.apply(x)\n", ns, backend="interpreter", cache=cache,
                    check=False).hit


def test_a_mismatch_from_state_frozen_at_the_trace_says_so():
    # A module's attribute is not followed (np is not state): a change to it is not seen
    # before the run, and the check's mismatch names the frozen state, not argsort ties.
    cfg = types.ModuleType("cfg")
    cfg.w = np.ones(3)
    exec("import numpy as np\ndef scale(x):\n    return x * cfg.w\n", vars(cfg))
    cfg.cfg = cfg
    x = np.arange(3.0)
    ns = {"__builtins__": builtins, "np": np, "cfg": cfg, "x": x}
    cache = CellCache()
    run_cell("y = cfg.scale(x)\n", ns, backend="cpu", cache=cache)
    cfg.w = np.full(3, 2.0)
    with pytest.raises(MismatchError) as info:
        run_cell("y = cfg.scale(x)\n", ns, backend="cpu", cache=cache)
    text = str(info.value)
    assert "froze into the program" in text and "argsort" not in text, text
    np.testing.assert_array_equal(ns["y"], np.arange(3.0))  # nothing written
    run_cell("y = cfg.scale(x)\n", ns, backend="cpu", cache=cache)  # compiled anew
    np.testing.assert_array_equal(ns["y"], cfg.scale(x))

