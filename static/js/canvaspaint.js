// Painting a big compact graph on a <canvas> (render.js's canvas mode).
//
// Past a few thousand records, SVG elements cost the browser style, layout and paint work on
// every frame of a pan or a zoom; a canvas costs only the pixels. render.js keeps the SVG on top
// for gestures, the walk's hot edges, scope boxes and accessibility; this module paints the
// records and edges beneath it and answers which record is under the pointer.
//
// The colours are the stylesheet's: each distinct class list render.js gives a node (its kind and
// its state at this step) is looked up once on a hidden SVG probe, so the canvas and the SVG
// pictures share one set of CSS rules (and the dark theme).

import { NUMBER } from "./layout.js";

const EDGE_CHUNK = 2000; // edges per Path2D: a chunk is skipped when its bounding box is out of view
const GRID = 256; // graph px per cell of the index that finds the record under the pointer
const TEXT_MIN_PX = 8; // record text is painted when it would be at least this tall on screen

export function createCanvasPainter(container) {
  const canvas = document.createElement("canvas");
  canvas.className = "vg-canvas";
  canvas.setAttribute("aria-hidden", "true"); // the SVG above carries the graph's name and count
  container.prepend(canvas);
  const ctx = canvas.getContext("2d");
  const probe = createProbe(container);

  let placement = null;
  let edgeChunks = []; // {path: Path2D, x0, y0, x1, y1}
  let grid = new Map(); // "cx:cy" -> node ids whose record touches that cell
  let styles = new Map(); // class list -> {fill, stroke, width, text}
  let classOf = () => "vg-node";
  let groups = null; // class list -> ids: rebuilt when a state changed, not on every pan or zoom frame

  function setGraph(newPlacement) {
    placement = newPlacement;
    groups = null;
    styles = new Map(); // the theme may have changed since the last graph
    edgeChunks = [];
    for (let i = 0; i < placement.edges.length; i += EDGE_CHUNK) {
      let d = "";
      const box = { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity };
      for (const edge of placement.edges.slice(i, i + EDGE_CHUNK)) {
        d += edge.d;
        const numbers = edge.d.match(NUMBER) ?? [];
        for (let j = 0; j + 1 < numbers.length; j += 2) grow(box, Number(numbers[j]), Number(numbers[j + 1]));
      }
      edgeChunks.push({ path: new Path2D(d), ...box });
    }
    grid = new Map();
    const { width: W, height: H } = placement.geometry.box;
    placement.nodes.forEach((p, id) => {
      if (!p || p.hidden) return;
      for (let cx = Math.floor((p.cx - W / 2) / GRID); cx <= Math.floor((p.cx + W / 2) / GRID); cx++) {
        for (let cy = Math.floor((p.cy - H / 2) / GRID); cy <= Math.floor((p.cy + H / 2) / GRID); cy++) {
          const key = `${cx}:${cy}`;
          if (!grid.has(key)) grid.set(key, []);
          grid.get(key).push(id);
        }
      }
    });
  }

  function styleOf(classList) {
    let style = styles.get(classList);
    if (!style) styles.set(classList, (style = probe.read(classList)));
    return style;
  }

  /** classOf(id) is a node's class list: its kind and its state at this step. */
  function setStates(newClassOf) {
    classOf = newClassOf;
    groups = null;
  }

  function groupByClass() {
    const byClass = new Map();
    placement.nodes.forEach((p, id) => {
      if (!p || p.hidden) return;
      const classList = classOf(id);
      if (!byClass.has(classList)) byClass.set(classList, []);
      byClass.get(classList).push(id);
    });
    return byClass;
  }

  /**
   * Paint the graph as seen from view {x, y, k} in a width × height panel. textOf(id) is a
   * record's one line of text; focus the walk's current node or null.
   */
  function paint(view, [width, height], { textOf, focus }) {
    const dpr = window.devicePixelRatio || 1;
    const pixelWidth = Math.round(width * dpr);
    const pixelHeight = Math.round(height * dpr);
    if (canvas.width !== pixelWidth || canvas.height !== pixelHeight) {
      canvas.width = pixelWidth;
      canvas.height = pixelHeight;
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    if (!placement) return;
    const { x, y, k } = view;
    ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * x, dpr * y);
    const seen = { x0: -x / k, y0: -y / k, x1: (width - x) / k, y1: (height - y) / k };

    const edge = styleOf("vg-edge vg-edge-bundle");
    ctx.strokeStyle = edge.stroke;
    ctx.lineWidth = edge.width / k; // as the SVG's non-scaling strokes: the same width at every zoom
    for (const chunk of edgeChunks) if (overlaps(chunk, seen)) ctx.stroke(chunk.path);

    // The records in view, a group per class list: one path, one fill and one stroke each.
    const { width: W, height: H } = placement.geometry.box;
    const inView = (p) => p.cx + W / 2 >= seen.x0 && p.cx - W / 2 <= seen.x1 && p.cy + H / 2 >= seen.y0 && p.cy - H / 2 <= seen.y1;
    groups ??= groupByClass();
    const shown = new Map();
    for (const [classList, ids] of groups) {
      const style = styleOf(classList);
      const visible = ids.filter((id) => inView(placement.nodes[id]));
      if (!visible.length) continue;
      shown.set(classList, visible);
      ctx.beginPath();
      for (const id of visible) ctx.rect(placement.nodes[id].cx - W / 2, placement.nodes[id].cy - H / 2, W, H);
      ctx.fillStyle = style.fill;
      ctx.fill();
      ctx.strokeStyle = style.stroke;
      ctx.lineWidth = style.width / k;
      ctx.stroke();
    }
    if (11 * k >= TEXT_MIN_PX) paintTexts(shown, textOf);
    if (focus !== null && placement.nodes[focus]) {
      const p = placement.nodes[focus];
      ctx.beginPath();
      ctx.arc(p.cx, p.cy, Math.max(W / 2 + 4, 9 / k), 0, 2 * Math.PI);
      ctx.strokeStyle = styleOf("vg-overview-focus is-visible").stroke;
      ctx.lineWidth = 3 / k;
      ctx.stroke();
    }
  }

  function paintTexts(groups, textOf) {
    const { width: W } = placement.geometry.box;
    ctx.font = `11px ${getComputedStyle(container).getPropertyValue("--mono") || "monospace"}`;
    ctx.textBaseline = "middle";
    for (const [classList, ids] of groups) {
      ctx.fillStyle = styleOf(classList).text;
      for (const id of ids) {
        const p = placement.nodes[id];
        ctx.save();
        ctx.beginPath();
        ctx.rect(p.cx - W / 2, p.cy - 10, W, 20); // the text stays inside its record, as the SVG's does
        ctx.clip();
        ctx.fillText(textOf(id), p.cx - W / 2 + 5, p.cy);
        ctx.restore();
      }
    }
  }

  /** The id of the record at graph point (gx, gy), or null. */
  function nodeAt(gx, gy) {
    if (!placement) return null;
    const { width: W, height: H } = placement.geometry.box;
    for (const id of grid.get(`${Math.floor(gx / GRID)}:${Math.floor(gy / GRID)}`) ?? []) {
      const p = placement.nodes[id];
      if (Math.abs(gx - p.cx) <= W / 2 && Math.abs(gy - p.cy) <= H / 2) return id;
    }
    return null;
  }

  function clear() {
    placement = null;
    groups = null;
    edgeChunks = [];
    grid = new Map();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
  }

  return { canvas, setGraph, setStates, paint, nodeAt, clear };
}

