"""Python text to a checked syntax tree: the one place that calls the standard library's parser.

The source length is checked first (parsing costs grow with length), the parser's own failures
(SyntaxError, and MemoryError or RecursionError on hostile nesting) become ProgramError, and
the tree is then walked once, without recursion, to refuse every construct outside the subset
with a message that says what to write instead, and to bound its nesting so the compiler (which
recurses over the tree) stays far from Python's recursion limit."""

import ast
import bisect
import io
import re
import tokenize
import warnings
from itertools import accumulate

from ..errors import ProgramError
from ..limits import Limits
from ..syntax import Span


class Source:
    """The program text with the conversions from ast positions (1-based line, 0-based UTF-8
    byte column) to the engine's spans (character offsets and 1-based character columns)."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.split("\n")
        self.line_starts = [0]
        for line in self.lines[:-1]:
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)
        self._ends = {}  # _character_ends's, by line

    def column(self, line: int, byte_column: int) -> int:
        """0-based character column of a 0-based UTF-8 byte column (the characters wholly before it)."""
        if not 1 <= line <= len(self.lines):
            return 0
        ends = self._character_ends(line - 1)
        if ends is None:
            return min(byte_column, len(self.lines[line - 1]))
        return bisect.bisect_right(ends, byte_column)

    def _character_ends(self, index: int) -> list | None:
        """The UTF-8 byte just past each character of line `index`, or None where a byte is a
        character: made once a line, as every node on a long line asks for its columns."""
        if index not in self._ends:
            text = self.lines[index]
            self._ends[index] = None if text.isascii() else list(accumulate(map(_utf8_length, text)))
        return self._ends[index]

    def span(self, line: int, byte_column: int, length: int = 1) -> Span:
        line = max(1, min(line, len(self.lines)))
        return self.character_span(line, self.column(line, byte_column), length)

    def character_span(self, line: int, column: int, length: int = 1) -> Span:
        """The span at a 0-based character column of a line (both kept within the text)."""
        line = max(1, min(line, len(self.lines)))
        column = min(column, len(self.lines[line - 1]))
        offset = self.line_starts[line - 1] + column
        return Span(offset, line, column + 1, offset + length)

    def extent_span(self, extent) -> Span:
        """The span at the start of an extent (line, column, end_line, end_column), as a node's origin holds it."""
        return self.character_span(extent[0], extent[1] - 1)

    def node_span(self, node) -> Span:
        return self.span(getattr(node, "lineno", 1), getattr(node, "col_offset", 0))

    def extent(self, node):
        """(line, column, end_line, end_column) of a node, 1-based character columns, the end
        just past the last character, as the wire format carries it."""
        line, end_line = node.lineno, node.end_lineno or node.lineno
        return (
            line,
            self.column(line, node.col_offset) + 1,
            end_line,
            self.column(end_line, node.end_col_offset or 0) + 1,
        )

    def text_of(self, node, extent=None) -> str:
        line, column, end_line, end_column = extent or self.extent(node)
        if line == end_line:
            return self.lines[line - 1][column - 1 : end_column - 1]
        parts = [
            self.lines[line - 1][column - 1 :],
            *self.lines[line : end_line - 1],
            self.lines[end_line - 1][: end_column - 1],
        ]
        return "\n".join(parts)


def _utf8_length(character: str) -> int:
    return 1 if character < "\x80" else 2 if character < "\u0800" else 3 if character < "\U00010000" else 4


# The parser warns about some texts (an invalid escape, `1if x`): a program's text is not the
# server's code, so those warnings are not written to the server's log.
warnings.filterwarnings("ignore", category=SyntaxWarning, module="<program>")
warnings.filterwarnings("ignore", category=DeprecationWarning, module="<program>")

NOT_AVAILABLE = "valuegraph runs micrograd code, not arbitrary Python"
IMPORTABLE = {"math", "random", "os", "os.path"}  # `import x` (also `import x as y`)
FROM_IMPORTABLE = {
    "micrograd.engine": {"Value"},
    "micrograd.nn": {"Module", "Neuron", "Layer", "MLP"},
    "math": {"exp", "log", "sqrt", "tanh", "pi", "e"},
    "random": {"seed", "uniform", "random", "gauss", "choice", "choices", "shuffle"},
    "os": {"path"},
    "os.path": {"exists"},
}
# Modules that fetch what the program reads: accepted here and refused when the import runs, so a
# download behind `if not os.path.exists('input.txt'):` never runs when the file is given.
DOWNLOADING = "urllib"
IMPORT_HELP = "valuegraph offers math, random and os.path.exists (files come from Files); remove the import"

