// "What if it were done wrong?": the engine runs a deliberately broken backward walk on the
// page's graph and the correct one; this panel puts the two side by side and marks every
// gradient that differs. Both sets of numbers come from the server (the `variant` field).

import { askEngine, make } from "./courseapi.js";
import { formatNumber, isNonFinite, nodeName } from "./format.js";
import { stateSearch } from "./state.js";

export const VARIANTS = [
  {
    id: "correct",
    name: "Correct",
    about: "The walk as the course builds it: a visited set in the sort, the sorted list walked backwards, and += into each input's grad. Pick a broken version to see what each of those three pieces is for.",
  },
  {
    id: "no-visited-check",
    name: "No visited check",
    about: "The sort forgets which nodes it has already reached, so a node reached along two paths lands in the sorted list twice and hands its gradient to its inputs twice. With a + a reused, a ends with too much.",
  },
  {
    id: "assign",
    name: "= instead of +=",
    about: "Each input's grad is overwritten instead of added to, so when a node feeds two operations, the contribution that arrives last wipes out the one before it.",
  },
  {
    id: "no-topological-order",
    name: "No topological order",
    about: "No sort at all: from the output, each node adds local × its grad into each input and at once recurses into that input, even though more gradient may still be on its way to it. Early visits pass on partial sums, so shared nodes end up wrong.",
  },
];

const ROWS_SHOWN = 200;
const STEPS_SHOWN = 60;
const same = (x, y) => Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y)) || x === y;

