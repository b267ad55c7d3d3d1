"""The shape and linear-algebra functions composed of existing ops at trace time (np.fliplr,
np.rot90, np.atleast_2d, np.repeat ...): NumPy's view semantics where NumPy returns a view,
and the forms not supported are refused by name. Values, types and shapes are checked against
NumPy by their records (`COMPOSED_SHAPES` in op_records.py)."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe

X = np.arange(12.0).reshape(3, 4)


def same_as_numpy(f, *args):
    want = f(*(a.copy() for a in args))
    got = xe.explore(f, *(a.copy() for a in args)).run(*(a.copy() for a in args))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype


def writes_through_one_op_views(x):
    np.fliplr(x)[0] = -1  # x[0, ::-1]
    u = np.flipud(x)
    u[0, 1] = -2  # x[-1, 1]
    np.rot90(x, 2)[1, 1] += 100  # x[-2, -2]
    np.atleast_2d(x[0])[0, 3] = -3
    np.atleast_3d(x)[1, 0, 0] = -4
    np.atleast_1d(x)[2, 2] = -5
    np.rot90(x, 4)[2, 3] = -6
    return (x,)


def reads_of_views_see_later_writes(x):
    f, r, a = np.fliplr(x), np.rot90(x), np.atleast_3d(x)
    x[0, 0] = 77
    return f, r, a


def test_writes_through_the_views_reach_the_base():
    same_as_numpy(writes_through_one_op_views, X)


def test_views_are_rederived_after_the_base_changes():
    same_as_numpy(reads_of_views_see_later_writes, X)


def test_results_numpy_copies_are_not_views():
    def f(x):
        t = np.tile(x, 2)
        t[0, 0] = -1
        c = np.column_stack([x[:, 0], x[:, 1]])
        c[...] = 0
        return x, t, c
    same_as_numpy(f, X)


def test_a_write_through_a_quarter_turn_is_refused_not_lost():
    # np.rot90(k=1) is a flip and a transpose, two ops, and only a view made by one op is
    # written back: the write is refused (NumPy would make it) rather than lost.
    def f(x):
        r = np.rot90(x)
        r[0] = 0
        return x
    with pytest.raises(xe.TraceError, match="view made in several steps"):
        xe.explore(f, X)


@pytest.mark.parametrize("f, what", [
    (lambda x: np.repeat(x, [1, 2, 1], axis=0), "np.repeat"),
    (lambda x: np.atleast_2d(x, x), "np.atleast_2d"),
    (lambda x: np.trace(x[None]), "np.trace"),
    (lambda x: np.cross(x[:, :3], x[:, :2]), "np.cross"),
    (lambda x: np.meshgrid(x[0], x[1], copy=False), "np.meshgrid"),
    (lambda x: np.linalg.norm(x[0], ord=3), "np.linalg.norm"),
    (lambda x: np.linalg.norm(x, ord=-3, axis=1), "np.linalg.norm"),
])
def test_unsupported_forms_are_refused_by_name(f, what):
    with pytest.raises(xe.UnsupportedOpError, match=what.replace(".", r"\.")):
        xe.explore(f, X)


def test_cpu_backend_agrees_on_a_composition():
    def f(x, y):
        return (np.tril(x, -1) + np.triu(x, 1), np.kron(np.diag(y), np.outer(y, y)),
                np.roll(np.repeat(x, 2, axis=1), 3), np.tensordot(x, x, ([0], [0])))
    x, y = X, np.arange(3.0)
    got = xe.explore(f, x, y, backend="cpu").run(x, y)
    for g, w in zip(got, f(x, y)):
        np.testing.assert_array_equal(g, w)


# -- np.split's pieces and np.broadcast_arrays' results are views, as NumPy makes them --------


def writes_through_split_pieces(x):
    top, bottom = np.split(x, [1])
    top[0, 1] = -1  # x[0, 1]
    left, right = np.array_split(x, 2, axis=1)
    right[2, 0] += 50  # x[2, 2]
    pieces = np.hsplit(x, 4)
    pieces[3][1] = -3  # x[1, 3]
    return x, top, bottom


def split_pieces_see_later_writes(x):
    parts = np.split(x, 3)
    a, b = np.broadcast_arrays(x[0], x[:, :1])
    x[1, 1] = 99
    return parts, a, b


def test_split_pieces_write_back_into_the_array():
    same_as_numpy(writes_through_split_pieces, X)


def test_split_pieces_and_broadcasts_are_rederived_after_a_write():
    got = xe.explore(split_pieces_see_later_writes, X.copy()).run(X.copy())
    want = split_pieces_see_later_writes(X.copy())
    assert type(got[0]) is list and len(got[0]) == 3
    for g, w in zip(got[0] + [got[1], got[2]], want[0] + [want[1], want[2]]):
        np.testing.assert_array_equal(g, w)


def test_fortran_order_views_read_the_array_column_by_column():
    def f(x):
        r = x.reshape((2, 6), order="F")
        x[0, 0] = -7
        return r, x.ravel(order="F"), np.reshape(x, -1, order="F")
    same_as_numpy(f, X)


def test_cpu_backend_agrees_on_pads_splits_and_outer_products():
    def f(x, y):
        return (np.pad(x, ((1, 4), (2, 0)), mode="reflect"), np.pad(x, 2, mode="wrap"),
                np.pad(x, ((0, 1), (3, 3)), mode="symmetric"), np.pad(x, 1, mode="edge"),
                np.array_split(x, 3, axis=1), np.subtract.outer(y, x[0]),
                np.maximum.outer(x[1], y), np.einsum("ii->i", x[:, :3]))
    x, y = X, np.arange(3.0)
    got = xe.explore(f, x, y, backend="cpu").run(x, y)
    want = f(x, y)
    for g, w in zip(got[:4] + tuple(got[4]) + got[5:], want[:4] + tuple(want[4]) + want[5:]):
        np.testing.assert_array_equal(g, w)
