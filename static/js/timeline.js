// The walk as a plain array of steps, and what every view shows at a given step.
//
// Pure: built once from the API's trace, never recomputing a gradient. Steps are
//   stage 1 (sort):      a "start" step (push the output), then one step per pop of the stack;
//   stage 2 (propagate): a "seed" step (output.grad = 1), then one step per node walked.
// The stack is replayed from the sort steps as a persistent linked list (each step shares the
// cells below its top), so the stack at any step costs O(1) to keep and scrubbing is free.
//
// A microgpt step is 160,000 steps over 43,000 nodes: what is kept per node (its grad changes, the
// updates it received, its users) is kept in CSR form (one flat list, and where each node's part
// starts), and the stack's cells in typed arrays, not as an array or an object per node or cell,
// whose allocation and garbage collection took most of the time of building the timeline
// (docs/performance.md, "The page's part of the first picture"). For the same reason a stage 1 step
// is the trace's sort columns and two typed arrays (the stack's top, the sorted list's length), made
// an object only when read (stepAt); tl.steps makes them all, when first read.

import { traceColumns } from "./columns.js";
import { formatNumber, grouped, nodeName } from "./format.js";

/** Bits of a node's state at a step (frame.flags). */
export const FLAG = {
  STACK: 1, // on the stack
  SORTED: 2, // already appended to the sorted list
  FOCUS: 4, // popped (stage 1) or being walked (stage 2)
  WALKED: 8, // stage 2 has passed this node
  RECEIVING: 16, // its grad changes at this step
  EXPLORED: 32, // the input looked at by this stage 1 step
  GRAD: 64, // a grad has reached it: frame.grads holds it (gradOf)
};

/** A node's grad in a frame, null while none has reached it. */
export function gradOf(frame, id) {
  return frame.flags[id] & FLAG.GRAD ? frame.grads[id] : null;
}

const TABLE_STACK_ENTRIES = 6;
const TABLE_SORTED_ENTRIES = 8;

/** Stage 1's persistent stack: cell c holds (node[c], index[c]) above cell below[c] (-1: the bottom); a step keeps its top cell (-1: empty). */
function stackCells(capacity) {
  const cells = { node: new Int32Array(capacity), index: new Int32Array(capacity), below: new Int32Array(capacity), size: new Int32Array(capacity), count: 0 };
  cells.push = (below, node, index) => {
    const c = cells.count++;
    cells.node[c] = node;
    cells.index[c] = index;
    cells.below[c] = below;
    cells.size[c] = below < 0 ? 1 : cells.size[below] + 1;
    return c;
  };
  return cells;
}

/** Prefix sums in place: counts at [id + 1] become where each id's part of a flat list starts. */
function startsFrom(counts) {
  for (let id = 1; id < counts.length; id++) counts[id] += counts[id - 1];
  return counts;
}

/**
 * Per node, in step order, from stage 2's steps' updates (steps[first] on; step i is the timeline's
 * step offset + i; after `seed`: [node, step] of the output's grad set to 1, or null): every grad change
 * (gradAt reads them), and the updates it received in a node's own step (kind "propagate"; a learner's
 * write outside any node's step is no node's contribution), each the update object itself, with its
 * `step`. Plain loops: one to count, one to fill.
 */
function perNodeLists(n, steps, offset, first, seed) {
  const gradStart = new Int32Array(n + 1);
  const contributionStart = new Int32Array(n + 1);
  if (seed) gradStart[seed[0] + 1] += 1;
  for (let i = first; i < steps.length; i++) {
    const { kind, updates } = steps[i];
    for (let u = 0; u < updates.length; u++) {
      gradStart[updates[u].child + 1] += 1;
      if (kind === "propagate") contributionStart[updates[u].child + 1] += 1;
    }
  }
  startsFrom(gradStart);
  startsFrom(contributionStart);
  const gradStep = new Int32Array(gradStart[n]);
  const gradValue = new Array(gradStart[n]);
  const contributed = new Array(contributionStart[n]);
  const nextGrad = gradStart.slice(0, n);
  const nextContribution = contributionStart.slice(0, n);
  if (seed) {
    gradStep[nextGrad[seed[0]]] = seed[1];
    gradValue[nextGrad[seed[0]]++] = 1;
  }
  for (let i = first; i < steps.length; i++) {
    const { kind, updates } = steps[i];
    for (let u = 0; u < updates.length; u++) {
      const update = updates[u];
      const at = nextGrad[update.child]++;
      gradStep[at] = offset + i;
      gradValue[at] = update.after;
      if (kind === "propagate") contributed[nextContribution[update.child]++] = update;
    }
  }
  return { gradStart, gradStep, gradValue, contributionStart, contributed };
}

/** The updates node `id` received up to step k (all of them by default), in step order: {step, parent, slot, child, local, parentGrad, delta, before, after}. */
export function contributionsTo(tl, id, k = Infinity) {
  return tl.contributed.slice(tl.contributionStart[id], contributionsEnd(tl, id, k));
}

/** One past the last of node `id`'s updates (tl.contributed, from tl.contributionStart[id]) made by step k. */
function contributionsEnd(tl, id, k) {
  const { contributionStart, contributed } = tl;
  let at = contributionStart[id];
  while (at < contributionStart[id + 1] && contributed[at].step <= k) at++;
  return at;
}

