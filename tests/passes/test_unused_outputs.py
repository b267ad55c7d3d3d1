"""Unused fusion outputs: HLO text in (kernels as fusion leaves them), HLO text out; then the
arena of argmax and argmin, and their results, on the CPU.

A kernel writes only the elements of its tuple that something reads: argmax's variadic reduce
keeps its running value in registers, with no buffer, and stores only the index.
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.passes.unused_outputs import UnusedOutputs

from .hlo_pass_helpers import MAX, hlo, run_pass

ARGMAX = """\
argmax {
  am.lhs.v = f32[] parameter(0)
  am.lhs.i = s64[] parameter(1)
  am.rhs.v = f32[] parameter(2)
  am.rhs.i = s64[] parameter(3)
  am.gt = pred[] compare(am.lhs.v, am.rhs.v), direction=GT
  am.eq = pred[] compare(am.lhs.v, am.rhs.v), direction=EQ
  am.lt = pred[] compare(am.lhs.i, am.rhs.i), direction=LT
  am.tie = pred[] and(am.eq, am.lt)
  am.keep = pred[] or(am.gt, am.tie)
  am.v = f32[] select(am.keep, am.lhs.v, am.rhs.v)
  am.i = s64[] select(am.keep, am.lhs.i, am.rhs.i)
  ROOT am.r = (f32[], s64[]) tuple(am.v, am.i)
}

fused_argmax {
  fa.x = f32[4,6] parameter(0)
  fa.iota = s64[4,6] iota(), iota_dimension=1
  fa.ninf = f32[] constant(-inf)
  fa.zero = s64[] constant(0)
  ROOT fa.red = (f32[4], s64[4]) reduce(fa.x, fa.iota, fa.ninf, fa.zero), dimensions={1}, to_apply=argmax
}"""


def module_text(module) -> str:
    return module.to_text().split("\n", 2)[2]


def test_argmax_keeps_only_the_index():
    before, result = run_pass(UnusedOutputs(), hlo("""\
p = f32[4,6] parameter(0)
f = (f32[4], s64[4]) fusion(p), kind=kInput, calls=fused_argmax
i = s64[4] get-tuple-element(f), index=1
ROOT t = (s64[4]) tuple(i)""", ARGMAX))
    text = module_text(result.module)
    # The reduce still computes both; the kernel's root is the index.
    assert """\
fused_argmax {
  fa.x = f32[4,6] parameter(0)
  fa.iota = s64[4,6] iota(), iota_dimension=1
  fa.ninf = f32[] constant(-inf)
  fa.zero = s64[] constant(0)
  fa.red = (f32[4], s64[4]) reduce(fa.x, fa.iota, fa.ninf, fa.zero), dimensions={1}, to_apply=argmax
  ROOT get-tuple-element.1 = s64[4] get-tuple-element(fa.red), index=1
}""" in text
    assert text.endswith("""\
ENTRY main {
  p = f32[4,6] parameter(0)
  f = s64[4] fusion(p), kind=kInput, calls=fused_argmax
  ROOT t = (s64[4]) tuple(f)
}
""")
    assert [n.rule for n in result.notes] == ["unused-output"]
    assert "[1]" in result.notes[0].message and "[0]" in result.notes[0].message


def test_a_tuple_root_drops_what_only_the_unread_element_needed():
    before, result = run_pass(UnusedOutputs(), hlo("""\
x = f32[8] parameter(0)
f = (f32[], f32[8], f32[]) fusion(x), kind=kInput, calls=fused
a = f32[] get-tuple-element(f), index=0
c = f32[] get-tuple-element(f), index=2
ROOT t = (f32[], f32[]) tuple(c, a)""", MAX + """

fused {
  p = f32[8] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[] reduce(p, ninf), dimensions={0}, to_apply=max
  e = f32[8] exponential(p)
  n = f32[8] negate(p)
  mn = f32[] reduce(n, ninf), dimensions={0}, to_apply=max
  ROOT r = (f32[], f32[8], f32[]) tuple(m, e, mn)
}"""))
    assert module_text(result.module).endswith("""\
fused {
  p = f32[8] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[] reduce(p, ninf), dimensions={0}, to_apply=max
  n = f32[8] negate(p)
  mn = f32[] reduce(n, ninf), dimensions={0}, to_apply=max
  ROOT tuple.1 = (f32[], f32[]) tuple(m, mn)
}

ENTRY main {
  x = f32[8] parameter(0)
  f = (f32[], f32[]) fusion(x), kind=kInput, calls=fused
  a = f32[] get-tuple-element(f), index=0
  c = f32[] get-tuple-element(f), index=1
  ROOT t = (f32[], f32[]) tuple(c, a)
}
""")


def test_an_element_only_a_leftover_tuple_holds_is_not_read():
    # Multi-output fusion leaves tuple(gte, gte) behind for the variadic reduce it absorbed;
    # get-tuple-element(tuple(a, b), 1) is b, and a is read by nothing.
    before, result = run_pass(UnusedOutputs(), hlo("""\
