"""The gradient check: where does a learner's own backward go wrong, and why?

Input: a graph as the learner's own Value class left it (CheckNode per node, children before
parents, ids of the learner's choosing) and the output's id; optionally the learner's recorded
walk (the node ids in the order their per-node backward steps ran). Output: each node's
expected_grad, the course's iterative backward from the output on the same graph (same data,
same local gradients, += into each input), and the gradient_check record of the wire format.

The likely cause is found by recomputing, not guessing: the learner's grads are compared with
what each known mistake gives on this very graph (`=` for `+=`, no visited set, no topological
order, no seed of 1, grads not reset between backward() calls), and the stored data and local
gradients with each op's rule. Numbers follow IEEE 754 throughout (engine.ieee): nothing here
raises on NaN, an infinity or a zero divisor.
"""

import math
from collections import deque
from functools import cached_property
from typing import NamedTuple

from . import ieee
from .trace import format_number

TOLERANCE = 1e-9  # relative: a grad further than this from the expected one is wrong
MAX_RESETS = 8  # backward() calls without a reset tried when looking for the cause
RESET = "set every grad back to 0 before each backward() call, unless you mean to add them up"
DEFAULT_MAX_STEPS = 200_000  # steps a simulated broken walk may take (it can unfold a graph into a tree)


class CheckNode(NamedTuple):
    id: int
    label: str | None
    op: str | None  # None: not known (the local gradients are then not checked)
    data: float
    grad: float | None  # None: the learner's backward never set it
    children: tuple  # ids, aligned with local_grads; a * a has the same id twice
    local_grads: tuple
    exponent: float | None = None  # the n of a ** n, when known


class Check(NamedTuple):
    expected_grad: dict  # id -> the course's gradient (0 for nodes the output does not reach)
    gradient_check: dict  # status, wrong, first, message, local


# Each op's rule: (arity, forward value, local gradients); xs are the inputs' data, n the exponent.
def _relu(x):
    return 0.0 if x <= 0 else x  # relu(NaN) stays NaN, as C#'s Math.Max(0, NaN)


RULES = {
    "+": (2, lambda xs, n: xs[0] + xs[1], lambda xs, out, n: (1.0, 1.0)),
    "*": (2, lambda xs, n: xs[0] * xs[1], lambda xs, out, n: (xs[1], xs[0])),
    "-": (2, lambda xs, n: xs[0] - xs[1], lambda xs, out, n: (1.0, -1.0)),
    "/": (
        2,
        lambda xs, n: ieee.divide(xs[0], xs[1]),
        lambda xs, out, n: (ieee.divide(1.0, xs[1]), -ieee.divide(xs[0], xs[1] * xs[1])),
    ),
    "neg": (1, lambda xs, n: -xs[0], lambda xs, out, n: (-1.0,)),
    "**": (1, lambda xs, n: ieee.power(xs[0], n), lambda xs, out, n: (n * ieee.power(xs[0], n - 1),)),
    "exp": (1, lambda xs, n: ieee.exp(xs[0]), lambda xs, out, n: (ieee.exp(xs[0]),)),
    "log": (1, lambda xs, n: ieee.log(xs[0]), lambda xs, out, n: (ieee.divide(1.0, xs[0]),)),
    "relu": (1, lambda xs, n: _relu(xs[0]), lambda xs, out, n: (1.0 if xs[0] > 0 else 0.0,)),
    "tanh": (1, lambda xs, n: math.tanh(xs[0]), lambda xs, out, n: (1.0 - math.tanh(xs[0]) ** 2,)),
}
RULE_TEXT = {
    "+": "1 for each input",
    "*": "the other input's data",
    "-": "1 and -1",
    "/": "1/b and -a/b²",
    "neg": "-1",
    "**": "n·xⁿ⁻¹",
    "exp": "eˣ, the node's own data",
    "log": "1/x",
    "relu": "1 if the input is positive, else 0",
    "tanh": "1 - tanh(x)², from the node's own data",
}
SYMBOL = {"+": "+", "*": "×", "-": "-", "/": "÷"}
ALIASES = {
    "add": "+",
    "mul": "*",
    "sub": "-",
    "div": "/",
    "truediv": "/",
    "pow": "**",
    "negate": "neg",
}
# What the learner calls each op's method, per language; None: name the op itself.
METHODS = {
    "python": {
        "+": "__add__",
        "*": "__mul__",
        "-": "__sub__",
        "/": "__truediv__",
        "neg": "__neg__",
        "**": "__pow__",
    },
    "csharp": {
        "+": "operator +",
        "*": "operator *",
        "-": "operator -",
        "/": "operator /",
        "neg": "operator -",
        "**": "Pow",
        "exp": "Exp",
        "log": "Log",
        "relu": "Relu",
        "tanh": "Tanh",
    },
    "typescript": {"+": "add", "*": "mul", "-": "sub", "/": "div", "neg": "neg", "**": "pow"},
    "java": {"+": "add", "*": "mul", "-": "sub", "/": "div", "neg": "neg", "**": "pow"},
}
METHODS["javascript"] = METHODS["typescript"]
# How the learner writes "the first input's data" and "the second input's data".
INPUT_DATA = {
    "python": ("self.data", "other.data"),
    "csharp": ("a.Data", "b.Data"),
    "typescript": ("this.data", "other.data"),
    "javascript": ("this.data", "other.data"),
    "java": ("this.data", "other.data"),
}


