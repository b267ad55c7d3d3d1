"""HLO modules drawn as Graphviz graphs, with XLA's graph-dumper conventions.

The DOT text is read back with a small parser (node ids, attributes, clusters, edges), so the
tests check what is drawn rather than how the text happens to be laid out, and every graph is
rendered by the real `dot`.
"""
import re
import shutil
import xml.etree.ElementTree as ET

import graphviz
import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.trace.tracer import trace
from xla_explorer.viz import GraphvizNotInstalled, graph, render_svg, to_dot
from xla_explorer.viz.graphviz import (COLLAPSE_ABOVE, DRAW_AT_MOST, drawing,
                                       expanded_node_count)

from .programs import dense, layernorm, softmax

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


# -- programs ---------------------------------------------------------------------------------


def unique_scaled(x):
    return np.unique(x) * 2.0


def scaled(x):
    return x * 0.5 + np.array([1, 2, 3, 4] * 5, np.float32)


def long_chain(x):
    for _ in range(60):
        x = np.tanh(x) * 1.01 + x.sum()
    return x


def explorations():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    return {
        "softmax": xe.explore(softmax, x, backend="cpu"),
        "layernorm": xe.explore(layernorm, x, backend="cpu"),
        "dense": xe.explore(dense, x, w, b, backend="cpu"),
        "unique": xe.explore(unique_scaled, np.array([3.0, 1.0, 3.0, 2.0]),
                             backend="interpreter"),
    }


@pytest.fixture(scope="module")
def programs():
    return explorations()


PROGRAMS = ["softmax", "layernorm", "dense", "unique"]


# -- reading DOT back -------------------------------------------------------------------------

_ATTR = re.compile(r'(\w+)=(<(?:[^<>]|<[^<>]*>)*>|"(?:[^"\\]|\\.)*"|[^\s\]]+)')
_NODE = re.compile(r"^\s*(n\d+) \[(.*)\]\s*$")
_EDGE = re.compile(r"^\s*(n\d+) -> (n\d+)")
_SUBGRAPH = re.compile(r"^\s*subgraph (\w+) \{")


def attrs_of(text: str) -> dict[str, str]:
    out = {}
    for key, value in _ATTR.findall(text):
        if value.startswith('"'):
            value = value[1:-1]
        out[key] = value
    return out


class Dot:
    """The nodes, edges and clusters of DOT text written by viz.graphviz."""

    def __init__(self, text: str):
        self.text = text
        self.nodes: dict[str, dict[str, str]] = {}
        self.edges: list[tuple[str, str]] = []
        self.clusters: dict[str, dict] = {}  # name -> {"attrs": ..., "nodes": set of ids}
        stack: list[str] = []
        for line in text.splitlines():
            if m := _SUBGRAPH.match(line):
                stack.append(m.group(1))
                self.clusters[m.group(1)] = {"attrs": {}, "nodes": set()}
            elif line.strip() == "}" and stack:
                stack.pop()
            elif m := _NODE.match(line):
                self.nodes[m.group(1)] = attrs_of(m.group(2))
                for name in stack:  # a node in a fusion inside an auto-cluster is in both
                    self.clusters[name]["nodes"].add(m.group(1))
            elif m := _EDGE.match(line):
                self.edges.append((m.group(1), m.group(2)))
            elif stack and "label=" in line:
                self.clusters[stack[-1]]["attrs"] = attrs_of(line)

    def name(self, node_id: str) -> str:
        """The instruction a node draws: the first line of its tooltip."""
        return self.nodes[node_id]["tooltip"].split("\\n")[0]

    def by_name(self) -> dict[str, dict[str, str]]:
        return {self.name(n): a for n, a in self.nodes.items()}

    def edge_names(self) -> set[tuple[str, str]]:
        return {(self.name(a), self.name(b)) for a, b in self.edges}

    def fusion_clusters(self) -> dict[str, dict]:
        return {k: v for k, v in self.clusters.items()
                if not k.startswith(("cluster_xla_", "cluster_loop_"))}

    def loop_clusters(self) -> dict[str, dict]:
        return {k: v for k, v in self.clusters.items() if k.startswith("cluster_loop_")}


def svg_of(text: str) -> ET.Element:
    svg = graphviz.Source(text).pipe(format="svg", encoding="utf-8")
    return ET.fromstring(svg)


