// The examples menu: the course's graphs, plus two generated big ones for the simplified view.

function sumOfTerms(count) {
  const terms = Array.from({ length: count }, (_, i) => `x * ${(i % 9) + 1}`);
  return `# ${count} terms: the graph is too big to read, so it is drawn simplified\nx = 0.5\nL = ${terms.join(" + ")}`;
}

function chain(count) {
  const lines = ["# a long chain of tanh and * : thousands of nodes", "x = 0.3", "h0 = x"];
  for (let i = 1; i <= count; i++) lines.push(`h${i} = tanh(h${i - 1} * 1.01)`);
  lines.push(`L = h${count}`);
  return lines.join("\n");
}

export const EXAMPLES = [
  { id: "chapter2", title: "Chapter 2: L = c + a (a used twice)", program: "a = 2\nb = 3\nc = a * b\nL = c + a" },
  { id: "chapter1", title: "Chapter 1: the forward exercise", program: "a = 2\nb = 3\nc = a * b\nd = c + a\ne = d ** 2" },
  { id: "log", title: "The log graph: e = log((a + b) * a)", program: "a = 2\nb = 3\nc = a + b\nd = c * a\ne = log(d)" },
  {
    id: "neuron",
    title: "A tanh neuron: o = tanh(x1·w1 + x2·w2 + b)",
    program: "x1 = 2; x2 = 0\nw1 = -3; w2 = 1\nb = 6.8813735870195432\nn = x1*w1 + x2*w2 + b\no = tanh(n)",
  },
  { id: "reuse", title: "Reuse: b = a + a, c = b + b (why += matters)", program: "a = 1\nb = a + a\nc = b + b" },
  {
    id: "softmax",
    title: "Softmax and cross-entropy, written out with exp and log",
    program:
      "# three scores; the right answer is class 1\nz1 = 2; z2 = 1; z3 = 0.1\ne1 = exp(z1); e2 = exp(z2); e3 = exp(z3)\ns = e1 + e2 + e3\np1 = e1 / s\nL = -log(p1)",
  },
  { id: "nan", title: "Non-finite: log(0) gives −∞", program: "a = 0; L = log(a)" },
  { id: "nan-negative", title: "Non-finite: NaN from log(−1), spreading", program: "a = -1\nb = log(a)\nc = b * 2 + a\nL = c * c" },
  { id: "sum500", title: "Large: a 500-term sum (simplified view)", program: sumOfTerms(500) },
  { id: "chain1000", title: "Large: a 1,000-step tanh chain (simplified view)", program: chain(1000) },
];

export const DEFAULT_EXAMPLE = EXAMPLES[0];
