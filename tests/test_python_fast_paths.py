"""The interpreter's fast paths (issue 21, speed) keep every program's meaning: calls of plain
functions bind straight into the frame, a function's final `return` is its expression, one try per
block reports a failure at its statement, names a function likely holds are read inline, and
`obj.field`, `xs[i]`, `a + b`, `x in s`, `for a, b in ...` and `obj.field += ...` have inline cases.
Each program here prints the same lines as CPython, and each error keeps its message and place."""

import pytest

from engine import Limits, ProgramError
from engine.python import run_python
from tests.cpython import cpython_printed

CALLS = """
def plain(a, b):
    return a * 10 + b

def with_default(a, b=2):
    return a * 10 + b

def keyword_only(a, *, scale=3):
    return a * scale

def spread(first, *rest, **named):
    return [first, list(rest), sorted(named.items())]

def no_return(xs):
    xs.append(1)

def bare_return(x):
    if x > 0:
        return
    return x

def early(x):
    for i in range(10):
        if i == x:
            return i * 100
    return -1

def nested_return(x):
    if x:
        return 'yes'
    else:
        return 'no'

class Point:
    def __init__(self, x, y=0):
        self.x = x
        self.y = y

    def moved(self, dx, dy=1):
        return Point(self.x + dx, self.y + dy)

    def __add__(self, other):
        return Point(self.x + other.x, self.y + other.y)

    def __repr__(self):
        return f'Point({self.x}, {self.y})'

f = lambda x, k=5: x + k

class Appends:  # a field or method named like a list's or a set's: not the container's
    def __init__(self):
        self.append = lambda x: x * 2

    def add(self, x):
        return x + 1

print(Appends().append(3), Appends().add(3), [[].append(1), set().add(2)])
print(plain(1, 2), plain(b=1, a=2), with_default(1), with_default(1, 3), with_default(b=4, a=1))
print(keyword_only(2), keyword_only(2, scale=4), spread(1), spread(1, 2, 3, z=1, y=2))
print(no_return([]), bare_return(1), bare_return(-2), early(3), early(20), nested_return(0), nested_return(1))
p = Point(1)
print(p, p.moved(2), p.moved(2, 5), p + Point(3, 4), f(1), f(1, 2))
print([plain(i, i) for i in range(3)], list(map(with_default, [1, 2])), sorted([3, 1, 2], key=lambda v: -v))
"""

NAMES = """
def uses_later():
    return later(2) + offset

def later(x):
    return x * 3

offset = 1
print(uses_later())
offset = 10
print(uses_later())

def counter():
    count = 0
    def bump(by):
        nonlocal count
        count += by
        return count
    bump(2)
    return bump(3)

print(counter())

def outer(xs):
    total = 0
    seen = set()
    def visit(x):
        if x not in seen:
            seen.add(x)
            xs.append(x * total)
    for x in [1, 2, 1, 3]:
        visit(x)
    return xs

print(outer([]))

def shadows(sum, len):
    return sum + len

print(shadows(1, 2), sum([1, 2]), len('abc'))

def abs(x):
    return 'mine'

def calls_abs():
    return abs(-1)

print(calls_abs())
x = 'global x'
print([x for x in range(3)], x)

def comprehension_reads(n):
    factor = 2
    return [x * factor + n for x in range(3)], {k: v for k, v in zip('ab', [factor, n])}

print(comprehension_reads(5))
for i in range(2):
    def at_pass():
        return i
    print(at_pass())
"""

STORES = """
class Node:
    __slots__ = ('data', 'grad', 'children')

    def __init__(self, data, children=()):
        self.data = data
        self.grad = 0
        self.children = children

class Open:
    pass

a, b = Node(2.0), Node(3)
c = Node(a.data * b.data, (a, b))
c.grad = 1
for child, local in zip(c.children, (b.data, a.data)):
    child.grad += local * c.grad
print(a.grad, b.grad, isinstance(a.grad, float), isinstance(b.grad, int))
o = Open()
o.items = [1]
o.items += [2, 3]
o.count = 1
o.count += 1.5
o.text = 'a'
o.text += 'b'
print(o.items, o.count, o.text)
pairs = [[1, 2], (3, 4), 'xy', range(2)]
for first, second in pairs:
    print(first, second)
first, second = 'ab'
print(first, second, [(p, q) for p, q in zip([1, 2], 'cd')])
s = {a}
print(a in s, b in s, a not in s, b not in s, 1 in {1, 2}, (1, 2) in {(1, 2)}, 'a' in 'cat')
xs = [10, 20, 30]
print(xs[0], xs[-1], xs[-3], xs[1:], 'abc'[1], (1, 2)[1], {'k': 1}['k'], [[1, 2]][0][1])
print(1.5 + 2, 2 + 1.5, 1.5 * True, 3 - 0.5, 2**0.5, 1e308 * 10, -1e308 * 10, 7 // 2, 7.0 // 2, 1 + 2)
print((1, 2) + (3,), [0] * 3, 'ab' * 2, 2 * 'c')
"""


