// The explorer: stages, decisions, buffers, kernels and performance of one bundle, drawn from the
// JSON alone (no kernel). Every string from the bundle goes into text nodes.

import { Widget } from '@lumino/widgets';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { button, el, svgEl } from './dom';
import { DotNode } from './dot';
import { formatBytes, formatSeconds, speedWords } from './format';
import { GraphView } from './graphview';
import { kernelHlo, kernelsInOrder, nodeFacts } from './info';
import { Bundle, checkBundle, Decision, MIME_TYPE } from './model';
import { Stepper, visibleStages } from './stepper';
import { hloLines, stripMetadata, tokenizeHlo, tokenizePython, Token } from './syntax';
import { layoutTimeline } from './timeline';
import { ExportRow } from './export_row';
import { XlaTab } from './xla_tab';

const TABS = ['Stages', 'Decisions', 'Buffers', 'Kernels', 'Performance', 'XLA'] as const;
export type Tab = typeof TABS[number];

/** Where the reader is: the tab, the stage (its index in the bundle's stages) and the
 * benchmark's repeat count. */
export interface View {
  tab?: Tab;
  stage?: number;
  repeat?: number;
}

/** What a running kernel adds to the explorer (the live widget): a benchmark it can run, or
 * why it cannot, and where to open (where the reader was before a redraw). */
export interface LiveOptions {
  bench?: (repeat: number) => void;
  benchUnavailable?: string;
  compareXla?: (repeat: number) => void; // asks the kernel for ex.compare_xla (the XLA tab)
  exportModule?: (name: string) => void; // asks the kernel for ex.export (the Kernels tab)
  view?: View;
  onView?: (view: View) => void; // the widget keeps it, so a redrawn output opens there too
}

