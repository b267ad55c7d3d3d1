// DOM building with text nodes only: nothing from a bundle is ever parsed as markup.

type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K, attrs: { [key: string]: string } = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svgEl(tag: string, attrs: { [key: string]: string | number } = {}, ...children: Child[]): SVGElement {
  const e = document.createElementNS(SVG_NS, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

export function button(label: string, title: string, onClick: () => void, cls = 'xe-btn'): HTMLButtonElement {
  const b = el('button', { class: cls, title, type: 'button' }, label);
  b.addEventListener('click', onClick);
  return b;
}
