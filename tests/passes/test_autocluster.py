"""Auto-clustering: HLO text in, the same text out with every computing instruction marked
`frontend_attributes={_xla_cluster="cluster_N"}` or `{_xla_cluster="eager"}`, and a reason for
everything left out. Then fusion and multi-output fusion, which must not join across marks.
"""
from __future__ import annotations

import numpy as np

import xla_explorer as xe
from xla_explorer.passes.autocluster import (
    CLUSTER_KEY, EAGER, AutoCluster, Cluster, Clustering, EagerOp, cluster_boundary, cluster_of,
    with_cluster)
from xla_explorer.passes.base import Pipeline
from xla_explorer.passes.fusion import Fusion
from xla_explorer.passes.multi_output_fusion import MultiOutputFusion
from xla_explorer.passes.pipeline import default_passes
from xla_explorer.runtime.reference import run_module

from .hlo_pass_helpers import (ADD, MAX, SUM_AND_SUMSQ, assert_same_meaning, entry_body, hlo,
                               run_pass)


def C(n) -> str:  # noqa: N802 - reads like the attribute it stands for
    return f'frontend_attributes={{_xla_cluster="cluster_{n}"}}'


E = 'frontend_attributes={_xla_cluster="eager"}'


def module_text(module) -> str:
    """The printed module below its `HloModule ...` line: every computation, ENTRY last."""
    return module.to_text().split("\n", 2)[2]


def notes(result) -> list[tuple[str, str]]:
    return [(n.rule, n.message) for n in result.notes]


def cluster_pass(text: str, **options):
    """AutoCluster on `text`, without running it on random inputs (a value-dependent shape,
    like nonzero's, only fits the input it was traced with)."""
    before = xe.verify(xe.parse_hlo(text))
    result = AutoCluster(**options).run(before)
    xe.verify(result.module)
    assert result.changed == (result.module.fingerprint() != before.fingerprint())
    return before, result


UNIQUE_BETWEEN_CHAINS = hlo("""\
x = f32[16] parameter(0)
n = f32[16] negate(x)
e = f32[16] exponential(n)
u = f32[16] custom-call(e), custom_call_target="numpy.unique", metadata={source_line=12}
m = f32[16] multiply(u, u)
ROOT t = f32[16] tanh(m)""")


# -- clusters --------------------------------------------------------------------------------

def test_two_compilable_chains_around_a_custom_call_become_two_clusters():
    _, result = run_pass(AutoCluster(), UNIQUE_BETWEEN_CHAINS)
    assert result.changed
    assert entry_body(result.module) == f"""\
x = f32[16] parameter(0)
n = f32[16] negate(x), {C(0)}
e = f32[16] exponential(n), {C(0)}
u = f32[16] custom-call(e), custom_call_target="numpy.unique", {E}, metadata={{source_line=12}}
m = f32[16] multiply(u, u), {C(1)}
ROOT t = f32[16] tanh(m), {C(1)}"""
    unique = ("numpy.unique (line 12) is not compilable: its output shape depends on its "
              "input values")
    assert result.artifact == Clustering(
        (Cluster("cluster_0", ("n", "e")), Cluster("cluster_1", ("m", "t"))),
        (EagerOp("u", "numpy.unique", unique, 12),))
    assert result.artifact.compiled == result.artifact.clusters
    assert str(result.artifact.compiled[0]) == "cluster_0: n, e (2 instructions)"
    assert notes(result) == [
        ("cluster", "cluster_0 compiles n and e as one unit"),
        ("cluster", "cluster_1 compiles m and t as one unit"),
        ("not-compilable", unique),
    ]


