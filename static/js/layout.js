// From the server's layered layout (rank = column, row = place in the column) to pixels.
//
// No layout algorithm lives here: app/layout.py decides every position. This module only picks
// sizes, turns (rank, row) into x/y for left-to-right or bottom-to-top, and shapes the edges.
// Geometry is worked out along the flow (u: from inputs towards the output) and across it (v),
// then mapped to the screen, so both directions share one piece of code.

import { formatNumber } from "./format.js";

/** Sizes in pixels. `full` is the micrograd record; `compact` is for graphs too big to read. */
export const GEOMETRY = {
  full: {
    box: { width: 200, height: 48, cells: [56, 72, 72] },
    opRadius: 16,
    opGap: 14, // between the op circle and its record
    edgeRoom: { LR: 100, BT: 100 }, // free space along the flow for an edge and its label
    across: { LR: 30, BT: 40 }, // free space between neighbours in a column
  },
  compact: {
    box: { width: 124, height: 20, cells: [124] },
    opRadius: 0,
    opGap: 0,
    edgeRoom: { LR: 44, BT: 40 },
    across: { LR: 8, BT: 14 },
  },
};

const SLOT_SPREAD = 9;
const BAND_GAP = 60; // between the bands of a folded graph
const MAX_BANDS = 60; // where the edges of a two-input op meet its circle, apart
const DUPLICATE_BOW = 48; // how far apart the curves of `a + a` bend
const LABEL_STAGGER = 0.45; // and how far apart along them their labels sit (as a share of the edge)
// Where along its edge a label may move, from where it sits, when it would cover another edge's label.
const LABEL_SHIFTS = [0, -0.15, 0.15, -0.28, 0.28];
/** An edge label's pill: a character's width (until render.js measures it), the padding, a line's height. */
export const PILL = { charWidth: 7.8, padding: 14, height: 20 };

/**
 * Each edge's label point (lx, ly). Two edges that cross between the same columns (a → p over b → s) have
 * their middles at one point, and so would their labels: each label, in turn, sits at the first of a few
 * points along its own edge where it covers no label placed before it, else where it covers least.
 * `width(edge)`: its label's width in px (0: no labels, the compact view).
 */
function spreadLabels(edges, width) {
  const placed = [];
  for (const edge of edges) {
    const { at, t } = edge.label;
    delete edge.label;
    const w = width(edge);
    let best = null;
    for (const shift of w ? LABEL_SHIFTS : [0]) {
      const [x, y] = at(Math.min(0.9, Math.max(0.1, t + shift)));
      const box = { x0: x - w / 2, x1: x + w / 2, y0: y - PILL.height / 2, y1: y + PILL.height / 2 };
      const covered = placed.reduce((sum, o) => sum + Math.max(0, Math.min(box.x1, o.x1) - Math.max(box.x0, o.x0)) * Math.max(0, Math.min(box.y1, o.y1) - Math.max(box.y0, o.y0)), 0);
      if (best === null || covered < best.covered) best = { x, y, box, covered };
      if (covered === 0) break;
    }
    edge.lx = best.x;
    edge.ly = best.y;
    if (w) placed.push(best.box);
  }
}

/** The across-flow position at t of a cubic from v0 to v1 with control points c0, c1. */
function cubic(c0, c1, v0, v1, t) {
  const s = 1 - t;
  return s * s * s * v0 + 3 * s * s * t * c0 + 3 * s * t * t * c1 + t * t * t * v1;
}

/** A number of an edge's path as placeGraph writes it ("M x,y C x,y x,y x,y L x,y ..."); canvaspaint.js and render.js read them too. */
export const NUMBER = /-?\d+(?:\.\d+)?(?:e[-+]?\d+)?/g;
const PATH_TOKEN = new RegExp(`[MLC]|${NUMBER.source}`, "g");
const CURVE_SAMPLES = 16; // straight pieces a curve is measured in by pathPointAt: within a pixel for an edge's bends

/**
 * The point a share t (0..1) of the way along an edge's path (its `d`: M, then L and C commands, as
 * placeGraph writes them and as a glide interpolates them), measured along its length: worked out
 * from the numbers, where asking the element (getTotalLength) makes the browser lay out the page first.
 */
