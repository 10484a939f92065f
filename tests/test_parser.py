"""The tokenizer and parser: grammar, precedence, statements, and every syntax error and
limit with its message, line and column."""

import sys

import pytest

from engine import Limits, ProgramError, parse
from engine.parser import tokenize
from engine.syntax import BINARY, CALL, NAME, NUMBER, UNARY, place


def shape(steps):
    """An expression's postfix steps as the tree they build, a compact prefix string, e.g. (* a (- 2))."""
    stack = []
    for action, argument, _, _, _ in steps:
        if action == NUMBER:
            stack.append(repr(argument))
        elif action == NAME:
            stack.append(argument)
        elif action == UNARY:
            stack.append(f"({argument} {stack.pop()})")
        elif action == BINARY:
            right = stack.pop()
            stack.append(f"({argument} {stack.pop()} {right})")
        else:
            assert action == CALL
            function, count = argument
            arguments = stack[len(stack) - count :]
            del stack[len(stack) - count :]
            stack.append(f"({function}{''.join(' ' + shown for shown in arguments)})")
    (expression,) = stack  # the steps build exactly one value
    return expression


def tree(source):
    (statement,) = parse(source).statements
    return shape(statement.steps)


def error(source, limits=Limits()):
    with pytest.raises(ProgramError) as caught:
        parse(source, limits)
    return caught.value


# --- grammar ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, expected",
    [
        ("-a**2", "(- (** a 2.0))"),
        ("2**3**2", "(** 2.0 (** 3.0 2.0))"),
        ("a - b - c", "(- (- a b) c)"),
        ("a / b / c", "(/ (/ a b) c)"),
        ("2 * -3", "(* 2.0 (- 3.0))"),
        ("a ** -1", "(** a (- 1.0))"),
        ("-a * b", "(* (- a) b)"),
        ("a + b * c", "(+ a (* b c))"),
        ("(a + b) * c", "(* (+ a b) c)"),
        ("2 ** -1 ** 2", "(** 2.0 (- (** 1.0 2.0)))"),
        ("- - a", "(- (- a))"),
        ("+a", "(+ a)"),
        ("a * b ** c", "(* a (** b c))"),
    ],
)
def test_precedence_and_associativity_follow_python(source, expected):
    assert tree(source) == expected


@pytest.mark.parametrize(
    "text, value", [("2", 2.0), ("3.5", 3.5), (".5", 0.5), ("1e-3", 0.001), ("2.", 2.0), ("1E+2", 100.0)]
)
def test_number_forms(text, value):
    assert tree(text) == repr(value)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("log(x)", "(log x)"),
        ("x.log()", "(log x)"),
        ("(a*b).relu()", "(relu (* a b))"),
        ("exp(a).tanh()", "(tanh (exp a))"),
        ("-x.log()", "(- (log x))"),
        ("a * b.exp()", "(* a (exp b))"),
        ("2 ** x.relu()", "(** 2.0 (relu x))"),
        ("(2).log()", "(log 2.0)"),
        ("log(1, 2)", "(log 1.0 2.0)"),
        ("log()", "(log)"),
    ],
)
def test_calls_and_methods(source, expected):
    assert tree(source) == expected


def test_statements_split_by_newlines_and_semicolons():
    program = parse("a = 1; b = 2\nc = a * b\n\n;c + 1")
    assert [s.target for s in program.statements] == ["a", "b", "c", None]
    assert [shape(s.steps) for s in program.statements] == ["1.0", "2.0", "(* a b)", "(+ c 1.0)"]


def test_comments_are_ignored():
    program = parse("# intro\na = 2  # two\n# between\na * 3 # end")
    assert [shape(s.steps) for s in program.statements] == ["2.0", "(* a 3.0)"]


def test_newlines_inside_parentheses_continue_the_statement():
    program = parse("b = (a\n+\n1)\nlog(\nb\n)")
    assert [shape(s.steps) for s in program.statements] == ["(+ a 1.0)", "(log b)"]