ISINSTANCE = """
class A:
    pass

class B(A):
    pass

class C:
    pass

a, b = A(), B()
print(isinstance(a, A), isinstance(b, A), isinstance(a, B), isinstance(a, C), isinstance(b, B))
print(isinstance(a, (C, A)), isinstance(1, int), isinstance(1.5, (int, float)), isinstance('x', str))
print(isinstance(a, int), isinstance(1, A))
def check(x, kind):
    return isinstance(x, kind)
print(check(b, A), check(3, float))

def isinstance(x, kind):
    return 'the program owns ' + kind
print(isinstance(a, 'A'))
"""


@pytest.mark.parametrize("program", [CALLS, NAMES, STORES, ISINSTANCE], ids=["calls", "names", "stores", "isinstance"])
def test_programs_print_what_cpython_prints(program):
    assert run_python(program, shows_graph=False).printed == cpython_printed(program)


HEAD = "class V:\n    __slots__ = ('data', 'grad')\n    def __init__(self, data):\n        self.data = data\n"


@pytest.mark.parametrize(
    ("program", "message", "line", "column"),
    [
        # a fast-path call whose body fails: the failing code's place inside the function
        ("def f(a, b):\n    return a.foo + b\nf(1, 2)", "int has no attribute 'foo'", 2, 12),
        ("def f(a, b):\n    c = [a][b]\n    return c\nf(1, 2)", "index 2 is out of range for a list of 1", 2, 9),
        ("def f(a):\n    assert a > 5, 'too small'\n    return a\nf(1)", "assertion failed: too small", 2, 5),
        ("def f(a):\n    return undefined + a\nf(1)", "unknown name 'undefined'", 2, 12),
        (
            "def f(a):\n    if a:\n        return a + 'x'\n    return 0\nf(1)",
            "`+` does not work on int and string",
            3,
            16,
        ),
        # the calling protocol's own errors, at the call
        ("def f(a, b):\n    return a\nf(1, 2, 3)", "f() takes 2 arguments, got 3", 3, 1),
        ("def f(a, b=2):\n    return a\nf()", "f() is missing its argument 'a'", 3, 1),
        ("def f(a, b):\n    return a\nf(1, c=2)", "f() has no parameter named 'c'", 3, 1),
        ("def f(a):\n    return f(a)\nf(1)", "calls nest deeper than", 2, 12),
        # statements run inline by their block, each failure at its own statement
        ("for a, b in [(1, 2), (3,)]:\n    pass", "cannot unpack 1 values into 2 names", 1, 1),
        (HEAD + "v = V(1)\nv.grad = 0\nv.grad += 'a'", "`+` does not work on int and string", 7, 1),
        (HEAD + "v = V(1)\nv.label = 'x'", "cannot take the attribute 'label'", 6, 1),
        ("x = 1.5\ny = x + None", "`+` does not work on float and None", 2, 5),
        (
            "class E:\n    def __eq__(self, other):\n        return True\nprint(E() in {1})",
            "a set cannot hold a E: its class defines __eq__",
            4,
            7,
        ),
        (  # inherited: the subclass's instances compare by the base's __eq__ too
            "class E:\n    def __eq__(self, other):\n        return True\nclass F(E):\n    pass\nseen = {1}\n"
            "print(F() in seen)",
            "a set cannot hold a F: its class defines __eq__",
            7,
            7,
        ),
        (
            "class E:\n    def __eq__(self, other):\n        return True\nclass F(E):\n    pass\nseen = set()\n"
            "seen.add(F())",
            "a set cannot hold a F: its class defines __eq__",
            7,
            1,
        ),
        # xs.append(x) and seen.add(x), run inline: their refusals at the call
        ("xs = []\nxs.append(1, 2)", "append() takes 1 argument, got 2", 2, 1),
        ("s = set()\ns.add([1])", "a set cannot hold a list (unhashable type)", 2, 1),
        ("s = set()\nfor i in range(10**8):\n    s.add(i)", "the set would hold more than", 3, 5),
        ("xs = []\nfor i in range(10**8):\n    xs.append(i)", "the list would hold more than", 3, 5),
        # isinstance(x, C), run at once for an instance and a class: its refusals at the call
        ("class A:\n    pass\nprint(isinstance(A(), 3))", "isinstance()'s second argument must be a class", 3, 7),
        ("print(isinstance(1, 2, 3))", "isinstance", 1, 7),
        # the prelude's failures are placed at the program's call into it
        ("from micrograd.nn import MLP\nmodel = MLP(2, [1])\nout = model(['a', 'b'])", "does not work on", 3, 7),
    ],
)
def test_errors_keep_their_message_and_place(program, message, line, column):
    with pytest.raises(ProgramError) as caught:
        run_python(program)
    assert message in caught.value.message
    assert (caught.value.line, caught.value.column) == (line, column)


