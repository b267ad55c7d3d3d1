"""notebooks/11_ahead_of_time, as the session executed it: the trained classifier's forward
pass exported, run by a Python that has NumPy alone, with the same classes as NumPy's."""
from __future__ import annotations

import re

import pytest

from .test_notebooks import check_common, find, text_of

# One execution of the notebooks serves all of these: one xdist worker.
pytestmark = pytest.mark.xdist_group("notebooks")


@pytest.mark.slow  # executing the notebooks
def test_11_ahead_of_time(executed):
    nb = executed.notebook("11_ahead_of_time")
    check_common(nb)
    trained = float(re.search(r"trained: loss ([\d.]+)", text_of(find(nb, "N, F, HIDDEN"))
                              ).group(1))
    assert trained < 1.386  # below chance's cross-entropy, log(4)
    built = text_of(find(nb, "def predict(batch)"))
    assert re.search(r"classifier\.cpython-[\w-]+\.so: \d+ KiB, built in", built)
    stub = text_of(find(nb, "stub = exported.stub.read_text()"))
    assert "def run(batch: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]" in stub
    assert "batch: float32[256, 20]" in stub and "Needs only NumPy" in stub
    child = text_of(find(nb, "python = numpy_only_python("))
    assert "toolchain modules imported by the child: []" in child
    assert "the same classes as NumPy's forward pass: True" in child
    accuracy = float(re.search(r"training accuracy: ([\d.]+)%", child).group(1))
    assert accuracy > 50  # four classes: chance is 25%
    refused = text_of(find(nb, "module = exported.load()"))
    assert "argument batch must be a C-contiguous float32 array of shape (256, 20)" in refused
    assert "shape (100, 20)" in refused
    weighs = text_of(find(nb, "def tree_bytes(name)"))
    smaller = int(re.search(r"exported +[\d.]+ MiB: (\d+)x smaller", weighs).group(1))
    assert smaller > 10
    costs = text_of(find(nb, "jitted = xe.jit(predict)"))
    assert re.search(r"exported +[\d.]+ us per call", costs)
    assert re.search(r"xe\.jit +[\d.]+ us per call", costs)