# Node types the interpreter runs; everything else is refused by name.
ALLOWED = {
    ast.Module,
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.For,
    ast.While,
    ast.If,
    ast.Break,
    ast.Continue,
    ast.Pass,
    ast.FunctionDef,
    ast.Return,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.alias,
    ast.BoolOp,
    ast.BinOp,
    ast.UnaryOp,
    ast.Lambda,
    ast.IfExp,
    ast.Dict,
    ast.ListComp,
    ast.GeneratorExp,
    ast.DictComp,
    ast.comprehension,
    ast.Compare,
    ast.Call,
    ast.keyword,
    ast.FormattedValue,
    ast.JoinedStr,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Name,
    ast.List,
    ast.Tuple,
    ast.Slice,
    ast.arguments,
    ast.arg,
    ast.Load,
    ast.Store,
    ast.And,
    ast.Or,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Pow,
    ast.FloorDiv,
    ast.Mod,
    ast.USub,
    ast.UAdd,
    ast.Not,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
    ast.Is,
    ast.IsNot,
    ast.Assert,
    ast.Nonlocal,
    ast.Set,
    ast.With,
    ast.withitem,
}
# The special methods a program's class may define; operators on its instances call them.
SPECIAL_METHODS = {
    "__init__",
    "__call__",
    "__repr__",
    *(f"__{side}{name}__" for side in ("", "r") for name in ("add", "sub", "mul", "truediv", "pow")),
    "__neg__",
    *(f"__{name}__" for name in ("eq", "ne", "lt", "le", "gt", "ge")),
}
REFUSED = {
    ast.BitXor: "`^` is bitwise xor in Python; for powers write `**`",
    ast.BitAnd: "`&` (bitwise and) is not available; for logic on numbers write `and`",
    ast.BitOr: "`|` (bitwise or) is not available; for logic on numbers write `or`",
    ast.LShift: "`<<` is not available; for powers of two write `2 ** n`",
    ast.RShift: "`>>` is not available; divide with `/`",
    ast.MatMult: "`@` (matrix product) is not available: valuegraph works on scalars; write the sum of products",
    ast.Invert: "`~` is not available; for a negative write `-x`",
    ast.SetComp: "set comprehensions are not available; use a list comprehension",
    ast.Starred: "`*` unpacking is only available in a call's arguments, as in f(*xs); index the list instead",
    ast.Global: "`global` is not available; pass the value as an argument and return the result",
    ast.Delete: "`del` is not available; assign a new value instead",
    ast.Try: "`try` is not available: errors end the program with their line and column",
    ast.Raise: "`raise` is not available: errors end the program with their line and column",
    ast.AsyncFunctionDef: "`async` is not available: " + NOT_AVAILABLE,
    ast.Await: "`await` is not available: " + NOT_AVAILABLE,
    ast.Yield: "`yield` is not available; build a list and return it",
    ast.YieldFrom: "`yield` is not available; build a list and return it",
    ast.NamedExpr: "`:=` is not available; assign on a line of its own",
    ast.AnnAssign: "annotated assignments are not available; write `x = ...` without the type",
    ast.Match: "`match` is not available; use `if/elif/else`",
}


def _check_fstrings(text: str, source: Source, limits: Limits) -> None:
    """Refuse an f-string of more fields than the limit, before ast.parse sees it: CPython 3.11's parser
    places each field by reading the string from its start, quadratic time in one call that holds the
    interpreter lock (32,000 fields: 0.76 s, the server's other requests waiting). The tokenizer reads the
    text only when it has more braces than one f-string may hold fields; what it cannot read, ast.parse
    reports."""
    most = limits.max_fstring_fields
    if text.count("{") <= most:
        return
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.STRING or "f" not in _STRING_PREFIX.match(token.string).group().lower():
                continue
            fields = token.string.count("{") - 2 * token.string.count("{{")
            if fields > most:
                line, column = token.start
                raise ProgramError(
                    f"this f-string has {fields:,} {{fields}}; the limit is {most:,} (build the text in parts, "
                    "as with ''.join(...))",
                    source.character_span(line, column),
                )
    except (tokenize.TokenError, SyntaxError):
        return


_STRING_PREFIX = re.compile("[A-Za-z]*")


