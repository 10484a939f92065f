// "Import graph": the JSON a learner's own Value class wrote (docs/learners.md, "Your own Value
// class, in any language"), pasted or dropped as a .json file. Data only: the page's wiring is in main.js.

/** The graph in pasted or dropped text: a graph ({"nodes", "output"}), a /backward body
 * ({"graph": ...}) or a whole answer of /backward (its nodes and output). Throws an Error that
 * says what is missing. */
export function readGraph(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`This is not JSON: ${error.message}`);
  }
  const graph = value !== null && typeof value === "object" && "graph" in value ? value.graph : value;
  if (graph === null || typeof graph !== "object" || !Array.isArray(graph.nodes) || !("output" in graph)) {
    throw new Error('A graph is {"nodes": [...], "output": id}: the JSON your Value class wrote.');
  }
  const { nodes, output, walk, language } = graph;
  return { nodes: nodes.map(posted), output, ...(walk !== undefined ? { walk } : {}), ...(language !== undefined ? { language } : {}) };
}

// What a whole answer's nodes carry that a posted graph's do not need (schemas.GraphNode accepts and ignores
// them): their place in the program and the check's numbers, most of their bytes, which would bring a big
// graph past the body limit for nothing. Any other field is sent as it is, for the server to name a typo.
const ANSWER_ONLY = new Set(["span", "expr", "scope", "numeric_grad", "expected_grad"]);

function posted(node) {
  if (node === null || typeof node !== "object" || Array.isArray(node)) return node; // the server says what is wrong
  return Object.fromEntries(Object.entries(node).filter(([field]) => !ANSWER_ONLY.has(field)));
}