export function pathPointAt(d) {
  const xs = [];
  const ys = [];
  const tokens = d.match(PATH_TOKEN) ?? [];
  let command = "M";
  for (let i = 0; i < tokens.length; ) {
    if ("MLC".includes(tokens[i])) command = tokens[i++];
    const take = command === "C" ? 6 : 2;
    const n = tokens.slice(i, i + take).map(Number);
    i += take;
    if (n.length < take) break;
    if (command !== "C") {
      xs.push(n[0]);
      ys.push(n[1]);
      continue;
    }
    const x0 = xs.at(-1) ?? n[4];
    const y0 = ys.at(-1) ?? n[5];
    for (let k = 1; k <= CURVE_SAMPLES; k++) {
      xs.push(cubic(n[0], n[2], x0, n[4], k / CURVE_SAMPLES));
      ys.push(cubic(n[1], n[3], y0, n[5], k / CURVE_SAMPLES));
    }
  }
  const along = [0]; // the length up to each point
  for (let i = 1; i < xs.length; i++) along.push(along[i - 1] + Math.hypot(xs[i] - xs[i - 1], ys[i] - ys[i - 1]));
  return (t) => {
    if (xs.length < 2) return [xs[0] ?? 0, ys[0] ?? 0];
    const at = Math.max(0, Math.min(1, t)) * along.at(-1);
    let i = 1;
    while (i < along.length - 1 && along[i] < at) i++;
    const piece = along[i] - along[i - 1];
    const f = piece > 0 ? (at - along[i - 1]) / piece : 0;
    return [xs[i - 1] + f * (xs[i] - xs[i - 1]), ys[i - 1] + f * (ys[i] - ys[i - 1])];
  };
}

/**
 * Pixel positions for a response with a layout.
 * Returns { width, height, nodes[id] = {cx, cy, ox, oy}, edges[] = {key, parent, slot, child, d, lx, ly} }:
 * (cx, cy) is the record's centre, (ox, oy) the op circle's centre relative to it, (lx, ly) where
 * the edge's label goes.
 */
export function placeGraph(model, { direction = "LR", compact = false, bands = 1 } = {}) {
  const g = compact ? GEOMETRY.compact : GEOMETRY.full;
  const lr = direction !== "BT";
  const { layout } = model;
  const { boxU, boxV, before, rankPitch, rowPitch, unfoldedU, unfoldedV } = flowSizes(layout, g, lr);

  const start = (rank) => rank * rankPitch + before; // where a rank's records begin along the flow
  const centre = (row) => row * rowPitch + boxV / 2;
  // A long, thin compact graph may be folded into bands along the flow, like lines of text: rank r
  // goes to band floor(r / perBand), each band below the one before. Its edges are straight lines,
  // so one that crosses to the next band is simply drawn across.
  const folds = compact && bands > 1 ? Math.min(bands, Math.max(1, layout.ranks)) : 1;
  const perBand = Math.ceil(Math.max(1, layout.ranks) / folds);
  const bandLength = perBand * rankPitch;
  const totalU = folds > 1 ? bandLength - g.edgeRoom[lr ? "LR" : "BT"] : unfoldedU;
  const totalV = folds * unfoldedV + (folds - 1) * BAND_GAP;
  const fold = folds > 1
    ? (u, v) => {
      const band = Math.min(folds - 1, Math.floor(u / bandLength));
      return [u - band * bandLength, v + band * (unfoldedV + BAND_GAP)];
    }
    : (u, v) => [u, v];
  const flip = lr ? (u, v) => [u, v] : (u, v) => [v, totalU - u];
  const toXY = (u, v) => flip(...fold(u, v));

  const nodes = new Array(model.nodes.length);
  for (const p of layout.nodes) {
    const u = start(p.rank);
    const v = centre(p.row);
    const [cx, cy] = toXY(u + boxU / 2, v);
    const [px, py] = toXY(u - g.opGap - g.opRadius, v);
    nodes[p.id] = { cx, cy, ox: px - cx, oy: py - cy, u, v };
  }

  // Edges between the same child and parent (a + a) bow apart so both can be seen.
  const pairCount = new Map();
  for (const e of layout.edges) pairCount.set(`${e.parent}>${e.child}`, (pairCount.get(`${e.parent}>${e.child}`) ?? 0) + 1);
  const pairSeen = new Map();

  const fmt = (u, v) => {
    const [x, y] = toXY(u, v);
    return `${Math.round(x * 10) / 10},${Math.round(y * 10) / 10}`;
  };

  const edges = layout.edges.map((e) => {
    const child = nodes[e.child];
    const parent = nodes[e.parent];
    const inputs = model.nodes[e.parent].children.length;
    const pair = `${e.parent}>${e.child}`;
    const copies = pairCount.get(pair);
    const copy = pairSeen.get(pair) ?? 0;
    pairSeen.set(pair, copy + 1);
    const bow = copies > 1 ? (copy - (copies - 1) / 2) * DUPLICATE_BOW : 0;

    // Points along the flow: out of the child's record, across each dummy's column, into the op circle.
    const points = [[child.u + boxU, child.v]];
    for (const [rank, row] of e.bends) {
      points.push([start(rank) - before, centre(row)], [start(rank) + boxU, centre(row)]);
    }
    const spread = inputs > 1 ? (e.slot - (inputs - 1) / 2) * SLOT_SPREAD : 0;
    points.push([parent.u - before, parent.v + spread]);

    let d = `M${fmt(...points[0])}`;
    let label = null; // (t) => [x, y] along the last piece of the edge, and where along it the label sits
    for (let i = 0; i + 1 < points.length; i += 2) {
      const [u0, v0] = points[i];
      const [u1, v1] = points[i + 1];
      const last = i + 2 >= points.length;
      const b = last ? bow : 0;
      if (compact) {
        d += `L${fmt(u1, v1)}`;
      } else {
        const mid = (u0 + u1) / 2;
        d += `C${fmt(mid, v0 + b)} ${fmt(mid, v1 + b)} ${fmt(u1, v1)}`;
      }
      if (last) {
        // On the curve; copies of one edge also take different points along it, so their
        // labels stay apart in either direction.
        const t = copies > 1 ? 0.5 + (copy - (copies - 1) / 2) * LABEL_STAGGER : 0.5;
        const mid = (u0 + u1) / 2;
        label = { at: (s) => toXY(cubic(mid, mid, u0, u1, s), cubic(v0 + b, v1 + b, v0, v1, s)), t };
      }
      if (!last) d += `L${fmt(...points[i + 2])}`; // straight through the dummy's column
    }
    return { key: `${e.parent}:${e.slot}`, parent: e.parent, slot: e.slot, child: e.child, d, label };
  });
  spreadLabels(edges, (e) => {
    if (compact) return 0;
    const local = model.nodes[e.parent]?.local_grads?.[e.slot]; // a folded box's edge has none: its count's room
    return (local === undefined || local === null ? 3 : formatNumber(local).length) * PILL.charWidth + PILL.padding;
  });

  const [width, height] = lr ? [totalU, totalV] : [totalV, totalU];
  return { width, height, nodes, edges, geometry: g, direction: lr ? "LR" : "BT", compact, bands: folds };
}

