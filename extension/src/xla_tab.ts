// The XLA tab: real XLA (XLA:CPU, from jax) beside ours, drawn from the bundle's "xla" key
// (xla_explorer/api/xla_compare.py): the kernels matched row by row, counts, times, temporary
// bytes, the differences in words, and both fused graphs. Before a comparison exists it says how
// to make one: a button in the live explorer (the kernel runs ex.compare_xla), a line otherwise.

import { el } from './dom';
import { formatBytes, formatSeconds } from './format';
import { GraphView } from './graphview';
import type { Bundle, XlaComparison } from './model';
import { tokenizeHlo, stripMetadata, Token } from './syntax';

/** A graph the explorer draws (a GraphView in the page, a stand-in under jest): its element,
 * and `show`, called once the element is in the document (layout needs its size). */
export interface DrawnGraph {
  node: HTMLElement;
  show(): Promise<void>;
}

export interface XlaTabOptions {
  compare?: (repeat: number) => void; // live: ask the kernel for ex.compare_xla(repeat=...)
  graph?: (dot: string) => DrawnGraph; // a GraphView unless given
}

/** A graph drawn as the explorer's others are: Graphviz in the page, pan, zoom, click. */
function graphView(dot: string): DrawnGraph {
  const view = new GraphView({ nodeClicked: (_n, name) => view.select(name) });
  return { node: view.node, show: () => view.show(dot, {}, false) };
}

/** How a saved output gets a comparison; shown where there is none. */
export const HOW_TO_COMPARE = 'No XLA comparison in this output: run ex.compare_xla() in a kernel and display ex again ' +
  '(or press "Compare with XLA" in the live explorer, ex.show()).';

function tokensInto(parent: HTMLElement, tokens: Token[]): void {
  for (const t of tokens) parent.append(t.cls ? el('span', { class: `xe-tok-${t.cls}` }, t.text) : t.text);
}

export class XlaTab {
  readonly status = el('span', { class: 'xe-xla-status' });
  private button: HTMLButtonElement | null = null;

  constructor(private bundle: Bundle, private options: XlaTabOptions) {}

  /** What the kernel says of a comparison it was asked for (its failure, say). */
  setStatus(text: string): void {
    this.status.textContent = text;
    if (this.button) this.button.disabled = false;
  }

  async draw(panel: HTMLElement): Promise<void> {
    const xla = this.bundle.xla;
    const c = xla?.comparison ?? null;
    if (!xla) {
      panel.append(el('div', { class: 'xe-hint xe-xla-none' },
        'This bundle was made before the XLA tab: explore the program again, then ex.compare_xla().'));
      return;
    }
    if (!xla.jax) {
      panel.append(el('div', { class: 'xe-note xe-xla-missing' },
        `XLA comes with jax, which this kernel cannot import. Install it with ${xla.install} ` +
        '(then restart the kernel) to compare with XLA.'));
    }
    const controls = xla.jax ? this.controls(c !== null) : null;
    if (controls) panel.append(controls);
    if (!c) {
      if (!controls && xla.jax) panel.append(el('div', { class: 'xe-hint xe-xla-none' }, HOW_TO_COMPARE));
      return;
    }
    await this.drawComparison(panel, c);
  }

  /** Live only: repeat, the button, and what the kernel is doing. */
  private controls(again: boolean): HTMLElement | null {
    const compare = this.options.compare;
    if (!compare) return null;
    const repeat = el('input', { class: 'xe-bench-repeat xe-xla-repeat', type: 'number', min: '1', max: '10000', value: '20', title: 'interleaved rounds' });
    const b = el('button', { class: 'xe-btn xe-xla-run', type: 'button', title: 'Compile the stage-0 HLO with XLA:CPU, in the kernel, and time both' },
      again ? 'Compare again' : 'Compare with XLA');
    b.addEventListener('click', () => {
      b.disabled = true;
      this.status.textContent = 'compiling with XLA and timing both…';
      compare(Math.max(1, Math.round(Number(repeat.value) || 20)));
    });
    this.button = b;
    return el('div', { class: 'xe-bench-row' }, el('label', {}, 'repeat ', repeat), ' ', b, ' ', this.status);
  }

