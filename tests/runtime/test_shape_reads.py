"""A trace that reads the shape of a value-dependent result (len(np.unique(x)), a boolean
mask's .size) as a Python value is right only for that shape, even when nothing else uses the
result: every call must compute it and check its shape, and a new shape must run a program
traced for it. Compared with NumPy: values, dtype and Python type."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import BACKENDS
from xla_explorer.trace.tracer import trace

FEW = np.array([1.0, 1, 1, 1])  # one distinct value, nothing above 1.5, everything above 0
MANY = np.array([1.0, 2, 3, 4])  # four distinct values, three above 1.5
NEGATIVE = np.array([-1.0, -2, -3])  # an empty mask for x > 0
MIXED = np.array([1.0, -2, 3])


def times_len(x):
    return x * len(np.unique(x))


def times_size(x):
    return x * np.unique(x).size


def mean_over_distinct(x):
    u = np.unique(x)
    return x.sum() / len(u)


def zeros_of_len(x):
    return np.zeros(len(np.unique(x)))  # the output's shape is the length read


def len_of_mask(x):
    return len(x[x > 1.5])  # a Python int out


def times_len_of_mask(x):
    return x * len(x[x > 1.5])


def branch_on_len(x):
    u = np.unique(x)
    if len(u) > 2:
        return x * 2
    return x - 1


def argmax_or_minus_one(x):
    sel = x[x > 0]
    return np.argmax(sel) if sel.size else -1  # np.int64, or the Python int -1


def through_numpy_shape(x):
    return x * np.shape(np.unique(x))[0]


def through_zeros_like(x):
    return x + np.zeros_like(np.unique(x)).size


def through_a_derived_value(x):
    return x * len(np.unique(x) * 2)  # the product's shape is the unique's


def through_nonzero(x):
    return x * len(np.nonzero(x > 1.5)[0])


def through_iteration(x):
    return x * sum(1 for _ in np.unique(x))


def through_a_folded_comparison(x):
    return (np.unique(x) < 2**70).sum()  # every element is below: a constant of u's shape


PROGRAMS = [
    (times_len, FEW, MANY),
    (times_size, FEW, MANY),
    (mean_over_distinct, FEW, MANY),
    (zeros_of_len, FEW, MANY),
    (len_of_mask, FEW, MANY),
    (times_len_of_mask, FEW, MANY),
    (branch_on_len, FEW, MANY),
    (argmax_or_minus_one, NEGATIVE, MIXED),
    (through_numpy_shape, FEW, MANY),
    (through_zeros_like, FEW, MANY),
    (through_a_derived_value, FEW, MANY),
    (through_nonzero, FEW, MANY),
    (through_iteration, FEW, MANY),
    (through_a_folded_comparison, FEW.astype(np.int64), MANY.astype(np.int64)),
]
IDS = [f.__name__ for f, _, _ in PROGRAMS]


def assert_numpy(got, want):
    assert type(got) is type(want), (got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
@pytest.mark.parametrize("first", [0, 1], ids=["small-first", "large-first"])
def test_a_shape_read_is_checked_on_every_call(program, first, backend):
    f, a, b = program
    inputs = (a, b) if first == 0 else (b, a)
    j = xe.jit(f, backend=backend, autocluster=True)
    for x in inputs + inputs:  # the second round runs the programs traced in the first
        assert_numpy(j(x.copy()), f(x.copy()))
    assert j.cache_info().misses == 1  # one signature: the new shape is a variant of it


@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_the_interpreter_refuses_a_program_traced_for_other_values(program):
    f, a, b = program
    ex = xe.explore(f, a.copy(), backend="interpreter")  # runs the custom-calls itself
    assert_numpy(ex.run(a.copy()), f(a.copy()))
    with pytest.raises(TypeError, match="traced for other values"):
        ex.run(b.copy())


def test_the_length_read_is_an_output_that_the_caller_drops():
    traced = trace(times_len, (FEW,), autocluster=True)
    root = traced.module.entry.root
    assert traced.num_outputs == 1 and len(root.operands) == 2
    assert root.operands[1].attr("custom_call_target") == "numpy.unique"
    ex = xe.explore(times_len, FEW, backend="cpu", autocluster=True)
    assert [e.op for e in ex.clusters.eager] == ["numpy.unique"]  # DCE kept it
    # Shapes that no value decides need no check; an np.unique nobody reads is still dead.
    assert len(trace(lambda x: x * len(x), (FEW,)).module.entry.root.operands) == 1
    assert len(trace(lambda x: x * len(np.sort(x)), (FEW,)).module.entry.root.operands) == 1
    unread = xe.explore(lambda x: (np.unique(x), x * 2)[1], FEW, autocluster=True)
    assert "custom-call" not in unread.hlo()
