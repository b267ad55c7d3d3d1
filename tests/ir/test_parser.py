"""The HLO parser: JAX's golden text, our own text round-tripping exactly, and parse errors.

Every golden JAX program (tests/ir/data/jax) is parsed, verified and run in the reference
interpreter against the same program written in NumPy.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xla_explorer as xe
from xla_explorer.ir.module import Computation, Instruction, Metadata, Module
from xla_explorer.ir.shape import Shape, TupleShape
from xla_explorer.runtime.reference import run_module

DATA = Path(__file__).parent / "data" / "jax"


def golden(program: str, stage: str) -> str:
    return (DATA / program / f"{program}.{stage}.hlo").read_text()


# ---------------------------------------------------------------------------------------------
# The golden programs in NumPy: (parameter shapes, NumPy reference, rtol, atol).


def _np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_layernorm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def _np_mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0)
    return np.tanh(h @ w2 + b2)


def _np_gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def _np_slicing(x):
    return np.concatenate([x[1:5, ::2], x[::-1][:4, :6]], axis=0).T.reshape(-1)


PROGRAMS = {
    "sum_xyz": ([(1000,), (1000,), (1000,)], lambda x, y, z: np.sum(x + y * z), 1e-5, 1e-3),
    "softmax": ([(8, 16)], _np_softmax, 1e-5, 1e-6),
    "layernorm": ([(8, 16), (16,), (16,)], _np_layernorm, 1e-4, 1e-4),
    "mlp": ([(4, 8), (8, 16), (16,), (16, 3), (3,)], _np_mlp, 1e-5, 1e-5),
    "gelu": ([(1024,)], _np_gelu, 1e-5, 1e-6),
    "argmax_rows": ([(8, 16)], lambda x: np.argmax(x, axis=1), 0, 0),
    "slicing": ([(10, 12)], _np_slicing, 0, 0),
    "mean_var": ([(4096,)], lambda x: (np.mean(x), np.var(x)), 1e-4, 1e-5),
}
STAGES = ["lowered", "compiled"]


def random_args(program: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in PROGRAMS[program][0]]


def numpy_reference(program: str, args) -> list[np.ndarray]:
    want = PROGRAMS[program][1](*[a.astype(np.float64) for a in args])
    return [np.asarray(w) for w in (want if isinstance(want, tuple) else (want,))]


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_golden_parses_with_the_right_signature(program, stage):
    m = xe.parse_hlo(golden(program, stage))
    assert m.name == f"jit_{program}"
    params = m.entry.parameters
    assert [p.parameter_number for p in params] == list(range(len(params)))
    assert [p.shape for p in params] == [Shape(np.float32, s) for s in PROGRAMS[program][0]]
    # Layouts are dropped: every array is row-major here.
    text = m.to_text()
    assert "]{" not in text and "%" not in text


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_golden_verifies(program, stage):
    m = xe.parse_hlo(golden(program, stage))
    assert xe.verify(m) is m


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_golden_runs_like_numpy(program, stage):
    m = xe.parse_hlo(golden(program, stage))
    _, _, rtol, atol = PROGRAMS[program]
    for seed in range(2):
        args = random_args(program, seed)
        got = run_module(m, args)
        want = numpy_reference(program, args)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            if program == "argmax_rows":
                assert g.dtype == np.int32  # JAX's argmax gives int32
                np.testing.assert_array_equal(g, w)
            else:
                assert g.dtype == np.float32
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_golden_reprints_stably(program, stage):
    """Our text for a JAX module round-trips exactly and means the same thing."""
    m = xe.parse_hlo(golden(program, stage))
    text = m.to_text()
    again = xe.parse_hlo(text)
    assert again.to_text() == text
    args = random_args(program)
    for a, b in zip(run_module(m, args), run_module(again, args)):
        np.testing.assert_array_equal(a, b)


def test_compiled_text_keeps_what_it_does_not_model():
    m = xe.parse_hlo(golden("mlp", "compiled"))
    fusion = m.entry.get("ynn_fusion.1")
    assert fusion.opcode == "fusion"
    assert fusion.attr("kind") == "kCustom"
    assert fusion.attr("calls") == "fused_computation.1"
    assert fusion.attr("backend_config") == (
        '{"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}')
    assert fusion.metadata.op_name == "jit(mlp)/dot_general"
    assert fusion.metadata.extra == "stack_frame_id=4"
    rw = xe.parse_hlo(golden("sum_xyz", "compiled")).computation(
        "wrapped_reduce-window_computation").root
    assert rw.opcode == "reduce-window"
    assert rw.attr("window") == "{size=32 stride=32 pad=12_12}"
    assert rw.attr("to_apply") == "region_0.1"


def test_lowered_constants_read_exactly():
    gelu = xe.parse_hlo(golden("gelu", "lowered"))
    c = gelu.entry.get("constant.5")
    assert c.literal.dtype == np.float32 and c.literal[()] == np.float32(0.797884583)
    ln = xe.parse_hlo(golden("layernorm", "lowered"))
    assert ln.entry.get("constant.3").literal[()] == np.float32(1e-5)
    sm = xe.parse_hlo(golden("softmax", "lowered"))
    assert sm.entry.get("constant.3").literal[()] == -np.inf
    mv = xe.parse_hlo(golden("mean_var", "lowered"))
    assert np.isnan(mv.computation("_var.5").get("constant.8").literal[()])
    np.testing.assert_array_equal(mv.computation("_var.5").get("constant.7").literal, [4096])


# ---------------------------------------------------------------------------------------------
# Our own text round-trips exactly.

ROUND_TRIP = {
    "constants": """\
