# Written for valuegraph, broken: the walk goes breadth first from the output, not in topological order.
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

    def backward(self):
        self.grad = 1
        queue, seen = [self], set()
        while queue:
            v = queue.pop(0)
            if v in seen:
                continue
            seen.add(v)
            for child, local in zip(v._children, v._local_grads):
                child.grad += local * v.grad
                queue.append(child)


a = Value(2.0)
b = a * a
c = b + a
out = c * b
out.backward()
print(a.grad, b.grad, c.grad)
