// The columnar encoding of /backward's answer (docs/api.md, "The columnar encoding"), read back
// into the records of the JSON answer: decodeColumns(columnar) deep-equals the JSON answer of the
// same request, with its keys in the same order. Pure data: no DOM, no fetch. Non-finite numbers
// stay the strings "NaN", "Infinity" and "-Infinity" here, as in the JSON answer, unless a `number`
// is given to read each number field through: api.js passes its reviver, so that the records are
// revived as they are made rather than in a second pass over 100,000 of them.
//
// Each kind of record is made by one object literal naming its fields in the JSON answer's order,
// not by adding fields one at a time in a loop over the column names: V8 gives the records of one
// literal one hidden class with room for every field, as JSON.parse does, where records grown a field
// at a time through one keyed store that sees every name took about three times as long at 100,000
// nodes (docs/performance.md, "The columnar encoding"). So the fields are written out here as
// app/serialize.py's NODE_COLUMNS, SORT_COLUMNS and PROPAGATE_COLUMNS write them
// (tests/test_columns_js.py and tests/browser/test_columns.py hold the two to each other), and an
// answer with other fields is refused, not half read.

export const COLUMNS_MEDIA_TYPE = "application/vnd.valuegraph.columns+json";

const NODE_FIELDS = ["id", "label", "span", "expr", "scope", "op", "data", "grad", "children", "local_grads", "exponent", "numeric_grad", "expected_grad"];
const SORT_FIELDS = []; // every sort step is replayed (sortedAgain)
const PROPAGATE_FIELDS = []; // every propagate step is replayed (walkedAgain)
const LEARNER_FIELDS = ["node", "updates"];
const LEARNER_UPDATE_FIELDS = ["child", "grad"];

/** The columns of a section, once their names are checked against the fields this page reads. */
function columnsOf(section, name, fields) {
  const names = Object.keys(section.columns);
  if (names.length !== fields.length || names.some((field, i) => field !== fields[i])) {
    throw new Error(`The columnar answer's ${name} have the fields ${names.join(", ") || "none"}; this page reads ${fields.join(", ") || "none"}. Reload the page.`);
  }
  return section.columns;
}

// The shared values of TABLE columns (span, expr, scope, op, action) are one object per table entry,
// shared by the records that name it; nothing in the page changes a node's span or scope in place.
// The lists of LISTS columns are arrays of their own (api.js revives local_grads in place).

/** A SPARSE column's `else` (what the records it does not list hold), null for none: the one this page reads, or refused. */
function elseOf(column, name, known) {
  const otherwise = column.else ?? null;
  if (otherwise !== null && otherwise !== known) throw new Error(`The columnar answer's ${name} are "${otherwise}" where not written; this page reads "${known}". Reload the page.`);
  return otherwise;
}

/** A LISTS or VALUES column's numbers as a Float64Array: "NaN", "Infinity" and "-Infinity" read as numbers. */
function numbersOf(listed) {
  const numbers = new Float64Array(listed.length); // a loop: Float64Array.from with a map function is ten times slower
  for (let i = 0; i < listed.length; i++) numbers[i] = typeof listed[i] === "number" ? listed[i] : Number(listed[i]);
  return numbers;
}

/** values[start:end] as a new array. Most nodes have up to two inputs: an array literal makes those
 * with less work than a call of slice(). */
function listOf(values, start, end) {
  switch (end - start) {
    case 0:
      return [];
    case 1:
      return [values[start]];
    case 2:
      return [values[start], values[start + 1]];
    default:
      return values.slice(start, end);
  }
}

const asIs = (x) => x;

function nodesOf(section, number) {
  const { id, label, span, expr, scope, op, data, grad, children, local_grads, exponent, numeric_grad, expected_grad } = columnsOf(section, "nodes", NODE_FIELDS);
  const ids = id.values, labels = label.values, datas = data.values, grads = grad.values;
  const spans = span.table, spanAt = span.index, exprs = expr.table, exprAt = expr.index;
  const scopes = scope.table, scopeAt = scope.index, ops = op.table, opAt = op.index;
  const childOffsets = children.offsets, childValues = children.values;
  const localOffsets = local_grads.offsets;
  const localValues = number === asIs ? local_grads.values : local_grads.values.map(number); // a new list: the argument is not changed
  // A SPARSE field is in the records its "at" lists, in order: a cursor each walks them with the
  // records, and adds the field after the others, where the JSON record has it. expected_grad, where
  // the answer has a check, is on every record: those it does not list have their grad (its `else`).
  const expectedElse = elseOf(expected_grad, "expected_grad", "grad") !== null;
  let e = 0, n = 0, x = 0;
  const count = section.count;
  const nodes = new Array(count);
  for (let i = 0; i < count; i++) {
    const node = { id: ids[i], label: labels[i], span: spans[spanAt[i]], expr: exprs[exprAt[i]], scope: scopes[scopeAt[i]], op: ops[opAt[i]], data: number(datas[i]), grad: number(grads[i]), children: listOf(childValues, childOffsets[i], childOffsets[i + 1]), local_grads: listOf(localValues, localOffsets[i], localOffsets[i + 1]) };
    if (exponent.at[e] === i) node.exponent = number(exponent.values[e++]);
    if (numeric_grad.at[n] === i) node.numeric_grad = number(numeric_grad.values[n++]);
    if (expected_grad.at[x] === i) node.expected_grad = number(expected_grad.values[x++]);
    else if (expectedElse) node.expected_grad = node.grad;
    nodes[i] = node;
  }
  return nodes;
}

