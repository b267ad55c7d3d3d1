// One graph on screen: DOT laid out by Graphviz compiled to WebAssembly (loaded on first use),
// sanitized into SVG nodes, highlighted by CSS classes, panned and zoomed through the viewBox,
// and morphed between stages: nodes that stay slide from their old place to their new one
// (a FLIP animation) while what is new fades in, so a fusion visibly takes in its producers.

import { collapseClusters, DotGraph, DotNode, Highlight, highlightClasses, largeFusions, origin, parseDot } from './dot';
import { el } from './dom';

type GraphvizInstance = { dot(src: string, format?: string): string };
let graphvizPromise: Promise<GraphvizInstance> | null = null;

/** The Graphviz WASM module, loaded lazily: the chunk is large and only graphs need it. */
export function graphviz(): Promise<GraphvizInstance> {
  if (!graphvizPromise) {
    graphvizPromise = import('@hpcc-js/wasm-graphviz').then(m => m.Graphviz.load() as Promise<GraphvizInstance>);
  }
  return graphvizPromise;
}

const layoutCache = new Map<string, string>();
const CACHE_LIMIT = 64;

async function layout(dot: string): Promise<string> {
  const hit = layoutCache.get(dot);
  if (hit !== undefined) return hit;
  const svg = (await graphviz()).dot(dot, 'svg');
  if (layoutCache.size >= CACHE_LIMIT) layoutCache.delete(layoutCache.keys().next().value as string);
  layoutCache.set(dot, svg);
  return svg;
}

const DROP = new Set(['script', 'foreignobject', 'iframe', 'image', 'use', 'style', 'animate', 'set']);

/** Graphviz's SVG text as an element with nothing active left in it: no scripts, no event
 * attributes, no links (a saved notebook's DOT is untrusted input). */
export function sanitizeSvg(text: string): SVGSVGElement {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const root = doc.documentElement;
  if (root.nodeName !== 'svg') throw new Error('Graphviz did not return an SVG document');
  const walk = (e: Element) => {
    for (const child of Array.from(e.children)) {
      if (DROP.has(child.nodeName.toLowerCase())) child.remove();
      else walk(child);
    }
    for (const a of Array.from(e.attributes)) {
      const n = a.name.toLowerCase();
      if (n.startsWith('on') || n === 'href' || n.endsWith(':href') || n === 'style') e.removeAttribute(a.name);
    }
  };
  walk(root);
  return document.importNode(root, true) as unknown as SVGSVGElement;
}

interface Box { x: number; y: number; w: number; h: number }

export interface GraphEvents {
  nodeClicked(node: DotNode | null, name: string): void;
}

/** Above this many nodes the view folds fusions that hold more than FOLD_SIZE instructions. */
export const FOLD_ABOVE_NODES = 60;
export const FOLD_SIZE = 12;
/** Screen pixels per Graphviz point at most, when fitting. */
const MAX_SCALE = 1.3;
/** Screen pixels per Graphviz point at least, when a graph opens: below it a node's label
 * (11 pt) reads under 7 px, so a graph that fits only smaller opens on a readable
 * neighbourhood (where the pass changed something, else the top), and `fit` shows it all.
 * (At 0.6 the attention block's 30-node fusion stage still opens whole.) */
export const MIN_SCALE = 0.6;
const HINT = 'drag to pan, Ctrl+wheel or pinch to zoom, click a node';

export class GraphView {
  readonly node: HTMLDivElement;
  private canvas: HTMLDivElement;
  private svg: SVGSVGElement | null = null;
  private graph: DotGraph | null = null;
  private dot = '';
  private full: Box = { x: 0, y: 0, w: 1, h: 1 };
  private view: Box = { x: 0, y: 0, w: 1, h: 1 };
  private highlight: Highlight = {};
  private expanded = new Set<string>();   // cluster titles the reader unfolded
  private renders = 0;
  private token = 0;
  private hint = el('span', { class: 'xe-hint' }, HINT);

  constructor(private events: GraphEvents) {
    this.canvas = el('div', { class: 'xe-graph-canvas' });
    const bar = el('div', { class: 'xe-graph-bar' },
      button('fit', 'Fit the whole graph in view', () => this.fit()),
      button('+', 'Zoom in', () => this.zoom(0.8)),
      button('−', 'Zoom out', () => this.zoom(1.25)),
      this.hint);
    this.node = el('div', { class: 'xe-graph' }, bar, this.canvas);
    this.canvas.addEventListener('wheel', e => this.onWheel(e), { passive: false });
    this.canvas.addEventListener('pointerdown', e => this.onPointerDown(e));
    this.canvas.addEventListener('click', e => this.onClick(e));
  }

