// The explorer outside JupyterLab's mime renderer, as one ES module with Graphviz (WASM) and
// the stylesheet inside (built by standalone/build.mjs into xla_explorer/viz/bundle/): the
// live widget's front end (anywidget loads it: `render` below), and the script of the static
// HTML export and of the documentation's pages, which mount every bundle the page carries.

import { Explorer, View } from './explorer';
import { MIME_TYPE } from './model';
import css from '../style/index.css';

/** JupyterLab's theme variables, light, for pages that are not JupyterLab: a static export,
 * the documentation. Set on the page's own explorers only, never over a theme. */
const PAGE_THEME = `
.xe-page {
  --jp-ui-font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
  --jp-code-font-family: ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace;
  --jp-ui-font-size0: 11px; --jp-ui-font-size1: 13px; --jp-ui-font-size2: 15px;
  --jp-code-font-size: 12px;
  --jp-ui-font-color0: #111; --jp-ui-font-color1: #222; --jp-ui-font-color2: #666;
  --jp-content-font-color1: #222;
  --jp-layout-color0: #fff; --jp-layout-color1: #f5f5f5; --jp-layout-color2: #e8e8e8;
  --jp-border-color1: #bdbdbd; --jp-border-color2: #e0e0e0;
  --jp-brand-color1: #1976d2; --jp-brand-color2: #64b5f6;
  --jp-error-color1: #d32f2f; --jp-warn-color1: #f57c00; --jp-info-color1: #0288d1;
  --jp-success-color1: #388e3c;
  --jp-cell-editor-background: #f7f7f7;
  --jp-mirror-editor-keyword-color: #008000; --jp-mirror-editor-def-color: #0000ff;
  --jp-mirror-editor-builtin-color: #008000; --jp-mirror-editor-string-color: #ba2121;
  --jp-mirror-editor-number-color: #080; --jp-mirror-editor-comment-color: #408080;
  --jp-mirror-editor-meta-color: #aa22ff; --jp-mirror-editor-property-color: #05a;
  --jp-mirror-editor-attribute-color: #00c; --jp-mirror-editor-variable-2-color: #05a;
}`;

const STYLE_ID = 'xla-explorer-style';

function addStyle(doc: Document): void {
  if (doc.getElementById(STYLE_ID)) return;
  const style = doc.createElement('style');
  style.id = STYLE_ID;
  style.textContent = css + PAGE_THEME;
  doc.head.append(style);
}

/** Draw `bundle` (the explorer's JSON) into `node`. */
export async function mount(node: HTMLElement, bundle: unknown): Promise<Explorer> {
  addStyle(node.ownerDocument);
  const explorer = new Explorer(node);
  await explorer.render(bundle);
  return explorer;
}

/** Every `<script type="application/vnd.xla-explorer.v1+json">` of `doc` gets an explorer
 * drawn just before it (once), in the page's light theme. */
export async function mountAll(doc: Document = document): Promise<Explorer[]> {
  const scripts = Array.from(doc.querySelectorAll<HTMLScriptElement>(`script[type="${MIME_TYPE}"]`))
    .filter(s => !s.dataset.mounted);
  const out: Explorer[] = [];
  for (const s of scripts) {
    s.dataset.mounted = 'yes';
    const node = doc.createElement('div');
    node.classList.add('xe-page');
    s.before(node);
    let data: unknown;
    try {
      data = JSON.parse(s.textContent ?? '');
    } catch (err) {
      data = { error: `the explorer's JSON does not parse: ${(err as Error).message}` };
    }
    out.push(await mount(node, data));
  }
  return out;
}

/** What anywidget hands `render`: the widget's model (its synced traits) and its element. */
interface WidgetModel {
  get(name: string): unknown;
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
  send(content: object): void;
}

/** anywidget's entry, the live explorer: the model's `bundle` drawn into `el`, again whenever
 * the kernel changes it (a benchmark it ran adds its measurements), where the reader was (the
 * model's `view`: tab, stage and repeat count; an output the kernel updates is drawn afresh,
 * by a new view); "Run
 * benchmark" asks the kernel (`{action: 'bench', repeat}`), whose `status` trait says what
 * went wrong, if anything; "Compare with XLA" likewise (`{action: 'compare_xla', repeat}`, its
 * failure in `xla_status`, the comparison in the bundle's "xla" key); "Export" on the Kernels
 * tab (`{action: 'export', name}`: what it wrote, or why not, in `export_status`). */
function render({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  let current: Explorer | null = null;
  const draw = (): void => {
    const node = document.createElement('div');
    el.replaceChildren(node);
    addStyle(node.ownerDocument);
    const unavailable = String(model.get('bench_unavailable') ?? '');
    current = new Explorer(node, {
      view: (model.get('view') ?? {}) as View,
      onView: (view: View) => {
        model.set('view', view);
        model.save_changes();
      },
      benchUnavailable: unavailable || undefined,
      bench: unavailable ? undefined : (repeat: number) => model.send({ action: 'bench', repeat }),
      compareXla: (repeat: number) => model.send({ action: 'compare_xla', repeat }),
      exportModule: (name: string) => model.send({ action: 'export', name })
    });
    void current.render(model.get('bundle'));
  };
  // What the kernel says of what it was asked, each in its trait.
  const statuses: [string, () => void][] = [
    ['status', () => current?.setBenchStatus(String(model.get('status') ?? ''))],
    ['xla_status', () => current?.setXlaStatus(String(model.get('xla_status') ?? ''))],
    ['export_status', () => current?.setExportStatus(String(model.get('export_status') ?? ''))]
  ];
  draw();
  model.on('change:bundle', draw);
  for (const [trait, said] of statuses) model.on(`change:${trait}`, said);
  return () => {
    model.off('change:bundle', draw);
    for (const [trait, said] of statuses) model.off(`change:${trait}`, said);
  };
}

export default { render };

// On a page (a static export, the documentation), draw the bundles it carries.
if (typeof document !== 'undefined') {
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', () => void mountAll(document));
  } else {
    void mountAll(document);
  }
}
