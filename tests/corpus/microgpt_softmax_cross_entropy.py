# Source: Karpathy's microgpt (the single-file GPT written on a micrograd-style Value): its linear,
# softmax and rmsnorm helpers and the cross-entropy of one position, on a toy 3x4 weight matrix.
import random

random.seed(42)

matrix = lambda nout, nin, std=0.08: [[Value(random.gauss(0, std)) for _ in range(nin)] for _ in range(nout)]


def linear(x, w):
    return [sum(wi * xi for wi, xi in zip(wo, x)) for wo in w]


def softmax(logits):
    max_val = max(val.data for val in logits)
    exps = [(val - max_val).exp() for val in logits]
    total = sum(exps)
    return [e / total for e in exps]


def rmsnorm(x):
    ms = sum(xi * xi for xi in x) / len(x)
    scale = (ms + 1e-5) ** -0.5
    return [xi * scale for xi in x]


w = matrix(4, 3)
x = [Value(1.0), Value(-2.0), Value(0.5)]
logits = linear(rmsnorm(x), w)
probs = softmax(logits)
target_id = 2
loss = -probs[target_id].log()
loss.backward()
print(f"loss {loss.data:.4f}")
