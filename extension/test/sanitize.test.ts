/**
 * @jest-environment jsdom
 */
// A saved notebook is untrusted input: whatever its DOT makes Graphviz write, nothing active
// may reach the page.
import { sanitizeSvg } from '../src/graphview';

const HOSTILE = `<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10" onload="alert(1)">
<script>alert(2)</script>
<style>* { display: none }</style>
<g id="node1" class="node" onclick="alert(3)" style="background:url(javascript:alert(4))"><title>n0</title>
<g id="a_node1"><a xlink:href="javascript:alert(5)" href="javascript:alert(6)" xlink:title="add.1">
<polygon fill="#fff" points="0,0 1,1"/><text>add.1 &lt;b&gt;</text></a></g></g>
<foreignObject><div xmlns="http://www.w3.org/1999/xhtml">html</div></foreignObject>
<image xlink:href="http://example.com/x.png"/>
</svg>`;

describe('sanitizeSvg', () => {
  it('drops scripts, styles, foreign content, images, links and event attributes', () => {
    const svg = sanitizeSvg(HOSTILE);
    const text = svg.outerHTML;
    for (const bad of ['script', 'style', 'foreignObject', 'image', 'onload', 'onclick', 'href', 'javascript']) {
      expect(text).not.toContain(bad);
    }
    // What a graph needs stays: groups, shapes, text (as text), titles.
    expect(svg.querySelector('g.node polygon')).not.toBeNull();
    expect(svg.querySelector('g.node text')!.textContent).toBe('add.1 <b>');
    expect(svg.querySelector('g.node title')!.textContent).toBe('n0');
    expect(svg.getAttribute('viewBox')).toBe('0 0 10 10');
  });

  it('refuses a document that is not SVG', () => {
    expect(() => sanitizeSvg('<html><body>x</body></html>')).toThrow(/SVG/);
  });
});
