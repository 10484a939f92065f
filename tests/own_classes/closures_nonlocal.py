# Written for valuegraph: closures stored on objects and called later, counting with nonlocal.
class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out


def counter():
    calls = 0

    def bump():
        nonlocal calls
        calls += 1
        return calls

    return bump


a = Value(2.0)
b = Value(-1.0)
out = a * b * a
tick = counter()
out.grad = 1
for v in [out, out._prev and [p for p in out._prev if p._op == "*"][0]]:
    v._backward()
    tick()
print(a.grad, b.grad, tick())