HloModule constants, entry_computation_layout={()->(f32[2,3], f32[], f64[], f32[], f64[], f32[], pred[3], pred[], s32[2], s64[], f64[2,2])}

ENTRY main {
  array = f32[2,3] constant({ {1, -2.5, 0.1}, {inf, -inf, nan} })
  eps32 = f32[] constant(1e-05)
  eps64 = f64[] constant(1e-05)
  c32 = f32[] constant(0.7978846)
  c64 = f64[] constant(0.797884583)
  negzero = f32[] constant(-0)
  flags = pred[3] constant({true, false, true})
  yes = pred[] constant(true)
  ints = s32[2] constant({-2147483648, 2147483647})
  big = s64[] constant(-9223372036854775808)
  tiny = f64[2,2] constant({ {5e-324, 1.7976931348623157e+308}, {-1e+100, 3.141592653589793} })
  ROOT t = (f32[2,3], f32[], f64[], f32[], f64[], f32[], pred[3], pred[], s32[2], s64[], f64[2,2]) tuple(array, eps32, eps64, c32, c64, negzero, flags, yes, ints, big, tiny)
}
""",
    "integer_types": """\
HloModule integer_types, entry_computation_layout={(s8[3], s16[3], u8[3], u16[2], u32[2], u64[2])->(s8[3], s16[3], u8[3], u16[2], u32[2], u64[2], s16[3], u64[], s64[2])}

sum_u64 {
  x = u64[] parameter(0)
  y = u64[] parameter(1)
  ROOT s = u64[] add(x, y)
}

ENTRY main {
  a = s8[3] parameter(0)
  b = s16[3] parameter(1)
  c = u8[3] parameter(2)
  d = u16[2] parameter(3)
  e = u32[2] parameter(4)
  f = u64[2] parameter(5)
  i8 = s8[3] constant({-128, 0, 127})
  i16 = s16[3] constant({-32768, 1, 32767})
  u8 = u8[3] constant({0, 200, 255})
  u16 = u16[2] constant({0, 65535})
  u32 = u32[2] constant({4294967295, 7})
  u64 = u64[2] constant({18446744073709551615, 9223372036854775808})
  na = s8[3] negate(i8)
  sb = s16[3] subtract(b, i16)
  wc = u8[3] add(c, u8)
  md = u16[2] multiply(d, u16)
  xe = u32[2] xor(e, u32)
  sf = u64[2] shift-right-logical(f, u64)
  cv = s16[3] convert(c)
  zero = u64[] constant(0)
  rs = u64[] reduce(f, zero), dimensions={0}, to_apply=sum_u64
  wide = s64[2] convert(f)
  ROOT t = (s8[3], s16[3], u8[3], u16[2], u32[2], u64[2], s16[3], u64[], s64[2]) tuple(na, sb, wc, md, xe, sf, cv, rs, wide)
}
""",
    "float16": """\
HloModule float16, entry_computation_layout={(f16[3])->(f16[3], f32[3], f16[4])}

ENTRY main {
  x = f16[3] parameter(0)
  c = f16[4] constant({0.1, 6.55e+04, 6e-08, -inf})
  wide = f32[3] convert(x)
  twice = f32[3] add(wide, wide)
  back = f16[3] convert(twice)
  ROOT t = (f16[3], f32[3], f16[4]) tuple(back, wide, c)
}
""",
    "alias_and_metadata": """\