def test_tokens_are_kind_text_and_character_offsets():
    source = "a = 1\n  bb * 2  # c\n"
    assert tokenize(source) == [
        ("name", "a", 0, 1),
        ("op", "=", 2, 3),
        ("number", "1", 4, 5),
        ("end", "\n", 5, 6),
        ("name", "bb", 8, 10),
        ("op", "*", 11, 12),
        ("number", "2", 13, 14),
        ("end", "\n", 19, 20),
        ("eof", "", 20, 20),
    ]


def test_places_are_one_based_line_and_column():
    source = "a = 1\n  bb * 2"
    assert tuple(place(source, 8, 10)) == (8, 2, 3, 10)
    assert tuple(place(source, 0, 1)) == (0, 1, 1, 1)
    assert tuple(place(source, 6, 7)) == (6, 2, 1, 7)  # just after a newline: the next line's first column


def test_steps_carry_where_each_value_was_written():
    """(action, argument, own token's offset, start, end): start and end span the operands, not
    the parentheses around them; a method call starts at its object."""
    (statement,) = parse("c = (a + 2) * log(b).tanh()").statements
    assert statement.target == "c" and statement.start == 0
    assert statement.steps == (
        (NAME, "a", 5, 5, 6),
        (NUMBER, 2.0, 9, 9, 10),
        (BINARY, "+", 7, 5, 10),
        (NAME, "b", 18, 18, 19),
        (CALL, ("log", 1), 14, 14, 19),
        (CALL, ("tanh", 1), 21, 14, 25),
        (BINARY, "*", 12, 5, 25),
    )


# --- errors: message, line and column -----------------------------------------------------


def where(err):
    return (err.line, err.column, err.offset)


@pytest.mark.parametrize(
    "source, position, name",
    [
        ("\u0430 = 1", (1, 1, 0), "CYRILLIC SMALL LETTER A"),
        ("a = 1\nb\u200f = 2", (2, 2, 7), "RIGHT-TO-LEFT MARK"),
        ("a\x00", (1, 2, 1), "U+0000"),
        ("a = 1 $ 2", (1, 7, 6), "DOLLAR SIGN"),
        ("x = 'a'", (1, 5, 4), "APOSTROPHE"),
        ("a = 2 \u00d7 3", (1, 7, 6), "MULTIPLICATION SIGN"),
    ],
)
def test_unexpected_character(source, position, name):
    err = error(source)
    assert where(err) == position
    assert err.message.startswith("unexpected character")
    assert name in err.message


def test_lookalike_letter_says_names_are_ascii():
    err = error("\u0430 = 1")
    assert "'\u0430'" in err.message and "U+0430" in err.message and "ASCII" in err.message


def test_invisible_character_is_named_not_shown():
    err = error("b\u200f")
    assert "U+200F" in err.message and "\u200f" not in err.message


@pytest.mark.parametrize(
    "source, position, expected",
    [
        ("1 +", (1, 4, 3), "expected a number, a name or '(' after '+', found the end of the program"),
        ("1 2", (1, 3, 2), "expected an operator or the end of the statement, found the number 2"),
        ("a b", (1, 3, 2), "found the name 'b'"),
        ("x = 1\ny = x +\n2", (2, 8, 13), "after '+', found the end of the line"),
        ("* 2", (1, 1, 0), "expected a number, a name or '(' to start the statement, found '*'"),
        ("a.", (1, 3, 2), "expected a method name after '.'"),
        ("a.log(1)", (1, 3, 2), "a method takes no arguments: write .log()"),
        ("1, 2", (1, 2, 1), "',' can only separate the arguments of a call"),
        ("a = = 1", (1, 5, 4), "after '='"),
    ],
)
def test_unexpected_token_says_what_was_expected(source, position, expected):
    err = error(source)
    assert where(err) == position
    assert expected in err.message


