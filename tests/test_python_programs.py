"""Python programs for micrograd: the graph valuegraph builds equals PyPI micrograd's (node count,
op multiset, data and every leaf gradient, rel 1e-12), for micrograd's own tests as written, the
lecture neuron, an MLP and the course's softmax with cross-entropy; and what the response adds:
spans, exprs, scopes, distinct labels, runs, run and printed."""

import random
from pathlib import Path

import pytest
from micrograd_oracle import assert_same_graph, micrograd_calls

import engine
from engine import Limits, ProgramError, is_python, run_program, trace

CORPUS = Path(__file__).parent / "corpus"
# Programs of the corpus (tests/corpus/), the same files the corpus test runs
SANITY_CHAIN = (CORPUS / "sanity_chain.py").read_text(encoding="utf-8")
OPERATIONS = (CORPUS / "operations_in_a_function.py").read_text(encoding="utf-8")
NEURON = (CORPUS / "neuron_tanh.py").read_text(encoding="utf-8")

MLP_TRAINING = (CORPUS / "nn_training_loop.py").read_text(encoding="utf-8")

SOFTMAX_CROSS_ENTROPY = """
from micrograd.engine import Value

def normalised_exponentials(scores):
    shift = max(score.data for score in scores)
    lifted = [(score - shift).exp() for score in scores]
    whole = sum(lifted)
    return [part / whole for part in lifted]

scores = [Value(0.3), Value(-1.2), Value(2.4), Value(0.9)]
chances = normalised_exponentials(scores)
loss = -chances[2].log()
loss.backward()
print(loss.data)
"""


@pytest.mark.parametrize(
    "program",
    [SANITY_CHAIN, OPERATIONS, NEURON, SOFTMAX_CROSS_ENTROPY],
    ids=["sanity_chain", "operations", "neuron", "softmax"],
)
def test_the_graph_is_micrographs(program):
    assert_same_graph(program)


def test_the_operations_numbers_are_cpython_micrographs():
    """The answers PyPI micrograd gives for tests/corpus/operations_in_a_function.py in CPython."""
    ours = assert_same_graph(OPERATIONS)
    assert ours["data"] == pytest.approx(60.08747398543184, rel=1e-12)
    leaves = [n for n in ours["nodes"] if n[0] is None]
    assert leaves[0][2] == pytest.approx(50.354054076734585, rel=1e-12)
    assert leaves[1][2] == pytest.approx(-120.07505202913632, rel=1e-12)


def test_the_mlp_training_loop_is_micrograds_at_every_run():
    calls = micrograd_calls(MLP_TRAINING, seed=0)
    assert len(calls) == 20
    for run in (0, 7, 19):
        assert_same_graph(MLP_TRAINING, seed=0, run=run, oracle_calls=calls)
    other_seed = micrograd_calls(MLP_TRAINING, seed=5)
    assert other_seed[0]["data"] != calls[0]["data"]
    assert_same_graph(MLP_TRAINING, seed=5, oracle_calls=other_seed)


def test_the_mlp_graph_has_micrograds_size():
    result = run_program(MLP_TRAINING)
    nodes = trace(result.output).nodes
    ops = {op: sum(n.op == op for n in nodes) for op in ("+", "*", "**", "relu")}
    # each neuron computes b + sum(w*x): 4 samples x (12 + 16 + 4) products; leaves: 41 parameters,
    # the 4 x 12 inputs of the first layer, 4 negated targets and sum()'s start 0
    assert sum(n.op is None for n in nodes) == 41 + 4 * 12 + 4 + 1
    assert ops["*"] == 4 * (12 + 16 + 4) and ops["relu"] == 4 * 8 and ops["**"] == 4


# ---- runs, run, printed ----


def test_runs_are_the_loss_curve_and_the_graph_is_the_one_backward_walked():
    calls = micrograd_calls(MLP_TRAINING)
    result = run_program(MLP_TRAINING)
    backward_line = next(i for i, line in enumerate(MLP_TRAINING.splitlines(), 1) if ".backward()" in line)
    assert [line for line, _ in result.runs] == [backward_line] * 20
    assert [data for _, data in result.runs] == pytest.approx([c["data"] for c in calls], rel=1e-12)
    assert result.run == 19 and result.output.data == result.runs[-1][1]
    first = run_program(MLP_TRAINING, run=0)
    assert first.run == 0 and first.output.data == result.runs[0][1]
    # the parameters show the data they had when backward() ran, before the update after it
    leaves = [n for n in trace(first.output).nodes if n.op is None and n.label is None]
    assert [round(n.data, 12) for n in leaves][:3] == [round(n[1], 12) for n in calls[0]["nodes"] if n[0] is None][:3]


def test_printed_lines_are_captured():
    result = run_program(MLP_TRAINING)
    assert len(result.printed) == 20 and result.printed[0].startswith("0 ")
    assert run_program(
        "x = Value(1.5)\nprint('x is', x.data, sep=': ')\nprint([1, 2.5], (3,), {'a': 1}, None, True)"
    ).printed == [
        "x is: 1.5",
        "[1, 2.5] (3,) {'a': 1} None True",
    ]
    assert run_program("x = Value(2.0)\nprint(f'{x.data:.3f} {x}')").printed == ["2.000 Value(data=2.0, grad=0.0)"]


