"""micrograd's nn module (Module, Neuron, Layer, MLP), written in the Python subset itself and
run by the interpreter, so `from micrograd.nn import MLP` builds exactly the graph micrograd's
nn.py builds, draws the same random numbers in the same order, and its nodes carry scopes such
as MLP.__call__ › Layer[1] › Neuron[3]. `_call_in_scope(kind, i, f, x)` is f(x) shown in
scope `kind[i]`; it exists only here, not for programs."""

NN_SOURCE = """
class Module:
    def zero_grad(self):
        for p in self.parameters():
            p.grad = 0

    def parameters(self):
        return []


class Neuron(Module):
    def __init__(self, nin, nonlin=True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0)
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return self.w + [self.b]


class Layer(Module):
    def __init__(self, nin, nout, nonlin=True):
        self.neurons = [Neuron(nin, nonlin) for _ in range(nout)]

    def __call__(self, x):
        out = [_call_in_scope("Neuron", i, n, x) for i, n in enumerate(self.neurons)]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP(Module):
    def __init__(self, nin, nouts):
        sz = [nin] + nouts
        self.layers = [Layer(sz[i], sz[i + 1], nonlin=i != len(nouts) - 1) for i in range(len(nouts))]

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = _call_in_scope("Layer", i, layer, x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]
"""

NAMES = ("Module", "Neuron", "Layer", "MLP")
