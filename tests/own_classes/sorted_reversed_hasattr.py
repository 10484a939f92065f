# Written for valuegraph: sorted, reversed, isinstance with the program's classes, hasattr.
class Value:
    def __init__(self, data, children=()):
        self.data = data
        self.grad = 0
        self._children = children

    def __add__(self, other):
        return Value(self.data + other.data, (self, other))


class Leaf(Value):
    pass


xs = [Leaf(3.0), Leaf(-1.0), Leaf(2.0)]
ordered = sorted(xs, key=lambda v: v.data)
print([v.data for v in ordered], [v.data for v in sorted(xs, key=lambda v: v.data, reverse=True)])
out = ordered[0] + ordered[1]
for v in reversed(ordered):
    out = out + v
print(isinstance(out, Value), isinstance(out, Leaf), isinstance(xs[0], Value))
print(hasattr(out, "grad"), hasattr(out, "_op"), hasattr(out, "__add__"), sorted([3, 1, 2]))
