"""The kernels compile for a real GPU: tests/cuda/ptx_check.py, in a process of its own
without the simulator, compiles the CUDA kernels of eighteen programs (loops, row fusions (a block or a warp per row),
full, one-row (a cooperative grid), column and argmax reductions, integer division, saturating converts, float16, NaN
max, data movement, a product, sorts, scans, a scatter, reductions over mixed axes) to PTX for sm_90 with NVVM. That needs the CUDA toolkit's NVVM but no
GPU; `python -m tests.cuda.ptx_check --records` does the same for every op record."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cuda_home() -> str | None:
    for home in [os.environ.get("CUDA_HOME"), *sorted(glob.glob("/usr/local/cuda*"))]:
        if home and glob.glob(os.path.join(home, "**", "libnvvm.so*"), recursive=True):
            return home
    return None


@pytest.mark.slow  # a subprocess that imports numba.cuda and runs NVVM (about 10 s)
def test_kernels_compile_to_ptx_for_a_real_gpu():
    home = _cuda_home()
    if home is None:
        pytest.skip("the CUDA toolkit's NVVM is not installed here")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["CUDA_HOME"] = home
    proc = subprocess.run([sys.executable, "-m", "tests.cuda.ptx_check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len([ln for ln in lines if ln.startswith("OK ")]) >= 21, proc.stdout
