"""Program text to steps: a tokenizer and an operator-precedence parser.

The parser is a shunting-yard loop over an explicit operator stack, so no input, however
deeply nested or long, can exhaust Python's recursion limit. Precedence follows Python.
"""

import re
import unicodedata

from .errors import ProgramError
from .limits import Limits
from .syntax import BINARY, CALL, NAME, NUMBER, UNARY, Program, Statement, place

BINARY_PRECEDENCE = {"+": 10, "-": 10, "*": 20, "/": 20, "**": 40}
UNARY_PRECEDENCE = 30  # between * and **: -a**2 is -(a**2), -a*b is (-a)*b
RIGHT_ASSOCIATIVE = {"**"}
PARENTHESIS = "parenthesis"  # an operator frame: a "(" not yet closed

# ASCII digits only: \d would also read Arabic-Indic, Devanagari... digits as numbers (a = ١٢ was 12).
# The blanks before a token are part of its match: half as many matches as blanks and tokens apart.
# Blanks at the very end match as `tail`: were they to match nothing, the search would scan them
# again from each of their positions (100,000 trailing spaces took minutes).
# The commonest kinds come first, where the search tries them first; a number goes before the
# operators so that .5 is a number, not '.' and 5.
_TOKEN = re.compile(
    r"[ \t\r\f]*+(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(?P<glued>[A-Za-z0-9_]+)?"
    r"|(?P<op>\*\*|[-+*/()=,.])|(?P<end>[\n;])|(?P<comment>#[^\n]*)|(?P<bad>[^ \t\r\f])|(?P<tail>\Z))",
    re.DOTALL,
)


def tokenize(source: str, limits: Limits = Limits()) -> list[tuple]:
    """The tokens (kind, text, start, end) of source, ending with ("eof", "", n, n)."""
    if len(source) > limits.max_source_length:
        raise ProgramError(
            f"the program is {len(source):,} characters long; the limit is {limits.max_source_length:,}",
            place(source, limits.max_source_length, limits.max_source_length + 1),
        )
    tokens = []
    open_parens = 0  # inside parentheses a newline does not end the statement, as in Python
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup
        text = match[kind]
        end = match.end()
        if kind == "name" or kind == "number":
            pass  # most tokens: nothing to check
        elif kind == "op":
            if text == "(":
                open_parens += 1
            elif text == ")" and open_parens:
                open_parens -= 1
        elif kind == "end":
            if open_parens and text == "\n":
                continue
        elif kind == "comment":
            continue
        elif kind == "tail":
            break
        elif kind == "glued":  # a number run into letters: 1e, 2x, 3_000
            start = match.start("number")
            raise ProgramError(f"'{source[start:end]}' is not a number", place(source, start, end))
        elif kind == "bad":
            raise ProgramError(_unexpected_character(text), place(source, end - 1, end))
        tokens.append((kind, text, end - len(text), end))
    tokens.append(("eof", "", len(source), len(source)))
    return tokens


def parse(source: str, limits: Limits = Limits()) -> Program:
    tokens = tokenize(source, limits)
    statements = []
    pos = 0
    while tokens[pos][0] != "eof":
        if tokens[pos][0] == "end":
            pos += 1
            continue
        statement, pos = _statement(source, tokens, pos, limits)
        statements.append(statement)
    if not statements:
        raise ProgramError("the program is empty: write an expression, such as a * b + a", _place_of(source, tokens[0]))
    return Program(tuple(statements), source)


def _statement(source, tokens, pos, limits):
    kind, text, start, _ = tokens[pos]
    target = None
    if kind == "name" and tokens[pos + 1][1] == "=" and tokens[pos + 1][0] == "op":
        target = text
        pos += 2
    steps, pos = _expression(source, tokens, pos, limits)
    return Statement(target, steps, start), pos


