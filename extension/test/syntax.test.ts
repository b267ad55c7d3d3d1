import { hloLineName, hloLines, stripMetadata, tokenizeHlo, tokenizePython } from '../src/syntax';
import { formatBytes, formatSeconds, speedWords } from '../src/format';

describe('tokenizePython', () => {
  it('colours keywords, strings, comments, numbers and decorators, and keeps every character', () => {
    const src = '@njit(fastmath=True)\ndef k(x):  # a kernel\n    """doc\n    more"""\n    return x * 0.5 if x < 1e-3 else "a#b"\n';
    const toks = tokenizePython(src);
    expect(toks.map(t => t.text).join('')).toBe(src);
    const of = (cls: string) => toks.filter(t => t.cls === cls).map(t => t.text);
    expect(of('dec')).toEqual(['@njit']);
    expect(of('kw')).toEqual(['True', 'def', 'return', 'if', 'else']);
    expect(of('com')).toEqual(['# a kernel']);
    expect(of('str')).toEqual(['"""doc\n    more"""', '"a#b"']);
    expect(of('num')).toEqual(['0.5', '1e-3']);
  });
});

describe('HLO lines', () => {
  const hlo = 'HloModule m\n\nENTRY main {\n  x.1 = f32[4] parameter(0), metadata={op_name="x" source_line=3}\n  ROOT add.2 = f32[4] add(x.1, x.1)\n}';
  it('names the instruction each line defines', () => {
    expect(hloLineName('  ROOT add.2 = f32[4] add(x.1, x.1)')).toBe('add.2');
    expect(hloLineName('  x.1 = f32[4] parameter(0)')).toBe('x.1');
    expect(hloLineName('ENTRY main {')).toBeNull();
    expect(hloLineName('HloModule m, entry_computation_layout={(f32[4])->f32[4]}')).toBeNull();
  });

  it('marks the lines of changed instructions and hides metadata unless asked', () => {
    const lines = hloLines(hlo, ['add.2']);
    expect(lines.filter(l => l.changed).map(l => l.name)).toEqual(['add.2']);
    expect(lines[3].text).toBe('  x.1 = f32[4] parameter(0)');
    expect(hloLines(hlo, [], true)[3].text).toContain('metadata={op_name="x" source_line=3}');
  });

  it('strips nested metadata with braces in strings', () => {
    expect(stripMetadata('a = f32[] b(), metadata={op_name="f{1}" x={y}}, z=1')).toBe('a = f32[] b(), z=1');
  });

  it('tokenizes types, opcodes and attributes without losing text', () => {
    const line = '  ROOT fusion.3 = f32[8,8]{1,0} fusion(x.1), kind=kLoop, calls=fused.4';
    const t = tokenizeHlo(line);
    expect(t.map(x => x.text).join('')).toBe(line);
    expect(t.filter(x => x.cls === 'type').map(x => x.text)).toEqual(['f32[8,8]{1,0}']);
    expect(t.filter(x => x.cls === 'op').map(x => x.text)).toEqual(['fusion']);
    expect(t.filter(x => x.cls === 'kw').map(x => x.text)).toEqual(['ROOT']);
    expect(t.filter(x => x.cls === 'attr').map(x => x.text)).toEqual(['kind', 'calls']);
  });
});

describe('formats', () => {
  it('picks units that fit', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(3 * 1024 * 1024)).toBe('3.00 MiB');
    expect(formatSeconds(2.5e-5)).toBe('25.0 µs');
    expect(formatSeconds(0.0123)).toBe('12.3 ms');
  });

  it('says slower instead of a fraction faster', () => {
    expect(speedWords(3.14)).toBe('3.14x faster');
    expect(speedWords(0.82)).toBe('slower (0.82x)');
    expect(speedWords(1.0)).toBe('about the same (1.00x)');
    expect(speedWords(null)).toBe('speed-up not measured');
  });
});
