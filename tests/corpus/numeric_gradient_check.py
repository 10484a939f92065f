# Inside a function: the same expression built twice, the second time with p moved by a small step,
# prints the slope that approximates d(out)/dp; then backward() on the second graph.
def slope_of_out_in_p():
    step = 0.0001

    p = Value(1.5, label="p")
    q = Value(-4.0, label="q")
    s = p * q + Value(7.0, label="r")
    s.label = "s"
    out = s * Value(-0.5, label="k")
    out.label = "out"
    before = out.data

    p = Value(1.5 + step, label="p")
    q = Value(-4.0, label="q")
    s = p * q + Value(7.0, label="r")
    s.label = "s"
    out = s * Value(-0.5, label="k")
    out.label = "out"
    after = out.data

    print("slope", (after - before) / step)
    out.backward()


slope_of_out_in_p()
