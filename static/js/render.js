// Drawing the graph as SVG with D3, inside one container element and nowhere else.
//
// Two looks: the full micrograd record (label | data | grad, an op circle, every edge labelled
// with its local gradient) and, for graphs too big to read, a compact view. Both draw their nodes
// in chunks, one animation frame each, so a big graph never freezes the page. Past CANVAS_ABOVE
// records the compact view's records and edges are painted on a canvas beneath the SVG instead
// (data-renderer="canvas" on the element); the SVG keeps the gestures, hot edges and scope boxes. A frame from
// timeline.js is applied as a diff: only nodes whose text or state changed are touched.
//
// The renderer interface: what main.js, camera.js and the tests use, and all a second renderer
// (canvas or WebGL, for large graphs) has to provide. Where the graph is seen from is the
// camera's (camera.js); the renderer draws what it is told.
//   element                           the element drawn into (pan and zoom gestures are read on
//                                     it; data-node-count, data-edge-count and data-motion on it)
//   setGraph(model, placement, tl)    draw a laid-out graph; resolves to true when all is drawn
//   applyFrame(frame)                 show one step of the walk (timeline.js's frameAt)
//   pin(id), setLinked(ids), showFlow(flows)   the node whose story is shown, the nodes a line of
//                                     code made, the gradient flow on the edges
//   setView({x, y, k})                draw as seen from this pan and zoom
//   size() → [width, height]          the element's size in CSS px
//   extent() → {width, height, margin, direction} | null    the drawn graph's size, room for tags around it, "LR" or "BT"
//   nodeBounds(id) → {x0, y0, x1, y1} a node's record, op and tags, in graph coordinates
//   textSize(), revealZoom()          a record's text size at zoom 1; the zoom that shows one node readably
//   onNodeEnter/Leave/Click, onProgress, onResize    what it reports (createGraphView's options)

import d3 from "./d3.js";
import { createCanvasPainter } from "./canvaspaint.js";
import { placeCallouts } from "./labels.js";
import { NUMBER, PILL, pathPointAt } from "./layout.js";
import { markStill, track } from "./motion.js";
import { FLAG, gradOf } from "./timeline.js";
import { formatExact, formatNumber, isNonFinite, nodeName, opText, shortened, checkNote } from "./format.js";

const CHUNK = { full: 120, compact: 250 }; // nodes drawn per animation frame
const CANVAS_ABOVE = 5000; // compact graphs with more records than this are painted on a canvas (canvaspaint.js)
const EDGES_PER_PATH = 1500; // compact edges share paths: a few long paths are far cheaper than thousands
const TEXT_ZOOM = 0.75; // compact view: node text shows from this zoom up
const OVERVIEW_ZOOM = 0.3; // compact view below this zoom: nodes are too small to see one by one
const FULL_TEXT_ZOOM = 0.35; // full view: texts show from this zoom up (below it a record's numbers are under 6 px)
const GLIDE_MS = 350; // records and edges moving to their places in a new layout
const FIT_MARGIN = 26; // room for badges and tags outside the records
const STATE_CLASSES = [
  [FLAG.STACK, " is-stacked"],
  [FLAG.SORTED, " is-sorted"],
  [FLAG.FOCUS, " is-focus"],
  [FLAG.WALKED, " is-walked"],
  [FLAG.RECEIVING, " is-receiving"],
  [FLAG.EXPLORED, " is-explored"],
  [FLAG.GRAD, " has-grad"],
];
const NUMBER_WIDTH = 16 * 0.62; // px a character of a record's number: 16 px monospace (valuegraph.css), 0.6 em and a margin
const CELL_PADDING = 8; // the room a number leaves in its cell, both sides together
const LABEL_CHARS = 4; // a name longer than this is drawn smaller in the record's label cell,
const LONG_LABEL_CHARS = 8; // and cut to this many characters (whole in its tooltip)
const FORCE = 255; // a flags value no frame has: forces a node to be redrawn


/** Whether a polyline [x0, y0, x1, y1, ...] has a segment that crosses or lies in the box. */
function crosses(points, box) {
  for (let i = 0; i + 3 < points.length; i += 2) {
    const [ax, ay, bx, by] = [points[i], points[i + 1], points[i + 2], points[i + 3]];
    if (Math.max(ax, bx) < box.x0 || Math.min(ax, bx) > box.x1 || Math.max(ay, by) < box.y0 || Math.min(ay, by) > box.y1) continue;
    // The segment's line passes the box if the box's corners are not all on one side of it.
    const side = (x, y) => Math.sign((bx - ax) * (y - ay) - (by - ay) * (x - ax));
    const s = [side(box.x0, box.y0), side(box.x1, box.y0), side(box.x0, box.y1), side(box.x1, box.y1)];
    if (Math.min(...s) <= 0 && Math.max(...s) >= 0) return true;
  }
  return false;
}

/** id -> the gradient check's note on that node, for the nodes it finds wrong or whose local gradient breaks its rule. */
function checkNotes(model) {
  const check = model.gradient_check;
  const notes = new Map();
  if (!check) return notes;
  const wrong = new Set(check.wrong);
  const problems = new Map();
  for (const problem of check.local) if (!problems.has(problem.node)) problems.set(problem.node, problem);
  for (const id of new Set([...wrong, ...problems.keys()])) notes.set(id, checkNote(model.nodes[id], wrong.has(id), problems.get(id)));
  return notes;
}

let views = 0; // a counter for ids unique in the document (markers), when several views share a page

const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));

