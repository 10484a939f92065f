# Source: karpathy/nn-zero-to-hero, micrograd_lecture_first_half_roughly.ipynb: the cell that
# tries the new operations (numbers on either side, division, subtraction, exp); the division is
# given a name and backward() is called on it.
a = Value(2.0)
b = Value(4.0)
a - b
2 * a
a + 1
a.exp()
c = a / b
c.backward()
