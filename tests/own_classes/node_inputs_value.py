# Written for valuegraph: a class named Node holding `value` and `inputs`, op from the special method.
class Node:
    def __init__(self, value, inputs=()):
        self.value = value
        self.inputs = inputs
        self.grad = 0

    def __add__(self, other):
        return Node(self.value + other.value, (self, other))

    def __sub__(self, other):
        return Node(self.value - other.value, (self, other))

    def __mul__(self, other):
        return Node(self.value * other.value, (self, other))

    def __truediv__(self, other):
        return Node(self.value / other.value, (self, other))

    def __neg__(self):
        return Node(-self.value, (self,))


a = Node(4.0)
b = Node(2.0)
out = -(a - b) / (a * b + a)
print(out.value)