def canonical_op(op) -> tuple[str | None, float | None]:
    """(op, exponent from the name) in RULES' terms, or (None, None) when not one of them:
    'ReLU' and 'Relu' are relu, 'add' is +, micrograd's '**2' is ** with exponent 2."""
    if not isinstance(op, str):
        return None, None
    if op.startswith("**") and len(op) > 2:
        try:
            return "**", float(op[2:])
        except ValueError:
            return None, None
    name = ALIASES.get(op.lower(), op.lower()) if op not in RULES else op
    return (name, None) if name in RULES else (None, None)


def check(
    nodes,
    output,
    walk=None,
    language=None,
    max_steps=DEFAULT_MAX_STEPS,
    order=None,
    expected=None,
    before=None,
    assigns=None,
    variant="correct",
) -> Check:
    """nodes: CheckNodes, children before parents; output: the output's id; walk: the ids in the
    order the learner's per-node backward steps ran, or None; language: 'python', 'csharp',
    'typescript', 'javascript', 'java' or None, for naming the learner's methods in the message.
    order and expected, when the caller has walked the graph the course's way already (a trace
    of the correct walk): the positions of the nodes the output reaches, children first, and
    every node's gradient from that walk; they are not computed again. before: {id: the grad the node
    held when the learner's backward() began adding into it}, where not 0 (observed as valuegraph ran the
    program, or posted as grad_before), so grads an earlier backward() left are told from a wrong step.
    assigns: False when the learner's walk is known to have added into every input's grad (+=), never set
    one with =; None when not known. variant: the walk whose grads are shown where the learner's has none
    (engine.trace's variants)."""
    return _Checker(nodes, output, walk, language, max_steps, order, expected, before, assigns, variant).run()


def confirmed(values, children, grads, expected, output) -> Check | None:
    """check()'s answer where it is plainly "ok", found in one pass: every grad exactly the course's,
    every node with an op one of RULES' with its inputs, and its data and local gradients exactly what
    the rule gives (as check() reads the op). values: the graph's Values, children before parents, a
    node's id its index; children: per node, its inputs' ids; grads: {Value: the learner's grad};
    expected: per node, the course's gradient; output: the output's id. None where anything differs:
    then check() decides."""
    for i, value in enumerate(values):
        if grads.get(value) != expected[i]:  # None, NaN and any difference: the full check
            return None
        op = value.op
        if op is None:  # a leaf, or an op not known: no rule to hold it to (as in check())
            continue
        inputs = children[i]
        if len(inputs) == 2 and (op == "+" or op == "*"):  # most nodes: their rule written out
            a, b = values[inputs[0]].data, values[inputs[1]].data
            if op == "+":
                if value.data != a + b or tuple(value._local_grads) != (1.0, 1.0):
                    return None
            elif value.data != a * b or tuple(value._local_grads) != (b, a):
                return None
            continue
        op, n = rule_of(op, value.exponent, len(inputs))
        if op is None:
            return None
        arity, forward, gradients = RULES[op]
        if len(inputs) != arity or len(value._local_grads) != arity or (op == "**" and n is None):
            return None  # not plainly its rule's node
        xs = [values[c].data for c in inputs]
        if value.data != forward(xs, n) or tuple(value._local_grads) != tuple(gradients(xs, value.data, n)):
            return None
    name = values[output].label or f"node {output}"
    message = f"Your gradients match the course's backward from {name} on every node."
    record = {"status": "ok", "wrong": [], "first": None, "message": message, "local": []}
    return Check(dict(enumerate(expected)), record)