HloModule alias_and_metadata, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {}, may-alias) }, entry_computation_layout={(f32[4], f32[4])->(f32[4], f32[4])}

ENTRY main {
  x = f32[4] parameter(0), metadata={op_name="x"}
  y = f32[4] parameter(1), metadata={op_name="y"}
  sum = f32[4] add(x, y), metadata={op_name="a \\"quoted\\" op" source_file="C:\\\\Users\\\\me\\\\cell \\"1\\".py" source_line=12}
  odd = f32[4] multiply(sum, y), metadata={op_name="jit(f)/mul" source_file="/tmp/a b/c.py" source_line=3 source_column=7 stack_frame_id=2}
  ROOT out = (f32[4], f32[4]) tuple(odd, sum)
}
""",
    "data_movement": """\
HloModule data_movement, entry_computation_layout={(f32[10,12], f32[])->(f32[3,6], f32[12,21], s32[6,4], f32[4,3])}

ENTRY main {
  x = f32[10,12] parameter(0)
  v = f32[] parameter(1)
  strided = f32[3,6] slice(x), slice={[1:7:2], [0:12:2]}
  padded = f32[12,21] pad(x, v), padding=1_1x-1_-1_1
  i = s32[6,4] iota(), iota_dimension=1
  small = f32[4,3] slice(x), slice={[0:4], [9:12]}
  ROOT t = (f32[3,6], f32[12,21], s32[6,4], f32[4,3]) tuple(strided, padded, i, small)
}
""",
    "calls": """\
HloModule calls, entry_computation_layout={(f32[8,16], s32[5])->(f32[8], f32[8,16], s32[5])}

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

fused {
  p = f32[8,16] parameter(0)
  ROOT e = f32[8,16] exponential(p)
}

ENTRY main {
  x = f32[8,16] parameter(0)
  k = s32[5] parameter(1)
  zero = f32[] constant(0)
  r = f32[8] reduce(x, zero), dimensions={1}, to_apply=add_f32
  f = f32[8,16] fusion(x), kind=kLoop, calls=fused
  u = s32[5] custom-call(k), custom_call_target="numpy.sort", backend_config="axis=0"
  ROOT t = (f32[8], f32[8,16], s32[5]) tuple(r, f, u)
}
""",
    "dot_and_compare": """\
HloModule dot_and_compare, entry_computation_layout={(f32[2,3,4], f32[2,4,5])->(f32[2,3,5], pred[2,3,5])}

ENTRY main {
  a = f32[2,3,4] parameter(0)
  b = f32[2,4,5] parameter(1)
  d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, backend_config={"operand_precision":["DEFAULT","DEFAULT"]}
  z = f32[] constant(0)
  zb = f32[2,3,5] broadcast(z), dimensions={}
  pos = pred[2,3,5] compare(d, zb), direction=GT
  ROOT t = (f32[2,3,5], pred[2,3,5]) tuple(d, pos)
}
""",
    # q @ k.T and a.T @ b after the simplifier: the contracting dimensions say which operand
    # is read transposed.
    "transposed_dots": """\
HloModule transposed_dots, entry_computation_layout={(f32[4,3], f32[5,3], f32[4,2])->(f32[4,5], f32[3,2], f32[5,4])}