def _expression(source, tokens, pos, limits):
    """One expression to its steps in postfix order (engine.syntax), up to the end of its statement."""
    steps = []
    operands = []  # the step that computes each operand not yet combined: its start and end are the operand's
    operators = []  # frames (precedence, action, argument, offset); parentheses and calls have precedence 0
    argument_counts = []  # one per call frame
    depth = 0  # open parentheses, calls and unary signs
    expect_operand = True
    while True:
        kind, text, start, end = tokens[pos]
        if expect_operand:
            if kind == "name" and tokens[pos + 1][1] == "(":
                if tokens[pos + 2][1] == ")":
                    step = (CALL, (text, 0), start, start, end)
                    steps.append(step)
                    operands.append(step)
                    expect_operand = False
                    pos += 2
                else:  # the frame's offset is the '(' it opened, which an unclosed call is reported at
                    operators.append((0, CALL, (text, start), tokens[pos + 1][2]))
                    argument_counts.append(1)
                    depth += 1
                    pos += 1
            elif kind == "name" or kind == "number":
                step = (NAME, text, start, start, end) if kind == "name" else (NUMBER, float(text), start, start, end)
                steps.append(step)
                operands.append(step)
                expect_operand = False
            elif kind == "op" and text in ("+", "-", "("):
                operators.append(
                    (0, PARENTHESIS, None, start) if text == "(" else (UNARY_PRECEDENCE, UNARY, text, start)
                )
                depth += 1
            else:
                raise ProgramError(
                    f"expected a number, a name or '(' {_after(tokens, pos)}, found {_describe(tokens[pos])}",
                    place(source, start, end),
                )
            if depth > limits.max_depth:
                raise ProgramError(
                    f"the expression nests deeper than {limits.max_depth} levels", place(source, start, end)
                )
        elif kind == "op" and text in BINARY_PRECEDENCE:
            precedence = BINARY_PRECEDENCE[text]
            if text in RIGHT_ASSOCIATIVE:
                precedence += 1  # an operator of the same precedence before it waits: 2**3**2 is 2**(3**2)
            while operators and operators[-1][0] >= precedence:
                depth -= _reduce(operators, steps, operands)
            operators.append((BINARY_PRECEDENCE[text], BINARY, text, start))
            expect_operand = True
        elif kind == "op" and text == ")":
            depth -= _reduce_to_bracket(operators, steps, operands)
            if not operators:
                raise ProgramError("')' has no matching '('", place(source, start, end))
            _, action, argument, _ = operators.pop()
            depth -= 1
            if action is CALL:
                function, function_start = argument
                count = argument_counts.pop()  # the arguments follow the name: from it to the last one's end
                step = (CALL, (function, count), function_start, function_start, operands[-1][4])
                del operands[len(operands) - count :]
                steps.append(step)
                operands.append(step)
        elif kind == "op" and text == ",":
            depth -= _reduce_to_bracket(operators, steps, operands)
            if not operators or operators[-1][1] is not CALL:
                raise ProgramError("',' can only separate the arguments of a call", place(source, start, end))
            argument_counts[-1] += 1
            expect_operand = True
        elif kind == "op" and text == ".":
            method_kind, method, method_start, method_end = tokens[pos + 1]
            if method_kind != "name":
                raise ProgramError(
                    f"expected a method name after '.', found {_describe(tokens[pos + 1])}",
                    _place_of(source, tokens[pos + 1]),
                )
            if tokens[pos + 2][1] != "(" or tokens[pos + 3][1] != ")":
                raise ProgramError(
                    f"a method takes no arguments: write .{method}()", place(source, method_start, method_end)
                )
            operand = operands[-1]  # x.log() is log(x), reported at the method's name
            step = (CALL, (method, 1), method_start, min(operand[3], method_start), max(operand[4], method_end))
            steps.append(step)
            operands[-1] = step
            pos += 3
        elif kind == "end" or kind == "eof":
            while operators:
                if operators[-1][0] == 0:
                    opened = place(source, operators[-1][3], operators[-1][3] + 1)
                    raise ProgramError(f"'(' opened at {opened.line}:{opened.column} is never closed", opened)
                depth -= _reduce(operators, steps, operands)
            return tuple(steps), pos
        elif kind == "op" and text == "=":
            raise ProgramError(
                "'=' can only follow a single name at the start of a statement, as in c = a * b",
                place(source, start, end),
            )
        else:
            raise ProgramError(
                f"expected an operator or the end of the statement, found {_describe(tokens[pos])}",
                place(source, start, end),
            )
        pos += 1


def _reduce(operators, steps, operands):
    """Pop one binary or unary operator and emit its step; returns the depth it closed."""
    _, action, text, offset = operators.pop()
    if action is UNARY:
        step = (UNARY, text, offset, offset, operands[-1][4])
        closed = 1
    else:
        right = operands.pop()
        step = (BINARY, text, offset, operands[-1][3], right[4])
        closed = 0
    steps.append(step)
    operands[-1] = step
    return closed


def _reduce_to_bracket(operators, steps, operands):
    closed = 0
    while operators and operators[-1][0] > 0:
        closed += _reduce(operators, steps, operands)
    return closed


def _after(tokens, pos):
    if pos == 0 or tokens[pos - 1][0] == "end":
        return "to start the statement"
    return f"after {_describe(tokens[pos - 1])}"


def _describe(token):
    kind, text, _, _ = token
    if kind == "number":
        return f"the number {text}"
    if kind == "name":
        return f"the name '{text}'"
    if kind == "eof":
        return "the end of the program"
    if text == "\n":
        return "the end of the line"
    return f"'{text}'"


def _place_of(source, token):
    return place(source, token[2], token[3])


def _unexpected_character(ch):
    code = f"U+{ord(ch):04X}"
    try:
        name = unicodedata.name(ch)
    except ValueError:
        name = "a control or unassigned character"
    shown = f"'{ch}' " if ch.isprintable() and not ch.isspace() else ""
    hint = ""
    if ch.isidentifier():
        hint = ": names use only the ASCII letters a-z and A-Z, digits and _"
    elif ch == "^":
        hint = ": for powers write **, as in x ** 2"
    elif ch in "'\"[]{}":
        hint = ": the language has numbers, names, + - * / **, parentheses and log, exp, relu, tanh"
    return f"unexpected character {shown}({code} {name}){hint}"
