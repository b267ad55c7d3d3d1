import { layoutTimeline, overlaps } from '../src/timeline';
import type { Buffers } from '../src/model';

function buffers(allocations: Buffers['allocations'], steps: number, peak: number): Buffers {
  return {
    peak_bytes: peak, lower_bound_bytes: peak, fragmentation_bytes: 0, heap_order: 'size', alignment: 64,
    temporary_bytes: peak, steps, report: '', allocations, sharings: []
  };
}

describe('layoutTimeline', () => {
  const b = buffers([
    { index: 0, offset: 0, size: 256, live_range: [3, 4], values: ['dot.30'] },
    { index: 1, offset: 256, size: 256, live_range: [4, 5], values: ['row_fusion.31'] },
    { index: 2, offset: 0, size: 128, live_range: [5, 6], values: ['a.1', 'b.2'] }
  ], 7, 512);
  // A 700 x 200 plot after margins: 100 px a step, 200/512 px a byte.
  const L = layoutTimeline(b, 760, 240, { left: 50, right: 10, top: 10, bottom: 30 });

  it('puts steps across and offsets up', () => {
    expect(L.steps).toBe(7);
    expect(L.arena).toBe(512);
    const [r0, r1, r2] = L.rects;
    expect(r0).toMatchObject({ x: 350, width: 200, y: 110, height: 100 });
    expect(r1).toMatchObject({ x: 450, width: 200, y: 10, height: 100 });
    expect(r2).toMatchObject({ x: 550, width: 200, y: 160, height: 50 });
    expect(r2.values).toEqual(['a.1', 'b.2']);
    expect(L.stepX[0]).toBe(50);
    expect(L.stepX[7]).toBe(750);
  });

  it('finds no overlap in a valid assignment and flags one in a broken one', () => {
    expect(overlaps(L.rects)).toEqual([]);
    const bad = layoutTimeline(buffers([
      { index: 0, offset: 0, size: 256, live_range: [0, 2], values: ['a'] },
      { index: 1, offset: 128, size: 256, live_range: [2, 3], values: ['b'] }
    ], 4, 384));
    expect(overlaps(bad.rects)).toEqual([[0, 1]]);
  });

  it('widens the axis to a live range past the step count', () => {
    const L2 = layoutTimeline(buffers([{ index: 0, offset: 0, size: 64, live_range: [0, 9], values: ['x'] }], 3, 64));
    expect(L2.steps).toBe(10);
  });
});
