"""The verifier: each broken invariant is a VerifyError that names the instruction and says why.

Modules are written as HLO text and parsed (the parser reads what it can; judging it is the
verifier's job), except where the text cannot express the fault.
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.ir.module import Computation, Instruction, Module
from xla_explorer.ir.shape import Shape


def module(body: str, *, extra: str = "", header: str = "") -> xe.Module:
    return xe.parse_hlo(f"HloModule m{header}\n\n{extra}\nENTRY main {{\n{body}\n}}\n")


def rejects(text_or_module, *words: str) -> str:
    m = xe.parse_hlo(text_or_module) if isinstance(text_or_module, str) else text_or_module
    with pytest.raises(xe.VerifyError) as info:
        xe.verify(m)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"
    return msg


ADD = """\
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""


def test_a_good_module_passes_and_is_returned():
    m = module("""\
  x = f32[2,3] parameter(0)
  y = s32[3] parameter(1)
  z = f32[] constant(0)
  r = f32[2] reduce(x, z), dimensions={1}, to_apply=add_f32
  bc = f32[3,2] broadcast(r), dimensions={1}
  t = f32[2,3] transpose(bc), dimensions={1,0}
  c = f32[3] convert(y)
  d = f32[2] dot(x, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  sl = f32[1,3] slice(t), slice={[1:2], [0:3]}
  rs = f32[3] reshape(sl)
  ROOT out = (f32[2,3], f32[2], f32[3]) tuple(t, d, rs)""", extra=ADD)
    assert xe.verify(m) is m


def test_operand_used_before_definition():
    rejects(module("""\
  x = f32[3] parameter(0)
  y = f32[3] negate(z)
  z = f32[3] exponential(x)
  ROOT r = f32[3] add(y, z)"""), "main/y", "operand z is not defined before use")


def test_duplicate_names_across_computations():
    msg = rejects(module("""\
  a = f32[3] parameter(0)
  ROOT n = f32[3] negate(a)""", extra=ADD), "main/a", "name is used twice")
    assert "add_f32" in msg  # says where the first one is


def test_duplicate_names_in_one_computation():
    # The text cannot say this (an operand name would be ambiguous): build it.
    p = Instruction("x", "parameter", Shape(np.float32, (3,)), parameter_number=0)
    n = Instruction("x", "negate", p.shape, (p,))
    rejects(Module("m", Computation("main", (p, n))), "main/x", "used twice")


def test_duplicate_computation_names():
    rejects(module("""\
  x = f32[3] parameter(0)
  ROOT n = f32[3] negate(x)""", extra=ADD + """
add_f32 {
  c = f32[] parameter(0)
  d = f32[] parameter(1)
  ROOT t = f32[] add(c, d)
}
"""), "add_f32", "computation names repeat")


def test_wrong_declared_shape():
    rejects(module("""\
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT s = f32[4] add(x, y)"""), "main/s", "declared f32[4]", "f32[3]")


def test_wrong_declared_type():
    rejects(module("""\
  x = f32[3] parameter(0)
  ROOT s = s32[3] negate(x)"""), "main/s", "declared s32[3]")


def test_mismatched_operand_types():
    rejects(module("""\
  x = f32[3] parameter(0)
  y = s32[3] parameter(1)
  ROOT s = f32[3] add(x, y)"""), "main/s", "differ", "x: f32[3]", "y: s32[3]")


def test_mismatched_operand_shapes():
    rejects(module("""\
  x = f32[3] parameter(0)
  y = f32[1] parameter(1)
  ROOT s = pred[3] compare(x, y), direction=LT"""), "main/s", "differ")


def test_op_of_the_wrong_element_kind():
    rejects(module("""\
  x = s32[3] parameter(0)
  ROOT e = s32[3] exponential(x)"""), "main/e", "exponential does not take s32[3]")


def test_select_needs_a_pred():
    rejects(module("""\
  x = f32[3] parameter(0)
  ROOT s = f32[3] select(x, x, x)"""), "main/s", "pred")


def test_to_apply_naming_a_missing_computation():
    rejects(module("""\
  x = f32[3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=nowhere"""), "main/r", "nowhere",
            "not in the module")


def test_calls_naming_a_missing_computation():
    rejects(module("""\
  x = f32[3] parameter(0)
  ROOT f = f32[3] fusion(x), kind=kLoop, calls=fused"""), "main/f", "fused", "not in the module")


@pytest.mark.parametrize("numbers", [(0, 2), (1, 2), (0, 0), (1,)])
def test_bad_parameter_numbering(numbers):
    body = "\n".join(f"  p{i} = f32[3] parameter({n})" for i, n in enumerate(numbers))
    rejects(module(body + "\n  ROOT t = () tuple()"), "main", "parameter numbers",
            str(sorted(numbers)))


def test_bad_parameter_numbering_in_a_called_computation():
    rejects(module("""\
  x = f32[3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add_f32""",
                   extra=ADD.replace("parameter(1)", "parameter(2)")), "add_f32", "parameter numbers")


def test_wrong_number_of_operands():
    rejects(module("""\
  x = f32[3] parameter(0)
  ROOT n = f32[3] negate(x, x)"""), "main/n", "negate takes 1 operands, has 2")


def test_unknown_opcode():
    rejects(module("""\
  x = f32[3] parameter(0)
  ROOT n = f32[3] frobnicate(x)"""), "main/n", "'frobnicate' is not in the op table")


