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

// Python, as micrograd's users write it (each builds CPython micrograd's graphs: tests/test_corpus.py).

// A neuron with two inputs, each step given a label.
const PY_NEURON = `# two inputs
u1 = Value(0.5, label='u1')
u2 = Value(-1.5, label='u2')
# their weights
v1 = Value(1.2, label='v1')
v2 = Value(0.4, label='v2')
# the bias
bias = Value(0.3, label='bias')
# the weighted sum, named at each step, then tanh
u1v1 = u1*v1; u1v1.label = 'u1*v1'
u2v2 = u2*v2; u2v2.label = 'u2*v2'
weighted = u1v1 + u2v2; weighted.label = 'weighted'
z = weighted + bias; z.label = 'z'
y = z.tanh(); y.label = 'y'
y.backward()
`;

// A program's own network classes (tanh units, dense layers, a stack of them), four rows and
// gradient descent. Every loss.backward() is a point of the loss curve; the graph opens at the
// last one, with each layer collapsed into a box: its calls are named Layer[i] and Neuron[j] as
// micrograd.nn's are, by the interpreter's naming of the items a loop walks.
const PY_MLP_TRAINING = `import random

class Neuron:
    def __init__(self, inputs):
        self.weights = [Value(random.uniform(-1, 1)) for _ in range(inputs)]
        self.bias = Value(random.uniform(-1, 1))

    def __call__(self, xs):
        total = sum((weight * x for weight, x in zip(self.weights, xs)), self.bias)
        return total.tanh()

    def parameters(self):
        return self.weights + [self.bias]

class Layer:
    def __init__(self, inputs, outputs):
        self.neurons = [Neuron(inputs) for _ in range(outputs)]

    def __call__(self, xs):
        values = [neuron(xs) for neuron in self.neurons]
        return values[0] if len(values) == 1 else values

    def parameters(self):
        return [p for neuron in self.neurons for p in neuron.parameters()]

class MLP:
    def __init__(self, inputs, widths):
        sizes = [inputs] + widths
        self.layers = [Layer(sizes[i], sizes[i + 1]) for i in range(len(widths))]

    def __call__(self, xs):
        for layer in self.layers:
            xs = layer(xs)
        return xs

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]

net = MLP(3, [4, 4, 1])
rows = [
    [0.4, -1.2, 2.5],
    [-0.7, 0.3, 1.0],
    [1.8, 0.9, -0.6],
    [-1.1, -0.4, 0.2],
]
wanted = [0.5, -0.5, 1.0, -1.0]

for step in range(20):
    guesses = [net(row) for row in rows]
    loss = sum((guess - goal)**2 for goal, guess in zip(wanted, guesses))

    for p in net.parameters():
        p.grad = 0.0
    loss.backward()

    for p in net.parameters():
        p.data -= 0.08 * p.grad

    print(step, loss.data)
`;

// Every operation of micrograd's Value inside a function: +, *, ** by a number, relu, negation,
// subtraction, division either way, numbers on the left, and += rebinding names.
const PY_OPERATIONS = `from micrograd.engine import Value

def every_operation():
    m = Value(3.0)
    n = Value(-1.5)
    p = m * n + 2
    q = n**2 + m
    p += p * 3 + (m + n).relu()
    q += 2 + q - (-n)
    p += (q - m).relu() * 0.5
    r = p - q
    s = r**2
    t = s / 4.0
    t += 6.0 / s
    t.backward()
    print(m.grad, n.grad, t.data)

every_operation()
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

// Two leaves feed a sum and a product that meet twice again: a recursive backward that does not
// sort the graph first gets x and w wrong here; the page's "What if it were done wrong?" panel
// shows how.
const SORT_NEEDED = `from micrograd.engine import Value

