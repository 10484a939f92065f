"""A finished call's frame and the functions it defined (calls.free_if_unreachable): emptied at
once when nothing else reaches them, so a backward's inner `visit` does not hold every node of the
step until the cyclic collector runs; left as they are whenever anything still reaches them."""

import gc
import tracemalloc

from engine import Limits
from engine.python import run_python
from tests.cpython import cpython_printed

REACHED = """
def counter():
    count = 0
    def bump(by=1):
        nonlocal count
        count += by
        return count
    return bump

bump = counter()
bump()
print(bump(2))

def adders():
    return [lambda x, k=k: x + k for k in range(3)]

print([f(10) for f in adders()])

class Node:
    def __init__(self, data):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None

    def __mul__(self, other):
        out = Node(self.data * other.data)
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

a, b = Node(2.0), Node(3.0)
c = a * b
c.grad = 1.0
c._backward()
print(a.grad, b.grad)

def make_class(scale):
    class Scaled:
        def times(self, x):
            return x * scale
    return Scaled

print(make_class(4)().times(2))

def lazy(xs):
    factor = 3
    def twice(x):
        return x * 2
    return (twice(x) * factor for x in xs)

print(list(lazy([1, 2])))

kept = []
def registers():
    seen = 'inner'
    def shown():
        return seen
    kept.append(shown)
    return None

registers()
print(kept[0]())

def aliased():
    value = 7
    def get():
        return value
    other = get
    return other

print(aliased()())

def runs_inner(n):
    total = []
    def add(i):
        total.append(i)
    for i in range(n):
        add(i)
    return total

print(runs_inner(4), runs_inner(2))
"""


def test_frames_that_anything_still_reaches_keep_their_variables():
    assert run_python(REACHED, shows_graph=False).printed == cpython_printed(REACHED)


DEEP = """
class V:
    def __init__(self, data, children=()):
        self.data = data
        self.grad = 0.0
        self.children = children

def backward(out):
    order, seen = [], set()
    def visit(node):
        if node not in seen:
            seen.add(node)
            for child in node.children:
                visit(child)
            order.append(node)
    visit(out)
    out.grad = 1.0
    for node in reversed(order):
        for child in node.children:
            child.grad += node.grad
    return len(order)

x = V(1.0)
y = x
for i in range(LENGTH):
    y = V(y.data + 1, (y,))
print(backward(y), x.grad)
"""


def test_a_deep_inner_recursion_still_walks_every_node():
    # 3,000 levels of `visit`: the calls move to fresh stacks on the way down (calls.FreshStack)
    program = DEEP.replace("LENGTH", "3000")
    assert run_python(program, Limits(max_call_depth=10_000), shows_graph=False).printed == ["3001 1.0"]


MANY_CALLS = """
class Node:
    def __init__(self, data):
        self.data = data

def walk(n):
    made = []
    def visit(i):
        made.append(Node(i))
    for i in range(n):
        visit(i)
    return len(made)

total = 0
for k in range(CALLS):
    total += walk(5000)
print(total)
"""


def _peak_bytes(program: str) -> int:
    collecting = gc.isenabled()
    gc.disable()  # what only the collector would free stays: the cycles a call left
    tracemalloc.start()
    try:
        run_python(program, shows_graph=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        if collecting:
            gc.enable()


def test_a_finished_calls_inner_function_does_not_keep_what_the_call_made():
    one = _peak_bytes(MANY_CALLS.replace("CALLS", "1"))
    many = _peak_bytes(MANY_CALLS.replace("CALLS", "8"))
    # one call's 5,000 nodes alive at a time, not eight calls' (each in a cycle of frame and `visit`)
    assert many < 3 * one


DEEP_DEFINES = """
class Kept:
    pass

def deep(n):
    kept = [Kept(), Kept()]
    def inner():
        return kept
    if n == 0:
        return len(inner())
    return deep(n - 1) + len(inner())

print(deep(3000))
"""


def test_a_deep_recursions_calls_on_fresh_stacks_do_not_keep_what_they_made():
    """The calls that moved to a fresh stack (calls.FreshStack) are emptied as the others are."""
    from engine.python.objects import Instance

    collecting = gc.isenabled()
    gc.disable()
    try:
        ran = run_python(DEEP_DEFINES, Limits(max_call_depth=10_000), shows_graph=False)
        left = [o for o in gc.get_objects() if type(o) is Instance and o.cls.name == "Kept"]
    finally:
        if collecting:
            gc.enable()
    assert ran.printed == ["6002"]
    assert left == [], f"{len(left)} objects made by finished calls wait for the cyclic collector"
