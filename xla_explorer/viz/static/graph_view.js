// The live explorer's graph: Graphviz's SVG drawn to fit the box, zoom and pan by changing
// the SVG's viewBox (so there is one box and no scrollbars), click a node or an HLO line to
// select that instruction. An anywidget front end: `selected` is synced with Python, which
// answers with `info` (the instruction's story) for the selection.

const ZOOM_STEP = 1.25;
const MAX_SCALE = 1.5; // fitting never enlarges a small graph past 1.5 px per pt
const FOCUS_SCALE = 1.2; // zooming to a decision's nodes: near their natural size
const MIN_HEIGHT = 240;
const WINDOW_MARGIN = 300; // px: JupyterLab's bars, the explorer's tabs and stepper

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function render({ model, el: root }) {
  root.classList.add("xe-view");
  const bar = el("div", "xe-bar");
  const fitButton = el("button", "xe-fit", "fit");
  fitButton.title = "show the whole graph";
  const zoomIn = el("button", "xe-zoom-in", "+");
  zoomIn.title = "zoom in (or Ctrl + wheel)";
  const zoomOut = el("button", "xe-zoom-out", "−");
  zoomOut.title = "zoom out (or Ctrl + wheel)";
  const hloToggle = el("button", "xe-hlo-toggle");
  const hint = el("span", "xe-hint",
    "drag to pan, Ctrl + wheel to zoom; click a node or an HLO line to select it");
  bar.append(fitButton, zoomIn, zoomOut, hloToggle, hint);
  const box = el("div", "xe-graph");
  const info = el("div", "xe-info");
  const hlo = el("div", "xe-hlo");
  root.append(bar, box, info, hlo);

  let svg = null;
  let full = null; // the graph's own viewBox: [x, y, w, h]
  let view = null; // what the box shows now

  function setView(v) {
    view = v;
    if (svg) svg.setAttribute("viewBox", v.join(" "));
  }

  function boxSize() {
    return [box.clientWidth || root.clientWidth || 800, box.clientHeight || MIN_HEIGHT];
  }

  // The box is as wide as the output; as tall as the graph at a scale that fits the width,
  // but no taller than the window leaves below the notebook's toolbars and the stepper
  // (WINDOW_MARGIN), so the whole graph is on the screen at once.
  function sizeBox() {
    if (!full) return;
    const width = box.clientWidth || root.clientWidth || 800;
    const scale = Math.min(width / full[2], MAX_SCALE);
    const cap = Math.max(MIN_HEIGHT, window.innerHeight - WINDOW_MARGIN);
    box.style.height = Math.max(MIN_HEIGHT, Math.min(full[3] * scale + 8, cap)) + "px";
  }

  function fit() {
    if (!full) return;
    sizeBox();
    const [bw, bh] = boxSize();
    const scale = Math.min(bw / full[2], bh / full[3], MAX_SCALE);
    const w = bw / scale, h = bh / scale;
    setView([full[0] + full[2] / 2 - w / 2, full[1] + full[3] / 2 - h / 2, w, h]);
  }

  // Zoom to the nodes named in `focus` (a decision's producer and consumer), when that reads
  // better than the whole graph: up to one pixel per point, with a margin around them.
  function focusOn(names) {
    if (!svg || !view || !names || !names.length) return;
    const r = svg.getBoundingClientRect();
    if (!r.width || !r.height) return;
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const g of svg.querySelectorAll("g.node[data-inst]")) {
      if (!names.includes(g.dataset.inst)) continue;
      const b = g.getBoundingClientRect();
      x0 = Math.min(x0, b.left); y0 = Math.min(y0, b.top);
      x1 = Math.max(x1, b.right); y1 = Math.max(y1, b.bottom);
    }
    if (x0 === Infinity) return;
    const toX = (px) => view[0] + (px - r.left) / r.width * view[2];
    const toY = (py) => view[1] + (py - r.top) / r.height * view[3];
    const [bw, bh] = boxSize();
    const pad = 80;
    const scale = Math.min(bw / (toX(x1) - toX(x0) + 2 * pad),
                           bh / (toY(y1) - toY(y0) + 2 * pad), FOCUS_SCALE);
    if (scale <= bw / view[2]) return; // the whole graph is already as large as this
    const w = bw / scale, h = bh / scale;
    const cx = (toX(x0) + toX(x1)) / 2, cy = (toY(y0) + toY(y1)) / 2;
    setView([cx - w / 2, cy - h / 2, w, h]);
  }

  // Pan (at the same zoom) so that the node named `name` is in the box, if it is not.
  function reveal(name) {
    if (!svg || !view) return;
    const g = [...svg.querySelectorAll("g.node[data-inst]")].find((n) => n.dataset.inst === name);
    if (!g) return;
    const r = svg.getBoundingClientRect(), b = g.getBoundingClientRect();
    if (!r.width || (b.left >= r.left && b.right <= r.right && b.top >= r.top &&
                     b.bottom <= r.bottom)) return;
    const cx = view[0] + ((b.left + b.right) / 2 - r.left) / r.width * view[2];
    const cy = view[1] + ((b.top + b.bottom) / 2 - r.top) / r.height * view[3];
    setView([cx - view[2] / 2, cy - view[3] / 2, view[2], view[3]]);
  }

  function reset() {
    fit();
    focusOn(model.get("focus"));
  }

  function zoom(factor, cx, cy) {
    if (!view) return;
    const [bw, bh] = boxSize();
    // The point under (cx, cy) in box pixels stays put.
    const px = view[0] + (cx === undefined ? 0.5 : cx / bw) * view[2];
    const py = view[1] + (cy === undefined ? 0.5 : cy / bh) * view[3];
    const w = view[2] / factor, h = view[3] / factor;
    const fx = (px - view[0]) / view[2], fy = (py - view[1]) / view[3];
    setView([px - fx * w, py - fy * h, w, h]);
  }

  function nameOf(group) {
    const title = group.querySelector(":scope > title");
    return title ? model.get("nodes")[title.textContent] : undefined;
  }

  function drawGraph() {
    box.innerHTML = model.get("svg");
    svg = box.querySelector("svg");
    full = null;
    if (!svg) return;
    const vb = (svg.getAttribute("viewBox") || "").trim().split(/[\s,]+/).map(Number);
    if (vb.length === 4 && vb.every(Number.isFinite)) full = vb;
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
    svg.style.width = "100%";
    svg.style.height = "100%";
    for (const g of svg.querySelectorAll("g.node, g.cluster")) {
      const name = nameOf(g);
      if (name === undefined) continue;
      g.dataset.inst = name;
      g.classList.add("xe-selectable");
    }
    reset();
    markSelected();
  }

  function drawHlo() {
    hlo.innerHTML = model.get("hlo");
    hloToggle.hidden = !model.get("hlo");
    hint.textContent = model.get("hlo")
      ? "drag to pan, Ctrl + wheel to zoom; click a node or an HLO line to select it"
      : "drag to pan, Ctrl + wheel to zoom; fit shows the whole graph";
    for (const line of hlo.querySelectorAll("[data-inst]")) {
      if (line.dataset.inst) line.classList.add("xe-selectable");
    }
    showHlo();
    markSelected();
  }

  function showHlo() {
    const shown = model.get("show_hlo");
    hlo.hidden = !shown || !model.get("hlo");
    hloToggle.textContent = shown ? "hide HLO" : "show HLO";
  }

  function markSelected() {
    const name = model.get("selected");
    for (const e of root.querySelectorAll(".xe-selected")) e.classList.remove("xe-selected");
    if (!name) return;
    for (const e of root.querySelectorAll("[data-inst]")) {
      if (e.dataset.inst === name) e.classList.add("xe-selected");
    }
  }

  function select(name) {
    if (!name) return;
    model.set("selected", name);
    model.save_changes();
    markSelected();
  }

  // Panning: a drag that moves more than a few pixels pans; a click without moving selects.
  let drag = null;
  box.addEventListener("pointerdown", (e) => {
    if (e.button !== 0 || !view) return;
    drag = { x: e.clientX, y: e.clientY, view: view.slice(), moved: false };
  });
  window.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    drag.moved = true;
    box.classList.add("xe-panning");
    const [bw, bh] = boxSize();
    setView([drag.view[0] - dx * drag.view[2] / bw, drag.view[1] - dy * drag.view[3] / bh,
             drag.view[2], drag.view[3]]);
  });
  window.addEventListener("pointerup", () => {
    if (drag && drag.moved) {
      // the click that ends a drag is not a selection
      box.addEventListener("click", (e) => e.stopPropagation(), { capture: true, once: true });
    }
    drag = null;
    box.classList.remove("xe-panning");
  });
  box.addEventListener("wheel", (e) => {
    if (!(e.ctrlKey || e.metaKey) || !view) return; // plain wheel scrolls the notebook
    e.preventDefault();
    const r = box.getBoundingClientRect();
    zoom(e.deltaY < 0 ? ZOOM_STEP : 1 / ZOOM_STEP, e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  box.addEventListener("click", (e) => {
    const g = e.target.closest("[data-inst]");
    if (g) {
      e.preventDefault(); // the node is an <a> (its tooltip): not a link to follow
      select(g.dataset.inst);
    }
  });
  hlo.addEventListener("click", (e) => {
    const line = e.target.closest("[data-inst]");
    if (line && line.dataset.inst) {
      select(line.dataset.inst);
      reveal(line.dataset.inst);
    }
  });
  fitButton.addEventListener("click", fit);
  zoomIn.addEventListener("click", () => zoom(ZOOM_STEP));
  zoomOut.addEventListener("click", () => zoom(1 / ZOOM_STEP));
  hloToggle.addEventListener("click", () => {
    model.set("show_hlo", !model.get("show_hlo"));
    model.save_changes();
  });

  const onSvg = () => drawGraph();
  const onHlo = () => drawHlo();
  const onInfo = () => { info.innerHTML = model.get("info"); };
  model.on("change:svg", onSvg);
  model.on("change:nodes", onSvg);
  model.on("change:hlo", onHlo);
  model.on("change:info", onInfo);
  model.on("change:selected", markSelected);
  model.on("change:show_hlo", showHlo);
  model.on("change:focus", reset);
  // The output area may be laid out after the view is attached: fit once it has a width.
  const resize = new ResizeObserver(() => {
    if (full && box.clientWidth && !root.dataset.fitted) {
      root.dataset.fitted = "1";
      reset();
    }
  });
  resize.observe(box);

  drawGraph();
  drawHlo();
  onInfo();
  return () => {
    resize.disconnect();
    model.off("change:svg", onSvg);
    model.off("change:nodes", onSvg);
    model.off("change:hlo", onHlo);
    model.off("change:info", onInfo);
    model.off("change:selected", markSelected);
    model.off("change:show_hlo", showHlo);
    model.off("change:focus", reset);
  };
}

export default { render };