x = Value(1.5, label='x')
w = Value(-2.0, label='w')
plus = x + w; plus.label = 'plus'
times = x * w; times.label = 'times'
left = plus + times; left.label = 'left'
right = plus * times; right.label = 'right'
y = left + right; y.label = 'y'
y.backward()
print(x.grad, w.grad)
`;

// `group` and a short `title` (the select is as narrow as the program column at 1280×720).
// Your own Value class: programs that define their own value class, each written for valuegraph.
// The page runs the class as written and checks its grads against the course's backward.

// The course's style: _children and _local_grads, a stack-based sort, then the reverse walk.
const OWN_COURSE = `# The course's Value, written out: each node keeps its inputs (_children) and the local
# gradient of each input (_local_grads); backward() sorts the nodes, then walks them in reverse.
class Value:
    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other):
        return Value(self.data + other.data, (self, other), (1, 1))

    def __mul__(self, other):
        return Value(self.data * other.data, (self, other), (other.data, self.data))

    def backward(self):
        # Stage 1: a topological order, with a stack of (node, next input to look at).
        order, visited = [], set()
        stack = [(self, 0)]
        while stack:
            node, index = stack.pop()
            if index < len(node._children):
                stack.append((node, index + 1))
                if node._children[index] not in visited:
                    stack.append((node._children[index], 0))
            elif node not in visited:
                visited.add(node)
                order.append(node)
        # Stage 2: seed the output, then pass each node's grad on to its inputs.
        self.grad = 1
        for node in reversed(order):
            for child, local in zip(node._children, node._local_grads):
                child.grad += local * node.grad


a = Value(2)
b = Value(3)
c = a * b
L = c + a
L.backward()
print("L =", L.data, " a.grad =", a.grad, " b.grad =", b.grad)
`;

// Our program for micrograd's engine. The page puts the engine.py of the micrograd installed on
// the server before it (GET /examples/micrograd-engine.py reads it from the package at request
// time; valuegraph keeps no copy), so the class that runs is micrograd's own.
const OWN_MICROGRAD_PROGRAM = `# Our own program on micrograd's engine above: a neuron with two inputs and a relu,
# a squared error against 1, and its backward pass.
x1 = Value(1.5)
x2 = Value(-0.5)
w1 = Value(0.8)
w2 = Value(-1.2)
bias = Value(0.1)
activation = (x1 * w1 + x2 * w2 + bias).relu()
loss = (activation - 1) ** 2
loss.backward()
print(f"loss {loss.data:.4f}, w1.grad {w1.grad:.4f}, w2.grad {w2.grad:.4f}")
`;

// microgpt's style: __slots__, and a recursive build_topo inside backward().
const OWN_MICROGPT = `import math

# A Value in microgpt's style: __slots__ keeps each node small, and backward() builds the
# topological order with a recursive build_topo before walking it in reverse.


class Value:
    __slots__ = ("data", "grad", "_children", "_local_grads")

    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other), (1, 1))

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data * other.data, (self, other), (other.data, self.data))

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def tanh(self):
        t = math.tanh(self.data)
        return Value(t, (self,), (1 - t * t,))

    def backward(self):
        topo, visited = [], set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._children:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        self.grad = 1
        for v in reversed(topo):
            for child, local_grad in zip(v._children, v._local_grads):
                child.grad += local_grad * v.grad


# A neuron with two inputs: tanh(w1·x1 + w2·x2 + b).
x1, x2 = Value(0.5), Value(-1.0)
w1, w2 = Value(2.0), Value(0.75)
b = Value(0.25)
y = (w1 * x1 + w2 * x2 + b).tanh()
y.backward()
print("y =", round(y.data, 4), " w1.grad =", round(w1.grad, 4), " w2.grad =", round(w2.grad, 4))
`;

// Three classes broken on purpose, each with the mistake the gradient check names.
const BROKEN_ASSIGN = `# Broken on purpose: backward() sets each input's grad with = where += belongs.
# a is used twice (by c and by L), so it should collect two contributions.
class Value:
    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other):
        return Value(self.data + other.data, (self, other), (1, 1))

    def __mul__(self, other):
        return Value(self.data * other.data, (self, other), (other.data, self.data))

    def backward(self):
        order, visited = [], set()

        def visit(node):
            if node not in visited:
                visited.add(node)
                for child in node._children:
                    visit(child)
                order.append(node)

        visit(self)
        self.grad = 1
        for node in reversed(order):
            for child, local in zip(node._children, node._local_grads):
                child.grad = local * node.grad  # the bug: = keeps only the last contribution


