"""gather and scatter: XLA's HLO text read and printed exactly, the verifier's checks of their
dimension numbers, the reference interpreter's general semantics (batch dimensions of the
indices, any index_vector_dim, windows) against NumPy, its IndexError for an index out of
range, and compiled code clamping (gather) and skipping (scatter) as XLA does."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.compiler import compile as compile_module
from xla_explorer.runtime.reference import run_module

ADD = """\
add_f32 {
  lhs.1 = f32[] parameter(0)
  rhs.2 = f32[] parameter(1)
  ROOT add.3 = f32[] add(lhs.1, rhs.2)
}"""

ASSIGN = """\
assign_f32 {
  old.1 = f32[] parameter(0)
  ROOT new.2 = f32[] parameter(1)
}"""

ROWS = f"""\
HloModule rows, entry_computation_layout={{(f32[5,4], s32[3,1], f32[3,4])->(f32[3,4], f32[5,4])}}

{ADD}

ENTRY rows {{
  x = f32[5,4] parameter(0)
  idx = s32[3,1] parameter(1)
  upd = f32[3,4] parameter(2)
  g = f32[3,4] gather(x, idx), offset_dims={{1}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1,4}}
  s = f32[5,4] scatter(x, idx, upd), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=add_f32
  ROOT t = (f32[3,4], f32[5,4]) tuple(g, s)
}}
"""

# Index vectors along dimension 0 of the indices (two coordinates, batch [3]), windows of
# 2 x 3, and a scatter of 2 x 3 windows with last-write-wins assignment.
WINDOWS = f"""\
HloModule windows, entry_computation_layout={{(f32[4,5], s32[2,3], f32[3,2,3])->(f32[3,2,3], f32[3], f32[4,5])}}

{ASSIGN}

ENTRY windows {{
  x = f32[4,5] parameter(0)
  idx = s32[2,3] parameter(1)
  upd = f32[3,2,3] parameter(2)
  g = f32[3,2,3] gather(x, idx), offset_dims={{1,2}}, collapsed_slice_dims={{}}, start_index_map={{0,1}}, index_vector_dim=0, slice_sizes={{2,3}}
  p = f32[3] gather(x, idx), offset_dims={{}}, collapsed_slice_dims={{0,1}}, start_index_map={{0,1}}, index_vector_dim=0, slice_sizes={{1,1}}
  s = f32[4,5] scatter(x, idx, upd), update_window_dims={{1,2}}, inserted_window_dims={{}}, scatter_dims_to_operand_dims={{0,1}}, index_vector_dim=0, to_apply=assign_f32
  ROOT t = (f32[3,2,3], f32[3], f32[4,5]) tuple(g, p, s)
}}
"""


@pytest.mark.parametrize("text", [ROWS, WINDOWS], ids=["rows", "windows"])
def test_text_round_trips_exactly_and_verifies(text):
    m = xe.parse_hlo(text)
    assert m.to_text() == text
    xe.verify(m)


def test_rows_gather_and_scatter_add_like_numpy():
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    idx = np.array([[1], [3], [1]], np.int32)
    upd = np.arange(12, dtype=np.float32).reshape(3, 4)
    g, s = run_module(xe.parse_hlo(ROWS), [x, idx, upd])
    want = x.copy()
    np.add.at(want, idx[:, 0], upd)  # the repeated row 1 receives both updates
    np.testing.assert_array_equal(g, x[idx[:, 0]])
    np.testing.assert_array_equal(s, want)


def test_windows_with_index_vectors_along_dimension_0():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    idx = np.array([[0, 2, 2], [1, 0, 1]], np.int32)  # starts (0,1), (2,0), (2,1)
    upd = -np.arange(18, dtype=np.float32).reshape(3, 2, 3)
    g, p, s = run_module(xe.parse_hlo(WINDOWS), [x, idx, upd])
    starts = idx.T
    np.testing.assert_array_equal(g, np.stack([x[r:r + 2, c:c + 3] for r, c in starts]))
    np.testing.assert_array_equal(p, x[idx[0], idx[1]])
    want = x.copy()
    for (r, c), u in zip(starts, upd):  # in order: the last window written wins its overlap
        want[r:r + 2, c:c + 3] = u
    np.testing.assert_array_equal(s, want)


@pytest.mark.parametrize("old,new,message", [
    ("slice_sizes={1,4}", "slice_sizes={2,4}", "collapsed_slice_dims"),
    ("start_index_map={0}", "start_index_map={0,1}", "start_index_map"),
    ("offset_dims={1}", "offset_dims={0}", "declared"),
    ("index_vector_dim=1, to_apply", "index_vector_dim=3, to_apply", "index_vector_dim=3"),
    ("update_window_dims={1}", "update_window_dims={0}", "scatter dimensions"),
    ("scatter_dims_to_operand_dims={0}", "scatter_dims_to_operand_dims={2}",
     "scatter_dims_to_operand_dims"),
])
def test_verifier_checks_the_dimension_numbers(old, new, message):
    with pytest.raises(xe.VerifyError, match=message):
        xe.verify(xe.parse_hlo(ROWS.replace(old, new, 1)))


def test_verifier_checks_the_combiner():
    text = ROWS.replace("ROOT add.3 = f32[] add(lhs.1, rhs.2)",
                        "ROOT add.3 = pred[] compare(lhs.1, rhs.2), direction=LT")
    with pytest.raises(xe.VerifyError, match="combiner"):
        xe.verify(xe.parse_hlo(text))


def _located(text: str, line: int) -> str:
    """The module with every instruction of ENTRY tagged with this file's line `line`."""
    out = []
    for row in text.splitlines():
        if " = " in row and ("gather(" in row or "scatter(" in row):
            row += f', metadata={{op_name="f" source_file="{__file__}" source_line={line}}}'
        out.append(row)
    return "\n".join(out) + "\n"


def test_interpreter_raises_index_error_at_the_source_line():
    m = xe.parse_hlo(_located(ROWS, 7))
    x, upd = np.zeros((5, 4), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(IndexError) as info:
        run_module(m, [x, np.array([[1], [5], [0]], np.int32), upd])
    err = info.value
    assert isinstance(err, xe.XlaExplorerError)
    assert err.op == "gather" and err.source_line == 7 and "index 5" in str(err)
    scatter_only = ROWS.replace("ROOT t = (f32[3,4], f32[5,4]) tuple(g, s)",
                                "ROOT t = (f32[5,4]) tuple(s)")
    scatter_only = scatter_only.replace("->(f32[3,4], f32[5,4])", "->(f32[5,4])")
    scatter_only = "\n".join(r for r in scatter_only.splitlines() if " gather(" not in r)
    with pytest.raises(IndexError) as info:
        run_module(xe.parse_hlo(_located(scatter_only, 9)),
                   [x, np.array([[1], [-1], [0]], np.int32), upd])
    err = info.value
    assert err.op == "scatter" and err.source_line == 9 and "leaves the operand" in str(err)


def test_compiled_gather_clamps_and_scatter_skips_as_xla_does():
    m = xe.parse_hlo(ROWS)
    c = compile_module(m, "cpu")
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    idx = np.array([[-3], [9], [2]], np.int32)
    upd = np.full((3, 4), 100, np.float32)
    g, s = c.executable(x, idx, upd)
    np.testing.assert_array_equal(g, x[np.clip(idx[:, 0], 0, 4)])  # clamped into [0, 5 - 1]
    want = x.copy()
    want[2] += 100  # the two out-of-range updates are skipped
    np.testing.assert_array_equal(s, want)
