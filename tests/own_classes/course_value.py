# Written in the style of the course's Python chapter: _children and _local_grads, a topological walk.
import math


class Value:
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

    def __pow__(self, n):
        return Value(self.data**n, (self,), (n * self.data ** (n - 1),))

    def log(self):
        return Value(math.log(self.data), (self,), (1 / self.data,))

    def exp(self):
        return Value(math.exp(self.data), (self,), (math.exp(self.data),))

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other**-1

    def backward(self):
        order = []
        seen = []

        def visit(v):
            if v not in seen:
                seen.append(v)
                for child in v._children:
                    visit(child)
                order.append(v)

        visit(self)
        self.grad = 1
        for v in reversed(order):
            for child, local in zip(v._children, v._local_grads):
                child.grad += local * v.grad


a = Value(2.0)
b = Value(-3.0)
c = Value(10.0)
e = a * b
d = e + c
f = Value(-2.0)
out = d * f + (a / c).exp() - (c.log() * 2) ** 2
out.backward()
print(a.grad, b.grad, c.grad, f.grad)