def test_a_direct_edge_is_not_contracted_when_the_two_also_meet_through_an_eager_op():
    # b reads a directly and through unique: one cluster {a, b} would have to run both before
    # and after the unique (TensorFlow's GraphCycles check refuses it the same way).
    text = hlo("""\
x = f32[16] parameter(0)
a = f32[16] exponential(x)
u = f32[16] custom-call(a), custom_call_target="numpy.unique"
ROOT b = f32[16] add(a, u)""")
    _, result = run_pass(AutoCluster(min_cluster_size=1), text)
    assert entry_body(result.module) == f"""\
x = f32[16] parameter(0)
a = f32[16] exponential(x), {C(0)}
u = f32[16] custom-call(a), custom_call_target="numpy.unique", {E}
ROOT b = f32[16] add(a, u), {C(1)}"""
    cycle = ("cycle", "kept a and b apart: joining them would make a cycle through u")
    assert notes(result)[0] == cycle
    assert result.notes[0].instructions == ("a", "b", "u")

    # With the default minimum of 2, each is a cluster of one: both run eagerly.
    _, result = run_pass(AutoCluster(), text)
    assert [i.attr("frontend_attributes") for i in result.module.entry.instructions] == [
        None, '{_xla_cluster="eager"}', '{_xla_cluster="eager"}', '{_xla_cluster="eager"}']
    assert result.artifact.clusters == ()
    assert notes(result) == [
        cycle,
        ("min-size", "a runs eagerly: its cluster would have 1 instruction, below the minimum "
                     "of 2 (one compiled op saves nothing over one NumPy call)"),
        ("not-compilable", "numpy.unique (u) is not compilable: its output shape depends on "
                           "its input values"),
        ("min-size", "b runs eagerly: its cluster would have 1 instruction, below the minimum "
                     "of 2 (one compiled op saves nothing over one NumPy call)"),
    ]


def test_the_cycle_check_runs_over_clusters_not_instructions():
    # No instruction path leads from a to b but the direct one. Yet a -> u -> x1, and x1 is
    # in one cluster with x2, which b reads: that cluster runs after u and before b, so a
    # cluster {a, b} would need it and feed it.
    _, result = run_pass(AutoCluster(min_cluster_size=1), hlo("""\
p = f32[16] parameter(0)
a = f32[16] negate(p)
u = f32[16] custom-call(a), custom_call_target="numpy.unique"
x1 = f32[16] exponential(u)
x2 = f32[16] sine(p)
y = f32[16] add(x1, x2)
b = f32[16] multiply(a, x2)
ROOT out = (f32[16], f32[16]) tuple(y, b)"""))
    assert entry_body(result.module) == f"""\
p = f32[16] parameter(0)
a = f32[16] negate(p), {C(0)}
u = f32[16] custom-call(a), custom_call_target="numpy.unique", {E}
x1 = f32[16] exponential(u), {C(1)}
x2 = f32[16] sine(p), {C(1)}
y = f32[16] add(x1, x2), {C(1)}
b = f32[16] multiply(a, x2), {C(1)}
ROOT out = (f32[16], f32[16]) tuple(y, b)"""
    assert ("cycle", "kept a and b apart: joining them would make a cycle through u") in \
        notes(result)


def test_a_lone_compilable_op_runs_eagerly_unless_the_minimum_is_one():
    text = hlo("""\
x = f32[16] parameter(0)
u = f32[16] custom-call(x), custom_call_target="numpy.unique"
n = f32[16] negate(u)
ROOT s = f32[16] custom-call(n), custom_call_target="numpy.sort", backend_config="axis=0\"""")
    _, result = run_pass(AutoCluster(), text)
    assert entry_body(result.module) == f"""\
x = f32[16] parameter(0)
u = f32[16] custom-call(x), custom_call_target="numpy.unique", {E}
n = f32[16] negate(u), {E}
ROOT s = f32[16] custom-call(n), custom_call_target="numpy.sort", backend_config="axis=0", {E}"""
    assert result.artifact == Clustering((), (
        EagerOp("u", "numpy.unique", "numpy.unique (u) is not compilable: its output shape "
                "depends on its input values", 0),
        EagerOp("n", "negate", "n runs eagerly: its cluster would have 1 instruction, below "
                "the minimum of 2 (one compiled op saves nothing over one NumPy call)", 0),
        EagerOp("s", "numpy.sort", "numpy.sort (s) is not compilable: a custom-call runs in "
                "NumPy (np.sort now traces to XLA's sort op, which compiles)", 0),
    ))

    _, result = run_pass(AutoCluster(min_cluster_size=1), text)
    assert f"n = f32[16] negate(u), {C(0)}" in entry_body(result.module)
    assert result.artifact.clusters == (Cluster("cluster_0", ("n",)),)
    assert [e.name for e in result.artifact.eager] == ["u", "s"]