  /** Lay out and draw `dot`, morphing from what was drawn. Resolves once the new SVG is in. */
  async show(dot: string, highlight: Highlight, animate = true): Promise<void> {
    const t0 = performance.now();
    const token = ++this.token;
    this.dot = dot;
    this.highlight = highlight;
    const g = parseDot(dot);
    const fold = this.foldedClusters(g);
    const drawn = collapseClusters(dot, g, fold);
    const text = await layout(drawn);
    if (token !== this.token) return;  // a newer show() started while this one laid out
    const graph = fold.length ? parseDot(drawn) : g;
    const svg = sanitizeSvg(text);
    const before = animate ? this.positions() : new Map<string, DOMRect>();
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
    const vb = (svg.getAttribute('viewBox') ?? '0 0 100 100').split(/[\s,]+/).map(Number);
    this.full = { x: vb[0], y: vb[1], w: vb[2] || 1, h: vb[3] || 1 };
    this.graph = graph;
    this.nameNodes(svg, graph);
    this.canvas.replaceChildren(svg);
    this.svg = svg;
    this.sizeCanvas();
    this.openView();
    this.applyHighlight();
    this.renders++;
    this.node.dataset.renders = String(this.renders);
    this.node.dataset.renderMs = (performance.now() - t0).toFixed(1);
    if (animate && before.size) this.morph(before);
  }

  /** Re-highlight without a new layout (decisions on one stage, a selection). */
  setHighlight(h: Highlight): void {
    this.highlight = h;
    this.applyHighlight();
  }

  /** Outline the instruction `name` (its clones and its fusion's cluster too). */
  select(name: string): void {
    this.setHighlight({ ...this.highlight, selected: name });
  }

  get dotGraph(): DotGraph | null {
    return this.graph;
  }

  private foldedClusters(g: DotGraph): string[] {
    const auto = g.nodes.size > FOLD_ABOVE_NODES ? largeFusions(g, FOLD_SIZE) : [];
    const out = new Set<string>();
    for (const id of auto) if (!this.expanded.has(g.clusters.get(id)!.title)) out.add(id);
    return [...out];
  }

  /** Tooltips from the DOT (name, shape, dtype, source) instead of Graphviz's `n12`, and a
   * data-name on each node and cluster for the highlight and the morph. */
  private nameNodes(svg: SVGSVGElement, g: DotGraph): void {
    svg.querySelectorAll('g.node, g.cluster').forEach(e => {
      const title = e.querySelector(':scope > title');
      const id = title?.textContent ?? '';
      const node = g.nodes.get(id);
      const cluster = g.clusters.get(id);
      const name = node ? node.name : cluster ? cluster.title : id;
      e.setAttribute('data-id', id);
      e.setAttribute('data-name', name);
      if (title) {
        const tip = node?.attrs.tooltip ?? cluster?.tooltip ?? name;
        title.textContent = tip.trim() ? tip : name;
      }
      // Graphviz wraps each shape in <a xlink:title>, which browsers show as a second tooltip.
      e.querySelectorAll('a').forEach(a => a.removeAttribute('xlink:title'));
    });
    // The page background and the graph's title (Graphviz wraps them in <g><a> for the
    // tooltip): themed by CSS instead of Graphviz's white and black.
    const top = svg.querySelector('g.graph');
    for (const part of Array.from(top?.children ?? [])) {
      if (/\b(node|cluster|edge)\b/.test(part.getAttribute('class') ?? '')) continue;
      part.querySelectorAll('polygon').forEach(p => p.setAttribute('class', 'xe-graph-bg'));
      part.querySelectorAll('text').forEach(t => t.setAttribute('class', 'xe-graph-title'));
      if (part.tagName === 'polygon') part.setAttribute('class', 'xe-graph-bg');
      if (part.tagName === 'text') part.setAttribute('class', 'xe-graph-title');
    }
  }

  private applyHighlight(): void {
    if (!this.svg || !this.graph) return;
    const classes = highlightClasses(this.graph, this.highlight);
    this.svg.querySelectorAll('g.node, g.cluster').forEach(e => {
      const list = classes.get(e.getAttribute('data-id') ?? '') ?? [];
      for (const c of ['xe-changed', 'xe-producer', 'xe-consumer', 'xe-selected']) {
        e.classList.toggle(c, list.includes(c));
      }
    });
  }

  private positions(): Map<string, DOMRect> {
    const out = new Map<string, DOMRect>();
    this.svg?.querySelectorAll('g.node').forEach(e => out.set(e.getAttribute('data-name') ?? '', e.getBoundingClientRect()));
    return out;
  }

