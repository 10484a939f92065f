// The panel beside the graph: the stack and the sorted list as the walk goes, and a node's story.
// Built with DOM calls and textContent only: labels come from the user's program.

import { formatExact, formatNumber, formula, grouped, isNonFinite, nodeName } from "./format.js";
import { stackAt, sortedCountAt, storyAt } from "./timeline.js";

const STACK_SHOWN = 8;
const UPDATES_SHOWN = 40; // a folded box's step can pass gradient to thousands of parameters
const SORTED_SHOWN = 60; // rows drawn around the current one; the list scrolls

const LOCAL_GRADIENT_RULE = {
  "+": () => "a sum passes its gradient through unchanged",
  "*": () => "the other input's data",
  "**": (node) => `n · x^(n−1) with n = ${formatNumber(node.exponent)}`,
  log: () => "1 / x",
  exp: () => "exp(x), which is this node's own data",
  tanh: () => "1 − tanh(x)², from this node's own data",
  relu: () => "1 if the input is positive, else 0",
  "-": () => "1 for the first input, −1 for the second",
  "/": () => "1 / b for a, −a / b² for b",
  neg: () => "−1",
};

function item(doc, text, className = "") {
  const li = doc.createElement("li");
  li.textContent = text;
  if (className) li.className = className;
  return li;
}

function para(doc, parts, className = "") {
  const p = doc.createElement("p");
  if (className) p.className = className;
  for (const part of parts) {
    if (typeof part === "string") p.append(doc.createTextNode(part));
    else {
      const span = doc.createElement("span");
      span.className = part.className;
      span.textContent = part.text;
      p.append(span);
    }
  }
  return p;
}

const num = (x) => ({ text: formatExact(x), className: isNonFinite(x) ? "vg-num vg-nonfinite" : "vg-num" });
const gradNum = (x) => ({ text: formatExact(x), className: isNonFinite(x) ? "vg-num vg-grad-text vg-nonfinite" : "vg-num vg-grad-text" });

