"""Syntax tree to Value graph, through whitelisted operator and function tables.

Numbers written in the program stay plain floats until they meet a Value, as they do in
Python with micrograd: `2 * 3 + a` adds one constant leaf 6, `a / 2` a constant leaf 0.5.
A value assigned to a name becomes a Value labelled with that name.
"""

import operator

from . import ieee
from .errors import ProgramError
from .syntax import Binary, Call, Name, Number, Unary
from .value import VALUE_EXPONENT_MESSAGE, Value

# Value operands: Python's operators, so the graph is exactly what micrograd builds.
VALUE_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow}
# Two plain numbers: float arithmetic that never raises.
NUMBER_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": ieee.divide, "**": ieee.power}
# Functions are Value methods; a plain-number argument becomes a constant leaf first.
FUNCTIONS = {"log": Value.log, "exp": Value.exp, "relu": Value.relu, "tanh": Value.tanh}


def evaluate(program, variables=None) -> Value:
    """Run every statement; the last one's value is the output, always a Value."""
    variables = dict(variables or {})
    for name, number in variables.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise TypeError(f"variable {name!r} must be a number, not {type(number).__name__}")
    scope = {}
    result = None
    for statement in program.statements:
        result = _evaluate(statement.expr, scope, variables)
        if statement.target is not None:
            if not isinstance(result, Value):
                result = Value(result)
            if result.label is None:
                result.label = statement.target
            scope[statement.target] = result
    return result if isinstance(result, Value) else Value(result)


def _evaluate(expr, scope, variables):
    """Post-order walk with an explicit stack: a 40,000-term sum is a 40,000-deep tree."""
    results = []
    pending = [(expr, False)]
    while pending:
        node, operands_ready = pending.pop()
        if isinstance(node, Number):
            results.append(node.value)
        elif isinstance(node, Name):
            results.append(_lookup(node, scope, variables))
        elif not operands_ready:
            pending.append((node, True))
            pending.extend((child, False) for child in reversed(_operands(node)))
        elif isinstance(node, Binary):
            right = results.pop()
            results.append(_binary(node, results.pop(), right))
        elif isinstance(node, Unary):
            operand = results.pop()
            results.append(-operand if node.op == "-" else operand)
        else:
            args = results[len(results) - len(node.args) :]
            del results[len(results) - len(node.args) :]
            results.append(_call(node, args))
    return results[0]


def _operands(node):
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Unary):
        return (node.operand,)
    return node.args


def _lookup(node, scope, variables):
    if node.name in scope:
        return scope[node.name]
    if node.name in variables:
        leaf = scope[node.name] = Value(variables[node.name], label=node.name)
        return leaf
    known = sorted(set(scope) | set(variables))
    hint = f"; defined so far: {', '.join(map(_shown, known[:8]))}{', ...' if len(known) > 8 else ''}" if known else ""
    if node.name in FUNCTIONS:
        hint = f"; to call the function write {node.name}(x)"
    name = _shown(node.name)
    raise ProgramError(f"unknown name '{name}': assign it first (as in {name} = 2) or pass it as a variable{hint}", node.span)


def _binary(node, left, right):
    if isinstance(right, Value) and node.op == "**":
        raise ProgramError(VALUE_EXPONENT_MESSAGE, node.span)
    if isinstance(left, Value) or isinstance(right, Value):
        return VALUE_OPERATORS[node.op](left, right)
    return NUMBER_OPERATORS[node.op](left, right)


def _call(node, args):
    function = FUNCTIONS.get(node.function)
    if function is None:
        raise ProgramError(f"unknown function '{_shown(node.function)}': the functions are {', '.join(FUNCTIONS)}", node.span)
    if len(args) != 1:
        raise ProgramError(f"{node.function}() takes exactly one argument, got {len(args)}", node.span)
    (arg,) = args
    return function(arg if isinstance(arg, Value) else Value(arg))


def _shown(name, longest=40):
    """A name as an error message quotes it: a 100,000-character name is not echoed whole."""
    return name if len(name) <= longest else name[: longest - 1] + "…"
