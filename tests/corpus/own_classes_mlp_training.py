# A program's own network classes (tanh units, a dense layer of them, a stack of layers), random
# initial weights, four rows, and gradient descent: every backward() is a point of the loss curve.
import random


class Unit:
    def __init__(self, inputs):
        self.weights = [Value(random.uniform(-1, 1)) for _ in range(inputs)]
        self.bias = Value(random.uniform(-1, 1))

    def __call__(self, xs):
        total = self.bias
        for weight, x in zip(self.weights, xs):
            total = total + weight * x
        return total.tanh()

    def parameters(self):
        return self.weights + [self.bias]


class Dense:
    def __init__(self, inputs, outputs):
        self.units = [Unit(inputs) for _ in range(outputs)]

    def __call__(self, xs):
        values = [unit(xs) for unit in self.units]
        if len(values) == 1:
            return values[0]
        return values

    def parameters(self):
        found = []
        for unit in self.units:
            found.extend(unit.parameters())
        return found


class Stack:
    def __init__(self, inputs, widths):
        sizes = [inputs] + widths
        self.layers = [Dense(sizes[i], sizes[i + 1]) for i in range(len(widths))]

    def __call__(self, xs):
        for layer in self.layers:
            xs = layer(xs)
        return xs

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


net = Stack(3, [4, 4, 1])
rows = [
    [0.4, -1.2, 2.5],
    [-0.7, 0.3, 1.0],
    [1.8, 0.9, -0.6],
    [-1.1, -0.4, 0.2],
]
wanted = [0.5, -0.5, 1.0, -1.0]

for epoch in range(15):
    guesses = [net(row) for row in rows]
    error = sum((guess - goal) ** 2 for goal, guess in zip(wanted, guesses))

    for p in net.parameters():
        p.grad = 0.0
    error.backward()

    for p in net.parameters():
        p.data -= 0.08 * p.grad

    print(epoch, error.data)
