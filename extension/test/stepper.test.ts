import { Stepper, visibleStages } from '../src/stepper';

describe('Stepper', () => {
  it('steps one at a time and stops at the ends', () => {
    const s = new Stepper(3);
    expect(s.index).toBe(0);
    expect(s.atStart).toBe(true);
    expect(s.step(-1)).toBe(false);
    expect(s.step(1)).toBe(true);
    expect(s.step(1)).toBe(true);
    expect(s.index).toBe(2);
    expect(s.atEnd).toBe(true);
    expect(s.step(1)).toBe(false);
    expect(s.index).toBe(2);
  });

  it('clamps a start outside the list and handles an empty list', () => {
    expect(new Stepper(4, 9).index).toBe(3);
    expect(new Stepper(4, -2).index).toBe(0);
    const e = new Stepper(0);
    expect(e.step(1)).toBe(false);
    expect(e.index).toBe(0);
  });

  it('maps keys as the fusion visualizer does: j next, k previous', () => {
    expect(Stepper.keyDelta('j', 5)).toBe(1);
    expect(Stepper.keyDelta('k', 5)).toBe(-1);
    expect(Stepper.keyDelta('ArrowRight', 5)).toBe(1);
    expect(Stepper.keyDelta('End', 5)).toBe(5);
    expect(Stepper.keyDelta('x', 5)).toBeNull();
    const s = new Stepper(5, 2);
    s.step(Stepper.keyDelta('Home', 5)!);
    expect(s.index).toBe(0);
  });
});

describe('visibleStages', () => {
  const stages = [0, 1, 2, 3].map(i => ({ index: i, changed: i !== 2 && i !== 0 }));
  it('keeps the traced module and the passes that changed something', () => {
    expect(visibleStages(stages, false)).toEqual([0, 1, 3]);
    expect(visibleStages(stages, true)).toEqual([0, 1, 2, 3]);
  });
});
