// Syntax colouring as token lists (text + class), so the view builds text nodes and never
// parses markup from the bundle.

export interface Token {
  text: string;
  cls: string | null;  // 'kw', 'str', 'num', 'com', 'dec', 'builtin', 'op' or null
}

const PY_KEYWORDS = new Set(('False None True and as assert break class continue def del elif else ' +
  'except finally for from global if import in is lambda nonlocal not or pass raise return try ' +
  'while with yield').split(' '));
const PY_BUILTINS = new Set(('range prange len min max abs float int bool print np numba cuda ' +
  'math').split(' '));

/** Python source (a Numba kernel) as tokens. Triple-quoted strings may span lines. */
export function tokenizePython(src: string): Token[] {
  const out: Token[] = [];
  const push = (text: string, cls: string | null) => {
    if (!text) return;
    const last = out[out.length - 1];
    if (last && last.cls === cls && cls === null) last.text += text;
    else out.push({ text, cls });
  };
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    if (c === '#') {
      const j = src.indexOf('\n', i);
      const e = j < 0 ? n : j;
      push(src.slice(i, e), 'com');
      i = e;
    } else if (c === '"' || c === "'") {
      const triple = src.startsWith(c.repeat(3), i);
      const q = triple ? c.repeat(3) : c;
      let j = i + q.length;
      while (j < n && !src.startsWith(q, j)) {
        if (src[j] === '\\') j++;
        if (!triple && src[j] === '\n') break;
        j++;
      }
      j = Math.min(n, j + (src.startsWith(q, j) ? q.length : 0));
      push(src.slice(i, j), 'str');
      i = j;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(src[i + 1] ?? ''))) {
      const m = /^(0[xX][0-9a-fA-F_]+|(\d[\d_]*)?\.?\d[\d_]*([eE][+-]?\d+)?[jJ]?)/.exec(src.slice(i));
      const t = m && m[0] ? m[0] : c;
      push(t, 'num');
      i += t.length;
    } else if (c === '@' && /[A-Za-z_]/.test(src[i + 1] ?? '')) {
      const m = /^@[\w.]+/.exec(src.slice(i))!;
      push(m[0], 'dec');
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^\w+/.exec(src.slice(i))!;
      const w = m[0];
      push(w, PY_KEYWORDS.has(w) ? 'kw' : PY_BUILTINS.has(w) ? 'builtin' : null);
      i += w.length;
    } else {
      push(c, null);
      i++;
    }
  }
  return out;
}

/** The instruction an HLO text line defines (`  ROOT add.3 = f32[4] add(...)` -> add.3). */
export function hloLineName(line: string): string | null {
  const m = /^\s*(?:ROOT\s+)?([^\s=(){},]+)\s*=\s*\S/.exec(line);
  return m && !/^HloModule/.test(line) ? m[1] : null;
}

/** `, metadata={...}` removed (nested braces and quoted strings respected). */
export function stripMetadata(line: string): string {
  const k = line.indexOf(', metadata={');
  if (k < 0) return line;
  let i = k + ', metadata='.length;
  let depth = 0;
  let inStr = false;
  for (; i < line.length; i++) {
    const c = line[i];
    if (inStr) {
      if (c === '\\') i++;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) {
      i++;
      break;
    }
  }
  return line.slice(0, k) + line.slice(i);
}

export interface HloLine {
  text: string;
  name: string | null;
  changed: boolean;
}

/** The stage's HLO as lines, each with the instruction it defines and whether the pass changed
 * it (its name, or its origin for a clone, in `changed`). */
export function hloLines(hlo: string, changed: Iterable<string>, metadata = false): HloLine[] {
  const set = new Set(changed);
  return hlo.split('\n').map(raw => {
    const text = metadata ? raw : stripMetadata(raw);
    const name = hloLineName(raw);
    return { text, name, changed: name !== null && set.has(name) };
  });
}

/** HLO text as tokens: types, opcodes, the defined name, keywords (ROOT, attributes). */
export function tokenizeHlo(line: string): Token[] {
  const out: Token[] = [];
  const re = /(\bROOT\b)|((?:pred|[suf]\d+|bf16|c64|c128)\[[^\]]*\](?:\{[^}]*\})?)|("(?:[^"\\]|\\.)*")|(\b[a-z_][\w-]*(?==))|(\b[a-z][\w-]*(?=\())|(-?\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b)/g;
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(line))) {
    if (m.index > last) out.push({ text: line.slice(last, m.index), cls: null });
    const cls = m[1] ? 'kw' : m[2] ? 'type' : m[3] ? 'str' : m[4] ? 'attr' : m[5] ? 'op' : 'num';
    out.push({ text: m[0], cls });
    last = m.index + m[0].length;
  }
  if (last < line.length) out.push({ text: line.slice(last), cls: null });
  return out;
}
