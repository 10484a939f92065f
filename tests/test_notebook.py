"""app.notebook: show(L) and export(L, path) for a graph built in Python, checked through the HTML
they produce (the browser test in tests/browser/test_export_browser.py plays it)."""

import html
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.export.standalone import page_assets
from app.notebook import MARKER, PAGE_PARTS, export, show
from app.still import shown_number
from engine import Value


def chapter_2_graph():
    a = Value(2.0, label="a")
    b = Value(3.0, label="b")
    L = a * b + a
    L.label = "L"
    return L


def inner_document(shown) -> str:
    """The document the output's loader opens in its sandboxed iframe: its own part, with the
    page's code put back from the first output's copy (the same as page_assets())."""
    match = re.search(
        r'<script type="application/json" data-vg-document>(.*?)</script><script>', shown._repr_html_(), re.S
    )
    assert match, "the output holds its document as JSON for its loader"
    document = json.loads(match[1])
    for part in PAGE_PARTS:
        assert document.count(MARKER.format(part)) == 1
        document = document.replace(MARKER.format(part), page_assets()[part])
    return document


def stored_data(document: str) -> dict:
    match = re.search(r'<script type="application/json" id="vg-data">(.*?)</script>', document, re.S)
    return json.loads(match[1])


def test_show_holds_the_graph_with_its_gradients_and_needs_nothing_from_outside():
    document = inner_document(show(chapter_2_graph()))
    response = stored_data(document)["response"]
    by_label = {node["label"]: node for node in response["nodes"] if node["label"]}
    assert {label: node["grad"] for label, node in by_label.items()} == {"a": 4.0, "b": 2.0, "L": 1.0}
    assert len(response["nodes"]) == 4 and "layout" in response and response["trace"]["propagate"]
    assert not re.search(r"<(?:script|link|img)[^>]+(?:src|href)=", document)
    assert 'data-editor="hidden"' in document  # there is no program text for a Python graph


def test_options_reach_the_file_and_markup_in_labels_stays_data():
    x = Value(1.0, label="</script><b>x</b>")
    y = x * x
    document = inner_document(show(y, stage="propagate", table="shown", theme="dark"))
    assert 'data-stage="propagate"' in document and 'data-table="shown"' in document and 'data-theme="dark"' in document
    assert "<b>x</b>" not in document
    assert stored_data(document)["response"]["nodes"][0]["label"] == "</script><b>x</b>"


def test_export_writes_the_same_document(tmp_path):
    L = chapter_2_graph()
    path = export(L, tmp_path / "lesson.html")
    assert path.read_text(encoding="utf-8") == inner_document(show(L))


def test_only_values_and_programs_are_shown():
    with pytest.raises(TypeError, match="show\\(\\) and export\\(\\) take an engine.Value"):
        show(3.0)


TRAINING = (
    "w = Value(0.8)\nfor k in range(3):\n    loss = (w * 2 - 1) ** 2\n    w.grad = 0\n    loss.backward()\n"
    "    w.data -= 0.1 * w.grad\n    print(k, loss.data)"
)


def test_a_python_program_is_shown_with_its_runs_spans_and_printed_lines():
    document = inner_document(show(TRAINING, run=1))
    data = stored_data(document)
    response = data["response"]
    assert data["expression"] == TRAINING and 'data-editor="read-only"' in document
    assert [run["line"] for run in response["runs"]] == [5, 5, 5] and response["run"] == 1
    w, printed = 0.8, []
    for k in range(3):
        printed.append(f"{k} {(w * 2 - 1) ** 2}")
        w -= 0.1 * (2 * (w * 2 - 1) * 2)
    assert response["printed"] == printed
    assert response["nodes"][0]["span"] == {"line": 1, "column": 5, "end_line": 1, "end_column": 15}
    assert response["nodes"][-1]["scope"] == ["for k = 1"] and response["nodes"][-1]["label"] == "loss"


def records(shown) -> list:
    return stored_data(inner_document(shown))["response"]["nodes"]


def test_a_value_nobody_labelled_is_named_by_its_operation_on_its_inputs_names():
    a = Value(2.0, label="a")
    b = Value(3.0, label="b")
    L = a * b + a
    L.label = "L"
    assert [(node["label"], node["expr"]) for node in records(show(L))] == [
        ("a", ""),
        ("b", ""),
        (None, "a*b"),
        ("L", ""),
    ]
    shown = show(((((a + b) * -1) ** 2).tanh() * 2).exp() + a.log())  # -1: a constant, called by its value
    assert [node["expr"] for node in records(shown) if node["op"]] == [
        "a+b",
        "(a+b)*(-1)",
        "((a+b)*(-1))**2",
        "tanh(((a+b)*(-1))**2)",
        "tanh(((a+b)*(-1))**2)*2",
        "exp(tanh(((a+b)*(-1))**2)*2)",
        "log(a)",
        "exp(tanh(((a+b)*(-1))**2)*2)+log(a)",
    ]