@pytest.mark.parametrize(
    "source, position",
    [("2 *(3 + 1", (1, 4, 3)), ("a = (1 + (2)", (1, 5, 4)), ("a = 1\nb = log(a", (2, 8, 13)), ("((1)", (1, 1, 0))],
)
def test_unclosed_parenthesis_names_where_it_opened(source, position):
    err = error(source)
    assert where(err) == position
    assert err.message == f"'(' opened at {position[0]}:{position[1]} is never closed"


def test_unclosed_parenthesis_message_exact_text():
    assert error("2 *(3").message == "'(' opened at 1:4 is never closed"


def test_unclosed_parenthesis_stops_at_the_statement_end():
    err = error("a = (1\n; b = 2")  # the ';' ends the statement even inside parentheses
    assert err.message == "'(' opened at 1:5 is never closed"


@pytest.mark.parametrize("source, position", [("1 + 2)", (1, 6, 5)), ("a = 1\n(a))", (2, 4, 9))])
def test_closing_parenthesis_without_opening(source, position):
    err = error(source)
    assert where(err) == position
    assert err.message == "')' has no matching '('"


def test_closing_parenthesis_at_statement_start():
    err = error(")")
    assert where(err) == (1, 1, 0)
    assert "found ')'" in err.message


@pytest.mark.parametrize(
    "source, position", [("", (1, 1, 0)), ("# only a comment", (1, 17, 16)), ("\n\n  \n", (1, 1, 0)), (";;", (1, 1, 0))]
)
def test_empty_program(source, position):
    err = error(source)
    assert where(err) == position
    assert err.message.startswith("the program is empty")


@pytest.mark.parametrize("source, position", [("1 = 2", (1, 3, 2)), ("a + b = 2", (1, 7, 6)), ("a = b = 2", (1, 7, 6))])
def test_assignment_misuse(source, position):
    err = error(source)
    assert where(err) == position
    assert "'=' can only follow a single name" in err.message


@pytest.mark.parametrize(
    "source, position, bad",
    [
        ("1e", (1, 1, 0), "1e"),
        ("a = 2x", (1, 5, 4), "2x"),
        ("1e+", (1, 1, 0), "1e"),
        ("3.5abc * 2", (1, 1, 0), "3.5abc"),
        ("x\n 12_3", (2, 2, 3), "12_3"),
    ],
)
def test_bad_number(source, position, bad):
    err = error(source)
    assert where(err) == position
    assert err.message == f"'{bad}' is not a number"


def test_str_has_line_and_column():
    assert str(error("1 +")) == "1:4: expected a number, a name or '(' after '+', found the end of the program"


# --- limits -------------------------------------------------------------------------------


def test_source_length_limit():
    err = error("a" * 11, Limits(max_source_length=10))
    assert where(err) == (1, 11, 10)
    assert "11 characters" in err.message and "limit is 10" in err.message
    parse("a" * 10, Limits(max_source_length=10))


def test_default_source_length_is_100000():
    parse("a" + " " * 99_999)
    assert "limit is 100,000" in error("a" + " " * 100_000).message


def test_depth_limit_default_200():
    parse("(" * 199 + "1" + ")" * 199)
    err = error("(" * 201 + "1" + ")" * 201)
    assert where(err) == (1, 201, 200)
    assert err.message == "the expression nests deeper than 200 levels"


@pytest.mark.parametrize("opener", ["(", "-", "log(", "+"])
def test_ten_thousand_openers_give_a_clean_error(opener):
    limit = sys.getrecursionlimit()
    err = error(opener * 10_000 + "1")
    assert "nests deeper than 200" in err.message
    assert sys.getrecursionlimit() == limit


def test_configurable_depth_limit():
    assert "deeper than 3" in error("((((1))))", Limits(max_depth=3)).message
    parse("(((1)))", Limits(max_depth=3))


def test_limits_must_be_positive_integers():
    with pytest.raises(ValueError):
        Limits(max_depth=0)
    with pytest.raises(ValueError):
        Limits(max_nodes=1.5)