a = Value(2)
b = Value(3)
c = a * b
L = c + a
L.backward()
print("a.grad =", a.grad, "(the course's backward gives 4)")
`;

const BROKEN_NO_VISITED = `# Broken on purpose: a micrograd-style Value whose topological sort keeps no visited set,
# so a node reached by two paths is walked twice and passes its gradient on twice.
class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0
        self._prev = tuple(_children)  # a tuple (micrograd has a set): the walk goes in the order written
        self._op = _op
        self._backward = lambda: None

    def __add__(self, other):
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def backward(self):
        topo = []

        def build(node):  # the bug: no visited set, so shared nodes are added once per path
            for child in node._prev:
                build(child)
            topo.append(node)

        build(self)
        self.grad = 1
        for node in reversed(topo):
            node._backward()


p = Value(2.0)
q = Value(-1.5)
r = p * q
s = r + p
out = s * r
out.backward()
print("p.grad =", p.grad, " q.grad =", q.grad)
`;

const BROKEN_POW = `# Broken on purpose: __pow__ stores the local gradient n·xⁿ instead of n·xⁿ⁻¹.
class Value:
    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other):
        return Value(self.data + other.data, (self, other), (1, 1))

    def __pow__(self, n):
        return Value(self.data**n, (self,), (n * self.data**n,))  # the bug: should be n * self.data ** (n - 1)

    def backward(self):
        order, visited = [], set()

        def visit(node):
            if node not in visited:
                visited.add(node)
                for child in node._children:
                    visit(child)
                order.append(node)

        visit(self)
        self.grad = 1
        for node in reversed(order):
            for child, local in zip(node._children, node._local_grads):
                child.grad += local * node.grad


x = Value(3.0)
y = Value(1.0)
out = x**2 + y
out.backward()
print("x.grad =", x.grad, "(the course's backward gives 6)")
`;

export const EXAMPLES = [
  { id: "chapter2", group: "The course", title: "Chapter 2: L = c + a", program: "a = 2\nb = 3\nc = a * b\nL = c + a" },
  { id: "chapter1", group: "The course", title: "Chapter 1's exercise", program: "a = 2\nb = 3\nc = a * b\nd = c + a\ne = d ** 2" },
  { id: "log", group: "The course", title: "log((a + b) · a)", program: "a = 2\nb = 3\nc = a + b\nd = c * a\ne = log(d)" },
  {
    id: "neuron",
    group: "The course",
    title: "A tanh neuron",
    program: "u1 = 0.5; u2 = -1.5\nv1 = 1.2; v2 = 0.4\nbias = 0.3\nz = u1*v1 + u2*v2 + bias\ny = tanh(z)",
  },
  { id: "reuse", group: "The course", title: "Reuse: why += matters", program: "a = 1\nb = a + a\nc = b + b" },
  {
    id: "softmax",
    group: "The course",
    title: "Softmax, cross-entropy",
    program:
      "# three scores; the right answer is class 1\nz1 = 2; z2 = 1; z3 = 0.1\ne1 = exp(z1); e2 = exp(z2); e3 = exp(z3)\ns = e1 + e2 + e3\np1 = e1 / s\nL = -log(p1)",
  },
  { id: "py-neuron", group: "micrograd Python", title: "A labelled neuron", program: PY_NEURON },
  { id: "py-mlp-training", group: "micrograd Python", title: "MLP training: loss curve", program: PY_MLP_TRAINING },
  { id: "py-operations", group: "micrograd Python", title: "Every operation", program: PY_OPERATIONS },
  { id: "py-softmax", group: "micrograd Python", title: "Softmax as functions", program: SOFTMAX_CROSS_ENTROPY },
  { id: "py-sort-needed", group: "micrograd Python", title: "Why sort first", program: SORT_NEEDED },
  { id: "own-course", group: "Your own Value class", title: "The course's Value class", program: OWN_COURSE },
  {
    id: "own-micrograd",
    group: "Your own Value class",
    title: "micrograd's own engine.py",
    program: OWN_MICROGRAD_PROGRAM,
    prepend: "examples/micrograd-engine.py",
  },
  { id: "own-microgpt", group: "Your own Value class", title: "microgpt-style Value: a neuron", program: OWN_MICROGPT },
  { id: "own-broken-assign", group: "Your own Value class", title: "Broken: = instead of +=", program: BROKEN_ASSIGN },
  { id: "own-broken-visited", group: "Your own Value class", title: "Broken: no visited set", program: BROKEN_NO_VISITED },
  { id: "own-broken-pow", group: "Your own Value class", title: "Broken: __pow__'s gradient", program: BROKEN_POW },
  { id: "nan", group: "Non-finite numbers", title: "log(0) gives −∞", program: "a = 0; L = log(a)" },
  { id: "nan-negative", group: "Non-finite numbers", title: "NaN from log(−1)", program: "a = -1\nb = log(a)\nc = b * 2 + a\nL = c * c" },
  { id: "sum500", group: "Large (simplified view)", title: "A 500-term sum", program: sumOfTerms(500) },
  { id: "chain1000", group: "Large (simplified view)", title: "A 1,000-step tanh chain", program: chain(1000) },
];

export const DEFAULT_EXAMPLE = EXAMPLES[0];

// What the editor starts with when the learner picks TypeScript or JavaScript: a small Value class
// and a program that draws its graph with show() (the page's; see sandbox.js).
const TS_STARTER = `// Your Value class: data, grad, children and localGrads (a label is optional).
class Value {
  grad = 0;
  constructor(
    public data: number,
    public children: Value[] = [],
    public localGrads: number[] = [],
    public label = "",
  ) {}