def test_show_calls_unlabelled_values_by_the_callers_variables_and_names_comes_first():
    def cell():
        weight = Value(0.5)
        inputs = [Value(2.0), Value(-1.0)]
        total = weight * inputs[0] + inputs[1]
        return show(total), show(total, names={"w": weight}), total

    by_caller, by_names, total = cell()
    assert [(node["label"], node["expr"]) for node in records(by_caller)] == [
        ("weight", ""),
        ("inputs[0]", ""),
        (None, "weight*inputs[0]"),
        ("inputs[1]", ""),
        ("total", ""),
    ]
    assert records(by_names)[0]["label"] == "w"
    assert total.label is None and total.grad == 0  # the caller's graph is read, not changed


def test_the_search_for_names_runs_none_of_the_callers_code_and_stops_at_its_budget():
    from app.interop import held_names

    class Answers:  # like a mock: says it has every attribute
        def __getattr__(self, name):
            raise AssertionError(f"held_names looked up {name}")

    x = Value(1.0)
    assert held_names({"anything": Answers(), "_": x, "x": x}) == {id(x): "x"}
    many = {"rows": [[0.0] * 100 for _ in range(100)], "kept": [x]}
    assert held_names(many, budget=50) == {}  # the rows used the budget before kept[0] was reached
    assert held_names(many, budget=200) == {id(x): "kept[0]"}


def test_the_output_carries_a_still_picture_and_only_the_first_carries_the_pages_code():
    import xml.etree.ElementTree as ET

    from app import notebook

    notebook._carried.clear()  # as in a fresh kernel
    first, second = show(chapter_2_graph())._repr_mimebundle_(), show(chapter_2_graph())._repr_mimebundle_()
    picture = ET.fromstring(second["image/svg+xml"])  # a well-formed SVG document
    svg = "{http://www.w3.org/2000/svg}"
    names = [group.find(f"{svg}title").text for group in picture.iter(f"{svg}g")]
    assert names == ["a", "b", "a*b", "L"]
    assert [text.text for text in picture.iter(f"{svg}text") if text.get("class") == "g"] == [
        "grad 4",
        "grad 2",
        "grad 1",
        "grad 1",
    ]
    assert second["image/svg+xml"] in second["text/html"]  # shown where the loader does not run
    key = notebook.page_key()
    assert f'id="{key}"' in first["text/html"] and f'id="{key}"' not in second["text/html"]
    assert len(first["text/html"].encode()) > 500_000
    assert sum(len(part.encode()) for part in second.values()) < 100_000
    alone = show(chapter_2_graph(), alone=True)._repr_mimebundle_()
    assert f'id="{key}"' in alone["text/html"]


def test_a_program_with_its_own_value_class_carries_the_gradient_check():
    """Issue 20: show() of a program that defines its own Value (here with `=` where `+=` belongs)
    carries what /backward answers for it: expected_grad, gradient_check and the learner's walk."""
    program = (Path(__file__).parent / "own_classes" / "course_assign_not_accumulate.py").read_text()
    shown = show(program)
    response = stored_data(inner_document(shown))["response"]
    check = response["gradient_check"]
    assert check["status"] == "wrong" and "its grad holds only the last one" in check["message"]
    wrong = [node for node in response["nodes"] if node["id"] in check["wrong"]]
    assert wrong and all(node["grad"] != node["expected_grad"] for node in wrong)
    assert all("expected_grad" in node and node["span"] is not None for node in response["nodes"])
    assert response["learner_walk"][0]["node"] is None  # the seed, then the nodes' steps
    # The still picture (for previews that run no script) shows the message and the marks too.
    a = next(node for node in wrong if node["label"] == "a")
    assert f"✗ yours: {a['grad']:g}, expected: {a['expected_grad']:g}</text>" in shown.still
    assert html.escape(check["message"]) in shown.still


def test_the_still_picture_marks_a_wrong_local_gradient_as_the_page_does():
    program = (Path(__file__).parent / "own_classes" / "microgpt_wrong_pow.py").read_text()
    shown = show(program)
    (problem,) = stored_data(inner_document(shown))["response"]["gradient_check"]["local"]
    assert problem["stored"] == 3 and problem["expected"] == 6  # the page's checkNote words it from these
    assert "✗ local gradient: yours: 3, expected: 6</text>" in shown.still


def test_the_still_picture_of_a_graph_without_a_check_has_no_message_or_marks():
    still = show(chapter_2_graph()).still
    assert "✗" not in still and "yours:" not in still


def test_the_still_picture_writes_numbers_as_the_page_does():
    """app/still.py's shown_number and static/js/format.js's formatNumber, on the same numbers."""
    numbers = [0.0, -0.0, 2.0, -3.0, 0.1, -2.5, 1 / 3, 123456.789, 999999.0, 1e6, 1234567.0, 1.5e-7, -2.25e-5]
    numbers += [1e-4, 6.02e23, 5e-324, math.nan, math.inf, -math.inf]
    node = shutil.which("node")
    assert node, "node is not installed"
    format_js = (Path(__file__).resolve().parent.parent / "static" / "js" / "format.js").as_uri()
    script = (
        f"import {{ formatNumber }} from {json.dumps(format_js)};\n"
        f"const numbers = {json.dumps(numbers[:-3])}.concat([NaN, Infinity, -Infinity]);\n"
        "console.log(JSON.stringify(numbers.map((x) => formatNumber(x))));"
    )
    done = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [shown_number(x) for x in numbers] == json.loads(done.stdout)
