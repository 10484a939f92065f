# One neuron with two inputs, labelled step by step: u1*v1 + u2*v2 + bias, then tanh.
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
y = z.tanh()
y.label = "y"
y.backward()
