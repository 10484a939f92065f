// The camera: where the graph is seen from (pan and zoom), and keeping the step being shown in
// view, at a zoom where a record's numbers can be read.
//
// It speaks to the renderer only through the renderer interface (render.js's header): it reads
// the learner's pan and zoom gestures on renderer.element and tells the renderer the view to draw
// with renderer.setView. While the walk plays, steps, scrubs or jumps, the view moves to the
// current node and the inputs its edges are updating. When the whole graph fits at a readable
// size it simply stays fitted. The learner's own pan or zoom (or Fit, + and −) pauses following
// until Follow is pressed again. Moves are short transitions, or none under prefers-reduced-motion.

import { make } from "./courseapi.js";
import d3 from "./d3.js";
import { track } from "./motion.js";

export const MIN_TEXT_PX = 12; // the smallest a record's data and grad may be drawn, in CSS px
const MOVE_MS = 280;
const FIT_MS = 300;
const ZOOM_MS = 200;
const MARGIN = 24; // px a followed node keeps from the edge of the view
const ZOOM_MARGIN = 1.08; // following zooms this much past the smallest readable size
const MAX_FIT_SCALE = 1.5;
const MAX_SCALE = 4;
// The smallest zoom; also what Fit uses in a panel with no room left for the graph (an embed whose
// frame is no taller than its controls): padding alone would make the fitted scale negative.
const MIN_SCALE = 0.005;
const FIT_PADDING = 28;

const reducedMotion = () => window.matchMedia?.("(prefers-reduced-motion: reduce)").matches ?? false;

// What a card covers of the panel when no card is open (camera.cover).
const NOT_COVERED = Object.freeze({ top: 0, right: 0, bottom: 0, left: 0 });

/**
 * `renderer` is render.js's view (or any renderer with its interface); `buttons` the Follow and
 * Move graph toggles (addViewButtons); `onUserView()` hears every pan or zoom the learner makes
 * with the mouse, wheel or touch (not the ones the page makes).
 */
