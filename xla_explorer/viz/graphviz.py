"""An HLO module as a Graphviz graph, drawn with the conventions of XLA's graph dumper.

XLA's `hlo_graph_dumper` (what `--xla_dump_hlo_as_dot` writes) draws one node per instruction,
coloured by what the instruction does, folds small constants into the labels of the
instructions that use them, and draws a fusion as a cluster holding its fused computation. This
module follows it:

- colours come from XLA's palette and are chosen by the op table's group (ir/ops.py), never by
  opcode lists: element-wise pale yellow, parameters orange, dot dark blue with white text,
  reduce purple, data movement green, non-compilable (custom-call) red and marked "runs eagerly",
  a library call (a custom-call that compiles: np.linalg.solve's LAPACK) dark green, as XLA's
  dumper draws every custom-call, and marked with its routine; tuple and get-tuple-element
  small and grey;
- a constant of at most FOLD_MAX_ELEMENTS elements, or a broadcast of a scalar one, is not a
  node: each user's label carries it (`× 0.5`, or XLA's `operand 1 = 0.5`);
- a fusion is a `subgraph cluster_<name>` labelled with its name and kind (kLoop, kInput,
  kOutput, or "row fusion"); collapsed, it is one node. By default fusions collapse when the
  expanded graph would have more than COLLAPSE_ABOVE nodes; a graph of more than
  DRAW_AT_MOST nodes even so is drawn as one node that says how many there are;
- auto-clusters (`frontend_attributes={_xla_cluster="cluster_N"}`) are pale regions, one
  colour each; instructions marked `_xla_cluster="eager"` get a dashed red border;
- the steps of a loop that tracing unrolled (ir/structure.loop_steps) are drawn once, as XLA
  draws a while loop's body once: the first step in a cluster saying how many steps there
  are, a dashed edge from each value a step hands to the next, and the edges from the last
  step to what follows drawn from the first;
- `changed` names instructions drawn with a thick outline (the stepper's "what this pass did");
- a producer fusion copied into several kernels (`multiply.6.clone.29`) is titled with the name
  it was traced as and a mark, `multiply.6 (copy)`: the student looks for multiply.6.

Labels are HTML-like, as XLA's are; tooltips are plain text with the name, shape, dtype and the
user's source line. Node ids are `n0`, `n1`, ...: instruction names may hold any character;
`drawing` gives the graph with the instruction each node id (and each fusion cluster's
subgraph name) stands for, which is what the live explorer's click-to-select reads.
The viewer draws recorded modules; nothing here runs a pass.
"""
from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

import graphviz

from ..errors import XlaExplorerError
from ..ir.module import Computation, Instruction, Module, known_trip_count
from ..ir.library import library_call
from ..ir.ops import Group, infix_symbol, instruction_group
from ..ir.printer import format_attr, format_literal
from ..ir.structure import Steps, loop_steps
from ..passes.kinds import is_row_fusion
from ..passes.names import traced_name

# XLA's dumper prints constants of up to 8 elements inline (HloDotDumper, stringify_constant).
FOLD_MAX_ELEMENTS = 8
# Above this many nodes a fully expanded graph stops being readable: fusions collapse.
COLLAPSE_ABOVE = 150
# Above this many nodes even so (a long loop unrolled by tracing), a graph is one node saying
# so: laying it out takes Graphviz seconds, and at any size that fits a screen its text is
# dots. The HLO text beside it has every instruction.
DRAW_AT_MOST = 1000
# Attribute values longer than this are cut in labels (the tooltip and the HLO text have them).
MAX_ATTR_CHARS = 48


class GraphvizNotInstalled(XlaExplorerError, RuntimeError):
    """The `dot` program is needed to render, and it is not on PATH."""


# ----------------------------------------------------------------------------------------------
# Colours: XLA's ColorScheme (fill, stroke, font), and which group gets which.


@dataclass(frozen=True)
class Colors:
    fill: str
    stroke: str
    font: str = "black"


