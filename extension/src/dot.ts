// Reading and rewriting the DOT that xla_explorer.viz.graphviz.to_dot writes: one statement a
// line, node ids n0, n1, ... (instruction names may hold any character, so they live in the
// tooltip's first line), fusions and auto-clusters as `subgraph cluster_*` blocks.

export interface DotNode {
  id: string;
  name: string;           // the instruction (first tooltip line)
  attrs: { [key: string]: string };
  info: { [key: string]: string };  // "shape", "dtype", "source", "op_name" from the tooltip
  clusters: string[];     // enclosing cluster ids, outermost first
}

export interface DotCluster {
  id: string;             // e.g. cluster_row_fusion_31
  title: string;          // the bold part of the label, e.g. row_fusion.31
  tooltip: string;
  parent: string | null;
  nodes: string[];        // node ids directly or indirectly inside
  fusion: boolean;        // a fusion (XLA kernel), not an auto-cluster region
}

export interface DotEdge {
  from: string;
  to: string;
  attrs: string;          // the raw attribute text, kept when rewriting
}

export interface DotGraph {
  nodes: Map<string, DotNode>;
  clusters: Map<string, DotCluster>;
  edges: DotEdge[];
  byName: Map<string, string>;  // instruction name -> node id
}

/** Split `a=1 b="x y" c=<<b>z</b>>` into a map; values unquoted and unescaped. */
export function parseAttrs(text: string): { [key: string]: string } {
  const out: { [key: string]: string } = {};
  let i = 0;
  const n = text.length;
  while (i < n) {
    while (i < n && /[\s,;]/.test(text[i])) i++;
    const k0 = i;
    while (i < n && /[A-Za-z0-9_]/.test(text[i])) i++;
    const key = text.slice(k0, i);
    if (!key) {
      i++;
      continue;
    }
    if (text[i] !== '=') {
      out[key] = 'true';
      continue;
    }
    i++;
    let value = '';
    if (text[i] === '"') {
      i++;
      while (i < n && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < n) {
          const c = text[i + 1];
          value += c === 'n' || c === 'l' || c === 'r' ? '\n' : c;
          i += 2;
        } else {
          value += text[i++];
        }
      }
      i++;
    } else if (text[i] === '<') {
      let depth = 0;
      const v0 = i;
      do {
        if (text[i] === '<') depth++;
        else if (text[i] === '>') depth--;
        i++;
      } while (i < n && depth > 0);
      value = text.slice(v0 + 1, i - 1);
    } else {
      const v0 = i;
      while (i < n && !/\s/.test(text[i])) i++;
      value = text.slice(v0, i);
    }
    out[key] = value;
  }
  return out;
}

function tooltipInfo(tooltip: string): { [key: string]: string } {
  const info: { [key: string]: string } = {};
  for (const line of tooltip.split('\n').slice(1)) {
    const m = /^([A-Za-z_ ]+):\s*(.*)$/.exec(line);
    if (m) info[m[1].trim()] = m[2];
  }
  return info;
}

/** The text of an HTML-like label's first bold part, e.g. `<b>fusion.3</b><br/>kLoop` -> fusion.3. */
export function labelTitle(label: string): string {
  const m = /<b>([^<]*)<\/b>/.exec(label);
  return unescapeHtml(m ? m[1] : label.replace(/<[^>]*>/g, ' ').trim());
}

