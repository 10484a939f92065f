# Written for valuegraph: NotImplemented hands an operator to the other operand, as CPython does.
class Meters:
    def __init__(self, data, children=()):
        self.data = data
        self.children = children
        self.grad = 0

    def __add__(self, other):
        if not isinstance(other, Meters):
            return NotImplemented
        return Meters(self.data + other.data, (self, other))

    def __mul__(self, other):
        if isinstance(other, (int, float)):
            return Meters(self.data * other, (self,))
        return NotImplemented

    def __rmul__(self, other):
        return self * other


class Scale:
    def __init__(self, k):
        self.k = k

    def __radd__(self, other):
        return Meters(other.data + self.k, (other,))


a = Meters(2.0)
b = Meters(5.0)
out = (a + b) * 3 + Scale(1.5)
out = 2 * out
print(out.data)
