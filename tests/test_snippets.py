"""The docs' snippets that write a learner's own Value graph as valuegraph's JSON, one per
language, each run as the docs show it: spliced into a Value class of our own in the course's
shape, compiled and run by the language's own tools (Debian's mono for C#, node with sucrase
stripping the types for TypeScript, javac and java, python3), its output posted to /backward as
`graph`. The class's correct backward gives status ok; with `=` for `+=` the check says wrong and
names a, the first wrong node."""

import json
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.anyio

SNIPPETS = pathlib.Path(__file__).parent / "snippets"  # our classes in the course's shape, and their programs
DOCS = pathlib.Path(__file__).parent.parent / "docs"
SHOWN = DOCS / "snippets"  # the snippets exactly as docs/learners.md shows them
MARKER = "// valuegraph: the snippet goes here\n"
SUCRASE_HOOK = SNIPPETS.parent / "node_modules" / "sucrase" / "register" / "ts"
RUN_SECONDS = 180  # a compiler on a loaded machine


def tool(name: str, install: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed: {install} (the README's test command does)"
    return path


def spliced(template: pathlib.Path, snippet: pathlib.Path, marker=MARKER) -> str:
    """The template with the snippet in place of its marker line, indented as the marker is
    (the Python snippet is kept as a plain function, so that it is a valid file of its own)."""
    text = template.read_text()
    indented_marker = next(line for line in text.splitlines(keepends=True) if line.strip() == marker.strip())
    indent = indented_marker[: len(indented_marker) - len(indented_marker.lstrip())]
    method = snippet.read_text()
    if not method.startswith(indent):
        method = textwrap.indent(method, indent)
    return text.replace(indented_marker, method)


def run(command, cwd) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=RUN_SECONDS)
    assert done.returncode == 0, f"{command[0]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def csharp_graphs(tmp_path, broken: bool) -> list:
    source = spliced(SNIPPETS / "csharp" / "Value.cs", SHOWN / "ToGraphJson.cs")
    if broken:
        source = replaced(source, "v._inputs[j].Grad += v._localGrads[j] * v.Grad;")
    (tmp_path / "Value.cs").write_text(source)
    shutil.copy(SNIPPETS / "csharp" / "Program.cs", tmp_path)
    mcs = tool("mcs", "apt-get install -y mono-mcs mono-runtime")
    run([mcs, "-out:chapter2.exe", "Value.cs", "Program.cs"], tmp_path)
    return outputs(run([tool("mono", "apt-get install -y mono-runtime"), "chapter2.exe"], tmp_path))


def typescript_graphs(tmp_path, broken: bool) -> list:
    source = spliced(SNIPPETS / "typescript" / "value.ts", SHOWN / "toGraphJson.ts")
    if broken:
        source = replaced(source, "input.grad += v.localGrads[i] * v.grad;")
    (tmp_path / "value.ts").write_text(source)
    shutil.copy(SNIPPETS / "typescript" / "main.ts", tmp_path)
    assert SUCRASE_HOOK.with_suffix(".js").exists() or SUCRASE_HOOK.is_dir(), (
        "sucrase is not installed: npm ci --prefix tests (the README's test command does)"
    )
    return outputs(run([tool("node", "apt-get install -y nodejs"), "-r", str(SUCRASE_HOOK), "main.ts"], tmp_path))


def java_graphs(tmp_path, broken: bool) -> list:
    source = spliced(SNIPPETS / "java" / "Value.java", SHOWN / "ToGraphJson.java")
    if broken:
        source = replaced(source, "v.children[j].grad += v.localGrads[j] * v.grad;")
    (tmp_path / "Value.java").write_text(source)
    run([tool("javac", "apt-get install -y default-jdk-headless"), "Value.java"], tmp_path)
    return outputs(run([tool("java", "apt-get install -y default-jdk-headless"), "-cp", ".", "Value"], tmp_path))


def python_graphs(tmp_path, broken: bool) -> list:
    source = spliced(
        SNIPPETS / "python" / "value.py",
        SHOWN / "to_graph_json.py",
        "# valuegraph: the snippet goes here\n",
    )
    if broken:
        source = replaced(source, "child.grad += local * v.grad")
    (tmp_path / "value.py").write_text(source)
    return outputs(run([sys.executable, "value.py"], tmp_path))


def replaced(source: str, line: str) -> str:
    assert source.count(line) == 1
    return source.replace(line, line.replace("+=", "="))


def outputs(stdout: str) -> list:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


LANGUAGES = {
    "csharp": csharp_graphs,
    "typescript": typescript_graphs,
    "java": java_graphs,
    "python": python_graphs,
}


@pytest.mark.parametrize("language", LANGUAGES)
async def test_snippet_writes_a_graph_the_check_finds_ok(client, tmp_path, language):
    graph, *more = LANGUAGES[language](tmp_path, broken=False)
    assert graph["language"] == language
    response = await client.post("/backward", json={"graph": graph})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["gradient_check"]["status"] == "ok", answer["gradient_check"]
    assert {node["label"]: node["grad"] for node in answer["nodes"]} == {"a": 4.0, "b": 2.0, "c": 1.0, "L": 1.0}
    for extra in more:  # non-finite numbers, as the strings valuegraph reads
        extra_answer = (await client.post("/backward", json={"graph": extra})).json()
        assert extra_answer["nodes"][1]["data"] == "-Infinity"
        assert extra_answer["gradient_check"]["status"] == "ok"


@pytest.mark.parametrize("language", LANGUAGES)
async def test_snippet_on_a_class_with_assign_for_add_is_wrong_at_a(client, tmp_path, language):
    graph, *_ = LANGUAGES[language](tmp_path, broken=True)
    answer = (await client.post("/backward", json={"graph": graph})).json()
    check = answer["gradient_check"]
    a = next(node["id"] for node in answer["nodes"] if node["label"] == "a")
    assert check["status"] == "wrong" and check["first"] == a and check["wrong"] == [a]
    assert check["message"].startswith("a is used by 2 nodes; its grad holds only the last one (yours 3, expected 4)")


@pytest.mark.parametrize("snippet", ["ToGraphJson.cs", "toGraphJson.ts", "to_graph_json.py", "ToGraphJson.java"])
def test_the_docs_show_each_snippet_as_it_is_run(snippet):
    """docs/learners.md shows each file of docs/snippets/ whole, in a code block of its own."""
    text = (SHOWN / snippet).read_text()
    page = (DOCS / "learners.md").read_text()
    assert f"\n{text}```\n" in page, f"docs/learners.md does not show docs/snippets/{snippet} as it is"