def rule_of(op, exponent, inputs: int) -> tuple[str | None, float | None]:
    """(op, exponent) of the rule in RULES a node is held to, from its op, its exponent and how many
    inputs it has: canonical_op's, with - of one input as neg and the node's own exponent for **."""
    op, n = canonical_op(op)
    if op == "-" and inputs == 1:
        op = "neg"
    if op == "**" and n is None:
        n = exponent
    return op, n


class _Checker:
    def __init__(
        self,
        nodes,
        output,
        walk,
        language,
        max_steps,
        order=None,
        expected=None,
        before=None,
        assigns=None,
        variant="correct",
    ):
        self.nodes = list(nodes)
        self.position = {node.id: i for i, node in enumerate(self.nodes)}
        if len(self.position) != len(self.nodes):
            raise ValueError("node ids must be distinct")
        if all(node.id == i for i, node in enumerate(self.nodes)):  # ids are positions: as the answer's are
            self.children = [node.children for node in self.nodes]
        else:
            position = self.position.__getitem__
            self.children = [tuple(map(position, node.children)) for node in self.nodes]
        self.local = [node.local_grads for node in self.nodes]
        self.data = [node.data for node in self.nodes]
        self.output = self.position[output]
        self.walk = None if walk is None else [self.position[i] for i in walk if i in self.position]
        self.language = language
        self.max_steps = max_steps
        # children before parents, each once
        self.order = _course_order(self.children, self.output) if order is None else list(order)
        self.given_expected = expected
        self.assigns = assigns
        self.variant = variant
        reached = set(self.order)
        self.before = {
            at: grad for at, grad in ((self.position.get(i), g) for i, g in (before or {}).items()) if at in reached
        }
        self.start = None  # the grads the learner's walk began from, when not all 0 (self.before)
        self.reference = None  # the course's walk from those grads
        self.pointed = None  # the first wrong node the cause names, when not the first that differs from expected

    @cached_property
    def forward_rank(self) -> dict:
        return {node: rank for rank, node in enumerate(self.order)}

    @cached_property
    def parents(self) -> list:
        """(parent, slot) per use of each node, among the reached nodes (needed only to explain)."""
        parents = [[] for _ in self.nodes]
        for parent in self.order:
            for slot, child in enumerate(self.children[parent]):
                parents[child].append((parent, slot))
        return parents

    # The course's backward, and the tolerance of a comparison with it.
    def run(self) -> Check:
        expected = self.given_expected
        if expected is None:
            expected = _propagate(self.order, self.children, self.local, self.output, len(self.nodes))
        self.expected = expected
        expected_grad = {node.id: expected[i] for i, node in enumerate(self.nodes)}
        local, data_problems = self._rules()
        learner = [node.grad for node in self.nodes]
        if all(grad is None for grad in learner):
            gives = (
                "every grad is what the course's walk gives"
                if self.variant == "correct"
                else f"every grad shown is what the walk of the variant '{self.variant}' gives (deliberately wrong; "
                "'correct' is the course's walk)"
            )
            message = f"No gradients to check: backward() has not run, so {gives}."
            if local or data_problems:
                message = self._rule_message(local, data_problems)
            return Check(expected_grad, self._record("no_backward", [], None, message, local))
        self.learner = learner
        wrong = [
            i
            for i in reversed(self.order)
            if learner[i] != expected[i]
            and learner[i] is not None
            and not _close(learner[i], expected[i], self._scale(i))
        ]
        passed_on = ""  # said when the learner's walk passes a grad of 0 on, as chapter 3's does
        if wrong:
            unskipped = self._unskipped_walk()
            if unskipped is not None and self._all_match(unskipped):
                passed_on = " " + self._passed_zero_on(unskipped)
                self.expected = expected = unskipped  # the walk the learner's grads are: theirs is right
                expected_grad = {node.id: expected[i] for i, node in enumerate(self.nodes)}
                wrong = []
        unknown = self._unknown_below() if any(expected[i] != expected[i] for i in wrong) else {}
        wrong = [i for i in wrong if not (i in unknown and expected[i] != expected[i])]
        if not wrong:
            if local or data_problems:
                first = self._first_rule_problem(local, data_problems)
                return Check(
                    expected_grad, self._record("wrong", [], first, self._rule_message(local, data_problems), local)
                )
            name = self._name(self.output)
            message = f"Your gradients match the course's backward from {name} on every node.{passed_on}"
            if unknown:
                message = f"Your gradients match the course's backward from {name} on every node it can follow. " + (
                    self._unknown_message(unknown)
                )
            return Check(expected_grad, self._record("ok", [], None, message, local))
        message = self._cause(wrong)
        if local or data_problems:
            message = self._rule_message(local, data_problems) + " " + message
        if unknown:
            message += " " + self._unknown_message(unknown)
        first = self.pointed if self.pointed in wrong else wrong[0]
        return Check(expected_grad, self._record("wrong", sorted(wrong), first, message, local))

    def _unskipped_walk(self):
        """The course's walk without chapter 2's skip of a node whose grad is 0, as chapter 3's and micrograd's
        backward walk; None where the skip changes nothing: a grad of 0 passed on adds 0, unless a local
        gradient is infinite or NaN (0 × Infinity is NaN)."""
        expected, local = self.expected, self.local
        if not any(expected[i] == 0 and not all(map(math.isfinite, local[i])) for i in self.order):
            return None
        return _propagate(self.order, self.children, local, self.output, len(self.nodes), skip_zero=False)

    def _passed_zero_on(self, unskipped) -> str:
        """What the learner's walk, which passes a grad of 0 on, does that chapter 2's does not: the first node,
        walking back, whose grad the two give differently, and the 0 × Infinity (or × NaN) that made it."""
        expected, children, local = self.expected, self.children, self.local
        i = next((i for i in reversed(self.order) if not _close(unskipped[i], expected[i], 0.0)), None)
        if i is None:  # the two agree within the tolerance: nothing to say
            return ""
        factor = next(
            (
                grad
                for parent in self.order
                if expected[parent] == 0
                for child, grad in zip(children[parent], local[parent])
                if child == i and not math.isfinite(grad)
            ),
            math.inf,
        )
        return (
            f"Your walk passes on a grad of 0, as chapter 3's and micrograd's do, so {self._name(i)}'s grad is "
            f"{format_number(unskipped[i])} (0 × {format_number(factor)} is NaN); chapter 2's walk skips a node whose "
            f"grad is 0 and gives {format_number(expected[i])}."
        )

    def _record(self, status, wrong, first, message, local):
        ids = [node.id for node in self.nodes]
        return {
            "status": status,
            "wrong": [ids[i] for i in wrong],
            "first": None if first is None else ids[first],
            "message": message,
            "local": [
                {"node": ids[i], "input": slot, "stored": stored, "expected": rule} for i, slot, stored, rule in local
            ],
        }

    def _matches(self, grads, reference, i) -> bool:
        """grads[i] is reference[i] within TOLERANCE of the larger of the two and of the terms
        summed into it (two orders of the same sum may differ in the last bits)."""
        a, b = grads[i], reference[i]
        if a is None or a == b:
            return True
        return _close(a, b, self._scale(i))

    def _scale(self, i) -> float:
        """The largest term the course's walk adds into node i: two orders of the same sum differ
        by a few rounding errors of their terms, not of the sum (which may cancel to about 0)."""
        return self._scales[i]

    @cached_property
    def _scales(self) -> list:
        """_scale of every node, in one pass over the edges the output reaches (NaN terms left out)."""
        scales = [0.0] * len(self.nodes)
        expected, local, children = self.expected, self.local, self.children
        for parent in self.order:
            grad = expected[parent]
            for child, local_grad in zip(children[parent], local[parent]):
                term = abs(local_grad * grad)
                if term > scales[child]:  # False for NaN
                    scales[child] = term
        return scales

    def _all_match(self, simulated) -> bool:
        return simulated is not None and all(self._matches(self.learner, simulated, i) for i in self.order)

    # Data and local gradients against each op's rule.
    def _rules(self):
        local, data_problems = [], []
        data, children, local_grads = self.data, self.children, self.local
        for i in reversed(self.order):
            node = self.nodes[i]
            if node.op is None:
                continue
            kids = children[i]
            if node.op == "+" and len(kids) == 2:  # the common ops, exactly right: no rule to call
                if data[i] == data[kids[0]] + data[kids[1]] and tuple(local_grads[i]) == (1.0, 1.0):
                    continue
            elif node.op == "*" and len(kids) == 2:
                a, b = data[kids[0]], data[kids[1]]
                if data[i] == a * b and tuple(local_grads[i]) == (b, a):
                    continue
            op, n = self._op_of(i)
            if op is None:
                continue
            arity, forward, gradients = RULES[op]
            xs = [self.data[c] for c in self.children[i]]
            if len(xs) != arity or len(self.local[i]) != arity or (op == "**" and n is None):
                continue
            value = forward(xs, n)
            # relu(NaN): C#'s Math.Max(0, NaN) is NaN, Python's max(0, nan) is 0; the course writes both
            python_relu = op == "relu" and xs[0] != xs[0] and node.data == 0
            if not _close(node.data, value, 0.0) and not python_relu:
                data_problems.append((i, value))
            for slot, (stored, rule) in enumerate(zip(self.local[i], gradients(xs, node.data, n))):
                if not _close(stored, rule, 0.0):
                    local.append((i, slot, stored, rule))
        return local, data_problems

    def _op_of(self, i):
        node = self.nodes[i]
        return rule_of(node.op, node.exponent, len(self.children[i]))

    def _first_rule_problem(self, local, data_problems):
        """Wrong data first, the earliest made (the later ones may only follow from it); else the
        first wrong local gradient walking back from the output."""
        if data_problems:
            return min(data_problems, key=lambda problem: self.forward_rank[problem[0]])[0]
        flagged = {i for i, *_ in local}
        return next(i for i in reversed(self.order) if i in flagged)

    def _rule_message(self, local, data_problems) -> str:
        first = self._first_rule_problem(local, data_problems)
        for i, value in data_problems:
            if i == first:
                value, yours = format_number(value), format_number(self.data[i])
                name = self._name(i)
                name = name if name.startswith("node ") else f"node {name}"
                return f"{name}: {self._formula(i)} is {value}, yours holds {yours}."
        slots = [(slot, stored, rule) for i, slot, stored, rule in local if i == first]
        return self._local_message(first, slots)

    def _local_message(self, i, slots) -> str:
        op, n = self._op_of(i)
        method = self._method(op)
        names = INPUT_DATA.get(self.language)
        if op == "*" and len(slots) == 2 and self.data[self.children[i][0]] != self.data[self.children[i][1]]:
            a, b = (self.data[c] for c in self.children[i])
            if _close(slots[0][1], a, 0.0) and _close(slots[1][1], b, 0.0):
                if names:
                    return (
                        f"Your {method} gives the first input the local gradient `{names[0]}`; "
                        f"it should be `{names[1]}` (and the second `{names[0]}`)."
                    )
                return (
                    f"Your {method} gives each input its own data as its local gradient ({self._name(i)}); "
                    "each should get the other input's data."
                )
        slot, stored, rule = slots[0]
        which = "the" if len(self.children[i]) == 1 else ("the first" if slot == 0 else "the second")
        return (
            f"Your {method} gives {which} input of {self._name(i)} the local gradient {format_number(stored)}; "
            f"the rule ({RULE_TEXT[op]}) gives {format_number(rule)}."
        )

    def _method(self, op) -> str:
        method = METHODS.get(self.language, {}).get(op)
        if method:
            return f"`{method}`"
        return f"`{op}`"

    def _formula(self, i) -> str:
        op, n = self._op_of(i)
        xs = [format_number(self.data[c]) for c in self.children[i]]
        if op in SYMBOL:
            return f"{xs[0]} {SYMBOL[op]} {xs[1]}"
        if op == "**":
            return f"{xs[0]} ** {format_number(n)}"
        if op == "neg":
            return f"-{xs[0]}"
        return f"{op}({xs[0]})"

    # The cause of wrong grads, by recomputing under each hypothesis.
    def _cause(self, wrong) -> str:
        held = self.before.get(self.output)
        if held is not None and not self._added_to(held):  # the seed set the output's grad: what it held is gone
            del self.before[self.output]
        if self.before:  # grads an earlier backward() left: are they the cause, or beside it?
            start = [self.before.get(i, 0.0) for i in range(len(self.nodes))]
            self.start = start
            left = self._left_before()
            if left:
                self.pointed = self._left_holders()[0]  # the node the message names is the one the page goes to
                return left
            self.start = None  # a mistake whose walk from 0 gives these grads explains them without what was left
            message = self._mistake(wrong, from_zero=True)
            if message:
                return message
            self.start = start  # else each mistake is tried on top of what was left, and both are said
            self.reference = self._simulate(self.order)
            wrong = [i for i in reversed(self.order) if not self._matches(self.learner, self.reference, i)] or wrong
            self.pointed = wrong[0]
        message = self._mistake(wrong)
        if message:
            return message + self._left_too()
        first = wrong[0]
        expected = self._expected()
        return (
            f"{self._name(first)} is the first wrong node walking back from {self._name(self.output)}: "
            f"yours {format_number(self.learner[first])}, expected {format_number(expected[first])}."
        ) + self._left_too()

    def _mistake(self, wrong, from_zero=False) -> str | None:
        """The message of the first known mistake that gives the learner's grads. from_zero: the walk tried as
        if the grads held 0 though they did not: only the mistakes whose walk, simulated, gives the grads
        (not a local gradient read off the first wrong node)."""
        hypotheses = [
            self._unseeded,
            self._learners_walk,
            self._assigned,
            self._no_visited_set,
            self._no_topological_order,
            self._forwards,
            self._not_reset,
        ]
        if not from_zero:
            hypotheses.append(self._wrong_local_in_backward)
        for hypothesis in hypotheses:
            message = hypothesis(wrong)
            if message:
                return message
        return None

    def _seed(self) -> float:
        """The output's grad as the learner's walk seeded it: 1, or, on top of what was left, 1 added."""
        if self.start is None:
            return 1.0
        held = self.start[self.output]
        return held + 1.0 if self._added_to(held) else 1.0

    def _added_to(self, held) -> bool:
        """Whether the learner's walk seeded the output by adding 1 to the grad it held, not setting it."""
        return held != 0 and _close(self.learner[self.output] or 0.0, held + 1.0, 0.0)

    def _expected(self) -> list:
        """Each node's grad by the course's walk from the grads the learner's began from."""
        return self.expected if self.reference is None else self.reference

    def _left_before(self):
        """The grads of this walk added to what the nodes held when it began (an earlier backward()'s)."""
        if self._all_match(self._simulate(self.order)):
            return f"These grads add to what an earlier backward() left: {self._left_message()}."
        return None

    def _left_too(self) -> str:
        return f" Besides, {self._left_message()}." if self.start is not None else ""

    def _left_holders(self) -> list:
        """The nodes that held a grad when this backward() began, walking back from the output; the output's own
        leftover last: the seed may have set it."""
        reached = [i for i in reversed(self.order) if i in self.before and i != self.output]
        return reached + ([self.output] if self.output in self.before else [])

    def _left_message(self) -> str:
        reached = self._left_holders()
        first = reached[0]
        others = len(reached) - 1
        more = f" (and the grad{'s' if others != 1 else ''} of {others:,} other node{'s' if others != 1 else ''} not 0)"
        more = more if others else ""
        return (
            f"when this backward() began, {self._name(first)}'s grad was already "
            f"{format_number(self.before[first])}{more}; {RESET}"
        )

    def _simulate(self, order, seed=None, accumulate=True):
        """The grads a walk in `order` gives from the grads it begins from (0, or self.start), the output
        seeded with `seed` (None: with 1, as the learner's walk seeded it: _seed)."""
        seed = self._seed() if seed is None else seed
        return _propagate(order, self.children, self.local, self.output, len(self.nodes), seed, accumulate, self.start)

    def _unseeded(self, wrong):
        seed = self.learner[self.output]
        if seed is None or _close(seed, 1.0, 0.0) or not self._all_match(self._simulate(self.order, seed)):
            return None
        name = self._name(self.output)
        if seed == 0:
            return (
                f"Every grad is 0: the output {name}'s grad was never seeded with 1, so nothing was passed back "
                f"(or backward() was not called before the graph was written): set {name}.grad = 1 before the walk."
            )
        return f"The output {name}'s grad starts at {format_number(seed)}, not 1: the walk back must start from 1."

    def _learners_walk(self, wrong):
        """The learner's own recorded walk, replayed: which of its defects gives their grads."""
        if not self.walk:
            return None
        for accumulate in (True, False) if self.assigns is not False else (True,):
            if not self._all_match(self._simulate(list(reversed(self.walk)), accumulate=accumulate)):
                continue
            if not accumulate:
                return self._assign_message(wrong)
            counts = {}
            for i in self.walk:
                counts[i] = counts.get(i, 0) + 1
            repeated = [i for i in self.walk if counts[i] > 1 and self.children[i]]
            if repeated:
                i = repeated[0]
                return (
                    f"{self._name(i)}'s backward ran {counts[i]} times, passing its gradient on each time: "
                    "your topological sort needs a visited set, so each node is added once."
                )
            ran = set(self.walk)
            missing = [i for i in reversed(self.order) if self.children[i] and i not in ran]
            if missing:
                name = self._name(missing[0])
                return f"{name}'s backward never ran: your walk leaves it out, so its inputs get nothing from it."
            done = set()
            for i in self.walk:  # a node passes on before a user of it has
                done.add(i)
                for parent, _ in self.parents[i]:
                    if parent not in done and self.children[i]:
                        return self._early_message(i, parent)
        return None

    def _assigned(self, wrong):
        if self.assigns is False or not self._all_match(self._simulate(self.order, accumulate=False)):
            return None
        return self._assign_message(wrong)

    def _assign_message(self, wrong):
        shared = [i for i in wrong if len(self.parents[i]) > 1] or wrong
        i = shared[0]
        users = {parent for parent, _ in self.parents[i]}
        uses = len(self.parents[i])
        used = f"used by {len(users)} nodes" if len(users) > 1 else f"used {uses} times"
        return (
            f"{self._name(i)} is {used}; its grad holds only the last one "
            f"(yours {format_number(self.learner[i])}, expected {format_number(self._expected()[i])}): "
            "add each contribution with +=, not =."
        )

    def _unfolded(self, visit):
        """The order of a walk that does not remember visited nodes, or None past max_steps."""
        size = {}
        for i in self.order:
            size[i] = 1 + sum(size[c] for c in self.children[i])
            if size[i] > self.max_steps:
                return None
        return visit()

    def _no_visited_set(self, wrong):
        order = self._unfolded(lambda: _postorder_unvisited(self.children, self.output))
        if order is None or not self._all_match(self._simulate(order)):
            return None
        counts = {}
        for i in order:
            counts[i] = counts.get(i, 0) + 1
        shared = [i for i in reversed(self.order) if counts[i] > 1 and self.children[i]]
        i = shared[0] if shared else wrong[0]
        return (
            f"{self._name(i)} is reached by {counts[i]} paths and passed its gradient on {counts[i]} times: "
            "your topological sort needs a visited set, so each node is added once."
        )

    def _no_topological_order(self, wrong):
        for simulate in (self._depth_first, self._breadth_first):
            simulated = simulate()
            if self._all_match(simulated):
                shared = [i for i in reversed(self.order) if len(self.parents[i]) > 1 and self.children[i]]
                i = shared[0] if shared else wrong[0]
                users = [parent for parent, _ in self.parents[i]]
                return self._early_message(i, users[-1] if users else None)
        return None

    def _early_message(self, i, user):
        later = f" ({self._name(user)} uses it too)" if user is not None else ""
        return (
            f"{self._name(i)} passed its gradient on before all of its users had added theirs{later}: "
            "walk the nodes in reverse topological order, so each passes on its whole gradient once."
        )

    def _depth_first(self):
        """Each node adds into an input and walks into it at once, with no order (the engine's
        no-topological-order variant)."""
        if self._unfolded(lambda: True) is None:
            return None
        grads = self._start()
        grads[self.output] = self._seed()
        stack = [(self.output, 0)]
        while stack:
            node, slot = stack.pop()
            if slot < len(self.children[node]):
                child = self.children[node][slot]
                grads[child] += self.local[node][slot] * grads[node]
                stack += [(node, slot + 1), (child, 0)]
        return grads

    def _breadth_first(self):
        """A queue from the output, each node passing on once when it leaves the queue."""
        grads = self._start()
        grads[self.output] = self._seed()
        queue, seen = deque([self.output]), {self.output}
        while queue:
            node = queue.popleft()
            for slot, child in enumerate(self.children[node]):
                grads[child] += self.local[node][slot] * grads[node]
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return grads

    def _start(self) -> list:
        """The grads a simulated walk begins from: 0, or what an earlier backward() left."""
        return [0.0] * len(self.nodes) if self.start is None else list(self.start)

    def _forwards(self, wrong):
        if not self._all_match(self._simulate(list(reversed(self.order)))):
            return None
        return (
            "Your walk goes from the leaves towards the output, so only the output's own inputs get a gradient: "
            "walk the topological order in reverse, from the output back."
        )

    def _not_reset(self, wrong):
        if self.before:  # what each grad held as the walk began is known: _left_before says it
            return None
        grads = self.expected
        for calls in range(2, MAX_RESETS + 1):
            times = [g * calls for g in self.expected]
            if self._all_match(times):  # the seed added with += each call: every grad times the calls
                break
            # the seed set with = each call: one more walk on top of the last call's grads
            grads = _propagate(self.order, self.children, self.local, self.output, len(self.nodes), 1.0, True, grads)
            if self._all_match(grads):
                break
        else:
            return None
        return f"These are the grads of {calls} backward() calls with no reset in between: {RESET}."

    def _wrong_local_in_backward(self, wrong):
        """The first wrong node gets a wrong amount from one of its users: the local gradient
        that user's backward step really applied, against the op's rule (the course's walk from the grads the
        learner's began from)."""
        expected = self._expected()
        first = wrong[0]
        for parent, slot in self.parents[first]:
            parent_grad = expected[parent]
            if parent_grad == 0 or not math.isfinite(parent_grad):
                continue
            applied = self.local[parent][slot] + (self.learner[first] - expected[first]) / parent_grad
            op, n = self._op_of(parent)
            if op is None:
                continue
            if len(self.parents[first]) > 1 and not self._is_known_mistake(op, parent, slot, applied, n):
                continue
            applied_text, rule = format_number(applied), format_number(self.local[parent][slot])
            return (
                f"{self._name(first)} gets {applied_text} × {format_number(parent_grad)} from {self._name(parent)} "
                f"in your backward, so its local gradient there is {applied_text}; "
                f"the rule for {self._method(op)} ({RULE_TEXT[op]}) gives {rule}: check its backward step."
            )
        return None

    def _is_known_mistake(self, op, parent, slot, applied, n) -> bool:
        xs = [self.data[c] for c in self.children[parent]]
        guesses = {
            "*": lambda: [xs[slot]],
            "**": lambda: [ieee.power(xs[0], n) * n, ieee.power(xs[0], n - 1), n * xs[0]] if n is not None else [],
            "tanh": lambda: [1.0 - xs[0] ** 2],
            "exp": lambda: [xs[0]],
            "log": lambda: [xs[0]],
        }.get(op, list)()
        return any(_close(applied, guess, 0.0) for guess in guesses)

    def _name(self, i) -> str:
        label = self.nodes[i].label
        return label if label else f"node {self.nodes[i].id}"

    def _unknown_below(self) -> dict:
        """The nodes whose gradient the course's walk cannot know, because it passes through a local gradient
        no rule gives (an op the course does not define, with none stored: NaN where the node's data is a
        number): node -> the first such node above it."""
        unknown = {}
        for parent in reversed(self.order):
            above = unknown.get(parent)
            unknowable = self.data[parent] == self.data[parent]  # a NaN node's NaN local gradients are its own
            for child, local_grad in zip(self.children[parent], self.local[parent]):
                if child not in unknown:
                    if above is not None:
                        unknown[child] = above
                    elif local_grad != local_grad and unknowable:
                        unknown[child] = parent
        return unknown

    def _unknown_message(self, unknown: dict) -> str:
        firsts = list(dict.fromkeys(unknown.values()))
        named = ", ".join(map(self._name, firsts[:3]))
        more = f" and {len(firsts) - 3:,} more" if len(firsts) > 3 else ""
        return (
            f"Below {named}{more}, whose local gradients no rule of the course gives and the node does not hold, "
            f"{len(unknown):,} node{'s are' if len(unknown) != 1 else ' is'} not checked."
        )