def svg_nodes(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"]


def is_folded_constant(inst) -> bool:
    """What the dumper folds into users: constants of at most 8 elements, and data movement
    (broadcast, reshape) of a one-element constant."""
    if inst.opcode == "constant":
        return inst.literal.size <= 8
    return (inst.opcode in ("broadcast", "reshape") and inst.operands[0].opcode == "constant"
            and inst.operands[0].literal.size == 1)


# -- tests ------------------------------------------------------------------------------------


@needs_dot
@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("stage", [0, -1])
def test_every_stage_graph_renders_with_dot(programs, name, stage):
    ex = programs[name]
    text = to_dot(ex.stage(stage).module)
    dot = Dot(text)
    root = svg_of(text)
    assert len(svg_nodes(root)) == len(dot.nodes) > 0
    # graph() gives the same DOT, as a Digraph that renders through render_svg.
    g = graph(ex.stage(stage).module)
    assert isinstance(g, graphviz.Digraph) and g.source == text
    assert render_svg(g).lstrip().startswith(("<?xml", "<svg"))


@pytest.mark.parametrize("name", ["softmax", "layernorm", "dense"])
def test_traced_graph_has_one_node_per_instruction_and_one_edge_per_operand(programs, name):
    module = programs[name].stage(0).module
    dot = Dot(to_dot(module))
    drawn = [i for i in module.entry.instructions if not is_folded_constant(i)]
    assert sorted(dot.by_name()) == sorted(i.name for i in drawn)
    assert dot.edge_names() == {(o.name, i.name) for i in drawn for o in i.operands
                                if not is_folded_constant(o)}
    assert not dot.fusion_clusters()  # nothing is fused before the pipeline runs


@pytest.mark.parametrize("name", PROGRAMS)
def test_one_cluster_per_multi_instruction_fusion(programs, name):
    ex = programs[name]
    dot = Dot(to_dot(ex.module, collapse_fusions=False))
    multi = {f.name: f for f in ex.fusions if len(f.instructions) > 1}
    assert multi, "each program should fuse something"
    clusters = dot.fusion_clusters()
    assert set(clusters) == {"cluster_" + re.sub(r"\W", "_", n) for n in multi}
    for fname, fusion in multi.items():
        cluster = clusters["cluster_" + re.sub(r"\W", "_", fname)]
        inside = {dot.name(n) for n in cluster["nodes"]}
        comp = ex.module.computation(ex.module.entry.get(fname).attr("calls"))
        folded = {i.name for i in comp.instructions if is_folded_constant(i)}
        assert inside == set(fusion.instructions) - folded
        # Labelled with the fusion's name and its kind.
        label = cluster["attrs"]["label"]
        assert fname in label
        assert ("row fusion" if fusion.row else fusion.kind) in label


def test_row_fusion_cluster_says_row_fusion(programs):
    (fusion,) = [f for f in programs["softmax"].fusions if len(f.instructions) > 1]
    assert fusion.row
    (cluster,) = Dot(to_dot(programs["softmax"].module)).fusion_clusters().values()
    assert "row fusion" in cluster["attrs"]["label"] and "kInput" not in cluster["attrs"]["label"]


# XLA's palette, by what an instruction does.
PALE_YELLOW, ORANGE, DARK_BLUE, PURPLE = "#fff9c4", "#ffe0b2", "#1565c0", "#e1bee7"
GREEN, RED, GRAY = "#c8e6c9", "#ffcdd2", "#cfd8dc"


@pytest.mark.parametrize("opcode,fill", [
    ("exponential", PALE_YELLOW), ("subtract", PALE_YELLOW), ("divide", PALE_YELLOW),
    ("parameter", ORANGE), ("reduce", PURPLE), ("broadcast", GREEN), ("reshape", GREEN),
    ("tuple", GRAY),
])
def test_softmax_nodes_are_coloured_by_op_group(programs, opcode, fill):
    module = programs["softmax"].stage(0).module
    nodes = Dot(to_dot(module)).by_name()
    insts = [i for i in module.entry.instructions if i.opcode == opcode and i.name in nodes]
    assert insts
    for inst in insts:
        assert nodes[inst.name]["fillcolor"] == fill, inst.name


def test_dot_is_dark_blue_with_white_text_and_tuples_small_and_grey(programs):
    module = programs["dense"].stage(0).module
    nodes = Dot(to_dot(module)).by_name()
    (dot_inst,) = [i for i in module.entry.instructions if i.opcode == "dot"]
    assert nodes[dot_inst.name]["fillcolor"] == DARK_BLUE
    assert nodes[dot_inst.name]["fontcolor"] == "white"
    root = nodes[module.entry.root.name]
    assert root["fillcolor"] == GRAY and float(root["fontsize"]) < 11


def test_custom_call_is_red_and_runs_eagerly(programs):
    module = programs["unique"].module
    nodes = Dot(to_dot(module)).by_name()
    (call,) = [i for i in module.entry.instructions if i.opcode == "custom-call"]
    assert nodes[call.name]["fillcolor"] == RED
    assert "runs eagerly" in nodes[call.name]["label"]
    others = [a for n, a in nodes.items() if n != call.name]
    assert not any("runs eagerly" in a["label"] for a in others)


def test_small_constants_are_folded_into_their_users_and_big_ones_are_nodes():
    ex = xe.explore(scaled, np.ones(20, np.float32))
    module = ex.stage(0).module
    dot = Dot(to_dot(module))
    nodes = dot.by_name()
    consts = {i.name: i for i in module.entry.instructions if i.opcode == "constant"}
    big = {n for n, c in consts.items() if c.literal.size > 8}
    assert len(big) == 1 and len(consts) > len(big)
    assert {n for n in nodes if n in consts} == big  # only the big constants are nodes
    (mul,) = [i for i in module.entry.instructions if i.opcode == "multiply"]
    assert "× 0.5" in nodes[mul.name]["label"]
    for name in big:  # a big constant feeds its user through an edge
        assert any(src == name for src, _ in dot.edge_names())


def test_a_small_array_constant_is_printed_with_its_shape():
    text = """HloModule m, entry_computation_layout={(f32[3])->f32[3]}

ENTRY m {
  p = f32[3] parameter(0)
  c = f32[3] constant({1, 2, 3})
  ROOT s = f32[3] subtract(c, p)
}
"""
    nodes = Dot(to_dot(xe.parse_hlo(text))).by_name()
    assert set(nodes) == {"p", "s"}
    assert "f32[3] {1, 2, 3} −" in nodes["s"]["label"]  # constant on the left of the minus


def test_folded_operands_take_the_op_tables_symbol():
    """The symbol is the op table's (a compare's is its direction's); an op without one names
    the operand, as XLA's dumper does."""
    text = """HloModule m, entry_computation_layout={(f32[3])->(f32[3], pred[3], f32[3])}

ENTRY m {
  p = f32[3] parameter(0)
  c = f32[] constant(2)
  b = f32[3] broadcast(c), dimensions={}
  d = f32[3] divide(p, b)
  le = pred[3] compare(b, p), direction=LE
  a = f32[3] atan2(p, b)
  ROOT t = (f32[3], pred[3], f32[3]) tuple(d, le, a)
}
"""
    nodes = Dot(to_dot(xe.parse_hlo(text))).by_name()
    assert "÷ 2" in nodes["d"]["label"]
    assert "2 ≤" in nodes["le"]["label"]
    assert "operand 1 = 2" in nodes["a"]["label"]


def test_fusions_collapse_above_the_threshold():
    ex = xe.explore(long_chain, np.ones((4, 4), np.float32))
    module = ex.module
    assert expanded_node_count(module) > COLLAPSE_ABOVE
    collapsed = Dot(to_dot(module))
    assert not collapsed.fusion_clusters()
    fusions = [i for i in module.entry.instructions if i.opcode == "fusion"]
    assert fusions and len(collapsed.nodes) == len(module.entry)
    nodes = collapsed.by_name()
    for f in fusions:
        assert "fusion of" in nodes[f.name]["label"]
    expanded = Dot(to_dot(module, collapse_fusions=False))
    assert len(expanded.fusion_clusters()) == len(fusions)
    assert len(expanded.nodes) == expanded_node_count(module) > COLLAPSE_ABOVE


def heat(u, steps=200):  # 200 steps unrolled by tracing: about 2,600 instructions
    for _ in range(steps):
        u = u + np.float32(0.25) * (np.roll(u, 1) - np.float32(2) * u + np.roll(u, -1))
    return u


def test_a_graph_too_big_to_read_is_one_node_that_says_so():
    def shifts(x):  # 1,100 additions, each of its own constant: no two steps alike
        for k in range(1100):
            x = x + np.float32(k)
        return x

    # The trace alone: the drawing is of stage 0, and the pipeline's fusion of 1,100 steps
    # takes seconds (docs/performance.md).
    traced = trace(shifts, [np.ones(16, np.float32)]).module
    assert expanded_node_count(traced) > DRAW_AT_MOST
    g, names = drawing(traced)
    (node,) = Dot(g.source).nodes.values()
    assert f"{expanded_node_count(traced):,} nodes: too many to draw" in node["label"]
    assert names == {}


def test_a_loop_unrolled_by_tracing_is_drawn_as_one_step():
    ex = xe.explore(heat, np.ones(16, np.float32), backend="interpreter")
    traced = ex.stages[0].module
    dot = Dot(to_dot(traced))
    ((name, loop),) = dot.loop_clusters().items()
    # The first step made the constants every later step reads, so it is drawn on its own;
    # the other 199 are one step in the loop's cluster.
    assert "loop: 199 steps" in loop["attrs"]["label"]
    step = {dot.name(n) for n in loop["nodes"]}
    assert "add.29" in step and 8 <= len(step) <= 13
    assert len(dot.nodes) < 40 < len(traced.entry.instructions)
    # Dashed edges carry the step's result to the readers in the next step: the two rolls'
    # slices, the multiply by 2 and the final add.
    carried = re.findall(r"(n\d+) -> (n\d+) \[[^]]*style=dashed", dot.text)
    assert {dot.name(a) for a, _ in carried} == {"add.29"}
    assert len(carried) == 6
    # What follows the loop reads the last step's value, drawn as the first step's.
    root = traced.entry.root
    assert ("add.29", root.name) in dot.edge_names()
    # A loop this long is rolled into a while before fusion (roll-loops), drawn as a box of
    # its body. A shorter one stays unrolled; fused, each kernel holds two steps (fusion's
    # duplication limit): 20 kernels, 19 of them drawn as one loop.
    fused = Dot(to_dot(next(s for s in ex.stages if s.name == "fusion").module))
    (title,) = [c["attrs"]["label"] for c in fused.clusters.values()
                if "while loop" in c["attrs"].get("label", "")]
    assert "while loop: 200 steps" in title
    short = xe.explore(heat, np.ones(16, np.float32), 40, backend="interpreter")
    (loop,) = Dot(to_dot(short.stages[short.compiled.fusion_stage].module)).loop_clusters(
        ).values()
    assert "loop: 19 steps" in loop["attrs"]["label"]


def test_small_graphs_stay_expanded_unless_asked(programs):
    module = programs["dense"].module
    assert expanded_node_count(module) <= COLLAPSE_ABOVE
    assert Dot(to_dot(module)).fusion_clusters()
    collapsed = Dot(to_dot(module, collapse_fusions=True))
    assert not collapsed.fusion_clusters()
    (fusion,) = [i for i in module.entry.instructions if i.opcode == "fusion"]
    # The fusion is one node, with an edge from each of its operands; a dot inside makes it
    # the dot's colour.
    assert {(o.name, fusion.name) for o in fusion.operands} <= collapsed.edge_names()
    assert collapsed.by_name()[fusion.name]["fillcolor"] == DARK_BLUE


def test_tooltips_name_the_shape_dtype_and_source_line(programs):
    module = programs["softmax"].stage(0).module
    nodes = Dot(to_dot(module)).by_name()
    (exp,) = [i for i in module.entry.instructions if i.opcode == "exponential"]
    tip = nodes[exp.name]["tooltip"].split("\\n")
    line = softmax.__code__.co_firstlineno + 1
    assert tip[0] == exp.name
    assert "f32[4,8]" in tip[1] and "float32" in tip[2]
    assert f"{softmax.__code__.co_filename}:{line}" in nodes[exp.name]["tooltip"]


def test_changed_instructions_get_a_thick_outline(programs):
    module = programs["softmax"].stage(0).module
    exp = next(i.name for i in module.entry.instructions if i.opcode == "exponential")
    nodes = Dot(to_dot(module, changed={exp})).by_name()
    assert float(nodes[exp].get("penwidth", 1)) >= 3
    assert all(float(a.get("penwidth", 1)) < 3 for n, a in nodes.items() if n != exp)


CLUSTERED = """HloModule clustered, entry_computation_layout={(f64[4])->(f64[])}

add_f64 {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT s = f64[] add(a, b)
}

ENTRY clustered {
  x = f64[4] parameter(0)
  t = f64[4] tanh(x), frontend_attributes={_xla_cluster="cluster_0"}
  e = f64[4] exponential(t), frontend_attributes={_xla_cluster="cluster_0"}
  u = f64[3] custom-call(e), custom_call_target="numpy.unique", frontend_attributes={_xla_cluster="eager"}
  n = f64[3] negate(u), frontend_attributes={foo="1",_xla_cluster="cluster_1"}
  z = f64[] constant(0)
  r = f64[] reduce(n, z), dimensions={0}, to_apply=add_f64, frontend_attributes={_xla_cluster="cluster_1"}
  ROOT out = (f64[]) tuple(r)
}
"""


def test_auto_clusters_are_coloured_regions_and_eager_ops_dashed_red():
    dot = Dot(to_dot(xe.parse_hlo(CLUSTERED)))
    regions = {k: v for k, v in dot.clusters.items() if k.startswith("cluster_xla_")}
    assert set(regions) == {"cluster_xla_cluster_0", "cluster_xla_cluster_1"}
    members = {k: {dot.name(n) for n in v["nodes"]} for k, v in regions.items()}
    assert members == {"cluster_xla_cluster_0": {"t", "e"}, "cluster_xla_cluster_1": {"n", "r"}}
    fills = [v["attrs"]["fillcolor"] for v in regions.values()]
    assert len(set(fills)) == 2
    nodes = dot.by_name()
    assert "dashed" in nodes["u"]["style"] and "runs eagerly" in nodes["u"]["label"]
    assert "dashed" not in nodes["t"].get("style", "")


@needs_dot
def test_labels_and_tooltips_are_escaped():
    text = r"""HloModule odd, entry_computation_layout={(f32[2])->f32[2]}

ENTRY odd {
  p.0 = f32[2] parameter(0), metadata={op_name="<b>\"x\" & y</b>" source_file="C:\\dir\\a\"b<c>.py" source_line=7}
  ROOT n-1 = f32[2] negate(p.0), metadata={op_name="a]b[c" source_file="x.py" source_line=3}
}
"""
    module = xe.parse_hlo(text)
    root = svg_of(to_dot(module))
    titles = [a.get("{http://www.w3.org/1999/xlink}title") for a in
              root.iter("{http://www.w3.org/2000/svg}a")]
    param = next(t for t in titles if t and t.startswith("p.0"))
    assert 'C:\\dir\\a"b<c>.py:7' in param and '<b>"x" & y</b>' in param
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "n-1" in texts and "p.0" in texts


def test_graph_without_dot_still_gives_the_digraph(programs, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    g = graph(programs["softmax"].module)
    assert "digraph" in g.source
    with pytest.raises(GraphvizNotInstalled) as err:
        render_svg(g)
    message = str(err.value)
    assert "apt-get install graphviz" in message and "conda install graphviz" in message
    assert ".source" in message


MOVED_CONSTANT = """HloModule moved, entry_computation_layout={(f32[2,2])->f32[2,2]}

ENTRY moved {
  p = f32[2,2] parameter(0)
  k = f32[] constant(3)
  b = f32[2] broadcast(k), dimensions={}
  r = f32[2,2] broadcast(b), dimensions={1}
  ROOT m = f32[2,2] multiply(p, r)
}
"""


def test_moved_scalar_constants_fold_unless_changed():
    module = xe.parse_hlo(MOVED_CONSTANT)
    folded = Dot(to_dot(module)).by_name()
    assert set(folded) == {"p", "m"} and "× 3" in folded["m"]["label"]
    # A changed constant is drawn, highlighted, with the chain that carries it to its user.
    dot = Dot(to_dot(module, changed={"k"}))
    assert set(dot.by_name()) == {"p", "k", "b", "r", "m"}
    assert ("k", "b") in dot.edge_names() and ("r", "m") in dot.edge_names()
    assert float(dot.by_name()["k"]["penwidth"]) >= 3


def test_fusions_whose_names_look_alike_in_dot_stay_apart():
    text = """HloModule alike, entry_computation_layout={(f32[2])->(f32[2])}

fused_a {
  pa = f32[2] parameter(0)
  ROOT na = f32[2] negate(pa)
}

fused_b {
  pb = f32[2] parameter(0)
  ROOT tb = f32[2] tanh(pb)
}

ENTRY alike {
  x = f32[2] parameter(0)
  f.1 = f32[2] fusion(x), kind=kLoop, calls=fused_a
  f_1 = f32[2] fusion(f.1), kind=kLoop, calls=fused_b
  ROOT out = (f32[2]) tuple(f_1)
}
"""
    dot = Dot(to_dot(xe.parse_hlo(text)))
    clusters = dot.fusion_clusters()
    assert len(clusters) == 2
    assert [sorted(dot.name(n) for n in c["nodes"]) for c in clusters.values()] == [["na"], ["tb"]]
    assert dot.edge_names() == {("x", "na"), ("na", "tb"), ("tb", "out")}
