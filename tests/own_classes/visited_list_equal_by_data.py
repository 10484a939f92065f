# Written in the style of micrograd, broken in a way CPython shows: the walk keeps a list of visited nodes and
# __eq__ compares data, so a node whose data equals a visited node's (c, 2.0, like b) is taken for visited and
# left out of the walk.
class Value:
    def __init__(self, data, _children=()):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = _children

    def __eq__(self, other):
        return isinstance(other, Value) and self.data == other.data

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other))

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other))

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def backward(self):
        topo = []
        visited = []

        def build(v):
            if v not in visited:
                visited.append(v)
                for child in v._prev:
                    build(child)
                topo.append(v)

        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


a = Value(1.0)
b = a * 2
c = a + 1
out = b * c
out.backward()
print(a.grad, b.data, c.data)
