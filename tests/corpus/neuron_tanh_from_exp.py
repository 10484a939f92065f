# The same neuron with tanh spelled out: (exp(2z) - 1) / (exp(2z) + 1), from exp, subtraction,
# addition and division.
u1 = Value(0.5, label="u1")
u2 = Value(-1.5, label="u2")
v1 = Value(1.2, label="v1")
v2 = Value(0.4, label="v2")
bias = Value(0.3, label="bias")
u1v1 = u1 * v1
u1v1.label = "u1*v1"
u2v2 = u2 * v2
u2v2.label = "u2*v2"
weighted = u1v1 + u2v2
weighted.label = "weighted"
z = weighted + bias
z.label = "z"
twice = (2 * z).exp()
y = (twice - 1) / (twice + 1)
y.label = "y"
y.backward()
