"""Program text to syntax tree: a tokenizer and an operator-precedence parser.

The parser is a shunting-yard loop over an explicit operator stack, so no input, however
deeply nested or long, can exhaust Python's recursion limit. Precedence follows Python.
"""

import re
import unicodedata

from .errors import ProgramError
from .limits import Limits
from .syntax import Binary, Call, Name, Number, Program, Span, Statement, Token, Unary

BINARY_PRECEDENCE = {"+": 10, "-": 10, "*": 20, "/": 20, "**": 40}
UNARY_PRECEDENCE = 30  # between * and **: -a**2 is -(a**2), -a*b is (-a)*b
RIGHT_ASSOCIATIVE = {"**"}

# ASCII digits only: \d would also read Arabic-Indic, Devanagari... digits as numbers (a = ١٢ was 12).
# The blanks before a token are part of its match: half as many matches as blanks and tokens apart.
# Blanks at the very end match as `tail`: were they to match nothing, the search would scan them
# again from each of their positions (100,000 trailing spaces took minutes).
_TOKEN = re.compile(
    r"[ \t\r\f]*+(?:(?P<comment>#[^\n]*)|(?P<end>[\n;])"
    r"|(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(?P<glued>[A-Za-z0-9_]+)?"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\*\*|[-+*/()=,.])|(?P<bad>[^ \t\r\f])|(?P<tail>\Z))",
    re.DOTALL,
)


def tokenize(source: str, limits: Limits = Limits()) -> list[Token]:
    if len(source) > limits.max_source_length:
        raise ProgramError(
            f"the program is {len(source):,} characters long; the limit is {limits.max_source_length:,}",
            _span_of_offset(source, limits.max_source_length),
        )
    tokens = []
    open_parens = 0  # inside parentheses a newline does not end the statement, as in Python
    line, line_start = 1, 0
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup
        if kind == "tail":
            break
        if kind == "comment":
            continue
        start, end = match.start(kind), match.end()
        if kind == "glued":  # a number run into letters: 1e, 2x, 3_000
            start = match.start("number")
            raise ProgramError(f"'{source[start:end]}' is not a number", Span(start, line, start - line_start + 1, end))
        text = source[start:end]
        span = Span(start, line, start - line_start + 1, end)
        if kind == "end":
            if open_parens == 0 or text == ";":
                tokens.append(Token("end", text, span))
            if text == "\n":
                line, line_start = line + 1, end
            continue
        if kind == "bad":
            raise ProgramError(_unexpected_character(text), span)
        if kind == "op":
            open_parens += (text == "(") - (text == ")" and open_parens > 0)
        tokens.append(Token(kind, text, span))
    n = len(source)
    tokens.append(Token("eof", "", Span(n, line, n - line_start + 1, n)))
    return tokens


def parse(source: str, limits: Limits = Limits()) -> Program:
    tokens = tokenize(source, limits)
    statements = []
    pos = 0
    while tokens[pos].kind != "eof":
        if tokens[pos].kind == "end":
            pos += 1
            continue
        statement, pos = _statement(tokens, pos, limits)
        statements.append(statement)
    if not statements:
        raise ProgramError("the program is empty: write an expression, such as a * b + a", tokens[0].span)
    return Program(tuple(statements))


def _statement(tokens, pos, limits):
    first = tokens[pos]
    target = None
    if first.kind == "name" and tokens[pos + 1].text == "=" and tokens[pos + 1].kind == "op":
        target = first.text
        pos += 2
    expr, pos = _expression(tokens, pos, limits)
    return Statement(target, expr, first.span), pos