ENTRY main {
  q = f32[4,3] parameter(0)
  k = f32[5,3] parameter(1)
  b = f32[4,2] parameter(2)
  qk = f32[4,5] dot(q, k), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ab = f32[3,2] dot(q, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  kq = f32[5,4] dot(k, q), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT t = (f32[4,5], f32[3,2], f32[5,4]) tuple(qk, ab, kq)
}
""",
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_own_text_round_trips_exactly(name):
    text = ROUND_TRIP[name]
    m = xe.parse_hlo(text)
    assert m.to_text() == text
    xe.verify(m)


def test_round_trip_values():
    m = xe.parse_hlo(ROUND_TRIP["constants"])
    lit = {i.name: i.literal for i in m.entry if i.opcode == "constant"}
    assert lit["eps32"].dtype == np.float32 and lit["eps32"][()] == np.float32(1e-5)
    assert lit["eps64"].dtype == np.float64 and lit["eps64"][()] == 1e-5
    assert lit["c32"][()] == np.float32(0.797884583)
    assert lit["c64"][()] == 0.797884583
    assert np.signbit(lit["negzero"][()])
    assert lit["flags"].dtype == np.bool_ and lit["flags"].tolist() == [True, False, True]
    assert lit["ints"].tolist() == [-2**31, 2**31 - 1]
    assert lit["big"][()] == -2**63
    a = lit["array"]
    assert a[1, 0] == np.inf and a[1, 1] == -np.inf and np.isnan(a[1, 2])
    assert lit["tiny"][0, 0] == 5e-324 and lit["tiny"][0, 1] == 1.7976931348623157e308

    m = xe.parse_hlo(ROUND_TRIP["integer_types"])
    lit = {i.name: i.literal for i in m.entry if i.opcode == "constant"}
    assert lit["i8"].dtype == np.int8 and lit["i8"].tolist() == [-128, 0, 127]
    assert lit["i16"].dtype == np.int16 and lit["i16"].tolist() == [-2**15, 1, 2**15 - 1]
    assert lit["u8"].dtype == np.uint8 and lit["u8"].tolist() == [0, 200, 255]
    assert lit["u16"].dtype == np.uint16 and lit["u16"].tolist() == [0, 2**16 - 1]
    assert lit["u32"].dtype == np.uint32 and lit["u32"].tolist() == [2**32 - 1, 7]
    assert lit["u64"].dtype == np.uint64 and lit["u64"].tolist() == [2**64 - 1, 2**63]
    assert [m.entry.get(n).dtype for n in "abcdef"] == [np.dtype(t) for t in (
        np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64)]

    m = xe.parse_hlo(ROUND_TRIP["float16"])
    c = m.entry.get("c").literal
    assert c.dtype == np.float16
    assert c.tobytes() == np.array([0.1, 65504, 6e-08, -np.inf], np.float16).tobytes()

    m = xe.parse_hlo(ROUND_TRIP["alias_and_metadata"])
    assert m.input_output_alias == ((0, 1), (1, 0))
    md = m.entry.get("sum").metadata
    assert md.op_name == 'a "quoted" op'
    assert md.source_file == 'C:\\Users\\me\\cell "1".py'
    assert md.source_line == 12
    assert m.entry.get("odd").metadata.extra == "source_column=7 stack_frame_id=2"

    m = xe.parse_hlo(ROUND_TRIP["data_movement"])
    assert m.entry.get("strided").attr("slice") == ((1, 7, 2), (0, 12, 2))
    assert m.entry.get("padded").attr("padding") == ((1, 1, 0), (-1, -1, 1))

    m = xe.parse_hlo(ROUND_TRIP["calls"])
    u = m.entry.get("u")
    assert u.attr("custom_call_target") == "numpy.sort"
    assert u.attr("backend_config") == '"axis=0"'
    k = np.array([3, -1, 7, 0, 2], np.int32)
    r, f, s = run_module(m, [np.ones((8, 16), np.float32), k])
    np.testing.assert_array_equal(r, np.full(8, 16, np.float32))
    np.testing.assert_allclose(f, np.full((8, 16), np.e, np.float32))
    np.testing.assert_array_equal(s, np.sort(k))


def test_built_module_round_trips_every_float():
    """Printed floats read back bit for bit, in both widths."""
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.standard_normal(40) * 10.0 ** rng.integers(-40, 40, 40),
                             [0.797884583, 1e-5, 0.1, 1 / 3, 2**-149, 3.4e38, -0.0]])
    insts = []
    for dtype in (np.float32, np.float64):
        lit = values.astype(dtype)
        insts.append(Instruction(f"c{np.dtype(dtype).itemsize}", "constant",
                                 Shape(dtype, lit.shape), literal=lit))
    root = Instruction("t", "tuple", TupleShape(tuple(i.shape for i in insts)), tuple(insts))
    m = Module("floats", Computation("main", tuple(insts) + (root,)))
    text = m.to_text()
    again = xe.parse_hlo(text)
    assert again.to_text() == text
    for a, b in zip(insts, again.entry.instructions):
        assert a.literal.tobytes() == b.literal.tobytes()


def test_metadata_strings_round_trip():
    tricky = ['plain', 'with "quotes"', "back\\slash", 'end\\', 'both \\" mixed', "new\nline",
              "a /* not a comment */ b", "x=1, y={2}", "tab\there", "cr\rhere", "crlf\r\n",
              "sep\u2028arator", "ff\x0cvt\x0b", "\\n is not a newline", "ünïcode ✓"]
    insts = [Instruction("p", "parameter", Shape(np.float32, (2,)), parameter_number=0)]
    for n, s in enumerate(tricky):
        insts.append(Instruction(f"n{n}", "negate", Shape(np.float32, (2,)), (insts[-1],),
                                 metadata=Metadata(op_name=s, source_file=s, source_line=n + 1)))
    m = Module("strings", Computation("main", tuple(insts)))
    text = m.to_text()
    again = xe.parse_hlo(text)
    assert again.to_text() == text
    for n, s in enumerate(tricky):
        md = again.entry.get(f"n{n}").metadata
        assert (md.op_name, md.source_file, md.source_line) == (s, s, n + 1)


@settings(max_examples=60)
@given(st.text(), st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_any_metadata_string_round_trips(op_name, source_file):
    p = Instruction("p", "parameter", Shape(np.float32, ()), parameter_number=0,
                    metadata=Metadata(op_name, source_file, 3))
    m = Module("strings", Computation("main", (p,)))
    again = xe.parse_hlo(m.to_text())
    assert again.to_text() == m.to_text()
    md = again.entry.root.metadata
    assert (md.op_name, md.source_file) == (op_name, source_file)


@settings(max_examples=60)
@given(st.lists(st.floats(width=32), min_size=1, max_size=6),
       st.lists(st.floats(), min_size=1, max_size=6),
       st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=6))
def test_any_constant_round_trips(f32s, f64s, s64s):
    insts = [Instruction(f"c{n}", "constant", Shape(lit.dtype, lit.shape), literal=lit)
             for n, lit in enumerate([np.array(f32s, np.float32), np.array(f64s, np.float64),
                                      np.array(s64s, np.int64),
                                      np.array(f32s[0], np.float32)])]
    root = Instruction("t", "tuple", TupleShape(tuple(i.shape for i in insts)), tuple(insts))
    m = Module("consts", Computation("main", tuple(insts) + (root,)))
    again = xe.parse_hlo(m.to_text())
    assert again.to_text() == m.to_text()
    for a, b in zip(insts, again.entry.instructions):
        # A NaN reads back as a NaN (its payload is not printed); all else bit for bit.
        keep = np.ones(a.literal.shape, bool)
        if a.literal.dtype.kind == "f":
            keep = ~np.isnan(a.literal)
            assert (np.isnan(b.literal) == ~keep).all()
        assert a.literal[keep].tobytes() == b.literal[keep].tobytes()


def test_empty_constants_round_trip():
    text = """\
HloModule empty, entry_computation_layout={()->(f32[0], f32[0,3], s32[2,0])}

ENTRY main {
  a = f32[0] constant({})
  b = f32[0,3] constant({  })
  c = s32[2,0] constant({ {}, {} })
  ROOT t = (f32[0], f32[0,3], s32[2,0]) tuple(a, b, c)
}
"""
    m = xe.parse_hlo(text)
    assert m.to_text() == text
    assert [i.literal.shape for i in m.entry.instructions[:3]] == [(0,), (0, 3), (2, 0)]


def test_long_chains_parse_without_recursion():
    n = 5000
    lines = ["  x = f32[2] parameter(0)"] + [f"  n{i} = f32[2] negate({'x' if i == 0 else f'n{i - 1}'})"
                                         for i in range(n)]
    lines[-1] = "  ROOT" + lines[-1][1:]
    text = "HloModule chain, entry_computation_layout={(f32[2])->f32[2]}\n\nENTRY main {\n" + \
        "\n".join(lines) + "\n}\n"
    m = xe.parse_hlo(text)
    assert m.to_text() == text
    xe.verify(m)
    x = np.array([1, -2], np.float32)
    np.testing.assert_array_equal(run_module(m, [x])[0], x)  # an even number of negations


def test_crlf_text_reads():
    m = xe.parse_hlo(GOOD.replace("\n", "\r\n"))
    assert m.to_text() == GOOD


def test_jax_style_text_reads():
    """Sigils, layouts, signatures, comments, `ROOT` not last, shapes before operand names."""
    text = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[2,3]{1,0})->f32[3,2]{0,1}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main.1 (x.1: f32[2,3]) -> f32[3,2] {
  %x.1 = f32[2,3]{1,0} parameter(0), metadata={op_name="x"}
  /* a comment */ %t = f32[3,2]{0,1} transpose(f32[2,3]{1,0} %x.1), dimensions={1,0}
  ROOT %c = f32[3,2]{1,0} copy(%t), sharding={replicated}
  %unused = f32[2,3]{1,0} negate(%x.1), metadata={op_name="/* kept */"}
}
"""
    m = xe.parse_hlo(text)
    xe.verify(m)
    assert m.entry.root.name == "c"
    assert m.entry.root.attr("sharding") == "{replicated}"
    assert m.entry.get("unused").metadata.op_name == "/* kept */"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run_module(m, [x])[0], x.T)


