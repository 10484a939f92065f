// Scopes: every node carries the chain of calls and loop iterations it was made in (its `scope`,
// from the server). A scope can be collapsed into one box that stands for all the nodes made in
// it, showing what goes in and what comes out; clicking the box opens it in place, one level down.
// A big graph opens with the scopes just above the innermost ones collapsed (an MLP's layers, whose
// neurons are the innermost; its parameters, made in the layers' __init__) when that leaves few
// enough items to read; otherwise (a transformer step, whose attention heads alone leave thousands
// of loose nodes) at the deepest scope depth that does: see defaultCollapsed.
//
// Values made in no scope of their own (micrograd's demo computes its loss at the program's top
// level: 1,281 values beside its model) would crowd any picture: at a level of more than
// READABLE_ITEMS items, each long run of them made on one source line is a *line box*, an instance
// like the others (see lineInstances). A level still too big (a table of 1,024 parameters) cuts its
// long runs of values into *groups* of GROUP_FAN, in tiers (groupInstances). The choice of scope
// boxes is made without line boxes and groups.
//
// A scope instance is a maximal run of consecutive node ids that share a scope prefix: nodes are
// numbered in creation order, so one call or one loop iteration is such a run. (The server numbers
// the calls of one function from different places in the code, `table`, `table (2)`, so made back
// to back they are still two runs; calls from one place, a comprehension's, read as one.) Because a box is a
// run of ids, the collapsed view is still a graph whose edges go from lower to higher ids, and it
// is laid out by the server's layered layout (POST /layout), the same code that lays out every
// graph, rather than by a second layout in the page. The graph's output is never hidden.
//
// Positions: placeGraph (layout.js) turns the collapsed graph's layout into pixels; real nodes
// keep their ids and are drawn by the renderer as usual, hidden nodes get their box's position (so
// anything that centres a node finds its box).
//
// This module is what is computed, in pure functions (the scope instances, which boxes a collapsed
// set makes, their inputs and outputs, where boxes and frames go and what they say); scopeview.js
// draws it and keeps the page's collapsed set.

import { formatNumber, grouped, nodeName } from "./format.js";
import { placeGraph, placedSize } from "./layout.js";

/** Above this many nodes a graph opens with its scopes collapsed (an MLP(3, [4, 4, 1]) forward pass has 125), and a box opens with its sub-scopes collapsed. */
export const COLLAPSE_ABOVE = 100;
/**
 * The most items (boxes and loose nodes) a graph opens with when its layer scopes leave more. At
 * 1280x720 the graph panel is about 900x240 px: no picture of more than a few boxes reads there
 * whole, so the folded picture is a map, fitted whole and read as the camera follows the walk at a
 * readable zoom. 60 items is about 15 layers of four in the server's layout, a map that still
 * shows every box and the flow between them; the next depth down is 3-5 times as many. The choice
 * depends on the graph only, so a phone (390x844) opens the same boxes. See docs/learners.md.
 */
export const READABLE_ITEMS = 60;
/** A graph too big to fold readably is still folded when that draws at most a quarter of its values. */
const FOLD_GAIN = 4;
/**
 * The fewest values a line box holds: a shorter run reads as well drawn (the 16 sums of a residual
 * connection, `x = [a + b for ...]`, are a box; three values of `loss = a + b * c` are not).
 */
export const LINE_RUN = 8;
/** The most items a group of values opens in (groupInstances): 32 values, or 32 groups of 32, and so on. */
export const GROUP_FAN = 32;
const CODE_SHOWN = 30; // characters of a line box's code in its title (its accessible name has all of it)
const SEPARATOR = " › ";
const LISTED = 6; // inputs and outputs named in a box's description
const TITLE_PX = 19; // a box's title, shrunk to fit a long one (CHAR_EM: a monospace character's width in em)
const CHAR_EM = 0.6;
const LINE_PX = 13.5; // a box's second and third lines (a sans-serif character is about SANS_EM wide), shrunk to fit
const SANS_EM = 0.56;

/** The font size (px) at which a box's line of text fits its width. */
export function lineSize(text, width) {
  return Math.min(LINE_PX, (width - 24) / (SANS_EM * Math.max(1, text.length)));
}
const FRAMES_SHOWN = 60; // frames around expanded scopes; more would only clutter
const FRAME_PAD = 10;
const FOLD_CHAR_PX = 8.4; // a character of the frame's button text, in graph pixels
const BOX_GROW = 26; // a box is this much taller than a record (rows are 30 px apart), for its third line

/**
 * The scope instances of a graph, outermost first, each {key, name, path, depth, first, last,
 * parent, children, lines}, and its line boxes (lineInstances), each with `line` (its source line)
 * and `code` (what that line says: `source`'s line when given, the program the graph came from,
 * else the code of the run's widest expression); `lines` counts an instance's line boxes.
 */
const NO_SCOPE = [];

