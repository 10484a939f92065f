"""A parsed program's steps to a Value graph, through whitelisted operator and function tables.

Numbers written in the program stay plain floats until they meet a Value, as they do in
Python with micrograd: `2 * 3 + a` adds one constant leaf 6, `a / 2` a constant leaf 0.5.
A value assigned to a name becomes a Value labelled with that name.
"""

import operator

from . import ieee
from .errors import ProgramError
from .syntax import BINARY, NAME, NUMBER, UNARY, place
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
        result = _run(statement.steps, scope, variables, program.source, marks)
        if statement.target is not None:
            if not isinstance(result, Value):
                result = Value(result)
                if marks is not None:
                    marks.append((result._serial, statement.start, statement.steps[-1][4]))
            if result.label is None:
                result.label = statement.target
            scope[statement.target] = result
    if not isinstance(result, Value):
        result = Value(result)
        if marks is not None:
            last = program.statements[-1]
            marks.append((result._serial, last.start, last.steps[-1][4]))
    return result


def _run(steps, scope, variables, source, marks):
    """The steps in order on a stack of values (postfix: no recursion, however deep the
    expression); returns the value of the last one."""
    stack = []
    for action, argument, offset, start, end in steps:
        if action is NAME:
            value = scope.get(argument)
            if value is None:  # a variable's leaf, made at its first use
                value = _leaf(argument, offset, scope, variables, source)
                if marks is not None:
                    marks.append((value._serial, start, end))
            stack.append(value)
            continue
        if action is NUMBER:
            stack.append(argument)
            continue
        if action is BINARY:  # written out, not a function call: most steps of a long program are these
            right = stack.pop()
            left = stack[-1]
            if isinstance(left, Value) or isinstance(right, Value):
                if argument == "**" and isinstance(right, Value):
                    raise ProgramError(VALUE_EXPONENT_MESSAGE, place(source, offset, offset + 2))
                value = stack[-1] = VALUE_OPERATORS[argument](left, right)
            else:
                value = stack[-1] = NUMBER_OPERATORS[argument](left, right)
        elif action is UNARY:
            if argument == "+":
                continue  # hands back its operand: nothing made
            value = stack[-1] = -stack[-1]
        else:
            function, count = argument
            arguments = stack[len(stack) - count :]
            del stack[len(stack) - count :]
            value = _call(function, arguments, offset, source)
            stack.append(value)
        if marks is not None and isinstance(value, Value):  # an operation on a Value makes new ones: mark the last
            marks.append((value._serial, start, end))
    return stack[0]


def _leaf(name, offset, scope, variables, source):
    """The leaf of a variable used for the first time, or the error of a name never defined."""
    if name in variables:
        leaf = scope[name] = Value(variables[name], label=name)
        return leaf
    known = sorted(set(scope) | set(variables))
    hint = f"; defined so far: {', '.join(map(_shown, known[:8]))}{', ...' if len(known) > 8 else ''}" if known else ""
    if name in FUNCTIONS:
        hint = f"; to call the function write {name}(x)"
    shown = _shown(name)
    raise ProgramError(
        f"unknown name '{shown}': assign it first (as in {shown} = 2) or pass it as a variable{hint}",
        place(source, offset, offset + len(name)),
    )


def _call(name, arguments, offset, source):
    function = FUNCTIONS.get(name)
    if function is None:
        raise ProgramError(
            f"unknown function '{_shown(name)}': the functions are {', '.join(FUNCTIONS)}",
            place(source, offset, offset + len(name)),
        )
    if len(arguments) != 1:
        raise ProgramError(
            f"{name}() takes exactly one argument, got {len(arguments)}", place(source, offset, offset + len(name))
        )
    (argument,) = arguments
    return function(argument if isinstance(argument, Value) else Value(argument))


def _shown(name, longest=40):
    """A name as an error message quotes it: a 100,000-character name is not echoed whole."""
    return name if len(name) <= longest else name[: longest - 1] + "…"