COUNTED = """
def f(a, b):
    c = a + b
    return c * 2

def g(xs):
    total = 0
    for x in xs:
        total += f(x, 1)
    return total

print(g(range(5)), [f(i, i) for i in range(3)])
"""


def test_the_statement_count_is_unchanged():
    # 30 statements, loop passes and comprehension items in all, as the code before the fast paths counted
    run_python(COUNTED, Limits(max_statements=30), shows_graph=False)
    with pytest.raises(ProgramError, match="more than 29 statements"):
        run_python(COUNTED, Limits(max_statements=29), shows_graph=False)


FIELDS = """
class V:
    def __init__(self, data, children=(), op='', scale=1.5):
        self.data = data
        self.grad = 0
        self._children = children
        self._op = op
        self.scale = scale
        self.none = None

class Sub(V):
    pass

class Keeps:
    def __init__(self, items=[]):
        self.items = items

a, b = V(2.0), V(3, (1,), op='*')
print(a.data, a.grad, a._children, repr(a._op), a.scale, a.none, b._children, b._op, Sub(4, scale=2).scale)
first, second = Keeps(), Keeps()
first.items.append(1)
print(second.items, first.items is second.items, Keeps([2]).items, vars(a) if False else sorted(['data']))
"""


def test_a_field_only_init_fills_its_fields_as_cpython_does():
    assert run_python(FIELDS, shows_graph=False).printed == cpython_printed(FIELDS)


# The same class twice: V's __init__ only stores fields (calls.field_filler fills them, no call made),
# W's computes one, so it is a call; both must count, nest and fail alike.
TWO_INITS = """
class V:
    def __init__(self, data, grad=0):
        self.data = data
        self.grad = grad

class W:
    def __init__(self, data, grad=0):
        self.data = data + 0
        self.grad = grad

def deep(cls, n):
    if n == 0:
        return cls(1)
    return deep(cls, n - 1)

made = [CLS(i) for i in range(4)]
print(deep(CLS, DEPTH).data)
"""


def _run_with(cls, depth, limits):
    return run_python(TWO_INITS.replace("CLS", cls).replace("DEPTH", str(depth)), limits, shows_graph=False)


def _failure(cls, depth, limits):
    try:
        _run_with(cls, depth, limits)
    except ProgramError as error:
        return error.message, error.line, error.column
    return None


def test_a_field_only_init_counts_statements_as_its_call():
    least = {}
    for cls in ("V", "W"):
        least[cls] = next(n for n in range(1, 200) if _failure(cls, 3, Limits(max_statements=n)) is None)
        # one short: the limit is reached at the same place
        assert _failure(cls, 3, Limits(max_statements=least[cls] - 1)) is not None
    assert least["V"] == least["W"]
    short = Limits(max_statements=least["V"] - 1)
    # placed at the first statement of each class's __init__ (lines 4 and 9), where the last call's count ends
    (v_message, *v_place), (w_message, *w_place) = _failure("V", 3, short), _failure("W", 3, short)
    assert (v_message, v_place, w_place) == (w_message, [4, 9], [9, 9])


def test_a_field_only_init_nests_as_its_call():
    limits = Limits(max_call_depth=12)
    deepest = {cls: max(n for n in range(15) if _failure(cls, n, limits) is None) for cls in ("V", "W")}
    assert deepest["V"] == deepest["W"]
    message, _, _ = _failure("V", deepest["V"] + 1, limits)
    assert "calls nest deeper than 12" in message
    assert _failure("V", deepest["V"] + 1, limits) == _failure("W", deepest["W"] + 1, limits)


@pytest.mark.parametrize(
    ("program", "message", "line", "column"),
    [
        (
            "class V:\n    __slots__ = ('data',)\n    def __init__(self, data):\n        self.data = data\n"
            "        self.grad = 0\nV(1)",
            "cannot take the attribute 'grad'",
            5,
            9,
        ),
        (
            "class V:\n    def __init__(self, data):\n        self.data = data\nV()",
            "missing its argument 'data'",
            4,
            1,
        ),
        (
            "class V:\n    def __init__(self, data):\n        self.data = data\nV(1, 2)",
            "takes 2 arguments, got 3",
            4,
            1,
        ),
        (
            "class V:\n    def __init__(self, data):\n        self.data = data\nV(1, d=2)",
            "no parameter named 'd'",
            4,
            1,
        ),
    ],
)
def test_a_field_only_init_fails_as_its_call(program, message, line, column):
    with pytest.raises(ProgramError) as caught:
        run_python(program)
    assert message in caught.value.message
    assert (caught.value.line, caught.value.column) == (line, column)
