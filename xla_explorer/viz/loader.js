// The live explorer's module as the kernel sends it with each widget: a few lines that fetch
// the explorer itself (viz/bundle/explorer.js, about 1 MB) from the kernel once per page and
// share it among every explorer on the page, so ten explorers do not carry ten copies.
// "__KEY__" is replaced by the bundle's hash: a rebuilt bundle is fetched anew.
const KEY = Symbol.for('xla-explorer:__KEY__');

function explorerModule(model) {
  const cache = globalThis;
  if (!cache[KEY]) {
    cache[KEY] = new Promise((resolve, reject) => {
      const onMessage = content => {
        if (!content || typeof content.module !== 'string') {
          return;
        }
        model.off('msg:custom', onMessage);
        const url = URL.createObjectURL(new Blob([content.module], { type: 'text/javascript' }));
        import(url).then(m => resolve(m.default), reject).finally(() => URL.revokeObjectURL(url));
      };
      model.on('msg:custom', onMessage);
      model.send({ action: 'module' });
    }).catch(err => {
      delete cache[KEY]; // the next explorer asks again
      throw err;
    });
  }
  return cache[KEY];
}

export default {
  async render({ model, el }) {
    el.textContent = 'Loading the explorer…';
    const explorer = await explorerModule(model);
    return explorer.render({ model, el });
  }
};