def test_integers_format_in_hex_octal_and_binary_as_cpython():
    program = """print(f'{42:x} {255:#X} {5:b} {8:o} {"ab":>4s}')\ny = Value(1.0)"""
    assert run_program(program).printed == ["2a 0XFF 101 10   ab"]  # CPython's


def test_a_line_continuation_is_not_in_a_nodes_code():
    program = "x = Value(2.0)\ny = x * x + \\\n    x\ny.backward()"
    made = run_program(program)
    nodes = trace(made.output, Limits(), "correct").nodes
    assert made.origins(nodes)[-1].expr == "x * x + x"


def test_a_run_that_does_not_exist_is_an_error():
    with pytest.raises(ProgramError, match="run 3 does not exist: the program calls backward\\(\\) 2 times"):
        run_program("x = Value(2.0)\nfor i in range(2):\n    y = x * i\n    y.backward()", run=3)
    with pytest.raises(ProgramError, match="run 0 does not exist: the program never calls backward\\(\\)"):
        run_program("x = Value(2.0)\ny = x * 2", run=0)
    with pytest.raises(ProgramError, match="the course shorthand makes no backward\\(\\) calls to choose from"):
        run_program("a = 2; b = a * 3", run=0)


def test_a_program_whose_values_are_no_statements_result_says_so():
    # Values in a list and a model's parameters are made, but no statement's result is a Value to show
    for program in ("xs = [Value(1.0), Value(2.0)]\nprint(xs)", "n = MLP(2, [1])\nprint(len(n.parameters()))"):
        with pytest.raises(ProgramError, match="no statement's result is a Value and the program calls no backward"):
            run_program(program, {}, Limits())
    with pytest.raises(ProgramError, match="the program makes no Value to show: start from Value"):
        run_program("print(3)", {}, Limits())


SUPER = """
class A:
    def __init__(self, x):
        self.x = x
    def describe(self):
        return 'A' + str(self.x)
class B(A):
    def __init__(self, x):
        super().__init__(x * 2)
    def describe(self):
        return 'B' + super().describe()
class C(B):
    def describe(self):
        return 'C' + super().describe() + super(B, self).describe()
c = C(3)
print(c.describe(), c.x, super(C, c))
class Module:
    pass
class Neuron(Module):
    def __init__(self, nin):
        super().__init__()
        self.w = [Value(0.5) for _ in range(nin)]
n = Neuron(2)
L = n.w[0] * 1.0 + n.w[1] * 2.0
L.backward()
print(n.w[0].grad, n.w[1].grad)
"""


def test_super_looks_after_the_class_that_defines_the_method():
    # CPython prints "CBA6A6 6 <super: <class 'C'>, <C object>>"; a base without __init__ has object's
    assert run_program(SUPER, {}, Limits()).printed == ["CBA6A6 6 <super: <class 'C'>, <C object>>", "1.0 2.0"]
    with pytest.raises(ProgramError, match="^1:5: super\\(\\) without arguments works only in a method"):
        run_program("x = super()\ny = Value(1.0)", {}, Limits())
    no_init = "class A:\n    pass\nclass B(A):\n    def __init__(self):\n        super().__init__(3)\nB()\n"
    with pytest.raises(ProgramError, match="^5:9: object.__init__\\(\\) takes no arguments"):
        run_program(no_init + "y = Value(1.0)", {}, Limits())
    missing = "class A:\n    def f(self):\n        return super().f()\nA().f()\n"
    with pytest.raises(ProgramError, match="super\\(\\): no class after A in A's bases has 'f'"):
        run_program(missing + "y = Value(1.0)", {}, Limits())


def test_without_zero_grad_gradients_accumulate_but_the_walk_starts_from_zero():
    program = "x = Value(3.0)\ny = x * x\ny.backward()\nprint(x.grad)\ny.backward()\nprint(x.grad)"
    result = run_program(program)
    assert result.printed == ["6.0", "12.0"]  # the program sees micrograd's accumulation
    steps = trace(result.output)
    assert steps.nodes[0].grad == 6.0  # the walk shown is the one call, from zero


def test_random_draws_are_cpythons_for_the_seed():
    program = (
        "import random\nxs = [random.uniform(-1, 1), random.random(), random.gauss(0, 1), random.choice([1, 2, 3])]\n"
        "print(xs)\nv = Value(xs[0])"
    )
    for seed in (0, 1, 12345):
        rng = random.Random(seed)
        expected = [rng.uniform(-1, 1), rng.random(), rng.gauss(0, 1), rng.choice([1, 2, 3])]
        assert run_program(program, seed=seed).printed == [repr(expected)]
    assert run_program(program, seed=1).printed == run_program(program, seed=1).printed
    reseeded = run_program("import random\nrandom.seed(42)\nprint(random.random())\nv = Value(1.0)", seed=7).printed
    assert reseeded == [repr(random.Random(42).random())]


