"""The graph and the HLO text agree at every stage: what the HLO puts inside a fusion is drawn
inside that fusion's cluster, and nothing else is.

Read from both sides independently: the fused computations from the stage's HLO text, and the
boxes from the SVG that Graphviz drew (each node's and each cluster's outline, named by its
tooltip), over every stage of the programs the tests use.
"""
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.viz.graphviz import graph, render_svg
from xla_explorer.viz.panel_views import changed_names

from tests.test_fusion_programs import PROGRAMS, f32

from .programs import dense, layernorm, softmax
from .test_mime import leaky, unique_scaled

pytestmark = pytest.mark.skipif(shutil.which("dot") is None,
                                reason="Graphviz's dot is not installed")
SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


def autoclustered_cell(x):
    """notebooks/03_autocluster.ipynb's first %%xla cell."""
    y = np.tanh(x) * 2 + 1
    u = np.unique(np.round(y))
    total = (u * u).sum()
    return y, u, total


def corpus() -> dict:
    rng = np.random.default_rng(0)
    out = {p.__name__: xe.explore(p, *[f32(rng, *s) for s in shapes])
           for p, shapes, _ in PROGRAMS}
    x, w, b = f32(rng, 16, 32), f32(rng, 32, 8), f32(rng, 8)
    out.update({"softmax": xe.explore(softmax, x), "layernorm 16x32": xe.explore(layernorm, x),
                "dense": xe.explore(dense, x, w, b), "leaky": xe.explore(leaky, x),
                "unique": xe.explore(unique_scaled, np.array([3.0, 1.0, 3.0, 2.0]),
                                     autocluster=True)})
    out["notebook 03"] = xe.explore(autoclustered_cell, np.linspace(-3, 3, 16, dtype=np.float32),
                                    autocluster=True)
    return out


@pytest.fixture(scope="module")
def programs():
    return corpus()


def fused_names(hlo: str) -> dict[str, set[str]]:
    """{fusion instruction: the names its fused computation defines, parameters left out},
    read from HLO text."""
    bodies, current = {}, None
    for line in hlo.splitlines():
        if m := re.match(r"^(\S+) \{$", line):
            current = bodies.setdefault(m.group(1), set())
        elif line == "}":
            current = None
        elif current is not None and (m := re.match(r"^\s*(?:ROOT )?(\S+) = .*? parameter\(",
                                                    line)) is None:
            current.add(re.match(r"^\s*(?:ROOT )?(\S+) = ", line).group(1))
    entry = hlo[hlo.index("\nENTRY "):]
    return {m.group(1): bodies[m.group(2)] for m in
            re.finditer(r"^\s*(?:ROOT )?(\S+) = .* fusion\(.*calls=([^,\s]+)", entry, re.M)}


def outline(group) -> tuple[float, float, float, float]:
    """The bounding box of the first path or polygon in an SVG group (its outline)."""
    for shape in group.iter():
        if shape.tag in (SVG + "path", SVG + "polygon"):
            nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?",
                                                 shape.get("d") or shape.get("points"))]
            xs, ys = nums[0::2], nums[1::2]
            return min(xs), min(ys), max(xs), max(ys)
    raise AssertionError("a group without an outline")


def boxes(svg: str) -> tuple[dict, dict]:
    """({fusion name: cluster box}, {instruction name: node box}) from the SVG; each is named
    by its tooltip's first line (a fused computation's cluster by the line after it)."""
    root = ET.fromstring(svg[svg.index("<svg"):])
    clusters, nodes = {}, {}
    for g in root.iter(SVG + "g"):
        kind = g.get("class")
        a = g.find(f".//{SVG}a")
        if kind not in ("node", "cluster") or a is None:
            continue
        lines = a.get(XLINK + "title").split("\n")
        if kind == "cluster":
            if lines[0].startswith("fused computation"):
                clusters[lines[1]] = outline(g)
        else:
            nodes[lines[0]] = outline(g)
    return clusters, nodes


def within(inner, outer) -> bool:
    return (inner[0] >= outer[0] and inner[1] >= outer[1] and inner[2] <= outer[2]
            and inner[3] <= outer[3])


def test_every_fused_instruction_is_drawn_inside_its_fusion_at_every_stage(programs):
    checked = 0
    for label, ex in programs.items():
        for i, stage in enumerate(ex.stages):
            fused = fused_names(ex.hlo(i))
            svg = render_svg(graph(stage.module, changed=changed_names(ex, i)))
            clusters, nodes = boxes(svg)
            where = f"{label}, stage {i} ({stage.name})"
            assert set(clusters) == set(fused), where
            for fusion, members in fused.items():
                box = clusters[fusion]
                drawn = members & set(nodes)
                assert drawn, f"{where}: nothing of {fusion} is drawn"
                for n, node in nodes.items():
                    assert within(node, box) == (n in members), (
                        f"{where}: {n} is drawn {'in' if within(node, box) else 'out'}side "
                        f"{fusion}, and the HLO has it {'in' if n in members else 'out'}side")
                checked += len(drawn)
    assert checked > 100