def test_a_cluster_below_a_larger_minimum_names_its_members():
    _, result = run_pass(AutoCluster(min_cluster_size=3), UNIQUE_BETWEEN_CHAINS)
    assert result.artifact.clusters == ()
    assert [e.reason for e in result.artifact.eager if e.name in ("n", "t")] == [
        "n runs eagerly: its cluster (n and e) would have 2 instructions, below the minimum "
        "of 3 (too few to be worth compiling)",
        "t runs eagerly: its cluster (m and t) would have 2 instructions, below the minimum "
        "of 3 (too few to be worth compiling)",
    ]


def test_every_instruction_left_out_has_a_reason_and_structure_is_never_marked():
    # nonzero's result is a tuple read through get-tuple-element; cumsum is an opaque call of
    # a NumPy function the op table lacks.
    before, result = cluster_pass(hlo("""\
x = f32[8] parameter(0)
zero = f32[] constant(0)
zb = f32[8] broadcast(zero), dimensions={}
p = pred[8] compare(x, zb), direction=GT
nz = (s32[3]) custom-call(p), custom_call_target="numpy.nonzero", metadata={source_line=5}
i = s32[3] get-tuple-element(nz), index=0
f = f32[3] convert(i)
cs = f32[3] custom-call(f), custom_call_target="numpy.cumsum", backend_config="numpy.cumsum/0123456789ab", metadata={source_line=7}
ROOT out = (f32[3], f32[8]) tuple(cs, zb)"""))
    assert entry_body(result.module) == f"""\
x = f32[8] parameter(0)
zero = f32[] constant(0)
zb = f32[8] broadcast(zero), dimensions={{}}, {C(0)}
p = pred[8] compare(x, zb), direction=GT, {C(0)}
nz = (s32[3]) custom-call(p), custom_call_target="numpy.nonzero", {E}, metadata={{source_line=5}}
i = s32[3] get-tuple-element(nz), index=0
f = f32[3] convert(i), {E}
cs = f32[3] custom-call(f), custom_call_target="numpy.cumsum", backend_config="numpy.cumsum/0123456789ab", {E}, metadata={{source_line=7}}
ROOT out = (f32[3], f32[8]) tuple(cs, zb)"""
    eager = result.artifact.eager
    marked_eager = [i.name for i in result.module.entry.instructions if cluster_of(i) == EAGER]
    assert [e.name for e in eager] == marked_eager == ["nz", "f", "cs"]
    assert [(e.op, e.source_line) for e in eager] == [
        ("numpy.nonzero", 5), ("convert", 0), ("numpy.cumsum", 7)]
    assert eager[0].reason == ("numpy.nonzero (line 5) is not compilable: its output shape "
                               "depends on its input values")
    assert eager[2].reason == ("numpy.cumsum (line 7) is not compilable: the op table has no row "
                               "for it, so it runs as an opaque NumPy call")
    # Parameters, constants, tuples and get-tuple-elements carry no mark.
    unmarked = [i.name for i in result.module.entry.instructions if cluster_of(i) is None]
    assert unmarked == ["x", "zero", "i", "out"]
    # A get-tuple-element runs where its tuple was made: in the eager nonzero.
    at = result.module.entry.get
    assert cluster_boundary(at("i"), at("f")) == "nz runs eagerly, outside every cluster"


def test_a_module_without_custom_calls_is_one_cluster():
    _, result = run_pass(AutoCluster(), hlo("""\
x = f32[16] parameter(0)
y = f32[16] parameter(1)
s = f32[16] sine(x)
c = f32[16] cosine(y)
m = f32[16] multiply(s, s)
ROOT t = (f32[16], f32[16]) tuple(m, c)"""))
    # c shares no edge with s and m, but neither side needs the other: one compilation.
    assert entry_body(result.module) == f"""\
x = f32[16] parameter(0)
y = f32[16] parameter(1)
s = f32[16] sine(x), {C(0)}
c = f32[16] cosine(y), {C(0)}
m = f32[16] multiply(s, s), {C(0)}
ROOT t = (f32[16], f32[16]) tuple(m, c)"""
    assert result.artifact == Clustering((Cluster("cluster_0", ("s", "c", "m")),), ())
    assert notes(result)[0] == (
        "independent", "joined the cluster of c to the cluster of s: neither needs a result of "
                       "the other, so one compilation serves both")


def test_independent_clusters_do_not_join_across_a_dependency():
    # t depends on e through the unique: the two clusters stay apart.
    _, result = run_pass(AutoCluster(), UNIQUE_BETWEEN_CHAINS)
    assert not any(n.rule == "independent" for n in result.notes)


