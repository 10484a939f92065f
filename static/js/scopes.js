// Scopes: every node carries the chain of calls and loop iterations it was made in (its `scope`,
// from the server). A scope can be collapsed into one box that stands for all the nodes made in
// it, showing what goes in and what comes out; clicking the box expands it again. A big graph
// opens with the scopes just above the innermost ones collapsed: an MLP's layers (whose neurons
// are the innermost), its parameters (made in the layers' __init__).
//
// A scope instance is a maximal run of consecutive node ids that share a scope prefix: nodes are
// numbered in creation order, so one call or one loop iteration is such a run. (Two calls of the
// same function back to back, with no node made between them, read as one run.) Because a box is a
// run of ids, the collapsed view is still a graph whose edges go from lower to higher ids, and it
// is laid out by the server's layered layout (POST /layout), the same code that lays out every
// graph, rather than by a second layout in the page. The graph's output is never hidden.
//
// Positions: placeGraph (layout.js) turns the collapsed graph's layout into pixels; real nodes
// keep their ids and are drawn by the renderer as usual, hidden nodes get their box's position (so
// anything that centres a node finds its box).
//
// This module is what is computed, in pure functions (the scope instances, which boxes a collapsed
// set makes, their inputs and outputs, where boxes and frames go and what they say); scopeview.js
// draws it and keeps the page's collapsed set.

import { formatNumber, grouped, nodeName } from "./format.js";
import { placeGraph } from "./layout.js";

/** Above this many nodes a graph opens with its scopes collapsed (an MLP(3, [4, 4, 1]) forward pass has 125). */
export const COLLAPSE_ABOVE = 100;
const SEPARATOR = " › ";
const LISTED = 6; // inputs and outputs named in a box's description
const TITLE_PX = 19; // a box's title, shrunk to fit a long one (CHAR_EM: a monospace character's width in em)
const CHAR_EM = 0.6;
const FRAMES_SHOWN = 60; // frames around expanded scopes; more would only clutter
const FRAME_PAD = 10;
const FOLD_CHAR_PX = 8.4; // a character of the frame's button text, in graph pixels

/** The scope instances of a graph, outermost first, each {key, name, path, depth, first, last, parent, children}. */
export function scopeInstances(model) {
  const instances = [];
  const seen = new Map(); // path -> how many instances of it so far
  const open = [];
  for (const node of model.nodes) {
    const scope = node.scope ?? [];
    let depth = 0;
    while (depth < open.length && depth < scope.length && open[depth].name === scope[depth]) depth++;
    open.length = depth;
    for (let d = depth; d < scope.length; d++) {
      const path = scope.slice(0, d + 1).join(SEPARATOR);
      const count = seen.get(path) ?? 0;
      seen.set(path, count + 1);
      const parent = d > 0 ? open[d - 1] : null;
      const instance = { key: `${path}#${count}`, name: scope[d], path, depth: d, first: node.id, last: node.id, parent, children: [] };
      if (parent) parent.children.push(instance);
      instances.push(instance);
      open.push(instance);
    }
    for (const instance of open) instance.last = node.id;
  }
  return instances;
}

/** The scopes just above the innermost ones (an MLP's layers): those whose sub-scopes have none. */
export function layerScopes(instances) {
  return new Set(instances.filter((s) => s.children.length > 0 && s.children.every((c) => c.children.length === 0)).map((s) => s.key));
}

/** The scopes a graph opens collapsed: its layer scopes when it is big, else none. */
export function defaultCollapsed(model, instances) {
  return model.nodes.length > COLLAPSE_ABOVE ? layerScopes(instances) : new Set();
}

/**
 * The graph with some scopes collapsed: items (a box for each outermost collapsed
 * scope, a node elsewhere), itemOf[node id], and each item's children as item indices. A box
 * also takes in the leaves that only it uses (an MLP layer's weights and biases, even when they
 * were made in another scope): they are part of what it computes, and drawn apart they would
 * crowd the picture. A box that keeps no member is dropped.
 */
