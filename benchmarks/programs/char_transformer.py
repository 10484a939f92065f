# A character transformer on a scalar Value class of its own, written for valuegraph's benchmarks
# at the size of the course's last program: one layer (`n_layer`) of 16-wide embeddings, 4 attention
# heads, a context of 16 and 4,192 parameters for 26 letters and an end token, trained with Adam on
# the names of input.txt, one name a step. The benchmarks change only the `steps = ` line; the
# tests also change `n_layer = `, the seed and the step count (tests/test_long_programs.py).
import math
import random

random.seed(42)
steps = 1000
n_layer = 1


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

    def __pow__(self, exponent):
        return Value(self.data**exponent, (self,), (exponent * self.data ** (exponent - 1),))

    def log(self):
        return Value(math.log(self.data), (self,), (1 / self.data,))

    def exp(self):
        e = math.exp(self.data)
        return Value(e, (self,), (e,))

    def relu(self):
        return Value(max(0, self.data), (self,), (float(self.data > 0),))

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other**-1

    def backward(self):
        order, seen = [], set()

        def visit(node):
            if node not in seen:
                seen.add(node)
                for child in node._children:
                    visit(child)
                order.append(node)

        visit(self)
        self.grad = 1
        for node in reversed(order):
            for child, local in zip(node._children, node._local_grads):
                child.grad += local * node.grad


with open("input.txt") as names_file:
    names = [line.strip() for line in names_file if line.strip()]
letters = "abcdefghijklmnopqrstuvwxyz"
END = len(letters)  # the token that starts and ends every name
vocab = len(letters) + 1
width, heads, context = 16, 4, 16
head_width = width // heads


def table(rows, cols, spread=0.08):
    return [[Value(random.gauss(0, spread)) for _ in range(cols)] for _ in range(rows)]


w = {
    "tokens": table(vocab, width),
    "positions": table(context, width),
    "out": table(vocab, width),
}
layers = [
    {
        "query": table(width, width),
        "key": table(width, width),
        "value": table(width, width),
        "mix": table(width, width),
        "up": table(4 * width, width),
        "down": table(width, 4 * width),
    }
    for _ in range(n_layer)
]
params = [p for weights in [w] + layers for matrix in weights.values() for row in matrix for p in row]
print(f"{len(names)} names, {vocab} tokens, {len(params)} parameters")


def linear(x, matrix):
    return [sum(a * b for a, b in zip(row, x)) for row in matrix]


def softmax(scores):
    top = max(s.data for s in scores)
    raised = [(s - top).exp() for s in scores]
    total = sum(raised)
    return [r / total for r in raised]


def rms(x):
    scale = (sum(v * v for v in x) / len(x) + 1e-5) ** -0.5
    return [v * scale for v in x]


def forward(token, position, seen_keys, seen_values):
    """The next token's scores; seen_keys[i] and seen_values[i] are layer i's keys and values so far."""
    x = rms([a + b for a, b in zip(w["tokens"][token], w["positions"][position])])
    for layer, keys, values in zip(layers, seen_keys, seen_values):
        h = rms(x)
        q, k, v = linear(h, layer["query"]), linear(h, layer["key"]), linear(h, layer["value"])
        keys.append(k)
        values.append(v)
        attended = []
        for head in range(heads):
            lo = head * head_width
            scores = [sum(q[lo + j] * key[lo + j] for j in range(head_width)) / head_width**0.5 for key in keys]
            attention = softmax(scores)
            for j in range(head_width):
                attended.append(sum(attention[t] * values[t][lo + j] for t in range(len(values))))
        x = [a + b for a, b in zip(x, linear(attended, layer["mix"]))]
        h = [u.relu() for u in linear(rms(x), layer["up"])]
        x = [a + b for a, b in zip(x, linear(h, layer["down"]))]
    return linear(x, w["out"])


rate, beta1, beta2, eps = 0.01, 0.85, 0.99, 1e-8
moment1 = [0.0] * len(params)
moment2 = [0.0] * len(params)
for step in range(steps):
    name = names[step % len(names)]
    tokens = [END] + [letters.index(c) for c in name] + [END]
    n = min(context, len(tokens) - 1)
    seen_keys, seen_values = [[] for _ in layers], [[] for _ in layers]
    losses = []
    for position in range(n):
        probs = softmax(forward(tokens[position], position, seen_keys, seen_values))
        losses.append(-probs[tokens[position + 1]].log())
    loss = sum(losses) * (1 / n)
    loss.backward()
    step_rate = rate * (1 - step / steps)
    for i, p in enumerate(params):
        moment1[i] = beta1 * moment1[i] + (1 - beta1) * p.grad
        moment2[i] = beta2 * moment2[i] + (1 - beta2) * p.grad**2
        corrected1 = moment1[i] / (1 - beta1 ** (step + 1))
        corrected2 = moment2[i] / (1 - beta2 ** (step + 1))
        p.data -= step_rate * corrected1 / (corrected2**0.5 + eps)
        p.grad = 0
    print(f"step {step + 1:4d} / {steps:4d} | loss {loss.data:.4f}")
