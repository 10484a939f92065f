  /** valuegraph: the graph this Value was made from, as the JSON that POST /backward takes as
   * {"graph": ...}. names: labels for the values you want to see by name (the rest get numbers).
   * Add it inside your Value class; it reads data, grad, children and localGrads. */
  toGraphJson(names: Map<Value, string> = new Map()): string {
    // JSON has no NaN or Infinity: valuegraph reads them as the strings "NaN", "Infinity", "-Infinity".
    const number = (x: number): number | string => (Number.isFinite(x) ? x : String(x));
    const ids = new Map<Value, number>();
    const nodes: object[] = [];
    const visited = new Set<Value>([this]);
    const stack: [Value, number][] = [[this, 0]];
    while (stack.length > 0) {
      const [node, next] = stack.pop()!;
      if (next < node.children.length) {
        stack.push([node, next + 1]);
        const input = node.children[next];
        if (!visited.has(input)) {
          visited.add(input);
          stack.push([input, 0]);
        }
        continue;
      }
      ids.set(node, ids.size); // every input already has its id: children come before parents
      nodes.push({
        id: ids.get(node),
        label: names.get(node) ?? null,
        data: number(node.data),
        grad: number(node.grad),
        children: node.children.map((input) => ids.get(input)),
        local_grads: node.localGrads.map(number),
      });
    }
    return JSON.stringify({ nodes, output: ids.get(this), language: "typescript" });
  }