export function collapsedGraph(model, instances, collapsed) {
  const n = model.nodes.length;
  const boxOf = new Int32Array(n).fill(-1);
  const scopes = [];
  for (const s of instances) {
    if (!collapsed.has(s.key)) continue;
    let outer = s.parent;
    while (outer && !collapsed.has(outer.key)) outer = outer.parent;
    if (outer) continue; // inside a collapsed scope already
    for (let id = s.first; id <= Math.min(s.last, model.output - 1); id++) boxOf[id] = scopes.length; // the output stays in view
    scopes.push(s);
  }
  const users = model.nodes.map(() => []);
  for (const node of model.nodes) for (const c of node.children) users[c].push(node.id);
  for (const node of model.nodes) {
    if (node.children.length || !users[node.id].length) continue;
    const box = boxOf[users[node.id][0]];
    if (box >= 0 && users[node.id].every((u) => boxOf[u] === box)) boxOf[node.id] = box;
  }

  // Items in an order where every edge goes up: a node at its id, a box where its scope starts
  // (the leaves it took in have no inputs, so they need no earlier place).
  const items = [];
  const boxItems = scopes.map((scope) => ({ box: scope, key: scope.first, members: [], children: [], counts: [] }));
  for (let id = 0; id < n; id++) {
    if (boxOf[id] < 0) items.push({ box: null, key: id, node: id, children: [] });
    else boxItems[boxOf[id]].members.push(id);
  }
  items.push(...boxItems.filter((item) => item.members.length));
  items.sort((a, b) => a.key - b.key);
  const itemOf = new Int32Array(n);
  items.forEach((item, index) => {
    item.index = index;
    if (item.box) for (const m of item.members) itemOf[m] = index;
    else itemOf[item.node] = index;
  });
  for (const item of items) {
    if (!item.box) {
      item.children = model.nodes[item.node].children.map((c) => itemOf[c]);
      continue;
    }
    const slots = new Map();
    for (const m of item.members) {
      for (const c of model.nodes[m].children) {
        const from = itemOf[c];
        if (from === item.index) continue;
        if (!slots.has(from)) {
          slots.set(from, item.children.length);
          item.children.push(from);
          item.counts.push(0);
        }
        item.counts[slots.get(from)] += 1;
      }
    }
  }
  return { items, itemOf };
}

/** For every box item: the nodes outside it that it uses (in) and its members used outside it (out), in one pass. */
export function boxPorts(model, items, itemOf) {
  const ports = new Map(items.filter((item) => item.box).map((item) => [item.index, { inputs: new Set(), outputs: new Set() }]));
  for (const node of model.nodes) {
    const to = itemOf[node.id];
    for (const c of node.children) {
      const from = itemOf[c];
      if (from === to) continue;
      ports.get(to)?.inputs.add(c);
      ports.get(from)?.outputs.add(c);
    }
  }
  const sorted = (set) => [...set].sort((x, y) => x - y);
  for (const port of ports.values()) {
    port.inputs = sorted(port.inputs);
    port.outputs = sorted(port.outputs);
  }
  return ports;
}

function listed(model, ids) {
  const names = ids.slice(0, LISTED).map((id) => `${nodeName(model.nodes[id])} = ${formatNumber(model.nodes[id].data)}`);
  return ids.length > LISTED ? `${names.join(", ")}, and ${grouped(ids.length - LISTED)} more` : names.join(", ");
}

/**
 * Pixel positions for the renderer: placeGraph's, with the nodes of collapsed scopes hidden at
 * their box's place. `folded` is {items, itemOf, layout} (collapsedGraph and the server's layout
 * of it) or null (nothing folded). The placement also lists the boxes and the edges into them.
 */
export function placeScoped(model, folded, direction, compactAbove) {
  if (!folded) return placeGraph(model, { direction, compact: model.nodes.length > compactAbove });
  const { items, itemOf, layout } = folded;
  const itemModel = { nodes: items.map((item) => ({ children: item.children })), layout };
  const placed = placeGraph(itemModel, { direction, compact: items.length > compactAbove });
  const nodes = model.nodes.map((node) => {
    const item = items[itemOf[node.id]];
    const p = placed.nodes[item.index];
    return item.box ? { ...p, hidden: true } : p;
  });
  const edges = [];
  const boxEdges = [];
  for (const e of placed.edges) {
    const parent = items[e.parent];
    if (parent.box) {
      boxEdges.push({ ...e, count: parent.counts[e.slot] });
    } else {
      const child = model.nodes[parent.node].children[e.slot];
      edges.push({ ...e, key: `${parent.node}:${e.slot}`, parent: parent.node, child });
    }
  }
  const boxes = items.filter((item) => item.box).map((item) => ({ item, p: placed.nodes[item.index] }));
  return { ...placed, nodes, edges, visible: items.length - boxes.length, boxes, boxEdges };
}

