import { clusterNamed, collapseClusters, highlightClasses, largeFusions, labelTitle, nodesNamed, origin, parseAttrs, parseDot } from '../src/dot';
import { DOT } from './fixtures';

describe('parseAttrs', () => {
  it('reads quoted, HTML-like and bare values', () => {
    const a = parseAttrs('label=<<b>x</b><br/>y> color="#fff" fontsize=8 tooltip="a\\nb \\"c\\""');
    expect(a).toEqual({ label: '<b>x</b><br/>y', color: '#fff', fontsize: '8', tooltip: 'a\nb "c"' });
  });
});

describe('parseDot', () => {
  const g = parseDot(DOT);

  it('names every node by its tooltip, not its id', () => {
    expect([...g.nodes.values()].map(n => n.name)).toEqual(
      ['x.1', 'reduce.2', 'subtract.3', 'exponential.4', 'multiply.5.clone.11', 'divide.6', 'tuple.7']);
    expect(g.byName.get('divide.6')).toBe('n5');
  });

  it('reads shape, dtype and source from the tooltip', () => {
    const n = g.nodes.get('n1')!;
    expect(n.info).toMatchObject({ shape: 'f32[4]', dtype: 'float32', source: 'prog.py:4', op_name: 'softmax/max' });
    expect(g.nodes.get('n5')!.info.source).toBe('prog.py:5 "quoted"');
  });

  it('knows which nodes a fusion cluster holds', () => {
    const c = g.clusters.get('cluster_row_fusion_9')!;
    expect(c.title).toBe('row_fusion.9');
    expect(c.fusion).toBe(true);
    expect(c.nodes).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect(g.nodes.get('n2')!.clusters).toEqual(['cluster_row_fusion_9']);
    expect(g.nodes.get('n5')!.clusters).toEqual([]);
    expect(g.edges).toHaveLength(8);
  });

  it('unescapes HTML in label titles', () => {
    expect(labelTitle('<b>a &lt; b</b><br/>x')).toBe('a < b');
  });
});

describe('clones', () => {
  const g = parseDot(DOT);
  it('a clone is found by its origin', () => {
    expect(origin('multiply.5.clone.11')).toBe('multiply.5');
    expect(origin('multiply.5.clone')).toBe('multiply.5');
    expect(origin('add.3')).toBe('add.3');
    expect(nodesNamed(g, 'multiply.5')).toEqual(['n4']);
    expect(nodesNamed(g, 'multiply.5.clone.11')).toEqual(['n4']);
    expect(nodesNamed(g, 'nothing.1')).toEqual([]);
  });
});

describe('highlightClasses', () => {
  const g = parseDot(DOT);
  it('marks changed nodes and fusions, the producer, the consumer and the selection', () => {
    const h = highlightClasses(g, { changed: ['row_fusion.9', 'divide.6'], producer: 'exponential.4', consumer: 'divide.6', selected: 'x.1' });
    expect(h.get('cluster_row_fusion_9')).toEqual(['xe-changed']);
    expect(h.get('n5')).toEqual(['xe-changed', 'xe-consumer']);
    expect(h.get('n3')).toEqual(['xe-producer']);
    expect(h.get('n0')).toEqual(['xe-selected']);
    expect(h.has('n1')).toBe(false);
    expect(clusterNamed(g, 'row_fusion.9')).toBe('cluster_row_fusion_9');
  });

  it('marks nothing for names the graph does not draw', () => {
    expect(highlightClasses(g, { producer: 'gone.1', consumer: '' }).size).toBe(0);
  });
});

describe('collapseClusters', () => {
  const g = parseDot(DOT);
  it('folds a fusion into one node and rewires its edges', () => {
    expect(largeFusions(g, 3)).toEqual(['cluster_row_fusion_9']);
    expect(largeFusions(g, 4)).toEqual([]);
    const folded = collapseClusters(DOT, g, ['cluster_row_fusion_9']);
    const f = parseDot(folded);
    expect([...f.nodes.keys()].sort()).toEqual(['n0', 'n5', 'n6', 'x_cluster_row_fusion_9']);
    expect(f.nodes.get('x_cluster_row_fusion_9')!.name).toBe('row_fusion.9');
    expect(f.clusters.size).toBe(0);
    // x.1 fed two nodes inside: one edge now; two edges leave to divide.6: one edge now.
    const edges = f.edges.map(e => `${e.from}>${e.to}`).sort();
    expect(edges).toEqual(['n0>x_cluster_row_fusion_9', 'n5>n6', 'x_cluster_row_fusion_9>n5']);
    // The folded node answers to the fusion's name for highlighting.
    expect(highlightClasses(f, { changed: ['row_fusion.9'] }).get('x_cluster_row_fusion_9')).toEqual(['xe-changed']);
  });

  it('leaves the DOT alone when nothing is folded', () => {
    expect(collapseClusters(DOT, g, [])).toBe(DOT);
  });
});