def test_alias_of_a_non_tuple_root():
    text = """\
HloModule m, input_output_alias={ {}: (0, {}, may-alias) }, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT y = f32[4]{0} negate(x)
}
"""
    m = xe.parse_hlo(text)
    assert m.input_output_alias == ((0, 0),)
    xe.verify(m)


# ---------------------------------------------------------------------------------------------
# Errors name the line.

GOOD = """\
HloModule m, entry_computation_layout={(f32[3])->f32[3]}

ENTRY main {
  x = f32[3] parameter(0)
  ROOT y = f32[3] negate(x)
}
"""


@pytest.mark.parametrize("bad_line, line_no, words", [
    ("  y f32[3] negate(x)", 5, "expected an instruction"),
    ("  ROOT y = f32[3 negate(x)", 5, "shape"),
    ("  ROOT y = f32[a] negate(x)", 5, "shape"),
    ("  ROOT y = f32[3] negate(x", 5, "')'"),
    ("  ROOT y = f32[3] negate(w)", 5, "operand w is not defined"),
    ("  ROOT y = f32[3] negate(x), dimensions={a}", 5, "dimensions"),
    ("  ROOT y = f32[3] negate(x) junk", 5, "unexpected text"),
    ("  ROOT y = f32[3] constant({1, 2})", 5, "constant has 2 values"),
    ("  ROOT y = f32[3] constant({1, 2, x})", 5, "bad constant literal"),
    ("  ROOT y = f32[3] negate(x), metadata={source_line=abc}", 5, "source_line"),
    ("  ROOT y = f32[3] slice(x), slice={[0:q]}", 5, "slice"),
    ("  ROOT y = f32[3] pad(x, x), padding=1_q", 5, "padding"),
    ("  ROOT y = f32[3] iota(), iota_dimension=first", 5, "iota_dimension"),
])
def test_parse_errors_name_the_line(bad_line, line_no, words):
    text = GOOD.replace("  ROOT y = f32[3] negate(x)", bad_line)
    with pytest.raises(xe.HloParseError) as info:
        xe.parse_hlo(text)
    assert info.value.line_number == line_no
    assert f"line {line_no}" in str(info.value)
    assert words in str(info.value)


