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
// keep their ids and are drawn by render.js as usual, hidden nodes get their box's position (so
// anything that centres a node finds its box), and this module draws the boxes and the edges
// that end in a box, in a layer of the graph's viewport.

import d3 from "./d3.js";
import { formatNumber, grouped, nodeName } from "./format.js";
import { placeGraph } from "./layout.js";

/** Above this many nodes a graph opens with its scopes collapsed (an MLP(3, [4, 4, 1]) forward pass has 125). */
export const COLLAPSE_ABOVE = 100;
const SEPARATOR = " › ";
const LISTED = 6; // inputs and outputs named in a box's description
const TITLE_PX = 19; // a box's title, shrunk to fit a long one (CHAR_EM: a monospace character's width in em)
const CHAR_EM = 0.6;
const STORY_LISTED = 12; // inputs and outputs listed in the story panel
const LIST_SHOWN = 300; // scopes listed under the graph (a long loop makes thousands)
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
function boxPorts(model, items, itemOf) {
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
 * The page's scope view. `fetchLayout(children, {signal})` asks the server for a layout (null:
 * no server, as in the self-contained file: everything stays expanded). `onChange()` is called
 * when the learner collapses or expands a scope and the new layout is ready; `onPoint(ids)` when
 * a box is pointed at (its member ids) or left ([]).
 */
