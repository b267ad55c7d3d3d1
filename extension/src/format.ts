// Numbers as a student reads them: units that fit, and a speed ratio said in words.

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[u]}`;
}

export function formatSeconds(s: number): string {
  if (!Number.isFinite(s)) return String(s);
  const a = Math.abs(s);
  if (a >= 1) return `${s.toFixed(2)} s`;
  if (a >= 1e-3) return `${(s * 1e3).toFixed(a >= 1e-2 ? 1 : 2)} ms`;
  if (a >= 1e-6) return `${(s * 1e6).toFixed(a >= 1e-5 ? 1 : 2)} µs`;
  return `${(s * 1e9).toFixed(0)} ns`;
}

/** eager / compiled as words: "3.1x faster", "slower (0.82x)", "about the same (1.02x)". */
export function speedWords(speedup: number | null): string {
  if (speedup === null || !Number.isFinite(speedup)) return 'speed-up not measured';
  const r = speedup >= 10 ? speedup.toFixed(0) : speedup.toFixed(2);
  if (speedup >= 1.05) return `${r}x faster`;
  if (speedup <= 0.95) return `slower (${r}x)`;
  return `about the same (${r}x)`;
}
