"""Programs that once crashed the server process itself (not a request's error: the whole process, every
user's requests with it), posted to a real server in a process of its own, which must answer each with a 400
that says where, and keep answering."""

import httpx
import pytest
from realservers import app_server

DEEP_TUPLE = "t = ()\nfor i in range(200000):\n    t = (t,)\n"  # CPython hashes a nested tuple by recursion in C
DEEP_KEY_USES = [
    ("a dict display", "d = {t: 1}", 4, 5),
    ("a dict comprehension", "d = {t: 1 for i in range(1)}", 4, 5),
    ("a store", "d = {}\nd[t] = 1", 5, 1),
    ("a load", "d = {}\nd[t]", 5, 1),
    ("in", "d = {}\nt in d", 5, 1),
    ("get", "d = {}\nd.get(t)", 5, 1),
]


@pytest.fixture(scope="module")
def server():
    with app_server(time_budget=20) as running:
        yield running


@pytest.mark.parametrize(
    ("use", "line", "column"), [case[1:] for case in DEEP_KEY_USES], ids=[c[0] for c in DEEP_KEY_USES]
)
def test_a_deeply_nested_tuple_as_a_dict_key_is_an_error_where_it_is_used(server, use, line, column):
    response = httpx.post(f"{server.url}/backward", json={"expression": DEEP_TUPLE + use}, timeout=60)
    assert server.process.poll() is None, "the server is still running"
    assert response.status_code == 400, response.text[:300]
    error = response.json()["detail"]
    assert error["message"] == "the program nests or calls too deeply to run"
    assert (error["line"], error["column"]) == (line, column)
    assert httpx.post(f"{server.url}/backward", json={"expression": "a = 2; L = a * a"}).status_code == 200


def test_a_key_a_dict_cannot_hold_is_refused_as_python_refuses_it(server):
    program = "class P:\n    def __eq__(self, other):\n        return True\nd = {P(): 1}"
    response = httpx.post(f"{server.url}/backward", json={"expression": program}, timeout=60)
    assert response.status_code == 400
    assert response.json()["detail"]["message"] == (
        "a dict key cannot be a P: its class defines __eq__, which makes it unhashable in Python"
    )
