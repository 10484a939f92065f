# Source: karpathy/micrograd pull request 64: a = 1; b = a + a; c = b + b, where visiting each
# path separately instead of in topological order gives the wrong gradient.
from micrograd.engine import Value

a = Value(1.0)
b = a + a
c = b + b
c.backward()
print(a.grad)  # 4.0