p = f32[4,6] parameter(0)
f = (f32[4], s64[4]) fusion(p), kind=kInput, calls=fused_argmax
v = f32[4] get-tuple-element(f), index=0
i = s64[4] get-tuple-element(f), index=1
pair = (f32[4], s64[4]) tuple(v, i)
j = s64[4] get-tuple-element(pair), index=1
ROOT t = (s64[4]) tuple(j)""", ARGMAX))
    assert module_text(result.module).endswith("""\
ENTRY main {
  p = f32[4,6] parameter(0)
  f = s64[4] fusion(p), kind=kInput, calls=fused_argmax
  ROOT t = (s64[4]) tuple(f)
}
""")


@pytest.mark.parametrize("entry", [
    # Both elements read.
    """\
p = f32[4,6] parameter(0)
f = (f32[4], s64[4]) fusion(p), kind=kInput, calls=fused_argmax
v = f32[4] get-tuple-element(f), index=0
i = s64[4] get-tuple-element(f), index=1
ROOT t = (f32[4], s64[4]) tuple(v, i)""",
    # The fusion is the root: the caller reads all of it.
    """\
p = f32[4,6] parameter(0)
ROOT f = (f32[4], s64[4]) fusion(p), kind=kInput, calls=fused_argmax""",
])
def test_nothing_to_narrow(entry):
    before, result = run_pass(UnusedOutputs(), hlo(entry, ARGMAX))
    assert not result.changed and result.module is before


# -- on the CPU ----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XLA_EXPLORER_CACHE", str(tmp_path_factory.getbasetemp() / "kernels"))


REDUCTIONS = {"argmax": np.argmax, "argmin": np.argmin}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arg_reductions_have_no_temporaries_and_match_numpy(rng, name, axis, dtype):
    fn = REDUCTIONS[name]
    x = rng.standard_normal((16, 8)).astype(dtype)
    x[3, 5] = x[3, 6] = 9  # a tie: the first index wins, as in NumPy
    x[7, 2] = np.nan  # NaN wins, as in NumPy
    ex = xe.explore(lambda x: fn(x * 2 + 1, axis=axis), x, backend="cpu")
    assert ex.buffers.peak_bytes == 0
    assert all(b.category != "temporary" for b in ex.buffers.buffers)
    got = ex.run(x)
    want = fn(x * 2 + 1, axis=axis)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    (source,) = ex.kernels.values()
    if axis != 0:  # over rows or all of it: the running value lives in a register
        assert "np.empty" not in source


def test_max_and_argmax_of_the_same_values(rng):
    # Two reductions in one kernel; the variadic reduce's own value is read by nothing.
    x = rng.standard_normal((16, 8)).astype(np.float32)
    ex = xe.explore(lambda x: (np.max(x * 2 + 1, axis=1), np.argmax(x * 2 + 1, axis=1)), x,
                    backend="cpu")
    assert len(ex.fusions) == 1 and ex.buffers.peak_bytes == 0
    m, i = ex.run(x)
    np.testing.assert_array_equal(m, np.max(x * 2 + 1, axis=1))
    np.testing.assert_array_equal(i, np.argmax(x * 2 + 1, axis=1))


@pytest.mark.parametrize("axis", [0, 1])
def test_a_variadic_reduce_whose_value_and_index_are_both_read(rng, axis):
    # No NumPy program reads both halves of one argmax reduce: the HLO says it directly.
    from xla_explorer.compiler import compile

    kept = 1 - axis
    text = hlo(f"""\
p = f32[4,6] parameter(0)
f = (f32[{(4, 6)[kept]}], s64[{(4, 6)[kept]}]) fusion(p), kind=kInput, calls=fused_argmax
v = f32[{(4, 6)[kept]}] get-tuple-element(f), index=0
i = s64[{(4, 6)[kept]}] get-tuple-element(f), index=1
ROOT t = (f32[{(4, 6)[kept]}], s64[{(4, 6)[kept]}]) tuple(v, i)""",
               ARGMAX.replace("(f32[4], s64[4]) reduce",
                              f"(f32[{(4, 6)[kept]}], s64[{(4, 6)[kept]}]) reduce")
               .replace("dimensions={1}", f"dimensions={{{axis}}}")
               .replace("iota_dimension=1", f"iota_dimension={axis}"))
    compilation = compile(xe.verify(xe.parse_hlo(text)), "cpu")
    stage = next(s for s in compilation.stages if s.name == "unused-outputs")
    assert not stage.changed  # both are read
    x = rng.standard_normal((4, 6)).astype(np.float32)
    v, i = compilation.executable(x)
    np.testing.assert_array_equal(v, x.max(axis=axis))
    np.testing.assert_array_equal(i, x.argmax(axis=axis))
