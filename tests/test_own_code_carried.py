"""TypeScript and JavaScript run in the learner's browser, carried where the page's programs go: the
self-contained file and the SCORM package hold the graph the code made beside the code (shown, never
run), a Teach live room carries the code with its graph, and the server runs neither (issue 25)."""

import copy
import io
import json
import re
import warnings
import zipfile

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.schemas import CHAPTER_2_GRAPH

# Text the server could not run as a program of its own: that it is shown, and never parsed, is the point.
SOURCE = 'const a = new Value(2, [], [], "a");\nconst L: Value = a.mul(b).add(a);\nshow(L); // <script>\n'
GRAPH = {**CHAPTER_2_GRAPH, "language": "typescript"}


@pytest.fixture
def client():
    with TestClient(create_app(Settings(max_source_length=500))) as c:
        yield c


def stored_data(document: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="vg-data">(.*?)</script>', document, re.S)[1])


def test_the_file_holds_the_graph_and_shows_the_code_that_made_it(client):
    answer = client.post("/export/html?step=3", json={"graph": GRAPH, "source": SOURCE})
    assert answer.status_code == 200, answer.text
    data = stored_data(answer.text)
    assert data["expression"] == SOURCE
    assert data["language"] == "typescript"
    assert [node["data"] for node in data["response"]["nodes"]] == [2, 3, 6, 8]
    assert data["response"]["gradient_check"]["status"] == "ok"
    assert "<script>\n" not in answer.text.split('id="vg-data">')[1].split("</script>")[0]  # escaped in the data


def test_the_file_links_each_node_to_the_line_the_page_found_for_it(client):
    graph = copy.deepcopy(GRAPH)
    for node, line in zip(graph["nodes"], (1, 1, 2, 2)):
        node["span"] = {"line": line, "column": 1, "end_line": line, "end_column": 20}
    graph["nodes"][1]["span"] = {"line": "1", "column": 1, "end_line": 1, "end_column": 20}  # not a span: left out
    data = stored_data(client.post("/export/html", json={"graph": graph, "source": SOURCE}).text)
    assert [node["span"] for node in data["response"]["nodes"]] == [
        {"line": 1, "column": 1, "end_line": 1, "end_column": 20},
        None,
        {"line": 2, "column": 1, "end_line": 2, "end_column": 20},
        {"line": 2, "column": 1, "end_line": 2, "end_column": 20},
    ]


def test_a_graph_alone_makes_a_file_without_code_or_language(client):
    data = stored_data(client.post("/export/html", json={"graph": GRAPH}).text)
    assert data["expression"] == ""
    assert "language" not in data


def test_the_code_comes_only_with_its_graph_and_within_the_source_limit(client):
    answer = client.post("/export/html", json={"expression": "a = 1", "source": SOURCE})
    assert answer.status_code == 422
    assert "source is the code that made `graph`" in answer.text
    too_long = client.post("/export/html", json={"graph": GRAPH, "source": "x" * 501})
    assert too_long.status_code == 400
    assert "source is 501 characters long; the limit is 500" in too_long.json()["detail"]["message"]


def test_the_scorm_package_carries_the_code_and_its_graph(client):
    answer = client.post("/export/scorm", json={"graph": GRAPH, "source": SOURCE})
    assert answer.status_code == 200, answer.text
    with zipfile.ZipFile(io.BytesIO(answer.content)) as package:
        page = next(name for name in package.namelist() if name.endswith(".html"))
        data = stored_data(package.read(page).decode("utf-8"))
    assert data["expression"] == SOURCE and data["language"] == "typescript"


# ---- Teach live ----


def new_room(client, **state):
    return client.post("/rooms", json={"state": {"expression": SOURCE, **state}})


def test_a_room_carries_the_code_and_its_graph_and_checks_steps_against_the_graphs_walk(client):
    answer = new_room(client, language="typescript", graph=GRAPH, step=13)  # chapter 2's walk: steps 0 to 13
    assert answer.status_code == 200, answer.text
    room = answer.json()
    with client.websocket_connect("/rooms/ws") as student:
        student.send_json({"type": "join", "code": room["code"]})
        welcome = student.receive_json()
    state = welcome["state"]
    assert state["expression"] == SOURCE and state["language"] == "typescript"
    assert state["graph"]["nodes"][2] == CHAPTER_2_GRAPH["nodes"][2]
    assert state["stage"] == "propagate"
    past = new_room(client, language="typescript", graph=GRAPH, step=14)
    assert past.json()["detail"]["message"] == "state.step is 14, past the walk's last step 13"


def test_a_rooms_graph_keeps_non_finite_numbers_as_json_carries_them(client):
    graph = copy.deepcopy(GRAPH)
    graph["nodes"][0]["grad"] = "NaN"
    answer = new_room(client, language="javascript", graph=graph)
    assert answer.status_code == 200, answer.text
    with client.websocket_connect("/rooms/ws") as student:
        student.send_json({"type": "join", "code": answer.json()["code"]})
        text = student.receive_text()
    assert json.loads(text)["state"]["graph"]["nodes"][0]["grad"] == "NaN"  # strict JSON: no bare NaN


def test_a_room_starts_with_the_graph_and_takes_it_only_with_the_language(client):
    started = new_room(client, language="typescript")
    assert started.status_code == 400
    assert (
        started.json()["detail"]["message"] == "state.graph is missing: with `language`, give the graph the code made"
    )
    answer = new_room(client, graph=GRAPH)
    assert answer.status_code == 422
    assert "`graph` is the graph the teacher's own code made: give it with `language`" in answer.text


def error_for(teacher) -> str:
    """The next error the teacher is sent (the follower counts and its own states pass by)."""
    for _ in range(20):
        message = teacher.receive_json()
        if message["type"] == "error":
            return message["message"]
    raise AssertionError("no error message")


def test_moves_that_leave_the_graph_out_keep_the_rooms_graph_of_that_code(client):
    room = new_room(client, language="typescript", graph=GRAPH).json()
    with client.websocket_connect("/rooms/ws") as teacher, client.websocket_connect("/rooms/ws") as student:
        teacher.send_json({"type": "join", "code": room["code"], "token": room["token"]})
        welcome = teacher.receive_json()
        assert welcome["max_message_bytes"] == 200_000  # the teacher's page holds back a state over it
        student.send_json({"type": "join", "code": room["code"]})
        assert "max_message_bytes" not in student.receive_json()
        teacher.send_json({"type": "state", "state": {"expression": SOURCE, "language": "typescript", "step": 13}})
        moved = student.receive_json()["state"]
        assert moved["step"] == 13 and moved["graph"]["nodes"][3] == CHAPTER_2_GRAPH["nodes"][3]
        teacher.send_json({"type": "state", "state": {"expression": SOURCE, "language": "typescript", "step": 14}})
        assert error_for(teacher) == "ignored: state.step is 14, past the walk's last step 13"
        new_code = {"expression": SOURCE + "// changed\n", "language": "typescript"}
        teacher.send_json({"type": "state", "state": new_code})
        assert error_for(teacher) == "ignored: state.graph is missing: with `language`, give the graph the code made"


def test_a_room_refuses_a_bad_graph_naming_the_node(client):
    graph = copy.deepcopy(GRAPH)
    graph["nodes"][2]["children"] = [0, 3]  # L is c's child and c is L's: a cycle
    answer = new_room(client, language="typescript", graph=graph)
    assert answer.status_code == 400
    assert answer.json()["detail"]["message"] == "state.graph: a cycle: 2 → 3 → 2 (each a child of the one before)"