# ---- spans, exprs, scopes and labels ----


def origins(program, **options):
    result = run_program(program, **options)
    nodes = trace(result.output).nodes
    return nodes, result.origins(nodes)


def test_every_node_knows_its_code():
    program = "a = Value(2.0)\nb = Value(-3.0)\nc = a*b + a  # the output\nc.backward()"
    nodes, found = origins(program)
    assert [(o.label, o.span, o.expr, o.scope) for o in found] == [
        ("a", (1, 5, 1, 15), "Value(2.0)", []),
        ("b", (2, 5, 2, 16), "Value(-3.0)", []),
        (None, (3, 5, 3, 8), "a*b", []),
        ("c", (3, 5, 3, 12), "a*b + a", []),
    ]


def test_columns_count_characters_not_bytes():
    nodes, found = origins("é = Value(2.0); ü = é * é\nü.backward()")
    assert found[1].span == (1, 21, 1, 26) and found[1].expr == "é * é"


def test_a_columns_characters_are_the_utf8_bytes_wholly_before_it_on_any_line():
    """Source.column reads a table made once per line (each node on a long line asks for its columns:
    encoding the whole line at each ask took 4.7 s for 24,000 calls on a line with one emoji); the
    column is still the characters that the line's first bytes hold whole."""
    import random

    from engine.python.parse import Source

    rng = random.Random(20)
    for _ in range(500):
        text = "".join(
            rng.choice(["a", " ", "\n", "é", "\u07ff", "\u0800", "中", "😀"]) for _ in range(rng.randrange(40))
        )
        source = Source(text)
        for line, written in enumerate(text.split("\n"), start=1):
            raw = written.encode()
            for byte_column in range(len(raw) + 2):
                assert source.column(line, byte_column) == len(raw[:byte_column].decode("utf-8", "ignore"))


def test_a_long_expression_is_shortened():
    program = "x = Value(1.0)\ny = x * 2 + x * 3 + x * 4 + x * 5 + x * 6 + x * 7 + x * 8\ny.backward()"
    nodes, found = origins(program)
    assert found[-1].expr == "x * 2 + x * 3 + x * 4 + x * 5 + x * 6 +…" and len(found[-1].expr) == 40
    assert found[-1].span == (2, 5, 2, 58)


def test_an_expression_over_several_lines_is_shown_on_one():
    nodes, found = origins("x = Value(2.0)\ny = (x *\n     x +\n     x)\ny.backward()")
    assert [(o.span, o.expr) for o in found[1:]] == [((2, 6, 3, 7), "x * x"), ((2, 6, 4, 7), "x * x + x")]


def test_reassigned_names_give_distinct_labels():
    nodes, found = origins("x = Value(2.0)\nx = x * 3\nx = x + 1\nx.backward()")
    assert [o.label for o in found if o.label] == ["x", "x′", "x″"]
    nodes, found = origins("ws = [Value(i, label='w') for i in range(6)]\ny = sum(ws)\ny.backward()")
    assert [o.label for o in found][:6] == ["w", "w′", "w″", "w‴", "w⁗", "w⁽⁵⁾"]


def test_shorthand_labels_become_distinct_too():
    result = run_program("x = 2; x = x * 3; x = x + 1")
    nodes = trace(result.output).nodes
    assert [o.label for o in result.origins(nodes)] == ["x", None, "x′", None, "x″"]


@pytest.mark.parametrize(
    "program, expected",
    [
        # (label, span, expr) of the last four nodes; a constant shows its value, at its operation's span
        (
            "a = 2; b = (a + 1) * 0.5",
            [
                (None, (1, 13, 1, 18), "1"),
                (None, (1, 13, 1, 18), "a + 1"),
                (None, (1, 12, 1, 25), "0.5"),
                ("b", (1, 12, 1, 25), "(a + 1) * 0.5"),
            ],
        ),
        (
            "a = 2; b = exp(a).tanh() * 1.5",
            [
                (None, (1, 12, 1, 18), "exp(a)"),
                (None, (1, 12, 1, 25), "exp(a).tanh()"),
                (None, (1, 12, 1, 31), "1.5"),
                ("b", (1, 12, 1, 31), "exp(a).tanh() * 1.5"),
            ],
        ),
        (
            "a = 2; b = a.tanh ()  *  3",
            [
                ("a", (1, 1, 1, 6), "a = 2"),
                (None, (1, 12, 1, 21), "a.tanh ()"),
                (None, (1, 12, 1, 27), "3"),
                ("b", (1, 12, 1, 27), "a.tanh () * 3"),
            ],
        ),
        (
            "a = 2\nb = (a\n\t* 3)",
            [("a", (1, 1, 1, 6), "a = 2"), (None, (2, 6, 3, 5), "3"), ("b", (2, 6, 3, 5), "a * 3")],
        ),
        (
            "a = 2\nb = (a\n* 3)",
            [("a", (1, 1, 1, 6), "a = 2"), (None, (2, 6, 3, 4), "3"), ("b", (2, 6, 3, 4), "a * 3")],
        ),
        # marks found on lines 2, 3, then 2 again (the outer *), then 5: the line is not only carried forward
        (
            "a = 2\nb = (a\n* 3) * (a\n+ 1)\nc = b + a",
            [
                (None, (3, 9, 4, 4), "1"),
                (None, (3, 9, 4, 4), "a + 1"),
                ("b", (2, 5, 4, 5), "(a * 3) * (a + 1)"),
                ("c", (5, 5, 5, 10), "b + a"),
            ],
        ),
        (
            "a = 2; b = a * 1 + a * 2 + a * 3 + a * 4 + a * 5 + a * 6",
            [
                (None, (1, 12, 1, 49), "a * 1 + a * 2 + a * 3 + a * 4 + a * 5"),
                (None, (1, 52, 1, 57), "6"),
                (None, (1, 52, 1, 57), "a * 6"),
                ("b", (1, 12, 1, 57), "a * 1 + a * 2 + a * 3 + a * 4 + a * 5 +…"),
            ],
        ),
    ],
)
def test_shorthand_nodes_know_their_code(program, expected):
    """The parentheses an operation's operands were written in are part of its span, a method's ()
    too; its text is whitespace collapsed, at most 40 characters."""
    result = run_program(program)
    nodes = trace(result.output).nodes
    assert [(o.label, o.span, o.expr) for o in result.origins(nodes)][-4:] == expected