  private morph(before: Map<string, DOMRect>): void {
    if (!this.svg || window.matchMedia?.('(prefers-reduced-motion: reduce)').matches) return;
    const ctm = this.svg.getScreenCTM();
    const scale = ctm ? ctm.a : 1;
    const moving: SVGGElement[] = [];
    const fading: SVGGElement[] = [];
    this.svg.querySelectorAll<SVGGElement>('g.node, g.cluster, g.edge').forEach(e => {
      const old = e.classList.contains('node') ? before.get(e.getAttribute('data-name') ?? '') : undefined;
      if (old) {
        const now = e.getBoundingClientRect();
        const dx = (old.x + old.width / 2 - (now.x + now.width / 2)) / scale;
        const dy = (old.y + old.height / 2 - (now.y + now.height / 2)) / scale;
        if (Math.abs(dx) + Math.abs(dy) < 0.5) return;
        e.style.transform = `translate(${dx}px, ${dy}px)`;
        moving.push(e);
      } else {
        e.style.opacity = '0';
        fading.push(e);
      }
    });
    void this.svg.getBoundingClientRect();  // commit the start state before transitioning
    requestAnimationFrame(() => {
      for (const e of moving) {
        e.style.transition = 'transform 450ms ease-in-out';
        e.style.transform = '';
      }
      for (const e of fading) {
        e.style.transition = 'opacity 450ms ease-in 150ms';
        e.style.opacity = '';
      }
    });
  }

  /** A canvas as tall as the graph needs at the pane's width (within limits), so a tall
   * graph is not squeezed into a short box; the reader can still drag it taller. */
  private sizeCanvas(): void {
    if (this.userSized) return;
    const width = this.canvas.clientWidth || 600;
    const natural = width * (this.full.h / this.full.w);
    const h = Math.round(Math.max(300, Math.min(720, natural, this.full.h * 1.1)));
    this.canvas.style.height = `${h}px`;
    this.canvasHeight = h;
  }

  private userSized = false;
  private canvasHeight = 0;

  fit(): void {
    // A drag of the resize handle is the reader's choice: keep it.
    if (this.canvasHeight && Math.abs(this.canvas.clientHeight - this.canvasHeight) > 2) this.userSized = true;
    this.view = this.around(this.full.x + this.full.w / 2, this.full.y + this.full.h / 2, this.full.w, this.full.h);
    this.applyView();
    this.hint.textContent = HINT;
    this.node.dataset.view = 'fit';
  }

  /** The whole graph where it fits at a readable size; else, at MIN_SCALE, the nodes the pass
   * changed (or the selected one), or the graph's top: where a reader starts. */
  private openView(): void {
    this.fit();
    const cw = this.canvas.clientWidth, ch = this.canvas.clientHeight;
    if (!(cw > 0 && ch > 0) || Math.min(cw / this.full.w, ch / this.full.h) >= MIN_SCALE) return;
    const h = this.highlight;
    const box = this.nodeBox([...(h.changed ?? []), h.selected ?? ''].filter(n => n));
    const w = cw / MIN_SCALE, vh = ch / MIN_SCALE;
    const cx = box ? (box.x0 + box.x1) / 2 : this.full.x + this.full.w / 2;
    const cy = box ? (box.y0 + box.y1) / 2 : this.full.y + vh / 2;
    this.view = { x: cx - w / 2, y: cy - vh / 2, w, h: vh };
    this.applyView();
    const count = this.svg?.querySelectorAll('g.node').length ?? 0;
    this.hint.textContent = `zoomed in to be readable (${box ? 'on what this pass changed' : 'at the top'}): ` +
      `"fit" shows all ${count} nodes · ${HINT}`;
    this.node.dataset.view = 'readable';
  }

  /** The bounding box, in the SVG's user units, of the drawn nodes named; null if none is. */
  private nodeBox(names: string[]): { x0: number; y0: number; x1: number; y1: number } | null {
    if (!this.svg || !names.length) return null;
    const ctm = this.svg.getScreenCTM();
    if (!ctm) return null;
    const inv = ctm.inverse();
    let box: { x0: number; y0: number; x1: number; y1: number } | null = null;
    for (const e of Array.from(this.svg.querySelectorAll<SVGGElement>('g.node'))) {
      const name = e.getAttribute('data-name') ?? '';
      if (!names.some(n => n && (name === n || origin(name) === n))) continue;
      const r = e.getBoundingClientRect();
      const a = new DOMPoint(r.left, r.top).matrixTransform(inv);
      const b = new DOMPoint(r.right, r.bottom).matrixTransform(inv);
      box = box ? { x0: Math.min(box.x0, a.x), y0: Math.min(box.y0, a.y), x1: Math.max(box.x1, b.x), y1: Math.max(box.y1, b.y) }
        : { x0: a.x, y0: a.y, x1: b.x, y1: b.y };
    }
    return box;
  }

