# Written in the style of micrograd's nn module over a program's own Value: a neuron, a layer, training steps.
import random


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def relu(self):
        out = Value(0 if self.data < 0 else self.data, (self,), "ReLU")

        def _backward():
            self.grad += (out.data > 0) * out.grad

        out._backward = _backward
        return out

    def __radd__(self, other):
        return self + other

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def backward(self):
        topo, visited = [], set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        self.grad = 1
        for v in reversed(topo):
            v._backward()


class Neuron:
    def __init__(self, nin):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0)

    def __call__(self, x):
        return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).relu()

    def parameters(self):
        return self.w + [self.b]


random.seed(1)
n = Neuron(3)
xs = [[1.0, -2.0, 0.5], [0.5, 1.0, -1.0]]
ys = [1.0, -1.0]
for step in range(4):
    for p in n.parameters():
        p.data -= 0.05 * p.grad
        p.grad = 0
    loss = sum((n(x) - y) * (n(x) - y) for x, y in zip(xs, ys))
    loss.backward()
    print(step, round(loss.data, 10))
out = loss
