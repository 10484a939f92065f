# A short chain in which one value is reused by later operations: products, sums, relu of a
# negative and of a positive value.
from micrograd.engine import Value

v = Value(-3.0)
w = 3 * v + 1 + v
a = w.relu() + w * v
b = (w * w).relu()
out = b + a + a * v
out.backward()
