// Which view a notebook output shows (the contract's precedence rule): the live ipywidgets
// explorer while its model exists (kernel alive), the JSON renderer otherwise (reopened, no
// kernel, kernel restarted), never ipywidgets' "Error displaying widget: model not found".
//
// Every notebook gets, in its own rendermime registry, a renderer for our mime type ranked
// ahead of the ipywidgets renderer. Given an output that also carries a widget view, it asks
// that notebook's widget renderer first, kept hidden: a widget view appearing in it wins; an
// error (or nothing within a moment) shows the JSON renderer, which stays unless the widget
// view appears later. Only public APIs: the document registry's widget extensions and the
// rendermime registry's factories.

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';
import { ExplorerWidget } from './explorer';
import { MIME_TYPE, WIDGET_MIME_TYPE } from './model';

/** The parts of a notebook's RenderMimeRegistry used here. */
export interface RenderMimeLike {
  addFactory(factory: IRenderMime.IRendererFactory, rank?: number): void;
  getFactory(mimeType: string): IRenderMime.IRendererFactory | undefined;
  createRenderer(mimeType: string): IRenderMime.IRenderer;
}

interface NotebookPanelLike {
  content: { rendermime: RenderMimeLike };
}

interface AppLike {
  docRegistry: {
    addWidgetExtension(widgetName: string, extension: { createNew(panel: NotebookPanelLike, context: unknown): void }): unknown;
  };
}

/** Ahead of the ipywidgets renderer (-10), so this renderer decides between the two. */
export const NOTEBOOK_RANK = -20;
/** How long a live widget may take to show before the JSON renderer is drawn. */
export const WIDGET_WAIT_MS = 1500;

export type Shown = 'widget' | 'renderer';

function hasView(live: Widget): boolean {
  return !/Error displaying widget/.test(live.node.textContent ?? '') &&
    live.node.querySelector('.lm-Widget, .jupyter-widgets') !== null;
}

function hasError(live: Widget): boolean {
  return /Error displaying widget/.test(live.node.textContent ?? '');
}

export class PreferLiveWidget extends Panel implements IRenderMime.IRenderer {
  private live: Widget & IRenderMime.IRenderer | null = null;
  private own: ExplorerWidget | null = null;
  private observer: MutationObserver | null = null;

  constructor(private rendermime: RenderMimeLike, private options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('xe-host');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.clear();
    const canTry = model.trusted && model.data[WIDGET_MIME_TYPE] !== undefined &&
      this.rendermime.getFactory(WIDGET_MIME_TYPE) !== undefined;
    if (canTry) {
      let live: (Widget & IRenderMime.IRenderer) | null = null;
      try {
        live = this.rendermime.createRenderer(WIDGET_MIME_TYPE) as Widget & IRenderMime.IRenderer;
      } catch {
        live = null;
      }
      if (live) {
        this.live = live;
        live.hide();
        this.addWidget(live);
        const done = live.renderModel(model).catch(() => undefined);
        await Promise.race([done, new Promise(r => setTimeout(r, WIDGET_WAIT_MS))]);
        if (hasView(live)) return this.showLive();
        if (hasError(live)) this.dropLive();
        else this.watchLive();
      }
    }
    this.own = new ExplorerWidget(this.options);
    this.addWidget(this.own);
    this.node.dataset.shown = 'renderer';
    await this.own.renderModel(model);
  }

  /** Which view is on screen (for the browser tests and for people reading the DOM). */
  get shown(): Shown {
    return this.node.dataset.shown === 'widget' ? 'widget' : 'renderer';
  }

  private showLive(): void {
    this.observer?.disconnect();
    this.observer = null;
    this.own?.dispose();
    this.own = null;
    this.live?.show();
    this.node.dataset.shown = 'widget';
  }

  private dropLive(): void {
    this.observer?.disconnect();
    this.observer = null;
    this.live?.dispose();
    this.live = null;
  }

  private watchLive(): void {
    const live = this.live!;
    this.observer = new MutationObserver(() => {
      if (hasView(live)) this.showLive();
      else if (hasError(live)) this.dropLive();
    });
    this.observer.observe(live.node, { childList: true, subtree: true, characterData: true });
  }

  private clear(): void {
    this.observer?.disconnect();
    this.observer = null;
    for (const w of [...this.widgets]) w.dispose();
    this.live = null;
    this.own = null;
  }

  dispose(): void {
    this.observer?.disconnect();
    super.dispose();
  }
}

export function notebookFactory(rendermime: RenderMimeLike): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    defaultRank: NOTEBOOK_RANK,
    createRenderer: options => new PreferLiveWidget(rendermime, options)
  };
}

const plugin = {
  id: 'xla-explorer-extension:prefer-live-widget',
  description: 'Notebook outputs: the live ipywidgets explorer while its kernel lives, the JSON renderer otherwise.',
  autoStart: true,
  activate: (app: AppLike): void => {
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: panel => {
        const rm = panel.content.rendermime;
        rm.addFactory(notebookFactory(rm), NOTEBOOK_RANK);
      }
    });
  }
};

export default plugin;