const users = new WeakMap(); // timeline -> its nodes' users (parentsOf), built when a story first asks

/** The nodes that take node `id` as an input, with the input slot, in id order: [{parent, slot}]. */
export function parentsOf(tl, id) {
  let index = users.get(tl);
  if (!index) {
    const { nodes, n } = tl;
    const each = (visit) => {
      for (const node of nodes) node.children.forEach((child, slot) => visit(child, node.id, slot));
    };
    const start = new Int32Array(n + 1);
    each((child) => {
      start[child + 1] += 1;
    });
    startsFrom(start);
    const parent = new Int32Array(start[n]);
    const slotOf = new Int32Array(start[n]);
    const next = start.slice(0, n);
    each((child, id, slot) => {
      parent[next[child]] = id;
      slotOf[next[child]++] = slot;
    });
    index = { start, parent, slot: slotOf };
    users.set(tl, index);
  }
  const list = [];
  for (let at = index.start[id]; at < index.start[id + 1]; at++) list.push({ parent: index.parent[at], slot: index.slot[at] });
  return list;
}

/** The course's walk from the trace, or (walk "learner") the learner's own backward, from the
 * answer's learner_walk, when it has one. */
export function buildTimeline(model, { walk: which = "course" } = {}) {
  if (which === "learner" && model.learner_walk) return buildLearnerTimeline(model);
  const { nodes, output } = model;
  const n = nodes.length;
  const order = model.order ?? [];
  const trace = traceColumns(model);
  const sort = trace?.sort ?? { node: [], index: [], action: [], child: [] };
  const walk = trace?.propagate ?? { node: [], grad: [], start: [0] };
  const recursive = order.length === 0 && walk.node.length > 0; // the variant that skips the sort
  // Stage 1: replay the stack. A sort step is the trace's sort columns and, per step, the stack's top
  // cell and the sorted list's length: 290,000 steps at 100,000 nodes, an object each only when read (stepAt).
  const emitStep = new Int32Array(n).fill(-1);
  const sortPosition = new Int32Array(n).fill(-1);
  const cells = stackCells(1 + 2 * sort.node.length); // a step pushes at most two cells
  const sortSteps = { sort, stack: new Int32Array(sort.node.length + 1), sorted: new Int32Array(sort.node.length + 1) };
  let stack = recursive ? -1 : cells.push(-1, output, 0);
  let sorted = 0;
  sortSteps.stack[0] = stack;
  for (let i = 0; i < sort.node.length; i++) {
    const action = sort.action[i];
    const node = sort.node[i];
    let rest = stack >= 0 ? cells.below[stack] : -1; // pop
    if (action !== "emit") rest = cells.push(rest, node, sort.index[i] + 1);
    if (action === "descend") rest = cells.push(rest, sort.child[i], 0);
    if (action === "emit") {
      if (emitStep[node] < 0) {
        emitStep[node] = i + 1;
        sortPosition[node] = sorted;
      }
      sorted += 1;
    }
    stack = rest;
    sortSteps.stack[i + 1] = stack;
    sortSteps.sorted[i + 1] = sorted;
  }
  const sortEnd = sort.node.length;
  const steps = []; // stage 2's steps, from propagateStart

  // Stage 2: every grad change, kept per node for look-up by step.
  const current = new Float64Array(n);
  const walkStep = new Int32Array(n).fill(-1);
  const propagateStart = sortEnd + 1;
  steps.push({ stage: "propagate", kind: "seed", node: output });
  current[output] = 1;
  // The recursive walk records one update per step, entering a node or coming back to it after
  // a child's subtree; replaying its stack gives each update's input slot (which edge it is).
  const recursion = [];
  let entering = true;
  for (let i = 0; i < walk.node.length; i++) {
    const k = propagateStart + steps.length;
    const node = walk.node[i];
    const grad = walk.grad[i];
    const first = walk.start[i];
    const count = walk.start[i + 1] - first;
    if (walkStep[node] < 0) walkStep[node] = k;
    let firstSlot = 0;
    let resumed = false;
    if (recursive) {
      if (entering) recursion.push({ node, next: 0 });
      else while (recursion.length > 1 && recursion.at(-1).node !== node) recursion.pop();
      const top = recursion.at(-1);
      firstSlot = top.next;
      resumed = firstSlot > 0;
      top.next += count;
      entering = count > 0;
    }
    const updates = new Array(count);
    for (let u = 0; u < count; u++) {
      const child = walk.child[first + u];
      const after = walk.after[first + u];
      updates[u] = { step: k, parent: node, slot: firstSlot + u, child, local: walk.local_grad[first + u], parentGrad: grad, delta: walk.delta[first + u], before: current[child], after };
      current[child] = after;
    }
    steps.push({ stage: "propagate", kind: "propagate", node, grad, updates, resumed, position: recursive ? null : order.length - 1 - i });
  }

  const tl = {
    model, nodes, n, output, order, sortSteps, propagateSteps: steps, cells, recursive,
    checksVisited: model.variant !== "no-visited-check",
    sortEnd, propagateStart, last: propagateStart + steps.length - 1,
    emitStep, sortPosition, walkStep, ...perNodeLists(n, steps, propagateStart, 1, [output, propagateStart]),
  };
  return withSteps(Object.assign(tl, stepIndex(tl)));
}

