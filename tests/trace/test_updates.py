"""The in-place refusal (trace/updates.py): the updates NumPy makes through shared memory or
refuses on a read-only array, which a compiled program cannot make the same way."""
import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.cell import CellCache, CellError, run_cell
from xla_explorer.errors import TraceError
from xla_explorer.trace.updates import READ_ONLY, pass_a_copy, refuse_updates, update_conflict


def test_update_conflict_finds_views_the_same_array_and_read_only_arrays():
    b = np.arange(6.0)
    assert update_conflict([b, np.arange(6.0)], 0) is None
    assert update_conflict([b, b[2:]], 0) == 1
    assert update_conflict([b[::2], 3.0, b], 0) == 2
    assert update_conflict([b[::2], b[1::2]], 0) is None  # interleaved, no element shared
    ro = np.ones(3)
    ro.setflags(write=False)
    assert update_conflict([ro], 0) == READ_ONLY


def test_refuse_updates_names_the_other_input_the_line_and_the_advice():
    b = np.arange(6.0)
    with pytest.raises(CellError) as info:
        refuse_updates([b, b[1:]], {0: ("f.py", 7)}, ["x", "v"], error=CellError,
                       advice=pass_a_copy)
    e = info.value
    assert e.message.startswith("x is updated in place and shares memory with v")
    assert (e.op, e.source_file, e.source_line) == ("x (in place)", "f.py", 7)
    assert e.hint == "Pass a copy: v.copy()."
    refuse_updates([b, np.ones(5)], {0: ("f.py", 7)}, ["x", "v"], error=CellError,
                   advice=pass_a_copy)  # separate arrays: nothing to refuse


def updates_x(x, v):
    x += 1
    return v * 2


UPDATE_LINE = updates_x.__code__.co_firstlineno + 1


@pytest.mark.parametrize("case", ["shared", "read-only"])
def test_jit_and_a_cell_give_the_same_refusal(case):
    b = np.arange(8.0)
    if case == "read-only":
        b.setflags(write=False)
    x, v = (b, b[:4]) if case == "shared" else (b, np.arange(4.0))
    with pytest.raises(ValueError) as jitted:
        xe.jit(updates_x)(x, v)
    with pytest.raises(CellError) as cell:
        run_cell("x += 1\nz = v * 2\n", {"np": np, "x": x, "v": v}, cache=CellCache())
    for e, line in ((jitted.value, UPDATE_LINE), (cell.value, 2)):
        assert isinstance(e, TraceError) and e.source_line == line
        assert e.op == "x (in place)"
    assert jitted.value.message == cell.value.message
    np.testing.assert_array_equal(b, np.arange(8.0))  # neither wrote anything


def test_tracing_reads_the_arguments_in_place_and_copies_them_only_to_update_them():
    # The trace's values are read-only views of the caller's arrays (no copy of the inputs
    # on a first call); a function that updates an argument is traced again from copies.
    # Either way the caller's arrays are left as they were and the answers are NumPy's.
    from xla_explorer.trace.tracer import trace

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    before = x.copy()
    reads = trace(lambda x: (x * 2).sum(axis=0), (x,))
    assert np.shares_memory(reads.eager_args[0], x) and not reads.eager_args[0].flags.writeable
    np.testing.assert_array_equal(reads.eager_outputs[0], (before * 2).sum(axis=0))

    calls = []

    def update(x):
        calls.append(1)
        x[1] += 5
        y = x[:, ::2]
        y *= 2  # through a view of the argument
        return x.sum()

    updated = trace(update, (x,))
    assert len(calls) == 2  # traced again, from copies
    np.testing.assert_array_equal(x, before)
    want = before.copy()
    want_sum = update(want)
    assert not np.shares_memory(updated.eager_args[0], x)
    np.testing.assert_array_equal(updated.eager_args[0], want)
    assert updated.eager_outputs[0] == want_sum and updated.aliases
    # A write NumPy refuses too is refused with its own message, from the copies' trace.
    with pytest.raises(xe.TraceError, match="np.broadcast_to"):
        trace(lambda x: np.broadcast_to(x[0], (3, 4)).__setitem__(0, 1.0), (x,))
