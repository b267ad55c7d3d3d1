// The buffer timeline's layout: schedule step across, arena offset up, one rectangle per
// (allocation, value) held over the allocation's live range. Pure numbers; the view draws them.

import type { Buffers } from './model';

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
  allocation: number;
  values: string[];
  offset: number;
  size: number;
  first: number;
  last: number;
}

export interface TimelineLayout {
  width: number;
  height: number;
  plot: { left: number; top: number; width: number; height: number };
  steps: number;
  arena: number;
  rects: Rect[];
  /** x of the left edge of each step, steps + 1 entries (the last is the right edge). */
  stepX: number[];
}

export function layoutTimeline(b: Buffers, width = 640, height = 220,
                               margin = { left: 56, right: 12, top: 10, bottom: 28 }): TimelineLayout {
  const steps = Math.max(1, b.steps, ...b.allocations.map(a => a.live_range[1] + 1));
  const arena = Math.max(1, b.peak_bytes, ...b.allocations.map(a => a.offset + a.size));
  const plot = {
    left: margin.left, top: margin.top,
    width: width - margin.left - margin.right, height: height - margin.top - margin.bottom
  };
  const sx = plot.width / steps;
  const sy = plot.height / arena;
  const stepX = Array.from({ length: steps + 1 }, (_, i) => plot.left + i * sx);
  const rects = b.allocations.map(a => {
    const [first, last] = a.live_range;
    return {
      x: plot.left + first * sx,
      width: (last - first + 1) * sx,
      // Offset grows upwards: offset 0 sits on the bottom axis.
      y: plot.top + plot.height - (a.offset + a.size) * sy,
      height: a.size * sy,
      allocation: a.index, values: a.values, offset: a.offset, size: a.size, first, last
    };
  });
  return { width, height, plot, steps, arena, rects, stepX };
}

/** Rectangles whose live ranges overlap in time must not overlap in the arena: the check a
 * buffer assignment has to pass, kept here so the view can flag a bundle that breaks it. */
export function overlaps(rects: Rect[]): [number, number][] {
  const bad: [number, number][] = [];
  for (let i = 0; i < rects.length; i++) {
    for (let j = i + 1; j < rects.length; j++) {
      const a = rects[i], b = rects[j];
      const time = a.first <= b.last && b.first <= a.last;
      const space = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      if (time && space) bad.push([a.allocation, b.allocation]);
    }
  }
  return bad;
}
