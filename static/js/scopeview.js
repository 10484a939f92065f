// The scopes on the page: the collapsed set the learner chooses (boxes, the list under the graph,
// the fold buttons), asking the server to lay out each collapsed view, and drawing the boxes, the
// frames and the edges into boxes in a layer of the SVG renderer's viewport. What the boxes are,
// hold and say is computed in scopes.js.

import d3 from "./d3.js";
import { formatNumber, grouped, nodeName } from "./format.js";
import { gradOf } from "./timeline.js";
import { boxDescription, boxGrads, boxPorts, closedSet, collapsedGraph, collapsedKey, defaultCollapsed, lineSize, listedScopes, openedSet, placeScoped, scopeBoxes, scopeFrames, scopeIndex, scopeInstances, scopeLabel, scopedSize } from "./scopes.js";

const STORY_LISTED = 12; // inputs and outputs listed in the story panel
const LIST_SHOWN = 300; // scopes listed under the graph (a long loop makes thousands), the outermost first

/**
 * The page's scope view. `fetchLayout(children, {signal})` asks the server for a layout (null:
 * no server, as in a self-contained file made without views: everything stays expanded; an error
 * named NeedsServer: a file without that view). `onChange(opened)` is called when the learner
 * opens or folds a scope and the new layout is ready (`opened`: the key of the scope just opened,
 * else null); `onRefused(message)` when that view cannot be laid out here (the view stays as it
 * was); `onPoint(ids)` when a box is pointed at (its member ids) or left ([]).
 */
