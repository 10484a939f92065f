# Source: karpathy/nn-zero-to-hero, micrograd_lecture_first_half_roughly.ipynb: the variable used
# twice (the bug the += in _backward fixes).
a = Value(3.0, label="a")
b = a + a
b.label = "b"
b.backward()