def test_a_graph_without_program_text_is_named_by_its_operations():
    """No span and no label: each value is called by its operation on its inputs' names (issue 26)."""
    x = engine.Value(2.0)
    y = x * x + 1
    nodes = trace(y).nodes
    assert engine.ProgramRun(y).origins(nodes) == [
        (None, None, "2", []),
        (None, None, "2*2", []),
        (None, None, "1", []),
        (None, None, "2*2+1", []),
    ]


def test_mlp_nodes_carry_layer_and_neuron_scopes():
    nodes, found = origins(MLP_TRAINING)
    scopes = {tuple(o.scope) for o in found}
    assert ("for step = 19", "MLP.__call__", "Layer[1]", "Neuron[3]") in scopes
    assert ("for step = 19", "MLP.__call__", "Layer[2]", "Neuron[0]") in scopes
    assert ("MLP.__init__", "Layer.__init__", "Neuron.__init__") in scopes  # the parameters
    products = [o for n, o in zip(nodes, found) if n.op == "*"]
    # net(row), where the program called it
    assert products[0].expr == "weight * value" and products[0].span == (15, 16, 15, 24)
    error = found[-1]
    assert error.label == "error" and error.scope == ["for step = 19"] and error.span[0] == 16


# A program's own Neuron, Layer and MLP with micrograd's behaviour (the same draws, the same
# operations in the same order), written as a learner would: the scopes come from the
# interpreter's general naming of walked items, with no help from the nn module.
OWN_NN = """
import random

class Neuron:
    def __init__(self, inputs, nonlin=True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(inputs)]
        self.b = Value(0)
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return self.w + [self.b]

class Layer:
    def __init__(self, inputs, outputs, **kwargs):
        self.neurons = [Neuron(inputs, **kwargs) for _ in range(outputs)]

    def __call__(self, x):
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]

class MLP:
    def __init__(self, inputs, widths):
        sizes = [inputs] + widths
        self.layers = [Layer(sizes[i], sizes[i + 1], nonlin=i != len(widths) - 1) for i in range(len(widths))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def zero_grad(self):
        for p in self.parameters():
            p.grad = 0

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]
"""


def test_a_programs_own_mlp_gets_the_scopes_of_micrograds_nn():
    own = MLP_TRAINING.replace("from micrograd.nn import MLP\n", OWN_NN)
    assert own != MLP_TRAINING
    theirs_nodes, theirs = origins(MLP_TRAINING)
    own_nodes, ours = origins(own)
    assert [(n.op, n.data) for n in own_nodes] == [(n.op, n.data) for n in theirs_nodes]  # the same graph
    assert [o.scope for o in ours] == [o.scope for o in theirs]  # node for node
    assert ["for step = 19", "MLP.__call__", "Layer[1]", "Neuron[3]"] in [o.scope for o in ours]


WALKED = """
class Scale:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k

    def __call__(self, x):
        return x * self.k

def double(x):
    return x * 2

x = Value(1.0)
scales = [Scale(2.0), Scale(3.0)]
for i, s in enumerate(scales):
    x = s.apply(x) + i
for f in [double]:
    x = f(x)
ys = [s(x) for s in scales]
for s in scales:
    for t in scales:
        x = t(x) * 1.5
for s.k in [4.0]:
    x = s(x)
y = sum(ys) + x
y.backward()
"""