export function scopeInstances(model, source = null) {
  const instances = [];
  const seen = new Map(); // path -> how many instances of it so far
  const open = [];
  const innermost = new Array(model.nodes.length); // each node's innermost instance, or null
  let previous = null; // the scope of the node before: nodes of one call share one scope list (the columnar answer's table)
  for (const node of model.nodes) {
    const scope = node.scope ?? NO_SCOPE;
    if (scope !== previous) {
      let depth = 0;
      while (depth < open.length && depth < scope.length && open[depth].name === scope[depth]) depth++;
      for (let d = depth; d < open.length; d++) open[d].last = node.id - 1; // closed: its last node was the one before
      open.length = depth;
      for (let d = depth; d < scope.length; d++) {
        const path = scope.slice(0, d + 1).join(SEPARATOR);
        const count = seen.get(path) ?? 0;
        seen.set(path, count + 1);
        const parent = d > 0 ? open[d - 1] : null;
        const instance = { key: `${path}#${count}`, name: scope[d], path, depth: d, first: node.id, last: node.id, parent, children: [], lines: 0 };
        if (parent) parent.children.push(instance);
        instances.push(instance);
        open.push(instance);
      }
      previous = scope;
    }
    innermost[node.id] = open.length ? open[open.length - 1] : null;
  }
  for (const instance of open) instance.last = model.nodes.length - 1;
  const lines = lineInstances(model, instances, innermost, seen, source);
  for (const line of lines) line.parent?.children.sort((a, b) => a.first - b.first);
  const all = lines.length ? [...instances, ...lines] : instances;
  const groups = groupInstances(model, all, innermost, seen);
  if (lines.length === 0 && groups.length === 0) return instances;
  for (const parent of new Set(groups.map((group) => group.parent))) parent?.children.sort((a, b) => a.first - b.first);
  return [...all, ...groups].sort((a, b) => a.first - b.first || a.depth - b.depth); // outermost first again
}

/** A line box or a group of values: a box of the picture, but no scope of the program (the scope choice leaves it out). */
const isView = (s) => Boolean(s.line || s.group);

/**
 * The groups of values of a graph: at a level (the top, a scope or a line box of more than
 * COLLAPSE_ABOVE nodes) whose items, line boxes counted, are still more than READABLE_ITEMS (the
 * transformer's tables of 1,024 parameters, a loss line's 677 values), each run of at least
 * LINE_RUN consecutive values the level made itself is cut into groups of GROUP_FAN values, in
 * groups of GROUP_FAN such groups and so on, as many tiers as the run needs: any group opens in at
 * most GROUP_FAN items, down to single values. A group is named by its values' places among those
 * the level made itself, `values 33–64`, keeps that level as `level` (null: the top), and is
 * counted in its parent's `lines`. The top level of a graph with no scope and no line box gets none.
 */
function groupInstances(model, instances, scopeOf, seen) {
  const n = model.nodes.length;
  if (n <= COLLAPSE_ABOVE) return [];
  const owner = scopeOf.slice(); // each node's innermost instance, line boxes included
  for (const s of instances) if (s.line) owner.fill(s, s.first, s.last + 1);
  const TOP = { depth: -1, path: "", first: 0, last: n - 1, children: instances.filter((s) => s.parent === null) };
  const { unreadable } = unreadableLevels(model, TOP, owner);
  // A graph with no box at all (a long program of loose lines) stays as it is drawn: its groups
  // would fold it into numbered runs, where the whole picture reads better.
  if (TOP.children.length === 0) unreadable.delete(TOP);
  if (unreadable.size === 0) return [];
  const made = [];
  const counted = new Map(); // level -> its own values so far
  let run = null; // {level, first, last, place}: consecutive values of one level
  const close = () => {
    if (!run) return;
    counted.set(run.level, run.place + run.last - run.first);
    if (run.last - run.first + 1 >= LINE_RUN) groupRun(run, seen, made);
    run = null;
  };
  for (let id = 0; id < Math.min(n, model.output); id++) { // the output stays out: it is always drawn
    const level = owner[id] ?? TOP;
    if (run && run.level === level) {
      run.last = id;
      continue;
    }
    close();
    if (unreadable.has(level)) run = { level, first: id, last: id, place: (counted.get(level) ?? 0) + 1 };
  }
  close();
  return made;
}

/**
 * Cuts a run {level, first, last, place} into groups (groupInstances), tier by tier; `place` is its
 * first value's place among the values its level made itself.
 */
function groupRun({ level, first, last, place }, seen, made) {
  let size = GROUP_FAN;
  while (Math.ceil((last - first + 1) / size) > GROUP_FAN) size *= GROUP_FAN;
  const owner = level.depth >= 0 ? level : null; // the scope or line box that made the values (null: the top)
  const cut = (parent, from, to, size) => {
    for (let start = from; start <= to; start += size) {
      const end = Math.min(to, start + size - 1);
      const name = `values ${grouped(place + start - first)}–${grouped(place + end - first)}`;
      const path = parent ? `${parent.path}${SEPARATOR}${name}` : name;
      const count = seen.get(path) ?? 0;
      seen.set(path, count + 1);
      const depth = parent ? parent.depth + 1 : 0;
      const group = { key: `${path}#${count}`, name, path, depth, first: start, last: end, parent, children: [], lines: 0, group: true, level: owner };
      if (parent) {
        parent.children.push(group);
        parent.lines += 1;
      }
      made.push(group);
      if (size > GROUP_FAN && end > start) cut(group, start, end, size / GROUP_FAN);
    }
  };
  cut(owner, first, last, size);
}