// onResize() hears the panel change size (the window, the layout around it, presenter mode).
export function createGraphView(container, { onNodeEnter = () => {}, onNodeLeave = () => {}, onNodeClick = () => {}, onProgress = () => {}, onResize = () => {} } = {}) {
  const uid = ++views;
  const root = d3.select(container);
  const svg = root.append("svg").attr("class", "vg-svg").attr("role", "group").attr("aria-label", "Computation graph");
  markStill(svg.node());
  const defs = svg.append("defs");
  for (const [id, cls] of [[`vg-arrow-${uid}`, "vg-arrow"], [`vg-arrow-hot-${uid}`, "vg-arrow vg-arrow-hot"]]) {
    defs.append("marker").attr("id", id).attr("viewBox", "0 0 10 10").attr("refX", 9).attr("refY", 5)
      .attr("markerUnits", "userSpaceOnUse").attr("markerWidth", 11).attr("markerHeight", 11).attr("orient", "auto-start-reverse")
      .append("path").attr("class", cls).attr("d", "M0,1 L10,5 L0,9 z");
  }
  const viewport = svg.append("g").attr("class", "vg-viewport");
  const edgeLayer = viewport.append("g").attr("class", "vg-edges");
  const hotEdgeLayer = viewport.append("g").attr("class", "vg-hot-edges");
  const labelLayer = viewport.append("g").attr("class", "vg-edge-labels");
  const nodeLayer = viewport.append("g").attr("class", "vg-nodes");
  const updateLayer = viewport.append("g").attr("class", "vg-update-labels"); // the step's callouts, above all
  // Zoomed far out, a big graph is drawn as two paths (every node; the nodes the walk has
  // reached) and a marker on the current node, instead of thousands of separate elements,
  // which the browser would have to style, lay out and paint on every frame.
  const overview = viewport.append("g").attr("class", "vg-overview");
  const overviewAll = overview.append("path").attr("class", "vg-overview-all");
  const overviewState = overview.append("path").attr("class", "vg-overview-state");
  const overviewFocus = overview.append("circle").attr("class", "vg-overview-focus").attr("r", 0);

  let model = null;
  let placement = null;
  let tl = null;
  let compact = false;
  // Per node id: its element, the parts that change, its fixed classes, what is on screen now.
  let nodeEls = [];
  let drawnIds = []; // the ids with a node element: a folded graph draws few of its nodes
  let parts = [];
  let baseClass = []; // per node id, its fixed classes (baseClassOf): made for the nodes drawn, when first drawn
  let warned = new Set(); // nodes a warning points at
  let notes = new Map(); // id -> what the gradient check says is wrong there (a learner's own class)
  let shownGrad = [];
  let shownFlags = new Uint8Array(0);
  let edgeEls = new Map(); // "parent:slot" -> {path, label, edge}
  let hotEdges = []; // keys of the edges the current frame highlights
  let pinned = null;
  let hovered = null;
  let linked = new Set(); // nodes made by the code line pointed at in the editor
  let drawToken = 0;
  let charWidth = null; // measureCharWidth's, once it could measure
  let lastFrame = null;
  let obstacles = null; // records, op circles and pills the update callouts must not cover (built when first needed)
  let edgePoints = null; // compact view: each edge's polyline, [x0, y0, x1, y1, ...]
  let edgeRegion = null; // compact view: the region whose edges are drawn (null: redraw)
  let allEdgesDrawn = false;
  let culled = new Uint8Array(0); // 1 for a node out of view: not drawn (compact), its texts not drawn (full)
  let size = null; // the container's size, kept by a ResizeObserver (reading it would force a layout)
  let view = d3.zoomIdentity; // where the camera looks from
  let painter = null; // canvaspaint.js, made when first needed
  let onCanvas = false;
  let paintAsked = false;

  new ResizeObserver(([entry]) => {
    const changed = size !== null && (size[0] !== entry.contentRect.width || size[1] !== entry.contentRect.height);
    size = [entry.contentRect.width, entry.contentRect.height];
    if (onCanvas) askPaint();
    if (changed) onResize();
  }).observe(container);

  // The level of detail changes only when the zoom crosses a threshold, not on every zoom frame.
  let zoomedIn = null;
  let zoomedOut = null;
  function setLevelOfDetail(inside, outside) {
    if (inside !== zoomedIn) svg.classed("vg-zoomed-in", (zoomedIn = inside));
    if (outside !== zoomedOut) svg.classed("vg-zoomed-out", (zoomedOut = outside));
  }
  /** Draw as seen from the camera's pan and zoom (a d3 zoom transform: x, y, k). */
  function setView(t) {
    view = t;
    viewport.attr("transform", t);
    if (onCanvas) {
      askPaint();
      return;
    }
    cull(t);
    if (compact) cullEdges(t);
    setLevelOfDetail(t.k >= TEXT_ZOOM, compact && t.k < OVERVIEW_ZOOM);
    if (zoomedOut) overviewFocus.attr("r", 9 / t.k).attr("stroke-width", 3 / t.k); // only the overview shows it
  }

  // One listener per event for all nodes (thousands of nodes, one handler).
  const idOf = (event) => {
    const el = event.target.closest?.("[data-node-id]");
    return el && container.contains(el) ? Number(el.dataset.nodeId) : null;
  };
  nodeLayer
    .on("mouseover focusin", (event) => {
      const id = idOf(event);
      if (id === null || id === hovered) return;
      setHovered(id);
      onNodeEnter(id);
    })
    .on("mouseout focusout", (event) => {
      const id = idOf(event);
      if (id === null || (event.relatedTarget && event.target.closest("[data-node-id]").contains(event.relatedTarget))) return;
      setHovered(null);
      onNodeLeave(id);
    })
    .on("click", (event) => {
      const id = idOf(event);
      if (id !== null) onNodeClick(id);
    })
    .on("keydown", (event) => {
      const id = idOf(event);
      if (id !== null && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        event.stopPropagation(); // space here opens the story; it does not play the walk
        onNodeClick(id);
      }
    });

  // On the canvas there are no node elements: the record under the pointer is looked up.
  const canvasNodeAt = (event) => {
    const [px, py] = d3.pointer(event, svg.node());
    return painter.nodeAt((px - view.x) / view.k, (py - view.y) / view.k);
  };
  svg
    .on("mousemove.canvas", (event) => {
      if (!onCanvas) return;
      const id = canvasNodeAt(event);
      if (id === hovered) return;
      if (hovered !== null) onNodeLeave(hovered);
      setHovered(id);
      if (id !== null) onNodeEnter(id);
    })
    .on("mouseleave.canvas", () => {
      if (!onCanvas || hovered === null) return;
      const id = hovered;
      setHovered(null);
      onNodeLeave(id);
    })
    .on("click.canvas", (event) => {
      if (!onCanvas) return;
      const id = canvasNodeAt(event);
      if (id !== null) onNodeClick(id);
    });

  function askPaint() {
    if (paintAsked) return;
    paintAsked = true;
    requestAnimationFrame(() => {
      paintAsked = false;
      if (onCanvas) painter.paint(view, viewSize(), { textOf: compactText, focus: lastFrame?.focus ?? null });
    });
  }

  /** The canvas's node states: the class list each node would have in the SVG at this step. */
  function paintStates() {
    const flags = lastFrame?.flags;
    painter.setStates((id) => classFor(id, flags ? flags[id] : 0));
    askPaint();
  }

  /** A compact record's one line: name, data │ grad ("·" before the walk reaches it). */
  function compactText(id) {
    const node = model.nodes[id];
    const value = lastFrame ? gradOf(lastFrame, id) : null;
    return `${nodeName(node)}  ${formatNumber(node.data)} │ ${value === null ? "·" : formatNumber(value)}`;
  }

  /** A character's width in an edge label (monospace, one size: measured once), or null while the view is not laid out. */
  function measureCharWidth() {
    const probe = labelLayer.append("text").attr("class", "vg-edge-text").text("0000000000");
    const width = probe.node().getComputedTextLength?.() || 0;
    probe.remove();
    return width > 0 ? width / 10 : null;
  }
  // Measured now, as the page starts: measuring forces a layout of the whole page, which in a big
  // graph's first picture (tables, scope list and boxes just made) took 40-60 ms.
  charWidth = measureCharWidth();

  /** Draw a new graph. Resolves to true when every chunk is on screen, false if a newer draw replaced it. */
  async function setGraph(newModel, newPlacement, newTimeline) {
    const token = ++drawToken;
    const modeChanged = !model || compact !== newPlacement.compact;
    model = newModel;
    placement = newPlacement;
    tl = newTimeline;
    compact = newPlacement.compact;
    const n = model.nodes.length;
    const wasOnCanvas = onCanvas;
    onCanvas = compact && (placement.visible ?? n) > CANVAS_ABOVE;
    svg.attr("data-renderer", onCanvas ? "canvas" : "svg").attr("aria-label", onCanvas ? "Computation graph, painted: point at a value to read it" : "Computation graph");
    svg.classed("vg-compact", compact).classed("vg-bt", placement.direction === "BT");
    svg.attr("data-node-count", placement.visible ?? n).attr("data-edge-count", placement.edges.length); // visible: scopes.js's collapsed view
    nodeEls = new Array(n);
    drawnIds = [];
    parts = new Array(n);
    shownGrad = new Array(n);
    shownFlags = new Uint8Array(n).fill(FORCE);
    culled = new Uint8Array(n);
    hotEdges = [];
    hotEdgeLayer.selectAll("*").remove();
    updateLayer.selectAll("*").remove();
    obstacles = null;
    lastFrame = null; // the caller applies the new program's frame
    pinned = pinned !== null && pinned < n ? pinned : null;
    hovered = null;
    warned = new Set((model.warnings ?? []).map((w) => w.node));
    notes = checkNotes(model);
    baseClass = new Array(n);
    if (modeChanged || compact || wasOnCanvas) {
      edgeLayer.selectAll("*").remove();
      labelLayer.selectAll("*").remove();
      nodeLayer.selectAll("*").remove();
    }
    if (onCanvas) {
      painter ??= createCanvasPainter(container);
      painter.setGraph(placement);
      overviewAll.attr("d", null);
      overviewState.attr("d", null);
      overviewFocus.attr("r", 0);
      edgeEls = new Map();
      paintStates();
      onProgress(n, n);
      return true;
    }
    painter?.clear();
    overviewAll.attr("d", compact ? rectsPath(d3.range(n)) : null);
    overviewState.attr("d", null);
    overviewFocus.attr("r", 0);
    if (compact) {
      drawCompactEdges();
      return drawNodes(token, CHUNK.compact, enterCompact, () => {});
    }
    charWidth ??= measureCharWidth();
    const animate = !modeChanged;
    drawFullEdges(animate);
    const enterFull = (enter) => enter.append("g").attr("class", (d) => baseClassOf(d.id)).attr("transform", (d) => translate(d.id));
    return drawNodes(token, CHUNK.full, enterFull, (nodes) => fillFull(nodes, animate));
  }

  /**
   * Nodes in id-range chunks, one animation frame each. Each chunk is its own group joined by
   * node id, so the same node keeps its element from one program to the next (and glides).
   */
  async function drawNodes(token, chunkSize, enter, update) {
    const n = model.nodes.length;
    // The chunks with a node shown: a folded graph (hidden: inside a collapsed scope) draws few of its nodes.
    const chunks = [];
    for (let id = 0; id < n; id++) {
      if (placement.nodes[id].hidden) continue;
      const first = id - (id % chunkSize);
      if (chunks.at(-1) !== first) chunks.push(first);
    }
    const groups = nodeLayer.selectAll("g.vg-chunk").data(chunks, (first) => first).join("g").attr("class", "vg-chunk");
    const groupEls = groups.nodes();
    let drawn = 0; // nodes drawn since the last frame
    for (let c = 0; c < chunks.length; c++) {
      if (token !== drawToken) return false;
      const first = chunks[c];
      const last = c + 1 < chunks.length ? chunks[c + 1] : n; // a chunk ends where the next one shown starts
      const shown = model.nodes.slice(first, Math.min(last, first + chunkSize)).filter((d) => !placement.nodes[d.id].hidden);
      const nodes = d3.select(groupEls[c]).selectAll("g.vg-node").data(shown, (d) => d.id)
        .join(enter, (existing) => existing, (exit) => exit.remove());
      const ids = [];
      nodes.each(function (d) {
        nodeEls[d.id] = this;
        ids.push(d.id);
      });
      drawnIds.push(...ids);
      update(nodes);
      cull(view, ids);
      if (lastFrame) applyNodes(lastFrame, ids);
      onProgress(last, n);
      drawn += shown.length;
      if (c + 1 < chunks.length && drawn >= chunkSize) {
        drawn = 0;
        await nextFrame();
      }
    }
    if (chunks.length === 0) onProgress(n, n);
    return token === drawToken;
  }

  function drawFullEdges(animate) {
    const move = (sel) => (animate ? track(svg.node(), sel.transition().duration(GLIDE_MS)) : sel);
    // Edges: keyed by (parent, slot), so `a + a` has two.
    const edges = edgeLayer.selectAll("path.vg-edge").data(placement.edges, (e) => e.key)
      .join((enter) => enter.append("path").attr("class", "vg-edge").attr("d", (e) => e.d));
    edges.attr("data-edge", (e) => e.key).attr("marker-end", `url(#vg-arrow-${uid})`);
    move(edges).attr("d", (e) => e.d);

    const labels = labelLayer.selectAll("g.vg-edge-label").data(placement.edges, (e) => e.key)
      .join((enter) => {
        const label = enter.append("g").attr("class", "vg-edge-label").attr("transform", (e) => `translate(${e.lx},${e.ly})`);
        label.append("rect").attr("class", "vg-edge-pill").attr("rx", 9);
        label.append("text").attr("class", "vg-edge-text").attr("text-anchor", "middle");
        label.append("title");
        return label;
      });
    move(labels).attr("transform", (e) => `translate(${e.lx},${e.ly})`);
    edgeEls = new Map();
    edges.each(function (e) {
      edgeEls.set(e.key, { path: this, label: null, text: null, culled: null, edge: e, measured: null, pointAt: null }); // label null: a kept label may be hidden; measured: pointsAlong's
    });
    labels.each(function (e) {
      const local = model.nodes[e.parent].local_grads[e.slot];
      const label = d3.select(this).attr("data-edge", e.key).attr("class", `vg-edge-label${isNonFinite(local) ? " vg-nonfinite" : ""}`);
      label.select("title").text(`local gradient ∂${nodeName(model.nodes[e.parent])}/∂${nodeName(model.nodes[e.child])} = ${formatExact(local)}`);
      setPill(label, formatNumber(local));
      Object.assign(edgeEls.get(e.key), { label: this, text: this.querySelector("text") });
    });
  }

  function drawCompactEdges() {
    // A few long paths, no labels: thousands of separate edges would cost far more.
    edgePoints = null; // parsed when first zoomed in
    edgeRegion = null;
    drawEdgeBundles(placement.edges);
    allEdgesDrawn = true;
    edgeEls = new Map();
  }

  function drawEdgeBundles(edges) {
    const bundles = edgeLayer.selectAll("path.vg-edge-bundle").data(d3.range(0, edges.length, EDGES_PER_PATH)).join("path")
      .attr("class", "vg-edge vg-edge-bundle");
    bundles.attr("d", (i) => edges.slice(i, i + EDGES_PER_PATH).map((e) => e.d).join(""));
  }

  /**
   * Compact view: only the edges that cross a region around the view are in the bundles. Each
   * change of scale repaints every edge drawn, and the 500-term sum's long edges from `x` cross
   * the whole graph. The region is three views wide and high, so it is redrawn only when the view
   * leaves it (about every 20 wheel notches out, or a view's width of panning) or has zoomed in 2×.
   */
  function cullEdges(t) {
    const [vw, vh] = viewSize();
    const view = { x0: -t.x / t.k, y0: -t.y / t.k, x1: (vw - t.x) / t.k, y1: (vh - t.y) / t.k };
    const r = edgeRegion;
    const w = view.x1 - view.x0, h = view.y1 - view.y0;
    const inside = r && view.x0 >= r.x0 && view.y0 >= r.y0 && view.x1 <= r.x1 && view.y1 <= r.y1;
    if (inside && r.x1 - r.x0 <= 6 * w) return; // still in the region, and not zoomed in 2× since
    edgeRegion = { x0: view.x0 - w, y0: view.y0 - h, x1: view.x1 + w, y1: view.y1 + h };
    const whole = edgeRegion.x0 <= 0 && edgeRegion.y0 <= 0 && edgeRegion.x1 >= placement.width && edgeRegion.y1 >= placement.height;
    if (whole && allEdgesDrawn) return;
    allEdgesDrawn = whole;
    edgePoints ??= placement.edges.map((e) => (e.d.match(NUMBER) ?? []).map(Number));
    drawEdgeBundles(whole ? placement.edges : placement.edges.filter((_, i) => crosses(edgePoints[i], edgeRegion)));
  }

  function enterCompact(enter) {
    const { width: W, height: H } = placement.geometry.box;
    const node = enter.append("g").attr("class", (d) => baseClassOf(d.id)).attr("data-node-id", (d) => d.id).attr("transform", (d) => translate(d.id));
    node.append("rect").attr("class", "vg-box").attr("x", -W / 2).attr("y", -H / 2).attr("width", W).attr("height", H).attr("rx", 4);
    node.append("text").attr("class", "vg-compact-text").attr("x", -W / 2 + 5).attr("y", 4);
    node.each(function (d) {
      parts[d.id] = { text: this.lastChild, texts: [this.lastChild] };
    });
    return node;
  }

  /** The record's parts, rebuilt for each program (what they are depends on the node). */
  function fillFull(nodes, animate) {
    const { geometry: g } = placement;
    const W = g.box.width;
    const H = g.box.height;
    const [c0, c1] = g.box.cells;
    const labelX = -W / 2 + c0 / 2;
    const dataX = -W / 2 + c0 + c1 / 2;
    const gradX = W / 2 - (W - c0 - c1) / 2;
    (animate ? track(svg.node(), nodes.transition().duration(GLIDE_MS)) : nodes).attr("transform", (d) => translate(d.id));
    nodes.each(function (d) {
      const node = d3.select(this);
      node.selectAll("*").remove();
      const p = placement.nodes[d.id];
      node.attr("data-node-id", d.id);
      if (d.op) node.append("line").attr("class", "vg-op-link").attr("x1", p.ox).attr("y1", p.oy).attr("x2", 0).attr("y2", 0);
      // The record itself is the button: focusable, named by its aria-label ("a: data 2, grad 4").
      const box = node.append("rect").attr("class", "vg-box").attr("x", -W / 2).attr("y", -H / 2).attr("width", W).attr("height", H)
        .attr("rx", 7).attr("tabindex", 0).attr("role", "button");
      node.append("rect").attr("class", "vg-grad-cell").attr("x", -W / 2 + c0 + c1).attr("y", -H / 2)
        .attr("width", W - c0 - c1).attr("height", H).attr("rx", 7);
      for (const x of [-W / 2 + c0, -W / 2 + c0 + c1]) {
        node.append("line").attr("class", "vg-cell-line").attr("x1", x).attr("x2", x).attr("y1", -H / 2).attr("y2", H / 2);
      }
      // An unnamed value's expression can be long: smaller type, cut to the label cell, whole in the tooltip.
      const name = nodeName(d);
      const long = name.length > LABEL_CHARS;
      const label = node.append("text").attr("class", long ? "vg-label vg-label-long" : "vg-label").attr("x", labelX).attr("y", long ? 4 : 6)
        .attr("text-anchor", "middle").text(long ? shortened(name, LONG_LABEL_CHARS) : name);
      if (long && name.length > LONG_LABEL_CHARS) label.append("title").text(name);
      node.append("text").attr("class", "vg-cell-title").attr("x", dataX).attr("y", -H / 2 + 14).attr("text-anchor", "middle").text("data");
      node.append("text").attr("class", "vg-cell-title").attr("x", gradX).attr("y", -H / 2 + 14).attr("text-anchor", "middle").text("grad");
      const data = node.append("text").attr("class", `vg-data${isNonFinite(d.data) ? " vg-nonfinite" : ""}`).attr("x", dataX).attr("y", H / 2 - 9)
        .attr("text-anchor", "middle").text(formatNumber(d.data));
      fitToCell(data.node(), c1);
      const grad = node.append("text").attr("class", "vg-grad").attr("x", gradX).attr("y", H / 2 - 9).attr("text-anchor", "middle");
      const was = node.append("text").attr("class", "vg-was").attr("x", gradX).attr("y", -H / 2 - 7).attr("text-anchor", "middle");
      if (d.op) {
        node.append("circle").attr("class", "vg-op").attr("cx", p.ox).attr("cy", p.oy).attr("r", g.opRadius);
        const op = opText(d);
        node.append("text").attr("class", op.length > 3 ? "vg-op-text vg-op-long" : "vg-op-text").attr("x", p.ox).attr("y", p.oy)
          .attr("dy", "0.35em").attr("text-anchor", "middle").text(op);
      }
      if (d.id === model.output) {
        node.append("text").attr("class", "vg-output-tag").attr("x", dataX).attr("y", -H / 2 - 7).attr("text-anchor", "middle").text("output");
      }
      const badge = node.append("g").attr("class", "vg-badge").attr("transform", `translate(${-W / 2},${-H / 2})`);
      badge.append("circle").attr("r", 11);
      const badgeText = badge.append("text").attr("dy", "0.35em").attr("text-anchor", "middle");
      const warnings = (model.warnings ?? []).filter((w) => w.node === d.id);
      if (warnings.length) {
        const mark = node.append("g").attr("class", "vg-origin-mark").attr("transform", `translate(${W / 2},${-H / 2})`);
        mark.append("path").attr("d", "M0,-12 L11,8 L-11,8 Z");
        mark.append("text").attr("dy", "0.3em").attr("y", 1).attr("text-anchor", "middle").text("!");
        mark.append("title").text(warnings.map((w) => w.message).join("\n"));
      }
      if (notes.has(d.id)) {
        // Not by colour alone: a ✗ on the record's corner and the two grads in words under it.
        const mark = node.append("g").attr("class", "vg-wrong-mark").attr("transform", `translate(${W / 2},${H / 2})`);
        mark.append("circle").attr("r", 10);
        mark.append("text").attr("dy", "0.35em").attr("text-anchor", "middle").text("✗");
        node.append("text").attr("class", "vg-wrong-note").attr("x", 0).attr("y", H / 2 + 17).attr("text-anchor", "middle").text(notes.get(d.id));
      }
      parts[d.id] = { box: box.node(), grad: grad.node(), was: was.node(), badge: badgeText.node(), texts: this.querySelectorAll("text") };
    });
  }

  /** A number narrowed to its cell where it is longer than the cell holds (-0.046149, -1.1102e-16), so that
   * the data and grad cells never run into each other; counted in characters, not measured (no layout). */
  function fitToCell(text, cellWidth) {
    const room = cellWidth - CELL_PADDING;
    if (text.textContent.length * NUMBER_WIDTH > room) {
      text.setAttribute("textLength", room);
      text.setAttribute("lengthAdjust", "spacingAndGlyphs");
    } else if (text.hasAttribute("textLength")) {
      text.removeAttribute("textLength");
      text.removeAttribute("lengthAdjust");
    }
  }

  function translate(id) {
    const p = placement.nodes[id];
    return `translate(${p.cx},${p.cy})`;
  }

  // An update ("a.grad += 3 × 1") goes on two lines, so it fits between the records.
  function setPill(label, text) {
    const { lines, width, height } = pillSize(text);
    label.select("rect").attr("x", -width / 2).attr("y", -height / 2).attr("width", width).attr("height", height);
    const tspans = label.select("text").selectAll("tspan").data(lines).join("tspan");
    tspans.attr("x", 0).attr("dy", (_, i) => (i === 0 ? `${0.35 - 0.55 * (lines.length - 1)}em` : "1.1em")).text((line) => line);
  }

  /** A node's fixed classes: its kind, and whether it is the output, a warning's origin, wrong by the gradient check. */
  function baseClassOf(id) {
    if (baseClass[id] === undefined) {
      const d = model.nodes[id];
      baseClass[id] = `vg-node vg-kind-${d.op ? "op" : d.label === null ? "const" : "named"}${d.id === model.output ? " vg-output" : ""}${warned.has(d.id) ? " vg-origin" : ""}${notes.has(d.id) ? " is-wrong" : ""}`;
    }
    return baseClass[id];
  }

  function classFor(id, flags) {
    let cls = baseClassOf(id);
    for (const [bit, name] of STATE_CLASSES) if (flags & bit) cls += name;
    if (id === pinned) cls += " is-pinned";
    if (id === hovered) cls += " is-hovered";
    if (linked.has(id)) cls += " is-linked";
    return cls;
  }

  /** Show the walk at one step: grads revealed so far, node states, highlighted edges. */
  function applyFrame(frame) {
    lastFrame = frame;
    if (!model) return;
    if (onCanvas) {
      paintStates();
      drawHotEdges(frame);
      return;
    }
    applyNodes(frame, drawnIds); // a folded graph draws a few hundred of its 100,000 nodes
    drawHotEdges(frame);
    if (compact) drawOverview(frame);
  }

  function applyNodes(frame, ids) {
    const receiving = new Map();
    for (const u of frame.step.updates ?? []) if (!receiving.has(u.child)) receiving.set(u.child, u.before);
    for (const id of ids) {
      const el = nodeEls[id];
      const part = parts[id];
      if (!el || !part) continue; // not drawn yet
      const value = gradOf(frame, id);
      const text = value === null ? "" : formatNumber(value);
      const flags = frame.flags[id];
      if (text === shownGrad[id] && flags === shownFlags[id] && !(flags & FLAG.RECEIVING)) continue;
      shownGrad[id] = text;
      shownFlags[id] = flags;
      el.setAttribute("class", classFor(id, flags));
      const node = model.nodes[id];
      if (compact) {
        const check = notes.has(id) ? `  ✗ ${notes.get(id)}` : "";
        part.text.textContent = `${nodeName(node)}  ${formatNumber(node.data)} │ ${text || "·"}${check}`;
        continue;
      }
      part.grad.textContent = text;
      fitToCell(part.grad, placement.geometry.box.cells[2]);
      part.grad.setAttribute("class", isNonFinite(value) ? "vg-grad vg-nonfinite" : "vg-grad");
      part.was.textContent = !(flags & FLAG.RECEIVING) ? "" : receiving.has(id) ? `was ${formatNumber(receiving.get(id))}` : "seed";
      const position = tl.sortPosition[id];
      part.badge.textContent = flags & FLAG.SORTED && position >= 0 ? String(position) : "";
      const check = notes.has(id) ? `; wrong, ${notes.get(id)}` : "";
      part.box.setAttribute("aria-label", `${nodeName(node)}: data ${formatNumber(node.data)}, grad ${text || "not reached yet"}${check}`);
    }
  }

  /** One path of the records of the given nodes. */
  function rectsPath(ids) {
    const { width: W, height: H } = placement.geometry.box;
    let d = "";
    for (const id of ids) {
      const p = placement.nodes[id];
      d += `M${Math.round(p.cx - W / 2)},${Math.round(p.cy - H / 2)}h${W}v${H}h${-W}z`;
    }
    return d;
  }

  function drawOverview(frame) {
    const reached = [];
    const bit = frame.stage === "sort" ? FLAG.SORTED : FLAG.GRAD;
    for (let id = 0; id < frame.flags.length; id++) if (frame.flags[id] & bit) reached.push(id);
    overviewState.attr("d", rectsPath(reached)).classed("vg-overview-grads", frame.stage !== "sort");
    const p = frame.focus === null ? null : placement.nodes[frame.focus];
    overviewFocus.classed("is-visible", p !== null);
    if (p) overviewFocus.attr("cx", p.cx).attr("cy", p.cy);
  }

  function drawHotEdges(frame) {
    for (const key of hotEdges) {
      const el = edgeEls.get(key);
      if (!el) continue;
      el.path.classList.remove("is-update", "is-descend", "is-skip");
      el.path.setAttribute("marker-end", `url(#vg-arrow-${uid})`);
      el.label.classList.remove("is-update", "is-descend", "is-skip");
      setPill(d3.select(el.label), formatNumber(model.nodes[el.edge.parent].local_grads[el.edge.slot]));
    }
    hotEdges = [];
    if (compact) {
      const byKey = new Map(frame.edges.map((e) => [`${e.parent}:${e.slot}`, e]));
      const hot = frame.edges.length ? placement.edges.filter((e) => byKey.has(e.key)) : [];
      hotEdgeLayer.selectAll("path").data(hot, (e) => e.key).join("path")
        .attr("class", (e) => `vg-edge is-${byKey.get(e.key).kind}`).attr("d", (e) => e.d);
      return;
    }
    const drawn = []; // a folded box's step updates thousands of edges, most of them inside boxes
    for (const e of frame.edges) {
      if (placement.nodes[e.parent]?.hidden) continue; // an edge from inside a box is not drawn
      const key = `${e.parent}:${e.slot}`;
      const el = edgeEls.get(key);
      if (!el) continue;
      drawn.push(e);
      hotEdges.push(key);
      el.path.classList.add(`is-${e.kind}`);
      el.path.setAttribute("marker-end", `url(#vg-arrow-hot-${uid})`);
      el.path.parentNode.appendChild(el.path); // on top of the other edges
      el.label.classList.add(`is-${e.kind}`);
      el.label.parentNode.appendChild(el.label);
    }
    drawCallouts(drawn.filter((e) => e.text));
  }

  /** A pill's lines and size: one line, or two when the text is an update. */
  function pillSize(text) {
    const split = text.indexOf(" += ");
    const lines = split < 0 ? [text] : [text.slice(0, split + 3), text.slice(split + 4)];
    return { lines, width: Math.max(...lines.map((line) => line.length)) * (charWidth ?? PILL.charWidth) + PILL.padding, height: PILL.height * lines.length - 2 * (lines.length - 1) };
  }

  function buildObstacles() {
    const { box, opRadius } = placement.geometry;
    const boxes = [];
    const folded = new Set(); // the hidden nodes of a folded box share one position: one obstacle for them all
    for (const p of placement.nodes) {
      if (!p || folded.has(p)) continue;
      if (p.hidden) folded.add(p);
      // The record, with the "was …" / "output" tags above it and the order badge at its corner.
      boxes.push({ x0: p.cx - box.width / 2 - 11, y0: p.cy - box.height / 2 - 20, x1: p.cx + box.width / 2, y1: p.cy + box.height / 2 });
      if (opRadius) boxes.push({ x0: p.cx + p.ox - opRadius, y0: p.cy + p.oy - opRadius, x1: p.cx + p.ox + opRadius, y1: p.cy + p.oy + opRadius });
    }
    for (const e of placement.edges) {
      const { width, height } = pillSize(formatNumber(model.nodes[e.parent].local_grads[e.slot]));
      boxes.push({ x0: e.lx - width / 2, y0: e.ly - height / 2, x1: e.lx + width / 2, y1: e.ly + height / 2 });
    }
    return boxes;
  }

  /** An edge's pointAt(t) for placeCallouts, kept with the edge while its path is the same (a glide changes it). */
  function pointsAlong(el) {
    const d = el.path.getAttribute("d");
    if (el.measured !== d) Object.assign(el, { measured: d, pointAt: pathPointAt(d) });
    return el.pointAt;
  }

  /** The step's updates as callouts beside their edges, clear of every record and label. */
  function drawCallouts(updates) {
    if (updates.length === 0) {
      updateLayer.selectAll("*").remove();
      return;
    }
    obstacles ??= buildObstacles();
    const across = placement.direction === "BT" ? [1, 0] : [0, 1];
    const requests = updates.map((e) => ({ ...pillSize(e.text), across, pointAt: pointsAlong(edgeEls.get(`${e.parent}:${e.slot}`)) }));
    const spots = placeCallouts(obstacles, requests, { x0: -FIT_MARGIN, y0: -FIT_MARGIN, x1: placement.width + FIT_MARGIN, y1: placement.height + FIT_MARGIN });
    const callouts = updateLayer.selectAll("g.vg-update-label").data(updates.map((e, i) => ({ ...e, ...spots[i] })))
      .join((enter) => {
        const g = enter.append("g").attr("class", "vg-update-label");
        g.append("path").attr("class", "vg-label-leader");
        g.append("rect").attr("class", "vg-edge-pill").attr("rx", 9);
        g.append("text").attr("class", "vg-edge-text").attr("text-anchor", "middle");
        return g;
      });
    callouts.attr("data-edge", (c) => `${c.parent}:${c.slot}`).attr("transform", (c) => `translate(${c.x},${c.y})`)
      .classed("is-moved", (c) => c.moved);
    callouts.each(function (c) {
      const g = d3.select(this);
      setPill(g, c.text);
      // A callout moved off its edge points back to that edge's local-gradient pill.
      const edge = edgeEls.get(`${c.parent}:${c.slot}`).edge;
      g.select("path.vg-label-leader").attr("d", c.moved ? `M0,0L${edge.lx - c.x},${edge.ly - c.y}` : null);
    });
  }

  function redrawNode(id) {
    if (onCanvas) {
      paintStates();
      return;
    }
    if (id === null || !lastFrame || id >= shownFlags.length) return;
    shownFlags[id] = FORCE;
    applyNodes(lastFrame, [id]);
  }

  function setHovered(id) {
    const before = hovered;
    hovered = id;
    redrawNode(before);
    redrawNode(id);
    if (compact || !placement) return;
    for (const el of edgeEls.values()) {
      const on = id !== null && (el.edge.parent === id || el.edge.child === id);
      el.path.classList.toggle("is-related", on);
      el.label.classList.toggle("is-related", on);
      if (on) el.path.parentNode.appendChild(el.path); // over the edges it shares its first bends with (a trunk)
    }
    raiseHotEdges();
  }

  /** The walk's edges back on top of every other (after edges were raised for a hover or a flow). */
  function raiseHotEdges() {
    for (const key of hotEdges) {
      const path = edgeEls.get(key)?.path;
      if (path) path.parentNode.appendChild(path);
    }
  }

  /** Mark the nodes a line of code made (codelink.js); [] clears. */
  function setLinked(ids) {
    const before = linked;
    linked = new Set(ids);
    for (const id of before) if (!linked.has(id)) redrawNode(id);
    for (const id of linked) if (!before.has(id)) redrawNode(id);
  }

  /** Mark one node as the one whose story is shown (null: none). */
  function pin(id) {
    const before = pinned;
    pinned = id;
    redrawNode(before);
    redrawNode(id);
  }

  function viewSize() {
    const [width, height] = size ?? [container.clientWidth, container.clientHeight];
    return [width || 800, height || 500];
  }

  /**
   * What nobody can read is not drawn. Chromium lays out every <text> again on each change of zoom
   * scale (less since .vg-svg's text-rendering is geometricPrecision), even inside a hidden group,
   * unless the text itself is display: none: 2,000 compact records,
   * or the ~3,700 texts of a 400-node full view, made zoom frames 30-150 ms. Compact view: records out
   * of view are not drawn. Full view: the texts of records and edge labels out of view are not, nor
   * any text below FULL_TEXT_ZOOM; the records and pills stay (each record is a focusable button). Placement only: no
   * layout is read.
   */
  function cull(t, ids = drawnIds) {
    if (!placement) return;
    const [vw, vh] = viewSize();
    const { width: W, height: H } = placement.geometry.box;
    const x0 = -t.x / t.k - W, y0 = -t.y / t.k - H, x1 = (vw - t.x) / t.k + W, y1 = (vh - t.y) / t.k + H;
    const far = !compact && t.k < FULL_TEXT_ZOOM;
    for (const id of ids) {
      const p = placement.nodes[id];
      const el = nodeEls[id];
      if (!p || !el) continue;
      const out = far || p.cx < x0 || p.cx > x1 || p.cy < y0 || p.cy > y1 ? 1 : 0;
      if (out === culled[id]) continue;
      culled[id] = out;
      const display = out ? "none" : "";
      if (compact) el.style.display = display;
      for (const text of parts[id].texts) text.style.display = display;
    }
    if (compact) return;
    for (const el of edgeEls.values()) {
      const { lx, ly } = el.edge;
      const out = far || lx < x0 || lx > x1 || ly < y0 || ly > y1;
      if (out === el.culled || !el.text) continue;
      el.culled = out;
      el.text.style.display = out ? "none" : "";
    }
  }

  /** The drawn graph's size, and the room its badges and tags take outside the records. */
  function extent() {
    return placement && { width: placement.width, height: placement.height, margin: FIT_MARGIN, direction: placement.direction };
  }

  /** A node's record and op circle, with room for its tags, in graph coordinates. */
  function nodeBounds(id) {
    const p = placement?.nodes[id];
    if (!p) return null;
    const { box, opRadius } = placement.geometry;
    const x0 = Math.min(p.cx - box.width / 2, p.cx + p.ox - opRadius);
    const y0 = Math.min(p.cy - box.height / 2, p.cy + p.oy - opRadius);
    return { x0, y0: y0 - 20, x1: p.cx + box.width / 2, y1: p.cy + box.height / 2 + (notes.has(id) ? 24 : 0) };
  }

  /** Record text size at scale 1, in px: the data and grad text of a record. */
  const textSize = () => (compact ? 11 : 16);
  /** The zoom at which one node is shown to be read (a warning's Show button). */
  const revealZoom = () => (compact ? 1 : 0.8);

  /** Widths and colours of the edges that carried a gradient (flow.js's flowAt), or null for none. */
  function showFlow(flows) {
    svg.classed("vg-grad-encoding", flows !== null);
    if (compact) return;
    // The edges out of one value share their first bends (app/layout.py): drawn widest first, each flow's
    // colour shows along the shared part as a band around the narrower ones.
    const outOf = new Map(); // child -> [[flow width, path]] of its edges with a flow
    for (const [key, el] of edgeEls) {
      const flow = flows?.get(key);
      el.path.classList.toggle("has-flow", Boolean(flow));
      for (const sign of ["positive", "negative", "zero"]) el.path.classList.toggle(`is-${sign}`, flow?.sign === sign);
      if (!flow) {
        el.path.style.removeProperty("--vg-flow-width");
        continue;
      }
      el.path.style.setProperty("--vg-flow-width", `${flow.width.toFixed(2)}px`);
      if (!outOf.has(el.edge.child)) outOf.set(el.edge.child, []);
      outOf.get(el.edge.child).push([flow.width, el.path]);
    }
    for (const paths of outOf.values()) {
      if (paths.length < 2) continue;
      paths.sort((a, b) => b[0] - a[0]);
      for (const [, path] of paths) path.parentNode.appendChild(path);
    }
    raiseHotEdges();
  }

  return {
    element: svg.node(),
    setGraph, applyFrame, pin, setLinked, showFlow, setView, size: viewSize, extent, nodeBounds, textSize, revealZoom,
  };
}