/** The node steps of a stage ("sort", "propagate"; anything else: the whole walk) in a timeline, [first, last]. */
export function stageBounds(tl, stage) {
  if (stage === "sort") return [0, tl.sortEnd];
  if (stage === "propagate") return [tl.propagateStart, tl.last];
  return [0, tl.last];
}

/**
 * The learner's own backward as a timeline of the same shape: one "start" step (no sort was
 * recorded: only the grads the learner's code wrote), then one step per learner step. A node's
 * step is kind "propagate" (repeats kept: a walk without a visited set steps a node twice); a
 * write outside any node's step is kind "seed" when it sets the output's grad, else "write".
 * The graph's grads at the end are the learner's (the answer's `grad`).
 */
function buildLearnerTimeline(model) {
  const { nodes, output } = model;
  const n = nodes.length;
  const current = new Float64Array(n); // a grad not written yet reads 0, as a fresh Value's
  const walkStep = new Int32Array(n).fill(-1);
  const visits = new Int32Array(n);
  const steps = []; // after the "start" step: from step 1
  const walked = model.learner_walk.filter((s) => s.node !== null).map((s) => s.node);
  const order = walked.slice().reverse(); // read from its end, as the course's walk reads its sorted list
  let position = order.length;
  for (const learnerStep of model.learner_walk) {
    const k = 1 + steps.length;
    const owner = learnerStep.node;
    if (owner === null) {
      const updates = learnerStep.updates.map((u) => ({ step: k, parent: null, slot: null, child: u.child, local: null, parentGrad: null, delta: null, before: current[u.child], after: u.grad }));
      for (const u of updates) current[u.child] = u.after;
      const node = updates[0]?.child ?? output;
      const kind = node === output && updates.length === 1 ? "seed" : "write";
      steps.push({ stage: "propagate", kind, node, grad: current[node], updates, resumed: false, position: null, learner: true });
      continue;
    }
    if (walkStep[owner] < 0) walkStep[owner] = k;
    visits[owner] += 1;
    const grad = current[owner];
    const used = new Set(); // a * a writes one input twice: each write takes the next matching slot
    const updates = learnerStep.updates.map((u) => {
      const slot = nodes[owner].children.findIndex((child, i) => child === u.child && !used.has(i));
      if (slot >= 0) used.add(slot);
      const local = slot >= 0 ? nodes[owner].local_grads[slot] : null;
      const before = current[u.child];
      current[u.child] = u.grad;
      return { step: k, parent: owner, slot, child: u.child, local, parentGrad: grad, delta: u.grad - before, before, after: u.grad };
    });
    position -= 1;
    steps.push({ stage: "propagate", kind: "propagate", node: owner, grad, updates, resumed: false, position, visit: visits[owner], learner: true });
  }

  const noSort = { node: new Int32Array(0), index: new Int32Array(0), action: [], child: [] };
  const tl = {
    model, nodes, n, output, order, sortSteps: { sort: noSort, stack: Int32Array.of(-1), sorted: Int32Array.of(0) }, propagateSteps: steps,
    cells: stackCells(0), recursive: false, learner: true,
    checksVisited: true,
    sortEnd: 0, propagateStart: 1, last: steps.length,
    emitStep: new Int32Array(n).fill(-1), sortPosition: new Int32Array(n).fill(-1), walkStep, ...perNodeLists(n, steps, 1, 0, null),
  };
  return withSteps(Object.assign(tl, stepIndex(tl)));
}

/** The grad a node shows at step k: null while not yet reached; at the end every grad is shown. */
export function gradAt(tl, id, k) {
  const { gradStart, gradStep } = tl;
  // Binary search for the last change at or before step k.
  const first = gradStart[id];
  let lo = first;
  let hi = gradStart[id + 1];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (gradStep[mid] <= k) lo = mid + 1;
    else hi = mid;
  }
  if (lo > first) return tl.gradValue[lo - 1];
  return k >= tl.last ? tl.nodes[id].grad : null;
}

/** The stack at step k, top first, at most `limit` entries, and its full size. */
export function stackAt(tl, k, limit = Infinity) {
  const { cells } = tl;
  const entries = [];
  let cell = inSort(tl, k) ? tl.sortSteps.stack[k] : -1;
  const size = cell >= 0 ? cells.size[cell] : 0;
  while (cell >= 0 && entries.length < limit) {
    entries.push({ node: cells.node[cell], index: cells.index[cell] });
    cell = cells.below[cell];
  }
  return { entries, size };
}

/** How many nodes are in the sorted list at step k. */
export function sortedCountAt(tl, k) {
  return inSort(tl, k) ? tl.sortSteps.sorted[k] : tl.order.length;
}

/** Which stage-1 and stage-2 step numbers a global step has, counted as the course's tables do. */
export function stageStepNumber(tl, k) {
  return inSort(tl, k) ? k : k - tl.propagateStart;
}

/** A node's SORTED and WALKED bits at step k (`sorting`: k is a stage 1 step). */
function stateBits(tl, id, k, sorting) {
  const emitted = tl.emitStep[id];
  if (sorting) return emitted >= 0 && emitted <= k ? FLAG.SORTED : 0;
  const walked = tl.walkStep[id];
  return (emitted >= 0 ? FLAG.SORTED : 0) | (walked >= 0 && walked < k ? FLAG.WALKED : 0);
}

const changes = new WeakMap(); // timeline -> changesByStep's, built when a frame first starts from another

