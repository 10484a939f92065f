// The start of every Web Worker that runs a learner's TypeScript or JavaScript (sandbox/frame.js
// puts the learner's code after it). It gives the code show(v), and turns the value shown into the
// graph POST /backward takes as `graph`: nodes are found by the same rule as Python classes (a
// number in data/Data/value, inputs in children/_children/_prev/inputs, local gradients in
// localGrads/_local_grads/..., else derived from the op). `vgConfig` ({maxNodes, run}) comes
// first, from frame.js. No network: the frame's CSP (inherited by this blob worker) allows none.
"use strict";
const vgRuntime = (() => {
  const DATA = ["data", "Data", "value"];
  const CHILDREN = ["children", "_children", "_prev", "inputs", "prev"];
  const LOCAL_GRADS = ["localGrads", "_local_grads", "local_grads", "_localGrads", "localGradients"];
  const GRAD = ["grad", "Grad", "_grad"];
  const OP = ["op", "_op", "Op", "operation"];
  const LABEL = ["label", "_label", "Label", "name"];
  let shown = 0; // show() calls so far; each is one run
  let chosen = null; // the graph of the run asked for (vgConfig.run; null: the last)

  const first = (value, names, test) => {
    for (const name of names) if (value[name] !== undefined && test(value[name])) return value[name];
    return undefined;
  };
  const isNumber = (x) => typeof x === "number";
  const isList = (x) => Array.isArray(x) || x instanceof Set;
  const wire = (x) => (Number.isFinite(x) ? x : Number.isNaN(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity");

  /** The local gradients of a node made by `op` from `inputs` (the course's rules), or null. */
  function derived(op, out, inputs) {
    const a = inputs[0];
    const b = inputs[1];
    const power = /^\*\*\s*(-?[\d.eE+-]+)$/.exec(op ?? "");
    if (op === "+" && inputs.length >= 1) return inputs.map(() => 1);
    if (op === "*" && inputs.length === 2) return [b, a];
    if (op === "-" && inputs.length === 2) return [1, -1];
    if (op === "/" && inputs.length === 2) return [1 / b, -a / (b * b)];
    if (power && inputs.length === 1) return [Number(power[1]) * a ** (Number(power[1]) - 1)];
    if (op === "**" && inputs.length === 2) return [b * a ** (b - 1), out * Math.log(a)];
    if (op === "neg" && inputs.length === 1) return [-1];
    if (op === "exp" && inputs.length === 1) return [out];
    if (op === "log" && inputs.length === 1) return [1 / a];
    if ((op === "relu" || op === "ReLU") && inputs.length === 1) return [out > 0 ? 1 : 0];
    if (op === "tanh" && inputs.length === 1) return [1 - out * out];
    return null;
  }

  /** The graph that `output` reaches, children before parents; throws past the node limit. */
  function graphOf(output) {
    const ids = new Map();
    const nodes = [];
    const describe = (value) => (value === null || typeof value !== "object" ? String(value) : (value.constructor?.name ?? "object"));
    // An explicit stack: a 10,000-node chain would overflow a recursive walk.
    const stack = [[output, false]];
    while (stack.length) {
      const [value, expanded] = stack.pop();
      if (ids.has(value) && !expanded) continue;
      if (value === null || typeof value !== "object") throw new Error(`show() was given ${describe(value)}, not a Value`);
      if (first(value, DATA, isNumber) === undefined) throw new Error(`A ${describe(value)} has no number in ${DATA.join(", ")}: show() draws Values`);
      const inputs = [...(first(value, CHILDREN, isList) ?? [])];
      if (!expanded) {
        ids.set(value, -1);
        stack.push([value, true]);
        for (const input of inputs.slice().reverse()) if (!ids.has(input)) stack.push([input, false]);
        continue;
      }
      if (nodes.length >= vgConfig.maxNodes) throw new Error(`The graph has more than ${vgConfig.maxNodes} nodes (the node limit, VALUEGRAPH_MAX_NODES)`);
      const id = nodes.length;
      ids.set(value, id);
      const data = first(value, DATA, isNumber);
      const op = first(value, OP, (x) => typeof x === "string") || null;
      const label = first(value, LABEL, (x) => typeof x === "string") || null;
      const grad = first(value, GRAD, isNumber);
      const given = first(value, LOCAL_GRADS, isList);
      const localGrads = given
        ? [...given].map((g) => (isNumber(g) ? g : first(g ?? {}, DATA, isNumber)))
        : derived(op, data, inputs.map((input) => first(input, DATA, isNumber)));
      if (inputs.length && !localGrads) {
        throw new Error(`Node ${label ?? id} (op ${JSON.stringify(op)}) has no local gradients: give them in localGrads, or an op of + * - / ** neg exp log relu tanh`);
      }
      const node = { id, data: wire(data), children: inputs.map((input) => ids.get(input)), local_grads: (localGrads ?? []).map(wire) };
      if (label) node.label = label;
      if (op) node.op = op;
      if (grad !== undefined) node.grad = wire(grad);
      nodes.push(node);
    }
    return { nodes, output: ids.get(output) };
  }

  function show(value) {
    const index = shown++;
    if (vgConfig.run === null || vgConfig.run === index) chosen = graphOf(value);
  }

  function finish() {
    if (shown === 0) postMessage({ type: "error", message: "Nothing to draw: add show(L) after L.backward(), with L the value to draw." });
    else if (chosen === null) postMessage({ type: "error", message: `run ${vgConfig.run} was asked for, but show() was called ${shown} times (runs 0 to ${shown - 1})` });
    else postMessage({ type: "graph", graph: chosen, runs: shown });
  }

  function fail(error) {
    const stack = String(error?.stack ?? "");
    // Every place in the worker's script the stack names; frame.js keeps the first in the learner's code.
    const places = [...stack.matchAll(/blob:[^\s)]*:(\d+):(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
    const message = error instanceof Error ? `${error.name}: ${error.message}` : `Uncaught ${String(error)}`;
    postMessage({ type: "error", message, places });
  }

  return { show, finish, fail };
})();
const show = vgRuntime.show;
const exports = {};
const module = { exports };
function require(name) {
  throw new Error(`import of "${name}": the sandbox has no modules; put everything in one file`);
}
try {