function tokensInto(parent: HTMLElement, tokens: Token[]): void {
  for (const t of tokens) {
    parent.append(t.cls ? el('span', { class: `xe-tok-${t.cls}` }, t.text) : t.text);
  }
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** Previous / label / next, built once and updated in place, so the button a reader clicked
 * (or focused and pressed j on) keeps the keyboard focus inside the explorer. */
class StepBar {
  readonly node = el('div', { class: 'xe-stepper' });
  readonly prev: HTMLButtonElement;
  readonly next: HTMLButtonElement;
  readonly label = el('span', { class: 'xe-step-label' });
  readonly extra = el('span', { class: 'xe-step-extra' });

  constructor(what: string, step: (delta: number) => void) {
    this.prev = button('◀ prev', `Previous ${what} (k)`, () => step(-1), 'xe-btn xe-prev');
    this.next = button('next ▶', `Next ${what} (j)`, () => step(1), 'xe-btn xe-next');
    this.node.append(this.prev, this.label, this.next, this.extra);
  }

  update(text: string, data: { [key: string]: string }, atStart: boolean, atEnd: boolean): void {
    this.label.textContent = text;
    for (const [k, v] of Object.entries(data)) this.label.dataset[k] = v;
    this.prev.disabled = atStart;
    this.next.disabled = atEnd;
  }
}

/** A graph with its HLO text beside it and the clicked instruction's facts below. */
class GraphPane {
  readonly node: HTMLDivElement;
  readonly graph: GraphView;
  private hlo = el('div', { class: 'xe-hlo', tabindex: '-1' });
  private info = el('div', { class: 'xe-info' });
  private lines: { name: string | null; row: HTMLElement }[] = [];
  private metadata = false;
  private hloText = '';
  private changed: string[] = [];
  selected = '';

  constructor(private bundle: Bundle) {
    this.graph = new GraphView({ nodeClicked: (n, name) => this.select(name, n) });
    const meta = el('label', { class: 'xe-check' }, el('input', { type: 'checkbox' }), ' metadata');
    meta.querySelector('input')!.addEventListener('change', e => {
      this.metadata = (e.target as HTMLInputElement).checked;
      this.drawHlo();
    });
    const hloBox = el('div', { class: 'xe-hlo-box' },
      el('div', { class: 'xe-hlo-bar' }, el('span', {}, 'HLO '),
        el('span', { class: 'xe-hint' }, '▌ changed by this pass'), meta),
      this.hlo);
    this.node = el('div', { class: 'xe-pane' },
      el('div', { class: 'xe-split' }, this.graph.node, hloBox), this.info);
    this.info.append(el('span', { class: 'xe-hint' }, 'Click a node (or an HLO line) to see where it ended up.'));
  }

  setHlo(text: string, changed: string[]): void {
    this.hloText = text;
    this.changed = changed;
    this.drawHlo();
  }

  private drawHlo(): void {
    const pre = el('pre', { class: 'xe-code' });
    this.lines = [];
    for (const line of hloLines(this.hloText, this.changed, this.metadata)) {
      const row = el('div', { class: 'xe-line' + (line.changed ? ' xe-line-changed' : '') });
      if (line.name) row.dataset.name = line.name;
      tokensInto(row, tokenizeHlo(line.text || ' '));
      if (line.name) {
        const name = line.name;
        row.addEventListener('click', () => this.select(name, null));
      }
      pre.append(row);
      this.lines.push({ name: line.name, row });
    }
    this.hlo.replaceChildren(pre);
    this.markLine();
    if (!this.selected) {
      // Bring what the pass changed into view (the pane scrolls, not the notebook).
      const first = this.lines.find(l => l.row.classList.contains('xe-line-changed'));
      if (first) this.hlo.scrollTop = first.row.offsetTop - 8;
    }
  }

  select(name: string, node: DotNode | null): void {
    this.selected = name;
    const dn = node ?? (this.graph.dotGraph ? [...this.graph.dotGraph.nodes.values()].find(n => n.name === name) ?? null : null);
    const facts = nodeFacts(this.bundle, name, dn?.info ?? {});
    const table = el('table', { class: 'xe-facts' });
    for (const [k, v] of facts.rows) table.append(el('tr', {}, el('th', {}, k), el('td', {}, v)));
    this.info.replaceChildren(el('div', { class: 'xe-info-title' }, name), table);
    this.graph.select(name);
    this.markLine();
  }

  private markLine(): void {
    let first: HTMLElement | null = null;
    for (const { name, row } of this.lines) {
      const on = !!this.selected && name === this.selected;
      row.classList.toggle('xe-line-selected', on);
      if (on && !first) first = row;
    }
    // Scroll the HLO pane only, never the notebook around it.
    if (first) this.hlo.scrollTop = first.offsetTop - this.hlo.clientHeight / 3;
  }
}

/** The explorer drawn into `node` from a bundle (its JSON): the same in JupyterLab's mime
 * renderer, in the live widget, on a static page and in the documentation. */
export class Explorer {
  private bundle!: Bundle;
  private tab: Tab = 'Stages';
  private panels = new Map<Tab, HTMLElement>();
  private drawn = new Set<Tab>();
  private tabButtons = new Map<Tab, HTMLButtonElement>();
  private stageOrder: number[] = [];
  private stages!: Stepper;
  private decisions!: Stepper;
  private stagePane!: GraphPane;
  private decisionPane!: GraphPane;
  private showAll = false;

  private benchStatus = el('span', { class: 'xe-bench-status' });

  private view: View;

  constructor(readonly node: HTMLElement, private live: LiveOptions = {}) {
    this.view = { ...live.view };
    const tab = this.view.tab;
    if (tab && (TABS as readonly string[]).includes(tab)) this.tab = tab;
    node.classList.add('xe-explorer');
    node.tabIndex = 0;
    node.addEventListener('keydown', e => this.onKey(e));
  }

  /** Draw `data`, a bundle as JSON, once: checked first, a readable error in its place if it
   * is not one. (Another bundle gets an Explorer of its own.) */
  async render(data: unknown): Promise<void> {
    try {
      this.bundle = checkBundle(data);
    } catch (err) {
      this.node.replaceChildren(el('div', { class: 'xe-error' }, String((err as Error).message)));
      return;
    }
    this.build();
    await this.drawTab(this.tab);
  }

  private build(): void {
    const b = this.bundle;
    this.stageOrder = visibleStages(b.stages, this.showAll);
    // Start where the reader was, else at the fusion stage when there is one: it is what a
    // student came to see.
    const was = this.stageOrder.indexOf(this.view.stage ?? -1);
    const fusionAt = this.stageOrder.findIndex(i => b.stages[i].name === 'fusion');
    this.stages = new Stepper(this.stageOrder.length, was >= 0 ? was : Math.max(fusionAt, 0));
    this.decisions = new Stepper(b.decisions.length);
    this.stagePane = new GraphPane(b);
    this.decisionPane = new GraphPane(b);
    const nKernels = Object.keys(b.kernels).length;
    const header = el('div', { class: 'xe-header' },
      el('span', { class: 'xe-title' }, b.module),
      el('span', { class: 'xe-sub' },
        ` · ${b.backend} backend · ${b.stages.length} stages · ${b.decisions.length} fusion decisions · ` +
        `${b.fusions.length} kernel${b.fusions.length === 1 ? '' : 's'}` +
        (nKernels ? '' : ' (no generated source)') + (b.autocluster ? ' · auto-clustered' : '')));
    const tabs = el('div', { class: 'xe-tabs', role: 'tablist' });
    for (const t of TABS) {
      const btn = button(t, `Show ${t.toLowerCase()}`, () => void this.drawTab(t), 'xe-tab');
      btn.setAttribute('role', 'tab');
      btn.dataset.tab = t;
      this.tabButtons.set(t, btn);
      tabs.append(btn);
      const panel = el('div', { class: 'xe-panel', 'data-tab': t });
      this.panels.set(t, panel);
    }
    this.node.replaceChildren(header, tabs, ...this.panels.values());
  }

  /** Where the reader now is, told to the widget when it changed. */
  private keep(change: View): void {
    const next = { ...this.view, ...change };
    if (next.tab === this.view.tab && next.stage === this.view.stage && next.repeat === this.view.repeat) return;
    this.view = next;
    this.live.onView?.({ ...next });
  }

  private async drawTab(t: Tab): Promise<void> {
    this.tab = t;
    this.keep({ tab: t });
    for (const [name, panel] of this.panels) panel.hidden = name !== t;
    for (const [name, b] of this.tabButtons) b.classList.toggle('xe-tab-on', name === t);
    if (this.drawn.has(t)) return;
    this.drawn.add(t);
    const panel = this.panels.get(t)!;
    switch (t) {
      case 'Stages': return this.drawStages(panel);
      case 'Decisions': return this.drawDecisions(panel);
      case 'Buffers': return this.drawBuffers(panel);
      case 'Kernels': return this.drawKernels(panel);
      case 'Performance': return this.drawPerformance(panel);
      case 'XLA': return this.drawXla(panel);
    }
  }

  // -- stages ---------------------------------------------------------------------------------

  private stageBar = new StepBar('pass', d => void this.stepStage(d));
  private stageChips = el('span', { class: 'xe-chips' });
  private stageNotes = el('div', { class: 'xe-notes' });

  private async drawStages(panel: HTMLElement): Promise<void> {
    const all = el('label', { class: 'xe-check' }, el('input', { type: 'checkbox' }), ' passes that changed nothing');
    const box = all.querySelector('input')!;
    box.addEventListener('change', () => {
      const current = this.stageOrder[this.stages.index];
      this.showAll = box.checked;
      this.stageOrder = visibleStages(this.bundle.stages, this.showAll);
      this.stages = new Stepper(this.stageOrder.length, Math.max(0, this.stageOrder.indexOf(current)));
      this.drawChips();
      void this.showStage(false);
    });
    this.stageBar.extra.append(this.stageChips, all);
    this.drawChips();
    panel.append(this.stageBar.node, this.stagePane.node, this.stageNotes);
    await this.showStage(false);
  }

  private async showStage(animate = true): Promise<void> {
    const s = this.bundle.stages[this.stageOrder[this.stages.index]];
    this.stageBar.update(`${pad(s.index)} ${s.name}`, { stage: String(s.index) }, this.stages.atStart, this.stages.atEnd);
    this.stageChips.querySelectorAll('.xe-chip').forEach((c, k) => c.classList.toggle('xe-chip-on', k === this.stages.index));
    const what = s.index === 0 ? 'the traced module' :
      s.changed ? `${s.added.length} added, ${s.rewritten.length} rewritten, ${s.removed.length} removed` : 'no change';
    this.stageNotes.replaceChildren(
      el('div', { class: 'xe-what' }, `${pad(s.index)} ${s.name}: ${what}` +
        (s.seconds > 0 ? ` (${formatSeconds(s.seconds)})` : '')),
      ...(s.removed.length ? [el('div', { class: 'xe-hint' }, 'removed: ' + s.removed.join(', '))] : []),
      notesList(s.notes));
    this.stagePane.setHlo(s.hlo, s.changed_nodes);
    this.node.dataset.stage = String(s.index);
    this.keep({ stage: s.index });
    await this.stagePane.graph.show(s.dot, { changed: s.changed_nodes, selected: this.stagePane.selected }, animate);
  }

  private drawChips(): void {
    this.stageChips.replaceChildren(...this.stageOrder.map((idx, k) => {
      const st = this.bundle.stages[idx];
      return button(`${pad(st.index)} ${st.name}`, st.changed ? 'changed the module' : 'changed nothing',
        () => void this.goStage(k), 'xe-chip' + (st.changed ? '' : ' xe-chip-same'));
    }));
  }

  private async stepStage(d: number): Promise<void> {
    if (this.stages.step(d)) await this.showStage();
  }

  private async goStage(k: number): Promise<void> {
    if (this.stages.go(k)) await this.showStage();
  }

  // -- decisions ------------------------------------------------------------------------------

  private decisionBar = new StepBar('decision', d => void this.stepDecision(d));
  private decisionText = el('div', { class: 'xe-decision' });
  private decisionList = el('ol', { class: 'xe-decision-list', start: '0' });
  private decisionStage = -1;

  private async drawDecisions(panel: HTMLElement): Promise<void> {
    if (!this.bundle.decisions.length) {
      panel.append(el('div', { class: 'xe-hint' }, 'No fusion decisions: this pipeline has no fusion pass, or nothing could fuse.'));
      return;
    }
    this.bundle.decisions.forEach((d, k) => {
      const li = el('li', { class: d.fused ? 'xe-fused' : 'xe-refused' }, d.reason);
      li.addEventListener('click', () => void this.goDecision(k));
      this.decisionList.append(li);
    });
    this.decisionBar.extra.append(el('span', { class: 'xe-hint' }, 'j / k step · producer outlined orange, consumer magenta'));
    // The first decision is near the program's end: say why (viz/panel_views.DECISION_ORDER).
    this.decisionBar.extra.append(el('div', { class: 'xe-hint' }, "in the order made: fusion visits the program from its output back to its inputs, as XLA's does"));
    panel.append(this.decisionBar.node, this.decisionText, this.decisionPane.node,
      el('details', { class: 'xe-all' }, el('summary', {}, `all ${this.bundle.decisions.length} decisions`), this.decisionList));
    await this.showDecision();
  }

  private async showDecision(): Promise<void> {
    const d: Decision = this.bundle.decisions[this.decisions.index];
    this.decisionBar.update(`decision ${d.index + 1} of ${this.bundle.decisions.length}`, { decision: String(d.index) },
      this.decisions.atStart, this.decisions.atEnd);
    this.decisionText.replaceChildren(
      el('span', { class: 'xe-badge ' + (d.fused ? 'xe-fused' : 'xe-refused') }, d.fused ? 'fused' : 'refused'),
      ' ', el('span', { class: 'xe-reason' }, d.reason),
      el('div', { class: 'xe-hint' }, `${d.stage} pass (stage ${pad(d.stage_index)})` + (d.rule ? ` · rule: ${d.rule}` : '')));
    this.decisionList.querySelectorAll('li').forEach((li, k) => li.classList.toggle('xe-current', k === this.decisions.index));
    this.node.dataset.decision = String(d.index);
    const stage = this.bundle.stages[d.stage_index] ?? this.bundle.stages[this.bundle.stages.length - 1];
    const h = { producer: d.producer, consumer: d.consumer, selected: this.decisionPane.selected };
    if (stage.index !== this.decisionStage) {
      this.decisionStage = stage.index;
      this.decisionPane.setHlo(stage.hlo, []);
      await this.decisionPane.graph.show(stage.dot, h, false);
    } else {
      this.decisionPane.graph.setHighlight(h);
    }
    // The pair in view, with their neighbourhood; "fit" shows the whole graph.
    this.decisionPane.graph.focus([d.producer, d.consumer]);
  }

  private async stepDecision(d: number): Promise<void> {
    if (this.decisions.step(d)) await this.showDecision();
  }

  private async goDecision(k: number): Promise<void> {
    if (this.decisions.go(k)) await this.showDecision();
  }

  // -- keys -----------------------------------------------------------------------------------

  private onKey(e: KeyboardEvent): void {
    if (e.ctrlKey || e.metaKey || e.altKey || (e.target as HTMLElement).tagName === 'INPUT') return;
    const stepper = this.tab === 'Stages' ? this.stages : this.tab === 'Decisions' ? this.decisions : null;
    if (!stepper) return;
    const delta = Stepper.keyDelta(e.key, stepper.length);
    if (delta === null) return;
    // Ours, not the notebook's: j/k would otherwise move between cells.
    e.preventDefault();
    e.stopPropagation();
    void (this.tab === 'Stages' ? this.stepStage(delta) : this.stepDecision(delta));
  }

  // -- buffers --------------------------------------------------------------------------------

  private drawBuffers(panel: HTMLElement): void {
    const b = this.bundle.buffers;
    if (!b) {
      panel.append(el('div', { class: 'xe-hint' }, 'No buffer assignment: this pipeline stops before the buffer-assignment pass.'));
      return;
    }
    panel.append(el('div', { class: 'xe-what' },
      `arena ${formatBytes(b.peak_bytes)} · lower bound ${formatBytes(b.lower_bound_bytes)} · ` +
      `fragmentation ${formatBytes(b.fragmentation_bytes)} · without reuse ${formatBytes(b.temporary_bytes)} · ` +
      `${b.allocations.length} slots, aligned to ${b.alignment} B, ${b.heap_order} order`));
    if (b.arena_note) panel.append(el('div', { class: 'xe-hint xe-arena-note' }, b.arena_note));
    const L = layoutTimeline(b, 720, 240);
    const svg = svgEl('svg', { class: 'xe-timeline', viewBox: `0 0 ${L.width} ${L.height}`, width: L.width, height: L.height, role: 'img' });
    svg.append(svgEl('title', {}, 'Buffer timeline: schedule step across, arena offset up'));
    const p = L.plot;
    svg.append(svgEl('rect', { class: 'xe-axis-bg', x: p.left, y: p.top, width: p.width, height: p.height }));
    const every = Math.max(1, Math.ceil(L.steps / 24));
    L.stepX.slice(0, -1).forEach((x, i) => {
      if (i % every) return;
      svg.append(svgEl('text', { class: 'xe-axis', x: x + (L.stepX[1] - L.stepX[0]) / 2, y: p.top + p.height + 14, 'text-anchor': 'middle' }, String(i)));
    });
    svg.append(svgEl('text', { class: 'xe-axis', x: p.left + p.width / 2, y: L.height - 2, 'text-anchor': 'middle' }, 'schedule step'));
    svg.append(svgEl('text', { class: 'xe-axis', x: 4, y: p.top + 10 }, formatBytes(L.arena)));
    svg.append(svgEl('text', { class: 'xe-axis', x: 4, y: p.top + p.height }, '0 B'));
    const tip = el('div', { class: 'xe-tip' }, 'Hover a rectangle to name the value it holds.');
    L.rects.forEach((r, k) => {
      const label = `${r.values.join(' then ')}: ${formatBytes(r.size)} at offset ${r.offset}, steps ${r.first}-${r.last}`;
      const rect = svgEl('rect', {
        class: `xe-slot xe-slot-${k % 6}`, x: r.x + 1, y: r.y + 0.5, width: Math.max(1, r.width - 2), height: Math.max(1, r.height - 1),
        'data-values': r.values.join(' ')
      }, svgEl('title', {}, label));
      rect.addEventListener('mouseenter', () => { tip.textContent = label; });
      svg.append(rect);
      if (r.width > 40 && r.height > 12) {
        svg.append(svgEl('text', { class: 'xe-slot-label', x: r.x + 4, y: r.y + Math.min(r.height - 3, 13) }, r.values[0]));
      }
    });
    panel.append(el('div', { class: 'xe-scroll' }, svg), tip);
    if (b.sharings.length) {
      panel.append(el('div', { class: 'xe-what' }, 'In-place writes'),
        el('ul', {}, ...b.sharings.map(s => el('li', {}, `${s.kernel} writes ${s.output} over ${s.operand}: ${s.reason}`))));
    }
    panel.append(el('details', {}, el('summary', {}, 'XLA-style memory report'), el('pre', { class: 'xe-code' }, b.report)));
  }

  // -- kernels --------------------------------------------------------------------------------

  private drawKernels(panel: HTMLElement): void {
    const names = kernelsInOrder(this.bundle);
    if (!names.length) {
      panel.append(el('div', { class: 'xe-hint' },
        this.bundle.backend === 'interpreter' ? 'The interpreter backend evaluates HLO directly: no kernels are generated.' : 'No generated kernels.'));
      return;
    }
    if (this.live.exportModule && this.bundle.backend === 'cpu') {
      this.exportRow = new ExportRow(this.bundle.module, this.live.exportModule);
      panel.append(this.exportRow.node);
    }
    if (this.bundle.driver) {
      const pre = el('pre', { class: 'xe-code xe-driver' });
      tokensInto(pre, tokenizePython(this.bundle.driver));
      const d = el('details', { class: 'xe-driver-box' },
        el('summary', {}, "run: every kernel launch in order, a loop's repeated steps rolled into one for loop"), pre);
      d.open = true;
      panel.append(d);
    }
    names.forEach((name, k) => {
      const pre = el('pre', { class: 'xe-code xe-kernel' });
      tokensInto(pre, tokenizePython(this.bundle.kernels[name]));
      // Beside the kernel, the HLO it was generated from, when the final text has it.
      const hlo = kernelHlo(this.bundle, name);
      const from = el('pre', { class: 'xe-code xe-kernel-hlo' });
      hlo.split('\n').forEach((line, i) => {
        if (i) from.append('\n');
        tokensInto(from, tokenizeHlo(stripMetadata(line)));
      });
      const body = hlo ? el('div', { class: 'xe-kernel-pair' }, pre, from) : pre;
      const d = el('details', { class: 'xe-kernel-box' }, el('summary', {}, name), body);
      if (k === 0) d.open = true;
      panel.append(d);
    });
  }

  private exportRow: ExportRow | null = null; // the Kernels tab's, live
  /** What the kernel says of an export it was asked for: the module it wrote, or why not. */
  setExportStatus(text: string): void { this.exportRow?.setStatus(text); }

  private xlaTab: XlaTab | null = null; // the XLA tab (xla_tab.ts), once drawn

  /** What the kernel says of a comparison it was asked for (its failure, say). */
  setXlaStatus(text: string): void {
    this.xlaTab?.setStatus(text);
  }

  private async drawXla(panel: HTMLElement): Promise<void> {
    this.xlaTab = new XlaTab(this.bundle, { compare: this.live.compareXla });
    await this.xlaTab.draw(panel);
  }

  // -- performance ----------------------------------------------------------------------------

  /** The tab in view. */
  get currentTab(): Tab {
    return this.tab;
  }

  /** What the kernel says of a benchmark it was asked to run (its failure, say). */
  setBenchStatus(text: string): void {
    this.benchStatus.textContent = text;
    this.node.querySelectorAll<HTMLButtonElement>('.xe-bench-run').forEach(b => { b.disabled = false; });
  }

  /** Live only: repeat, the button that runs ex.bench in the kernel, and what it is doing. */
  private benchControls(): HTMLElement | null {
    const { bench, benchUnavailable } = this.live;
    if (benchUnavailable) return el('div', { class: 'xe-hint xe-bench-row' }, benchUnavailable);
    if (!bench) return null;
    const repeat = el('input', { class: 'xe-bench-repeat', type: 'number', min: '1', max: '10000', value: String(this.view.repeat ?? 20), title: 'interleaved rounds' });
    repeat.addEventListener('change', () => this.keep({ repeat: Math.max(1, Math.round(Number(repeat.value) || 20)) }));
    const run = button('Run benchmark', 'Time eager NumPy against the compiled program, in the kernel', () => {
      run.disabled = true;
      this.benchStatus.textContent = 'warming up and timing…';
      bench(Math.max(1, Math.round(Number(repeat.value) || 20)));
    }, 'xe-btn xe-bench-run');
    return el('div', { class: 'xe-bench-row' }, el('label', {}, 'repeat ', repeat), ' ', run, ' ', this.benchStatus);
  }

  private drawPerformance(panel: HTMLElement): void {
    const bench = this.bundle.bench;
    const traffic = this.bundle.traffic ?? null;
    const controls = this.benchControls();
    if (controls) panel.append(controls);
    if (!bench && !traffic) {
      if (!controls) {
        panel.append(el('div', { class: 'xe-hint' }, 'No benchmark in this bundle: run ex.bench() (or %%xla with a live kernel) to measure.'));
      }
      return;
    }
    if (bench) {
      panel.append(el('div', { class: 'xe-what' },
        `compiled vs eager NumPy: ${speedWords(bench.speedup)} · measured, median of ${bench.repeat} interleaved rounds`));
      if (bench.spread_note) panel.append(el('div', { class: 'xe-note xe-spread' }, `Warning: ${bench.spread_note}.`));
      panel.append(barChart('Time per call (measured)', [
        { label: 'eager NumPy', value: bench.eager.median, lo: bench.eager.q1, hi: bench.eager.q3, cls: 'eager' },
        { label: 'compiled', value: bench.compiled.median, lo: bench.compiled.q1, hi: bench.compiled.q3, cls: 'compiled' }
      ], formatSeconds, 'median; whiskers: first to third quartile'));
      // What compiled holds is its arena, kept between calls, plus what a call allocates: a bar
      // of the call alone would show it far smaller than it is.
      const held = bench.compiled_held_bytes ?? bench.arena_bytes + bench.compiled.peak_bytes;
      panel.append(barChart('Memory held during a call', [
        { label: 'eager NumPy: peak', value: bench.eager.peak_bytes, cls: 'eager' },
        { label: 'compiled: arena + call', value: held, cls: 'compiled' },
        { label: 'compiled: its arena, kept', value: bench.arena_bytes, cls: 'compiled' },
        { label: 'predicted by buffer assignment', value: bench.predicted_peak_bytes, cls: 'computed' }
      ], formatBytes, 'measured with tracemalloc (the arena: allocated once per executable); the prediction is the arena plus outputs'));
      if (bench.memory_verdict) panel.append(el('div', { class: 'xe-what xe-memory' }, bench.memory_verdict));
      const slower = bench.speedup !== null && bench.speedup < 0.95;
      if (slower && bench.eager.median < 1e-4) {
        panel.append(el('div', { class: 'xe-note' },
          `A call takes only ${formatSeconds(bench.eager.median)} in NumPy: at this size the fixed cost of ` +
          'calling the compiled kernels outweighs the memory traffic fusion saves. Larger arrays are where compiling pays.'));
      }
      if (bench.compile_seconds !== null) {
        panel.append(el('div', { class: 'xe-hint' }, `compiling took ${formatSeconds(bench.compile_seconds)}`));
      }
    }
    if (traffic) {
      panel.append(barChart('Bytes moved (computed, not measured)', [
        { label: 'eager: read', value: traffic.eager.read_bytes, cls: 'eager' },
        { label: 'eager: written', value: traffic.eager.write_bytes, cls: 'eager' },
        { label: 'fused: read', value: traffic.fused.read_bytes, cls: 'compiled' },
        { label: 'fused: written', value: traffic.fused.write_bytes, cls: 'compiled' }
      ], formatBytes, 'computed from the buffer assignment and each kernel\'s reads and writes'));
    }
  }
}

/** A pass's notes: the first few in view, the rest behind a disclosure. */
function notesList(notes: string[]): HTMLElement {
  const SHOWN = 6;
  const ul = el('ul', {}, ...notes.slice(0, SHOWN).map(n => el('li', {}, n)));
  if (notes.length <= SHOWN) return ul;
  return el('div', {}, ul, el('details', {}, el('summary', {}, `${notes.length - SHOWN} more notes`),
    el('ul', {}, ...notes.slice(SHOWN).map(n => el('li', {}, n)))));
}

interface Bar { label: string; value: number; lo?: number; hi?: number; cls: string }

function barChart(title: string, bars: Bar[], fmt: (v: number) => string, note: string): HTMLElement {
  const W = 640, left = 210, right = 90, row = 26, top = 8;
  const H = top + bars.length * row + 6;
  const max = Math.max(1e-30, ...bars.map(b => Math.max(b.value, b.hi ?? 0)));
  const sx = (W - left - right) / max;
  const svg = svgEl('svg', { class: 'xe-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img' },
    svgEl('title', {}, title));
  bars.forEach((b, i) => {
    const y = top + i * row;
    svg.append(svgEl('text', { class: 'xe-axis', x: left - 8, y: y + 15, 'text-anchor': 'end' }, b.label));
    svg.append(svgEl('rect', { class: `xe-bar xe-bar-${b.cls}`, x: left, y: y + 3, width: Math.max(1, b.value * sx), height: row - 8 },
      svgEl('title', {}, `${b.label}: ${fmt(b.value)}`)));
    if (b.lo !== undefined && b.hi !== undefined) {
      svg.append(svgEl('line', { class: 'xe-whisker', x1: left + b.lo * sx, x2: left + b.hi * sx, y1: y + row / 2 - 1, y2: y + row / 2 - 1 }));
    }
    svg.append(svgEl('text', { class: 'xe-value', x: left + Math.max(b.value, b.hi ?? 0) * sx + 6, y: y + 15 }, fmt(b.value)));
  });
  return el('div', { class: 'xe-chart-box' }, el('div', { class: 'xe-chart-title' }, title), svg, el('div', { class: 'xe-hint' }, note));
}

/** The explorer as JupyterLab's mime renderer. */
export class ExplorerWidget extends Widget implements IRenderMime.IRenderer {
  readonly explorer: Explorer;

  constructor(_options?: IRenderMime.IRendererOptions) {
    super();
    this.explorer = new Explorer(this.node);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    await this.explorer.render(model.data[MIME_TYPE]);
  }
}
