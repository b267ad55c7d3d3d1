/**
 * @jest-environment jsdom
 */
/// <reference types="node" />
// The XLA tab drawn from a bundle the Python side made (xla_bundle.json, written by
// scripts/xla_tab_fixture.py: a softmax after ex.compare_xla()). The graphs are stand-ins here
// (Graphviz's WASM runs in the browser tests); everything else is the tab's own DOM.

import { readFileSync } from 'fs';
import { join } from 'path';
import type { Bundle } from '../src/model';
import { DrawnGraph, HOW_TO_COMPARE, XlaTab } from '../src/xla_tab';

const saved = JSON.parse(readFileSync(join(__dirname, 'xla_bundle.json'), 'utf-8')) as Bundle;

function copy(): Bundle {
  return JSON.parse(JSON.stringify(saved)) as Bundle;
}

function stand_in(shown: string[]) {
  return (dot: string): DrawnGraph => {
    const node = document.createElement('div');
    node.className = 'graph-stand-in';
    node.dataset.dot = dot;
    return { node, show: async () => { shown.push(dot); } };
  };
}

async function draw(bundle: Bundle, compare?: (repeat: number) => void) {
  const shown: string[] = [];
  const panel = document.createElement('div');
  document.body.append(panel);
  const tab = new XlaTab(bundle, { compare, graph: stand_in(shown) });
  await tab.draw(panel);
  return { panel, shown, tab };
}

describe('the XLA tab', () => {
  it('draws a saved comparison: counts, kernels matched row by row, sentences, both graphs', async () => {
    const c = saved.xla!.comparison!;
    const { panel, shown } = await draw(copy());
    // Read off the fixture's own JSON: XLA's kernels in its order, each with ours beside it.
    const rows = [...panel.querySelectorAll('.xe-xla-kernels tr[data-kernel]')];
    expect(rows.map(r => (r as HTMLElement).dataset.kernel)).toEqual(c.kernels.map(k => k.name));
    expect(c.kernels.length).toBeGreaterThan(1); // XLA:CPU splits a small softmax
    rows.forEach((r, i) => {
      const cells = [...r.querySelectorAll('td')].map(td => td.textContent);
      expect(cells[4]).toBe(c.kernels[i].ours.join(', '));
    });
    expect(panel.querySelector('.xe-xla-counts')!.textContent)
      .toContain(`${c.kernels.length} kernels · here (cpu backend): ${c.ours.length} kernel`);
    const said = [...panel.querySelectorAll('.xe-xla-sentences li')].map(li => li.textContent);
    expect(said).toEqual(c.sentences);
    expect(said.some(s => /is not fused into its consumer/.test(s!))).toBe(true);
    const facts = panel.querySelector('.xe-xla-facts')!.textContent!;
    expect(facts).toContain('temporary bytes');
    expect(facts).toContain(`${c.temp_bytes} B (memory_analysis)`);
    // XLA's graph beside the final stage's, both shown once they are in the document.
    expect(shown).toEqual([c.dot, saved.stages[saved.stages.length - 1].dot]);
    const sides = [...panel.querySelectorAll('.xe-xla-side')].map(s => (s as HTMLElement).dataset.side);
    expect(sides).toEqual(['xla', 'ours']);
    expect(panel.querySelector('.xe-xla-hlo')!.textContent).toContain('ENTRY');
    expect(panel.querySelector('.xe-xla-run')).toBeNull(); // no kernel: no button
  });

  it('before a comparison, says how to make one; live, offers the button', async () => {
    const b = copy();
    b.xla!.comparison = null;
    const saved_ = await draw(b);
    expect(saved_.panel.textContent).toContain(HOW_TO_COMPARE);
    const asked: number[] = [];
    const live = await draw(copy(), r => asked.push(r));
    live.panel.querySelector<HTMLButtonElement>('.xe-xla-run')!.click();
    expect(asked).toEqual([20]);
    const none = copy();
    none.xla!.comparison = null;
    const fresh = await draw(none, r => asked.push(r));
    const button = fresh.panel.querySelector<HTMLButtonElement>('.xe-xla-run')!;
    expect(button.textContent).toBe('Compare with XLA');
    button.click();
    expect(button.disabled).toBe(true);
    fresh.tab.setStatus('comparison failed: CompileError: ...');
    expect(button.disabled).toBe(false);
    expect(fresh.panel.querySelector('.xe-xla-status')!.textContent).toMatch(/^comparison failed/);
  });

  it('without jax, says how to get it', async () => {
    const b = copy();
    b.xla = { jax: false, install: "pip install 'xla-explorer[xla]'", comparison: null };
    const { panel } = await draw(b, () => undefined);
    expect(panel.querySelector('.xe-xla-missing')!.textContent).toContain("pip install 'xla-explorer[xla]'");
    expect(panel.querySelector('.xe-xla-run')).toBeNull();
  });

  it('a bundle from before the tab says so', async () => {
    const b = copy();
    delete b.xla;
    const { panel } = await draw(b);
    expect(panel.textContent).toMatch(/made before the XLA tab/);
  });
});
