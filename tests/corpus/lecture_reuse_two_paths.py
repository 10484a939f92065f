# Source: karpathy/nn-zero-to-hero, micrograd_lecture_first_half_roughly.ipynb: a and b each
# reach f by two paths.
a = Value(-2.0, label="a")
b = Value(3.0, label="b")
d = a * b
d.label = "d"
e = a + b
e.label = "e"
f = d * e
f.label = "f"

f.backward()
