"""50 random programs (20 in `make test`, the rest in test-deep) from the fuzzer's generator (tests/programs.py) on backend="cuda",
each output judged against eager NumPy as `make fuzz` judges it."""
from __future__ import annotations

import warnings

import pytest

from ..fuzz import draw_cases, run_case
from ..programs import BEFORE_LINALG

SEED = 27
pytestmark = pytest.mark.slow  # fifty random programs compiled: `make test`, not test-fast


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=[] if c.index < 20 else [pytest.mark.deep],
                 id=f"program{c.index}-{c.kind}")
    # (np.linalg's library calls left out: the cuda backend refuses them by name)
    for c in draw_cases(50, SEED, kinds=("float", "int"), ops=BEFORE_LINALG)])
def test_random_program_on_cuda(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = run_case(case, ["cuda"], SEED)
    # A refusal is the backend's stated limit (no while loops on cuda: np.gcd's loop).
    bad = [f for f in outcome.findings if f.status != "refused"]
    assert not bad, "\n\n".join(f.snippet for f in bad)