  private async drawComparison(panel: HTMLElement, c: XlaComparison): Promise<void> {
    const t = c.times;
    panel.append(el('div', { class: 'xe-what xe-xla-counts' },
      `XLA:CPU (jax ${c.jax_version}): ${c.kernels.length} kernel${c.kernels.length === 1 ? '' : 's'} · ` +
      `here (${c.backend} backend): ${c.ours.length} kernel${c.ours.length === 1 ? '' : 's'}`));
    panel.append(el('ul', { class: 'xe-xla-sentences' }, ...c.sentences.map(s => el('li', {}, s))));
    const facts = el('table', { class: 'xe-facts xe-xla-facts' },
      el('tr', {}, el('th', {}, ''), el('th', {}, 'XLA'), el('th', {}, 'here')),
      row('kernels', String(c.kernels.length), String(c.ours.length)),
      row(`time per call (median of ${t.repeat} interleaved rounds, NumPy in and out)`,
        formatSeconds(t.xla.median), formatSeconds(t.ours.median)),
      row("XLA's executable alone (its inputs already jax arrays)", formatSeconds(t.xla_resident.median), ''),
      row('temporary bytes', `${formatBytes(c.temp_bytes)} (memory_analysis)`,
        c.ours_temp_bytes === null ? 'no buffer assignment' : `${formatBytes(c.ours_temp_bytes)} (arena)`));
    if (c.max_error !== null) facts.append(row('largest difference between the outputs', String(c.max_error), ''));
    panel.append(facts);
    if (t.spread_note) panel.append(el('div', { class: 'xe-note xe-spread' }, `Warning: ${t.spread_note}.`));
    panel.append(this.kernelTable(c));
    const graph = this.options.graph ?? graphView;
    const xlaGraph = graph(c.dot);
    const final = this.bundle.stages[this.bundle.stages.length - 1];
    const ours = graph(final.dot);
    panel.append(el('div', { class: 'xe-split xe-xla-graphs' },
      el('div', { class: 'xe-xla-side', 'data-side': 'xla' }, el('div', { class: 'xe-what' }, "XLA's optimised HLO"), xlaGraph.node),
      el('div', { class: 'xe-xla-side', 'data-side': 'ours' }, el('div', { class: 'xe-what' }, `ours: ${final.name}`), ours.node)));
    const pre = el('pre', { class: 'xe-code xe-xla-hlo' });
    c.hlo.split('\n').forEach((line, i) => {
      if (i) pre.append('\n');
      tokensInto(pre, tokenizeHlo(stripMetadata(line)));
    });
    panel.append(el('details', {}, el('summary', {}, "XLA's optimised HLO text"), pre));
    await Promise.all([xlaGraph.show(), ours.show()]);
  }

  /** XLA's kernels in its order, each beside ours that compute the same instructions; ours
   * that match none after them. */
  private kernelTable(c: XlaComparison): HTMLElement {
    const table = el('table', { class: 'xe-xla-kernels' },
      el('tr', {}, ...['XLA kernel', 'kind', 'ops', 'lines', 'here', 'matched by'].map(h => el('th', {}, h))));
    for (const k of c.kernels) {
      const tr = el('tr', { 'data-kernel': k.name },
        el('td', {}, k.name), el('td', {}, k.library ? `${k.kind} (${k.library})` : k.kind),
        el('td', {}, [...new Set(k.opcodes)].join(', ')), el('td', {}, k.lines.join(', ')),
        el('td', {}, k.ours.join(', ') || '—'), el('td', { class: 'xe-hint' }, k.matched_by));
      table.append(tr);
    }
    for (const o of c.ours.filter(o => !o.xla.length)) {
      table.append(el('tr', { 'data-ours': o.name }, el('td', {}, '—'), el('td', {}, ''), el('td', {}, ''),
        el('td', {}, ''), el('td', {}, `${o.name} (${o.kind})`), el('td', { class: 'xe-hint' }, 'no XLA kernel')));
    }
    return table;
  }
}

function row(label: string, xla: string, ours: string): HTMLTableRowElement {
  return el('tr', {}, el('th', {}, label), el('td', {}, xla), el('td', {}, ours));
}
