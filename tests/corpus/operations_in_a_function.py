# The operations of many_operations.py inside a function of the program, called once, with the
# gradients printed after backward().
from micrograd.engine import Value


def build_and_walk():
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
    t.backward()
    print(m.grad, n.grad, t.data)


build_and_walk()
