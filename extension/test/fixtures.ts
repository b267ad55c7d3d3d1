// A DOT graph in the shape xla_explorer.viz.graphviz.to_dot writes (written by hand, so the
// expected facts below are read off it, not computed by the code under test).
export const DOT = `digraph softmax {
\tcompound=true fontname=Helvetica label=<<b>softmax</b>> labelloc=t rankdir=TB tooltip=" "
\tnode [fontname=Helvetica fontsize=11 shape=rect style="rounded,filled"]
\tedge [arrowsize=0.7 color="#757575"]
\tn0 [label=<<b>Parameter 0</b><br/>x.1<br/>f32[4,8]> color="#cbae82" fillcolor="#ffe0b2" tooltip="x.1\\nshape: f32[4,8]\\ndtype: float32\\nsource: prog.py:3\\nop_name: x"]
\tsubgraph cluster_row_fusion_9 {
\t\tcolor="#757575" fillcolor="#f5f5f5" label=<<b>row_fusion.9</b><br/>row fusion> style="rounded,filled" tooltip="fused computation fused_computation.10\\nrow_fusion.9\\nshape: f32[4,8]"
\t\tn1 [label=<<b>reduce.2</b><br/>f32[4]> tooltip="reduce.2\\nshape: f32[4]\\ndtype: float32\\nsource: prog.py:4\\nop_name: softmax/max"]
\t\tn2 [label=<<b>subtract.3</b><br/>f32[4,8]> tooltip="subtract.3\\nshape: f32[4,8]\\ndtype: float32\\nsource: prog.py:4"]
\t\tn3 [label=<<b>exponential.4</b><br/>f32[4,8]> tooltip="exponential.4\\nshape: f32[4,8]\\ndtype: float32\\nsource: prog.py:4"]
\t\tn4 [label=<<b>multiply.5.clone.11</b><br/>f32[4,8]> tooltip="multiply.5.clone.11\\nshape: f32[4,8]\\ndtype: float32\\nsource: prog.py:5"]
\t}
\tn5 [label=<<b>divide.6</b><br/>a &lt; b<br/>f32[4,8]> tooltip="divide.6\\nshape: f32[4,8]\\ndtype: float32\\nsource: prog.py:5 \\"quoted\\""]
\tn6 [label=<<b>tuple.7</b>> fontsize=8 tooltip="tuple.7\\nshape: (f32[4,8])\\ndtype: tuple"]
\tn0 -> n1 [tooltip="x.1 -> reduce.2: f32[4,8]"]
\tn0 -> n2 [tooltip="x.1 -> subtract.3: f32[4,8]"]
\tn1 -> n2
\tn2 -> n3
\tn3 -> n4
\tn3 -> n5
\tn4 -> n5
\tn5 -> n6
}`;