/**
 * The sort steps, which the columns leave out, replayed from the nodes' children (docs/api.md): the
 * course's sort from the root, scanning a node's inputs in order with its ancestors and where each
 * resumes on a stack; an input already reached is skipped when the walk checks, else descended into
 * (a leaf emitted where it is found); a node is emitted when its inputs are done. As columns.
 */
function sortedAgain(section, nodes) {
  const count = section.count;
  const node = new Int32Array(count), index = new Int32Array(count), action = new Array(count).fill("emit"), child = new Array(count).fill(null);
  if (count === 0) return { node, index, action, child }; // a walk without a sort
  const { offsets, values } = nodes.columns.children;
  const visited = new Uint8Array(nodes.count);
  const ancestors = [], resumeAt = [];
  let k = 0; // the next step
  const step = (n, i, a, c) => {
    if (k === count) throw new Error(`The columnar answer's sort has ${count} steps, and more replay. Reload the page.`);
    node[k] = n;
    index[k] = i;
    if (a !== "emit") {
      action[k] = a;
      child[k] = c;
    }
    k += 1;
  };
  let at = section.root, i = 0;
  for (;;) {
    const first = offsets[at], inputs = offsets[at + 1] - first;
    let deeper = false;
    while (i < inputs) {
      const c = values[first + i];
      if (section.checks_visited && visited[c]) {
        step(at, i++, "skip", c);
        continue;
      }
      visited[c] = 1;
      step(at, i++, "descend", c);
      if (offsets[c + 1] > offsets[c]) {
        ancestors.push(at);
        resumeAt.push(i);
        at = c;
        i = 0;
        deeper = true;
        break;
      }
      step(c, 0, "emit", null);
    }
    if (deeper) continue;
    step(at, inputs, "emit", null);
    if (!ancestors.length) break;
    at = ancestors.pop();
    i = resumeAt.pop();
  }
  if (k !== count) throw new Error(`The columnar answer's sort has ${count} steps, and ${k} replayed. Reload the page.`);
  return { node, index, action, child };
}

function sortOf({ node, index, action, child }) {
  const steps = new Array(node.length);
  for (let i = 0; i < steps.length; i++) steps[i] = { node: node[i], index: index[i], action: action[i], child: child[i] };
  return steps;
}

/**
 * The propagate steps, which the columns leave out, replayed from the nodes (docs/api.md), as columns: every
 * node's grad starts at 0 and the seed's at 1; the nodes are walked in the answer's order reversed, each
 * passing nothing on when its grad is 0 or it has no inputs, else local_grad × its grad (delta) to each input
 * in turn, the input's grad becoming its grad + delta (or delta, when the walk does not accumulate); or,
 * recursively, each update followed at once by the input's own walk, a leaf's visit a step of its own. The
 * same IEEE arithmetic in the same order as the server's walk: bit for bit its numbers. `position`: where each
 * update's local gradient is in the nodes' local_grads column.
 */