# The values of hlo_graph_dumper.cc's NodeColorsForScheme.
YELLOW = Colors("#fff9c4", "#cbc693")
ORANGE = Colors("#ffe0b2", "#cbae82")
DARK_BLUE = Colors("#1565c0", "#003c8f", "white")
PURPLE = Colors("#e1bee7", "#af8eb5")
GREEN = Colors("#c8e6c9", "#97b498")
RED = Colors("#ffcdd2", "#b71c1c")
GRAY = Colors("#cfd8dc", "#9ea7aa")
DARK_GREEN = Colors("#1b5e20", "#003300", "white")
BROWN = Colors("#bcaaa4", "#8c7b75")
WHITE = Colors("white", "#9e9e9e")

GROUP_COLORS = {
    Group.ELEMENTWISE: YELLOW,
    Group.COMPARE_SELECT: YELLOW,  # element-wise too: XLA colours compare and select alike
    Group.REDUCE: PURPLE,
    Group.DATA_MOVEMENT: GREEN,
    Group.DOT: DARK_BLUE,
    Group.LEAF: BROWN,  # constants and iotas; parameters are orange (see colors_of)
    Group.STRUCTURAL: GRAY,
    Group.CALL: GRAY,
    Group.NOT_COMPILABLE: RED,
    Group.LIBRARY: DARK_GREEN,
}

# A collapsed fusion takes the colour of the heaviest work inside it: a fusion holding a dot is
# the dot's kernel, one holding a reduce the reduction's.
FUSION_COLOR_PRIORITY = (Group.DOT, Group.REDUCE, Group.ELEMENTWISE, Group.COMPARE_SELECT,
                         Group.DATA_MOVEMENT)

FUSION_CLUSTER = Colors("#f5f5f5", "#757575")
EAGER_BORDER = "#d50000"
# Pale fills for auto-clusters, told apart from the node colours above and from each other.
CLUSTER_FILLS = ("#e3f2fd", "#fce4ec", "#e8f5e9", "#fff3e0", "#ede7f6", "#e0f7fa", "#f9fbe7",
                 "#efebe9")

EAGER_MARK = "runs eagerly"


def group_of(inst: Instruction) -> Group | None:
    # None: an opcode from JAX text the table does not know
    return instruction_group(inst)


def colors_of(inst: Instruction) -> Colors:
    if inst.opcode == "parameter":
        return ORANGE
    return GROUP_COLORS.get(group_of(inst), WHITE)


# ----------------------------------------------------------------------------------------------
# Auto-cluster marks, read from the attribute text (`{_xla_cluster="cluster_0",...}`).

_CLUSTER_MARK = re.compile(r'(?<!\w)_xla_cluster\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,}\s]+))')


def cluster_mark(inst: Instruction) -> str | None:
    """The auto-cluster inst belongs to ("cluster_0", ... or "eager"); None if unmarked."""
    text = inst.attr("frontend_attributes")
    if not text:
        return None
    m = _CLUSTER_MARK.search(str(text))
    if not m:
        return None
    return m.group(1) if m.group(1) is not None else m.group(2)


# ----------------------------------------------------------------------------------------------
# Escaping. DOT ids are generated (`n12`); labels are HTML-like (html.escape), and plain text
# attributes (tooltips) escape backslashes, quotes and newlines, and are marked as not-HTML so
# a tooltip that happens to start with `<` is not read as markup.


