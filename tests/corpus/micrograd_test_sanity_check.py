# Source: karpathy/micrograd, test/test_engine.py, test_sanity_check: the micrograd half of the
# test body (the PyTorch half and the asserts against it are left out).
from micrograd.engine import Value

x = Value(-4.0)
z = 2 * x + 2 + x
q = z.relu() + z * x
h = (z * z).relu()
y = h + q + q * x
y.backward()
xmg, ymg = x, y
