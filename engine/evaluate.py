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


def evaluate(program, variables=None, marks=None) -> Value:
    """Run every statement; the last one's value is the output, always a Value.

    marks: a list to which each operation that makes Values appends (the last Value's creation
    number, first offset, offset past the end) of the code that made them, in creation order."""
    variables = dict(variables or {})
    for name, number in variables.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise TypeError(f"variable {name!r} must be a number, not {type(number).__name__}")
    scope = {}
    result = None
    for statement in program.statements:
        result, end = _evaluate(statement.expr, scope, variables, marks)
        if statement.target is not None:
            if not isinstance(result, Value):
                result = Value(result)
                if marks is not None:
                    marks.append((result._serial, statement.span.offset, end))
            if result.label is None:
                result.label = statement.target
            scope[statement.target] = result
    if not isinstance(result, Value):
        result = Value(result)
        if marks is not None:
            marks.append((result._serial, program.statements[-1].span.offset, end))
    return result


def _evaluate(expr, scope, variables, marks=None):
    """Post-order walk with an explicit stack: a 40,000-term sum is a 40,000-deep tree.
    Returns the value and the offset just past the expression's last token."""
    results = []
    extents = []  # (first offset, offset past the end) beside each result
    pending = [(expr, False)]
    while pending:
        node, operands_ready = pending.pop()
        if isinstance(node, Number):
            results.append(node.value)
            extents.append((node.span.offset, node.span.end))
        elif isinstance(node, Name):
            made = marks is not None and node.name not in scope
            results.append(_lookup(node, scope, variables))
            extents.append((node.span.offset, node.span.end))
            if made and isinstance(results[-1], Value):
                _mark(marks, results[-1], node.span.offset, node.span.end)
        elif not operands_ready:
            pending.append((node, True))
            pending.extend((child, False) for child in reversed(_operands(node)))
        elif isinstance(node, Binary):
            right = results.pop()
            results.append(_binary(node, results.pop(), right))
            end = extents.pop()[1]
            extents[-1] = (extents[-1][0], end)
        elif isinstance(node, Unary):
            operand = results.pop()
            results.append(-operand if node.op == "-" else operand)
            extents[-1] = (node.span.offset, extents[-1][1])
        else:
            count = len(node.args)
            args = results[len(results) - count :]
            del results[len(results) - count :]
            results.append(_call(node, args))
            spans = extents[len(extents) - count :]
            del extents[len(extents) - count :]
            extents.append((min(node.span.offset, *(s for s, _ in spans)), max(node.span.end, *(e for _, e in spans))))
        if marks is not None and operands_ready and isinstance(results[-1], Value):
            _mark(marks, results[-1], *extents[-1])
    return results[0], extents[0][1]


def _mark(marks, value, start, end):
    if not marks or value._serial > marks[-1][0]:
        marks.append((value._serial, start, end))


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