/**
 * The line boxes of a graph. A level (the top, or a scope of more than COLLAPSE_ABOVE nodes, as
 * its box opens) whose items (sub-scopes worth a box, and its own values) are more than
 * READABLE_ITEMS gets one for each maximal run of at least LINE_RUN consecutive values it made
 * itself on one source line (the graph's output stays out: it is always drawn), unless that run
 * is all the level holds (a box would only be the level again).
 */
function lineInstances(model, instances, innermost, seen, source) {
  const n = model.nodes.length;
  if (n <= COLLAPSE_ABOVE) return [];
  const TOP = { depth: -1, path: "", first: 0, last: n - 1, children: instances.filter((s) => s.parent === null) };
  const { unreadable, items } = unreadableLevels(model, TOP, innermost);
  if (unreadable.size === 0) return [];
  const runs = [];
  let run = null;
  const close = () => {
    if (run && run.last - run.first + 1 >= LINE_RUN) runs.push(run);
    run = null;
  };
  for (let id = 0; id < Math.min(n, model.output); id++) {
    const level = innermost[id] ?? TOP;
    const line = model.nodes[id].span?.line;
    if (run && run.level === level && run.line === line) {
      run.last = id;
      continue;
    }
    close();
    if (line !== undefined && line !== null && unreadable.has(level)) run = { level, line, first: id, last: id };
  }
  close();
  const perLevel = new Map();
  for (const r of runs) perLevel.set(r.level, (perLevel.get(r.level) ?? 0) + 1);
  const sourceLines = source === null ? null : source.split("\n");
  const made = [];
  for (const { level, line, first, last } of runs) {
    if (perLevel.get(level) === 1 && last - first + 1 === items.get(level) && level.children.length === 0) continue;
    const parent = level === TOP ? null : level;
    const name = `line ${line}`;
    const path = parent ? `${parent.path}${SEPARATOR}${name}` : name;
    const count = seen.get(path) ?? 0;
    seen.set(path, count + 1);
    const code = sourceLines?.[line - 1]?.trim() || runCode(model, first, last);
    const instance = { key: `${path}#${count}`, name, path, depth: level.depth + 1, first, last, parent, children: [], lines: 0, line, code };
    if (parent) {
      parent.children.push(instance);
      parent.lines += 1;
    }
    made.push(instance);
  }
  return made;
}

/**
 * The levels (`top`, or an instance) of more than COLLAPSE_ABOVE nodes whose items (the values
 * they made themselves, by `owner`: each node's innermost instance or null; and their
 * sub-instances worth a box) are more than READABLE_ITEMS; and each level's own values, `items`.
 */
function unreadableLevels(model, top, owner) {
  const levelOf = (s) => (s === null ? top : boxable(s) ? s : (s.parent ?? top)); // a one-node call's value is its caller's
  const items = new Map(); // level -> its own values
  const n = model.nodes.length;
  for (let id = 0; id < n; ) { // a run of nodes of one owner at a time
    const at = owner[id] ?? null;
    let end = id + 1;
    while (end < n && (owner[end] ?? null) === at) end++;
    const level = levelOf(at);
    items.set(level, (items.get(level) ?? 0) + end - id);
    id = end;
  }
  const unreadable = new Set();
  for (const [level, own] of items) {
    if (level.last - level.first + 1 > COLLAPSE_ABOVE && own + level.children.filter(boxable).length > READABLE_ITEMS) unreadable.add(level);
  }
  return { unreadable, items };
}

/**
 * What a run of values made on one line says, without the program: the code of its widest
 * operation (the outermost: the last made of the widest; a constant it takes has its span too),
 * after the name it was given.
 */
function runCode(model, first, last) {
  let widest = model.nodes[first];
  const width = (node) => (node.children.length ? 1e9 : 0) + (node.span.end_line - node.span.line) * 1e6 + node.span.end_column - node.span.column;
  for (let id = first + 1; id <= last; id++) if (width(model.nodes[id]) >= width(widest)) widest = model.nodes[id];
  const expr = widest.expr ?? "";
  return widest.label && expr ? `${widest.label} = ${expr}` : expr;
}

/** What an instance is called in a list or on its box: a scope's name; a line box's line and the start of its code. */
export function scopeLabel(scope) {
  if (!scope.code) return scope.name;
  const code = scope.code.length > CODE_SHOWN ? `${scope.code.slice(0, CODE_SHOWN - 1)}…` : scope.code;
  return `${scope.name}: ${code}`;
}

/**
 * Which of the `named` scopes a list of at most `most` shows: the outermost first, level by level,
 * so that past `most` (a model's neurons, a long loop's iterations) it still has every scope at the
 * top (the line boxes of a loss made at the top level). `outermost`: the named scopes with no named parent.
 */
