# Numbers on either side of an operation, subtraction, exp and expression statements whose value
# is dropped; the division gets a name and backward() is called on it.
m = Value(3.0)
n = Value(-2.0)
m - n
5 * m
n + 0.5
n.exp()
1 - m
ratio = m / n
ratio.backward()