def test_parse_error_in_parameter_number():
    with pytest.raises(xe.HloParseError, match="line 4"):
        xe.parse_hlo(GOOD.replace("parameter(0)", "parameter(zero)"))


def test_parse_error_for_unclosed_and_empty():
    with pytest.raises(xe.HloParseError, match="not closed"):
        xe.parse_hlo(GOOD.rstrip().rstrip("}"))
    with pytest.raises(xe.HloParseError, match="line 3.*empty"):
        xe.parse_hlo("HloModule m\n\nempty {\n}\n")
    with pytest.raises(xe.HloParseError, match="HloModule"):
        xe.parse_hlo(GOOD.replace("HloModule m, entry_computation_layout={(f32[3])->f32[3]}", ""))
    with pytest.raises(xe.HloParseError, match="line 3"):
        xe.parse_hlo(GOOD.replace("ENTRY main {", "ENTRY main"))


def test_unsupported_element_type_says_so():
    with pytest.raises(xe.HloParseError) as info:
        xe.parse_hlo(GOOD.replace("f32", "bf16"))
    msg = str(info.value)
    assert "bf16" in msg and "not supported" in msg and "f32" in msg
    assert info.value.line_number == 1 or info.value.line_number == 4


def test_duplicate_name_in_one_computation():
    text = GOOD.replace("  ROOT y", "  x = f32[3] negate(x)\n  ROOT y")
    with pytest.raises(xe.HloParseError, match="line 5.*defined twice"):
        xe.parse_hlo(text)


def test_self_dependency():
    with pytest.raises(xe.HloParseError, match="depends on itself"):
        xe.parse_hlo(GOOD.replace("negate(x)", "negate(y)"))