  /** A view box centred on (cx, cy) showing at least w x h user units, never magnified past
   * MAX_SCALE (a three-node graph stays at reading size instead of filling the pane). */
  private around(cx: number, cy: number, w: number, h: number): Box {
    const cw = this.canvas.clientWidth, ch = this.canvas.clientHeight;
    if (cw > 0 && ch > 0) {
      const scale = Math.min(MAX_SCALE, cw / w, ch / h);
      w = cw / scale;
      h = ch / scale;
    }
    return { x: cx - w / 2, y: cy - h / 2, w, h };
  }

  /** Centre the view on the instructions named (a decision's producer and consumer), with
   * room around them; nothing happens when none is drawn. */
  focus(names: string[]): void {
    if (!this.graph) return;
    const box = this.nodeBox(names);
    if (!box) return;
    const w = Math.max((box.x1 - box.x0) * 2.5, this.full.w / 3);
    const h = Math.max((box.y1 - box.y0) * 2.5, this.full.h / 3);
    this.view = this.around((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, Math.min(w, this.full.w), Math.min(h, this.full.h));
    this.applyView();
  }

  zoom(factor: number, cx?: number, cy?: number): void {
    const v = this.view;
    const x = cx ?? v.x + v.w / 2;
    const y = cy ?? v.y + v.h / 2;
    const w = Math.min(this.full.w * 4, Math.max(this.full.w / 40, v.w * factor));
    const f = w / v.w;
    this.view = { x: x - (x - v.x) * f, y: y - (y - v.y) * f, w, h: v.h * f };
    this.applyView();
  }

  private applyView(): void {
    const v = this.view;
    this.svg?.setAttribute('viewBox', `${v.x} ${v.y} ${v.w} ${v.h}`);
  }

  /** The point under a client position, in the SVG's user units. */
  private toUser(clientX: number, clientY: number): { x: number; y: number } {
    const ctm = this.svg?.getScreenCTM();
    if (!ctm) return { x: this.view.x, y: this.view.y };
    const p = new DOMPoint(clientX, clientY).matrixTransform(ctm.inverse());
    return { x: p.x, y: p.y };
  }

  private onWheel(e: WheelEvent): void {
    // A plain wheel scrolls the notebook; Ctrl (or Cmd) + wheel, and a trackpad pinch, which
    // browsers report as a wheel with ctrlKey, zoom the graph.
    if (!this.svg || !(e.ctrlKey || e.metaKey)) return;
    e.preventDefault();
    const p = this.toUser(e.clientX, e.clientY);
    this.zoom(Math.exp(Math.max(-50, Math.min(50, e.deltaY)) * 0.01), p.x, p.y);
  }

  private dragged = false;

  private onPointerDown(e: PointerEvent): void {
    if (!this.svg || e.button !== 0) return;
    const v0 = { ...this.view };
    const x0 = e.clientX, y0 = e.clientY;
    this.dragged = false;
    const move = (m: PointerEvent) => {
      if (Math.abs(m.clientX - x0) + Math.abs(m.clientY - y0) > 4) this.dragged = true;
      if (!this.dragged) return;
      const ctm = this.svg!.getScreenCTM();
      const s = ctm ? ctm.a : 1;
      this.view = { ...v0, x: v0.x - (m.clientX - x0) / s, y: v0.y - (m.clientY - y0) / s };
      this.applyView();
    };
    const up = () => {
      window.removeEventListener('pointermove', move);
      window.removeEventListener('pointerup', up);
    };
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
  }

  private onClick(e: MouseEvent): void {
    if (this.dragged || !this.graph) return;
    const target = e.target as Element;
    const nodeEl = target.closest('g.node');
    if (nodeEl) {
      const id = nodeEl.getAttribute('data-id') ?? '';
      if (id.startsWith('x_')) {
        // A folded fusion: unfold it.
        const title = nodeEl.getAttribute('data-name') ?? '';
        const name = this.graph.nodes.get(id)?.name ?? title;
        this.expanded.add(name);
        void this.show(this.dot, this.highlight, false);
        return;
      }
      const node = this.graph.nodes.get(id) ?? null;
      this.events.nodeClicked(node, node?.name ?? nodeEl.getAttribute('data-name') ?? id);
      return;
    }
    const clusterEl = target.closest('g.cluster');
    if (clusterEl) {
      const c = this.graph.clusters.get(clusterEl.getAttribute('data-id') ?? '');
      if (c?.fusion) this.events.nodeClicked(null, c.title);
    }
  }
}

function button(label: string, title: string, onClick: () => void): HTMLButtonElement {
  const b = el('button', { class: 'xe-btn', title, type: 'button' }, label);
  b.addEventListener('click', onClick);
  return b;
}
