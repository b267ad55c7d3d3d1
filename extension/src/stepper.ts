// Stepping through a list (stages, decisions) one at a time, as XLA's fusion visualizer does
// with j/k: clamped at the ends, so the buttons can say when they are disabled.

export class Stepper {
  private _index = 0;

  constructor(readonly length: number, start = 0) {
    this._index = this.clamp(start);
  }

  get index(): number {
    return this._index;
  }

  get atStart(): boolean {
    return this._index <= 0;
  }

  get atEnd(): boolean {
    return this._index >= this.length - 1;
  }

  /** Move by `delta` (clamped); true when the index changed. */
  step(delta: number): boolean {
    return this.go(this._index + delta);
  }

  go(index: number): boolean {
    const i = this.clamp(index);
    const moved = i !== this._index;
    this._index = i;
    return moved;
  }

  /** The key's move: j / ArrowDown / ArrowRight next, k / ArrowUp / ArrowLeft previous,
   * Home / End the ends; null for any other key. */
  static keyDelta(key: string, length: number): number | null {
    switch (key) {
      case 'j': case 'ArrowDown': case 'ArrowRight': return 1;
      case 'k': case 'ArrowUp': case 'ArrowLeft': return -1;
      case 'Home': return -length;
      case 'End': return length;
      default: return null;
    }
  }

  private clamp(i: number): number {
    if (this.length <= 0) return 0;
    return Math.max(0, Math.min(this.length - 1, Math.trunc(i)));
  }
}

/** The stages a student steps through: the changed ones (and the traced module), unless all. */
export function visibleStages(stages: { index: number; changed: boolean }[], all: boolean): number[] {
  return stages.filter(s => all || s.changed || s.index === 0).map(s => s.index);
}
