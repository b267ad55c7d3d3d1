"""notebooks/09_gpu, as the session executed it: on the GPU where there is one, else under
Numba's CUDA simulator, which its first cell turns on; it shows what its text says it shows."""
from __future__ import annotations

import re

import pytest

from .test_notebooks import check_common, find, text_of


# One execution of the notebooks serves all of these: one xdist worker.
pytestmark = pytest.mark.xdist_group("notebooks")


@pytest.mark.slow  # executing the notebooks
def test_09_gpu(executed):
    nb = executed.notebook("09_gpu")
    check_common(nb)
    first = text_of(find(nb, "import ctypes.util"))
    assert "simulator" in first or "kernels run on the GPU" in first
    compare = text_of(find(nb, "%load_ext xla_explorer"))
    assert "same HLO after every pass: True" in compare
    assert re.search(r"kernels: \['row_fusion\.\d+'\]", compare)
    assert "ok" in compare
    source = text_of(find(nb, "(name, source), = on_gpu.kernels.items()"))
    assert source.startswith("# launch: 6 x 64 (blocks x threads), row kernel: one block per "
                             "row: 6 rows of 40 elements")
    assert "shfl_down(" in source and "cuda.shared.array" in source
    shapes = text_of(find(nb, "v = rng.standard_normal(3000)"))
    assert shapes.count(": ok") == 3
    assert "full reduction of 3000 elements" in shapes and "column kernel" in shapes
    assert "product kernel" in shapes
    traffic = text_of(find(nb, "t = on_gpu.traffic"))
    # f32[6,40] is 960 B: the fused kernel reads it once and writes the result once
    assert "fused 1,920 B in 1 kernel" in traffic
    assert re.search(r"eager moves \d+\.\dx the bytes", traffic)
    bench = text_of(find(nb, "print(on_gpu.bench("))
    assert "compiled kernels" in bench and "transfers (host<->device)" in bench
    assert "float32 (6, 40) True" in text_of(find(nb, "print(y.dtype"))
