// Builds the explorer as one ES module, Graphviz's WebAssembly and the stylesheet inside, into
// ../xla_explorer/viz/bundle/explorer.js: what the live widget (anywidget), the static HTML
// export and the documentation's pages load. No chunks: a page opened from disk, with no
// network, has everything in one file. Run by `npm run build` after tsc (lib/ is its input).
import { rspack } from '@rspack/core';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const config = {
  mode: 'production',
  context: path.resolve(here, '..'),
  entry: './lib/standalone.js',
  experiments: { outputModule: true },
  output: {
    path: path.resolve(here, '../../xla_explorer/viz/bundle'),
    filename: 'explorer.js',
    module: true,
    library: { type: 'module' },
    chunkFormat: 'module',
    asyncChunks: false,
    clean: true
  },
  module: { rules: [{ test: /\.css$/, type: 'asset/source' }] },
  optimization: { splitChunks: false },
  performance: { hints: false },
  devtool: false
};

rspack(config, (err, stats) => {
  if (err || stats.hasErrors()) {
    console.error(err ?? stats.toString({ all: false, errors: true }));
    process.exit(1);
  }
});