export function createVariantsPanel(container, { initial = "correct" } = {}) {
  let source = null;
  let shownState = null; // the page's view state (state.js) when the graph on screen was loaded
  let pending = null;

  const intro = make("p", {
    className: "vg-muted",
    text: "The course names three ways to get the backward pass wrong. Switch one on to run that broken walk on this graph, beside the correct one. The engine computes both; wrong gradients are marked.",
  });
  const group = make("fieldset", { className: "vg-variant-switch" });
  group.append(make("legend", { text: "Backward walk" }));
  const radios = VARIANTS.map((variant) => {
    const id = `vg-variant-${variant.id}`;
    const input = make("input", { attrs: { type: "radio", name: "vg-variant", id, value: variant.id } });
    const label = make("label", { className: `vg-variant-choice${variant.id === "correct" ? "" : " vg-broken-choice"}`, attrs: { for: id } });
    label.append(input, document.createTextNode(` ${variant.name}`));
    group.append(label);
    input.addEventListener("change", () => compare());
    return input;
  });
  const about = make("p", { className: "vg-variant-about", attrs: { "data-variant": "about" } });
  const status = make("p", { className: "vg-variant-status", attrs: { "aria-live": "polite", "data-variant": "status" } });
  const result = make("div", { className: "vg-variant-result", attrs: { "data-variant": "result", hidden: "" } });
  container.append(intro, group, about, status, result);
  (radios.find((r) => r.value === initial) ?? radios[0]).checked = true;

  const selected = () => radios.find((r) => r.checked)?.value ?? "correct";

  async function compare() {
    const variant = selected();
    about.textContent = VARIANTS.find((v) => v.id === variant).about;
    pending?.abort();
    result.hidden = true;
    result.replaceChildren();
    status.textContent = "";
    if (variant === "correct" || !source) return;
    pending = new AbortController();
    const signal = pending.signal;
    status.textContent = "Running both walks…";
    try {
      const [correct, broken] = await Promise.all([
        askEngine(source, { variant: "correct" }, { signal }),
        askEngine(source, { variant, trace: true }, { signal }),
      ]);
      status.textContent = "";
      showComparison(variant, correct, broken);
    } catch (error) {
      if (signal.aborted) return;
      status.textContent = `The broken walk could not run: ${error.message}`;
    }
  }

  function showComparison(variant, correct, broken) {
    const name = VARIANTS.find((v) => v.id === variant).name;
    const wrong = broken.nodes.filter((node) => !same(node.grad, correct.nodes[node.id].grad));
    const banner = make("p", { className: "vg-broken-banner", attrs: { "data-variant": "banner" } });
    banner.textContent = wrong.length === 0
      ? `Broken on purpose (${name}), yet every gradient of this graph comes out right: nothing here is reached twice. Try the reuse case, b = a + a.`
      : `Broken on purpose (${name}): ${wrong.length} gradient${wrong.length === 1 ? " is" : "s are"} wrong — ${wrong.map((n) => `${nodeName(n)}.grad ${formatNumber(n.grad)} instead of ${formatNumber(correct.nodes[n.id].grad)}`).slice(0, 4).join(", ")}${wrong.length > 4 ? ", …" : ""}.`;

    const table = make("table", { className: "vg-table vg-variant-table", attrs: { "data-variant": "table" } });
    table.append(make("caption", { text: "Final gradients, correct walk beside the broken one" }));
    const head = make("tr");
    head.append(make("th", { text: "Node", attrs: { scope: "col" } }), make("th", { text: "Correct", attrs: { scope: "col" } }));
    const brokenHead = make("th", { className: "vg-broken-col", attrs: { scope: "col" } });
    brokenHead.append(make("span", { className: "vg-broken-badge", text: "Broken" }), document.createTextNode(` ${name}`));
    head.append(brokenHead);
    table.append(make("thead"), make("tbody"));
    table.tHead.append(head);
    for (const node of broken.nodes.slice(0, ROWS_SHOWN)) {
      const right = correct.nodes[node.id].grad;
      const ok = same(node.grad, right);
      const tr = make("tr", { className: ok ? "" : "vg-wrong", attrs: { "data-node": nodeName(node), "data-verdict": ok ? "right" : "wrong" } });
      const brokenCell = make("td", { className: isNonFinite(node.grad) ? "vg-nonfinite" : "" });
      brokenCell.textContent = ok ? `${formatNumber(node.grad)} ✓` : `${formatNumber(node.grad)} ✗ wrong`;
      tr.append(make("th", { text: nodeName(node), attrs: { scope: "row" } }), make("td", { text: formatNumber(right) }), brokenCell);
      table.tBodies[0].append(tr);
    }

    const walk = make("div", { className: "vg-broken-walk" });
    walk.append(make("h3", { text: "The broken walk, step by step" }));
    walk.append(make("p", {
      className: "vg-muted",
      text: broken.order.length === 0
        ? "No sorted list: the walk recurses from the output."
        : `Sorted list: ${broken.order.map((id) => nodeName(broken.nodes[id])).join(", ")}`,
      attrs: { "data-variant": "order" },
    }));
    const list = make("ol", { className: "vg-broken-steps", attrs: { "data-variant": "steps" } });
    const sign = variant === "assign" ? "=" : "+=";
    for (const step of broken.trace.propagate.slice(0, STEPS_SHOWN)) {
      const parent = nodeName(broken.nodes[step.node]);
      const updates = step.updates.map((u) => `${nodeName(broken.nodes[u.child])}.grad ${sign} ${formatNumber(u.local_grad)} × ${formatNumber(step.grad)} → ${formatNumber(u.grad)}`);
      list.append(make("li", { text: `${parent} (grad ${formatNumber(step.grad)}): ${updates.length ? updates.join("; ") : "nothing to pass on"}` }));
    }
    walk.append(list);
    if (broken.trace.propagate.length > STEPS_SHOWN) walk.append(make("p", { className: "vg-muted", text: `… and ${broken.trace.propagate.length - STEPS_SHOWN} more steps.` }));

    const play = make("a", {
      className: "vg-link",
      text: "Play the broken walk on the main graph",
      attrs: { href: `/${stateSearch({ ...shownState, variant, step: 0 })}` },
    });
    result.replaceChildren(banner, table, walk, play);
    result.hidden = false;
  }

  compare();

  return {
    /** A new graph is on screen: compare again if a broken walk is switched on. */
    load({ expression, variables, seed, run, state }) {
      source = { expression, variables, seed, run };
      shownState = state;
      if (selected() !== "correct") compare();
    },
    /** Switch to a variant (a lesson asks for one). */
    select(variant) {
      const radio = radios.find((r) => r.value === variant);
      if (!radio || radio.checked) return;
      radio.checked = true;
      compare();
    },
  };
}