def parse_python(text: str, limits: Limits = Limits()) -> tuple[ast.Module, Source]:
    if len(text) > limits.max_source_length:
        raise ProgramError(
            f"the program is {len(text):,} characters long; the limit is {limits.max_source_length:,}",
            Source(text[: limits.max_source_length + 1]).span(text[: limits.max_source_length].count("\n") + 1, 0),
        )
    unreadable = next((i for i, c in enumerate(text) if c == "\0" or "\ud800" <= c <= "\udfff"), None)
    if unreadable is not None:
        place = Source(text[:unreadable] + " ")
        line = text.count("\n", 0, unreadable) + 1
        raise ProgramError(
            "the program contains a character Python cannot read (a NUL or an unpaired surrogate)",
            place.span(line, len(place.lines[line - 1].encode("utf-8")) - 1),
        )
    # A lone carriage return ends a line for Python but not for the editor (or for spans): a blank.
    text = text.replace("\r\n", "\n\0").replace("\r", " ").replace("\n\0", "\r\n")
    source = Source(text)
    _check_fstrings(text, source, limits)
    try:
        tree = ast.parse(text, "<program>", "exec")  # the standard library's parser: builds a tree, runs nothing
    except SyntaxError as error:
        line = error.lineno or 1
        column = (error.offset or 1) - 1
        message = (error.msg or "invalid syntax").replace("(<program>, line", "(line")
        if message.startswith("expected ':'"):
            message = "expected ':' at the end of the line (as in `for i in range(3):`)"
        elif "int_max_str_digits" in message:  # CPython's advice names sys, which a program here has not
            message = "a whole number written with more than 4,300 digits; write it as a power (10 ** 4300) or a float"
            line, column = _long_literal(text) or (line, column)
        span = source.character_span(line, column if line <= len(source.lines) else 0)
        raise ProgramError(f"Python syntax error: {message}", span) from None
    except (MemoryError, RecursionError, ValueError):
        longest = max(range(len(source.lines)), key=lambda i: len(source.lines[i]))  # most likely the culprit
        raise ProgramError(
            f"the program nests too deeply for Python's parser: write at most {limits.max_depth} levels of nesting "
            "and at most about 2,500 operators in one expression (split a long sum over several lines with +=)",
            source.span(longest + 1, 0),
        ) from None
    check_tree(tree, source, limits)
    return tree, source


def _long_literal(text: str):
    """(line, column) of the first run of more than 4,300 digits in the text, or None."""
    found = re.search(r"\d{4301}", text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    return line, found.start() - (text.rfind("\n", 0, found.start()) + 1)


def check_tree(tree: ast.Module, source: Source, limits: Limits) -> None:
    """Refuse what the interpreter does not run, and bound nesting; an explicit stack, no recursion.
    A left-leaning chain of binary operators (a + b + c + ...) counts as one level: the compiler
    runs it as a loop."""
    stack = [(tree, 0, False, False)]
    spread = set()  # ids of the `*xs` arguments of calls: the one place `*` unpacking is run
    while stack:
        node, depth, in_loop, in_function = stack.pop()
        kind = type(node)
        if kind is ast.Call:
            spread.update(id(arg) for arg in node.args if type(arg) is ast.Starred)
        if kind not in ALLOWED and not (kind is ast.Starred and id(node) in spread):
            raise ProgramError(_refusal(node), source.node_span(node))
        if depth > limits.max_depth:
            raise ProgramError(f"the program nests deeper than {limits.max_depth} levels", source.node_span(node))
        if kind in (ast.Break, ast.Continue) and not in_loop:
            raise ProgramError(f"`{kind.__name__.lower()}` is only possible inside a loop", source.node_span(node))
        if kind is ast.Return and not in_function:
            raise ProgramError("`return` is only possible inside a function", source.node_span(node))
        if kind is ast.Nonlocal and not in_function:
            raise ProgramError("`nonlocal` is only possible inside a function", source.node_span(node))
        if kind in (ast.BinOp, ast.AugAssign, ast.UnaryOp) and type(node.op) in REFUSED:
            raise ProgramError(REFUSED[type(node.op)], _operator_span(node, source))
        _check_node(node, source)
        if kind in (ast.FunctionDef, ast.Lambda, ast.ClassDef):
            in_loop, in_function = False, kind is not ast.ClassDef
        looping = kind is ast.For or kind is ast.While
        for field in node._fields:
            value = getattr(node, field)
            children = value if type(value) is list else (value,)
            inner_loop = in_loop or (looping and field == "body")
            for child in children:
                if isinstance(child, ast.AST) and not isinstance(child, _LEAVES):
                    chained = kind is ast.BinOp and field == "left" and type(child) is ast.BinOp
                    stack.append((child, depth if chained else depth + 1, inner_loop, in_function))


def _operator_span(node, source: Source) -> Span:
    """Where the operator of a binary operation is written: the first character after the left
    operand (and its closing parentheses) that is not blank."""
    if type(node) is not ast.BinOp:
        return source.node_span(node)
    line, column = node.left.end_lineno, source.column(node.left.end_lineno, node.left.end_col_offset)
    text = source.lines[line - 1]
    while column < len(text) and text[column] in " \t)":
        column += 1
    if column >= len(text):
        return source.node_span(node)
    return source.character_span(line, column)


def _refusal(node) -> str:
    kind = type(node)
    if kind in REFUSED:
        return REFUSED[kind]
    name = kind.__name__
    return f"`{name}` is not part of the Python valuegraph runs: {NOT_AVAILABLE}"


_LEAVES = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)  # checked with their parent
_CHECKED = {
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.Call,
    ast.comprehension,
    ast.FormattedValue,
}