export function listedScopes(outermost, named, most) {
  const listed = new Set();
  for (let level = outermost; level.length > 0 && listed.size < most; ) {
    const next = [];
    for (const s of level.slice(0, most - listed.size)) {
      listed.add(s);
      for (const c of s.children) if (named.has(c)) next.push(c);
    }
    level = next;
  }
  return listed;
}

/** Has scopes inside it (its line boxes and groups, counted in `lines`, left out: the choice of scope boxes is made without them). */
const hasSubScopes = (s) => s.children.length > (s.lines ?? 0);

/** The scopes just above the innermost ones (an MLP's layers): those whose sub-scopes have none. */
export function layerScopes(instances) {
  return new Set(instances.filter((s) => !isView(s) && hasSubScopes(s) && s.children.every((c) => isView(c) || !hasSubScopes(c))).map((s) => s.key));
}

const indexes = new WeakMap(); // instances -> scopeIndex's answer, computed once per model

/**
 * What every question about a model's scopes needs, computed once (O(nodes × depth)): each
 * instance's index (instance.index), each node's innermost scope (-1: none; line boxes and groups left out) and users (the
 * nodes that take it as an input, in CSR form: users[userStart[id] .. userStart[id + 1]]); and the leaves with users (no
 * inputs, one user or more: the values a box may take in), in id order.
 */
export function scopeIndex(model, instances) {
  let index = indexes.get(instances);
  if (index && index.model === model) return index;
  const n = model.nodes.length;
  const innermost = new Int32Array(n).fill(-1);
  instances.forEach((s, i) => {
    s.index = i;
    if (!isView(s)) innermost.fill(i, s.first, s.last + 1); // a sub-scope comes after its scope, and overwrites it
  });
  const userStart = new Int32Array(n + 1);
  for (const node of model.nodes) for (const c of node.children) userStart[c + 1] += 1;
  for (let id = 0; id < n; id++) userStart[id + 1] += userStart[id];
  const users = new Int32Array(userStart[n]);
  const filled = userStart.slice(0, n);
  const leaves = [];
  for (const node of model.nodes) {
    if (node.children.length === 0 && userStart[node.id + 1] > userStart[node.id]) leaves.push(node.id);
    for (const c of node.children) users[filled[c]++] = node.id;
  }
  index = { model, innermost, userStart, users, leaves, byKey: new Map(instances.map((s) => [s.key, s])) };
  indexes.set(instances, index);
  return index;
}

/** Worth a box of its own: more than one node, or scopes inside. */
const boxable = (s) => s.last > s.first || s.children.length > 0;

/** In the frontier of a depth: a scope at that depth, or one without sub-scopes above it; and worth a box (a one-node call stays a node). */
const inFrontier = (s, depth) => !isView(s) && boxable(s) && (s.depth === depth || (s.depth < depth && !hasSubScopes(s)));

/** The collapsed set of scope depth `depth`: every instance at that depth, and the childless ones above it (of more than one node each). */
export function frontier(instances, depth) {
  return new Set(instances.filter((s) => inFrontier(s, depth)).map((s) => s.key));
}

/**
 * How many items (boxes and loose nodes) collapsedGraph makes of frontier(depth), for every
 * depth, without making them. A node is loose from the depth just below its innermost scope
 * (never, when that scope is childless: it is a box at every depth; from that scope's own depth
 * when it is a one-node call, which is never a box), so one pass counts the loose
 * nodes of all depths; then at each depth only the leaves need a look (one all of whose users are
 * in one box goes into that box, and a box left empty is dropped).
 */
export function frontierSizes(model, instances) {
  const { innermost, userStart, users, leaves } = scopeIndex(model, instances);
  const depths = instances.reduce((most, s) => Math.max(most, s.depth + 1), 0);
  const looseAt = new Int32Array(depths + 1); // nodes loose from this depth on
  for (let id = 0; id < model.nodes.length; id++) {
    const inner = innermost[id];
    const scope = inner >= 0 ? instances[inner] : null;
    let from = 0; // the depth from which it is loose
    if (id < model.output && scope) {
      if (!hasSubScopes(scope) && boxable(scope)) continue; // a box at every depth
      from = hasSubScopes(scope) ? scope.depth + 1 : scope.depth; // (a one-node call is no box even at its depth)
    }
    looseAt[from] += 1;
  }
  const boxAt = (id, depth) => {
    if (id >= model.output || innermost[id] < 0) return -1;
    let scope = instances[innermost[id]];
    if (scope.depth <= depth) return inFrontier(scope, depth) ? scope.index : -1;
    while (scope.depth > depth) scope = scope.parent;
    return scope.index;
  };
  const sizes = [];
  let loose = 0;
  for (let depth = 0; depth < depths; depth++) {
    loose += looseAt[depth];
    const members = new Map(); // box (instance index) -> how many nodes it holds
    for (const s of instances) {
      if (inFrontier(s, depth)) members.set(s.index, Math.max(0, Math.min(s.last, model.output - 1) - s.first + 1));
    }
    let absorbed = 0;
    for (const id of leaves) {
      const box = boxAt(users[userStart[id]], depth);
      let all = box >= 0;
      for (let u = userStart[id] + 1; all && u < userStart[id + 1]; u++) all = boxAt(users[u], depth) === box;
      if (!all) continue;
      const was = boxAt(id, depth);
      if (was === box) continue;
      members.set(box, members.get(box) + 1);
      if (was < 0) absorbed += 1;
      else members.set(was, members.get(was) - 1);
    }
    let boxes = 0;
    for (const count of members.values()) if (count > 0) boxes += 1;
    sizes.push(boxes + loose - absorbed);
  }
  return sizes;
}