def _expression(tokens, pos, limits):
    operands = []
    operators = []  # frames: [kind, text, span, argument count, "(" span]; kind: binary/unary/paren/call
    depth = 0  # open parentheses, calls and unary signs
    expect_operand = True
    while True:
        token = tokens[pos]
        kind, text = token.kind, token.text
        if expect_operand:
            if kind == "number":
                operands.append(Number(float(text), token.span))
                expect_operand = False
            elif kind == "name" and tokens[pos + 1].text == "(":
                if tokens[pos + 2].text == ")":
                    operands.append(Call(text, (), token.span))
                    expect_operand = False
                    pos += 2
                else:
                    operators.append(["call", text, token.span, 1, tokens[pos + 1].span])
                    depth += 1
                    pos += 1
            elif kind == "name":
                operands.append(Name(text, token.span))
                expect_operand = False
            elif kind == "op" and text in ("+", "-", "("):
                operators.append(["paren" if text == "(" else "unary", text, token.span, 0, token.span])
                depth += 1
            else:
                raise ProgramError(f"expected a number, a name or '(' {_after(tokens, pos)}, found {_describe(token)}", token.span)
            if depth > limits.max_depth:
                raise ProgramError(f"the expression nests deeper than {limits.max_depth} levels", token.span)
        elif kind == "op" and text in BINARY_PRECEDENCE:
            precedence = BINARY_PRECEDENCE[text]
            while operators and operators[-1][0] in ("binary", "unary"):
                top = operators[-1]
                top_precedence = UNARY_PRECEDENCE if top[0] == "unary" else BINARY_PRECEDENCE[top[1]]
                if top_precedence < precedence or (top_precedence == precedence and text in RIGHT_ASSOCIATIVE):
                    break
                depth -= _reduce(operators, operands)
            operators.append(["binary", text, token.span, 0, None])
            expect_operand = True
        elif kind == "op" and text == ")":
            depth -= _reduce_to_bracket(operators, operands)
            if not operators:
                raise ProgramError("')' has no matching '('", token.span)
            frame = operators.pop()
            depth -= 1
            if frame[0] == "call":
                count = frame[3]
                args = tuple(operands[-count:])
                del operands[-count:]
                operands.append(Call(frame[1], args, frame[2]))
        elif kind == "op" and text == ",":
            depth -= _reduce_to_bracket(operators, operands)
            if not operators or operators[-1][0] != "call":
                raise ProgramError("',' can only separate the arguments of a call", token.span)
            operators[-1][3] += 1
            expect_operand = True
        elif kind == "op" and text == ".":
            name = tokens[pos + 1]
            if name.kind != "name":
                raise ProgramError(f"expected a method name after '.', found {_describe(name)}", name.span)
            if tokens[pos + 2].text != "(" or tokens[pos + 3].text != ")":
                raise ProgramError(f"a method takes no arguments: write .{name.text}()", name.span)
            operands[-1] = Call(name.text, (operands[-1],), name.span)
            pos += 3
        elif kind in ("end", "eof"):
            while operators:
                if operators[-1][0] in ("paren", "call"):
                    opened = operators[-1][4]
                    raise ProgramError(f"'(' opened at {opened.line}:{opened.column} is never closed", opened)
                depth -= _reduce(operators, operands)
            return operands[0], pos
        elif kind == "op" and text == "=":
            raise ProgramError("'=' can only follow a single name at the start of a statement, as in c = a * b", token.span)
        else:
            raise ProgramError(f"expected an operator or the end of the statement, found {_describe(token)}", token.span)
        pos += 1


def _reduce(operators, operands):
    """Pop one binary or unary operator and combine its operands; returns the depth it closed."""
    kind, text, span, _, _ = operators.pop()
    if kind == "unary":
        operands.append(Unary(text, operands.pop(), span))
        return 1
    right = operands.pop()
    operands.append(Binary(text, operands.pop(), right, span))
    return 0


def _reduce_to_bracket(operators, operands):
    closed = 0
    while operators and operators[-1][0] in ("binary", "unary"):
        closed += _reduce(operators, operands)
    return closed


def _after(tokens, pos):
    previous = tokens[pos - 1] if pos > 0 else None
    if previous is None or previous.kind == "end":
        return "to start the statement"
    return f"after {_describe(previous)}"


def _describe(token):
    if token.kind == "number":
        return f"the number {token.text}"
    if token.kind == "name":
        return f"the name '{token.text}'"
    if token.kind == "eof":
        return "the end of the program"
    if token.text == "\n":
        return "the end of the line"
    return f"'{token.text}'"


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
    elif ch in "'\"[]{}":
        hint = ": the language has numbers, names, + - * / **, parentheses and log, exp, relu, tanh"
    return f"unexpected character {shown}({code} {name}){hint}"


def _span_of_offset(source, offset):
    line_start = source.rfind("\n", 0, offset) + 1
    return Span(offset, source.count("\n", 0, offset) + 1, offset - line_start + 1, offset + 1)