def is_downloading(module: str) -> bool:
    return module == DOWNLOADING or module.startswith(DOWNLOADING + ".")


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _is_super(node) -> bool:
    """`super(...)`: its special methods (`super().__init__(...)`) may be named."""
    return type(node) is ast.Call and type(node.func) is ast.Name and node.func.id == "super"


def _check_node(node, source: Source) -> None:
    kind = type(node)
    if kind not in _CHECKED:
        return
    if kind is ast.Name and _is_dunder(node.id) and node.id != "__slots__":
        raise ProgramError(f"names like `{node.id[:40]}` are not available: {NOT_AVAILABLE}", source.node_span(node))
    if (
        kind is ast.Attribute
        and node.attr.startswith("__")
        and not (_is_super(node.value) and node.attr in SPECIAL_METHODS)
    ):
        raise ProgramError(
            f"attributes like `.{node.attr[:40]}` are not available: {NOT_AVAILABLE}", source.node_span(node)
        )
    if kind is ast.Constant and not isinstance(node.value, (int, float, str, bool)) and node.value is not None:
        what = {complex: "complex numbers", bytes: "bytes"}.get(type(node.value), "`...`")
        raise ProgramError(f"{what} are not available: valuegraph works on real numbers", source.node_span(node))
    if kind is ast.Import:
        for alias in node.names:
            if alias.name not in IMPORTABLE and not is_downloading(alias.name):
                raise ProgramError(
                    f"`import {alias.name[:40]}` is not available: {IMPORT_HELP}", source.node_span(node)
                )
    if kind is ast.ImportFrom:
        module = "." * node.level + (node.module or "")
        if is_downloading(module):
            return
        if module not in FROM_IMPORTABLE:
            raise ProgramError(
                f"`from {module[:40]} import ...` is not available: {IMPORT_HELP}", source.node_span(node)
            )
        for alias in node.names:
            if alias.name not in FROM_IMPORTABLE[module]:
                shown = ", ".join(sorted(FROM_IMPORTABLE[module]))
                raise ProgramError(
                    f"`from {module} import {alias.name[:40]}` is not available; {module} offers {shown}",
                    source.node_span(node),
                )
    if kind is ast.FunctionDef or kind is ast.Lambda:
        args = node.args
        if args.posonlyargs:
            raise ProgramError(
                "positional-only parameters (`/`) are not available; list the parameters by name",
                source.node_span(node),
            )
        if kind is ast.FunctionDef and node.decorator_list:
            raise ProgramError("decorators are not available; call the function yourself", source.node_span(node))
        if kind is ast.FunctionDef and node.name.startswith("__") and node.name not in SPECIAL_METHODS:
            raise ProgramError(
                f"`{node.name[:40]}` is not available: the special methods a class may define are "
                + ", ".join(sorted(SPECIAL_METHODS)),
                source.node_span(node),
            )
    if kind is ast.ClassDef:
        if node.keywords or node.decorator_list:
            raise ProgramError("class keywords and decorators are not available", source.node_span(node))
    if kind is ast.comprehension and node.is_async:
        raise ProgramError(REFUSED[ast.Await], source.node_span(node))
    if kind is ast.FormattedValue and node.format_spec is not None:
        parts = node.format_spec.values
        if not all(type(part) is ast.Constant for part in parts):
            raise ProgramError("a format specification must be written out, as in {x:.4f}", source.node_span(node))
