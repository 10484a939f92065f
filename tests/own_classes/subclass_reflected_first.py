# Written for valuegraph: a subclass's reflected method goes before its base's method, as in CPython.
class Value:
    def __init__(self, data, inputs=(), op=""):
        self.data = data
        self.grad = 0
        self._inputs = inputs
        self._op = op

    def __add__(self, other):
        return Value(self.data + other.data, (self, other), "+")

    def __radd__(self, other):
        return Value(other.data + self.data, (other, self), "+")


class Loud(Value):
    def __radd__(self, other):
        return Value(other.data + self.data + 100, (other, self), "+!")


a = Value(1.0)
b = Loud(2.0)
out = a + b
print(out.data, out._op, (b + a).data)