/**
 * The scopes a graph opens collapsed. A small graph (COLLAPSE_ABOVE): none. Else its layer scopes
 * (an MLP's layers) when they leave at most `readable` items; else the deepest frontier that does
 * (a transformer step: a column of boxes for each position). When none does, the fewer items of
 * the two, if folding draws at most 1 / FOLD_GAIN of the nodes: a loop of one-line iterations
 * folded into a box each would be no easier to read than its values, and would hide them. And
 * when what that leaves is still more than `readable` items, the line boxes of the levels it
 * shows (the top, and the scopes left open) are boxes too: micrograd's demo opens as its model,
 * its parameters and a box for each line of the loss. And when that is still too many, so are the
 * groups of the values those levels made (groupInstances).
 */
export function defaultCollapsed(model, instances, readable = READABLE_ITEMS) {
  const chosen = scopeBoxesChosen(model, instances, readable);
  const shown = (s) => {
    for (let outer = s.parent; outer; outer = outer.parent) if (chosen.has(outer.key)) return false;
    return true;
  };
  let items = chosen.size ? itemCount(model, instances, chosen) : model.nodes.length;
  for (const kind of [(s) => s.line, (s) => s.group && !s.parent?.group]) { // line boxes, then groups of the values left
    if (items <= readable) break;
    const added = instances.filter((s) => kind(s) && shown(s));
    if (added.length === 0) continue;
    for (const s of added) chosen.add(s.key);
    const { boxOf, scopes } = boxesOf(model, instances, chosen);
    const kept = new Set();
    for (const box of boxOf) if (box >= 0) kept.add(scopes[box].key);
    for (const s of added) if (!kept.has(s.key)) chosen.delete(s.key); // all taken in by the box that alone uses them (a model's inputs)
    items = itemCount(model, instances, chosen);
  }
  return chosen;
}

/** defaultCollapsed's choice among the scopes, line boxes and groups left out. */
function scopeBoxesChosen(model, instances, readable) {
  const n = model.nodes.length;
  if (n <= COLLAPSE_ABOVE) return new Set();
  const layers = layerScopes(instances);
  const layerItems = layers.size ? itemCount(model, instances, layers) : n;
  if (layerItems <= readable) return layers;
  const sizes = frontierSizes(model, instances);
  const readableDepth = sizes.findLastIndex((size) => size <= readable);
  if (readableDepth >= 0) return frontier(instances, readableDepth);
  const fewest = sizes.length ? Math.min(...sizes) : n;
  if (Math.min(fewest, layerItems) * FOLD_GAIN > n) return new Set();
  return fewest < layerItems ? frontier(instances, sizes.indexOf(fewest)) : layers;
}

/**
 * The collapsed set with one box opened in place, one level down: a box of more than
 * COLLAPSE_ABOVE nodes, or a group of values (the last of a tier may be small), shows its
 * sub-scopes as boxes (as a big graph opens folded), a smaller one shows all its nodes.
 */
export function openedSet(model, instances, collapsed, key) {
  const scope = scopeIndex(model, instances).byKey.get(key);
  const next = new Set(collapsed);
  next.delete(key);
  if (scope && opensOneLevel(scope)) for (const c of scope.children) if (boxable(c)) next.add(c.key);
  return next;
}

const opensOneLevel = (s) => s.group || s.last - s.first + 1 > COLLAPSE_ABOVE;

/** The collapsed set with a scope folded into one box again, everything inside it too. */
export function closedSet(model, instances, collapsed, key) {
  const scope = scopeIndex(model, instances).byKey.get(key);
  const next = new Set(collapsed);
  const drop = (s) => {
    for (const c of s.children) {
      next.delete(c.key);
      drop(c);
    }
  };
  if (scope) drop(scope);
  next.add(key);
  return next;
}

const lastBoxes = new WeakMap(); // instances -> {model, key, boxes}: the last collapsed set's boxesOf (defaultCollapsed counts the set collapsedGraph then makes)

/** One string per set of scope keys, for a cache: a scope's name may hold any character a program's string does. */
export function collapsedKey(collapsed) {
  return JSON.stringify([...collapsed].sort());
}

/** Which box (an index into `scopes`, the outermost collapsed instances) each node goes into, -1 for none: collapsedGraph's first half. */
function boxesOf(model, instances, collapsed) {
  const key = collapsedKey(collapsed);
  const last = lastBoxes.get(instances);
  if (last && last.model === model && last.key === key) return last.boxes;
  const boxes = boxesOfSet(model, instances, collapsed);
  lastBoxes.set(instances, { model, key, boxes });
  return boxes;
}