  add(other: Value, label = ""): Value {
    return new Value(this.data + other.data, [this, other], [1, 1], label);
  }

  mul(other: Value, label = ""): Value {
    return new Value(this.data * other.data, [this, other], [other.data, this.data], label);
  }

  backward(): void {
    const order: Value[] = [];
    const seen = new Set<Value>();
    const visit = (v: Value) => {
      if (seen.has(v)) return;
      seen.add(v);
      v.children.forEach(visit);
      order.push(v);
    };
    visit(this);
    this.grad = 1;
    for (const v of order.reverse()) {
      v.children.forEach((child, i) => (child.grad += v.localGrads[i] * v.grad));
    }
  }
}

const a = new Value(2, [], [], "a");
const b = new Value(3, [], [], "b");
const c = a.mul(b, "c");
const L = c.add(a, "L");
L.backward();
show(L); // draws L's graph; each show() is one run
`;

const JS_STARTER = `// A micrograd-style Value: _prev, _op and a _backward closure per operation.
class Value {
  constructor(data, children = [], op = "", label = "") {
    this.data = data;
    this.grad = 0;
    this._prev = new Set(children);
    this._op = op;
    this.label = label;
    this._backward = () => {};
  }

  add(other, label = "") {
    const out = new Value(this.data + other.data, [this, other], "+", label);
    out._backward = () => {
      this.grad += out.grad;
      other.grad += out.grad;
    };
    return out;
  }

  mul(other, label = "") {
    const out = new Value(this.data * other.data, [this, other], "*", label);
    out._backward = () => {
      this.grad += other.data * out.grad;
      other.grad += this.data * out.grad;
    };
    return out;
  }

  backward() {
    const order = [];
    const seen = new Set();
    const visit = (v) => {
      if (seen.has(v)) return;
      seen.add(v);
      v._prev.forEach(visit);
      order.push(v);
    };
    visit(this);
    this.grad = 1;
    order.reverse().forEach((v) => v._backward());
  }
}

const a = new Value(2, [], "", "a");
const b = new Value(3, [], "", "b");
const c = a.mul(b, "c");
const L = c.add(a, "L");
L.backward();
show(L);
`;

/** The starting program for a language run in the page ("typescript" or "javascript"). */
export function starterProgram(language) {
  return language === "typescript" ? TS_STARTER : language === "javascript" ? JS_STARTER : null;
}
