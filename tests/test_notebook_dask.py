"""notebooks/12_dask, as the session executed it: the partitioning stage's marks, the
answers on a LocalCluster against NumPy, and a data-parallel training step that learns."""
from __future__ import annotations

import re

import pytest

from .test_notebooks import check_common, find, shows_explorer, text_of

# One execution of the notebooks serves all of these: one xdist worker.
pytestmark = pytest.mark.xdist_group("notebooks")


@pytest.mark.slow  # executing the notebooks
def test_12_dask(executed):
    nb = executed.notebook("12_dask")
    check_common(nb)
    assert "2 workers, one thread each" in text_of(find(nb, "import dask.array as da"))
    notes = text_of(find(nb, "rng = np.random.default_rng(0)"))
    assert re.search(r"- add_reduce_fusion\.\d+: partial-reduce\. .*all-reduce", notes)
    assert re.search(r"Dask graph: \d+ tasks over 4 chunks", notes)
    assert shows_explorer(find(nb, "ex", exact=True))
    assert text_of(find(nb, "lazy = ex.run(x, y, z)")).rstrip().endswith("True")
    steps = text_of(find(nb, "a_np = rng.standard_normal((600, 8)) + 3.0"))
    assert re.search(r"partial-reduce, combine\. \d steps", steps), steps
    assert "mean and variance agree with NumPy: True" in steps
    cell = text_of(find(nb, "%%xla --backend dask"))
    assert "x f64[4000,100] (dask, 4 chunks)" in cell and "outputs are lazy" in cell, cell
    lazy = text_of(find(nb, 'print(type(p).__name__, "in chunks of", p.chunks[0])'))
    assert "Array in chunks of (1000, 1000, 1000, 1000)" in lazy, lazy
    checks = lazy.splitlines()[2:]  # _xla.check(): one line per output
    assert "rows sum to 1: True" in lazy and len(checks) == 2, lazy
    assert all(line.rstrip().endswith(" ok") for line in checks), lazy
    marks = text_of(find(nb, "F32 = np.float32"))
    for mark in ("'per-chunk'", "'partial-reduce'", "'replicated'"):
        assert mark in marks, marks
    training = text_of(find(nb, "losses = []"))
    assert "first step agrees with NumPy: True" in training
    losses = [float(v) for v in re.search(r"loss (.*)", training).group(1).split(" -> ")]
    assert len(losses) == 5 and losses[-1] < losses[0]
