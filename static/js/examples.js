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

// Python, as micrograd's users write it (each runs unchanged through the API: tests/test_page_examples.py).

// The neuron of the micrograd lecture (first half), with its labels.
const LECTURE_NEURON = `# inputs x1,x2
x1 = Value(2.0, label='x1')
x2 = Value(0.0, label='x2')
# weights w1,w2
w1 = Value(-3.0, label='w1')
w2 = Value(1.0, label='w2')
# bias of the neuron
b = Value(6.8813735870195432, label='b')
# x1*w1 + x2*w2 + b
x1w1 = x1*w1; x1w1.label = 'x1*w1'
x2w2 = x2*w2; x2w2.label = 'x2*w2'
x1w1x2w2 = x1w1 + x2w2; x1w1x2w2.label = 'x1*w1 + x2*w2'
n = x1w1x2w2 + b; n.label = 'n'
o = n.tanh(); o.label = 'o'
o.backward()
`;

// The lecture's MLP (second half): its own Neuron, Layer and MLP with tanh, four examples, and
// gradient descent. Every loss.backward() is a point of the loss curve; the graph opens at the
// last one, with each layer collapsed into a box.
const LECTURE_MLP_TRAINING = `import random

class Neuron:

  def __init__(self, nin):
    self.w = [Value(random.uniform(-1,1)) for _ in range(nin)]
    self.b = Value(random.uniform(-1,1))

  def __call__(self, x):
    # w * x + b
    act = sum((wi*xi for wi, xi in zip(self.w, x)), self.b)
    out = act.tanh()
    return out

  def parameters(self):
    return self.w + [self.b]

class Layer:

  def __init__(self, nin, nout):
    self.neurons = [Neuron(nin) for _ in range(nout)]

  def __call__(self, x):
    outs = [n(x) for n in self.neurons]
    return outs[0] if len(outs) == 1 else outs

  def parameters(self):
    return [p for neuron in self.neurons for p in neuron.parameters()]

class MLP:

  def __init__(self, nin, nouts):
    sz = [nin] + nouts
    self.layers = [Layer(sz[i], sz[i+1]) for i in range(len(nouts))]

  def __call__(self, x):
    for layer in self.layers:
      x = layer(x)
    return x

  def parameters(self):
    return [p for layer in self.layers for p in layer.parameters()]

n = MLP(3, [4, 4, 1])
xs = [
  [2.0, 3.0, -1.0],
  [3.0, -1.0, 0.5],
  [0.5, 1.0, 1.0],
  [1.0, 1.0, -1.0],
]
ys = [1.0, -1.0, -1.0, 1.0] # desired targets

for k in range(20):

  # forward pass
  ypred = [n(x) for x in xs]
  loss = sum((yout - ygt)**2 for ygt, yout in zip(ys, ypred))

  # backward pass
  for p in n.parameters():
    p.grad = 0.0
  loss.backward()

  # update
  for p in n.parameters():
    p.data += -0.1 * p.grad

  print(k, loss.data)
`;

// micrograd's test/test_engine.py, test_more_ops, without its PyTorch half.
const TEST_MORE_OPS = `from micrograd.engine import Value

def test_more_ops():

    a = Value(-4.0)
    b = Value(2.0)
    c = a + b
    d = a * b + b**3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g += 10.0 / f
    g.backward()
    amg, bmg, gmg = a, b, g
    print(amg.grad, bmg.grad, gmg.data)

test_more_ops()
`;

