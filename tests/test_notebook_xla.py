"""notebooks/10_xla_side_by_side, as the session executed it: a softmax compiled by real XLA
(XLA:CPU from jax) at two sizes beside ours; it shows what its text says it shows. XLA's
kernels are counted here from its printed HLO with a regex, not through our parser."""
from __future__ import annotations

import re

import pytest

from .test_notebooks import EXPLORER, check_common, find, text_of

# One execution of the notebooks serves all of these: one xdist worker.
pytestmark = pytest.mark.xdist_group("notebooks")


@pytest.mark.slow  # executing the notebooks
def test_10_xla_side_by_side(executed):
    nb = executed.notebook("10_xla_side_by_side")
    check_common(nb)
    ours = text_of(find(nb, "import numpy as np"))
    assert len(re.findall(r"\['row_fusion\.\d+ \(row fusion\)", ours)) == 2  # one kernel each
    small = text_of(find(nb, "c_small = ex_small.compare_xla("))
    entry = text_of(find(nb, "entry = c_small.hlo["))
    # The table's XLA kernels are the fusions XLA's entry launches, in its order.
    launched = re.findall(r"^(?:ROOT )?%(\S+) = \S+ fusion\(", entry, re.M)
    rows = [line.split()[0] for line in small.splitlines()[1:len(launched) + 1]]
    assert rows == launched and len(launched) > 2
    assert f"XLA: {len(launched)} kernels" in small and "here: 1 kernel (1 row fusion)" in small
    assert "is not fused into its consumer" in small
    # The small size splits its reductions into reduce-window and reduce.
    assert "reduce-window instructions; the first: {size=1x32" in entry
    large = text_of(find(nb, "c_large = ex_large.compare_xla("))
    counts = text_of(find(nb, "for label, c in ((\"16 x 64\", c_small), (\"64 x 256\", c_large)):\n"
                              "    kinds"))
    m = re.findall(r"XLA (\d+) kernels", counts)
    assert len(m) == 2 and m[0] == str(len(launched)) and m[0] != m[1]
    assert "kCustom (YNNPACK)" in large and "kCustom (YNNPACK)" in counts
    times = text_of(find(nb, "for label, c in ((\"16 x 64\", c_small), (\"64 x 256\", c_large)):\n"
                             "    print("))
    assert len(re.findall(r"XLA [\d.]+ µs \(its executable alone [\d.]+ µs\), ours [\d.]+ µs",
                          times)) == 2
    errors = [float(e) for e in re.findall(r"differ by at most (\S+?)$", times, re.M)]
    assert len(errors) == 2 and max(errors) < 1e-5
    shown = find(nb, "ex_small", exact=True)
    (data,) = [o.data[EXPLORER] for o in shown.outputs if EXPLORER in o.get("data", {})]
    comparison = data["xla"]["comparison"]  # saved in the output: the tab draws it offline
    assert [k["name"] for k in comparison["kernels"]] == launched
    replayed = text_of(find(nb, "import subprocess"))
    assert "inputs: saved" in replayed and "all outputs agree" in replayed
    assert replayed.rstrip().endswith("exit status: 0")
