"""An independent oracle: on seeded random programs, every leaf gradient the engine finds
agrees with sympy's symbolic derivative to 1e-9 relative.

The generator builds each program three ways at once from one random structure: the
program text, the sympy expression and the float value (used only to keep every step in
its finite, differentiable domain). The engine never sees the sympy side and sympy never
sees our parser."""

import functools
import math
import random

import mpmath
import pytest
import sympy

from engine import evaluate, parse, trace

PROGRAMS = 220
SEED = 20_261_122
REL_TOL = 1e-9

FREE_VARIABLES = ("x", "y", "z")
EXPONENTS = (2, 3, -1, -2, 0.5, 1.5, 0.25)


class Term:
    """One generated expression, in the language, in sympy and as a float."""

    def __init__(self, text, symbolic, value):
        self.text, self.symbolic, self.value = text, symbolic, value


def exact(number):
    """The float the engine uses, exactly (binary floats have finite decimals), carried at
    60 digits; sympy Floats rather than Rationals keep its simplifier off huge integers."""
    return sympy.Float(number, 60)


class ProgramGenerator:
    def __init__(self, rng):
        self.rng = rng

    def program(self):
        rng = self.rng
        self.values = {name: round(rng.uniform(0.3, 2.5), rng.choice((1, 2, 3))) for name in FREE_VARIABLES}
        self.symbols = {name: sympy.Symbol(name) for name in FREE_VARIABLES}
        # names usable in expressions: free variables, assigned leaves and assigned results
        self.scope = {name: Term(name, self.symbols[name], value) for name, value in self.values.items()}
        lines = []
        for index in range(rng.randint(0, 3)):
            name = f"t{index}"
            if rng.random() < 0.3:  # an assigned number: a labelled leaf, so a symbol of its own
                number = round(rng.uniform(-2.0, 2.0), 2) or 1.0
                self.values[name] = number
                self.symbols[name] = sympy.Symbol(name)
                self.scope[name] = Term(name, self.symbols[name], number)
                lines.append(f"{name} = {number!r}")
            else:
                term = self.expression(rng.randint(1, 3))
                self.scope[name] = Term(name, term.symbolic, term.value)
                lines.append(f"{name} = {term.text}")
        output = self.expression(rng.randint(2, 5))
        lines.append(output.text)
        return "\n".join(lines), output.symbolic, dict(self.values), dict(self.symbols)

    def leaf(self):
        rng = self.rng
        if rng.random() < 0.8:
            return self.scope[rng.choice(sorted(self.scope))]
        number = round(rng.uniform(0.1, 3.0), rng.choice((0, 1, 2))) or 0.5
        return Term(repr(number), exact(number), number)

    def expression(self, depth):
        if depth == 0:
            return self.leaf()
        rng = self.rng
        left = self.expression(depth - 1)
        for _ in range(10):  # try operations until one keeps the math finite and smooth
            operation = rng.choice(("+", "-", "*", "/", "**", "log", "exp", "relu", "tanh", "neg"))
            term = self.apply(operation, left, depth)
            if term is not None and math.isfinite(term.value) and abs(term.value) < 1e4:
                return term
        return left

    def apply(self, operation, a, depth):
        rng = self.rng
        if operation in ("+", "-", "*", "/"):
            b = self.expression(rng.randint(0, depth - 1))
            if operation == "+":
                return Term(f"({a.text} + {b.text})", a.symbolic + b.symbolic, a.value + b.value)
            if operation == "-":
                return Term(f"({a.text} - {b.text})", a.symbolic - b.symbolic, a.value - b.value)
            if operation == "*":
                return Term(f"({a.text} * {b.text})", a.symbolic * b.symbolic, a.value * b.value)
            if abs(b.value) < 0.2:
                return None
            return Term(f"({a.text} / {b.text})", a.symbolic / b.symbolic, a.value / b.value)
        if operation == "**":
            n = rng.choice(EXPONENTS)
            if (n != int(n) and a.value < 0.1) or (n < 0 and abs(a.value) < 0.2):
                return None
            return Term(f"({a.text} ** {n!r})", a.symbolic ** sympy.Rational(n), a.value**n)
        call = (lambda name: f"{name}({a.text})") if rng.random() < 0.5 else (lambda name: f"({a.text}).{name}()")
        if operation == "log":
            return (
                Term(call("log"), sympy.log(a.symbolic, evaluate=False), math.log(a.value)) if a.value > 0.1 else None
            )
        if operation == "exp":
            return (
                Term(call("exp"), sympy.exp(a.symbolic, evaluate=False), math.exp(a.value))
                if abs(a.value) < 5
                else None
            )
        if operation == "relu":
            if abs(a.value) < 1e-3:  # stay off the kink, where the derivative is undefined
                return None
            # Off the kink relu is, near the point, either its argument or zero: the branch
            # that is active here is exact for the derivative, and spares sympy Heaviside.
            return Term(call("relu"), a.symbolic if a.value > 0 else sympy.S.Zero, max(a.value, 0.0))
        if operation == "tanh":
            return Term(call("tanh"), sympy.tanh(a.symbolic, evaluate=False), math.tanh(a.value))
        return Term(f"(-{a.text})", -a.symbolic, -a.value)


