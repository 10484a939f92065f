# Written in the style of the course's Python chapter, broken: `=` where `+=` belongs.
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

    def backward(self):
        order, seen = [], set()

        def visit(v):
            if v not in seen:
                seen.add(v)
                for child in v._children:
                    visit(child)
                order.append(v)

        visit(self)
        self.grad = 1
        for v in reversed(order):
            for child, local in zip(v._children, v._local_grads):
                child.grad = local * v.grad


a = Value(3.0)
b = Value(4.0)
out = a * b + a
out.backward()
print(a.grad, b.grad)