function walkedAgain(section, nodes, order) {
  const { offsets, values: children } = nodes.columns.children;
  const localGrads = numbersOf(nodes.columns.local_grads.values);
  const current = new Float64Array(nodes.count);
  current[section.seed] = 1;
  const count = section.count;
  // at most: every input of every node walked (one update a step, recursively)
  let most = count;
  if (!section.recursive) for (const n of order) most += offsets[n + 1] - offsets[n];
  const node = new Int32Array(count), grad = new Float64Array(count), start = new Int32Array(count + 1);
  const child = new Int32Array(most), localGrad = new Float64Array(most), delta = new Float64Array(most), after = new Float64Array(most), position = new Int32Array(most);
  let k = 0, u = 0; // the next step and update
  const pass = (n, slot, g) => {
    const at = offsets[n] + slot, c = children[at], d = localGrads[at] * g;
    current[c] = section.accumulates ? current[c] + d : d;
    child[u] = c;
    localGrad[u] = localGrads[at];
    delta[u] = d;
    after[u] = current[c];
    position[u] = at;
    u += 1;
  };
  const step = (n, g) => {
    if (k === count) throw new Error(`The columnar answer's walk has ${count} steps, and more replay. Reload the page.`);
    node[k] = n;
    grad[k] = g;
    k += 1;
    start[k] = u;
  };
  if (!section.recursive) {
    for (let j = order.length - 1; j >= 0; j--) {
      const n = order[j], g = current[n], inputs = offsets[n + 1] - offsets[n];
      if (g !== 0) for (let slot = 0; slot < inputs; slot++) pass(n, slot, g); // NaN passes on, as on the server
      step(n, g);
    }
  } else {
    const pending = [section.seed], slots = [0];
    while (pending.length) {
      const n = pending.pop(), slot = slots.pop(), g = current[n];
      if (slot < offsets[n + 1] - offsets[n]) {
        pass(n, slot, g);
        step(n, g);
        pending.push(n, children[offsets[n] + slot]);
        slots.push(slot + 1, 0);
      } else if (slot === 0) step(n, g);
    }
  }
  if (k !== count) throw new Error(`The columnar answer's walk has ${count} steps, and ${k} replayed. Reload the page.`);
  const columns = { node, grad, start, child: child.subarray(0, u), local_grad: localGrad.subarray(0, u), delta: delta.subarray(0, u), after: after.subarray(0, u) };
  return { columns, position };
}

/** A number as the JSON answer writes it: a non-finite one as its string. */
const wire = (x) => (Number.isFinite(x) ? x : String(x));

function propagateOf({ columns, position }, number, nodes) {
  const { node, grad, start, child, delta, after } = columns;
  const out = number === asIs ? wire : asIs; // unrevived, a non-finite number is its string, as in the JSON answer
  const localGrads = nodes.columns.local_grads.values;
  const steps = new Array(node.length);
  for (let i = 0; i < steps.length; i++) {
    const stepUpdates = new Array(start[i + 1] - start[i]);
    for (let k = 0; k < stepUpdates.length; k++) {
      const u = start[i] + k;
      stepUpdates[k] = { child: child[u], local_grad: number(localGrads[position[u]]), delta: out(delta[u]), grad: out(after[u]) };
    }
    steps[i] = { node: node[i], grad: out(grad[i]), updates: stepUpdates };
  }
  return steps;
}

/**
 * The grads the learner's walk wrote (as the wire writes them), those its columns leave out replayed
 * (docs/api.md): every grad starts at 0 and each write leaves its child holding its grad; in a step of a
 * node that writes to exactly its inputs, in their order, a write left out is the child's grad + the
 * node's local gradient for that input × the node's grad: the server's IEEE arithmetic, bit for bit.
 */
function learnerGradsAgain(section, nodes) {
  const { node, updates } = section.columns;
  const { child, grad } = updates.columns;
  const owners = node.values, offsets = updates.offsets, children = child.values;
  const { offsets: inputStart, values: inputs } = nodes.columns.children;
  const localGrads = numbersOf(nodes.columns.local_grads.values);
  const current = new Float64Array(nodes.count);
  const grads = new Array(children.length);
  let x = 0; // the next write the column lists
  for (let s = 0; s < owners.length; s++) {
    const owner = owners[s], first = offsets[s], count = offsets[s + 1] - first;
    let whole = owner !== null && count === inputStart[owner + 1] - inputStart[owner];
    for (let k = 0; whole && k < count; k++) whole = children[first + k] === inputs[inputStart[owner] + k];
    const ownerGrad = owner === null ? 0 : current[owner];
    for (let k = 0; k < count; k++) {
      const w = first + k, c = children[w];
      if (grad.at[x] === w) {
        grads[w] = grad.values[x++];
        current[c] = grads[w] === null ? NaN : Number(grads[w]); // "NaN", "Infinity", "-Infinity"
      } else {
        if (!whole) throw new Error("The columnar answer's learner walk leaves out a grad it cannot replay. Reload the page.");
        current[c] += localGrads[inputStart[owner] + k] * ownerGrad;
        grads[w] = wire(current[c]);
      }
    }
  }
  return grads;
}