function grow(box, x, y) {
  box.x0 = Math.min(box.x0, x);
  box.y0 = Math.min(box.y0, y);
  box.x1 = Math.max(box.x1, x);
  box.y1 = Math.max(box.y1, y);
}

const overlaps = (a, b) => a.x0 <= b.x1 && a.x1 >= b.x0 && a.y0 <= b.y1 && a.y1 >= b.y0;

/**
 * A hidden SVG with the compact picture's structure, where a class list's colours are read from
 * the stylesheet: a node's record (fill, stroke, stroke width, text colour), an edge bundle, the
 * overview's focus ring.
 */
function createProbe(container) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "vg-compact vg-canvas-probe");
  svg.setAttribute("aria-hidden", "true");
  svg.style.cssText = "position:absolute;width:0;height:0;overflow:hidden;visibility:hidden";
  const group = svg.appendChild(document.createElementNS(ns, "g"));
  const rect = group.appendChild(document.createElementNS(ns, "rect"));
  const text = group.appendChild(document.createElementNS(ns, "text"));
  const path = svg.appendChild(document.createElementNS(ns, "path"));
  const circle = svg.appendChild(document.createElementNS(ns, "circle"));
  container.append(svg);
  rect.setAttribute("class", "vg-box");
  text.setAttribute("class", "vg-compact-text");
  return {
    read(classList) {
      if (classList.startsWith("vg-edge")) {
        path.setAttribute("class", classList);
        const style = getComputedStyle(path);
        return { stroke: style.stroke, width: parseFloat(style.strokeWidth) || 1 };
      }
      if (classList.startsWith("vg-overview-focus")) {
        circle.setAttribute("class", classList);
        return { stroke: getComputedStyle(circle).stroke };
      }
      group.setAttribute("class", classList);
      const box = getComputedStyle(rect);
      return { fill: box.fill, stroke: box.stroke, width: parseFloat(box.strokeWidth) || 1, text: getComputedStyle(text).fill };
    },
  };
}