/**
 * What each collapsed box shows, where: its rectangle (covering the record and the room for its
 * op circle, so edges end at its border), title, subtitle and title size, its accessible
 * description, and its inputs and outputs (node ids).
 */
export function scopeBoxes(model, folded, placement) {
  const g = placement.geometry;
  const W = g.box.width;
  const H = g.box.height;
  const before = 2 * g.opRadius + g.opGap;
  const lr = placement.direction !== "BT";
  const ports = boxPorts(model, folded.items, folded.itemOf);
  return placement.boxes.map(({ item, p }) => {
    const { inputs, outputs } = ports.get(item.index);
    const [x, y, w, h] = lr ? [p.cx - W / 2 - before, p.cy - H / 2, W + before, H] : [p.cx - W / 2, p.cy - H / 2, W, H + before];
    const scope = item.box;
    // A call's name repeats from layer to layer; the loop iteration around it says which one.
    const title = `⊞ ${scope.name}${!placement.compact && scope.parent?.name.startsWith("for ") ? ` · ${scope.parent.name}` : ""}`;
    const sub = `${grouped(inputs.length)} in → ${grouped(outputs.length)} out · ${grouped(item.members.length)} nodes`;
    // The name starts with the text on screen (as assistive technology expects), then the details.
    const shown = placement.compact ? title : `${title} ${sub}`;
    const description = `${shown}. ${scope.path}, collapsed: ${grouped(inputs.length)} in (${listed(model, inputs)}); ${grouped(outputs.length)} out (${listed(model, outputs)}). Click to expand.`;
    const titleSize = Math.min(TITLE_PX, (w - 24) / (CHAR_EM * title.length));
    return { item, scope, inputs, outputs, x, y, w, h, title, sub, titleSize, description };
  });
}

/**
 * A dashed frame around each expanded layer scope (the kind a big graph opens collapsed) with
 * two or more nodes drawn, and the text of its "⊟ name" button: the way to fold a scope from the
 * graph itself. At most FRAMES_SHOWN.
 */
export function scopeFrames(instances, collapsed, placement) {
  const g = placement.geometry;
  const layers = layerScopes(instances);
  const insideCollapsed = (scope) => {
    for (let outer = scope.parent; outer; outer = outer.parent) if (collapsed.has(outer.key)) return true;
    return false;
  };
  const frames = [];
  for (const scope of instances) {
    if (frames.length >= FRAMES_SHOWN) break;
    if (!layers.has(scope.key) || collapsed.has(scope.key) || insideCollapsed(scope)) continue;
    let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
    let members = 0;
    for (let id = scope.first; id <= scope.last; id++) {
      const p = placement.nodes[id];
      if (!p || p.hidden) continue;
      members += 1;
      const opX = p.cx + p.ox;
      const opY = p.cy + p.oy;
      x0 = Math.min(x0, p.cx - g.box.width / 2, opX - g.opRadius);
      x1 = Math.max(x1, p.cx + g.box.width / 2, opX + g.opRadius);
      y0 = Math.min(y0, p.cy - g.box.height / 2, opY - g.opRadius);
      y1 = Math.max(y1, p.cy + g.box.height / 2, opY + g.opRadius);
    }
    if (members < 2) continue;
    const text = `⊟ ${scope.name}${scope.parent?.name.startsWith("for ") ? ` · ${scope.parent.name}` : ""}`;
    frames.push({
      scope,
      x: x0 - FRAME_PAD,
      y: y0 - FRAME_PAD,
      w: x1 - x0 + 2 * FRAME_PAD,
      h: y1 - y0 + 2 * FRAME_PAD,
      text,
      label: `${text}: collapse ${scope.path} into one box`,
      pillWidth: text.length * FOLD_CHAR_PX + 16,
    });
  }
  return frames;
}