def test_a_call_of_a_walked_instance_is_named_by_its_class_and_index():
    """A call of a program's instance, or of its method, that a loop or comprehension walks shows
    as Class[i] in place of the loop's pass; other items and other nodes keep their scopes."""
    nodes, found = origins(WALKED)
    made = [(o.expr, o.scope) for o in found if o.expr]
    assert ("x * self.k", ["Scale[0]"]) in made and ("x * self.k", ["Scale[1]"]) in made  # s.apply(x), s(x)
    assert ("s.apply(x) + i", ["for i, s [1]"]) in made  # made in the pass, outside the call
    assert ("x * 2", ["for f [0]", "double"]) in made  # a function keeps its name
    # a loop that calls nothing it walks keeps its pass scope; the inner one names its items
    assert ("x * self.k", ["for s [1]", "Scale[0]"]) in made
    assert ("t(x) * 1.5", ["for s [1]", "for t [1]"]) in made
    named = [scope for _, scope in made if "Scale.__call__" in scope or "Scale.apply" in scope]
    assert named == [["for s.k [0]", "Scale.__call__"]] * 2  # `for s.k in` binds no name: 4.0 and x * self.k


def test_walked_items_are_named_within_their_own_call_however_deep():
    """Each call's loops name their own items: a tree's children are numbered under their parent,
    the recursion in between does not disturb the parent's count."""
    program = """
class Tree:
    def __init__(self, weight, children):
        self.weight = Value(weight)
        self.children = children

    def __call__(self, x):
        total = x * self.weight
        for child in self.children:
            total = total + child(x)
        return total

tree = Tree(1.0, [Tree(2.0, []), Tree(3.0, [Tree(4.0, []), Tree(5.0, [])])])
y = tree(Value(0.5))
y.backward()
"""
    nodes, found = origins(program)
    products = {n.data: o.scope for n, o in zip(nodes, found) if n.op == "*"}
    assert products == {
        0.5: ["Tree.__call__"],
        1.0: ["Tree.__call__", "Tree[0]"],
        1.5: ["Tree.__call__", "Tree[1]"],
        2.0: ["Tree.__call__", "Tree[1]", "Tree[0]"],
        2.5: ["Tree.__call__", "Tree[1]", "Tree[1]"],
    }
    sums = sorted(o.scope for n, o in zip(nodes, found) if n.op == "+")
    assert sums == [
        ["Tree.__call__", "Tree[1]", "for child [0]"],
        ["Tree.__call__", "Tree[1]", "for child [1]"],
        ["Tree.__call__", "for child [0]"],
        ["Tree.__call__", "for child [1]"],
    ]


def test_user_functions_and_loops_make_scopes():
    program = "def f(a, b=2):\n    return a * b\nx = Value(1.0)\nfor i in range(3):\n    x = f(x) + i\nx.backward()"
    nodes, found = origins(program)
    assert ["for i = 2", "f"] in [o.scope for o in found]
    assert found[-1].scope == ["for i = 2"]


def _scope_runs(program):
    """The scopes of consecutive nodes, a run each, as the page groups them."""
    runs = []
    for o in origins(program)[1]:
        if o.scope and (not runs or runs[-1] != o.scope):
            runs.append(o.scope)
    return runs


def test_calls_of_one_function_from_different_places_are_told_apart():
    """Back-to-back calls from different places in the code (a parameter table's nine tables, q, k
    and v) would otherwise share one scope name and read as one scope. A place that gives the result
    a name (a variable, an attribute, a dict's or subscript's string key, each of a tuple's) shows it
    with the function's; the others are numbered, counted afresh in each call or loop pass. Calls
    from one place (a comprehension's) share its name."""
    program = """
def table(rows, cols):
    return [[Value(0.1 * (r + c)) for c in range(cols)] for r in range(rows)]

def linear(x, matrix):
    return [sum(a * b for a, b in zip(row, x)) for row in matrix]

w = {"tokens": table(2, 3), "positions": table(2, 3), "out": table(1, 3)}
layers = [{"query": table(3, 3), "key": table(3, 3)} for _ in range(2)]
x = w["tokens"][0]
y = Value(0.0)
for layer in layers:
    q, k = linear(x, layer["query"]), linear(x, layer["key"])
    y = y + sum(q) * sum(k) + sum(linear(x, layer["key"])) + sum(linear(x, layer["query"]))
scores = [linear(x, m) for m in [w["positions"], w["out"]]]
y = y + sum(s for row in scores for s in row)
y.backward()
"""
    runs = _scope_runs(program)
    tables = [scope for scope in runs if scope[-1].endswith("table")]
    names = ["tokens = table", "positions = table", "out = table"] + ["query = table", "key = table"] * 2
    assert tables == [[name] for name in names]  # one run per call: no two consecutive share a name
    for layer in (0, 1):
        passes = [run[1] for run in runs if run[0] == f"for layer [{layer}]" and len(run) > 1]
        assert passes == ["q = linear", "k = linear", "linear", "linear (2)"]  # counted afresh in each pass
    assert runs[-1] == ["linear"] and ["linear (2)"] not in runs  # one place, called twice: one scope


