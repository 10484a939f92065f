# A value doubled by adding it to itself, and the result doubled the same way: visiting each path
# on its own instead of in topological order would count the gradient wrongly.
from micrograd.engine import Value

s = Value(2.5)
once = s + s
again = once + once
again.backward()
print(s.grad)
