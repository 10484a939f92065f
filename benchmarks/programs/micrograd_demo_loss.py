import random

from micrograd.engine import Value
from micrograd.nn import MLP

random.seed(1337)

# 100 points of two interleaved half circles, labelled -1 and 1, with a little noise; each
# coordinate is a Value, as a training loop that feeds a batch would make it
points = []
labels = []
for i in range(100):
    t = 3.14159 * (i % 50) / 49
    if i < 50:
        x, y, label = 1 - (1 - t * t / 2 + t**4 / 24), t - t**3 / 6, -1
    else:
        x, y, label = 1 + t, 0.5 - t, 1
    points.append([Value(x + random.uniform(-0.1, 0.1)), Value(y + random.uniform(-0.1, 0.1))])
    labels.append(label)

model = MLP(2, [16, 16, 1])

scores = [model(point) for point in points]
losses = [(1 + -label * score).relu() for label, score in zip(labels, scores)]
data_loss = sum(losses) * (1.0 / len(losses))
alpha = 1e-4
reg_loss = alpha * sum(p * p for p in model.parameters())
loss = data_loss + reg_loss
loss.backward()
