"""Write extension/test/xla_bundle.json: the explorer's JSON of a softmax compared with XLA
(`ex.compare_xla()`), as the Python side makes it, which the XLA tab's jest test draws
(extension/test/xla_tab.test.ts). tests/viz/test_xla_compare.py checks that the committed
file still has the keys a fresh payload has. Run it again after changing the payload:

    .venv/bin/python scripts/xla_tab_fixture.py
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import xla_explorer as xe
from xla_explorer.viz import mime

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "extension" / "test" / "xla_bundle.json"


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def fixture() -> dict:
    """The payload, with only the first and last stages (the tab reads the last one's graph):
    the file stays small enough to read in a review."""
    x = np.random.default_rng(0).random((4, 8), dtype=np.float32)
    ex = xe.explore(softmax, x, backend="cpu")
    ex.compare_xla(repeat=5)
    data = mime.payload(ex)
    data["stages"] = [data["stages"][0], data["stages"][-1]]
    return data


if __name__ == "__main__":
    # Source paths relative to the repository: the file names no one's checkout.
    text = json.dumps(fixture(), indent=1).replace(f"{ROOT}/", "")
    OUT.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
