# Source: karpathy/nn-zero-to-hero, the micrograd lecture's training loop, on micrograd.nn's MLP.
from micrograd.nn import MLP

n = MLP(3, [4, 4, 1])
xs = [
    [2.0, 3.0, -1.0],
    [3.0, -1.0, 0.5],
    [0.5, 1.0, 1.0],
    [1.0, 1.0, -1.0],
]
ys = [1.0, -1.0, -1.0, 1.0]  # desired targets

for k in range(20):
    # forward pass
    ypred = [n(x) for x in xs]
    loss = sum((yout - ygt) ** 2 for ygt, yout in zip(ys, ypred))
    # backward pass
    n.zero_grad()
    loss.backward()
    # update
    for p in n.parameters():
        p.data += -0.05 * p.grad
    print(k, loss.data)
