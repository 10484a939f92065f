# Written in the style of micrograd, broken: the walk has no visited set, so a shared node is walked twice.
class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0
        self._backward = lambda: None
        self._prev = _children  # a tuple: the walk order below depends on it
        self._op = _op

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

        def build(v):
            for child in v._prev:
                build(child)
            topo.append(v)

        build(self)
        self.grad = 1
        for v in reversed(topo):
            v._backward()


a = Value(2.0)
b = Value(3.0)
c = a * b
d = c + a
out = d * c
out.backward()
print(a.grad, b.grad, c.grad)