# A function whose every call makes Values the output sums: each call's scope is a run of nodes.
MAKE = """
made = []
def make(n):
    values = [Value(1.0) for _ in range(n)]
    made.extend(values)
    return values
"""


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        ("self.w = make(2)\nself.b = make(1)", ["w = make", "b = make"]),
        ("self.p = {}\nself.p['w'] = make(2)\nself.p['b'] = make(1)", ["w = make", "b = make"]),
        (
            "self.p = {}\nfor i in range(2):\n    self.p[f'w{i}'] = make(2)\n    self.p[f'b{i}'] = make(1)",
            [
                "for i = 0 › w{i} = make",
                "for i = 0 › b{i} = make",
                "for i = 1 › w{i} = make",
                "for i = 1 › b{i} = make",
            ],
        ),
        ("self.w, self.b = make(2), make(1)", ["w = make", "b = make"]),
        ("self.p = {}\nself.p[f'{1 + 1}w'] = make(2)\nself.p[f'b'] = make(1)", ["{…}w = make", "b = make"]),
        ("self.w = make(2)\nself.b = [make(1)][0]", ["w = make", "make"]),
        ("self.w = make(2)", ["make"]),  # one place: the function's name alone
    ],
)
def test_the_name_a_call_shows_is_the_one_its_result_is_given(code, shown):
    body = "\n".join("        " + line for line in code.split("\n"))
    program = (
        MAKE
        + f"""
class W:
    def __init__(self):
{body}
W()
y = sum(made)
"""
    )
    assert [" › ".join(run[1:]) for run in _scope_runs(program) if run[0] == "W.__init__"] == shown


@pytest.mark.parametrize(
    ("calls", "shown"),
    [
        ('w["a\\nb"] = make(1)\nw["c\\td\\x00"] = make(1)', ["a b = make", "c d = make"]),  # one line, printable
        ('w[""] = make(1)\nw[" "] = make(1)', ["make", "make (2)"]),  # a name that says nothing: numbered
        ('w["for i"] = make(1)\nw["x"] = make(1)', ["make", "x = make"]),  # would read as a loop pass
        ("q = c.h()\nk = c.h()", ["q = h", "k = h"]),  # a lambda the class holds
        ("q = c.lin()\nk = c.lin()", ["q = B.lin", "k = B.lin"]),  # a method of a base class
    ],
)
def test_a_given_name_is_shown_only_as_a_name(calls, shown):
    program = (
        MAKE
        + f"""
class B:
    def lin(self):
        return make(1)
class C(B):
    h = lambda self: make(1)
c = C()
w = {{}}
{calls}
y = sum(made)
"""
    )
    runs = _scope_runs(program)
    assert [run[0] for run in runs] == shown


def test_a_lambda_shows_the_name_it_is_called_by_and_a_long_given_name_is_shortened():
    name = "a_name_longer_than_thirty_characters_is"
    runs = _scope_runs(f"matrix = lambda: [Value(1.0)]\n{name} = matrix()\nb = matrix()\ny = {name}[0] + b[0]")
    assert runs == [[name[:29] + "… = matrix"], ["b = matrix"]]


# ---- the accepted Python ----

ACCEPTED = """
from micrograd.engine import Value
from micrograd.nn import Neuron, Layer, MLP
import math
import random

class Counter:
    def __init__(self, start=0):
        self.count = start
    def __call__(self, step=1):
        self.count += step
        return self.count
    def twice(self):
        return self.count * 2

counter = Counter(start=1)
counter(); counter(step=2)
assert counter.twice() == 8
pairs = [(i, j) for i in range(3) for j in range(i) if j != 1]
assert pairs == [(1, 0), (2, 0)]
table = {'a': 1, 'b': 2}
table['c'] = 3
assert sum(v for v in table.values()) == 6 and list(table) == ['a', 'b', 'c']
squares = list(map_ for map_ in range(4))[1:3]
assert squares == [1, 2] and (1, 2, 3)[::-1] == (3, 2, 1)
a, (b, c) = 1, (2, 3)
assert (a, b, c) == (1, 2, 3)
total = 0
i = 0
while True:
    i += 1
    if i % 2 == 0:
        continue
    elif i > 7:
        break
    else:
        total += i
assert total == 1 + 3 + 5 + 7
def spread(first, *rest, scale=1, **options):
    return (first + sum(rest)) * scale + len(options)
assert spread(1, 2, 3) == 6 and spread(*[1, 2], **{'scale': 2, 'extra': 0}) == 7
assert ', '.join([str(1), str(2.5), str(Counter)]) == '1, 2.5, <class Counter>'
nested = sum(sum(w * x for w, x in zip(row, [1, 2])) for row in [[1, 1], [2, 0]])
assert nested == 5
f = lambda t, s=1: t * s
assert f(3) == 3 and f(3, s=2) == 6
assert min(3, 1, 2) == 1 and max([1.5, -2]) == 1.5 and abs(-2) == 2 and int(2.9) == 2 and float(1) == 1.0
assert math.exp(0) == 1 and math.log(math.e) == 1 and math.sqrt(4) == 2 and math.tanh(0) == 0 and math.pi > 3
assert isinstance(counter, Counter) and isinstance(1, int) and not isinstance(1.0, int)
assert len([1, 2]) == 2 and not (1 > 2 or 2 < 1) and (1 if 2 > 1 else 0) == 1
xs = []
for k, (u, v) in enumerate(zip([1, 2], [3, 4]), start=1):
    xs.append(k * u * v)
assert xs == [3, 16]
x = Value(0.5, label='x')
x.label = 'input'
y = (-x + 2 + x * 3 / x ** 2 - (2 ** x.data)).tanh().exp().log().relu()
z = 1 - y
w = 2 / z
z2 = w * 3 - 1
z2.backward()
assert x.grad != 0 and isinstance(z2, Value)
n = Neuron(2)
l = Layer(2, 3)
assert len(n.parameters()) == 3 and len(l.parameters()) == 9
p = x
p.data += 1
p.data -= 0.5
p.data *= 2
p.data /= 2
assert p.data == 1.0
"""


