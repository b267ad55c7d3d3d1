"""Drawing recorded stages: Graphviz graphs of HLO modules (and, later, widgets and charts).

The viewer only reads what the pipeline recorded; it never runs a pass.
"""
from .graphviz import GraphvizNotInstalled, graph, render_svg, to_dot

__all__ = ["graph", "to_dot", "render_svg", "GraphvizNotInstalled"]
