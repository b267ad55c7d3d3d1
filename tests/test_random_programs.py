"""Random NumPy programs of 1 to 30 ops: trace, run the pipeline, interpret, compare with NumPy.

The programs, their op tables and strategies live in tests/programs.py (shared with the fuzzer,
tests/fuzz.py); they are re-exported here for the tests that import them from this module.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import xla_explorer as xe
from xla_explorer.api.checking import computed_precision, judge

from .programs import (BEFORE_LINALG, BINARY, INT_BINARY, INT_OPS, INT_UNARY,  # noqa: F401
                       OPS, REDUCE, UNARY, build, describe, int_programs, programs)

# A hundred random programs of each kind in `make test`, hundreds in `make test-deep` (and
# `make fuzz` runs more).
pytestmark = pytest.mark.slow
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=100, suppress_health_check=_HEALTH)
@given(programs(ops=BEFORE_LINALG))
def test_random_program_matches_numpy(case):
    check_random_program(case)


@pytest.mark.deep
@settings(max_examples=500, suppress_health_check=_HEALTH)
@given(programs())
def test_hundreds_of_random_programs_match_numpy(case):
    check_random_program(case)


def check_random_program(case):
    inputs, steps, n_out = case
    program = build(steps, n_out)
    with np.errstate(all="ignore"):
        want = program(*[x.copy() for x in inputs])
        ex = xe.explore(program, *inputs)
        got = ex.run(*[x.copy() for x in inputs])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w), describe(steps)
        assert np.result_type(g) == np.result_type(w), describe(steps)
    # A float64 output may carry float32 rounding from a float32 step (an input, or a cast
    # inside: NumPy's float32 cosh and ours differ by an ulp, which then converts exactly).
    # NumPy adds float16 rows one at a time, rounding each partial sum to float16, so an
    # axis-0 sum may be NumPy's error, not ours: the float64 run referees such outputs.
    for check in judge(program, inputs, got, want, computed_precision(ex.module)):
        assert check.ok, f"{describe(steps)}\n{check}\n{ex.hlo()}"
    # Every stage still verifies and prints text that parses back to itself.
    for stage in ex.stages:
        text = stage.module.to_text()
        assert xe.parse_hlo(text).to_text() == text
        xe.verify(stage.module)


@settings(max_examples=60, suppress_health_check=_HEALTH)
@given(int_programs())
def test_random_integer_program_matches_numpy(case):
    check_integer_program(case)


@pytest.mark.deep
@settings(max_examples=200, suppress_health_check=_HEALTH)
@given(int_programs())
def test_hundreds_of_random_integer_programs_match_numpy(case):
    check_integer_program(case)


def check_integer_program(case):
    inputs, steps = case

    def program(*xs):
        pool = list(xs)
        for op_index, a, b in steps:
            kind, _, fn = INT_OPS[op_index]
            x, y = pool[a % len(pool)], pool[b % len(pool)]
            pool.append(fn(x, y) if kind == "b" else fn(x))
        return pool[-1]

    with np.errstate(all="ignore"):
        want = program(*[x.copy() for x in inputs])
        got = xe.explore(program, *inputs).run(*[x.copy() for x in inputs])
    names = " ; ".join(INT_OPS[i][1] for i, _, _ in steps)
    assert got.dtype == want.dtype and got.shape == want.shape, names
    np.testing.assert_array_equal(got, want, err_msg=names)