/** Per step, the nodes whose grad, SORTED or WALKED bit may change at it, in CSR form (node[start[k]..start[k + 1]]). */
function changesByStep(tl) {
  let index = changes.get(tl);
  if (!index) {
    const { n, gradStart, gradStep, emitStep, walkStep } = tl;
    const each = (visit) => { // (step, node) of every change; a step of -1 never comes
      for (let id = 0; id < n; id++) {
        for (let at = gradStart[id]; at < gradStart[id + 1]; at++) visit(gradStep[at], id);
        visit(emitStep[id], id);
        visit(walkStep[id], id);
      }
    };
    const steps = tl.last + 1;
    const start = new Int32Array(steps + 1);
    each((k) => {
      if (k >= 0) start[k + 1] += 1;
    });
    startsFrom(start);
    const node = new Int32Array(start[steps]);
    const next = start.slice(0, steps);
    each((k, id) => {
      if (k >= 0) node[next[k]++] = id;
    });
    index = { start, node };
    changes.set(tl, index);
  }
  return index;
}

const lastNodes = new WeakMap(); // timeline -> the last nodesAt it made, which the next starts from

/**
 * Every node's grad and SORTED / WALKED / GRAD bits at step k, never changed once made (frames share them).
 * A step of the walk changes a few nodes of 100,000: the last step's arrays are copied and only the
 * nodes that change between the two steps are worked out again, instead of every node at every step.
 * Typed arrays, the GRAD bit saying which grads are there: each step of christopher's walk copied an
 * array of 102,715 numbers and nulls, which the garbage collector then had to read through.
 */
function nodesAt(tl, k, sorting) {
  const last = lastNodes.get(tl);
  if (last?.k === k) return last;
  const made = { k, grads: null, states: null };
  if (last && k !== tl.last && last.k !== tl.last) { // the end shows every grad: from or to it, every node changes
    const { start, node } = changesByStep(tl);
    const first = start[Math.min(k, last.k)];
    const end = start[Math.max(k, last.k) + 1];
    if (end - first < tl.n / 4) {
      made.grads = last.grads.slice();
      made.states = last.states.slice();
      for (let at = first; at < end; at++) setNode(made, tl, node[at], k, sorting);
    }
  }
  if (!made.grads) {
    made.grads = new Float64Array(tl.n);
    made.states = new Uint8Array(tl.n);
    for (let id = 0; id < tl.n; id++) setNode(made, tl, id, k, sorting);
  }
  lastNodes.set(tl, made);
  return made;
}

function setNode(made, tl, id, k, sorting) {
  const grad = gradAt(tl, id, k);
  const there = grad !== null && grad !== undefined; // not reached, or what reached it was no number
  made.grads[id] = there ? grad : 0;
  made.states[id] = stateBits(tl, id, k, sorting) | (there ? FLAG.GRAD : 0);
}

/** Everything the views show at step k. */
export function frameAt(tl, k) {
  k = Math.max(0, Math.min(tl.last, k));
  const step = stepAt(tl, k);
  const sorting = step.stage === "sort";
  const { grads, states } = nodesAt(tl, k, sorting);
  const flags = states.slice();
  const edges = [];
  let focus = null;
  if (sorting) {
    for (let cell = step.stack; cell >= 0; cell = tl.cells.below[cell]) flags[tl.cells.node[cell]] |= FLAG.STACK;
    if (step.kind !== "start") {
      focus = step.node;
      flags[focus] |= FLAG.FOCUS;
    }
    if (step.kind === "descend" || step.kind === "skip") {
      flags[step.child] |= FLAG.EXPLORED;
      edges.push({ parent: step.node, slot: step.index, child: step.child, kind: step.kind });
    }
  } else {
    focus = step.node;
    flags[focus] |= FLAG.FOCUS;
    if (step.kind === "seed") flags[focus] |= FLAG.RECEIVING;
    for (const u of step.updates ?? []) {
      flags[u.child] |= FLAG.RECEIVING;
      if (u.parent !== null && u.slot >= 0) edges.push({ parent: u.parent, slot: u.slot, child: u.child, kind: "update", text: updateText(tl, u) });
    }
  }
  return { index: k, count: tl.last + 1, stage: step.stage, kind: step.kind, step, focus, grads, flags, edges, caption: caption(tl, k), done: k === tl.last };
}

function updateText(tl, u) {
  if (tl.learner) return `${name(tl, u.child)}.grad ${formatNumber(u.before)} → ${formatNumber(u.after)}`; // what it wrote, += or not
  return `${name(tl, u.child)}.grad += ${formatNumber(u.local)} × ${formatNumber(u.parentGrad)}`;
}

function name(tl, id) {
  return nodeName(tl.nodes[id]);
}

function inputs(count) {
  return count === 1 ? "1 input" : `${count} inputs`;
}

/** The popped pair, "(c, 0)", for stage 1 steps. */
export function popText(tl, k) {
  const step = stepAt(tl, k);
  if (step.stage !== "sort" || step.kind === "start") return "";
  return `(${name(tl, step.node)}, ${step.index})`;
}

