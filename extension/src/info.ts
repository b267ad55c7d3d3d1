// What a clicked instruction ended up as: its cluster, fusion, buffer and kernel, read from the
// bundle (the recorded pipeline), so the panel says where each value lives and who computes it.

import { origin } from './dot';
import type { Bundle, Fusion } from './model';
import { formatBytes } from './format';

export interface NodeFacts {
  name: string;
  rows: [string, string][];
}

/** The kernel key of fusion `name`: the backend names kernels after the fusion with
 * non-identifier characters as `_`, prefixed by `<cluster>/` under auto-clustering. */
export function kernelKey(bundle: Bundle, fusionName: string): string | null {
  const safe = fusionName.replace(/[^A-Za-z0-9_]/g, '_');
  for (const k of Object.keys(bundle.kernels)) {
    if (k === safe || k.endsWith('/' + safe) || k === fusionName) return k;
  }
  return null;
}

/** Kernel names in schedule order (the order of `fusions`): a saved notebook's JSON may have
 * its keys sorted (nbformat writes them so), which is not the order kernels run in. */
export function kernelsInOrder(bundle: Bundle): string[] {
  const keys = Object.keys(bundle.kernels);
  const out: string[] = [];
  for (const f of bundle.fusions) {
    const k = kernelKey(bundle, f.name);
    if (k !== null && !out.includes(k)) out.push(k);
  }
  return [...out, ...keys.filter(k => !out.includes(k))];
}

export function fusionOf(bundle: Bundle, name: string): Fusion | null {
  const o = origin(name);
  return bundle.fusions.find(f => f.name === name) ??
    bundle.fusions.find(f => f.instructions.includes(name) || f.instructions.includes(o)) ?? null;
}

function valueName(v: string): string {
  return v.replace(/\{[^}]*\}$/, '');
}

export function nodeFacts(bundle: Bundle, name: string, info: { [key: string]: string } = {}): NodeFacts {
  const rows: [string, string][] = [];
  const o = origin(name);
  if (o !== name) rows.push(['origin', `${o} (a copy fusion made of it)`]);
  if (info.shape) rows.push(['shape', info.shape]);
  if (info.dtype) rows.push(['dtype', info.dtype]);
  if (info.source) rows.push(['source line', info.source]);
  if (info.op_name) rows.push(['op', info.op_name]);

  const fusion = fusionOf(bundle, name);
  const probe = fusion && fusion.name === name ? fusion.instructions : [name, o];
  const eager = bundle.clusters.eager.find(e => e.name === name || e.name === o);
  const cluster = bundle.clusters.compiled.find(c => probe.some(p => c.instructions.includes(p)));
  if (eager) rows.push(['cluster', `none: runs eagerly in NumPy (${eager.op}): ${eager.reason}`]);
  else if (cluster) rows.push(['cluster', cluster.name]);
  else rows.push(['cluster', 'none (not in the traced program: made by a pass)']);

  if (fusion) {
    const kind = fusion.row ? 'row fusion' : fusion.kind;
    rows.push(['fusion', `${fusion.name} (${kind}, ${fusion.instructions.length} instruction${fusion.instructions.length === 1 ? '' : 's'})`]);
  } else {
    rows.push(['fusion', 'none: not computed by a kernel of the final program']);
  }

  const b = bundle.buffers;
  const holders = [name, o, ...(fusion && (fusion.outputs.includes(name) || fusion.outputs.includes(o) || fusion.name === name) ? [fusion.name] : [])];
  const alloc = b?.allocations.find(a => a.values.some(v => holders.includes(valueName(v))));
  if (alloc) {
    rows.push(['buffer', `allocation ${alloc.index}: ${formatBytes(alloc.size)} at arena offset ${alloc.offset}, live steps ${alloc.live_range[0]}-${alloc.live_range[1]}`]);
  } else if (fusion && fusion.name !== name && !fusion.outputs.includes(name) && !fusion.outputs.includes(o)) {
    rows.push(['buffer', `none: stays inside ${fusion.name}, never written to memory`]);
  } else if (b) {
    rows.push(['buffer', 'not in the arena (the arena holds only temporaries between kernels)']);
  } else {
    rows.push(['buffer', 'no buffer assignment in this pipeline']);
  }

  const key = fusion ? kernelKey(bundle, fusion.name) : null;
  if (key) rows.push(['kernel', key]);
  else if (bundle.backend === 'interpreter') rows.push(['kernel', 'none: the interpreter backend emits no kernels']);
  else rows.push(['kernel', 'none']);
  return { name, rows };
}

/** The HLO kernel `key` came from, read from the final stage's text: its fusion's called
 * computation, or the one instruction it runs; "" when the text does not have it (a
 * cluster's own module, a loop body compiled apart). */
export function kernelHlo(bundle: Bundle, key: string): string {
  const stage = bundle.stages[bundle.stages.length - 1];
  if (!stage) return '';
  const fusion = bundle.fusions.find(f => kernelKey(bundle, f.name) === key);
  if (!fusion) return '';
  const lines = stage.hlo.split('\n');
  const def = lines.find(l => l.trim().replace(/^ROOT\s+/, '').startsWith(fusion.name + ' = '));
  if (!def) return '';
  const calls = /\bcalls=([^\s,]+)/.exec(def);
  if (!calls) return def.trim();
  const start = lines.findIndex(l => l.startsWith(calls[1] + ' {'));
  if (start < 0) return def.trim();
  const end = lines.findIndex((l, k) => k > start && l.startsWith('}'));
  return lines.slice(start, end < 0 ? undefined : end + 1).join('\n');
}