@functools.cache
def generated_programs():
    rng = random.Random(SEED)
    generator = ProgramGenerator(rng)
    return [generator.program() for _ in range(PROGRAMS)]


def value_at(expression, symbols, values):
    """The expression at the point, in 50-digit mpmath arithmetic (sympy's evalf with subs
    gives the same numbers, five times slower)."""
    names = sorted(symbols)
    function = sympy.lambdify([symbols[name] for name in names], expression, modules="mpmath")
    with mpmath.workdps(50):
        return float(function(*[mpmath.mpf(values[name]) for name in names]))


def leaves_by_label(output):
    return {node.label: node for node in trace(output).nodes if not node._children and node.label}


def agrees(ours, expected):
    """Relative error at most 1e-9; below a magnitude of 1e-3 (in practice: derivatives that
    are exactly zero, where float cancellation leaves ~1e-16) an absolute 1e-12."""
    return abs(ours - expected) <= REL_TOL * max(abs(expected), 1e-3)


def test_generated_programs_are_varied():
    programs = [source for source, *_ in generated_programs()]
    assert len(set(programs)) >= 200
    text = "\n".join(programs)
    for piece in (
        "+",
        " - ",
        "*",
        "/",
        "**",
        "log(",
        "exp(",
        "relu(",
        "tanh(",
        ".log()",
        ".relu()",
        "t0 =",
        "(-",
        "** -1",
    ):
        assert piece in text, piece


def test_leaf_gradients_agree_with_sympy():
    nonzero = 0
    worst = 0.0
    for source, symbolic, values, symbols in generated_programs():
        variables = {name: values[name] for name in FREE_VARIABLES}
        output = evaluate(parse(source), variables)
        output.backward()
        leaves = leaves_by_label(output)
        assert output.data == pytest.approx(value_at(symbolic, symbols, values), rel=1e-12, abs=1e-12), source
        for name, symbol in symbols.items():
            if symbol in symbolic.free_symbols:
                expected = value_at(sympy.diff(symbolic, symbol), symbols, values)
            else:
                expected = 0.0
            ours = leaves[name].grad if name in leaves else 0.0
            assert agrees(ours, expected), f"d/d{name} of\n{source}\nat {values}: engine {ours!r}, sympy {expected!r}"
            if abs(expected) >= 1e-3:
                nonzero += 1
                worst = max(worst, abs(ours - expected) / abs(expected))
    assert nonzero >= PROGRAMS  # plenty of the comparisons are of real, non-zero derivatives
    assert worst <= REL_TOL
