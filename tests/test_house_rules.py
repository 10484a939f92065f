"""House rules that keep the shape honest: the engine stands alone (standard library only,
nothing from the web layer), and no user text is ever run as Python."""

import ast
import pathlib
import re
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENGINE_FILES = sorted((ROOT / "engine").rglob("*.py"))
# The one module that may call the standard library's Python parser (issue 10): it checks the
# source length first and only builds a syntax tree; nothing is ever compiled or run by Python.
PYTHON_PARSER = ROOT / "engine" / "python" / "parse.py"
APP_FILES = sorted((ROOT / "app").rglob("*.py"))
WEB_PACKAGES = {"app", "fastapi", "pydantic", "starlette", "jinja2", "uvicorn", "httpx"}
RUNS_TEXT_AS_CODE = {"eval", "exec", "compile", "__import__"}


def imported_modules(path):
    """Top-level package of every import in a file, from its syntax tree (the file is our
    own source, read as data)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def forbidden_calls(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name) and function.id in RUNS_TEXT_AS_CODE:
                yield function.id, node.lineno
            elif isinstance(function, ast.Attribute) and function.attr in RUNS_TEXT_AS_CODE | {"parse", "literal_eval"}:
                owner = function.value
                owner_name = owner.id if isinstance(owner, ast.Name) else None
                if owner_name == "ast" or (function.attr in RUNS_TEXT_AS_CODE and owner_name != "re"):
                    yield f"{ast.unparse(function)}", node.lineno


def test_the_engine_is_there():
    names = {path.name for path in ENGINE_FILES}
    assert {"value.py", "parser.py", "evaluate.py", "trace.py", "nudge.py"} <= names


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: p.name)
def test_engine_imports_nothing_from_the_web(path):
    web = [(module, line) for module, line in imported_modules(path) if module in WEB_PACKAGES]
    assert web == [], f"{path.name} imports {web}"


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: p.name)
def test_engine_uses_the_standard_library_only(path):
    outside = [(module, line) for module, line in imported_modules(path) if module not in sys.stdlib_module_names]
    assert outside == [], f"{path.name} imports {outside}"


@pytest.mark.parametrize("path", ENGINE_FILES + APP_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_code_from_text(path):
    calls = [call for call in forbidden_calls(path) if not (path == PYTHON_PARSER and call[0] == "ast.parse")]
    assert calls == [], f"{path.relative_to(ROOT)} calls {calls}"


@pytest.mark.parametrize("path", ENGINE_FILES + APP_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_code_from_text_in_the_source_text(path):
    # belt and braces: also the plain text, so an alias or a getattr cannot hide a call
    found = [
        word
        for word in forbidden_words(path.read_text(encoding="utf-8"))
        if not (path == PYTHON_PARSER and word == "ast.parse")
    ]
    assert found == [], f"{path.relative_to(ROOT)} contains {found}"


def forbidden_words(text):
    text = text.replace("re.compile(", "")  # regular expressions are fine
    return re.findall(r"(?<![\w])(?:eval|exec|compile)\(|ast\.parse|literal_eval|__import__", text)


def test_only_the_python_front_end_parses_python():
    parsers = [
        path.relative_to(ROOT)
        for path in ENGINE_FILES + APP_FILES
        if "ast.parse" in forbidden_words(path.read_text(encoding="utf-8"))
    ]
    assert parsers == [PYTHON_PARSER.relative_to(ROOT)]
    text = PYTHON_PARSER.read_text(encoding="utf-8")
    assert text.index("max_source_length") < text.index("ast.parse(")  # the length is checked before parsing


def test_no_tests_inside_the_packages():
    for package in ("engine", "app"):
        stray = [p for p in (ROOT / package).rglob("*.py") if p.name.startswith("test_") or p.name == "conftest.py"]
        assert stray == [], stray


def test_forbidden_call_finder_finds_them(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import ast\nx = eval('1')\nexec('y = 2')\nast.parse('z')\nbuiltins.compile('1', 'f', "
        "'eval')\nre.compile('a')\n"
    )
    assert [name for name, _ in forbidden_calls(sample)] == ["eval", "exec", "ast.parse", "builtins.compile"]


def test_forbidden_word_finder_finds_them():
    text = "evaluate(p); _evaluate(x); re.compile('a')\nf = x.eval(s); exec (s); ast.parse(s); compile(s)"
    assert forbidden_words(text) == ["eval(", "ast.parse", "compile("]


def test_test_modules_have_unique_names():
    """pytest imports test modules by basename here: two test_x.py in different folders stop
    the whole suite from collecting."""
    names = [path.name for path in pathlib.Path(__file__).resolve().parent.rglob("test_*.py")]
    assert sorted(set(n for n in names if names.count(n) > 1)) == []


# app/ reads the engine through its public names only (Trace.children, Trace.local_grads, Value's
# data, grad, op, label, exponent), so the engine may change its insides without breaking the web
# layer. The one exception: app/interop.py reads other libraries' Values, whose graph fields are
# underscore names (micrograd's _prev and _op, the course's _children and _local_grads).
FOREIGN_FIELDS = {ROOT / "app" / "interop.py": {"_prev", "_op", "_children", "_local_grads"}}
ATTRIBUTE_BY_NAME = {"getattr", "hasattr", "setattr", "attrgetter"}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def engine_private_names() -> set:
    """Every underscore name the engine gives its objects and modules: self._x and cls._x,
    private functions, classes and module variables, and names written as strings (__slots__,
    attrgetter)."""
    names = set()
    for path in ENGINE_FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                names.add(node.value)
    return {name for name in names if private(name)}


ENGINE_PRIVATE = engine_private_names()


def private_reads(path):
    """(name, line) of every underscore attribute read of an object other than the module's own
    self or cls: obj._x, getattr(obj, "_x"), attrgetter("_x"). Dunder names (__name__) are public."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield node.attr, node.lineno
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if called in ATTRIBUTE_BY_NAME:
                for argument in node.args:
                    if (
                        isinstance(argument, ast.Constant)
                        and isinstance(argument.value, str)
                        and private(argument.value)
                    ):
                        yield argument.value, node.lineno


