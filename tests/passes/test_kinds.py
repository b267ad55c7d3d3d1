"""The kernel-kind and row-fusion predicates that the fusion passes, codegen and viz share."""
from __future__ import annotations

import pytest

import xla_explorer as xe
from xla_explorer.passes.kinds import ROW_CONFIG, is_row_fusion, kernel_kind, kind_of

from .hlo_pass_helpers import ADD, hlo

ROWS = ADD + """

fused_rows {
  p = f32[4,8] parameter(0)
  zero = f32[] constant(0)
  s = f32[4] reduce(p, zero), dimensions={1}, to_apply=add
  b = f32[4,8] broadcast(s), dimensions={0}
  ROOT d = f32[4,8] divide(p, b)
}"""


def entry(text: str) -> dict:
    return {i.name: i for i in xe.parse_hlo(text).entry.instructions}


@pytest.mark.parametrize("config, row", [
    (ROW_CONFIG, True),
    ('{ "schedule" : "row" }', True),  # written by hand: read as JSON, not compared as text
    ('{"schedule":"loop"}', False),
])
def test_a_row_fusion_is_read_from_its_backend_config(config, row):
    insts = entry(hlo(f"""
        x = f32[4,8] parameter(0)
        ROOT f = f32[4,8] fusion(x), kind=kInput, calls=fused_rows, backend_config={config}
    """, ROWS))
    assert is_row_fusion(insts["f"]) is row
    assert kernel_kind(insts["f"]) == "kInput"


def test_an_op_alone_has_the_kind_a_fusion_of_it_would_have():
    insts = entry(hlo("""
        x = f32[4,8] parameter(0)
        w = f32[8,8] parameter(1)
        zero = f32[] constant(0)
        e = f32[4,8] exponential(x)
        s = f32[4] reduce(x, zero), dimensions={1}, to_apply=add
        d = f32[4,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
        ROOT t = (f32[4,8], f32[4], f32[4,8]) tuple(e, s, d)
    """, ADD))
    assert [kernel_kind(insts[n]) for n in ("e", "s", "d")] == ["kLoop", "kInput", "kOutput"]
    assert not is_row_fusion(insts["s"])
    # A dot makes the kernel kOutput whatever else it holds; running by rows makes it kInput.
    assert kind_of([insts["s"], insts["d"]]) == "kOutput"
    assert kind_of([insts["e"]], row=True) == "kInput"
