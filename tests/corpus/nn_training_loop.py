# micrograd.nn's MLP trained for twenty steps on four rows: forward, zero_grad(), backward(),
# and a step against the gradient, printing the loss each time.
from micrograd.nn import MLP

net = MLP(3, [4, 4, 1])
rows = [
    [0.4, -1.2, 2.5],
    [-0.7, 0.3, 1.0],
    [1.8, 0.9, -0.6],
    [-1.1, -0.4, 0.2],
]
wanted = [0.5, -0.5, 1.0, -1.0]

for step in range(20):
    guesses = [net(row) for row in rows]
    error = sum((guess - goal) ** 2 for goal, guess in zip(wanted, guesses))
    net.zero_grad()
    error.backward()
    for p in net.parameters():
        p.data -= 0.04 * p.grad
    print(step, error.data)
