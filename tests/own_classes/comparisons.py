# Written for valuegraph: comparison methods, reflected comparisons and max() on them.
class Value:
    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads

    def __lt__(self, other):
        return self.data < (other.data if isinstance(other, Value) else other)

    def __gt__(self, other):
        return self.data > (other.data if isinstance(other, Value) else other)

    def __mul__(self, other):
        return Value(self.data * other.data, (self, other), (other.data, self.data))


a, b, c = Value(1.0), Value(3.0), Value(2.0)
print(a < b, b > c, 2 < c, 2.5 > c, max([a, b, c]).data, min(a, b, c).data)
print([v.data for v in sorted([b, a, c])])
out = max([a, b, c]) * min([a, b, c])
print(out.data)