def _close(a: float, b: float, scale: float) -> bool:
    if a == b:
        return True
    if a != a or b != b:
        return a != a and b != b
    if math.isinf(a) or math.isinf(b):
        return False
    return abs(a - b) <= TOLERANCE * max(abs(a), abs(b), scale)


def _course_order(children, output):
    """Chapter 2's iterative (node, inputIndex) walk: children before parents, each node once.
    The node being scanned and its next input's index are kept in locals, and only the nodes
    waiting for it on the stack (as engine.autograd walks), one push per node, not per edge."""
    order, visited = [], {output}
    waiting, resume_at = [], []
    node, index = output, 0
    while True:
        inputs = children[node]
        count = len(inputs)
        while index < count:
            child = inputs[index]
            index += 1
            if child not in visited:
                visited.add(child)
                waiting.append(node)
                resume_at.append(index)
                node, index = child, 0
                break
        else:
            order.append(node)
            if not waiting:
                return order
            node = waiting.pop()
            index = resume_at.pop()


def _postorder_unvisited(children, output):
    """The same walk with no visited set: a node is emitted once per path to it."""
    order = []
    stack = [(output, 0)]
    while stack:
        node, index = stack.pop()
        if index < len(children[node]):
            stack += [(node, index + 1), (children[node][index], 0)]
        else:
            order.append(node)
    return order


def _propagate(order, children, local, output, size, seed=1.0, accumulate=True, grads=None, skip_zero=True):
    """Seed the output, then input.grad += local * grad in reverse order (= when not accumulate);
    a node whose grad is 0 passes nothing on, as in chapter 2 (skip_zero)."""
    grads = [0.0] * size if grads is None else list(grads)
    grads[output] = seed
    for node in reversed(order):
        grad = grads[node]
        if grad == 0 and skip_zero:
            continue
        for child, gradient in zip(children[node], local[node]):
            grads[child] = grads[child] + gradient * grad if accumulate else gradient * grad
    return grads