/** What happens at step k, in words (without the "Pop (c, 0)." prefix). */
export function whatHappens(tl, k) {
  const step = stepAt(tl, k);
  if (tl.learner) return learnerHappens(tl, step);
  const node = tl.nodes[step.node];
  const who = name(tl, step.node);
  const count = node.children.length;
  switch (step.kind) {
    case "start":
      return tl.recursive
        ? `This walk skips the sort: it starts at ${who} and, at each input, adds to its grad and recurses at once.`
        : `Push (${who}, 0): the output, with input index 0. Each stack entry is a node and the next input to look at.`;
    case "descend": {
      const child = name(tl, step.child);
      const why = tl.checksVisited ? `input ${child} is new, so push (${child}, 0) to explore it` : `no visited check: push (${child}, 0) whether or not it was seen`;
      return `${who} has ${inputs(count)} and index ${step.index} < ${count}: push (${who}, ${step.index + 1}) to come back later; ${why}.`;
    }
    case "skip":
      return `${who} has ${inputs(count)} and index ${step.index} < ${count}: push (${who}, ${step.index + 1}) to come back later; input ${name(tl, step.child)} was already visited, so skip it.`;
    case "emit":
      return count === 0
        ? `${who} is a leaf (no inputs): append ${who} to the sorted list.`
        : `${who} has ${inputs(count)} and index ${step.index} = ${count}: all inputs done, append ${who} to the sorted list.`;
    case "seed":
      return tl.recursive
        ? `Stage 2 (broken variant): start at the output with ${who}.grad = 1 and recurse into each input as soon as it is updated.`
        : `Walk the sorted list backwards (${walkPreview(tl)}). Seed the output: ${who}.grad = 1, because nudging ${who} moves ${who} by the same amount.`;
    default: {
      const grad = formatNumber(step.grad);
      if (count === 0) return `${who}.grad is ${grad}. ${who} is a leaf (no inputs): nothing to pass on.`;
      if (tl.recursive && step.updates.length === 1) {
        const u = step.updates[0];
        const where = step.resumed ? `Back at ${who} after that input's walk` : `Enter ${who}`;
        return `${where}: ${who}.grad is ${grad}. ${name(tl, u.child)}.grad += ${formatNumber(u.local)} × ${grad}, so ${formatNumber(u.before)} → ${formatNumber(u.after)}, then recurse into ${name(tl, u.child)} at once.`;
      }
      if (step.updates.length === 0) return `${who}.grad is ${grad}: nothing to pass on, so skip it.`;
      const parts = step.updates.map(
        (u) => `${name(tl, u.child)}.grad += ${formatNumber(u.local)} × ${grad}, so ${formatNumber(u.before)} → ${formatNumber(u.after)}`,
      );
      return `${who}.grad is ${grad}. Each input gets local gradient × ${grad}: ${parts.join("; ")}.`;
    }
  }
}

/** A step of the learner's own backward in words: what their code wrote, nothing recomputed. */
function learnerHappens(tl, step) {
  const who = name(tl, step.node);
  const writes = (step.updates ?? []).map((u) => `${name(tl, u.child)}.grad ${formatNumber(u.before)} → ${formatNumber(u.after)}`);
  switch (step.kind) {
    case "start":
      return `Your backward, as your code ran it: ${grouped(tl.last)} steps. valuegraph recorded the grads your code wrote, in order (not your sort).`;
    case "seed":
      return `Your code seeds the output: ${writes.join("; ")}.`;
    case "write":
      return `Your code writes a grad outside any node's step: ${writes.join("; ")}.`;
    default: {
      const again = step.visit > 1 ? ` (its step runs again: time ${step.visit})` : "";
      if (writes.length === 0) return `${who}'s step${again}: ${who}.grad is ${formatNumber(step.grad)}; it passes nothing on.`;
      return `${who}'s step${again}: ${who}.grad is ${formatNumber(step.grad)}; it passes it on: ${writes.join("; ")}.`;
    }
  }
}

function walkPreview(tl) {
  const names = [];
  for (let i = tl.order.length - 1; i >= 0 && names.length < 6; i--) names.push(name(tl, tl.order[i]));
  return names.join(" → ") + (tl.order.length > 6 ? " → …" : "");
}

/** The caption under the graph at step k. */
export function caption(tl, k) {
  const step = stepAt(tl, k);
  // The stage only: the step number is the player's one counter ("Step 11 / 13").
  const stage = tl.learner ? "Your backward" : step.stage === "sort" ? "Stage 1" : "Stage 2";
  const pop = popText(tl, k);
  const end = k === tl.last ? ` Done: ${doneText(tl)}` : "";
  return `${stage} · ${pop ? `Pop ${pop}. ` : ""}${whatHappens(tl, k)}${end}`;
}

function doneText(tl) {
  const leaves = tl.nodes.filter((node) => node.op === null && node.label !== null).slice(0, 4);
  if (leaves.length === 0) return "every gradient is in place.";
  return `${leaves.map((node) => `${nodeName(node)}.grad = ${formatNumber(gradAt(tl, node.id, tl.last))}`).join(", ")}${leaves.length < countNamedLeaves(tl) ? ", …" : ""}.`;
}

function countNamedLeaves(tl) {
  return tl.nodes.reduce((count, node) => count + (node.op === null && node.label !== null ? 1 : 0), 0);
}

/** "[(L,1), (c,2)]", bottom first as in the course's table, shortened on deep stacks. */
export function stackText(tl, k) {
  const { entries, size } = stackAt(tl, k, TABLE_STACK_ENTRIES);
  const pairs = entries.reverse().map((e) => `(${name(tl, e.node)},${e.index})`);
  const hidden = size - entries.length;
  return `[${hidden > 0 ? `… ${hidden} more, ` : ""}${pairs.join(", ")}]`;
}

