"""The peers the engine is measured against, besides PyPI micrograd (imported as it is):

- CourseValue: the course's Value as its chapter describes it (data, grad, _children,
  _local_grads in __slots__, local gradients computed with the result), written here. The
  forward peer: the least a Value with stored local gradients can cost.
- tape_leaf: a minimal tape of parallel lists (data, the two input positions and their local
  gradients per operation), with a one-slot handle so the same graph builders run on it. Its
  backward is one loop over list positions: the floor for pure CPython.
Both do only + and * (all the benchmark shapes use), with micrograd's literal-number rule.
"""


class CourseValue:
    __slots__ = ("data", "grad", "_children", "_local_grads")

    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other):
        other = other if isinstance(other, CourseValue) else CourseValue(other)
        return CourseValue(self.data + other.data, (self, other), (1, 1))

    def __mul__(self, other):
        other = other if isinstance(other, CourseValue) else CourseValue(other)
        return CourseValue(self.data * other.data, (self, other), (other.data, self.data))

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def backward(self):
        order, visited, stack = [], set(), [(self, 0)]
        while stack:  # iterative, so deep graphs run (the chapter's is recursive)
            node, index = stack.pop()
            if index < len(node._children):
                stack.append((node, index + 1))
                child = node._children[index]
                if child not in visited:
                    visited.add(child)
                    stack.append((child, 0))
            else:
                order.append(node)
        self.grad = 1
        for node in reversed(order):
            for child, local in zip(node._children, node._local_grads):
                child.grad += local * node.grad


class Tape:
    """One recording: position k holds an operation's result and, for each of its (up to) two
    inputs, the input's position (-1: none) and the local gradient."""

    def __init__(self):
        self.data, self.left, self.right, self.left_grad, self.right_grad = [], [], [], [], []

    def push(self, value, left=-1, right=-1, left_grad=0.0, right_grad=0.0):
        self.data.append(value)
        self.left.append(left)
        self.right.append(right)
        self.left_grad.append(left_grad)
        self.right_grad.append(right_grad)
        return TapeValue(self, len(self.data) - 1)

    def backward(self, root):
        grads = [0.0] * (root + 1)
        grads[root] = 1.0
        left, right, left_grad, right_grad = self.left, self.right, self.left_grad, self.right_grad
        for k in range(root, -1, -1):
            grad = grads[k]
            if grad:
                i = left[k]
                if i >= 0:
                    grads[i] += left_grad[k] * grad
                    j = right[k]
                    if j >= 0:
                        grads[j] += right_grad[k] * grad
        return grads


class TapeValue:
    __slots__ = ("tape", "i")

    def __init__(self, tape, i):
        self.tape = tape
        self.i = i

    def _other(self, other):
        return other if isinstance(other, TapeValue) else self.tape.push(other)

    def __add__(self, other):
        other = self._other(other)
        data = self.tape.data
        return self.tape.push(data[self.i] + data[other.i], self.i, other.i, 1.0, 1.0)

    def __mul__(self, other):
        other = self._other(other)
        data = self.tape.data
        a, b = data[self.i], data[other.i]
        return self.tape.push(a * b, self.i, other.i, b, a)

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def backward(self):
        return self.tape.backward(self.i)


def tape_leaf_factory():
    """A leaf constructor on a fresh tape (one tape per built graph)."""
    tape = Tape()
    return tape.push
