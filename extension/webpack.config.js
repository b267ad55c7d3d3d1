// Merged into @jupyter/builder's rspack configuration. Graphviz compiled to WebAssembly is one
// lazily loaded chunk of about 800 KB, loaded the first time a graph is drawn: expected, so
// the bundler's size hint (300 KB) would only warn about it on every build.
module.exports = {
  performance: { hints: false }
};
