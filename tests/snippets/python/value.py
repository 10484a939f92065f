"""A Value in the shape of the course's Python chapter (data, grad, _children, _local_grads),
written for valuegraph's tests; backward() sorts with a visited set and adds with +=."""


class Value:
    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0.0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other):
        return Value(self.data + other.data, (self, other), (1.0, 1.0))

    def __mul__(self, other):
        return Value(self.data * other.data, (self, other), (other.data, self.data))

    def backward(self):
        order, seen = [], set()

        def visit(v):
            if v not in seen:
                seen.add(v)
                for child in v._children:
                    visit(child)
                order.append(v)

        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            for child, local in zip(v._children, v._local_grads):
                child.grad += local * v.grad

    # valuegraph: the snippet goes here


a, b = Value(2.0), Value(3.0)
c = a * b
L = c + a
L.backward()
print(L.to_graph_json({a: "a", b: "b", c: "c", L: "L"}))