export function createWalkPanel(root) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const doc = root.ownerDocument;
  const stageTitle = el("stage-title");
  const stack = el("stack");
  const stackMore = el("stack-more");
  const sorted = el("sorted");
  const sortedMore = el("sorted-more");
  const storyTitle = el("story-title");
  const storyBody = el("story-body");
  const stackHeading = stack.closest(".vg-stack-box")?.querySelector("h3") ?? doc.createElement("h3");
  const sortedHeading = sorted.closest(".vg-sorted-box")?.querySelector("h3") ?? doc.createElement("h3");

  let scrollFrame = 0;

  function showFrame(tl, frame) {
    const k = frame.index;
    const inSort = frame.stage === "sort";
    stageTitle.textContent = inSort ? "1 · Topological sort" : "2 · Propagation";
    root.classList.toggle("vg-in-propagate", !inSort);

    // The stack, top first; the entries this step pushed are marked.
    const { entries, size } = stackAt(tl, k, STACK_SHOWN);
    const pushed = frame.kind === "descend" ? 2 : frame.kind === "skip" || frame.kind === "start" ? 1 : 0;
    stack.replaceChildren(...entries.map((e, i) => item(doc, `(${nodeName(tl.nodes[e.node])}, ${e.index})`, i < pushed ? "is-new" : "")));
    if (size === 0) stack.append(item(doc, "empty", "vg-empty"));
    stackMore.textContent = size > entries.length ? `… and ${grouped(size - entries.length)} more below` : "";

    // Stage 2 has no stack: that column shows the node being walked and what it passes on, and the
    // sorted list beside it reads backwards, as the walk goes.
    stackHeading.textContent = inSort ? "Stack" : "Now";
    sortedHeading.textContent = inSort ? "Sorted list" : "Walk order";
    if (!inSort) {
      const step = frame.step;
      const box = frame.level?.box; // a folded box's run: what arrived at it, and what left it below
      const who = nodeName(tl.nodes[step.node]);
      const now = [item(doc, box ? `${box.name} · Σ arrived ${formatNumber(box.arrived.sum)}` : `${who} · grad ${formatNumber(step.kind === "seed" ? 1 : step.grad)}`, "is-current")];
      if (step.kind === "seed") now.push(item(doc, "the seed: output.grad = 1"));
      const updates = step.updates ?? [];
      for (const u of updates.slice(0, UPDATES_SHOWN)) now.push(item(doc, `${nodeName(tl.nodes[u.child])}.grad ${formatNumber(u.before)} → ${formatNumber(u.after)}`, "is-new"));
      if (step.kind !== "seed" && updates.length === 0) now.push(item(doc, "nothing to pass on", "vg-empty"));
      stack.replaceChildren(...now);
      stackMore.textContent = updates.length > UPDATES_SHOWN ? `… and ${grouped(updates.length - UPDATES_SHOWN)} more` : "";
    }

    // The sorted list: in stage 1 up to its newest end; in stage 2 from the output down, around
    // the node being walked. The list scrolls so that row stays in view.
    const count = sortedCountAt(tl, k);
    const current = !inSort && frame.step.position !== null && frame.step.position !== undefined ? frame.step.position : null;
    const positions = [];
    if (inSort) for (let i = Math.max(0, count - SORTED_SHOWN); i < count; i++) positions.push(i);
    else {
      const top = current === null ? count - 1 : Math.min(count - 1, current + SORTED_SHOWN / 2);
      for (let i = top; i >= 0 && positions.length < SORTED_SHOWN; i--) positions.push(i);
    }
    const items = [];
    for (const i of positions) {
      let className = "";
      if (inSort && i === count - 1 && frame.kind === "emit") className = "is-new";
      if (current !== null) className = i === current ? "is-current" : i > current ? "is-walked" : "";
      const li = item(doc, nodeName(tl.nodes[tl.order[i]]), className);
      li.value = i;
      items.push(li);
    }
    sorted.replaceChildren(...items);
    // Scrolled in the next frame: reading offsetTop now would force a layout of the whole page.
    const row = sorted.querySelector(".is-current, .is-new") ?? (inSort ? sorted.lastElementChild : null);
    cancelAnimationFrame(scrollFrame);
    scrollFrame = requestAnimationFrame(() => {
      sorted.scrollTop = row ? row.offsetTop - sorted.clientHeight / 2 + row.offsetHeight / 2 : 0;
    });
    if (count === 0) sorted.append(item(doc, tl.recursive ? "none: this walk skips the sort" : "empty", "vg-empty"));
    const hidden = count - items.length;
    sortedMore.textContent = hidden > 0 ? `${grouped(count)} nodes in all` : "";
  }

  function showStory(tl, id, k) {
    if (id === null || !tl) {
      storyTitle.textContent = "A node's story";
      storyBody.replaceChildren(para(doc, ["Point at a node, or click it, to see how it was made and where its gradient comes from."], "vg-muted"));
      return;
    }
    const s = storyAt(tl, id, k);
    const node = s.node;
    const parts = [];
    storyTitle.textContent = node.op ? `${s.name} = ${formula(node, tl.nodes)}` : node.label === null ? `${s.name}: a constant` : `${s.name}: a leaf`;
    parts.push(para(doc, ["data = ", num(node.data)]));
    if (node.op) {
      parts.push(para(doc, [`Made by ${node.op === "**" ? "**" : node.op} from `, s.inputs.map((i) => `${i.name} (${formatNumber(i.data)})`).join(" and "), "."]));
      const rule = LOCAL_GRADIENT_RULE[node.op]?.(node) ?? "";
      parts.push(para(doc, [`Local gradients (${rule}):`]));
      const list = doc.createElement("ul");
      for (const i of s.inputs) {
        const li = doc.createElement("li");
        li.append(para(doc, [`∂${s.name}/∂${i.name} = `, num(i.local)]));
        list.append(li);
      }
      parts.push(list);
    } else {
      parts.push(para(doc, [node.label === null ? "A number written in the program: no inputs, nothing to pass a gradient to." : "A leaf: no inputs, so its gradient stops here."]));
    }
    if (s.parents.length) {
      const users = [...new Set(s.parents.map((p) => p.name))];
      parts.push(para(doc, [`Used by ${users.join(", ")}${s.parents.length > 1 ? ` (${s.parents.length} edges, so its grad is a sum)` : ""}.`]));
    } else if (id === tl.output) {
      parts.push(para(doc, ["The output: the backward pass starts here."]));
    }
    if (s.sortPosition !== null) parts.push(para(doc, [`Position ${s.sortPosition} in the sorted list.`]));

    // Where the grad comes from, as far as the walk has gone.
    if (s.grad === null) {
      parts.push(para(doc, ["grad: not reached yet. Stage 2 fills it in."], "vg-muted"));
    } else if (s.seeded && s.contributions.length === 0) {
      parts.push(para(doc, ["grad = ", gradNum(s.grad), ": the seed, since a nudge to the output moves it by the same amount."]));
    } else if (s.contributions.length === 0) {
      parts.push(para(doc, ["grad = ", gradNum(s.grad), ": no gradient reached it."]));
    } else {
      parts.push(para(doc, [s.contributions.length > 1 ? "grad = Σ of what each user passed back:" : "grad, passed back by its user:"]));
      const list = doc.createElement("ul");
      for (const c of s.contributions) {
        const li = doc.createElement("li");
        li.append(para(doc, [`from ${c.parentName}: ${formatNumber(c.local)} × ${formatNumber(c.parentGrad)} = `, gradNum(c.delta)]));
        list.append(li);
      }
      parts.push(list);
      parts.push(para(doc, ["total: grad = ", gradNum(s.grad)], "vg-total"));
    }
    for (const w of tl.model.warnings ?? []) {
      if (w.node === id) parts.push(para(doc, [`⚠ ${w.message}`], "vg-warning-text"));
    }
    storyBody.replaceChildren(...parts);
  }

  return { showFrame, showStory };
}