export function createScopes(root, graph, { fetchLayout = null, onChange = () => {}, onRefused = () => {}, onPoint = () => {} } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const viewport = d3.select(graph.element).select(".vg-viewport");
  const layer = viewport.insert("g", ".vg-nodes").attr("class", "vg-scope-layer");
  const panel = el("scopes");
  const list = el("scope-list");
  const summary = el("scopes-summary");

  let model = null;
  let instances = [];
  let collapsed = new Set();
  let home = new Set(); // the collapsed set the model opened with
  let shape = ""; // the scope structure the collapsed set belongs to
  let view = null; // {items, itemOf, layout} for the collapsed set, when something is collapsed
  const layouts = new Map(); // collapsed keys -> the server's layout, for this model
  let pending = null;
  let boxEls = new Map(); // item index -> element
  let shownBoxes = []; // scopeBoxes' answer for the boxes drawn, each with its element's grads line
  let shownFrames = []; // scopeFrames' answer for the frames drawn
  let portsKept = {}; // each box's inputs and outputs, kept for this model (scopes.js's boxPorts)
  let shownGrad = null; // (id) => a node's grad at the step shown, null while none has reached it
  let focusItem = null;
  let receivingItems = new Set(); // boxes whose nodes get gradient at the walk's step
  let linkedItems = new Set();
  let pointed = null; // the box pointed at: {item, inputs, outputs} (its members' code is marked)

  function point(box) {
    pointed = box;
    onPoint(box ? box.item.members : []);
  }

  const canCollapse = () => fetchLayout !== null;

  /**
   * For a newly loaded model: its scopes, the collapsed set (kept when the scopes are the same), and
   * its layout. `source`: the program it came from, when the page has it (line boxes show its lines).
   * The layout is asked of the server before this first waits: the caller can do its own work meanwhile.
   */
  async function prepare(newModel, source = null) {
    model = newModel;
    instances = scopeInstances(model, source);
    portsKept = {};
    const newShape = JSON.stringify(instances.map((s) => [s.key, s.first, s.last]));
    if (newShape !== shape) {
      shape = newShape;
      home = canCollapse() ? defaultCollapsed(model, instances) : new Set();
      collapsed = new Set(home);
    }
    layouts.clear();
    if ((await load()) instanceof Error) {
      collapsed = new Set(); // a file without its opening view: expanded, as before views
      const whole = await loadWhole();
      if (whole instanceof Error) throw whole; // a server that could not lay out the whole graph: the page says why
    }
    showList();
  }

  /** Fetch the layout of the current collapsed set (if any); false when a newer request replaced it, a NeedsServer error when it cannot be had here. */
  async function load() {
    pending?.abort();
    view = null;
    if (collapsed.size === 0 || !canCollapse()) return loadWhole();
    const graphView = collapsedGraph(model, instances, collapsed);
    if (graphView.items.length === model.nodes.length) return loadWhole(); // nothing to fold
    const key = collapsedKey(collapsed);
    let layout = layouts.get(key);
    if (!layout) {
      const controller = (pending = new AbortController());
      try {
        layout = await fetchLayout(graphView.items.map((item) => item.children), { signal: controller.signal });
      } catch (error) {
        if (error.name === "AbortError") return false;
        if (error.name === "NeedsServer") return error; // a file without this view: the caller keeps the one it has
        collapsed = new Set(); // no layout, no boxes: the full graph is still right
        return loadWhole();
      }
      layouts.set(key, layout);
    }
    view = { ...graphView, layout };
    return true;
  }

  /**
   * The whole graph's layout, asked once when it is first shown expanded: a big graph's answer comes
   * without it (api.js's layout_max_nodes). True when it is there, false when a newer request replaced
   * this one, the error when the server could not lay it out (the caller keeps the view it has).
   */
  async function loadWhole() {
    if (model.layout || !canCollapse()) return true;
    const controller = (pending = new AbortController());
    try {
      model.layout = await fetchLayout(model.nodes.map((node) => node.children), { signal: controller.signal });
    } catch (error) {
      return error.name === "AbortError" ? false : error;
    }
    return true;
  }

  async function setCollapsed(next, opened = null) {
    const before = { collapsed, view };
    collapsed = next;
    const done = await load();
    if (done instanceof Error) {
      ({ collapsed, view } = before);
      showList();
      onRefused(done.message);
      return;
    }
    showList();
    if (done) onChange(opened);
  }

  /** Open a collapsed scope in place, one level down, or fold an open one (and all inside it) into one box. */
  function toggle(key) {
    if (collapsed.has(key)) return setCollapsed(openedSet(model, instances, collapsed, key), key);
    return setCollapsed(closedSet(model, instances, collapsed, key));
  }

  /** Pixel positions for the renderer: placeGraph's, with collapsed nodes at their box. */
  function place(shownModel, direction, compactAbove) {
    const placed = placeScoped(shownModel, shownModel === model ? view : null, direction, compactAbove);
    placed.scoped = shownModel === model; // draw() frames the scopes of this model only
    return placed;
  }

  /** The size place() gives the picture in that direction, without placing it. */
  function size(shownModel, direction, compactAbove) {
    return scopedSize(shownModel, shownModel === model ? view : null, direction, compactAbove);
  }

  /** Draw the boxes and the edges into them (after render.js drew the placement); applyFrame then writes their grads lines. */
  function draw(placement) {
    boxEls = new Map();
    shownBoxes = [];
    shownFrames = [];
    layer.selectAll("*").remove();
    if (pointed) point(null); // the box under the pointer is gone (no mouseleave comes)
    if (placement.scoped && !placement.compact) drawFrames(placement);
    if (!placement.boxes?.length || !view) return;
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
    const ports = boxPorts(model, view.items, view.itemOf, scopeIndex(model, instances), portsKept);
    for (const shown of scopeBoxes(model, view, placement, ports)) {
      const { item, scope, x, y, w, h, title, sub } = shown;
      const box = layer.append("g").attr("class", "vg-scope-box").attr("data-scope", scope.key)
        .attr("role", "button").attr("tabindex", 0).attr("aria-expanded", "false");
      shown.tip = box.append("title");
      box.append("rect").attr("class", "vg-scope-rect").attr("x", x).attr("y", y).attr("width", w).attr("height", h).attr("rx", 10);
      if (placement.compact) {
        box.append("text").attr("class", "vg-scope-title").attr("x", x + 6).attr("y", y + h / 2).attr("dy", "0.35em").text(title);
      } else {
        // A space between the lines (drawn nowhere: outside any <text>) makes the box's text content read as
        // separate words, as its accessible name does: "⊞ Layer[0] 40 values …", not "⊞ Layer[0]40 values …".
        const space = () => box.append(() => document.createTextNode(" "));
        box.append("text").attr("class", "vg-scope-title").attr("x", x + 12).attr("y", y + 22).style("font-size", `${shown.titleSize}px`).text(title);
        space();
        box.append("text").attr("class", "vg-scope-sub").attr("x", x + 12).attr("y", y + 42).style("font-size", `${lineSize(sub, w)}px`).text(sub);
        space();
        shown.gradLine = box.append("text").attr("class", "vg-scope-grads").attr("x", x + 12).attr("y", y + h - 9);
      }
      shown.el = box;
      shownBoxes.push(shown);
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
      const described = { item, inputs: shown.inputs, outputs: shown.outputs };
      box.on("mouseenter focus", () => point(described)).on("mouseleave blur", () => point(null));
      boxEls.set(item.index, box.node());
    }
    applyClasses();
  }

  /**
   * Each box's grads line and accessible name (which starts with the text on screen) at the step shown.
   * The sums are made once per box, and a box whose text did not change is not written again: most
   * boxes' grads stay the same from one step of the walk to the next.
   */
  function showGrads() {
    for (const shown of shownBoxes) {
      const compact = !shown.gradLine;
      const g = boxGrads(shown.inputs, shown.outputs, shownGrad);
      if (!compact && g.text !== shown.gradText) {
        shown.gradText = g.text;
        shown.gradLine.style("font-size", `${lineSize(g.text, shown.w)}px`).text(g.text);
      }
      const description = boxDescription(model, shown, shownGrad, compact, g);
      if (description === shown.description) continue;
      shown.description = description;
      shown.el.attr("aria-label", description);
      shown.tip.text(description);
    }
  }

  /** The frames around expanded layer scopes, each with its fold button. */
  function drawFrames(placement) {
    const frames = layer.append("g").attr("class", "vg-scope-frames");
    shownFrames = scopeFrames(instances, collapsed, placement, home, view);
    for (const frame of shownFrames) {
      const key = frame.scope.key;
      frames.append("rect").attr("class", "vg-scope-frame").attr("x", frame.x).attr("y", frame.y)
        .attr("width", frame.w).attr("height", frame.h).attr("rx", 12);
      const label = frames.append("g").attr("class", "vg-scope-fold").attr("data-scope", key).attr("role", "button")
        .attr("tabindex", 0).attr("aria-expanded", "true").attr("transform", `translate(${frame.x},${frame.y - 8})`);
      label.attr("aria-label", frame.label);
      label.append("rect").attr("class", "vg-scope-fold-pill").attr("y", -14).attr("height", 22).attr("rx", 8).attr("width", frame.pillWidth);
      label.append("text").attr("x", 8).attr("dy", "0.1em").text(frame.text);
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

  /**
   * The story of the box pointed at, in the story panel: what goes in and what comes out, with
   * their data and their grads as the walk has them (frameNow(): the walk's frame shown). False: no box.
   */
  function showStory(title, body, frameNow) {
    if (!pointed) return false;
    const { item, inputs, outputs } = pointed;
    const frame = frameNow();
    title.textContent = `${item.box.path}: collapsed`;
    const doc = body.ownerDocument;
    const section = (heading, ids) => {
      const p = doc.createElement("p");
      p.textContent = `${heading} (${grouped(ids.length)}):`;
      const ul = doc.createElement("ul");
      for (const id of ids.slice(0, STORY_LISTED)) {
        const li = doc.createElement("li");
        const grad = frame ? gradOf(frame, id) : null;
        li.textContent = `${nodeName(model.nodes[id])}: data ${formatNumber(model.nodes[id].data)}, grad ${grad === null ? "not reached yet" : formatNumber(grad)}`;
        ul.append(li);
      }
      if (ids.length > STORY_LISTED) ul.append(Object.assign(doc.createElement("li"), { textContent: `and ${grouped(ids.length - STORY_LISTED)} more` }));
      return [p, ul];
    };
    const summary = doc.createElement("p");
    summary.textContent = `${grouped(item.members.length)} nodes made in this scope are folded into one box. Click it (or press Enter) to open it.`;
    body.replaceChildren(summary, ...section("In", inputs), ...section("Out", outputs));
    return true;
  }

  function arrowId() {
    return graph.element.querySelector("marker")?.id ?? "";
  }

  function itemOfNode(id) {
    return view && id !== null && id !== undefined && id < model.nodes.length ? view.itemOf[id] : null;
  }

  function applyClasses() {
    for (const [index, box] of boxEls) {
      box.classList.toggle("is-focus", index === focusItem);
      box.classList.toggle("is-receiving", receivingItems.has(index) && index !== focusItem);
      box.classList.toggle("is-linked", linkedItems.has(index));
    }
  }

  /** The walk's current node: its box glows when it is inside one; boxes its step passes gradient to are marked; every box's grads are the step's. */
  function applyFrame(frame) {
    focusItem = itemOfNode(frame?.focus ?? null);
    receivingItems = new Set(frame?.stage === "propagate" ? (frame.step.updates ?? []).map((u) => itemOfNode(u.child)) : []);
    applyClasses();
    shownGrad = frame ? (id) => gradOf(frame, id) : null;
    showGrads();
  }

  /** Where a scope is drawn (its frame when open, its box when folded), in graph coordinates, with its items' centres and their median; or null. */
  function areaOf(key) {
    const at = shownFrames.find((f) => f.scope.key === key) ?? shownBoxes.find((b) => b.scope.key === key);
    if (!at) return null;
    const centre = at.centre ?? { x: at.x + at.w / 2, y: at.y + at.h / 2 };
    return { x0: at.x, y0: at.y - (at.pillWidth ? 22 : 0), x1: at.x + at.w, y1: at.y + at.h, centre, points: at.points ?? [] };
  }

  /** The area the boxes drawn span, for camera.showArea (their centres as its points), or null with none drawn. */
  function boxesArea() {
    if (!shownBoxes.length) return null;
    const points = shownBoxes.map((b) => [b.x + b.w / 2, b.y + b.h / 2]);
    const middle = (values) => values.sort((a, b) => a - b)[values.length >> 1];
    return {
      x0: Math.min(...shownBoxes.map((b) => b.x)),
      y0: Math.min(...shownBoxes.map((b) => b.y)),
      x1: Math.max(...shownBoxes.map((b) => b.x + b.w)),
      y1: Math.max(...shownBoxes.map((b) => b.y + b.h)),
      centre: { x: middle(points.map(([x]) => x)), y: middle(points.map(([, y]) => y)) },
      points,
    };
  }

  /** Nodes a line of code made: their boxes are marked too. */
  function setLinked(ids) {
    linkedItems = new Set(view ? ids.map((id) => itemOfNode(id)) : []);
    applyClasses();
  }

  // ---- the list of scopes under the graph ----
  // Made once for a model's scopes: opening or folding a box only ticks or unticks its checkboxes.
  let listedOf = null; // the instances the list shows
  let checkboxes = [];

  function showList() {
    if (!panel) return;
    const named = new Set(instances.filter((s) => s.last > s.first || s.children.length)); // one-node scopes are not worth a box
    panel.hidden = named.size === 0 || !canCollapse();
    if (panel.hidden) return;
    summary.textContent = `Scopes (${grouped(named.size)}, ${grouped(collapsed.size)} collapsed)`;
    if (listedOf === instances) {
      for (const box of checkboxes) box.checked = collapsed.has(box.dataset.scope);
      return;
    }
    listedOf = instances;
    checkboxes = [];
    const outermost = [...named].filter((s) => s.parent === null || !named.has(s.parent));
    const listed = listedScopes(outermost, named, LIST_SHOWN);
    const make = (scopes) => {
      const ul = document.createElement("ul");
      for (const s of scopes) {
        if (!listed.has(s)) continue;
        const li = document.createElement("li");
        const label = document.createElement("label");
        const box = document.createElement("input");
        box.type = "checkbox";
        box.checked = collapsed.has(s.key);
        box.dataset.scope = s.key;
        box.addEventListener("change", () => toggle(s.key));
        checkboxes.push(box);
        label.append(box, document.createTextNode(` ${scopeLabel(s)} `));
        const count = document.createElement("span");
        count.className = "vg-muted";
        count.textContent = `(${grouped(s.last - s.first + 1)} nodes)`;
        label.append(count);
        li.append(label);
        const inner = s.children.filter((c) => listed.has(c));
        if (inner.length) li.append(make(inner));
        ul.append(li);
      }
      return ul;
    };
    list.replaceChildren(make(outermost));
    if (listed.size < named.size) {
      const more = document.createElement("p");
      more.className = "vg-muted";
      more.textContent = `The outermost ${grouped(LIST_SHOWN)} scopes are listed; collapse or expand the others by their boxes.`;
      list.append(more);
    }
  }

  el("scopes-expand")?.addEventListener("click", () => setCollapsed(new Set()));
  el("scopes-layers")?.addEventListener("click", () => setCollapsed(new Set(home)));

  /**
   * The views an exported file is laid out with (POST /export/html's `views`): the one on screen and
   * the one the graph opens with, as children lists; the file, with no server, opens only those.
   */
  function exportViews() {
    const views = new Map();
    for (const set of [collapsed, home]) {
      if (!model || set.size === 0) continue;
      const { items } = collapsedGraph(model, instances, set);
      if (items.length === model.nodes.length) continue; // nothing folded
      const children = items.map((item) => item.children);
      views.set(JSON.stringify(children), { children });
    }
    return [...views.values()];
  }

  return {
    prepare,
    place,
    size,
    draw,
    applyFrame,
    setLinked,
    showStory,
    toggle,
    areaOf,
    boxesArea,
    /** The collapsed view on screen ({items, itemOf}: collapsedGraph's; item.box is its scope instance or null), or null when nothing is folded. */
    folded: () => (view ? { items: view.items, itemOf: view.itemOf } : null),
    exportViews,
    get collapsed() {
      return new Set(collapsed);
    },
  };
}
