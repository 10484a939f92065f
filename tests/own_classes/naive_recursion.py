# Written in the style of a first attempt, broken: backward recurses into each child at once (no topological order).
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

    def backward(self, seed=1):
        self.grad += seed
        for child, local in zip(self._children, self._local_grads):
            child.backward(local * seed)


a = Value(2.0)
b = Value(3.0)
c = a + b
d = a * b
e = c + d
f = c * d
out = e + f
out.backward()
print(a.grad, b.grad)
