// The mime renderer extension: application/vnd.xla-explorer.v1+json anywhere JupyterLab renders
// outputs. Safe (it builds DOM from JSON, never markup), so untrusted notebooks show it too.
// Inside notebooks, plugin.ts replaces this factory with one that prefers a live widget.

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ExplorerWidget } from './explorer';
import { MIME_TYPE } from './model';

/** Ahead of text/html and text/plain; behind the ipywidgets renderer (-10) outside notebooks. */
export const RANK = 0;

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: RANK,
  createRenderer: options => new ExplorerWidget(options)
};

const extension: IRenderMime.IExtension = {
  id: 'xla-explorer-extension:renderer',
  rendererFactory,
  rank: RANK,
  dataType: 'json'
};

export default extension;
