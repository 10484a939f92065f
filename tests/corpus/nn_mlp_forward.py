# micrograd.nn's MLP: one forward pass over four rows, a squared-error loss, backward(), and the
# gradient of the first weight read back through the model's attributes.
from micrograd.nn import MLP

rows = [
    [0.4, -1.2, 2.5],
    [-0.7, 0.3, 1.0],
    [1.8, 0.9, -0.6],
    [-1.1, -0.4, 0.2],
]
wanted = [0.5, -0.5, 1.0, -1.0]
net = MLP(3, [4, 4, 1])
guesses = [net(row) for row in rows]
error = sum((guess - goal) ** 2 for goal, guess in zip(wanted, guesses))
error.backward()
print(net.layers[0].neurons[0].w[0].grad)