def test_every_accepted_form_runs():
    result = run_program(ACCEPTED)
    assert result.output.data == result.runs[-1][1]
    assert len(result.runs) == 1


# ---- which language a program is ----


@pytest.mark.parametrize(
    "program, python",
    [
        ("a = 2; b = 3; c = a * b; L = c + a", False),
        ("a = 2\nb = exp(a)", False),
        ("x = Value(2.0)", True),
        ("import math\nx = 1", True),
        ("for i in range(3):\n  pass", True),
        ("n = MLP(2, [1])", True),
    ],
)
def test_the_language_is_told_apart(program, python):
    assert is_python(program) == python


# ---- errors the issue quotes ----


@pytest.mark.parametrize(
    "program, message, line, column",
    [
        ("x = Value(2.0)\ny = (x) ^ 2", "`^` is bitwise xor in Python; for powers write `**`", 2, 9),
        ("x = Value(2.0)\ny = x + 'a'", "`+` does not work on Value and string", 2, 5),
        (
            "import sys\nx = Value(1.0)",
            "`import sys` is not available: valuegraph offers math, random and os.path.exists (files come from Files); "
            "remove the import",
            1,
            1,
        ),
        ("x = Value(2.0)\nx.__class__", "attributes like `.__class__` are not available", 2, 1),
        ("x = Value(2.0)\ngetattr(x, 'data')", "unknown name 'getattr'", 2, 1),
        ("x = Value(2.0)\ny = x ** x", "the exponent must be a plain number, not a Value", 2, 5),
        ("x = Value(2.0)\nif x > 1:\n  pass", "for a Value compare its .data", 2, 4),
        ("x = Value(2.0)\ntry:\n  pass\nexcept:\n  pass", "`try` is not available", 2, 1),
        ("x = Value(2.0)\ny = [1, 2][5]", "index 5 is out of range for a list of 2", 2, 5),
        ("x = Value(2.0)\ny = x.foo", "a Value has no attribute 'foo'", 2, 5),
        ("x = Value(2.0)\nd = {'a': x}\ny = d['b']", "the dict has no key 'b'", 3, 5),
        ("class C:\n  n = 1\nx = Value(C.m)", "class C has no attribute 'm'", 3, 11),
        ("x = Value(2.0)\ny = x // 2", "`//` is not a Value operation; write `/`", 2, 5),
        ("x = Value(2.0)\ny = x % 2", "`%` is not a Value operation", 2, 5),
        ("x = Value(2.0\n", "Python syntax error", 1, 10),
        ("x = Value(1.0)\nz = {[1], 2}", "a set cannot hold a list", 2, 5),
        ('x = Value(1.0)\ny = "a" - 1', "`-` does not work on string and int; write str(x) to join a number", 2, 5),
        ("x = Value(1.0)\ny = [] / 2", "`/` does not work on list and int", 2, 5),
        ('x = Value(1.0)\ny = -"a"', "this operation needs numbers or Values, not a string", 2, 5),
        ("x = Value(1.0)\ny = [1] < 2", "`<` compares plain numbers, not list and int", 2, 5),
        ('x = Value(1.0)\ny = 1 in "abc"', "`in` on a string looks for a string, not int", 2, 5),
        ("x = Value(1.0)\ny = 1 in 5", "`in` looks in a list, tuple, dict, set, range or string, not in int", 2, 5),
        ("x = Value(1.0)\ny = len(5)", "len() takes a list, tuple, dict, set, range or string, not int", 2, 5),
        ("x = Value(1.0)\ny = max([])", "max() of an empty list", 2, 5),
        ("x = Value(1.0)\nprint(1, sep=2)", "print()'s sep and end must be strings", 2, 1),
        (
            'x = Value(1.0)\ny = round("a")',
            "round() takes a plain number and a whole number of digits, not string",
            2,
            5,
        ),
        ("x = Value(1.0)\ny = hasattr(x, 1)", "hasattr()'s second argument must be a string, not int", 2, 5),
        ('x = Value(1.0)\ny = ",".join([1])', "join() takes strings; write str(x) for other values", 2, 5),
        ('x = Value(1.0)\ny = "a,b".split("")', "split() cannot split on an empty separator", 2, 5),
        ('x = Value(1.0)\ny = "abc".index("z")', "index(): 'z' is not in the string", 2, 5),
        ("x = Value(1.0)\ny = [].pop()", "pop() from an empty list", 2, 5),
        ("x = Value(1.0)\ny = [1].pop(3)", "pop() index 3 is out of range for a list of 1", 2, 5),
        ("x = Value(1.0)\ny = [1].index(2)", "index(): the item is not in the list", 2, 5),
        ("x = Value(1.0)\nx.label = 3", ".label takes a string, not int", 2, 1),
        ("x = Value(1.0)\ny = Value(1.0, label=3)", "label= takes a string, not int", 2, 5),
        ("x = Value(1.0)\ny = range(1.5)", "range() needs whole numbers (int), not float", 2, 5),
        ("x = Value(1.0)\nx.data += x", ".data takes a plain number, not Value; write .data of the other Value", 2, 1),
        ("import math\nmath.pi += 1", "cannot set attributes on module", 2, 1),
    ],
)
def test_errors_say_what_and_where(program, message, line, column):
    with pytest.raises(ProgramError) as caught:
        run_program(program)
    assert message in caught.value.message
    assert (caught.value.line, caught.value.column) == (line, column)