/** Sizes along the flow (u) and across it (v): a record's, a rank's and a row's pitch, and the whole layout's, unfolded. */
function flowSizes(layout, g, lr) {
  const boxU = lr ? g.box.width : g.box.height; // record size along the flow
  const boxV = lr ? g.box.height : g.box.width; // and across it
  const before = 2 * g.opRadius + g.opGap; // room for the op circle before the record
  const rankPitch = before + boxU + g.edgeRoom[lr ? "LR" : "BT"];
  const rowPitch = boxV + g.across[lr ? "LR" : "BT"];
  const unfoldedU = Math.max(1, layout.ranks) * rankPitch - g.edgeRoom[lr ? "LR" : "BT"];
  const unfoldedV = Math.max(0, layout.rows - 1) * rowPitch + boxV;
  return { boxU, boxV, before, rankPitch, rowPitch, unfoldedU, unfoldedV };
}

/**
 * The width and height placeGraph gives a layout in one band, without placing it: choosing a
 * direction placed a big folded graph both ways, its every edge's path made twice.
 */
export function placedSize(layout, { direction = "LR", compact = false } = {}) {
  const lr = direction !== "BT";
  const { unfoldedU, unfoldedV } = flowSizes(layout, compact ? GEOMETRY.compact : GEOMETRY.full, lr);
  return lr ? { width: unfoldedU, height: unfoldedV } : { width: unfoldedV, height: unfoldedU };
}

/**
 * How many bands to fold a compact graph into (placeGraph's `bands`) so that it is drawn largest
 * in a panel of `width` × `height`: `placement` is its unfolded placement. 1 for a graph that is
 * not long and thin for the panel.
 */
export function bestBands(placement, width, height) {
  if (!placement.compact) return 1;
  const lr = placement.direction === "LR";
  const along = lr ? placement.width : placement.height;
  const across = lr ? placement.height : placement.width;
  const [panelAlong, panelAcross] = lr ? [width, height] : [height, width];
  let best = 1;
  let bestScale = Math.min(panelAlong / along, panelAcross / across);
  for (let b = 2; b <= MAX_BANDS; b++) {
    const scale = Math.min(panelAlong / (along / b), panelAcross / (b * across + (b - 1) * BAND_GAP));
    if (scale > bestScale * 1.05) {
      best = b;
      bestScale = scale;
    }
  }
  return best;
}