/** "[a, b, c]" at step k, shortened on long lists. */
export function sortedText(tl, k) {
  const count = sortedCountAt(tl, k);
  const first = Math.max(0, count - TABLE_SORTED_ENTRIES);
  const names = tl.order.slice(first, count).map((id) => name(tl, id));
  return `[${first > 0 ? `… ${first} more, ` : ""}${names.join(", ")}]`;
}

/** One row of the step tables, for step k. */
export function tableRow(tl, k) {
  const step = stepAt(tl, k);
  const number = step.kind === "start" || step.kind === "seed" ? "start" : String(stageStepNumber(tl, k));
  if (step.stage === "sort") {
    return { stage: "sort", k, cells: [number, popText(tl, k) || "—", whatHappens(tl, k), stackText(tl, k), sortedText(tl, k)] };
  }
  const position = step.kind === "seed" || step.position === null || step.position === undefined ? "—" : String(step.position);
  const grad = step.kind === "seed" ? "1" : formatNumber(step.grad);
  return { stage: "propagate", k, cells: [number, position, name(tl, step.node), grad, whatHappens(tl, k)] };
}

/** A node's story at step k: how it was made, its local gradients, where its grad came from. */
export function storyAt(tl, id, k) {
  const node = tl.nodes[id];
  const reached = contributionsTo(tl, id, k);
  const seeded = id === tl.output && k >= tl.propagateStart;
  return {
    node,
    name: name(tl, id),
    inputs: node.children.map((child, slot) => ({ id: child, name: name(tl, child), data: tl.nodes[child].data, local: node.local_grads[slot] })),
    parents: parentsOf(tl, id).map((p) => ({ id: p.parent, name: name(tl, p.parent), slot: p.slot })),
    sortPosition: tl.sortPosition[id] >= 0 && tl.emitStep[id] <= k ? tl.sortPosition[id] : null,
    grad: gradAt(tl, id, k),
    seeded,
    contributions: reached.map((c) => ({ ...c, parentName: name(tl, c.parent) })),
  };
}

// ---- the walk at the level shown ----
//
// With scopes folded into boxes (scopes.js's collapsedGraph: {items, itemOf}), the player steps
// through level steps: consecutive node steps inside one box make one step (the box's part of
// the sort, or the gradient entering and leaving it), and every other node step stays what it is.
// A leaf's step (a leaf appended in the sort, or walked with nothing to pass on) falls inside the
// box's run rather than ending it: shared parameters would otherwise cut a box's walk into
// thousands of pieces. A level step shows the frame at the end of its node-step range, so the
// page's step number (the URL's, a room's) stays the node step, whatever is folded.

const RECEIVERS_LISTED = 4; // items named in a box step's caption

/** A leaf's sort step (a leaf appended), from the sort's columns. */
const isLeafSortStep = (nodes, node, action) => action === "emit" && nodes[node].children.length === 0;

/** A leaf's stage 2 step (a leaf walked, nothing to pass on). */
const isLeafWalkStep = (nodes, step) => nodes[step.node].children.length === 0 && step.kind === "propagate" && (step.updates?.length ?? 0) === 0;

/** Each step's node, and 1 for a leaf's step, as typed arrays: levelTimeline reads these at every fold, not the steps. */
function stepIndex(tl) {
  const { nodes, sortSteps, propagateSteps, propagateStart } = tl;
  const count = tl.last + 1;
  const stepNode = new Int32Array(count);
  const leafStep = new Uint8Array(count);
  stepNode[0] = tl.output;
  const { node, action } = sortSteps.sort;
  for (let i = 0; i < node.length; i++) {
    stepNode[i + 1] = node[i];
    leafStep[i + 1] = isLeafSortStep(nodes, node[i], action[i]) ? 1 : 0;
  }
  for (let i = 0; i < propagateSteps.length; i++) {
    stepNode[propagateStart + i] = propagateSteps[i].node;
    leafStep[propagateStart + i] = isLeafWalkStep(nodes, propagateSteps[i]) ? 1 : 0;
  }
  return { stepNode, leafStep };
}

/**
 * `tl.steps`, every step as one plain array, made when first read: the page reads a step at a time
 * (stepAt), and a microgpt step's 290,000 sort steps as objects were most of buildTimeline's time and
 * 28 MB of its heap.
 */
function withSteps(tl) {
  let steps = null;
  Object.defineProperty(tl, "steps", { enumerable: true, get: () => (steps ??= Array.from({ length: tl.last + 1 }, (_, k) => stepAt(tl, k))) });
  return tl;
}

/** Whether step k is stage 1's (the sort's). */
const inSort = (tl, k) => k < tl.propagateStart;

/** Step k: stage 2's are kept as objects; a stage 1 step is made from the sort's columns when read. */
function stepAt(tl, k) {
  if (!inSort(tl, k)) return tl.propagateSteps[k - tl.propagateStart];
  const { sort, stack, sorted } = tl.sortSteps;
  if (k === 0) return { stage: "sort", kind: "start", node: tl.output, stack: stack[0], sorted: 0 };
  const i = k - 1;
  return { stage: "sort", kind: sort.action[i], node: sort.node[i], index: sort.index[i], child: sort.child[i], stack: stack[k], sorted: sorted[k] };
}

