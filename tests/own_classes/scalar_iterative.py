# Written for valuegraph: a class named Scalar, `children`/`local_grads`, a walk with an explicit stack.
class Scalar:
    def __init__(self, data, children=(), local_grads=(), op=""):
        self.data = data
        self.grad = 0.0
        self.children = children
        self.local_grads = local_grads
        self.op = op

    def __add__(self, other):
        other = other if isinstance(other, Scalar) else Scalar(other)
        return Scalar(self.data + other.data, [self, other], [1.0, 1.0], "+")

    def __mul__(self, other):
        other = other if isinstance(other, Scalar) else Scalar(other)
        return Scalar(self.data * other.data, [self, other], [other.data, self.data], "*")

    def __rmul__(self, other):
        return self * other

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                for child in node.children:
                    stack.append((child, False))
        self.grad = 1.0
        for node in reversed(order):
            for child, local in zip(node.children, node.local_grads):
                child.grad += local * node.grad


x = Scalar(1.5)
y = Scalar(-2.0)
z = 3 * x * y + x * x
out = z * z
out.backward()
print(x.grad, y.grad)