function unescapeHtml(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

const NODE = /^\s*(n\d+|x_\w+) \[(.*)\]\s*$/;
const EDGE = /^\s*(\S+) -> (\S+)(?: \[(.*)\])?\s*$/;
const SUBGRAPH = /^\s*subgraph (\S+) \{\s*$/;
const CLOSE = /^\s*\}\s*$/;
const GRAPH_ATTR = /^\s*([A-Za-z_]+=.*)$/;

export function parseDot(dot: string): DotGraph {
  const g: DotGraph = { nodes: new Map(), clusters: new Map(), edges: [], byName: new Map() };
  const stack: string[] = [];
  let depth = 0;
  for (const line of dot.split('\n')) {
    let m: RegExpExecArray | null;
    if ((m = SUBGRAPH.exec(line))) {
      const id = m[1];
      g.clusters.set(id, {
        id, title: id.replace(/^cluster_/, ''), tooltip: '', parent: stack.length ? stack[stack.length - 1] : null,
        nodes: [], fusion: false
      });
      stack.push(id);
      depth++;
    } else if (CLOSE.test(line)) {
      if (stack.length && depth === stack.length) stack.pop();
      depth--;
    } else if ((m = EDGE.exec(line))) {
      g.edges.push({ from: m[1], to: m[2], attrs: m[3] ?? '' });
    } else if ((m = NODE.exec(line))) {
      const attrs = parseAttrs(m[2]);
      const tooltip = attrs.tooltip ?? '';
      const name = tooltip.split('\n')[0] || labelTitle(attrs.label ?? m[1]);
      g.nodes.set(m[1], { id: m[1], name, attrs, info: tooltipInfo(tooltip), clusters: [...stack] });
      g.byName.set(name, m[1]);
      for (const c of stack) g.clusters.get(c)!.nodes.push(m[1]);
    } else if (stack.length && (m = GRAPH_ATTR.exec(line))) {
      const c = g.clusters.get(stack[stack.length - 1])!;
      const attrs = parseAttrs(m[1]);
      if (attrs.label !== undefined) c.title = labelTitle(attrs.label);
      if (attrs.tooltip !== undefined) c.tooltip = attrs.tooltip;
      // XLA's dumper labels a fusion cluster with its kind; auto-clusters are plain regions.
      c.fusion = c.fusion || /fusion/.test(attrs.label ?? '') || /^fused computation/.test(c.tooltip);
    }
  }
  return g;
}

/** `multiply.6.clone.29` -> `multiply.6`: fusion clones a cheap producer into each consumer. */
export function origin(name: string): string {
  return name.replace(/(\.clone(\.\d+)?)+$/, '');
}

/** Node ids drawing instruction `name` (its clones included). */
export function nodesNamed(g: DotGraph, name: string): string[] {
  if (!name) return [];
  const out: string[] = [];
  for (const n of g.nodes.values()) {
    if (n.name === name || origin(n.name) === name) out.push(n.id);
  }
  return out;
}

/** The cluster id of fusion `name`, if the graph draws it as a cluster. */
export function clusterNamed(g: DotGraph, name: string): string | null {
  for (const c of g.clusters.values()) if (c.title === name) return c.id;
  return null;
}

export interface Highlight {
  changed?: Iterable<string>;
  producer?: string;
  consumer?: string;
  selected?: string;
}

/**
 * CSS classes for the drawn nodes and clusters (keyed by DOT id): what the stage changed, the
 * decision's producer and consumer, the selected instruction. A name that is a collapsed or
 * cluster-drawn fusion marks its cluster.
 */
export function highlightClasses(g: DotGraph, h: Highlight): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const mark = (name: string | undefined, cls: string) => {
    if (!name) return;
    const ids = nodesNamed(g, name);
    const c = clusterNamed(g, name);
    if (c) ids.push(c);
    const x = 'x_' + safeId(c ?? '');
    if (c && g.nodes.has(x)) ids.push(x);
    for (const id of ids) {
      const list = out.get(id) ?? [];
      if (!list.includes(cls)) list.push(cls);
      out.set(id, list);
    }
  };
  for (const n of h.changed ?? []) mark(n, 'xe-changed');
  mark(h.producer, 'xe-producer');
  mark(h.consumer, 'xe-consumer');
  mark(h.selected, 'xe-selected');
  return out;
}

export function safeId(s: string): string {
  return s.replace(/[^A-Za-z0-9_]/g, '_');
}

/** Fusion clusters holding more than `limit` nodes: what a large graph draws folded. */
export function largeFusions(g: DotGraph, limit: number): string[] {
  return [...g.clusters.values()].filter(c => c.fusion && c.nodes.length > limit).map(c => c.id);
}

function quote(s: string): string {
  return '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') + '"';
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * The DOT with each cluster in `collapse` folded into one node `x_<cluster id>` (edges into and
 * out of it rewired, edges inside dropped, duplicates merged). The node's tooltip starts with
 * the fusion's name, so a click on it names the fusion.
 */
export function collapseClusters(dot: string, g: DotGraph, collapse: Iterable<string>): string {
  const fold = new Set(collapse);
  if (fold.size === 0) return dot;
  // The outermost folded cluster of each node wins.
  const target = new Map<string, string>();
  for (const n of g.nodes.values()) {
    const c = n.clusters.find(id => fold.has(id));
    if (c) target.set(n.id, 'x_' + safeId(c));
  }
  const out: string[] = [];
  const seenEdges = new Set<string>();
  let skipping = 0;  // depth inside a folded subgraph
  let depth = 0;
  for (const line of dot.split('\n')) {
    const sub = SUBGRAPH.exec(line);
    if (sub) {
      depth++;
      if (skipping) {
        skipping++;
        continue;
      }
      if (fold.has(sub[1])) {
        const c = g.clusters.get(sub[1])!;
        const indent = /^\s*/.exec(line)![0];
        const label = `<<b>${escapeHtml(c.title)}</b><br/>${c.nodes.length} instructions<br/><i>click to expand</i>>`;
        out.push(`${indent}x_${safeId(c.id)} [label=${label} shape=rect style="rounded,filled,dashed" ` +
          `fillcolor="#f5f5f5" color="#616161" penwidth=2 fontcolor=black ` +
          `tooltip=${quote(c.title + '\nfolded: ' + c.nodes.length + ' instructions')}]`);
        skipping = 1;
        continue;
      }
      out.push(line);
      continue;
    }
    if (CLOSE.test(line)) {
      depth--;
      if (skipping) {
        skipping--;
        continue;
      }
      out.push(line);
      continue;
    }
    if (skipping) continue;
    const e = EDGE.exec(line);
    if (e) {
      const from = target.get(e[1]) ?? e[1];
      const to = target.get(e[2]) ?? e[2];
      if (from === to && from !== e[1]) continue;
      const key = from + '>' + to;
      if (from !== e[1] || to !== e[2]) {
        if (seenEdges.has(key)) continue;
        seenEdges.add(key);
        const indent = /^\s*/.exec(line)![0];
        out.push(`${indent}${from} -> ${to}` + (e[3] ? ` [${e[3]}]` : ''));
        continue;
      }
      seenEdges.add(key);
    }
    out.push(line);
  }
  return out.join('\n');
}