// The course's softmax and cross-entropy, written in Python: logits of a linear layer, softmax
// with the largest logit subtracted, the negative log-likelihood averaged over two examples.
const SOFTMAX_CROSS_ENTROPY = `def softmax(logits):
    biggest = max(l.data for l in logits)
    exps = [(l - biggest).exp() for l in logits]
    total = sum(exps)
    return [e / total for e in exps]

def cross_entropy(logits, target):
    return -softmax(logits)[target].log()

W = [[Value(0.1, label='w00'), Value(-0.2, label='w01')],
     [Value(0.4, label='w10'), Value(0.3, label='w11')],
     [Value(-0.5, label='w20'), Value(0.2, label='w21')]]
b = [Value(0.0, label='b0'), Value(0.1, label='b1'), Value(-0.1, label='b2')]
examples = [([1.0, 2.0], 0), ([-1.0, 0.5], 2)]

losses = []
for x, target in examples:
    logits = [sum((wij * xj for wij, xj in zip(wi, x)), bi) for wi, bi in zip(W, b)]
    losses.append(cross_entropy(logits, target))
loss = sum(losses) / len(losses)
loss.backward()
print('loss', loss.data)
`;

// micrograd issue 68: a recursive backward that does not sort first gets a and b wrong here;
// the page's "What if it were done wrong?" panel shows how.
const ISSUE_68 = `from micrograd.engine import Value

a = Value(2.0, label='a')
b = Value(3.0, label='b')
c = a + b; c.label = 'c'
d = a * b; d.label = 'd'
e = c + d; e.label = 'e'
f = c * d; f.label = 'f'
y = e + f; y.label = 'y'
y.backward()
print(a.grad, b.grad)
`;

// `group` and a short `title` (the select is as narrow as the program column at 1280×720).
export const EXAMPLES = [
  { id: "chapter2", group: "The course", title: "Chapter 2: L = c + a", program: "a = 2\nb = 3\nc = a * b\nL = c + a" },
  { id: "chapter1", group: "The course", title: "Chapter 1's exercise", program: "a = 2\nb = 3\nc = a * b\nd = c + a\ne = d ** 2" },
  { id: "log", group: "The course", title: "log((a + b) · a)", program: "a = 2\nb = 3\nc = a + b\nd = c * a\ne = log(d)" },
  {
    id: "neuron",
    group: "The course",
    title: "A tanh neuron",
    program: "x1 = 2; x2 = 0\nw1 = -3; w2 = 1\nb = 6.8813735870195432\nn = x1*w1 + x2*w2 + b\no = tanh(n)",
  },
  { id: "reuse", group: "The course", title: "Reuse: why += matters", program: "a = 1\nb = a + a\nc = b + b" },
  {
    id: "softmax",
    group: "The course",
    title: "Softmax, cross-entropy",
    program:
      "# three scores; the right answer is class 1\nz1 = 2; z2 = 1; z3 = 0.1\ne1 = exp(z1); e2 = exp(z2); e3 = exp(z3)\ns = e1 + e2 + e3\np1 = e1 / s\nL = -log(p1)",
  },
  { id: "py-neuron", group: "micrograd Python", title: "The lecture's neuron", program: LECTURE_NEURON },
  { id: "py-mlp-training", group: "micrograd Python", title: "MLP training: loss curve", program: LECTURE_MLP_TRAINING },
  { id: "py-test-more-ops", group: "micrograd Python", title: "test_more_ops", program: TEST_MORE_OPS },
  { id: "py-softmax", group: "micrograd Python", title: "Softmax as functions", program: SOFTMAX_CROSS_ENTROPY },
  { id: "py-issue68", group: "micrograd Python", title: "Issue 68: no sort", program: ISSUE_68 },
  { id: "nan", group: "Non-finite numbers", title: "log(0) gives −∞", program: "a = 0; L = log(a)" },
  { id: "nan-negative", group: "Non-finite numbers", title: "NaN from log(−1)", program: "a = -1\nb = log(a)\nc = b * 2 + a\nL = c * c" },
  { id: "sum500", group: "Large (simplified view)", title: "A 500-term sum", program: sumOfTerms(500) },
  { id: "chain1000", group: "Large (simplified view)", title: "A 1,000-step tanh chain", program: chain(1000) },
];

export const DEFAULT_EXAMPLE = EXAMPLES[0];