def plain(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return graphviz.nohtml(escaped)


def html_label(lines: list[str]) -> str:
    """An HTML-like label: the first line bold, every line escaped."""
    first, *rest = lines
    body = [f"<b>{html.escape(first)}</b>"] + [html.escape(line) for line in rest]
    return "<" + "<br/>".join(body) + ">"


# ----------------------------------------------------------------------------------------------
# Constants folded into their users.


def folded_constant(inst: Instruction, keep: frozenset[str] = frozenset()) -> Instruction | None:
    """The constant behind inst when inst is small enough to print in its users' labels: a
    constant of at most FOLD_MAX_ELEMENTS elements, or data movement of a one-element one (XLA
    folds both: the broadcast of `0.5` reads better as `× 0.5` on the multiply). Nothing
    named in `keep`, nor anything built from it, is folded."""
    if inst.name in keep:
        return None
    if inst.opcode == "constant":
        small = inst.literal is not None and inst.literal.size <= FOLD_MAX_ELEMENTS
        return inst if small else None
    # Moving the data of a one-element constant (a broadcast, a reshape) makes an array of
    # copies of that element: still one number to print.
    if group_of(inst) is Group.DATA_MOVEMENT and len(inst.operands) == 1:
        const = folded_constant(inst.operands[0], keep)
        return const if const is not None and const.literal.size == 1 else None
    return None


def constant_text(const: Instruction) -> str:
    """`0.5` for a one-element constant; `s32[3] {1, 2, 3}` for a small array."""
    if const.literal.size == 1:
        return format_literal(const.literal.reshape(()))
    return f"{const.shape} {format_literal(const.literal)}"


def folded_operand_line(user: Instruction, index: int, text: str) -> str:
    """How user's label shows a folded operand: `× 0.5` when the op table gives the op an infix
    symbol, else XLA's `operand 1 = 0.5`."""
    symbol = infix_symbol(user) if len(user.operands) == 2 else None
    if symbol:
        return f"{symbol} {text}" if index == 1 else f"{text} {symbol}"
    if len(user.operands) == 1:
        return f"operand = {text}"
    return f"operand {index} = {text}"


# ----------------------------------------------------------------------------------------------
# Labels and tooltips.

# Attributes a label does not repeat: the fusion's kind and row schedule are in its title,
# its callee is the cluster itself, and clustering is drawn as a region.
_HIDDEN_ATTRS = frozenset({"calls", "kind", "backend_config", "frontend_attributes", "to_apply"})


def reducer_name(module: Module, inst: Instruction) -> str | None:
    """`add` for a reduce whose to_apply is one binary op of its two parameters, as XLA's
    dumper writes "Subcomputation: add"; otherwise the computation's name."""
    callee = inst.attr("to_apply")
    if not callee:
        return None
    try:
        comp = module.computation(callee)
    except KeyError:
        return str(callee)
    body = [i for i in comp.instructions if i.opcode != "parameter"]
    return body[0].opcode if len(body) == 1 else comp.name


COPY_MARK = "(copy)"


def display_name(name: str) -> str:
    """The name a student knows: `multiply.6 (copy)` for fusion's `multiply.6.clone.29`."""
    traced = traced_name(name)
    return name if traced == name else f"{traced} {COPY_MARK}"


def title_lines(inst: Instruction, body_size: int = 0) -> list[str]:
    """XLA's title: the name when it starts with the opcode (`add.3`), else opcode and name;
    a parameter is `Parameter N`, a collapsed fusion its name, kind and size. A copy made by
    fusion shows the name it was traced as, marked (see `display_name`)."""
    name = display_name(inst.name)
    if inst.opcode == "parameter":
        return [f"Parameter {inst.parameter_number}", name]
    if inst.opcode == "fusion":
        kind = fusion_kind(inst)
        kind = kind if kind == "row fusion" else f"{kind} fusion"
        return [name, f"{kind} of {body_size} ops"]
    if inst.name.startswith(inst.opcode):
        return [name]
    return [inst.opcode, name]


def attr_lines(module: Module, inst: Instruction) -> list[str]:
    lines = []
    reducer = reducer_name(module, inst)
    if reducer:
        lines.append(f"to_apply={reducer}")
    for key, value in inst.attrs:
        if key in _HIDDEN_ATTRS:
            continue
        text = format_attr(key, value)
        lines.append(text if len(text) <= MAX_ATTR_CHARS else text[:MAX_ATTR_CHARS - 1] + "…")
    return lines


def fusion_kind(inst: Instruction) -> str:
    if is_row_fusion(inst):
        return "row fusion"
    return str(inst.attr("kind") or "fusion")


def loop_title(inst: Instruction) -> list[str]:
    """A while loop's cluster title: its name, how many steps (its known trip count), and
    which computations are its body and condition."""
    count = known_trip_count(inst)
    steps = f"{count:,} steps" if count is not None else "steps while its condition holds"
    return [display_name(inst.name), f"while loop: {steps}",
            f"body {inst.attr('body')}, condition {inst.attr('condition')}"]


def tooltip(inst: Instruction) -> str:
    shape = inst.shape
    dtype = "tuple" if shape.is_tuple else str(inst.dtype)
    lines = [inst.name, f"shape: {shape}", f"dtype: {dtype}"]
    if traced_name(inst.name) != inst.name:
        lines.append(f"a copy of {traced_name(inst.name)}: fusion copies a cheap producer into "
                     "each kernel that reads it")
    md = inst.metadata
    if md.source_file or md.source_line:
        lines.append(f"source: {md.source_file}:{md.source_line}")
    if md.op_name:
        lines.append(f"op_name: {md.op_name}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Drawing.


def fused_body(comp: Computation) -> list[Instruction]:
    """The instructions of a fused computation that compute (its parameters are its operands)."""
    return [i for i in comp.instructions if i.opcode != "parameter"]


def used(comp: Computation) -> set[int]:
    """ids of the instructions something in comp uses."""
    return {id(o) for inst in comp.instructions for o in inst.operands}


@dataclass
class _Drawing:
    """The state of one drawing: node ids, and the edges to add once every node exists.

    `callers` is the stack of expanded fusions being drawn (innermost last): a fused parameter
    is its fusion's operand, found one level out."""

    module: Module
    collapse: bool
    changed: frozenset[str]
    ids: dict[tuple, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # node id or cluster -> instruction
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    nodes: int = 0
    subgraphs: set[str] = field(default_factory=set)
    # The entry's loop steps: each later step's instruction -> the first step's, and the
    # first step's first instruction -> its Steps.
    stand_in: dict[int, Instruction] = field(default_factory=dict)
    loops: dict[int, Steps] = field(default_factory=dict)
    carried: list[tuple[str, str, str]] = field(default_factory=list)  # dashed loop edges

    def find_loops(self) -> None:
        """Draw the entry's unrolled loops (`loop_steps`) one step each (within one
        auto-cluster: a step's key holds its mark)."""
        insts = self.module.entry.instructions
        for steps in loop_steps(self.module, self.module.entry, key=cluster_mark):
            self.loops[id(insts[steps.start])] = steps
            for n in range(steps.start + steps.length, steps.end):
                self.stand_in[id(insts[n])] = insts[steps.start + (n - steps.start) % steps.length]

    def node_id(self, inst: Instruction, callers: tuple) -> str:
        # A fused computation is drawn once per fusion calling it, so the key holds the caller.
        key = (id(callers[-1]) if callers else None, id(inst))
        if key not in self.ids:
            self.ids[key] = f"n{len(self.ids)}"
            self.names[self.ids[key]] = inst.name
        return self.ids[key]

    def subgraph_name(self, name: str) -> str:
        """name, made unique: `fusion.1` and `fusion_1` are both `cluster_fusion_1` in DOT,
        and DOT would merge two subgraphs of one name into one."""
        unique, n = name, 1
        while unique in self.subgraphs:
            n += 1
            unique = f"{name}_{n}"
        self.subgraphs.add(unique)
        return unique

    def folds(self, inst: Instruction) -> Instruction | None:
        """The constant printed in place of inst; None when inst is a node. A changed constant
        stays a node, and so does what moves it, so its highlight shows where it goes."""
        return folded_constant(inst, self.changed)

    def expands(self, inst: Instruction) -> bool:
        """A fusion drawn as a cluster of its fused computation; a while loop, of its body."""
        if self.collapse:
            return False
        return bool(inst.attr("calls")) if inst.opcode == "fusion" else inst.opcode == "while"

    def callee(self, inst: Instruction) -> Computation:
        return self.module.computation(inst.attr("calls") or inst.attr("body"))

    def source(self, inst: Instruction, callers: tuple) -> tuple[str | None, str]:
        """Where an operand's value comes from: (node id, its name) for a node; (None, text)
        for a constant folded into its users. A fused parameter is its fusion's operand; an
        expanded fusion's value is its root's."""
        const = self.folds(inst)
        if const is not None:
            return None, constant_text(const)
        if inst.opcode == "parameter" and callers:
            return self.source(callers[-1].operands[inst.parameter_number], callers[:-1])
        if not callers and id(inst) in self.stand_in:  # a later step: drawn as the first
            return self.source(self.stand_in[id(inst)], callers)[0], inst.name
        if self.expands(inst):
            return self.source(self.callee(inst).root, callers + (inst,))
        return self.node_id(inst, callers), inst.name

    def drawn(self, comp: Computation, callers: tuple,
              only: list[Instruction] | None = None) -> Iterator[Instruction]:
        """comp's instructions (or `only` those of them) that are a node or an expanded
        fusion's cluster, in order."""
        users = used(comp)
        for inst in comp.instructions if only is None else only:
            if self.folds(inst) is not None and id(inst) in users:
                continue  # printed in its users' labels (an unused one is still drawn)
            if inst.opcode == "parameter" and callers:
                continue  # its fusion's operand edges go straight to its users
            if not callers and id(inst) in self.stand_in:
                continue  # a loop's later step
            yield inst

    def draw(self, g: graphviz.Digraph, comp: Computation, callers: tuple,
             only: list[Instruction] | None = None, loops: bool = True) -> None:
        """Draw comp's instructions (or `only` those of them) into g (a loop's first step
        in a cluster of its own, if `loops`)."""
        in_loop: set[int] = set()
        for inst in self.drawn(comp, callers, only):
            if id(inst) in in_loop:
                continue
            if loops and not callers and id(inst) in self.loops:
                step = self.draw_loop(g, comp, self.loops[id(inst)], only)
                in_loop.update(map(id, step))
            elif self.expands(inst):
                self.draw_fusion(g, inst, callers + (inst,))
            else:
                self.draw_node(g, inst, callers)

    def count(self, comp: Computation, callers: tuple) -> int:
        """The nodes `draw` would draw for comp, without drawing them (a label is most of
        the cost: seconds for a long unrolled loop's thousands of nodes)."""
        return sum(self.count(self.callee(inst), callers + (inst,)) if self.expands(inst)
                   else 1 for inst in self.drawn(comp, callers))

    def draw_loop(self, g: graphviz.Digraph, comp: Computation, steps: Steps,
                  only: list[Instruction] | None) -> list[Instruction]:
        """The first of a loop's steps, in a cluster, with a dashed edge from each value it
        hands to the next step; returns the step's instructions."""
        insts = comp.instructions
        step = list(insts[steps.start:steps.start + steps.length])
        first, last = step[0].name, insts[steps.end - 1].name
        with g.subgraph(name=self.subgraph_name(f"cluster_loop_{_safe(first)}")) as c:
            c.attr(label=html_label([f"loop: {steps.count} steps",
                                     f"{steps.length} instruction{'s' * (steps.length > 1)} a step, "
                                     "drawn once"]),
                   style="rounded,dashed", color="#546e7a", penwidth="2",
                   tooltip=plain(f"Tracing unrolled a loop: {first} to {last} are {steps.count} "
                                 f"steps of the same {steps.length} instructions, each reading "
                                 "the step before. The first step is drawn; a dashed edge "
                                 "carries a value to the next step."))
            allowed = None if only is None else {id(o) for o in only}
            kept = [i for i in step if allowed is None or id(i) in allowed]
            self.draw(c, comp, (), only=kept, loops=False)
        mine = {id(i) for i in step}
        for target, reader in zip(step, insts[steps.start + steps.length:]):
            for op in reader.operands:
                if id(op) not in mine:
                    continue
                src, dst = self.source(op, ())[0], self.source(target, ())[0]
                if src is not None and dst is not None:
                    self.carried.append((src, dst, f"{op.name}: to the next step"))
        return step

    def draw_fusion(self, g: graphviz.Digraph, fusion: Instruction, callers: tuple) -> None:
        comp = self.callee(fusion)
        cluster = self.subgraph_name(f"cluster_{_safe(fusion.name)}")
        self.names[cluster] = fusion.name
        with g.subgraph(name=cluster) as c:
            c.attr(label=html_label([display_name(fusion.name), fusion_kind(fusion)]
                                    if fusion.opcode == "fusion" else loop_title(fusion)),
                   style="rounded,filled",
                   fillcolor=FUSION_CLUSTER.fill, color=FUSION_CLUSTER.stroke,
                   penwidth="4" if fusion.name in self.changed else "1",
                   tooltip=plain(f"fused computation {comp.name}\n" + tooltip(fusion)))
            self.draw(c, comp, callers)

    def draw_node(self, g: graphviz.Digraph, inst: Instruction, callers: tuple) -> None:
        nid = self.node_id(inst, callers)
        is_fusion = inst.opcode == "fusion" and bool(inst.attr("calls"))
        lines = title_lines(inst, len(fused_body(self.callee(inst))) if is_fusion else 0)
        lines += attr_lines(self.module, inst)
        for i, op in enumerate(inst.operands):
            src, text = self.source(op, callers)
            if src is None:
                lines.append(folded_operand_line(inst, i, text))
            else:
                self.edges.append((src, nid, f"{text} -> {inst.name}: {op.shape}"))
        lines.append(str(inst.shape))
        colors = self.fusion_colors(inst) if is_fusion else colors_of(inst)
        attrs = {"fillcolor": colors.fill, "color": colors.stroke, "fontcolor": colors.font,
                 "tooltip": plain(tooltip(inst))}
        marked_eager = cluster_mark(inst) == "eager"
        if marked_eager or group_of(inst) is Group.NOT_COMPILABLE:
            lines.append(EAGER_MARK)
        call = library_call(inst)
        if call is not None:
            lines.append(f"library call: LAPACK {call.routines}")
        if marked_eager:
            attrs.update(color=EAGER_BORDER, style="rounded,filled,dashed", penwidth="2")
        if group_of(inst) is Group.STRUCTURAL:
            attrs.update(fontsize="8", height="0.2", margin="0.03,0.01")
        if inst.name in self.changed:
            attrs.update(penwidth="4")  # thick, in the node's own colour: still readable
        g.node(nid, label=html_label(lines), **attrs)
        self.nodes += 1

    def fusion_colors(self, inst: Instruction) -> Colors:
        groups = {group_of(i) for i in self.callee(inst).instructions}
        for group in FUSION_COLOR_PRIORITY:
            if group in groups:
                return GROUP_COLORS[group]
        return GRAY


def expanded_node_count(module: Module) -> int:
    """How many nodes the graph has with every fusion expanded (a loop's steps drawn once)."""
    d = _Drawing(module, collapse=False, changed=frozenset())
    d.find_loops()
    return d.count(module.entry, ())


def _auto_clusters(module: Module) -> dict[str, list[Instruction]]:
    """Entry instructions by the compiled auto-cluster they belong to, in first-seen order."""
    out: dict[str, list[Instruction]] = {}
    for inst in module.entry.instructions:
        mark = cluster_mark(inst)
        if mark and mark != "eager":
            out.setdefault(mark, []).append(inst)
    return out


def graph(module: Module, *, collapse_fusions: bool | None = None,
          changed: set[str] | frozenset[str] = frozenset()) -> graphviz.Digraph:
    """The module's entry computation as a `graphviz.Digraph` (its `.source` is DOT text)."""
    return drawing(module, collapse_fusions=collapse_fusions, changed=changed)[0]


def drawing(module: Module, *, collapse_fusions: bool | None = None,
            changed: set[str] | frozenset[str] = frozenset()
            ) -> tuple[graphviz.Digraph, dict[str, str]]:
    """`graph(...)` and the instruction each node id (`n3`) and fusion cluster
    (`cluster_fusion_3`) of it stands for: the `<title>` of that node's group in the SVG."""
    collapse = (expanded_node_count(module) > COLLAPSE_ABOVE if collapse_fusions is None
                else collapse_fusions)
    d = _Drawing(module, collapse, frozenset(changed))
    d.find_loops()
    g = graphviz.Digraph(name=module.name)
    # A blank graph tooltip, so hovering empty space shows nothing.
    g.attr(label=html_label([module.name]), labelloc="t", rankdir="TB", compound="true",
           fontname="Helvetica", tooltip=" ")
    g.attr("node", shape="rect", style="rounded,filled", fontname="Helvetica", fontsize="11")
    g.attr("edge", color="#757575", arrowsize="0.7")
    nodes = d.count(module.entry, ())
    if nodes > DRAW_AT_MOST:
        g.node("n0", label=html_label([f"{nodes:,} nodes: too many to draw",
                                       "every instruction is in the HLO text"]),
               fillcolor=GRAY.fill, color=GRAY.stroke, fontcolor=GRAY.font,
               tooltip=plain(f"{module.name}: {len(module.entry.instructions):,} "
                             f"instructions, drawn as {nodes:,} nodes; more than "
                             f"{DRAW_AT_MOST:,} are not laid out"))
        return g, {}
    clusters = _auto_clusters(module)
    for n, (mark, members) in enumerate(clusters.items()):
        with g.subgraph(name=d.subgraph_name(f"cluster_xla_{_safe(mark)}")) as c:
            c.attr(label=html_label([mark, "compiled"]), style="rounded,filled",
                   fillcolor=CLUSTER_FILLS[n % len(CLUSTER_FILLS)], color="#90a4ae",
                   tooltip=plain(f"auto-cluster {mark}: {len(members)} instructions, "
                                 "compiled as one program"))
            d.draw(c, module.entry, (), only=members)
    clustered = {id(i) for members in clusters.values() for i in members}
    d.draw(g, module.entry, (), only=[i for i in module.entry.instructions
                                      if id(i) not in clustered])
    for src, dst, tip in d.edges:
        g.edge(src, dst, tooltip=plain(tip))
    for src, dst, tip in d.carried:
        g.edge(src, dst, tooltip=plain(tip), style="dashed", color="#546e7a",
               constraint="false")
    return g, dict(d.names)


def _safe(text: str) -> str:
    """A DOT identifier fragment: cluster names become subgraph ids."""
    return re.sub(r"\W", "_", text)


def to_dot(module: Module, *, collapse_fusions: bool | None = None,
           changed: set[str] | frozenset[str] = frozenset()) -> str:
    """The module as DOT text (see `graph`)."""
    return graph(module, collapse_fusions=collapse_fusions, changed=changed).source


INSTALL_HINT = ("rendering needs Graphviz's `dot` program, which is not on PATH: install it with "
                "`apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS) or "
                "`conda install graphviz`. Without it, the graph's `.source` gives the DOT text.")


def render_svg(digraph: graphviz.Digraph) -> str:
    """The graph as SVG text; GraphvizNotInstalled (saying how to install it) without `dot`."""
    if shutil.which("dot") is None:
        raise GraphvizNotInstalled(INSTALL_HINT)
    try:
        return digraph.pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound as err:
        raise GraphvizNotInstalled(INSTALL_HINT) from err
