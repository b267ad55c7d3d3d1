import { kernelHlo, kernelKey, kernelsInOrder, nodeFacts } from '../src/info';
import type { Bundle } from '../src/model';

const bundle = {
  version: 1, module: 'softmax', backend: 'cpu', autocluster: false, stages: [], decisions: [],
  clusters: { compiled: [{ name: 'cluster_0', instructions: ['x.1', 'reduce.2', 'subtract.3', 'multiply.5'] }], eager: [] },
  fusions: [{ name: 'row_fusion.9', kind: 'kInput', row: true, instructions: ['reduce.2', 'subtract.3', 'multiply.5'], outputs: ['subtract.3'], reasons: [] }],
  buffers: {
    peak_bytes: 128, lower_bound_bytes: 128, fragmentation_bytes: 0, heap_order: 'size', alignment: 64, temporary_bytes: 128,
    steps: 4, report: '', sharings: [],
    allocations: [{ index: 0, offset: 0, size: 128, live_range: [1, 2], values: ['row_fusion.9{0}'] }]
  },
  kernels: { 'cluster_0/row_fusion_9': 'def row_fusion_9(): pass' },
  bench: null
} as unknown as Bundle;

const facts = (name: string, info = {}) => Object.fromEntries(nodeFacts(bundle, name, info).rows);

describe('nodeFacts', () => {
  it('follows an instruction to its fusion, buffer and kernel', () => {
    const f = facts('subtract.3', { shape: 'f32[4,8]', dtype: 'float32', source: 'p.py:4' });
    expect(f.shape).toBe('f32[4,8]');
    expect(f['source line']).toBe('p.py:4');
    expect(f.cluster).toBe('cluster_0');
    expect(f.fusion).toMatch(/^row_fusion\.9 \(row fusion, 3 instructions\)/);
    expect(f.buffer).toMatch(/^allocation 0: 128 B at arena offset 0, live steps 1-2/);
    expect(f.kernel).toBe('cluster_0/row_fusion_9');
  });

  it('says a value inside a fusion never reaches memory', () => {
    expect(facts('reduce.2').buffer).toBe('none: stays inside row_fusion.9, never written to memory');
  });

  it('finds a clone by its origin and says so', () => {
    const f = facts('multiply.5.clone.7');
    expect(f.origin).toMatch(/^multiply\.5/);
    expect(f.fusion).toMatch(/^row_fusion\.9/);
  });

  it('names an instruction no kernel computes', () => {
    const f = facts('tuple.8');
    expect(f.fusion).toBe('none: not computed by a kernel of the final program');
    expect(f.kernel).toBe('none');
    expect(kernelKey(bundle, 'fusion.1')).toBeNull();
  });
});

describe('kernelsInOrder', () => {
  it('lists kernels in schedule order whatever the key order, extra keys last', () => {
    const b = {
      ...bundle,
      fusions: [{ name: 'dot.30' }, { name: 'row_fusion.31' }, { name: 'dot.28' }],
      kernels: { 'dot_28': '', 'dot_30': '', 'helper': '', 'row_fusion_31': '' }
    } as unknown as Bundle;
    expect(kernelsInOrder(b)).toEqual(['dot_30', 'row_fusion_31', 'dot_28', 'helper']);
  });
});

describe('kernelHlo', () => {
  const hlo = [
    'HloModule f', '', 'fused_computation.10 {', '  p.11 = f32[4] parameter(0)',
    '  ROOT e.12 = f32[4] exponential(p.11)', '}', '', 'ENTRY f {',
    '  x.1 = f32[4] parameter(0)',
    '  exponential_fusion.9 = f32[4] fusion(x.1), kind=kLoop, calls=fused_computation.10',
    '  ROOT dot.3 = f32[] dot(exponential_fusion.9, x.1), lhs_contracting_dims={0}, rhs_contracting_dims={0}',
    '}'].join('\n');
  const b = {
    ...bundle, stages: [{ hlo }],
    fusions: [{ name: 'exponential_fusion.9' }, { name: 'dot.3' }],
    kernels: { exponential_fusion_9: '', dot_3: '', helper: '' }
  } as unknown as Bundle;
  it("gives a fusion's called computation and a lone op's line", () => {
    expect(kernelHlo(b, 'exponential_fusion_9')).toBe(
      'fused_computation.10 {\n  p.11 = f32[4] parameter(0)\n  ROOT e.12 = f32[4] exponential(p.11)\n}');
    expect(kernelHlo(b, 'dot_3')).toMatch(/^ROOT dot\.3 = f32\[\] dot\(/);
  });
  it('gives nothing for a kernel the final text does not define', () => {
    expect(kernelHlo(b, 'helper')).toBe('');
  });
});
