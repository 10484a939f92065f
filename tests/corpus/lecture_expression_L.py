# Source: karpathy/nn-zero-to-hero, lectures/micrograd/micrograd_lecture_first_half_roughly.ipynb:
# the first expression graph, then L.backward().
a = Value(2.0, label="a")
b = Value(-3.0, label="b")
c = Value(10.0, label="c")
e = a * b
e.label = "e"
d = e + c
d.label = "d"
f = Value(-2.0, label="f")
L = d * f
L.label = "L"
L.backward()