/**
 * The level steps of timeline `tl` with `folded` ({items, itemOf}, or null: nothing folded, one
 * level step per node step). Each level step j covers node steps from[j]..to[j]; item[j] is the
 * box item it walks (-1: a node's own step, as today) and focus[j] the node the camera follows
 * (the box's last node walked). levelOf[k] is the level step holding node step k.
 */
export function levelTimeline(tl, folded) {
  const count = tl.last + 1;
  if (!folded) {
    const iota = Int32Array.from({ length: count }, (_, k) => k);
    return { folded: null, from: iota, to: iota, item: new Int32Array(count).fill(-1), focus: null, levelOf: iota, last: tl.last, sortEnd: tl.sortEnd, propagateStart: tl.propagateStart };
  }
  const { items, itemOf } = folded;
  const { stepNode, leafStep, propagateStart } = tl;
  const isBox = Uint8Array.from(items, (it) => (it.box ? 1 : 0));
  const from = new Int32Array(count);
  const to = new Int32Array(count);
  const item = new Int32Array(count);
  const focus = new Int32Array(count);
  const levelOf = new Int32Array(count);
  let j = -1;
  for (let k = 0; k < count; k++) {
    const node = stepNode[k];
    const at = itemOf[node];
    const box = isBox[at] ? at : -1;
    const run = j >= 0 ? item[j] : -1;
    const sameStage = k > 0 && k !== propagateStart; // the stage changes once, at the seed
    if (run >= 0 && sameStage && (box === run || leafStep[k])) {
      to[j] = k;
      if (box === run) focus[j] = node;
    } else {
      j += 1;
      from[j] = to[j] = k;
      item[j] = box;
      focus[j] = node;
    }
    levelOf[k] = j;
  }
  const size = j + 1;
  return {
    folded, from: from.slice(0, size), to: to.slice(0, size), item: item.slice(0, size), focus: focus.slice(0, size), levelOf,
    last: j, sortEnd: levelOf[tl.sortEnd], propagateStart: levelOf[tl.propagateStart],
  };
}

/** A box's name as its title says it ("Layer[1]", "linear · for head = 2"), or a node's name. */
export function itemName(tl, folded, index) {
  const it = folded.items[index];
  if (!it.box) return name(tl, it.node);
  const scope = it.box;
  // `⊞ values 33–64 · table (4)`: a group's places are among the values its level made
  if (scope.group) return `⊞ ${scope.name}${scope.level ? ` · ${scope.level.name}` : ""}`;
  return `⊞ ${scope.name}${scope.parent?.name.startsWith("for ") ? ` · ${scope.parent.name}` : ""}`;
}

function edgeCount(count) {
  return count === 1 ? "1 edge" : `${grouped(count)} edges`;
}

/**
 * What box step j did: its stage, name, how many node steps it holds and nodes it sorted or
 * walked; in stage 2 the gradient that arrived at the box's nodes from outside it (Σ and how many
 * edges), what left it, summed per receiving item, and those updates per receiving node (first
 * value before, last after). `updates: false` leaves that last list empty: the step tables, which
 * summarise every box step of a walk when a graph loads, never show it, and making a record per
 * receiving node of every box was most of that load's garbage.
 */
export function boxStepSummary(tl, levels, j, { updates: listUpdates = true } = {}) {
  const { folded } = levels;
  const box = levels.item[j];
  const first = levels.from[j];
  const last = levels.to[j];
  const stage = inSort(tl, first) ? "sort" : "propagate";
  const summary = { stage, box, name: itemName(tl, folded, box), steps: last - first + 1, nodes: 0, positions: [], arrived: { sum: 0, count: 0 }, leaves: [], updates: [] };
  if (stage === "sort") {
    summary.nodes = emitsBetween(tl, first, last);
    return summary;
  }
  const { itemOf } = folded;
  const seen = new Set();
  const leaving = new Map(); // receiving item -> {sum, count}
  const updated = new Map(); // receiving node -> [its first update's before, its last update]
  for (let k = first; k <= last; k++) {
    const step = stepAt(tl, k);
    if (itemOf[step.node] !== box) continue; // a leaf walked on the way, outside the box: nothing to pass on
    if (step.position !== null && step.position !== undefined) summary.positions.push(step.position);
    if (!seen.has(step.node)) {
      seen.add(step.node);
      summary.nodes += 1;
      addArrived(tl, step.node, last, itemOf, box, summary.arrived);
    }
    const updates = step.updates ?? [];
    for (let u = 0; u < updates.length; u++) {
      const update = updates[u];
      const to = itemOf[update.child];
      if (to === box) continue;
      let out = leaving.get(to);
      if (!out) leaving.set(to, (out = { item: to, sum: 0, count: 0 }));
      out.sum += updateDelta(update);
      out.count += 1;
      if (!listUpdates) continue;
      const before = updated.get(update.child);
      if (before) before[1] = update;
      else updated.set(update.child, [update.before, update]);
    }
  }
  summary.leaves = [...leaving.values()].sort((a, b) => b.item - a.item).map((out) => ({ ...out, name: itemName(tl, folded, out.item) }));
  // Each receiving node's last update with the value it had before the first (the Map keeps the first's order).
  summary.updates = Array.from(updated.values(), ([before, update]) => ({ ...update, before }));
  return summary;
}

