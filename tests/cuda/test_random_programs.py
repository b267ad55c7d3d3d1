"""50 random programs from the fuzzer's generator (tests/programs.py) on backend="cuda",
each output judged against eager NumPy as `make fuzz` judges it."""
from __future__ import annotations

import warnings

import pytest

from xla_explorer.backends.cuda import NOT_YET

from ..fuzz import draw_cases, run_case

SEED = 27


@pytest.mark.parametrize("case", draw_cases(50, SEED, kinds=("float", "int")),
                         ids=lambda c: f"program{c.index}-{c.kind}")
def test_random_program_on_cuda(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = run_case(case, ["cuda"], SEED)
    # an op the backend does not compile yet is refused by name (must-compile), never
    # answered wrongly; anything else is a finding
    wrong = [f for f in outcome.findings
             if not (f.status == "error" and any(f.message.startswith(f"CompileError: {op}:")
                                                 for op in NOT_YET))]
    assert not wrong, "\n\n".join(f.snippet for f in wrong)