function learnerWalkOf(section, number, nodes) {
  const { node, updates } = columnsOf(section, "learner walk steps", LEARNER_FIELDS);
  const { child } = columnsOf(updates, "learner walk updates", LEARNER_UPDATE_FIELDS);
  const owners = node.values, offsets = updates.offsets, children = child.values;
  const grads = learnerGradsAgain(section, nodes);
  const steps = new Array(section.count);
  for (let i = 0; i < steps.length; i++) {
    const start = offsets[i];
    const stepUpdates = new Array(offsets[i + 1] - start);
    for (let k = 0; k < stepUpdates.length; k++) stepUpdates[k] = { child: children[start + k], grad: number(grads[start + k]) };
    steps[i] = { node: owners[i], updates: stepUpdates };
  }
  return steps;
}

// The trace's steps, and the learner's walk, are made when first read (a getter), not with the
// answer: the page's timeline reads the trace as columns (traceColumns), and 160,000 step records of a
// microgpt step it never reads would only cost their making and their garbage collection; the
// learner's walk is read only when the player is asked to step through it.
const traceColumnsOf = new WeakMap(); // a decoded answer's trace -> () => its columns

/** Makes object[field] with make() when first read; a value set replaces it. */
function madeWhenRead(object, field, make) {
  let made = null;
  Object.defineProperty(object, field, {
    enumerable: true,
    configurable: true,
    get: () => (made ??= make()),
    set: (value) => {
      made = value;
    },
  });
}

/**
 * The columnar answer (parsed) -> the object the JSON answer parses to, its nodes' and trace's number
 * fields read through `number`. The argument is not changed.
 */
export function decodeColumns(columnar, number = asIs) {
  const answer = { ...columnar, nodes: nodesOf(columnar.nodes, number) };
  if (columnar.trace) answer.trace = decodeTrace(columnar, number);
  if (columnar.learner_walk) {
    const walk = columnar.learner_walk;
    const { grad } = columnsOf(columnsOf(walk, "learner walk steps", LEARNER_FIELDS).updates, "learner walk updates", LEARNER_UPDATE_FIELDS);
    elseOf(grad, "learner walk grads", "replay");
    madeWhenRead(answer, "learner_walk", () => learnerWalkOf(walk, number, columnar.nodes));
  }
  return answer;
}

/** The columnar answer's trace: its steps made when first read, replayed from the answer's nodes and order. */
export function decodeTrace(columnar, number = asIs) {
  return traceOf(columnar.trace, number, columnar.nodes, columnar.order);
}

function traceOf(trace, number, nodes, order) {
  // The fields are checked now: an answer this page cannot read is refused whole, not when a step is first read.
  columnsOf(trace.sort, "sort steps", SORT_FIELDS);
  columnsOf(trace.propagate, "propagate steps", PROPAGATE_FIELDS);
  const decoded = { ...trace };
  // Replayed once, when first read, for the step records and the timeline's columns alike.
  let sorted = null, walked = null, columns = null;
  const sort = () => (sorted ??= sortedAgain(trace.sort, nodes));
  const walk = () => (walked ??= walkedAgain(trace.propagate, nodes, order));
  madeWhenRead(decoded, "sort", () => sortOf(sort()));
  madeWhenRead(decoded, "propagate", () => propagateOf(walk(), number, nodes));
  traceColumnsOf.set(decoded, () => (columns ??= { sort: sort(), propagate: walk().columns }));
  return decoded;
}

/**
 * An answer's trace as columns, whichever encoding it came in (null: no trace). sort: node, index,
 * action, child, one entry a step; propagate: node and grad a step, and its updates' child,
 * local_grad, delta and after (the child's grad after it) at start[i]..start[i + 1]; ids and numbers
 * in typed arrays. Read only.
 */
export function traceColumns(answer) {
  const trace = answer.trace;
  if (!trace) return null;
  const columns = traceColumnsOf.get(trace);
  if (columns) return columns();
  const { sort, propagate } = trace; // the JSON answer's steps
  const start = [0];
  for (const step of propagate) start.push(start.at(-1) + step.updates.length);
  const updates = propagate.flatMap((step) => step.updates);
  return {
    sort: { node: Int32Array.from(sort, (s) => s.node), index: Int32Array.from(sort, (s) => s.index), action: sort.map((s) => s.action), child: sort.map((s) => s.child) },
    propagate: { node: Int32Array.from(propagate, (p) => p.node), grad: Float64Array.from(propagate, (p) => p.grad), start: Int32Array.from(start), child: Int32Array.from(updates, (u) => u.child), local_grad: Float64Array.from(updates, (u) => u.local_grad), delta: Float64Array.from(updates, (u) => u.delta), after: Float64Array.from(updates, (u) => u.grad) },
  };
}
