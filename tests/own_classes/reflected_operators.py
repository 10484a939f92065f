# Written for valuegraph: every reflected method, called by numbers on the left.
class V:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0
        self._prev = _children
        self._op = _op

    def __add__(self, o):
        o = o if isinstance(o, V) else V(o)
        return V(self.data + o.data, (self, o), "+")

    def __radd__(self, o):
        return self + o

    def __mul__(self, o):
        o = o if isinstance(o, V) else V(o)
        return V(self.data * o.data, (self, o), "*")

    def __rmul__(self, o):
        return self * o

    def __pow__(self, n):
        return V(self.data**n, (self,), f"**{n}")

    def __rpow__(self, base):
        return V(base**self.data, (self,), "rpow")

    def __neg__(self):
        return self * -1

    def __sub__(self, o):
        return self + (-o)

    def __rsub__(self, o):
        return o + (-self)

    def __truediv__(self, o):
        return self * o**-1

    def __rtruediv__(self, o):
        return o * self**-1

    def __repr__(self):
        return f"V({self.data})"


x = V(3.0)
out = 2 + x
out = 10 - out
out = 4 * out
out = 1 / out
out = 2**x + out
print(out, 1 - x, 6 / x)
