# Two leaves that each reach the output along two paths, through a product and a sum.
m = Value(1.5, label="m")
n = Value(-4.0, label="n")
product = m * n
product.label = "product"
total = m + n
total.label = "total"
out = product * total
out.label = "out"

out.backward()
