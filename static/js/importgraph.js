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
  return { nodes, output, ...(walk !== undefined ? { walk } : {}), ...(language !== undefined ? { language } : {}) };
}
