# Source: karpathy/nn-zero-to-hero, micrograd_lecture_second_half_roughly.ipynb, with micrograd's
# own nn module instead of the lecture's classes: one forward pass and its loss.
from micrograd.nn import MLP

xs = [
    [2.0, 3.0, -1.0],
    [3.0, -1.0, 0.5],
    [0.5, 1.0, 1.0],
    [1.0, 1.0, -1.0],
]
ys = [1.0, -1.0, -1.0, 1.0]  # desired targets
n = MLP(3, [4, 4, 1])
ypred = [n(x) for x in xs]
loss = sum((yout - ygt) ** 2 for ygt, yout in zip(ys, ypred))
loss.backward()
print(n.layers[0].neurons[0].w[0].grad)
