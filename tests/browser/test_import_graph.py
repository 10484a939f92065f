"""The page's "Import graph": a learner's own graph as JSON, pasted or chosen as a .json file,
drawn like any answer with the gradient check's message above it."""

import json

import pytest
from pagehelpers import open_program, wait_for_graph

from app.schemas import CHAPTER_2_GRAPH

# A graph the server refuses is answered with HTTP 422, which Chromium logs as a failed resource load.
ANSWERED_422 = r"status of 422"


def wrong_chapter_2():
    graph = json.loads(json.dumps(CHAPTER_2_GRAPH))
    graph["nodes"][0]["grad"] = 3.0  # = for +=: a keeps only c's share
    return graph


def test_a_pasted_graph_is_drawn_with_the_check_above_it(page):
    open_program(page, "x = 1\ny = x * 2", nodes=3)
    page.get_by_text("Import graph").click()
    page.get_by_role("textbox", name="Graph JSON").fill(json.dumps({"graph": wrong_chapter_2()}))
    page.get_by_role("button", name="Import").click()
    wait_for_graph(page, 4)
    message = page.locator('[data-vg="check-message"]')
    message.wait_for()
    assert message.text_content().startswith("a is used by 2 nodes; its grad holds only the last one")
    assert message.get_attribute("data-status") == "wrong"
    assert page.locator('[data-vg="graph-summary"]').text_content().startswith("4 nodes · 4 edges · output L = 8")
    # A program run again hides the message: it is about the imported graph only.
    editor = page.get_by_role("textbox", name="Program", exact=True)
    editor.fill("x = 1\ny = x * 3")
    wait_for_graph(page, 3)
    page.locator('[data-vg="check-message"]').wait_for(state="hidden")


def test_a_chosen_json_file_is_imported(page, tmp_path):
    open_program(page, "x = 1\ny = x * 2", nodes=3)
    page.get_by_text("Import graph").click()
    answer_file = tmp_path / "graph.json"
    answer_file.write_text(json.dumps(CHAPTER_2_GRAPH))
    page.get_by_label("Graph file").set_input_files(str(answer_file))
    wait_for_graph(page, 4)
    message = page.locator('[data-vg="check-message"]')
    message.wait_for()
    assert message.text_content() == "Your gradients match the course's backward from L on every node."


@pytest.mark.allow_console(ANSWERED_422)
def test_a_bad_graph_says_which_node(page):
    open_program(page, "x = 1\ny = x * 2", nodes=3)
    page.get_by_text("Import graph").click()
    graph = wrong_chapter_2()
    graph["nodes"][3]["children"] = [2, 9]
    page.get_by_role("textbox", name="Graph JSON").fill(json.dumps(graph))
    page.get_by_role("button", name="Import").click()
    error = page.locator('[data-vg="error-message"]')
    error.wait_for()
    assert error.text_content() == "node 3 (L): child 9 is not the id of any node"
    page.get_by_role("textbox", name="Graph JSON").fill("{not json")
    page.get_by_role("button", name="Import").click()
    page.wait_for_function(
        "() => document.querySelector('[data-vg=error-message]').textContent.startsWith('This is not JSON')"
    )


def test_a_whole_answer_is_posted_without_its_answer_only_fields(page):
    """An exported answer's nodes carry spans, code and scopes the server ignores (most of their bytes): the
    import leaves them out, so a big answer stays under the graph body limit; other fields are sent as written."""
    open_program(page, "a = 2\nb = 3\nc = a * b\nL = c + a", nodes=4)
    answer = page.evaluate(
        "async () => (await fetch('/backward?expression=' + encodeURIComponent('a = 2; L = a * a'))).json()"
    )
    assert "span" in answer["nodes"][0] and "scope" in answer["nodes"][0]
    page.get_by_text("Import graph").click()
    page.get_by_role("textbox", name="Graph JSON").fill(json.dumps(answer))
    with page.expect_request(lambda request: request.method == "POST" and "/backward" in request.url) as posted:
        page.get_by_role("button", name="Import").click()
    nodes = json.loads(posted.value.post_data)["graph"]["nodes"]
    assert [sorted(node) for node in nodes] == [
        sorted(key for key in node if key not in ("span", "expr", "scope", "numeric_grad", "expected_grad"))
        for node in answer["nodes"]
    ]
    assert "grad" in nodes[0] and "local_grads" in nodes[-1]
    wait_for_graph(page, 2)