def test_constant_literal_must_match_its_shape():
    c = Instruction("c", "constant", Shape(np.float32, (3,)), literal=np.zeros(3, np.float64))
    rejects(Module("m", Computation("main", (c,))), "main/c", "literal")


def test_reducer_with_the_wrong_signature():
    rejects(module("""\
  x = f32[3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add_f32""",
                   extra=ADD.replace("b = f32[] parameter(1)", "b = f32[] parameter(1)\n  c = f32[] parameter(2)")),
            "main/r", "add_f32 takes 3 parameters")
    rejects(module("""\
  x = s32[3] parameter(0)
  z = s32[] constant(0)
  ROOT r = s32[] reduce(x, z), dimensions={0}, to_apply=add_f32""", extra=ADD),
            "main/r", "add_f32")


def test_reduce_init_must_be_a_scalar_of_the_operand_type():
    rejects(module("""\
  x = f32[3] parameter(0)
  z = f32[3] parameter(1)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add_f32""", extra=ADD), "main/r", "init")
    rejects(module("""\
  x = f32[3] parameter(0)
  z = f32[3] parameter(1)
  ROOT r = f32[] reduce(x, x), dimensions={3}, to_apply=add_f32""", extra=ADD), "main/r")


def test_call_operands_must_match_the_callee():
    rejects(module("""\
  x = f32[4] parameter(0)
  ROOT f = f32[4] fusion(x), kind=kLoop, calls=fused""", extra="""\
fused {
  p = f32[3] parameter(0)
  ROOT e = f32[3] exponential(p)
}
"""), "main/f", "f32[3]", "f32[4]")
    rejects(module("""\
  x = f32[3] parameter(0)
  ROOT f = f32[4] call(x), to_apply=fused""", extra="""\
fused {
  p = f32[3] parameter(0)
  ROOT e = f32[3] exponential(p)
}
"""), "main/f", "returns f32[3]")


@pytest.mark.parametrize("line, words", [
    ("ROOT r = f32[4] reshape(x)", "6 elements"),
    ("ROOT b = f32[4,2] broadcast(y), dimensions={0}", "broadcast"),
    ("ROOT b = f32[2,3,5] broadcast(x), dimensions={0}", "broadcast"),
    ("ROOT b = f32[2,3] broadcast(x), dimensions={0,5}", "broadcast"),
    ("ROOT t = f32[3,2] transpose(x), dimensions={1,1}", "permutation"),
    ("ROOT d = f32[2,2] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}", "contract"),
    ("ROOT d = f32[3,3] dot(x, x), lhs_contracting_dims={0}, rhs_contracting_dims={1}", "contract"),
    ("ROOT s = f32[2,4] slice(x), slice={[0:2], [0:4]}", "slice"),
    ("ROOT s = f32[2] slice(x), slice={[0:2]}", "slice"),
    ("ROOT c = f32[4,3] concatenate(x, y), dimensions={0}", "concatenate"),
    ("ROOT g = f32[2,3] get-tuple-element(x), index=0", "get-tuple-element"),
    ("ROOT i = s32[2,3] iota(), iota_dimension=2", "iota_dimension"),
    ("ROOT p = f32[2,3] pad(x, x), padding=0_0x0_0", "pad"),
])
def test_malformed_data_movement(line, words):
    rejects(module(f"""\
  x = f32[2,3] parameter(0)
  y = f32[3] parameter(1)
  {line}"""), words)


def test_input_output_alias_is_checked():
    body = """\
  x = f32[3] parameter(0)
  y = f32[4] parameter(1)
  n = f32[3] negate(x)
  ROOT t = (f32[3], f32[3]) tuple(n, n)"""
    xe.verify(module(body, header=", input_output_alias={ {0}: (0, {}, may-alias) }"))
    rejects(module(body, header=", input_output_alias={ {1}: (1, {}, may-alias) }"), "differ")
    rejects(module(body, header=", input_output_alias={ {2}: (0, {}, may-alias) }"), "out of range")


def test_computations_may_not_call_each_other_in_a_cycle():
    rejects(module("""\
  x = f32[3] parameter(0)
  ROOT c = f32[3] call(x), to_apply=ping""", extra="""\
ping {
  a = f32[3] parameter(0)
  ROOT b = f32[3] call(a), to_apply=pong
}

pong {
  c2 = f32[3] parameter(0)
  ROOT d = f32[3] call(c2), to_apply=ping
}
"""), "cycle", "ping -> pong -> ping")


def test_clamp_bounds():
    xe.verify(module("""\
  x = f32[3] parameter(0)
  lo = f32[] constant(0)
  hi = f32[3] parameter(1)
  ROOT c = f32[3] clamp(lo, x, hi)"""))
    rejects(module("""\
  x = f32[3] parameter(0)
  lo = f32[2] parameter(1)
  ROOT c = f32[3] clamp(lo, x, lo)"""), "main/c", "clamp")
    rejects(module("""\
  x = f32[3] parameter(0)
  lo = s32[] constant(0)
  ROOT c = f32[3] clamp(lo, x, lo)"""), "main/c", "clamp")


def test_reduce_window_shape():
    body = """\
  x = f32[10] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[DIM] reduce-window(x, z), window={size=3 stride=2 pad=1_1}, to_apply=add_f32"""
    xe.verify(module(body.replace("DIM", "5"), extra=ADD))
    rejects(module(body.replace("DIM", "4"), extra=ADD), "main/r", "window gives dimensions [5]")
    rejects(module(body.replace("DIM", "5").replace("size=3 ", "size=3x3 "), extra=ADD), "main/r",
            "does not fit")
