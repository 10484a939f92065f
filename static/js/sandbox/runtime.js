// The start of every Web Worker that runs a learner's TypeScript or JavaScript (sandbox/frame.js
// puts the learner's code after it). It gives the code show(v), and turns the value shown into the
// graph POST /backward takes as `graph`: nodes are found by the same rule as Python classes (a
// number in data/Data/value, inputs in children/_children/_prev/inputs, local gradients in
// localGrads/_local_grads/..., else derived from the op). `vgConfig` ({maxNodes, run, offset})
// comes first, from frame.js. No network: the frame's CSP (inherited by this blob worker) allows none.
//
// Two things are observed while the program runs, through accessors on Object.prototype for the
// data names (the first assignment of `this.data` in a constructor goes through them, then the
// object gets its own property): the stack where each Value was made (the line that made it, for
// the node -> code link), and the class's backward() method, wrapped so that without show() the
// value backward() last ran on can be drawn.
"use strict";
const vgRuntime = (() => {
  const DATA = ["data", "Data", "value"];
  // The data names watched on Object.prototype: not "value", which every property descriptor
  // ({get, set}) would then seem to have.
  const WATCHED = ["data", "Data"];
  const CHILDREN = ["children", "_children", "_prev", "inputs", "prev"];
  const LOCAL_GRADS = ["localGrads", "_local_grads", "local_grads", "_localGrads", "localGradients"];
  const GRAD = ["grad", "Grad", "_grad"];
  const OP = ["op", "_op", "Op", "operation"];
  const LABEL = ["label", "_label", "Label", "name"];
  // Past this many Values made, the watch ends (no more stacks, the accessors removed): a stack
  // costs tens of microseconds, the accessor slows every Value made, and a graph this big is
  // drawn too small to read its code links. A class's backward is wrapped at its first Value.
  const MAX_WATCHED = 10000;
  let shown = 0; // show() calls so far; each is one run
  let chosen = null; // the graph of the run asked for (vgConfig.run; null: the last)
  let backwardRuns = 0; // backward() calls seen, the runs when nothing calls show()
  let lastBackward = null; // the graph backward() left in the run asked for, while no show() was called
  let latestBackward = null; // {output, before}: the latest backward() call, and the grads it began from (watchGrads)
  let backwardDepth = 0; // backward() calls open: a recursive backward's inner calls are part of the outer one
  const madeAt = new WeakMap(); // a Value -> the Error whose stack says where it was made
  let watchedCount = 0; // Values made while watched
  const wrapped = new WeakSet(); // backward methods already observed
  const valuesOf = new WeakMap(); // a graph -> the Values of its nodes

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

  /** Frames of a stack in the learner's code: [function name, line, column], innermost first. */
  function userFrames(stack) {
    const frames = [];
    for (const match of String(stack).matchAll(/at (?:(.*?) \()?blob:[^\s)]*:(\d+):(\d+)\)?/g)) {
      const line = Number(match[2]) - vgConfig.offset;
      if (line >= 1) frames.push([match[1] ?? "", line, Number(match[3])]);
    }
    return frames;
  }

  /** Where `value` was made: the innermost frame outside its own class's methods (the line that
   * called value.add(...), not add's own `new Value`), else the innermost; null if unknown. */
  function placeOf(value) {
    const error = madeAt.get(value);
    if (!error) return null;
    const frames = userFrames(error.stack);
    const name = value.constructor?.name ?? "";
    const own = ([fn]) => name !== "" && (fn === `new ${name}` || fn.startsWith(`${name}.`));
    const frame = frames.find((f) => !own(f)) ?? frames[0];
    return frame ? { line: frame[1], column: frame[2], end_line: frame[1], end_column: frame[2] } : null;
  }

  /** Wraps the backward method `value` inherits, once per method, to see what it runs on. */
  function observeBackward(value) {
    let owner = Object.getPrototypeOf(value);
    while (owner && owner !== Object.prototype && !Object.prototype.hasOwnProperty.call(owner, "backward")) owner = Object.getPrototypeOf(owner);
    const method = owner && owner !== Object.prototype ? owner.backward : undefined;
    if (typeof method !== "function" || wrapped.has(method)) return;
    const observed = function (...args) {
      if (backwardDepth > 0) return method.apply(this, args); // a recursive backward's own calls: one run
      backwardDepth++;
      let grads = null;
      let before = new Map();
      let result;
      try {
        grads = watchGrads(this);
        result = method.apply(this, args);
      } finally {
        if (grads !== null) before = grads.done(); // the grads plain fields again, even when backward() threw
        backwardDepth--;
      }
      const index = backwardRuns++;
      latestBackward = { output: this, before };
      // Until show() is called, each backward() call is a run; its graph is taken as it left it.
      if (shown === 0 && (vgConfig.run === null || vgConfig.run === index)) lastBackward = graphOf(this, before);
      return result;
    };
    wrapped.add(observed);
    Object.defineProperty(owner, "backward", { value: observed, writable: true, configurable: true, enumerable: false });
  }

  for (const name of WATCHED) {
    Object.defineProperty(Object.prototype, name, {
      configurable: true,
      enumerable: false,
      get() {
        return undefined;
      },
      set(x) {
        if (this === null || (typeof this !== "object" && typeof this !== "function")) return;
        Object.defineProperty(this, name, { value: x, writable: true, enumerable: true, configurable: true });
        if (typeof x !== "number") return;
        madeAt.set(this, new Error());
        observeBackward(this);
        if (++watchedCount === MAX_WATCHED) for (const watched of WATCHED) delete Object.prototype[watched];
      },
    });
  }

  /** The grad each object `output` reaches held when its backward() began adding into it: where it held a
   * number other than 0, the grad is watched while backward() runs (an accessor for that while), and what it
   * held before its first write of anything but 0 is taken (a write of 0 is taken for a reset, so a backward
   * that zeroes the grads first began from 0); a grad that cannot be watched (an accessor of the class's own)
   * is taken as backward() began. done() makes the watched grads plain fields again and gives the Map. */
  function watchGrads(output) {
    const initial = new Map(); // object -> its grad as backward() began (undefined: none)
    const watched = new Map(); // object -> [field, {current, before}, enumerable]
    const watch = (value, name) => {
      const own = Object.getOwnPropertyDescriptor(value, name);
      if (!own?.writable || !own.configurable) return;
      const grad = { current: own.value, before: undefined };
      try {
        Object.defineProperty(value, name, {
          configurable: true,
          enumerable: own.enumerable,
          get: () => grad.current,
          set: (x) => {
            if (grad.before === undefined && x !== 0) grad.before = grad.current;
            grad.current = x;
          },
        });
        watched.set(value, [name, grad, own.enumerable]);
      } catch {
        // a Proxy or a sealed object: taken as backward() began
      }
    };
    const stack = [output];
    try {
      while (stack.length && initial.size < vgConfig.maxNodes) {
        const value = stack.pop();
        if (value === null || typeof value !== "object" || initial.has(value)) continue;
        const name = GRAD.find((field) => isNumber(value[field]));
        initial.set(value, name === undefined ? undefined : value[name]);
        if (name !== undefined && value[name] !== 0) watch(value, name);
        for (const input of first(value, CHILDREN, isList) ?? []) stack.push(input);
      }
    } catch {
      // a getter of the learner's that throws: the objects read so far
    }
    return {
      done() {
        const before = new Map();
        for (const [value, held] of initial) {
          const entry = watched.get(value);
          if (entry === undefined) {
            before.set(value, held);
            continue;
          }
          const [name, grad, enumerable] = entry;
          try {
            Object.defineProperty(value, name, { value: grad.current, writable: true, enumerable, configurable: true });
          } catch {
            // frozen by the learner's backward: it keeps the accessor, which still reads the grad
          }
          before.set(value, grad.before === undefined ? grad.current : grad.before);
        }
        return before;
      },
    };
  }

  /** The graph that `output` reaches, children before parents, with `grad_before` where `before` (watchGrads')
   * holds a grad other than 0; throws past the node limit. */
  function graphOf(output, before = null) {
    const ids = new Map();
    const nodes = [];
    const values = []; // the Value of each node, for placed()
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
      const held = before?.get(value);
      if (held !== undefined && held !== 0) node.grad_before = wire(held);
      nodes.push(node);
      values.push(value);
    }
    const graph = { nodes, output: ids.get(output) };
    valuesOf.set(graph, values);
    return graph;
  }

  /** The graph with each node's span (where its Value was made), read from the stacks only now:
   * formatting a stack is the costly part, done for the one graph drawn. */
  function placed(graph) {
    valuesOf.get(graph).forEach((value, i) => {
      const span = placeOf(value);
      if (span) graph.nodes[i].span = span;
    });
    return graph;
  }

  function show(value) {
    const index = shown++;
    const before = latestBackward?.output === value ? latestBackward.before : null;
    if (vgConfig.run === null || vgConfig.run === index) chosen = graphOf(value, before);
  }

  function finish() {
    if (shown === 0 && lastBackward !== null) postMessage({ type: "graph", graph: placed(lastBackward), runs: backwardRuns });
    else if (shown === 0 && backwardRuns > 0) postMessage({ type: "error", message: `run ${vgConfig.run} was asked for, but backward() was called ${backwardRuns} times (runs 0 to ${backwardRuns - 1})` });
    else if (shown === 0) postMessage({ type: "error", message: "Nothing to draw: add show(L) after L.backward(), with L the value to draw." });
    else if (chosen === null) postMessage({ type: "error", message: `run ${vgConfig.run} was asked for, but show() was called ${shown} times (runs 0 to ${shown - 1})` });
    else postMessage({ type: "graph", graph: placed(chosen), runs: shown });
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
