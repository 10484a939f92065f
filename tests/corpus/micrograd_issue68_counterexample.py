# Source: karpathy/micrograd issue 68: the graph on which a naive recursive backward (without a
# topological order) gets the gradients wrong.
from micrograd.engine import Value

a = Value(2.0)
b = Value(3.0)
c = a + b
d = a * b
e = c + d
f = c * d
y = e + f
y.backward()
print(a.grad, b.grad)
