# A small expression with a label on every value, some given after the operation; then backward().
p = Value(1.5, label="p")
q = Value(-4.0, label="q")
r = Value(7.0, label="r")
pq = p * q
pq.label = "pq"
s = pq + r
s.label = "s"
k = Value(-0.5, label="k")
out = s * k
out.label = "out"
out.backward()
