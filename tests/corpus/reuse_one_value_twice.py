# One value used twice in one operation: its gradient is the sum of both contributions.
w = Value(5.0, label="w")
twice = w + w
twice.label = "twice"
twice.backward()
