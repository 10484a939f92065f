// The camera: keeps the step being shown in view, at a zoom where a record's numbers can be read.
//
// While the walk plays, steps, scrubs or jumps, the view moves to the current node and the inputs
// its edges are updating. When the whole graph fits at a readable size it simply stays fitted.
// The learner's own pan or zoom (or Fit, + and −) pauses following until Follow is pressed again.
// Moves are short transitions, or none under prefers-reduced-motion.

import { make } from "./courseapi.js";

export const MIN_TEXT_PX = 12; // the smallest a record's data and grad may be drawn, in CSS px
const MOVE_MS = 280;
const MARGIN = 24; // px a followed node keeps from the edge of the view
const ZOOM_MARGIN = 1.08; // following zooms this much past the smallest readable size

const reducedMotion = () => window.matchMedia?.("(prefers-reduced-motion: reduce)").matches ?? false;

/** `graph` is render.js's view; `button` the Follow toggle (aria-pressed). */
export function createCamera(graph, { button, textPx = MIN_TEXT_PX, follow = true } = {}) {
  let following = follow;
  let minText = textPx;
  let frame = null;

  function setFollowing(on, always = false) {
    if (on === following && !always) return; // every wheel notch pauses: touch the button once
    following = on;
    button?.setAttribute("aria-pressed", String(on));
    if (button) button.title = on ? "The view follows the walk; pan or zoom to stop it" : "Follow the walk again";
  }
  button?.addEventListener("click", () => {
    setFollowing(!following);
    if (following) show(frame, { force: true });
  });

  /** The smallest scale at which records' numbers measure at least minText px. */
  const readableScale = () => minText / graph.textSize();

  /** Which nodes a step is about: the current node and the inputs it is updating or exploring. */
  function targets(f) {
    const current = f?.focus ?? f?.step?.node; // the first step has no focus yet: the output
    if (current === null || current === undefined) return [];
    return [current, ...f.edges.map((e) => e.child)];
  }

  function union(boxes) {
    return boxes.reduce((a, b) => ({ x0: Math.min(a.x0, b.x0), y0: Math.min(a.y0, b.y0), x1: Math.max(a.x1, b.x1), y1: Math.max(a.y1, b.y1) }));
  }

  /** Move so the frame's nodes are in view and readable; `force` moves even if they already are. */
  function show(f, { force = false } = {}) {
    frame = f;
    if (!following || !f) return;
    const duration = reducedMotion() ? 0 : MOVE_MS;
    const readable = readableScale();
    if (graph.fitScale() >= readable) { // the whole graph can be read: show it all
      const view = graph.visible();
      if (force || Math.abs(view.k - graph.fitScale()) > 1e-3) graph.fit(duration > 0);
      return;
    }
    const ids = targets(f);
    if (ids.length === 0) return;
    const focusBox = graph.nodeBounds(ids[0]);
    if (!focusBox) return;
    const view = graph.visible();
    // A little above the minimum (and no more than 1.6× it, if the view was closer).
    const k = Math.max(readable * ZOOM_MARGIN, Math.min(view.k, readable * 1.6));
    const margin = MARGIN / k;
    const whole = union(ids.map((id) => graph.nodeBounds(id)).filter(Boolean));
    const fits = (b) => (b.x1 - b.x0) + 2 * margin <= view.width / k && (b.y1 - b.y0) + 2 * margin <= view.height / k;
    const box = fits(whole) ? whole : focusBox;
    const inside = view.k >= readable - 1e-6 && box.x0 - margin >= view.x0 && box.x1 + margin <= view.x1 && box.y0 - margin >= view.y0 && box.y1 + margin <= view.y1;
    if (inside && !force) return;
    graph.centreOn((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, k, duration);
  }

  setFollowing(follow, true);
  return {
    show,
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
    /** The panel changed size: keep showing what was shown (the whole graph, or the step). */
    refresh() {
      if (frame) show(frame, { force: true });
      else graph.fit(false);
    },

  };
}

/** The Follow toggle (and, for touch screens, Move graph), put before the Fit button; returns Follow. */
export function addViewButtons(fitButton, graph) {
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
  move.addEventListener("click", () => {
    const on = move.getAttribute("aria-pressed") !== "true";
    move.setAttribute("aria-pressed", String(on));
    graph.setTouchMove(on);
  });
  fitButton.before(follow);
  fitButton.after(move);
  return follow;
}
