// The nudge test on screen (chapter 1): for a leaf x, the server measures (f(x+h) − f(x))/h by
// running the program again with x nudged, and puts it beside the gradient the backward pass
// found. This panel only shows and compares the two numbers; it never computes a gradient.

import { askEngine, make } from "./courseapi.js";
import { formatNumber, isNonFinite, nodeName } from "./format.js";

export const NUDGES = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8];
export const DEFAULT_NUDGE = 1e-4;
/** Measured on its own when the graph is drawn in full; a bigger one waits for a button press. */
const AUTO_MEASURE_NODES = 400;
// Leaves offered in the menu: named ones first. A big graph has thousands of constants, and a
// <select> of 16,000 options made every layout of the page take seconds; a leaf clicked on the
// graph joins the menu.
const LEAVES_LISTED = 300;
const SHOWN_DIGITS = 9;

/**
 * How far apart measured and expected may be at nudge h. The forward difference overshoots a
 * curved function by about h/2 × f'' (2h covers the usual shapes), and at a tiny h the
 * subtraction f(x+h) − f(x) loses digits: about ε/h, with ε a double's precision (100ε/h).
 */
export function allowedDifference(expected, h) {
  return (2 * h + (100 * Number.EPSILON) / h) * Math.max(1, Math.abs(expected));
}

/** "agree", "disagree", or "unmeasurable" where either number is NaN or ±∞: no tolerance applies there. */
export function verdict(measured, expected, h) {
  if (isNonFinite(measured) || isNonFinite(expected)) return "unmeasurable";
  return Math.abs(measured - expected) <= allowedDifference(expected, h) ? "agree" : "disagree";
}

/** Why the nudge test cannot measure a leaf: which number is not finite, and what that means. */
export function unmeasurableReason(measured, expected, output) {
  if (isNonFinite(output)) {
    return `the output is ${formatNumber(output)} here, so f(x+h) − f(x) is not a finite change and cannot be divided by h`;
  }
  if (isNonFinite(expected)) {
    return `the gradient is ${formatNumber(expected)}: the slope here is not a finite number, so there is nothing a finite nudge could measure`;
  }
  return `(f(x+h) − f(x))/h is ${formatNumber(measured)}: the nudged program leaves the function's domain or overflows, so the measurement is not a number`;
}

const VERDICT_TEXT = { agree: "✓ agree", disagree: "✗ disagree", unmeasurable: "cannot measure" };

const nudgeText = (h) => (h >= 1e-4 ? String(h) : `1e-${Math.round(-Math.log10(h))}`);
const show = (x) => formatNumber(x, SHOWN_DIGITS);

function leafName(node) {
  return node.label === null ? `constant ${formatNumber(node.data)} (#${node.id})` : `${node.label} = ${formatNumber(node.data)}`;
}

