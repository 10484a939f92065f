"""The embed's page and options, the self-contained file (its bundle, its endpoint), and the
`valuegraph export` command."""

import io
import json
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from packaging.requirements import Requirement

from app.cli import main as cli
from app.config import Settings
from app.export.images import ExportError, render_image
from app.export.options import EmbedOptions
from app.export.standalone import script_bundle, standalone_html
from app.main import create_app
from app.schemas import BackwardRequest
from app.service import exported
from engine import Limits

PROGRAM = "a = 2; b = 3; L = a * b + a"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def stored_data(document: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="vg-data">(.*?)</script>', document, re.S)[1])


def test_embed_may_be_framed_anywhere_and_writes_its_options_on_the_root(client):
    answer = client.get(
        "/embed",
        params={
            "expression": PROGRAM,
            "stage": "sort",
            "step": "2",
            "autoplay": "1",
            "speed": "4",
            "controls": "none",
            "editor": "read-only",
            "theme": "dark",
            "table": "shown",
        },
    )
    assert answer.status_code == 200
    assert answer.headers["content-security-policy"].endswith("frame-ancestors *")
    assert "x-frame-options" not in answer.headers
    assert "unsafe-inline" not in answer.headers["content-security-policy"]
    page = answer.text
    for attribute in (
        'data-stage="sort"',
        'data-step="2"',
        'data-autoplay="true"',
        'data-speed="4"',
        'data-controls="none"',
        'data-editor="read-only"',
        'data-table="shown"',
        'data-theme="dark"',
    ):
        assert attribute in page
    assert re.search(r"<textarea[^>]* readonly", page)
    assert not re.search(r"<script>|<script type=\"module\">", page)  # no inline script under the CSP


def test_unknown_option_values_take_the_defaults():
    options = EmbedOptions.from_query(
        {"stage": "x", "step": "-3", "speed": "7", "controls": "<b>", "theme": "blue", "autoplay": "maybe"}
    )
    assert options == EmbedOptions()
    assert EmbedOptions.from_query({"step": "12", "speed": "0.5"}) == EmbedOptions(step=12, speed="0.5")


def test_the_bundle_holds_each_module_once_with_no_import_or_export_left():
    bundle = script_bundle()
    names = re.findall(r'^modules\["([\w-]+\.js)"\] = ', bundle, re.M)
    assert names[-1] == "embed.js" and "main.js" in names and len(names) == len(set(names))
    assert names.index("format.js") < names.index("timeline.js") < names.index("render.js") < names.index("main.js")
    assert not re.search(r"^\s*(import|export)\s", bundle, re.M)


def test_the_standalone_file_inlines_everything():
    document = standalone_html(exported(BackwardRequest(expression=PROGRAM), Limits()), expression=PROGRAM)
    assert not re.search(r"<(?:script|link|img|iframe)[^>]+(?:src|href)=", document)
    assert document.count("<script") == 3 and "<style>" in document
    data = stored_data(document)
    assert data["expression"] == PROGRAM and [n["grad"] for n in data["response"]["nodes"]] == [4.0, 2.0, 1.0, 1.0]
    assert 'data-editor="read-only"' in document  # nothing can rerun a program offline
    assert 'data-standalone="true"' in document


def test_the_standalone_file_has_no_job_controls_and_says_jobs_need_the_server():
    """Issue 21: a job needs the server, which the file has not: no control starts one, and its
    legend says what needs the server."""
    document = standalone_html(exported(BackwardRequest(expression=PROGRAM), Limits()), expression=PROGRAM)
    assert 'data-vg="run-job"' not in document and 'data-vg="job"' not in document
    assert 'data-vg="files-text"' not in document
    needs_server = re.search(r'<p class="vg-muted" data-vg="needs-server">(.*?)</p>', document, re.S)
    assert needs_server and "need the valuegraph server" in " ".join(needs_server[1].split())
    assert "as a job" in needs_server[1] and "Files panel" in needs_server[1]


def test_export_endpoint_post_and_get(client):
    answer = client.post("/export/html?controls=minimal", json={"expression": "y = x * x", "variables": {"x": 3}})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    assert answer.headers["content-disposition"] == 'attachment; filename="valuegraph.html"'
    data = stored_data(answer.text)
    assert data["variables"] == "x = 3" and data["response"]["nodes"][0]["grad"] == 6.0
    assert 'data-controls="minimal"' in answer.text
    answer = client.get("/export/html", params={"expression": PROGRAM, "variant": "assign"})
    assert answer.status_code == 200 and stored_data(answer.text)["response"]["variant"] == "assign"


def test_an_export_lays_out_the_collapsed_views_it_is_given_for_the_file(client):
    """The file has no server to ask POST /layout: the views the page sends are laid out into it,
    each exactly as POST /layout lays it out, and none is stored when none is sent."""
    views = [{"children": [[], [], [0, 1], [2, 0]]}, {"children": [[], [0], [1, 0]]}]
    answer = client.post("/export/html", json={"expression": PROGRAM, "views": views})
    assert answer.status_code == 200, answer.text
    stored = stored_data(answer.text)["views"]
    assert [view["children"] for view in stored] == [view["children"] for view in views]
    assert [view["layout"] for view in stored] == [client.post("/layout", json=view).json() for view in views]
    assert "views" not in stored_data(client.post("/export/html", json={"expression": PROGRAM}).text)


def test_the_views_of_an_export_are_held_to_the_node_limit_together():
    small = TestClient(create_app(Settings(max_nodes=6)))
    view = {"children": [[], [], [0, 1], [2, 0]]}
    assert small.post("/export/html", json={"expression": PROGRAM, "views": [view]}).status_code == 200
    refused = small.post("/export/html", json={"expression": PROGRAM, "views": [view, view]})
    assert refused.status_code == 400
    assert refused.json()["detail"]["message"] == (
        "the views have 8 nodes together, more than the limit of 6 (VALUEGRAPH_MAX_NODES)"
    )
    not_a_view = small.post("/export/scorm", json={"expression": PROGRAM, "views": [{"children": [[1], []]}]})
    assert not_a_view.status_code == 422 and "every child's id must be below its parent's" in not_a_view.text


SEEDED = """import random
x = Value(random.uniform(-1, 1), label='x')
for k in range(4):
    y = x
    for i in range(random.choice([1, 2, 3]) + k):
        y = y * 1.5
    y.backward()
"""


def test_every_export_of_a_python_program_keeps_its_seed_and_run(client):
    """The file, SCORM (POST body or GET query) and the notebook replay the graph /backward answers
    for the same seed and run, not seed 0 and the last run."""
    import zipfile

    from app.notebook import show

    fields = {"expression": SEEDED, "seed": 5, "run": 2}
    expected = client.post("/backward", json={**fields, "layout": True}).json()
    default = client.post("/backward", json={"expression": SEEDED, "layout": True}).json()
    assert expected["run"] == 2 and expected["nodes"] != default["nodes"]
    query = {**fields, "run": "2", "seed": "5"}
    documents = {
        "POST /export/html": client.post("/export/html", json=fields).text,
        "GET /export/html": client.get("/export/html", params=query).text,
        "notebook": show(SEEDED, seed=5, run=2).document,
    }
    for name, answer in (
        ("POST", client.post("/export/scorm", json=fields)),
        ("GET", client.get("/export/scorm", params=query)),
    ):
        documents[f"{name} /export/scorm"] = zipfile.ZipFile(io.BytesIO(answer.content)).read("index.html").decode()
    for name, document in documents.items():
        stored = stored_data(document)["response"]
        assert (stored["nodes"], stored["run"], stored["layout"]) == (expected["nodes"], 2, expected["layout"]), name


def test_export_endpoint_reports_program_errors_like_the_api(client):
    answer = client.post("/export/html", json={"expression": "a = ("})
    assert answer.status_code == 400 and answer.json()["detail"]["line"] == 1


def test_cli_html_and_json_from_text_file_and_stdin(tmp_path, monkeypatch):
    html_path = tmp_path / "lesson.html"
    assert cli(["export", PROGRAM, "-o", str(html_path), "--stage", "propagate"]) == 0
    document = html_path.read_text(encoding="utf-8")
    assert stored_data(document)["expression"] == PROGRAM and 'data-stage="propagate"' in document

    program_file = tmp_path / "chain.vg"
    program_file.write_text("x = 3\ny = x ** 2\n", encoding="utf-8")
    json_path = tmp_path / "chain.json"
    assert cli(["export", str(program_file), "-o", str(json_path)]) == 0
    assert [n["grad"] for n in json.loads(json_path.read_text())["nodes"]][0] == 6.0

    monkeypatch.setattr(sys, "stdin", io.StringIO("a = 1; b = log(a - 1)"))
    assert cli(["export", "-", "-o", str(json_path)]) == 0
    nodes = json.loads(json_path.read_text())["nodes"]
    assert "-Infinity" in [n["data"] for n in nodes]  # the wire format's spelling


def test_cli_exports_python_programs_with_seed_and_run(tmp_path):
    program_file = tmp_path / "training.py"
    program_file.write_text(
        "import random\nw = Value(random.uniform(-1, 1))\nfor k in range(3):\n    loss = (w - 2) ** 2\n    w.grad = "
        "0\n    loss.backward()\n    w.data -= 0.1 * w.grad\n",
        encoding="utf-8",
    )
    json_path = tmp_path / "training.json"
    assert cli(["export", str(program_file), "-o", str(json_path), "--seed", "7", "--run", "0"]) == 0
    response = json.loads(json_path.read_text())
    assert response["run"] == 0 and [run["line"] for run in response["runs"]] == [6, 6, 6]
    import random

    assert response["nodes"][0]["data"] == random.Random(7).uniform(-1, 1)
    assert response["nodes"][0]["span"]["line"] == 2 and response["nodes"][-1]["scope"] == ["for k = 0"]
    html_path = tmp_path / "training.html"
    assert cli(["export", str(program_file), "-o", str(html_path), "--run", "2"]) == 0
    stored = stored_data(html_path.read_text(encoding="utf-8"))["response"]
    assert stored["run"] == 2 and len(stored["runs"]) == 3 and "expr" in stored["nodes"][0]
    with pytest.raises(SystemExit, match="run 5 does not exist"):
        cli(["export", str(program_file), "-o", str(json_path), "--run", "5"])


def test_cli_refuses_unknown_kinds_and_reports_program_errors(tmp_path):
    with pytest.raises(SystemExit, match=r"\.html, \.json, \.svg or \.png"):
        cli(["export", PROGRAM, "-o", str(tmp_path / "x.pdf")])
    with pytest.raises(SystemExit, match=r"line 1, column \d+"):
        cli(["export", "a = (", "-o", str(tmp_path / "x.html")])


@pytest.mark.parametrize(
    ("program", "arguments", "message"),
    [
        (PROGRAM, ["--variant", "backwards"], "valuegraph export: unknown variant 'backwards' (one of "),
        (
            PROGRAM,
            ["--graph", "mymodel:loss"],
            "valuegraph export: give a program or --graph MODULE:NAME (one of the two)",
        ),
        (
            None,
            ["--graph", "mymodel"],
            "valuegraph export: --graph takes MODULE:NAME, such as mymodel:loss, not 'mymodel'",
        ),
        (None, ["--graph", "no_such_module_here:loss"], "valuegraph export: cannot import 'no_such_module_here': "),
        (None, ["--graph", "math:loss"], "valuegraph export: math has no 'loss'"),
        (None, ["--graph", "math:pi"], "valuegraph export: math:pi: "),
    ],
    ids=["variant", "program and graph", "no name", "no module", "no attribute", "not a value"],
)
def test_cli_says_what_is_wrong_with_its_arguments(tmp_path, program, arguments, message):
    with pytest.raises(SystemExit) as refused:
        cli(["export", *([program] if program else []), "-o", str(tmp_path / "x.html"), *arguments])
    assert str(refused.value.code).startswith(message), refused.value.code
    assert not (tmp_path / "x.html").exists()


def test_openapi_documents_export_html_with_its_parameters(client):
    paths = client.get("/openapi.json").json()["paths"]
    for method in ("get", "post"):
        operation = paths["/export/html"][method]
        assert "text/html" in operation["responses"]["200"]["content"]
        assert {"400", "413", "422", "503"} <= set(operation["responses"])
        parameters = {parameter["name"]: parameter for parameter in operation["parameters"]}
        assert {"stage", "step", "autoplay", "speed", "controls", "editor", "theme", "table"} <= set(parameters)
        assert parameters["controls"]["schema"]["examples"] == ["full", "minimal", "none"]
        assert (method == "get") == ("expression" in parameters)  # POST carries the program in its body
    # /backward's body, and beside a graph the TypeScript/JavaScript that made it (`source`).
    assert paths["/export/html"]["post"]["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ExportRequest"
    }


def test_without_playwright_the_error_names_the_export_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # as if it were not installed
    with pytest.raises(ExportError, match=re.escape("pip install 'valuegraph[export]'")):
        render_image("<html></html>", "svg")


def test_the_export_extra_installs_playwright():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert [Requirement(text).name for text in extras["export"]] == ["playwright"]


def test_cli_svg_and_png_through_headless_chromium(tmp_path):
    # A separate process, as a user runs it (Playwright's sync API keeps its own event loop).
    for kind in ("svg", "png"):
        out = tmp_path / f"lesson.{kind}"
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", "export", PROGRAM, "-o", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    svg = ET.parse(tmp_path / "lesson.svg").getroot()
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert {"a", "b", "L", "8", "4"} <= set(texts)  # at the end of the walk a.grad is 4
    png = (tmp_path / "lesson.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_the_file_inlines_every_stylesheet_and_script_the_live_embed_links():
    """One list (templates/macros.html) for both: what the live embed links, the file holds."""
    from app.assets import STATIC_DIR
    from app.export.standalone import page_assets

    with TestClient(create_app()) as client:
        live = client.get("/embed?expression=a%3D1").text
        document = client.post("/export/html", json={"expression": "a = 1"}).text
    linked = re.findall(r'<link rel="stylesheet" href="/static/([^"?]+)', live)
    scripts = re.findall(r'<script[^>]* src="/static/([^"?]+)', live)
    assert "css/code-graph.css" in linked and "css/classroom.css" in linked and len(scripts) == 2
    for stylesheet in linked:
        assert (STATIC_DIR / stylesheet).read_text(encoding="utf-8") in document, stylesheet
    d3, entry = scripts
    assert page_assets()["d3"] in document and "vendor/d3" in d3
    assert entry == "js/embed.js" and 'modules["embed.js"]' in document
