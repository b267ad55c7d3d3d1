"""benchmarks/gpu.py at toy sizes under the simulator (or on a GPU where there is one), so
that the script keeps working on machines without a GPU."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.deep  # the benchmark script's run, under the simulator
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_gpu_benchmark_runs_at_tiny_sizes(capsys):
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "benchmarks" / "gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.main(["--tiny", "--repeat", "1"])
    out = capsys.readouterr().out
    assert out.startswith("device: ")
    names = [r["program"] for r in rows]
    assert names == ["sum_xyz", "gelu", "softmax", "layernorm", "mean_var", "chain50",
                     "dense_relu"]
    # bytes moved are computed, not measured: sum(x + y*z) of 1000 float32 reads 12000 B
    # and writes the 4-byte sum, in one kernel
    first = rows[0]
    assert (first["moved_bytes"], first["kernels"]) == (12004, 1)
    assert all(r["ours_s"] > 0 for r in rows)