export function createCamera(renderer, { buttons = {}, textPx = MIN_TEXT_PX, follow = true, onUserView = () => {} } = {}) {
  const button = buttons.follow;
  let following = follow;
  let minText = textPx;
  let frame = null;
  // An area shown in place of the walk's step (a folded graph's boxes as it opens, a box just opened):
  // kept through a resize or presenter's text size until the walk moves on (release) or the learner moves the view.
  let heldArea = null;
  // The panel's edges a card covers (a pinned node's story: storycard.js), in px: the view fits and follows
  // within the rest, so the card hides none of what the camera shows.
  let covered = NOT_COVERED;
  let kept = null; // the node the card tells of: kept in view with the step's nodes while the card is open
  const element = d3.select(renderer.element);

  /** The part of the panel the camera shows the graph in: all of it but what a card covers. */
  function room() {
    const [vw, vh] = renderer.size();
    const { top, right, bottom, left } = covered;
    return { x: left, y: top, width: vw - left - right, height: vh - top - bottom };
  }

  // ---- pan and zoom ----
  // One finger on a touch screen scrolls the page (touch-action: pan-y); two fingers, or one
  // while "Move graph" is on (moveByTouch), pan and zoom the graph. The extent is given, not
  // measured: d3 would read the element's size and force a layout.
  let moveByTouch = false;
  const zoom = d3.zoom().scaleExtent([MIN_SCALE, MAX_SCALE]).extent(() => [[0, 0], renderer.size()])
    .filter((event) => (!event.ctrlKey || event.type === "wheel") && !event.button && (event.type !== "touchstart" || moveByTouch || event.touches.length > 1))
    .on("zoom", (event) => {
      if (event.sourceEvent) {
        setFollowing(false);
        onUserView();
      }
      renderer.setView(event.transform);
    });
  element.call(zoom).on("dblclick.zoom", null);

  /** Move the view to `target` (a d3 zoom transform), over `duration` ms or at once. */
  function moveTo(target, duration) {
    element.interrupt();
    if (duration > 0) track(renderer.element, element.transition().duration(duration).call(zoom.transform, target));
    else element.call(zoom.transform, target);
  }

  /** Room around the fitted graph: less on a narrow panel (a phone), where every pixel counts. */
  function fitRoom(width, margin) {
    return { padding: Math.min(FIT_PADDING, width / 60), margin: Math.min(margin, width / 40) };
  }

  /** The scale at which fit() shows the whole graph, and that view. */
  function fitted() {
    const extent = renderer.extent();
    if (!extent) return null;
    const { x, y, width: vw, height: vh } = room();
    const { padding, margin } = fitRoom(vw, extent.margin);
    const w = extent.width + 2 * margin;
    const h = extent.height + 2 * margin;
    const k = Math.max(MIN_SCALE, Math.min(MAX_FIT_SCALE, (vw - 2 * padding) / w, (vh - 2 * padding) / h));
    return { k, target: d3.zoomIdentity.translate(x + (vw - w * k) / 2 + margin * k, y + (vh - h * k) / 2 + margin * k).scale(k) };
  }

  /** Zoom and pan so the whole graph fits. */
  function fit(animate = true) {
    const view = fitted();
    if (view) moveTo(view.target, animate ? FIT_MS : 0);
  }

  const fitScale = () => fitted()?.k ?? 1;

  function zoomBy(factor) {
    track(renderer.element, element.transition().duration(ZOOM_MS).call(zoom.scaleBy, factor));
  }

  /** The visible part of the graph (of the panel, or `area`: room()'s), in graph coordinates, and the scale. */
  function visible(area = null) {
    const [pw, ph] = renderer.size();
    const { x, y, width: vw, height: vh } = area ?? { x: 0, y: 0, width: pw, height: ph };
    const t = d3.zoomTransform(renderer.element);
    return { k: t.k, x0: (x - t.x) / t.k, y0: (y - t.y) / t.k, x1: (x + vw - t.x) / t.k, y1: (y + vh - t.y) / t.k, width: vw, height: vh };
  }

  /** Centre the graph point (cx, cy) at scale k in the room the camera has, over `duration` ms. */
  function centreOn(cx, cy, k, duration) {
    const { x, y, width: vw, height: vh } = room();
    moveTo(d3.zoomIdentity.translate(x + vw / 2 - cx * k, y + vh / 2 - cy * k).scale(k), duration);
  }

  /** Centre a node, zoomed in enough to read it. */
  function reveal(id) {
    const box = renderer.nodeBounds(id);
    if (!box) return;
    const k = Math.max(d3.zoomTransform(renderer.element).k, renderer.revealZoom());
    centreOn((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, k, FIT_MS);
  }

  function setTouchMove(on) {
    moveByTouch = on;
    renderer.element.classList.toggle("vg-touch-move", on);
  }

  // ---- following the walk ----
  function setFollowing(on, always = false) {
    if (on === following && !always) return; // every wheel notch pauses: touch the button once
    following = on;
    hold(null);
  }
  /** Show `area` in place of the walk's step (null: the step again); Follow reads pressed only while the step is shown. */
  function hold(area) {
    heldArea = area;
    const on = following && !area;
    button?.setAttribute("aria-pressed", String(on));
    if (button) button.title = on ? "The view follows the walk; pan or zoom to stop it" : "Follow the walk again";
  }
  button?.addEventListener("click", () => {
    if (heldArea) hold(null); // the area shown in place of the walk: back to the walk, still following
    else setFollowing(!following);
    if (following) show(frame, { force: true });
  });
  buttons.move?.addEventListener("click", () => {
    const on = buttons.move.getAttribute("aria-pressed") !== "true";
    buttons.move.setAttribute("aria-pressed", String(on));
    setTouchMove(on);
  });

  /** The smallest scale at which records' numbers measure at least minText px. */
  const readableScale = () => minText / renderer.textSize();
  /** Whether the whole graph reads when fitted (then following the walk keeps it all in view). */
  const readsWhole = () => fitScale() >= readableScale();

  /** Which nodes a step is about: the current node and the inputs it is updating or exploring (and the node a
   * card tells of). */
  function targets(f) {
    const current = f?.focus ?? f?.step?.node; // the first step has no focus yet: the output
    if (current === null || current === undefined) return [];
    return [current, ...f.edges.map((e) => e.child), ...(kept === null ? [] : [kept])];
  }

  function union(boxes) {
    return boxes.reduce((a, b) => ({ x0: Math.min(a.x0, b.x0), y0: Math.min(a.y0, b.y0), x1: Math.max(a.x1, b.x1), y1: Math.max(a.y1, b.y1) }));
  }

  /** Move so the frame's nodes are in view and readable; `force` moves even if they already are; `toKept`: the
   * node a card was just opened for comes before the step's current node where the two do not fit together. */
  function show(f, { force = false, toKept = false } = {}) {
    frame = f;
    if (!following || !f) return;
    if (heldArea) {
      if (force) showArea(heldArea, { animate: false });
      return;
    }
    const duration = reducedMotion() ? 0 : MOVE_MS;
    if (readsWhole()) { // show it all
      const view = visible(room());
      if (force || Math.abs(view.k - fitScale()) > 1e-3) fit(duration > 0);
      return;
    }
    const readable = readableScale();
    const ids = targets(f);
    if (ids.length === 0) return;
    const focusBox = renderer.nodeBounds(ids[0]);
    if (!focusBox) return;
    const view = visible(room());
    // A little above the minimum (and no more than 1.6× it, if the view was closer).
    const k = Math.max(readable * ZOOM_MARGIN, Math.min(view.k, readable * 1.6));
    const margin = MARGIN / k;
    const fits = (b) => (b.x1 - b.x0) + 2 * margin <= view.width / k && (b.y1 - b.y0) + 2 * margin <= view.height / k;
    // The step's nodes (and the node a card tells of) if they fit; else the current node with that one; else the
    // one a card was just opened for, or the current node.
    const groups = [ids, ...(kept === null ? [] : [[ids[0], kept]]), [toKept && kept !== null ? kept : ids[0]]];
    const drawn = groups.map((group) => group.map((id) => renderer.nodeBounds(id)).filter(Boolean));
    const boxes = drawn.filter((group) => group.length > 0).map(union); // a folded graph may draw none of a group
    const box = boxes.find(fits) ?? boxes[boxes.length - 1] ?? focusBox;
    const inside = view.k >= readable - 1e-6 && box.x0 - margin >= view.x0 && box.x1 + margin <= view.x1 && box.y0 - margin >= view.y0 && box.y1 + margin <= view.y1;
    if (inside && !force) return;
    const [cx, cy] = withinGraph((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, k, margin);
    // At the graph's edge the view may already be where it stops (the node nearer the edge than `margin`)
    const there = Math.abs(view.k - k) < 1e-3 && Math.hypot((view.x0 + view.x1) / 2 - cx, (view.y0 + view.y1) / 2 - cy) < 0.5;
    if (there && !force) return;
    centreOn(cx, cy, k, duration);
  }

  /**
   * The centre (cx, cy) of a view at scale k moved along the flow as far towards the graph as it goes while
   * the view stays on the graph (its tags and `margin` around it): the output, at the flow's end, is shown
   * with as many of its inputs as fit instead of empty space beyond it. The node stays in view (it lies inside
   * the graph), and across the flow it stays centred, clear of the notes along the panel's foot.
   */
  function withinGraph(cx, cy, k, margin) {
    const extent = renderer.extent();
    if (!extent) return [cx, cy];
    const { width: vw, height: vh } = room();
    const pad = Math.max(extent.margin, margin);
    const clamp = (c, seen, length) => (length + 2 * pad <= seen ? length / 2 : Math.min(Math.max(c, seen / 2 - pad), length + pad - seen / 2));
    return extent.direction === "BT" ? [cx, clamp(cy, vh / k, extent.height)] : [clamp(cx, vw / k, extent.width), cy];
  }

  /** Go to one node (the gradient check's first wrong one): the whole graph when it can all be
   * read, else that node centred at a readable scale. Following the walk is kept as it was. */
  function showNode(id) {
    const duration = reducedMotion() ? 0 : MOVE_MS;
    if (readsWhole()) {
      fit(duration > 0);
      return;
    }
    const box = renderer.nodeBounds(id);
    if (!box) return;
    const k = readableScale() * ZOOM_MARGIN;
    const [cx, cy] = withinGraph((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, k, MARGIN / k);
    centreOn(cx, cy, k, duration);
  }

  /**
   * Show an area of the graph (a scope just opened, the boxes of a graph that opens folded) in place of
   * the walk's step, until release(): all of it when it reads so; else, at a readable scale, its top left
   * (where its fold button is) unless a view centred on box.centre (the median of its items, box.points)
   * holds more than twice as many of them.
   */
  function showArea(box, { animate = true } = {}) {
    if (!box) return;
    if (following) hold(box);
    const { width: vw, height: vh } = room();
    const { padding } = fitRoom(vw, 0);
    const whole = Math.min(MAX_FIT_SCALE, (vw - 2 * padding) / (box.x1 - box.x0), (vh - 2 * padding) / (box.y1 - box.y0));
    const readable = readableScale();
    const duration = reducedMotion() || !animate ? 0 : MOVE_MS;
    if (whole >= readable) {
      centreOn((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, whole, duration);
      return;
    }
    const k = readable * ZOOM_MARGIN;
    const [w, h] = [(vw - 2 * padding) / k, (vh - 2 * padding) / k];
    const centre = box.centre ?? { x: (box.x0 + box.x1) / 2, y: (box.y0 + box.y1) / 2 };
    const [cx, cy] = [Math.min((box.x0 + box.x1) / 2, box.x0 + w / 2), Math.min((box.y0 + box.y1) / 2, box.y0 + h / 2)];
    const held = (x, y) => (box.points ?? []).filter(([px, py]) => Math.abs(px - x) <= w / 2 && Math.abs(py - y) <= h / 2).length;
    const topLeft = held(cx, cy) * 2 >= held(centre.x, centre.y);
    centreOn(topLeft ? cx : centre.x, topLeft ? cy : centre.y, k, duration);
  }

  setFollowing(follow, true);
  return {
    show,
    showArea,
    showNode,
    fit,
    fitScale,
    readsWhole,
    /** The walk moved on: show its steps again in place of the area showArea showed. */
    release: () => {
      if (heldArea) hold(null);
    },
    zoomBy,
    reveal,
    visible,
    setTouchMove,
    /** The learner moved the view: stop following until Follow is pressed. */
    pause: () => setFollowing(false),
    get following() {
      return following;
    },
    /** Presenter mode's text size: the smallest px a record's numbers may be drawn at. */
    setTextSize(px) {
      minText = px;
      show(frame, { force: true });
    },
    get textSize() {
      return minText;
    },
    /** A card covers the panel's edges by these px ({top, right, bottom, left}; null: none): show the graph beside
     * it, with the node it tells of (`node`) in view too. */
    cover(edges, node = null) {
      const next = { ...NOT_COVERED, ...edges };
      const same = Object.keys(next).every((edge) => next[edge] === covered[edge]) && node === kept;
      kept = edges ? node : null;
      if (same) return;
      const whole = fitted(); // the view shows the whole graph (the embed's, not following): it still does after
      const t = d3.zoomTransform(renderer.element);
      const wasWhole = whole && Math.abs(t.k - whole.k) < 1e-3 && Math.hypot(t.x - whole.target.x, t.y - whole.target.y) < 0.5;
      covered = next;
      if (following && frame) show(frame, { force: true, toKept: kept !== null });
      else if (following || wasWhole) fit();
    },
    /** The panel changed size: keep showing what was shown (the whole graph, or the step). */
    refresh() {
      if (frame) show(frame, { force: true });
      else fit(false);
    },
  };
}

/** The Follow toggle (and, for touch screens, Move graph), put before the Fit button; returns {follow, move}. */
export function addViewButtons(fitButton) {
  const follow = make("button", { className: fitButton.className, text: "Follow", attrs: { type: "button", "data-vg": "follow", "aria-pressed": "true" } });
  const move = make("button", {
    className: `${fitButton.className} vg-touch-only`,
    text: "Move graph",
    attrs: {
      type: "button",
      "data-vg": "move-graph",
      title: "On: one finger pans and pinches the graph. Off: one finger scrolls the page; two fingers move the graph.",
      "aria-pressed": "false",
    },
  });
  fitButton.before(follow);
  fitButton.after(move);
  return { follow, move };
}