# -- the attribute ---------------------------------------------------------------------------

def test_the_marked_text_reads_back_exactly_and_other_frontend_attributes_stay():
    _, result = run_pass(AutoCluster(), hlo("""\
x = f32[16] parameter(0)
n = f32[16] negate(x), frontend_attributes={_xla_compute_type="host"}
ROOT e = f32[16] exponential(n)"""))
    text = result.module.to_text()
    assert text.split("\n", 2)[2] == f"""\
ENTRY main {{
  x = f32[16] parameter(0)
  n = f32[16] negate(x), frontend_attributes={{_xla_compute_type="host",_xla_cluster="cluster_0"}}
  ROOT e = f32[16] exponential(n), {C(0)}
}}
"""
    again = xe.parse_hlo(text)
    assert again.to_text() == text
    assert [cluster_of(i) for i in again.entry.instructions] == [None, "cluster_0", "cluster_0"]
    # Clustering a clustered module again changes nothing (run_pass checks it is the same).
    _, second = run_pass(AutoCluster(), text)
    assert not second.changed


def test_with_cluster_replaces_only_its_own_key():
    text = hlo("""\
x = f32[4] parameter(0)
ROOT n = f32[4] negate(x), frontend_attributes={a="1",_xla_cluster="cluster_3",b="x,y"}""")
    n = xe.parse_hlo(text).entry.root
    assert cluster_of(n) == "cluster_3"
    moved = with_cluster(n, EAGER)
    assert moved.attr("frontend_attributes") == '{a="1",b="x,y",_xla_cluster="eager"}'
    assert cluster_of(moved) == EAGER and CLUSTER_KEY == "_xla_cluster"


def test_cluster_boundary_rules():
    entry = xe.parse_hlo(hlo(f"""\
x = f32[4] parameter(0)
one = f32[] constant(1)
ob = f32[4] broadcast(one), dimensions={{}}, {C(0)}
a = f32[4] add(x, ob), {C(0)}
b = f32[4] negate(a), {C(1)}
u = f32[4] custom-call(a), custom_call_target="numpy.sort", backend_config="axis=0", {E}
plain = f32[4] abs(x)
ROOT also = f32[4] abs(plain)""")).entry
    at = entry.get
    assert cluster_boundary(at("one"), at("ob")) == ""  # a constant is copied into kernels
    assert cluster_boundary(at("x"), at("a")) == ""
    assert cluster_boundary(at("ob"), at("a")) == ""  # one cluster
    assert cluster_boundary(at("plain"), at("also")) == ""  # never clustered
    assert cluster_boundary(at("a"), at("b")) == (
        "a is in cluster_0 and b in cluster_1: each cluster compiles on its own")
    assert cluster_boundary(at("a"), at("u")) == "u runs eagerly, outside every cluster"
    assert cluster_boundary(at("u"), at("b")) == "u runs eagerly, outside every cluster"


# -- the meaning is kept ---------------------------------------------------------------------

def test_the_interpreter_gives_numpys_answer_before_and_after():
    before, result = cluster_pass(hlo("""\
x = f32[4] parameter(0)
n = f32[4] negate(x)
a = f32[4] multiply(n, n)
u = f32[3] custom-call(a), custom_call_target="numpy.unique"
e = f32[3] exponential(u)
h = f32[3] multiply(e, e)
ROOT t = (f32[3], f32[4]) tuple(h, a)"""))
    assert [c.instructions for c in result.artifact.clusters] == [("n", "a"), ("e", "h")]
    x = np.array([3, -1, -3, 2], np.float32)
    want = [np.exp(np.unique(x * x)) ** 2, x * x]  # unique: [1, 4, 9]
    for module in (before, result.module):
        got = run_module(module, [x])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_array_equal(got[1], want[1])


# -- fusion honours the clusters -------------------------------------------------------------

