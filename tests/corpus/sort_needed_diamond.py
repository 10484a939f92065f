# Two leaves feed a sum and a product, which meet twice again before the output: a backward that
# recurses without sorting the graph first gets the leaves' gradients wrong here.
from micrograd.engine import Value

x = Value(1.5)
w = Value(-2.0)
plus = x + w
times = x * w
left = plus + times
right = plus * times
y = left + right
y.backward()
print(x.grad, w.grad)
