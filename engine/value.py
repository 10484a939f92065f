"""A scalar that remembers how it was made: the course's Value, micrograd style.

Each operation computes its result and, at the same time, its local gradient with
respect to each input (children and local_grads are aligned; duplicates are kept, so
a * a has two children). backward() then only multiplies and accumulates.
"""

import itertools
import math

from . import ieee
from .autograd import operation_order, propagate

# Creation order, the id a node is shown with. next(_serials) is a specialised call in 3.11;
# a bound count().__next__ is a method-wrapper, about 1 % slower per node built.
_serials = itertools.count()


def next_serial() -> int:
    """The creation number the next Value will take."""
    global _serials
    serial = next(_serials)
    _serials = itertools.count(serial)
    return serial


def serials_from(serial: int) -> None:
    """Numbers the Values made from now on from `serial` on: a run resumed from a snapshot (engine.python.
    snapshots) continues the numbering of the run that saved it."""
    global _serials
    _serials = itertools.count(serial)


VALUE_EXPONENT_MESSAGE = (
    "the exponent must be a plain number, not a Value "
    "(the course's pow takes a constant); for a Value exponent write exp(b * log(a))"
)


class Value:
    __slots__ = ("data", "grad", "_children", "_local_grads", "op", "label", "exponent", "_serial")

    def __init__(self, data, children=(), local_grads=(), op=None, label=None, exponent=None):
        self.data = float(data)
        self.grad = 0.0
        self._children = children
        self._local_grads = local_grads
        self.op = op  # None for leaves; "+", "*", "**", "log", "exp", "relu" or "tanh"
        self.label = label
        self.exponent = exponent  # the constant n of a ** n
        self._serial = next(_serials)

    # Primitives: the forward value and the local gradient of each input, in one line.
    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other), (1.0, 1.0), "+")

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data * other.data, (self, other), (other.data, self.data), "*")

    def __pow__(self, n):
        if isinstance(n, Value):
            raise TypeError(VALUE_EXPONENT_MESSAGE)
        return Value(ieee.power(self.data, n), (self,), (n * ieee.power(self.data, n - 1),), "**", exponent=n)

    def log(self):
        return Value(ieee.log(self.data), (self,), (ieee.divide(1.0, self.data),), "log")

    def exp(self):
        e = ieee.exp(self.data)
        return Value(e, (self,), (e,), "exp")

    def relu(self):  # written so that relu(NaN) stays NaN, as C#'s Math.Max(0, NaN) does
        return Value(0.0 if self.data <= 0 else self.data, (self,), (1.0 if self.data > 0 else 0.0,), "relu")

    def tanh(self):
        t = math.tanh(self.data)
        return Value(t, (self,), (1.0 - t * t,), "tanh")

    # Derived operations, built from the primitives exactly as the course builds them.
    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * (other**-1 if isinstance(other, Value) else ieee.power(other, -1))

    def __rtruediv__(self, other):
        return other * self**-1

    def __rpow__(self, other):
        raise TypeError(VALUE_EXPONENT_MESSAGE)

    def backward(self):
        """Chapter 2: sort the graph, seed this node with 1, then push gradients back with +=.

        The sort is the course's walk with the leaves left out of the order (they have nothing
        to pass on), so the gradients are the trace's bit for bit. Like micrograd, gradients
        accumulate across calls; trace() starts from zero."""
        propagate(operation_order(self))

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"