export function createNudgePanel(container, { graphBox }) {
  let source = null; // {expression, variables} of the graph on screen
  let leaves = []; // leaf nodes of that graph
  let measured = null; // the check response for (source, h)
  let checking = false; // "Check every leaf" was pressed for this graph
  let pending = null;

  const intro = make("p", {
    className: "vg-muted",
    text: "Pick a leaf: the server nudges it by h, runs the program again, and divides the change in the output by h. Straight functions match the gradient exactly; curved ones drift by about h; a very small h loses digits to round-off.",
  });
  const leafSelect = make("select", { attrs: { id: "vg-nudge-leaf" } });
  const hSelect = make("select", { attrs: { id: "vg-nudge-h" } });
  for (const h of NUDGES) hSelect.append(new Option(`h = ${nudgeText(h)}`, String(h), false, h === DEFAULT_NUDGE));
  const controls = make("div", { className: "vg-nudge-controls" });
  controls.append(
    make("label", { text: "Leaf", attrs: { for: "vg-nudge-leaf" } }), leafSelect,
    make("label", { text: "Nudge size h", attrs: { for: "vg-nudge-h" } }), hSelect,
  );

  const figures = make("dl", { className: "vg-nudge-figures", attrs: { "data-vg": "nudge-figures" } });
  const figure = (name, term) => {
    const dd = make("dd", { attrs: { "data-nudge": name } });
    figures.append(make("dt", { text: term }), dd);
    return dd;
  };
  const measuredCell = figure("measured", "measured (f(x+h) − f(x))/h");
  const expectedCell = figure("expected", "expected (the grad)");
  const differenceCell = figure("difference", "difference (measured − expected)");

  const status = make("p", { className: "vg-nudge-status", attrs: { "aria-live": "polite", "data-nudge": "status" } });
  const measureButton = make("button", { className: "vg-button vg-small", text: "Measure", attrs: { type: "button", hidden: "" } });
  const checkButton = make("button", { className: "vg-button vg-small", text: "Check every leaf", attrs: { type: "button" } });
  const tolerance = make("p", { className: "vg-muted vg-nudge-tolerance", attrs: { "data-nudge": "tolerance" } });
  const summary = make("p", { className: "vg-nudge-summary", attrs: { "aria-live": "polite", "data-nudge": "summary" } });
  const table = make("table", { className: "vg-table vg-nudge-table", attrs: { hidden: "" } });
  table.append(make("caption", { text: "Every leaf, measured against its gradient" }));
  const head = make("tr");
  for (const title of ["Leaf", "Measured", "Expected", "Difference", "Verdict"]) head.append(make("th", { text: title, attrs: { scope: "col" } }));
  table.append(make("thead"), make("tbody"));
  table.tHead.append(head);
  const actions = make("div", { className: "vg-nudge-actions" });
  actions.append(measureButton, checkButton);
  container.append(intro, controls, figures, status, actions, tolerance, summary, table);

  const h = () => Number(hSelect.value);

  function showTolerance() {
    tolerance.textContent = `Tolerance: they agree when |measured − expected| ≤ (2h + 100ε/h) × max(1, |expected|), ε = 2.2e-16 (a double's precision). The first term allows the drift of curved functions, the second the round-off of a tiny h. At h = ${nudgeText(h())}: ${formatNumber(allowedDifference(1, h()), 3)} × max(1, |expected|).`;
  }

  async function measure() {
    if (!source) return;
    pending?.abort();
    pending = new AbortController();
    const signal = pending.signal;
    status.textContent = `Measuring at h = ${nudgeText(h())}…`;
    try {
      const response = await askEngine(source, { check: true, nudge: h() }, { signal });
      measured = response;
      status.textContent = "";
      showLeaf();
      if (checking) showCheck();
    } catch (error) {
      if (signal.aborted) return;
      measured = null;
      status.textContent = `The nudge test could not run: ${error.message}`;
    }
  }

  function showLeaf() {
    const node = measured?.nodes[Number(leafSelect.value)];
    if (!node || !("numeric_grad" in node)) {
      for (const cell of [measuredCell, expectedCell, differenceCell]) cell.textContent = "—";
      return;
    }
    measuredCell.textContent = show(node.numeric_grad);
    expectedCell.textContent = show(node.grad);
    const difference = node.numeric_grad - node.grad;
    const result = verdict(node.numeric_grad, node.grad, h());
    differenceCell.dataset.verdict = result;
    differenceCell.textContent = result === "unmeasurable"
      ? `— · cannot measure here: ${unmeasurableReason(node.numeric_grad, node.grad, outputData())}`
      : `${show(difference)} · ${result === "agree" ? "✓ within tolerance" : "✗ beyond tolerance"}`;
    differenceCell.classList.toggle("vg-disagree", result === "disagree");
  }

  const outputData = () => measured.nodes[measured.output].data;

  function markGraph(bad) {
    for (const el of graphBox.querySelectorAll("[data-node-id][data-nudge]")) el.removeAttribute("data-nudge");
    for (const id of bad) graphBox.querySelector(`[data-node-id="${id}"]`)?.setAttribute("data-nudge", "disagree");
  }

  function showCheck() {
    const rows = [];
    const bad = [];
    const unmeasurable = [];
    for (const leaf of leaves) {
      const node = measured.nodes[leaf.id];
      const result = verdict(node.numeric_grad, node.grad, h());
      if (result === "disagree") bad.push(node.id);
      if (result === "unmeasurable") unmeasurable.push(node.id);
      const tr = make("tr", { className: result === "disagree" ? "vg-disagree" : "", attrs: { "data-leaf": String(node.id), "data-verdict": result } });
      const verdictCell = make("td", { text: VERDICT_TEXT[result] });
      if (result === "unmeasurable") verdictCell.title = unmeasurableReason(node.numeric_grad, node.grad, outputData());
      tr.append(
        make("th", { text: nodeName(node), attrs: { scope: "row" } }),
        make("td", { text: show(node.numeric_grad) }),
        make("td", { text: show(node.grad) }),
        make("td", { text: result === "unmeasurable" ? "—" : show(node.numeric_grad - node.grad) }),
        verdictCell,
      );
      rows.push(tr);
    }
    table.tBodies[0].replaceChildren(...rows);
    table.hidden = false;
    markGraph(bad);
    const names = bad.map((id) => nodeName(measured.nodes[id])).join(", ");
    const count = `${leaves.length} lea${leaves.length === 1 ? "f" : "ves"}`;
    const at = `at h = ${nudgeText(h())}`;
    const why = "a gradient or its measurement is NaN or ∞ there (point at a verdict for why)";
    const unmeasured = unmeasurable.length === 0 ? "" : ` ${unmeasurable.length} cannot be measured (${unmeasurable.map((id) => nodeName(measured.nodes[id])).join(", ")}): ${why}.`;
    if (unmeasurable.length === leaves.length) summary.textContent = `None of the ${count} can be measured ${at}: ${why}.`;
    else if (bad.length === 0) summary.textContent = `All ${unmeasurable.length ? `${leaves.length - unmeasurable.length} measurable of the ` : ""}${count} agree ${at}.${unmeasured}`;
    else summary.textContent = `${bad.length} of ${count} ${bad.length === 1 ? "disagrees" : "disagree"} ${at}: ${names}. Marked on the graph with a dashed red outline.${unmeasured}`;
    summary.classList.toggle("vg-disagree", bad.length > 0);
  }

  function clearCheck() {
    checking = false;
    table.hidden = true;
    summary.textContent = "";
    summary.classList.remove("vg-disagree");
    markGraph([]);
  }

  leafSelect.addEventListener("change", showLeaf);
  hSelect.addEventListener("change", () => {
    showTolerance();
    measure();
  });
  measureButton.addEventListener("click", measure);
  checkButton.addEventListener("click", async () => {
    checking = true;
    if (!measured) await measure();
    else showCheck();
  });
  showTolerance();

  return {
    /** A new graph is on screen: list its leaves and measure them (small graphs at once). */
    load({ expression, variables, seed, run, model }) {
      const previous = leaves.find((leaf) => String(leaf.id) === leafSelect.value)?.label;
      source = { expression, variables, seed, run }; // seed and run: the same backward() call
      leaves = model.nodes.filter((node) => node.children.length === 0);
      measured = null;
      clearCheck();
      const listed = [...leaves.filter((leaf) => leaf.label !== null), ...leaves.filter((leaf) => leaf.label === null)].slice(0, LEAVES_LISTED);
      listed.sort((a, b) => a.id - b.id);
      leafSelect.replaceChildren(...listed.map((leaf) => new Option(leafName(leaf), String(leaf.id))));
      const keep = leaves.find((leaf) => previous && leaf.label === previous) ?? leaves.find((leaf) => leaf.label !== null) ?? leaves[0];
      if (keep) leafSelect.value = String(keep.id);
      showLeaf();
      const small = model.nodes.length <= AUTO_MEASURE_NODES;
      measureButton.hidden = small;
      if (small) measure();
      else status.textContent = `${model.nodes.length} nodes: press Measure to run the nudge test (one extra run of the program per leaf).`;
    },
    /** Show this node if it is a leaf (a click on the graph). */
    selectLeaf(id) {
      const leaf = leaves.find((node) => node.id === id);
      if (!leaf) return;
      if (![...leafSelect.options].some((option) => option.value === String(id))) leafSelect.add(new Option(leafName(leaf), String(id)));
      leafSelect.value = String(id);
      showLeaf();
    },
  };
}
