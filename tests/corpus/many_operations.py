# Every operation of micrograd's Value in one program: +, *, ** by a number, relu, negation,
# subtraction, division either way, numbers on the left, and += rebinding names.
from micrograd.engine import Value

m = Value(3.0)
n = Value(-1.5)
p = m * n + 2
q = n**2 + m
p += p * 3 + (m + n).relu()
q += 2 + q - (-n)
p += (q - m).relu() * 0.5
r = p - q
s = r**2
t = s / 4.0
t += 6.0 / s
print(f"{t.data:.4f}")
t.backward()
print(f"{m.grad:.4f}")
print(f"{n.grad:.4f}")
