// The bundle application/vnd.xla-explorer.v1+json, as xla_explorer/viz/schema/v1.json describes
// it. Only what the renderer reads is typed; unknown optional keys are ignored.

export const MIME_TYPE = 'application/vnd.xla-explorer.v1+json';
export const WIDGET_MIME_TYPE = 'application/vnd.jupyter.widget-view+json';

export interface Stage {
  index: number;
  name: string;
  changed: boolean;
  seconds: number;
  notes: string[];
  hlo: string;
  dot: string;
  changed_nodes: string[];
  added: string[];
  removed: string[];
  rewritten: string[];
}

export interface Decision {
  index: number;
  producer: string;
  consumer: string;
  fused: boolean;
  reason: string;
  rule?: string;
  stage: string;
  stage_index: number;
}

export interface Fusion {
  name: string;
  kind: string;
  row: boolean;
  instructions: string[];
  outputs: string[];
  reasons: string[];
}

export interface Allocation {
  index: number;
  offset: number;
  size: number;
  live_range: [number, number];
  values: string[];
}

export interface Buffers {
  peak_bytes: number;
  lower_bound_bytes: number;
  fragmentation_bytes: number;
  heap_order: string;
  alignment: number;
  temporary_bytes: number;
  steps: number;
  report: string;
  arena_note?: string; // what the executable allocates for it (scratch added), in words
  allocations: Allocation[];
  sharings: { kernel: string; operand: string; output: string; reason: string }[];
}

export interface Timing {
  median: number;
  q1: number;
  q3: number;
  peak_bytes: number;
}

export interface Bench {
  name: string;
  eager: Timing;
  compiled: Timing;
  speedup: number | null;
  repeat: number;
  arena_bytes: number;
  predicted_peak_bytes: number;
  compile_seconds: number | null;
  compiled_held_bytes?: number; // arena + what a call allocates (bundles before it: computed)
  memory_verdict?: string;
  spread_note?: string; // a warning when the timings spread wide (a busy machine)
}

export interface TrafficSide {
  read_bytes: number;
  write_bytes: number;
  ops?: { name: string; read_bytes: number; write_bytes: number }[];
  kernels?: { name: string; read_bytes: number; write_bytes: number }[];
}

export interface Traffic {
  computed: boolean;
  eager: TrafficSide;
  fused: TrafficSide;
}

export interface XlaTiming {
  median: number;
  q1: number;
  q3: number;
}

/** One kernel XLA:CPU launches, with ours that compute the same instructions. */
export interface XlaKernel {
  name: string;
  kind: string; // kLoop | kInput | kOutput | kCustom, or the opcode of an op run alone
  library: string; // what runs it where XLA generates no code (YNNPACK, dot); '' otherwise
  instructions: string[];
  opcodes: string[];
  lines: number[];
  ours: string[];
  matched_by: string;
}

/** ex.compare_xla(): XLA:CPU's compilation of the stage-0 HLO beside ours. */
export interface XlaComparison {
  module: string;
  jax_version: string;
  backend: string;
  hlo: string;
  dot: string;
  kernels: XlaKernel[];
  ours: { name: string; kind: string; instructions: string[]; xla: string[] }[];
  temp_bytes: number;
  ours_temp_bytes: number | null;
  memory: { [field: string]: number };
  times: { xla: XlaTiming; ours: XlaTiming; xla_resident: XlaTiming; repeat: number; spread_note: string };
  max_error: number | null;
  sentences: string[];
}

export interface Xla {
  jax: boolean; // whether the kernel that made the bundle could import jax
  install: string;
  comparison: XlaComparison | null;
}

export interface Bundle {
  version: number;
  module: string;
  backend: string;
  autocluster: boolean;
  stages: Stage[];
  decisions: Decision[];
  clusters: {
    compiled: { name: string; instructions: string[] }[];
    eager: { name: string; op: string; reason: string; source_line: number }[];
  };
  fusions: Fusion[];
  buffers: Buffers | null;
  kernels: { [name: string]: string };
  driver?: string;
  bench: Bench | null;
  traffic?: Traffic | null;
  xla?: Xla; // bundles made before the XLA tab have none
}

/** A clear message when data is not a v1 bundle, instead of a blank or a stack trace. */
export function checkBundle(data: unknown): Bundle {
  const b = data as Bundle;
  if (b === null || typeof b !== 'object') {
    throw new Error(`${MIME_TYPE}: expected a JSON object, got ${typeof data}`);
  }
  if (b.version !== 1) {
    throw new Error(`${MIME_TYPE}: this renderer reads version 1, the bundle says ${String(b.version)}`);
  }
  if (!Array.isArray(b.stages) || b.stages.length === 0) {
    throw new Error(`${MIME_TYPE}: the bundle has no stages`);
  }
  return b;
}