/** boxesOf's answer, made (read only: it may be shared by the next call with the same set). */
function boxesOfSet(model, instances, collapsed) {
  const boxOf = new Int32Array(model.nodes.length).fill(-1);
  const scopes = [];
  for (const s of instances) {
    if (!collapsed.has(s.key)) continue;
    let outer = s.parent;
    while (outer && !collapsed.has(outer.key)) outer = outer.parent;
    if (outer) continue; // inside a collapsed scope already
    for (let id = s.first; id <= Math.min(s.last, model.output - 1); id++) boxOf[id] = scopes.length; // the output stays in view
    scopes.push(s);
  }
  const { userStart, users, leaves } = scopeIndex(model, instances);
  for (const id of leaves) {
    const [from, to] = [userStart[id], userStart[id + 1]];
    const box = boxOf[users[from]];
    let all = box >= 0;
    for (let u = from + 1; all && u < to; u++) all = boxOf[users[u]] === box;
    if (all) boxOf[id] = box;
  }
  return { boxOf, scopes };
}

/** How many items collapsedGraph makes of a collapsed set, without making them. */
export function itemCount(model, instances, collapsed) {
  const { boxOf, scopes } = boxesOf(model, instances, collapsed);
  const kept = new Uint8Array(scopes.length); // 1: the box keeps a member
  let loose = 0;
  let boxes = 0;
  for (const box of boxOf) {
    if (box < 0) loose += 1;
    else if (kept[box] === 0) {
      kept[box] = 1;
      boxes += 1;
    }
  }
  return loose + boxes;
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
  const { boxOf, scopes } = boxesOf(model, instances, collapsed);

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

/**
 * For every box item: the nodes outside it that it uses (inputs) and its members used outside it
 * (outputs), each in id order. `index` is scopeIndex's (the users of each node). A box's ports depend
 * on its members only, so `kept` ({} at first, then given again with the same model) keeps each box's
 * answer while its members are the same: opening one box leaves the others' as they were, where
 * reading every edge of the graph at each opening took 10-25 ms at 100,000 nodes. Marks in a typed
 * array, not a Set per box: with a big graph folded into a few boxes nearly every edge crosses one,
 * and Sets of thousands of ids were the first picture's largest burst of garbage.
 */
export function boxPorts(model, items, itemOf, { userStart, users }, kept = {}) {
  const ports = new Map();
  kept.marks ??= new Int32Array(model.nodes.length).fill(-1);
  const byScope = new Map();
  for (const item of items) {
    if (!item.box) continue;
    let had = kept.byScope?.get(item.box.key);
    if (!had || !sameIds(had.members, item.members)) {
      had = { members: item.members, ports: portsOf(model, item, itemOf, userStart, users, kept.marks) };
    }
    byScope.set(item.box.key, had);
    ports.set(item.index, had.ports);
  }
  kept.byScope = byScope;
  return ports;
}

const sameIds = (a, b) => a.length === b.length && a.every((id, i) => id === b[i]);

/** One box item's ports; `marks` (-1, or the box's index for an input already listed) is left all -1. */
function portsOf(model, item, itemOf, userStart, users, marks) {
  const inputs = [];
  const outputs = [];
  for (const m of item.members) {
    for (const c of model.nodes[m].children) {
      if (itemOf[c] === item.index || marks[c] === item.index) continue;
      marks[c] = item.index;
      inputs.push(c);
    }
    for (let u = userStart[m]; u < userStart[m + 1]; u++) {
      if (itemOf[users[u]] === item.index) continue;
      outputs.push(m);
      break;
    }
  }
  for (const c of inputs) marks[c] = -1;
  return { inputs: inputs.sort((x, y) => x - y), outputs };
}

function listed(model, ids) {
  const names = ids.slice(0, LISTED).map((id) => `${nodeName(model.nodes[id])} = ${formatNumber(model.nodes[id].data)}`);
  return ids.length > LISTED ? `${names.join(", ")}, and ${grouped(ids.length - LISTED)} more` : names.join(", ");
}

/**
 * Pixel positions for the renderer: placeGraph's, with the nodes of collapsed scopes hidden at
 * their box's place. `folded` is {items, itemOf, layout} (collapsedGraph and the server's layout
 * of it) or null (nothing folded). The placement also lists the boxes and the edges into them.
 */
export function placeScoped(model, folded, direction, compactAbove) {
  if (!folded) return placeGraph(model, { direction, compact: model.nodes.length > compactAbove });
  const { items, itemOf, layout } = folded;
  const itemModel = { nodes: items.map((item) => ({ children: item.children })), layout };
  const placed = placeGraph(itemModel, { direction, compact: items.length > compactAbove });
  const hiddenAt = items.map((item) => (item.box ? { ...placed.nodes[item.index], hidden: true } : null)); // one shared object a box
  const nodes = new Array(model.nodes.length);
  for (let id = 0; id < nodes.length; id++) nodes[id] = hiddenAt[itemOf[id]] ?? placed.nodes[itemOf[id]];
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
  return { ...placed, nodes, edges, visible: items.length - boxes.length, boxes, boxEdges };
}

/** The size placeScoped's placement has (its width and height), without placing it. */
export function scopedSize(model, folded, direction, compactAbove) {
  const [layout, count] = folded ? [folded.layout, folded.items.length] : [model.layout, model.nodes.length];
  return placedSize(layout, { direction, compact: count > compactAbove });
}

const isLoop = (name) => name.startsWith("for ");
const loopHead = (name) => (isLoop(name) ? name.replace(/ (=|\[).*$/, "") : name); // "for head = 2" -> "for head"

/**
 * What each box is called: its scope's name, after the loop iterations around it that tell it
 * apart from boxes made by the same code ("for position = 3 › linear"); a loop that ran once, or
 * whose iteration all such boxes share, is left out ("Layer[1]", not "for step = 19 › … › Layer[1]").
 * A line box: its line and code ("line 24: losses = [(1 + -label * score).r…").
 */
export function boxTitles(scopes) {
  const chains = scopes.map((scope) => {
    const chain = [];
    for (let s = scope; s; s = s.parent) chain.unshift(s.name);
    return chain;
  });
  const groups = new Map(); // the code that made a box (its path, loop iterations left out) -> its boxes
  chains.forEach((chain, i) => {
    const code = chain.map(loopHead).join(SEPARATOR);
    if (!groups.has(code)) groups.set(code, []);
    groups.get(code).push(i);
  });
  const titles = new Array(scopes.length);
  for (const members of groups.values()) {
    if (isView(scopes[members[0]])) { // its line and code, or its values' places, tell it apart; the frame around it says where it is
      for (const i of members) titles[i] = scopeLabel(scopes[i]);
      continue;
    }
    const chain = chains[members[0]];
    const telling = chain.map((name, d) => d < chain.length - 1 && isLoop(name) && members.some((i) => chains[i][d] !== name));
    for (const i of members) titles[i] = chains[i].filter((_, d) => telling[d] || d === chains[i].length - 1).join(SEPARATOR);
  }
  return titles;
}

/**
 * A box's gradients at a step (`gradOf(id)`: a node's grad then, null where none has arrived yet; null: no step):
 * what arrived (the sum of its outputs' grads) and what it passed on (the sum of its inputs'),
 * each null while none of them has one; and the line the box shows (without the inputs' part when it has none).
 */
export function boxGrads(inputs, outputs, gradOf) {
  const sum = (ids) => {
    if (!gradOf) return null;
    let total = null;
    for (const id of ids) {
      const g = gradOf(id);
      if (g !== null) total = (total ?? 0) + g;
    }
    return total;
  };
  const arrived = sum(outputs);
  const passed = sum(inputs);
  let text = "grad not reached yet";
  let said = "no gradient has reached it yet";
  if (arrived !== null && inputs.length === 0) { // nothing to pass it on to (a layer fed plain numbers, the parameters)
    text = `grad out Σ ${formatNumber(arrived)}`;
    said = `its outputs' grads sum to ${formatNumber(arrived)} (what arrived); it has no inputs`;
  } else if (arrived !== null) {
    text = `grad out Σ ${formatNumber(arrived)} → in Σ ${passed === null ? "not yet" : formatNumber(passed)}`;
    said = `its outputs' grads sum to ${formatNumber(arrived)} (what arrived), its inputs' to ${passed === null ? "nothing yet" : formatNumber(passed)} (what it passed on)`;
  }
  return { arrived, passed, text, said };
}

/**
 * A box's accessible name: the text on screen first (a compact box shows its title only), then what it holds and does.
 * `g`: its boxGrads at this step when the caller has them already (scopeview's step draws its grads line from them too).
 */
export function boxDescription(model, box, gradOf, compact = false, g = boxGrads(box.inputs, box.outputs, gradOf)) {
  const { title, sub } = box;
  return `${compact ? title : `${title} ${sub} ${g.text}`}. ${boxHolds(model, box)}; ${g.said}. Click to open.`;
}

// What a box holds, in words, by box: the same at every step, so it is written once per box drawn
// rather than listing the box's first inputs and outputs with their data again at every step.
const holdsSaid = new WeakMap();

function boxHolds(model, box) {
  let said = holdsSaid.get(box);
  if (said === undefined) {
    const { scope, inputs, outputs } = box;
    const what = scope.line ? `${scope.path}, the values line ${scope.line} made (${scope.code})` : scope.group ? groupSaid(scope) : scope.path;
    said = `${what}, collapsed: ${grouped(inputs.length)} in (${listed(model, inputs)}); ${grouped(outputs.length)} out (${listed(model, outputs)})`;
    holdsSaid.set(box, said);
  }
  return said;
}

/** What a group of values is, in words: `values 33–64 of those table (4) made itself, in table (4) (path)`. */
function groupSaid(group) {
  const { level } = group;
  const maker = level ? scopeLabel(level) : "the program's top level";
  return `${group.name} of those ${maker} made itself${level ? `, in ${level.path}` : ""}`;
}

/**
 * What each collapsed box shows, where: its rectangle (covering the record and the room for its
 * op circle, so edges end at its border; left to right, taller than a record, for its three
 * lines), title, subtitle and title size, and its inputs and outputs (node ids). What its grads
 * line and accessible name say depends on the step: boxGrads and boxDescription.
 */
export function scopeBoxes(model, folded, placement, ports) {
  const g = placement.geometry;
  const W = g.box.width;
  const H = g.box.height;
  const before = 2 * g.opRadius + g.opGap;
  const lr = placement.direction !== "BT";
  const grow = placement.compact || !lr ? 0 : BOX_GROW;
  const titles = boxTitles(placement.boxes.map(({ item }) => item.box));
  return placement.boxes.map(({ item, p }, i) => {
    const { inputs, outputs } = ports.get(item.index);
    const [x, y, w, h] = lr ? [p.cx - W / 2 - before, p.cy - H / 2 - grow / 2, W + before, H + grow] : [p.cx - W / 2, p.cy - H / 2, W, H + before];
    const scope = item.box;
    const title = `⊞ ${titles[i]}`;
    const sub = `${grouped(item.members.length)} values · ${grouped(inputs.length)} in → ${grouped(outputs.length)} out`;
    const titleSize = Math.min(TITLE_PX, (w - 24) / (CHAR_EM * title.length));
    return { item, scope, inputs, outputs, x, y, w, h, title, sub, titleSize };
  });
}

/**
 * A dashed frame around each opened scope, with the text of its "⊟ name" button: the way to fold
 * a scope from the graph itself. Opened: a scope that was a box (one of the set the graph opened
 * with, `home`, an MLP's layers; or one a box opened one level down showed, see openedSet) and is
 * now expanded, not inside a collapsed scope. So a graph shown as it opened has no frames, and
 * a small box opened whole has one frame, not one for each scope inside. `folded` is the
 * collapsed view (collapsedGraph's items and itemOf, or null): the frame takes in the boxes
 * inside the scope. Each frame also has its items' centres (points) and their median (centre). At most FRAMES_SHOWN.
 */
export function scopeFrames(instances, collapsed, placement, home = layerScopes(instances), folded = null) {
  const g = placement.geometry;
  const wasBox = new Map();
  const boxed = (scope) => {
    if (!wasBox.has(scope)) {
      const parent = scope.parent;
      wasBox.set(scope, home.has(scope.key) || (parent !== null && opensOneLevel(parent) && boxable(scope) && boxed(parent)));
    }
    return wasBox.get(scope);
  };
  const opened = (scope) => {
    if (collapsed.has(scope.key) || !boxed(scope)) return false;
    for (let outer = scope.parent; outer; outer = outer.parent) if (collapsed.has(outer.key)) return false;
    return true;
  };
  const frames = [];
  for (const scope of instances) {
    if (frames.length >= FRAMES_SHOWN) break;
    if (!opened(scope)) continue;
    let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
    const xs = [];
    const ys = [];
    const take = (p) => {
      xs.push(p.cx);
      ys.push(p.cy);
      const opX = p.cx + p.ox;
      const opY = p.cy + p.oy;
      x0 = Math.min(x0, p.cx - g.box.width / 2, opX - g.opRadius);
      x1 = Math.max(x1, p.cx + g.box.width / 2, opX + g.opRadius);
      y0 = Math.min(y0, p.cy - g.box.height / 2, opY - g.opRadius);
      y1 = Math.max(y1, p.cy + g.box.height / 2, opY + g.opRadius);
    };
    if (folded) {
      // Every item made in the scope, once: a box's members all sit at its place.
      const seen = new Set();
      for (let id = scope.first; id <= scope.last; id++) {
        const item = folded.itemOf[id];
        if (seen.has(item) || !placement.nodes[id]) continue;
        seen.add(item);
        const box = folded.items[item].box;
        take(placement.nodes[id]);
        if (box && box.last > id && box.last <= scope.last) id = Math.min(box.last, placement.nodes.length - 1); // skip its members
      }
    } else {
      for (let id = scope.first; id <= scope.last; id++) if (placement.nodes[id]) take(placement.nodes[id]);
    }
    if (xs.length < 2) continue;
    const median = (values) => values.sort((a, b) => a - b)[values.length >> 1];
    const grow = placement.direction !== "BT" && folded ? BOX_GROW / 2 : 0; // boxes are taller than records
    const text = `⊟ ${scope.name}${scope.parent && isLoop(scope.parent.name) ? ` · ${scope.parent.name}` : ""}`;
    frames.push({
      scope,
      x: x0 - FRAME_PAD,
      y: y0 - FRAME_PAD - grow,
      w: x1 - x0 + 2 * FRAME_PAD,
      h: y1 - y0 + 2 * FRAME_PAD + 2 * grow,
      text,
      label: `${text}: collapse ${scope.path} into one box`,
      pillWidth: text.length * FOLD_CHAR_PX + 16,
      // Where most of what it holds is: the layered layout may spread a scope's items over many
      // rows, among other scopes' items, and a view too small for all of it shows this part.
      centre: { x: median([...xs]), y: median([...ys]) },
      points: xs.map((x, i) => [x, ys[i]]), // its items' centres
    });
  }
  return frames;
}