def test_fusion_does_not_cross_a_cluster_or_an_eager_instruction():
    _, result = run_pass(Fusion(), hlo(f"""\
x = f32[16] parameter(0)
one = f32[] constant(1)
ob = f32[16] broadcast(one), dimensions={{}}, {C(0)}
a = f32[16] add(x, ob), {C(0)}
e = f32[16] exponential(a), {C(0)}
n = f32[16] negate(e), {E}
m = f32[16] multiply(n, e), {C(1)}
ROOT t = f32[16] tanh(m), {C(1)}"""))
    assert module_text(result.module) == f"""\
fused_computation.2 {{
  param_0.3 = f32[16] parameter(0)
  one = f32[] constant(1)
  ob = f32[16] broadcast(one), dimensions={{}}, {C(0)}
  a = f32[16] add(param_0.3, ob), {C(0)}
  ROOT e = f32[16] exponential(a), {C(0)}
}}

fused_computation.5 {{
  param_0.6 = f32[16] parameter(0)
  param_1.7 = f32[16] parameter(1)
  m = f32[16] multiply(param_0.6, param_1.7), {C(1)}
  ROOT t = f32[16] tanh(m), {C(1)}
}}

ENTRY main {{
  x = f32[16] parameter(0)
  add_exponential_fusion.1 = f32[16] fusion(x), kind=kLoop, calls=fused_computation.2, {C(0)}
  n = f32[16] negate(add_exponential_fusion.1), {E}
  ROOT multiply_tanh_fusion.4 = f32[16] fusion(n, add_exponential_fusion.1), kind=kLoop, calls=fused_computation.5, {C(1)}
}}
"""
    assert notes(result) == [
        ("fused", "fused m into t: element-wise, single consumer"),
        ("refused", "not fused n into m: n runs eagerly, outside every cluster"),
        ("refused", "not fused e into m: e is in cluster_0 and m in cluster_1: each cluster "
                    "compiles on its own"),
        ("refused", "not fused e into n: n runs eagerly, outside every cluster"),
        ("fused", "fused a into e: element-wise, single consumer"),
        ("fused", "fused ob into a: data movement, done by index arithmetic, single consumer"),
        ("fused", "fused one into ob: a scalar constant, single consumer"),
    ]


def test_row_fusion_does_not_join_kernels_of_two_clusters():
    _, result = run_pass(Fusion(), hlo(f"""\
x = f32[4,8] parameter(0)
ninf = f32[] constant(-inf)
m = f32[4] reduce(x, ninf), dimensions={{1}}, to_apply=max, {C(0)}
mb = f32[4,8] broadcast(m), dimensions={{0}}, {C(1)}
sub = f32[4,8] subtract(x, mb), {C(1)}
e = f32[4,8] exponential(sub), {C(1)}
zero = f32[] constant(0)
s = f32[4] reduce(e, zero), dimensions={{1}}, to_apply=add, {C(1)}
sb = f32[4,8] broadcast(s), dimensions={{0}}, {C(1)}
ROOT out = f32[4,8] divide(e, sb), {C(1)}""", ADD + "\n\n" + MAX))
    # The max (with its constant) is a kernel of cluster_0; the rest of softmax is one row
    # kernel of cluster_1, which reads the max from memory.
    entry = result.module.entry
    assert [(i.name, cluster_of(i)) for i in entry.instructions] == [
        ("x", None), ("reduce_fusion.1", "cluster_0"), ("row_fusion.4", "cluster_1")]
    assert entry.root.operands[0].name == "reduce_fusion.1"
    said = notes(result)
    assert ("refused", "not fused m into mb: m is in cluster_0 and mb in cluster_1: each "
                       "cluster compiles on its own") in said
    assert said[-1] == ("row-refused", "not row-fused: the fusion rooted at m and the fusion "
                        "rooted at out: m is in cluster_0 and out in cluster_1: each cluster "
                        "compiles on its own")


SIBLINGS_IN = """\
x = f32[16] parameter(0)
s = f32[] fusion(x), kind=kInput, calls=fused_sum, frontend_attributes={{_xla_cluster="{0}"}}
ss = f32[] fusion(x), kind=kInput, calls=fused_sumsq, frontend_attributes={{_xla_cluster="{1}"}}
ROOT t = (f32[], f32[]) tuple(s, ss)"""


def test_multi_output_fusion_does_not_join_siblings_of_two_clusters():
    before, result = run_pass(MultiOutputFusion(), hlo(
        SIBLINGS_IN.format("cluster_0", "cluster_1"), SUM_AND_SUMSQ))
    assert not result.changed and result.module is before
    assert notes(result) == [("refused", (
        "not merged the fusion rooted at sum.r and the fusion rooted at sumsq.r (both read x): "
        "sum.r is in cluster_0 and sumsq.r in cluster_1: each cluster compiles on its own"))]


