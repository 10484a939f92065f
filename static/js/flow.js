// Gradients you can see (optional): once an edge has passed its gradient back, its width shows
// how much (|local × grad|, scaled to the largest in the graph) and its colour the sign: green
// adds to the input's grad, red subtracts, dotted passes nothing. A legend under the graph says so.
// Read from the timeline's recorded updates; nothing is recomputed.

import { make } from "./courseapi.js";

const MIN_WIDTH = 1.5;
const MAX_WIDTH = 9;

/** Per edge "parent:slot", the updates it carried: [{step, delta}] in step order. */
export function edgeFlows(tl) {
  const flows = new Map();
  let largest = 0;
  for (const c of tl.contributed) { // every update a node received, node by node
    const key = `${c.parent}:${c.slot}`;
    if (!flows.has(key)) flows.set(key, []);
    flows.get(key).push({ step: c.step, delta: c.delta });
    if (Number.isFinite(c.delta)) largest = Math.max(largest, Math.abs(c.delta));
  }
  return { flows, largest };
}

/** What each edge shows at step k: {key: {width, sign}} for the edges that have passed a gradient. */
export function flowAt({ flows, largest }, k) {
  const shown = new Map();
  for (const [key, list] of flows) {
    let delta = null;
    for (const f of list) if (f.step <= k) delta = f.delta;
    if (delta === null) continue;
    const share = Number.isFinite(delta) ? (largest > 0 ? Math.abs(delta) / largest : 0) : 1;
    const sign = Number.isNaN(delta) ? "zero" : delta > 0 ? "positive" : delta < 0 ? "negative" : "zero";
    shown.set(key, { width: MIN_WIDTH + (MAX_WIDTH - MIN_WIDTH) * Math.sqrt(share), sign });
  }
  return shown;
}

/** The "Gradient flow" toggle, put after `anchor`, and the legend under `graphBox`; returns the toggle. */
export function addFlowToggle(anchor, graphBox, onChange) {
  const button = make("button", {
    className: anchor.className.replace(/\bvg-touch-only\b/, "").trim(),
    text: "Gradient flow",
    attrs: { type: "button", "data-vg": "flow", title: "Edge width and colour show the gradient each edge has passed back", "aria-pressed": "false" },
  });
  const legend = make("p", { className: "vg-flow-legend", attrs: { "data-vg": "flow-legend" } });
  const key = (cls) => make("span", { className: `vg-flow-key ${cls}`, attrs: { "aria-hidden": "true" } });
  legend.append(
    "Gradient flow: an edge that has passed its gradient back is as wide as |local × grad| (",
    key("is-thin"), "little,", key("is-positive"), "the most in this graph); ",
    key("is-positive"), "green adds to the input's grad, ", key("is-negative"), "red subtracts; dotted passed 0.",
  );
  graphBox.after(legend);
  button.addEventListener("click", () => {
    const on = button.getAttribute("aria-pressed") !== "true";
    button.setAttribute("aria-pressed", String(on));
    legend.classList.toggle("is-shown", on);
    onChange(on);
  });
  anchor.after(button);
  return button;
}