export function createScopes(root, graph, { fetchLayout = null, onChange = () => {}, onPoint = () => {} } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const viewport = d3.select(graph.svg).select(".vg-viewport");
  const layer = viewport.insert("g", ".vg-nodes").attr("class", "vg-scope-layer");
  const panel = el("scopes");
  const list = el("scope-list");
  const summary = el("scopes-summary");

  let model = null;
  let instances = [];
  let collapsed = new Set();
  let shape = ""; // the scope structure the collapsed set belongs to
  let view = null; // {items, itemOf, layout} for the collapsed set, when something is collapsed
  const layouts = new Map(); // collapsed keys -> the server's layout, for this model
  let pending = null;
  let boxEls = new Map(); // item index -> element
  let focusItem = null;
  let linkedItems = new Set();
  let pointed = null; // the box pointed at: {item, inputs, outputs} (its members' code is marked)

  function point(box) {
    pointed = box;
    onPoint(box ? box.item.members : []);
  }

  const canCollapse = () => fetchLayout !== null;

  /** For a newly loaded model: its scopes, the collapsed set (kept when the scopes are the same), and its layout. */
  async function prepare(newModel) {
    model = newModel;
    instances = scopeInstances(model);
    const newShape = instances.map((s) => `${s.key}:${s.first}-${s.last}`).join("|");
    if (newShape !== shape) {
      shape = newShape;
      collapsed = canCollapse() ? defaultCollapsed(model, instances) : new Set();
    }
    layouts.clear();
    await load();
    showList();
  }

  /** Fetch the layout of the current collapsed set (if any); false when a newer request replaced it. */
  async function load() {
    pending?.abort();
    view = null;
    if (collapsed.size === 0 || !canCollapse()) return true;
    const graphView = collapsedGraph(model, instances, collapsed);
    if (graphView.items.length === model.nodes.length) return true; // nothing to fold
    const key = [...collapsed].sort().join("|");
    let layout = layouts.get(key);
    if (!layout) {
      const controller = (pending = new AbortController());
      try {
        layout = await fetchLayout(graphView.items.map((item) => item.children), { signal: controller.signal });
      } catch (error) {
        if (error.name === "AbortError") return false;
        collapsed = new Set(); // no layout, no boxes: the full graph is still right
        return true;
      }
      layouts.set(key, layout);
    }
    view = { ...graphView, layout };
    return true;
  }

  async function setCollapsed(next) {
    collapsed = next;
    const done = await load();
    showList();
    if (done) onChange();
  }

  function toggle(key) {
    const next = new Set(collapsed);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    return setCollapsed(next);
  }

  /** Pixel positions for render.js: placeGraph's, with collapsed nodes at their box. */
  function place(shownModel, direction, compactAbove) {
    if (!view || shownModel !== model) {
      const placed = placeGraph(shownModel, { direction, compact: shownModel.nodes.length > compactAbove });
      placed.scoped = shownModel === model; // draw() frames the scopes of this model only
      return placed;
    }
    const { items, itemOf, layout } = view;
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
    return { ...placed, nodes, edges, visible: items.length - boxes.length, boxes, boxEdges, scoped: true };
  }

  /** Draw the boxes and the edges into them (after render.js drew the placement). */
  function draw(placement) {
    boxEls = new Map();
    layer.selectAll("*").remove();
    if (pointed) point(null); // the box under the pointer is gone (no mouseleave comes)
    if (placement.scoped && !placement.compact) drawFrames(placement);
    if (!placement.boxes?.length || !view) return;
    const g = placement.geometry;
    const W = g.box.width;
    const H = g.box.height;
    const before = 2 * g.opRadius + g.opGap;
    const lr = placement.direction !== "BT";
    const edges = layer.append("g").attr("class", "vg-scope-edges");
    for (const e of placement.boxEdges) {
      edges.append("path").attr("class", "vg-edge vg-scope-edge").attr("d", e.d).attr("marker-end", "url(#" + arrowId() + ")");
      if (e.count > 1 && !placement.compact) {
        const label = edges.append("g").attr("class", "vg-scope-count").attr("transform", `translate(${e.lx},${e.ly})`);
        const text = `×${e.count}`;
        label.append("rect").attr("x", -(text.length * 4 + 7)).attr("y", -10).attr("width", text.length * 8 + 14).attr("height", 20).attr("rx", 9);
        label.append("text").attr("text-anchor", "middle").attr("dy", "0.35em").text(text);
      }
    }
    const ports = boxPorts(model, view.items, view.itemOf);
    for (const { item, p } of placement.boxes) {
      const { inputs, outputs } = ports.get(item.index);
      const members = item.members.length;
      // The box covers the record and the room for its op circle, so edges end at its border.
      const [x, y, w, h] = lr ? [p.cx - W / 2 - before, p.cy - H / 2, W + before, H] : [p.cx - W / 2, p.cy - H / 2, W, H + before];
      const scope = item.box;
      // A call's name repeats from layer to layer; the loop iteration around it says which one.
      const title = `⊞ ${scope.name}${!placement.compact && scope.parent?.name.startsWith("for ") ? ` · ${scope.parent.name}` : ""}`;
      const sub = `${grouped(inputs.length)} in → ${grouped(outputs.length)} out · ${grouped(members)} nodes`;
      // The name starts with the text on screen (as assistive technology expects), then the details.
      const shown = placement.compact ? title : `${title} ${sub}`;
      const description = `${shown}. ${scope.path}, collapsed: ${grouped(inputs.length)} in (${listed(model, inputs)}); ${grouped(outputs.length)} out (${listed(model, outputs)}). Click to expand.`;
      const box = layer.append("g").attr("class", "vg-scope-box").attr("data-scope", scope.key)
        .attr("role", "button").attr("tabindex", 0).attr("aria-expanded", "false").attr("aria-label", description);
      box.append("title").text(description);
      box.append("rect").attr("class", "vg-scope-rect").attr("x", x).attr("y", y).attr("width", w).attr("height", h).attr("rx", 10);
      if (placement.compact) {
        box.append("text").attr("class", "vg-scope-title").attr("x", x + 6).attr("y", y + h / 2).attr("dy", "0.35em").text(title);
      } else {
        const size = Math.min(TITLE_PX, (w - 24) / (CHAR_EM * title.length));
        box.append("text").attr("class", "vg-scope-title").attr("x", x + 12).attr("y", y + 22).style("font-size", `${size}px`).text(title);
        box.append("text").attr("class", "vg-scope-sub").attr("x", x + 12).attr("y", y + h - 10).text(sub);
      }
      box.on("click", (event) => {
        event.stopPropagation();
        toggle(scope.key);
      });
      box.on("keydown", (event) => {
        if (event.key !== "Enter" && event.key !== " ") return;
        event.preventDefault();
        event.stopPropagation();
        toggle(scope.key);
      });
      const described = { item, inputs, outputs };
      box.on("mouseenter focus", () => point(described)).on("mouseleave blur", () => point(null));
      boxEls.set(item.index, box.node());
    }
    applyClasses();
  }

  /**
   * A dashed frame around each expanded layer scope (the kind a big graph opens collapsed), with
   * a "⊟ name" button above it that collapses it: the way to fold a scope from the graph itself.
   */
  function drawFrames(placement) {
    const g = placement.geometry;
    const frames = layer.append("g").attr("class", "vg-scope-frames");
    let drawn = 0;
    const layers = layerScopes(instances);
    for (const scope of instances) {
      if (drawn >= FRAMES_SHOWN) break;
      const key = scope.key;
      if (!layers.has(key) || collapsed.has(key) || insideCollapsed(scope)) continue;
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
      drawn += 1;
      const pad = FRAME_PAD;
      frames.append("rect").attr("class", "vg-scope-frame").attr("x", x0 - pad).attr("y", y0 - pad)
        .attr("width", x1 - x0 + 2 * pad).attr("height", y1 - y0 + 2 * pad).attr("rx", 12);
      const label = frames.append("g").attr("class", "vg-scope-fold").attr("data-scope", key).attr("role", "button")
        .attr("tabindex", 0).attr("aria-expanded", "true").attr("transform", `translate(${x0 - pad},${y0 - pad - 8})`);
      const text = `⊟ ${scope.name}${scope.parent?.name.startsWith("for ") ? ` · ${scope.parent.name}` : ""}`;
      label.attr("aria-label", `${text}: collapse ${scope.path} into one box`);
      label.append("rect").attr("class", "vg-scope-fold-pill").attr("y", -14).attr("height", 22).attr("rx", 8)
        .attr("width", text.length * FOLD_CHAR_PX + 16);
      label.append("text").attr("x", 8).attr("dy", "0.1em").text(text);
      label.on("click", (event) => {
        event.stopPropagation();
        toggle(key);
      });
      label.on("keydown", (event) => {
        if (event.key !== "Enter" && event.key !== " ") return;
        event.preventDefault();
        event.stopPropagation();
        toggle(key);
      });
    }
  }

  function insideCollapsed(scope) {
    for (let outer = scope.parent; outer; outer = outer.parent) if (collapsed.has(outer.key)) return true;
    return false;
  }

  /**
   * The story of the box pointed at, in the story panel: what goes in and what comes out, with
   * their data and their grads as the walk has them (gradsNow(): the frame's grads). False: no box.
   */
  function showStory(title, body, gradsNow) {
    if (!pointed) return false;
    const { item, inputs, outputs } = pointed;
    const grads = gradsNow();
    title.textContent = `${item.box.path}: collapsed`;
    const doc = body.ownerDocument;
    const section = (heading, ids) => {
      const p = doc.createElement("p");
      p.textContent = `${heading} (${grouped(ids.length)}):`;
      const ul = doc.createElement("ul");
      for (const id of ids.slice(0, STORY_LISTED)) {
        const li = doc.createElement("li");
        const grad = grads?.[id];
        li.textContent = `${nodeName(model.nodes[id])}: data ${formatNumber(model.nodes[id].data)}, grad ${grad === null || grad === undefined ? "not reached yet" : formatNumber(grad)}`;
        ul.append(li);
      }
      if (ids.length > STORY_LISTED) ul.append(Object.assign(doc.createElement("li"), { textContent: `and ${grouped(ids.length - STORY_LISTED)} more` }));
      return [p, ul];
    };
    const summary = doc.createElement("p");
    summary.textContent = `${grouped(item.members.length)} nodes made in this scope are folded into one box. Click it (or press Enter) to expand it.`;
    body.replaceChildren(summary, ...section("In", inputs), ...section("Out", outputs));
    return true;
  }

  function arrowId() {
    return graph.svg.querySelector("marker")?.id ?? "";
  }

  function itemOfNode(id) {
    return view && id !== null && id !== undefined && id < model.nodes.length ? view.itemOf[id] : null;
  }

  function applyClasses() {
    for (const [index, box] of boxEls) {
      box.classList.toggle("is-focus", index === focusItem);
      box.classList.toggle("is-linked", linkedItems.has(index));
    }
  }

  /** The walk's current node: its box glows when it is inside one. */
  function applyFrame(frame) {
    focusItem = itemOfNode(frame?.focus ?? null);
    applyClasses();
  }

  /** Nodes a line of code made: their boxes are marked too. */
  function setLinked(ids) {
    linkedItems = new Set(view ? ids.map((id) => itemOfNode(id)) : []);
    applyClasses();
  }

  // ---- the list of scopes under the graph ----

  function showList() {
    if (!panel) return;
    const named = new Set(instances.filter((s) => s.last > s.first || s.children.length)); // one-node scopes are not worth a box
    panel.hidden = named.size === 0 || !canCollapse();
    if (panel.hidden) return;
    summary.textContent = `Scopes (${grouped(named.size)}, ${grouped(collapsed.size)} collapsed)`;
    let listedCount = 0;
    const make = (scopes) => {
      const ul = document.createElement("ul");
      for (const s of scopes) {
        if (++listedCount > LIST_SHOWN) break;
        const li = document.createElement("li");
        const label = document.createElement("label");
        const box = document.createElement("input");
        box.type = "checkbox";
        box.checked = collapsed.has(s.key);
        box.dataset.scope = s.key;
        box.addEventListener("change", () => toggle(s.key));
        label.append(box, document.createTextNode(` ${s.name} `));
        const count = document.createElement("span");
        count.className = "vg-muted";
        count.textContent = `(${grouped(s.last - s.first + 1)} nodes)`;
        label.append(count);
        li.append(label);
        const inner = s.children.filter((c) => named.has(c));
        if (inner.length) li.append(make(inner));
        ul.append(li);
      }
      return ul;
    };
    list.replaceChildren(make([...named].filter((s) => s.parent === null || !named.has(s.parent))));
    if (listedCount > LIST_SHOWN) {
      const more = document.createElement("p");
      more.className = "vg-muted";
      more.textContent = `The first ${grouped(LIST_SHOWN)} scopes are listed; collapse or expand the others by their boxes.`;
      list.append(more);
    }
  }

  el("scopes-expand")?.addEventListener("click", () => setCollapsed(new Set()));
  el("scopes-layers")?.addEventListener("click", () => setCollapsed(layerScopes(instances)));

  return {
    prepare,
    place,
    draw,
    applyFrame,
    setLinked,
    showStory,
    toggle,
    get collapsed() {
      return new Set(collapsed);
    },
  };
}
