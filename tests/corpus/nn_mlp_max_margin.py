# micrograd.nn's MLP on eight two-dimensional points with labels -1 and 1, a max-margin loss with
# L2 regularisation, zero_grad(), and ten steps of gradient descent with a shrinking step size.
from micrograd.engine import Value
from micrograd.nn import MLP

points = [[0.9, 0.1], [0.2, 1.1], [-0.8, 0.6], [-0.3, 0.8], [1.3, -0.5], [1.9, 0.4], [0.6, -0.3], [1.0, -0.9]]
labels = [-1, -1, -1, -1, 1, 1, 1, 1]

model = MLP(2, [16, 16, 1])
print(model.parameters()[0])
print("parameters:", len(model.parameters()))


def objective(strength=1e-4):
    inputs = [list(map(Value, point)) for point in points]
    scores = list(map(model, inputs))
    margins = [(1 + -label * score).relu() for label, score in zip(labels, scores)]
    data_part = sum(margins) * (1.0 / len(margins))
    penalty = strength * sum((p * p for p in model.parameters()))
    right = [(label > 0) == (score.data > 0) for label, score in zip(labels, scores)]
    return data_part + penalty, sum(right) / len(right)


loss, accuracy = objective()
print(loss, accuracy)

for step in range(10):
    loss, accuracy = objective()
    model.zero_grad()
    loss.backward()
    rate = 0.8 - 0.5 * step / 10
    for p in model.parameters():
        p.data -= rate * p.grad
    print(f"step {step}: loss {loss.data}, accuracy {accuracy * 100}%")