def test_shorthand_nodes_know_their_code_too():
    result = run_program("x = 2\ny = (x + 1) * exp(x) + x.tanh()")
    nodes = trace(result.output).nodes
    found = [(o.span, o.expr) for o in result.origins(nodes)]
    assert found == [
        ((1, 1, 1, 6), "x = 2"),
        ((2, 6, 2, 11), "1"),  # the constant 1: made by the same code, shown as its value
        ((2, 6, 2, 11), "x + 1"),
        ((2, 15, 2, 21), "exp(x)"),
        ((2, 5, 2, 21), "(x + 1) * exp(x)"),
        ((2, 24, 2, 32), "x.tanh()"),
        ((2, 5, 2, 32), "(x + 1) * exp(x) + x.tanh()"),
    ]
    assert all(o.scope == [] for o in result.origins(nodes))


def test_names_label_outside_functions_only():
    program = (
        "def neuron(x, w):\n    act = x * w\n    return act.tanh()\n"
        "x = Value(0.5)\nout = neuron(x, 2.0)\nout.backward()"
    )
    nodes, found = origins(program)
    assert [o.label for o in found] == ["x", None, None, "out"]
    assert found[2].expr == "x * w" and found[2].scope == ["neuron"]


def test_every_pass_of_a_loop_is_named_past_the_first_ones():
    # loop() makes the first passes' scopes once: the later ones, and numbers that are not small whole
    # ones, must read the same as those made at the pass
    program = (
        "x = Value(1.0)\nfor i in [31, 32, 40, -1, 2.5, True]:\n    x = x * 1.0\n"
        "for item in [Value(0.0)] * 34:\n    x = x + item\nx.backward()"
    )
    nodes, found = origins(program)
    products = [o.scope for n, o in zip(nodes, found) if n.op == "*"]
    assert products == [[f"for i = {i}"] for i in (31, 32, 40, -1, 2.5)] + [["for i [5]"]]
    sums = [o.scope for n, o in zip(nodes, found) if n.op == "+"]
    assert sums == [[f"for item [{k}]"] for k in range(34)]


def test_plain_numbers_follow_ieee_where_cpython_would_raise():
    # CPython raises ZeroDivisionError and OverflowError here; a program's numbers follow IEEE as the engine's do.
    program = "x = Value(1.0)\nprint(3 // 0, -3.0 // 0, 0 // 0, 5 % 0, 5.5 % 0)\nprint(10 ** 400, float(2 ** 70))"
    assert run_program(program).python.printed == ["inf -inf nan nan nan", "inf 1.1805916207174113e+21"]
    big = "1" + "0" * 400  # a literal past the largest float, in arithmetic: Infinity with its sign
    assert run_program(f"x = Value(1.0)\nprint({big} + 1, -{big} - 1)").python.printed == ["inf -inf"]
    # the literal itself is a float past 64 bits, as arithmetic makes a number: Value(it) is Infinity, not an error
    hexadecimal = "0x" + "f" * 1000
    program = (
        f"x = Value({big})\nL = x * 2\nL.backward()\nimport math\nprint(x.data, {hexadecimal} + 1, math.log({big}))"
    )
    assert run_program(program).python.printed == ["inf inf inf"]
    stored = (
        f"class P:\n    def __init__(self):\n        self.x = {big}\nx = Value(-{big})\nprint(x.data, P().x == {big})"
    )
    assert run_program(stored).python.printed == ["-inf True"]  # negated, and kept by __init__ in one step
    with pytest.raises(ProgramError) as refused:  # CPython's parser refuses it, with advice that names sys
        run_program("x = Value(1.0)\ny = " + "9" * 4301)
    assert (refused.value.line, refused.value.column) == (2, 5)
    assert refused.value.message == (
        "Python syntax error: a whole number written with more than 4,300 digits; write it as a power (10 ** 4300) "
        "or a float"
    )