const updateDelta = (u) => u.delta ?? u.after - u.before;

/**
 * How many emit steps lie in stage 1's steps first..last: each sort step carries the sorted list's
 * length after it, which only an emit adds to. Counting them one by one read every sort step again
 * whenever the step tables were redrawn, as a box opens or closes (291,285 steps at 102,715 nodes).
 */
function emitsBetween(tl, first, last) {
  const { sorted } = tl.sortSteps;
  return sorted[last] - (first > 0 ? sorted[first - 1] : 0);
}

/**
 * Adds to `arrived` ({sum, count}) the updates node `id` received up to step k from outside box
 * item `box`: contributionsTo's, read in place rather than copied into a list per node.
 */
function addArrived(tl, id, k, itemOf, box, arrived) {
  const { contributionStart, contributed } = tl;
  for (let at = contributionStart[id], end = contributionsEnd(tl, id, k); at < end; at++) {
    const c = contributed[at];
    if (c.parent !== null && itemOf[c.parent] === box) continue;
    arrived.sum += updateDelta(c);
    arrived.count += 1;
  }
}

function boxHappens(tl, summary) {
  const nodes = summary.nodes === 1 ? "1 node" : `${grouped(summary.nodes)} nodes`;
  const steps = summary.steps === 1 ? "1 step" : `${grouped(summary.steps)} steps`;
  if (summary.stage === "sort") return `Inside ${summary.name}: ${nodes} sorted in ${steps}.`;
  const { arrived, leaves } = summary;
  const into = arrived.count
    ? `Gradient arrives at ${summary.name} (Σ ${formatNumber(arrived.sum)} over ${edgeCount(arrived.count)})`
    : `Gradient moves on inside ${summary.name} (nothing new arrives from outside it)`;
  const listed = leaves.slice(0, RECEIVERS_LISTED).map((out) => `${out.name} (Σ ${formatNumber(out.sum)} over ${edgeCount(out.count)})`);
  if (leaves.length > RECEIVERS_LISTED) listed.push(`${grouped(leaves.length - RECEIVERS_LISTED)} more`);
  const out = leaves.length ? ` and leaves it to ${listed.join(", ")}` : " and nothing leaves it";
  return `${into}${out}: ${nodes} walked in ${steps}.`;
}

/** What level step j shows: frameAt's frame at the end of its range, with `level` ({index, count, box}) and, for a box step, its caption and the box's updates. */
export function levelFrameAt(tl, levels, j) {
  j = Math.max(0, Math.min(levels.last, j));
  const k = levels.to[j];
  const frame = frameAt(tl, k);
  const level = { index: j, count: levels.last + 1, from: levels.from[j], to: k, box: null };
  if (levels.item[j] < 0) return { ...frame, level };
  const summary = boxStepSummary(tl, levels, j);
  level.box = summary;
  const focus = levels.focus[j];
  const flags = frame.flags;
  if (frame.focus !== null) flags[frame.focus] &= ~FLAG.FOCUS;
  flags[focus] |= FLAG.FOCUS;
  let { step, edges } = frame;
  if (summary.stage === "propagate") {
    for (const u of frame.step.updates ?? []) flags[u.child] &= ~FLAG.RECEIVING; // the last node step's, inside the box or not
    for (const u of summary.updates) flags[u.child] |= FLAG.RECEIVING;
    // The box's own step: what left it, node by node (the walk panel lists it, the page marks the boxes receiving).
    step = { stage: "propagate", kind: "box", node: focus, grad: summary.arrived.sum, updates: summary.updates, resumed: false, position: null };
    edges = summary.updates.map((u) => ({ parent: u.parent, slot: u.slot, child: u.child, kind: "update" }));
  } else {
    step = { ...step, kind: "box", node: focus };
    edges = [];
  }
  const stage = tl.learner ? "Your backward" : summary.stage === "sort" ? "Stage 1" : "Stage 2";
  const end = k === tl.last ? ` Done: ${doneText(tl)}` : "";
  return { ...frame, kind: "box", step, focus, flags, edges, caption: `${stage} · ${boxHappens(tl, summary)}${end}`, level };
}

/** One row of the step tables at the level shown, for level step j (numbered as the player counts). */
export function levelTableRow(tl, levels, j) {
  const k = levels.to[j];
  const step = stepAt(tl, k);
  const sorting = step.stage === "sort";
  const number = step.kind === "start" || step.kind === "seed" ? "start" : String(sorting ? j : j - levels.propagateStart);
  if (levels.item[j] < 0) {
    const row = tableRow(tl, k);
    row.cells[0] = number;
    return { ...row, k: j };
  }
  const summary = boxStepSummary(tl, levels, j, { updates: false }); // a row shows no update of its own
  const text = boxHappens(tl, summary);
  if (sorting) return { stage: "sort", k: j, cells: [number, summary.name, text, stackText(tl, k), sortedText(tl, k)] };
  // The walk reads the sorted list backwards: the box's positions, from the highest down.
  const high = summary.positions.reduce((a, b) => Math.max(a, b), -1);
  const low = summary.positions.reduce((a, b) => Math.min(a, b), Infinity);
  const positions = high < 0 ? "—" : high === low ? String(high) : `${high}–${low}`;
  return { stage: "propagate", k: j, cells: [number, positions, summary.name, `Σ ${formatNumber(summary.arrived.sum)}`, text] };
}
