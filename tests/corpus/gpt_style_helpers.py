# Helpers in the style of a tiny transformer written on a scalar Value: a weight matrix from
# random.gauss, a linear map, RMS normalisation, a softmax with the largest logit subtracted, and
# the cross-entropy of one position.
import random

random.seed(7)

weights = lambda rows, cols, spread=0.1: [[Value(random.gauss(0, spread)) for _ in range(cols)] for _ in range(rows)]


def project(vector, matrix):
    return [sum(m * v for m, v in zip(row, vector)) for row in matrix]


def normalise(vector):
    mean_square = sum(v * v for v in vector) / len(vector)
    factor = (mean_square + 1e-6) ** -0.5
    return [v * factor for v in vector]


def probabilities(scores):
    top = max(score.data for score in scores)
    raised = [(score - top).exp() for score in scores]
    norm = sum(raised)
    return [r / norm for r in raised]


table = weights(5, 3)
token = [Value(0.7), Value(-1.3), Value(2.1)]
scores = project(normalise(token), table)
chances = probabilities(scores)
right = 3
loss = -chances[right].log()
loss.backward()
print(f"loss {loss.data:.4f}")
