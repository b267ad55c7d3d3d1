// The pure parts (DOT parsing and highlighting, decision stepping, timeline layout, formats,
// syntax colouring) run under jest in node; the DOM and Graphviz parts run in the browser tests
// (tests/extension/test_browser.py).
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }]
  }
};