@pytest.mark.parametrize("path", APP_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_web_layer_reads_no_private_attribute_of_the_engine(path):
    allowed = FOREIGN_FIELDS.get(path, set())
    reads = [(name, line) for name, line in private_reads(path) if name in ENGINE_PRIVATE and name not in allowed]
    assert reads == [], f"{path.relative_to(ROOT)} reads private attributes {reads}: use the engine's public view"


def test_the_private_read_finder_finds_them(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "a = node._children\nb = self._lock\nc = getattr(v, '_local_grads')\nd = attrgetter('_serial')\n"
        "e = type(v).__name__\nf = [x._prev for x in xs]\nclass C:\n    def f(cls): return cls._made\n"
    )
    assert list(private_reads(sample)) == [("_children", 1), ("_local_grads", 3), ("_serial", 4), ("_prev", 6)]
    assert {"_children", "_local_grads", "_serial", "_warnings"} <= ENGINE_PRIVATE  # Value's fields, a trace helper
    assert not {"_getframe", "_transport"} & ENGINE_PRIVATE  # other libraries' privates are not the engine's


def test_nothing_but_the_app_factory_imports_a_route_module():
    """Routes sit at the top: they call the service, the rooms and the exports, never the other way
    round, so the pipeline cannot grow a second copy inside a route."""
    routes = ROOT / "app" / "routes"
    for path in APP_FILES:
        if path.parent == routes or path == ROOT / "app" / "main.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        package = ".".join(path.relative_to(ROOT).parent.parts)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                module = ".".join(part for part in (base, node.module or "") if part)
                names = [f"{module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            assert not any(name == "app.routes" or name.startswith("app.routes.") for name in names), (
                f"{path.relative_to(ROOT)} line {node.lineno} imports from app/routes/"
            )


@pytest.mark.parametrize("path", sorted((ROOT / "app" / "routes").glob("*.py")), ids=lambda p: p.name)
def test_routes_take_the_apps_objects_only_as_the_shared_dependencies(path):
    """Settings, the service, the rooms and the templates come to every route the same way: as the
    *Dep types of app/dependencies.py, never read from app.state or declared again in a route module."""
    text = path.read_text(encoding="utf-8")
    assert "app.state" not in text and "Depends(" not in text, path.name


def test_every_package_is_in_the_distribution():
    """pyproject.toml lists the packages one by one: a new one left out is missing from the wheel."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("app", "engine")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages"


def waited_predicates(path):
    """The text of each wait_for_function's predicate in a browser test, with its line: a literal,
    an f-string's text before its first field, or a module-level constant's value."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "wait_for_function":
            first = node.args[0]
            if isinstance(first, ast.JoinedStr):
                first = first.values[0]
            text = constants.get(first.id) if isinstance(first, ast.Name) else getattr(first, "value", None)
            yield text, node.lineno


@pytest.mark.parametrize("path", sorted((ROOT / "tests" / "browser").glob("*.py")), ids=lambda p: p.name)
def test_browser_waits_poll_a_function_never_an_expression(path):
    """Playwright evaluates a bare expression again at every poll with `eval`, which the page's
    Content-Security-Policy refuses after the first try: such a wait passes only when its first look
    succeeds. A function is evaluated once and then called."""
    for text, line in waited_predicates(path):
        assert isinstance(text, str) and re.match(r"\s*(async\s*)?\(", text), f"{path.name} line {line}: {text!r}"