def test_multi_output_fusion_in_one_cluster_marks_the_fusion_and_its_elements():
    _, result = run_pass(MultiOutputFusion(), hlo(
        SIBLINGS_IN.format("cluster_0", "cluster_0"), SUM_AND_SUMSQ))
    assert module_text(result.module) == ADD + f"""

fused_computation.2 {{
  param_0.3 = f32[16] parameter(0)
  sum.zero = f32[] constant(0)
  sum.r = f32[] reduce(param_0.3, sum.zero), dimensions={{0}}, to_apply=add, {C(0)}
  sumsq.sq = f32[16] multiply(param_0.3, param_0.3), {C(0)}
  sumsq.r = f32[] reduce(sumsq.sq, sum.zero), dimensions={{0}}, to_apply=add, {C(0)}
  ROOT tuple.4 = (f32[], f32[]) tuple(sum.r, sumsq.r)
}}

ENTRY main {{
  x = f32[16] parameter(0)
  multi_output_fusion.1 = (f32[], f32[]) fusion(x), kind=kInput, calls=fused_computation.2, {C(0)}
  get-tuple-element.5 = f32[] get-tuple-element(multi_output_fusion.1), index=0, {C(0)}
  get-tuple-element.6 = f32[] get-tuple-element(multi_output_fusion.1), index=1, {C(0)}
  ROOT t = (f32[], f32[]) tuple(get-tuple-element.5, get-tuple-element.6)
}}
"""


# -- the pipeline ----------------------------------------------------------------------------

def test_auto_cluster_runs_after_dce_only_when_asked():
    names = ["algsimp", "cse", "dce", "roll-loops", "fusion", "multi-output-fusion",
             "unused-outputs", "schedule", "buffer-assignment"]
    assert [p.name for p in default_passes()] == names
    assert [p.name for p in default_passes(autocluster=True)] == names[:4] + ["auto-cluster"] \
        + names[4:]


def test_the_pipeline_never_fuses_across_clusters_or_eager_instructions():
    module = xe.verify(xe.parse_hlo(hlo("""\
x = f32[16] parameter(0)
n = f32[16] negate(x)
a = f32[16] exponential(n)
u = f32[16] custom-call(a), custom_call_target="numpy.unique"
b = f32[16] add(a, u)
c = f32[16] multiply(b, b)
s = f32[16] sine(x)
d = f32[16] add(s, c)
ROOT t = (f32[16], f32[16]) tuple(d, a)""")))
    pipeline = Pipeline(default_passes(autocluster=True))
    out = pipeline.run(module)
    assert_same_meaning(module, out)
    assert entry_body(out) == f"""\
x = f32[16] parameter(0)
negate_exponential_fusion.1 = f32[16] fusion(x), kind=kLoop, calls=fused_computation.2, {C(0)}
u = f32[16] custom-call(negate_exponential_fusion.1), custom_call_target="numpy.unique", {E}
sine_add_fusion.4 = f32[16] fusion(negate_exponential_fusion.1, u, x), kind=kLoop, calls=fused_computation.5, {C(1)}
ROOT t = (f32[16], f32[16]) tuple(sine_add_fusion.4, negate_exponential_fusion.1)"""
    # Every kernel's instructions come from the kernel's own cluster.
    for fusion in (i for i in out.entry.instructions if i.opcode == "fusion"):
        body = out.computation(fusion.attr("calls")).instructions
        work = {cluster_of(i) for i in body if i.opcode not in ("parameter", "constant")}
        assert work == {cluster_of(fusion)} and EAGER not in work
    stages = {s.name: s for s in pipeline.stages}
    assert ("refused", "not fused a into b: a is in cluster_0 and b in cluster_1: each cluster "
                       "compiles on its own") in notes(stages["fusion"])
    assert ("refused", "not merged the fusion rooted at a and the fusion rooted at d (both "
                       "read x): a is in cluster_0 and d in cluster_1: each cluster compiles on "
                       "its own") in notes(stages["multi-output-fusion"])


def test_the_pipeline_without_autocluster_leaves_no_marks():
    out = Pipeline(default_passes()).run(xe.parse_hlo(UNIQUE_BETWEEN_CHAINS))
    assert "frontend_attributes" not in out.to_text()
