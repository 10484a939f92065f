"""The `micrograd.nn` classes programs import (Module, Neuron, Layer, MLP): valuegraph's own code,
written in the Python subset and run by the interpreter, with the behaviour of PyPI micrograd's
nn module: the same random draws in the same order (each neuron's weights from
random.uniform(-1, 1), its bias 0), the same operations in the same order (bias first, then each
weight times its input; relu except in the last layer), so the graph is the one micrograd builds
(tests/test_python_programs.py compares them). Its nodes carry scopes such as
MLP.__call__ › Layer[1] › Neuron[3] as any program's classes written this way do: a call of an
instance that a loop or comprehension walks is named by its class and index (calls.Walk)."""

NN_SOURCE = """
class Module:
    def parameters(self):
        return []

    def zero_grad(self):
        for parameter in self.parameters():
            parameter.grad = 0


class Neuron(Module):
    def __init__(self, nin, nonlin=True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0)
        self.nonlin = nonlin

    def __call__(self, x):
        total = self.b
        for weight, value in zip(self.w, x):
            total = total + weight * value
        if self.nonlin:
            return total.relu()
        return total

    def parameters(self):
        return self.w + [self.b]


class Layer(Module):
    def __init__(self, nin, nout, nonlin=True):
        self.neurons = [Neuron(nin, nonlin) for _ in range(nout)]

    def __call__(self, x):
        outputs = [neuron(x) for neuron in self.neurons]
        if len(outputs) == 1:
            return outputs[0]
        return outputs

    def parameters(self):
        found = []
        for neuron in self.neurons:
            found.extend(neuron.parameters())
        return found


class MLP(Module):
    def __init__(self, nin, nouts):
        sizes = [nin] + nouts
        last = len(nouts) - 1
        self.layers = [Layer(sizes[k], sizes[k + 1], nonlin=k != last) for k in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        found = []
        for layer in self.layers:
            found.extend(layer.parameters())
        return found
"""

NAMES = ("Module", "Neuron", "Layer", "MLP")
