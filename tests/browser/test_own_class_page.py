"""Issue 20 on the page: a program's own value class. Nodes whose grad (or stored local gradient)
is wrong are marked with a ✗ and "yours: …, expected: …" in words and in their accessible name,
the check's message sits above the graph, the view goes to the first wrong node, the player
steps through the learner's own backward beside the course's walk, the six examples run, and
the embed and the exported file show the same marks."""

import importlib.util
import json
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from pagehelpers import last_step, node, open_program, step_of, wait_for_graph, wait_until_still
from playwright.sync_api import expect

OWN_CLASSES = Path(__file__).resolve().parents[1] / "own_classes"

# The three broken examples: the start of their message, and what each marked node says.
BROKEN = {
    "own-broken-assign": (
        "a is used by 2 nodes; its grad holds only the last one",
        {"a": "yours: 3, expected: 4"},
    ),
    "own-broken-visited": (
        "r's backward ran 2 times, passing its gradient on each time",
        {"p": "yours: 4.5, expected: 3", "q": "yours: -10, expected: -8"},
    ),
    "own-broken-pow": (
        "Your `__pow__` gives the input of node 2 the local gradient 18; the rule (n·xⁿ⁻¹) gives 6.",
        {"x**2": "local gradient: yours: 18, expected: 6"},
    ),
}

# `=` for `+=` on a value used twice (a * a), then a chain of additions
ASSIGN_CHAIN = (
    "class V:\n"
    "    def __init__(self, data, children=(), local_grads=()):\n"
    "        self.data = data\n"
    "        self.grad = 0\n"
    "        self._children = children\n"
    "        self._local_grads = local_grads\n"
    "    def __add__(self, other):\n"
    "        other = other if isinstance(other, V) else V(other)\n"
    "        return V(self.data + other.data, (self, other), (1, 1))\n"
    "    def __mul__(self, other):\n"
    "        return V(self.data * other.data, (self, other), (other.data, self.data))\n"
    "    def backward(self):\n"
    "        order, seen = [], set()\n"
    "        def visit(v):\n"
    "            if v not in seen:\n"
    "                seen.add(v)\n"
    "                for child in v._children:\n"
    "                    visit(child)\n"
    "                order.append(v)\n"
    "        visit(self)\n"
    "        self.grad = 1\n"
    "        for v in reversed(order):\n"
    "            for child, local in zip(v._children, v._local_grads):\n"
    "                child.grad = local * v.grad\n"
    "a = V(1.5)\n"
    "x = a * a\n"
    "for k in range({length}):\n"
    "    x = x + k\n"
    "x.backward()\n"
)


def choose_example(page, example_id, nodes=None):
    """Pick an example from the menu; wait for its graph (of `nodes` nodes, else as many as the API gives)."""
    page.goto("/?expression=a%3D1")
    wait_for_graph(page, 1)
    page.locator('[data-vg="examples"]').select_option(example_id)
    page.wait_for_function("() => document.querySelector('[data-vg=\"program\"]').value !== 'a=1'")
    if nodes is None:
        program = page.locator('[data-vg="program"]').input_value()
        nodes = len(httpx.post(f"{page.url.split('/?')[0]}/backward", json={"expression": program}).json()["nodes"])
    wait_for_graph(page, nodes)


def check_message(page):
    message = page.locator('[data-vg="check-message"]')
    message.wait_for()
    return message


def marked(page):
    """{label: the note under it} of every node drawn as wrong."""
    marks = {}
    for record in page.locator("[data-node-id].is-wrong").all():
        assert record.locator(".vg-wrong-mark").text_content() == "✗"  # not by colour alone
        marks[record.locator(".vg-label").text_content()] = record.locator(".vg-wrong-note").text_content()
    return marks


@pytest.mark.parametrize("example_id", sorted(BROKEN))
def test_each_broken_class_shows_its_message_and_marks_the_nodes_it_breaks(page, example_id):
    message_start, notes = BROKEN[example_id]
    choose_example(page, example_id)
    message = check_message(page)
    assert message.text_content().startswith(message_start)
    assert message.get_attribute("data-status") == "wrong"
    assert marked(page) == notes
    for label, note in notes.items():  # the accessible name says it too
        name = node(page, label).locator("rect.vg-box").get_attribute("aria-label")
        assert name.endswith(f"; wrong, {note}")
    for record in page.locator("[data-node-id]:not(.is-wrong)").all():
        assert record.locator(".vg-wrong-mark").count() == 0
        assert "wrong" not in record.locator("rect.vg-box").get_attribute("aria-label")


@pytest.mark.parametrize(
    ("example_id", "nodes", "printed"),
    [
        ("own-course", 4, "L = 8  a.grad = 4  b.grad = 2"),
        ("own-microgpt", 10, "y = 0.4621  w1.grad = 0.3932  w2.grad = -0.7864"),
    ],
)
def test_the_correct_classes_run_with_their_check_ok_and_nothing_marked(page, example_id, nodes, printed):
    choose_example(page, example_id, nodes)
    message = check_message(page)
    assert message.text_content().startswith("Your gradients match the course's backward")
    assert message.get_attribute("data-status") == "ok"
    assert page.locator(".vg-wrong-mark").count() == 0
    expect(page.locator('[data-vg="printed"]')).to_contain_text(printed)
    assert page.locator('[data-vg="sets-note"]').is_hidden()  # a tuple of inputs has its order


def test_the_micrograd_example_runs_the_engine_of_the_installed_package(page):
    engine = Path(importlib.util.find_spec("micrograd.engine").origin).read_text(encoding="utf-8")
    choose_example(page, "own-micrograd")
    program = page.locator('[data-vg="program"]').input_value()
    assert program.startswith(engine)  # read from the package by the server, not kept in the project
    assert "loss.backward()" in program[len(engine) :]
    assert check_message(page).get_attribute("data-status") == "ok"
    expect(page.locator('[data-vg="printed"]')).to_contain_text("loss 0.8100, w1.grad 2.7000, w2.grad -0.9000")
    # micrograd keeps a node's inputs in a set: the page says whose order it draws
    expect(page.locator('[data-vg="sets-note"]')).to_contain_text("keeps a node's inputs in a set")


def test_a_program_with_no_backward_call_says_so(page):
    text = (OWN_CLASSES / "micrograd_style.py").read_text().replace("out.backward()", "")
    open_program(page, text)
    message = check_message(page)
    assert message.get_attribute("data-status") == "no_backward"
    assert "backward() has not run" in message.text_content()
    assert page.locator(".vg-wrong-mark").count() == 0
    assert page.locator('[data-vg="walk-choice-box"]').is_hidden()


def test_the_player_steps_through_the_learners_own_backward_beside_the_courses(page):
    choose_example(page, "own-broken-visited", 5)
    choice = page.locator('[data-vg="walk-choice"]')
    assert choice.is_visible()
    assert choice.input_value() == "course"
    course_last = last_step(page)
    caption = page.locator('[data-vg="caption"]')
    choice.select_option("learner")
    expect(caption).to_contain_text("Your backward, as your code ran it: 10 steps")
    assert step_of(page) == 0
    assert last_step(page) == 10  # a start, the seed, and 9 node steps: r and below it are walked twice
    assert last_step(page) != course_last
    forward = page.get_by_role("button", name="Step forward")
    forward.click()
    expect(caption).to_contain_text("Your code seeds the output: out.grad 0 → 1")
    forward.click()
    expect(caption).to_contain_text("out's step: out.grad is 1; it passes it on: s.grad 0 → -3; r.grad 0 → -1")
    for _ in range(4):  # r, q, p, then s
        forward.click()
    expect(caption).to_contain_text("s's step: s.grad is -3; it passes it on: r.grad -1 → -4; p.grad 1.5 → -1.5")
    forward.click()
    expect(caption).to_contain_text("p's step (its step runs again: time 2)")
    forward.click()
    expect(caption).to_contain_text(
        "r's step (its step runs again: time 2): r.grad is -4; it passes it on: p.grad -1.5 → 4.5; q.grad -2 → -10"
    )
    page.get_by_role("button", name="End", exact=True).click()
    # At the end the records hold the learner's own grads.
    assert node(page, "p").locator(".vg-grad").text_content() == "4.5"
    assert node(page, "q").locator(".vg-grad").text_content() == "-10"
    choice.select_option("course")
    expect(caption).to_contain_text("Stage 1")
    assert last_step(page) == course_last


def test_the_view_goes_to_the_first_wrong_node_when_the_answer_arrives(page, live_server):
    # `=` for `+=` on a value used twice (a * a), then a chain too long to read whole: the first
    # wrong node in the course's reverse walk is a, far from the output.
    program = ASSIGN_CHAIN.format(length=40)
    body = httpx.post(f"{live_server}/backward", json={"expression": program}).json()
    first = body["gradient_check"]["first"]
    assert body["nodes"][first]["label"] == "a"
    open_program(page, program)
    wait_until_still(page)
    svg = page.locator('[data-vg="graph"] svg').bounding_box()
    box = page.locator(f'[data-node-id="{first}"] rect.vg-box').bounding_box()
    inside = (
        box["x"] >= svg["x"]
        and box["y"] >= svg["y"]
        and box["x"] + box["width"] <= svg["x"] + svg["width"]
        and box["y"] + box["height"] <= svg["y"] + svg["height"]
    )
    assert inside, (box, svg)
    output = page.locator(f'[data-node-id="{body["output"]}"] rect.vg-box').bounding_box()
    assert output["x"] > svg["x"] + svg["width"]  # the whole graph cannot be read at once: the view moved to a


def test_a_learners_node_links_to_the_code_that_made_it(page):
    choose_example(page, "own-broken-assign", 4)
    program = page.locator('[data-vg="program"]').input_value().splitlines()
    node(page, "c").hover()
    expect(page.locator("mark.vg-link-mark")).to_have_text(["a * b"])
    line = int(page.locator(".vg-link-hover").get_attribute("data-line"))
    assert program[line - 1] == "c = a * b"


def test_the_embed_shows_the_message_and_the_marks(page):
    program = (OWN_CLASSES / "course_assign_not_accumulate.py").read_text()
    page.goto(f"/embed?expression={quote(program)}")
    wait_for_graph(page)
    message = check_message(page)
    assert message.get_attribute("data-status") == "wrong"
    assert "its grad holds only the last one" in message.text_content()
    assert page.locator("[data-node-id].is-wrong .vg-wrong-mark").count() >= 1


def test_the_exported_file_shows_the_marks(page, live_server, tmp_path):
    program = (OWN_CLASSES / "course_assign_not_accumulate.py").read_text()
    answer = httpx.post(f"{live_server}/export/html", json={"expression": program})
    assert answer.status_code == 200
    lesson = tmp_path / "lesson.html"
    lesson.write_bytes(answer.content)
    page.goto(lesson.as_uri())
    wait_for_graph(page)
    assert check_message(page).get_attribute("data-status") == "wrong"
    assert page.locator("[data-node-id].is-wrong .vg-wrong-note").count() >= 1


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_marks_message_and_walk_choice_pass_axe(page, scheme):
    from test_page_look import AXE, axe_violations

    page.emulate_media(color_scheme=scheme)
    page.add_init_script(path=str(AXE))
    choose_example(page, "own-broken-visited", 5)
    check_message(page)
    page.locator('[data-vg="walk-choice"]').select_option("learner")
    expect(page.locator('[data-vg="caption"]')).to_contain_text("Your backward")
    assert axe_violations(page) == []


def test_a_graph_too_big_for_records_marks_wrong_nodes_in_its_compact_text(page):
    open_program(page, ASSIGN_CHAIN.format(length=300))
    wrong = page.locator("[data-node-id].is-wrong")
    expect(wrong).to_have_count(1)
    assert wrong.locator(".vg-compact-text").text_content().endswith("✗ yours: 1.5, expected: 3")


def test_an_imported_graph_is_marked_the_same_way(page):
    """A graph posted whole (a learner's class in any language) gets the same marks: one render for both."""
    from app.schemas import CHAPTER_2_GRAPH

    graph = json.loads(json.dumps(CHAPTER_2_GRAPH))
    graph["nodes"][0]["grad"] = 3.0  # = for +=: a keeps only c's share
    open_program(page, "x = 1\ny = x * 2", nodes=3)
    page.get_by_text("Import graph").click()
    page.get_by_role("textbox", name="Graph JSON").fill(json.dumps({"graph": graph}))
    page.get_by_role("button", name="Import").click()
    wait_for_graph(page, 4)
    check_message(page)
    assert marked(page) == {"a": "yours: 3, expected: 4"}
    assert page.locator('[data-vg="walk-choice-box"]').is_hidden()  # no learner_walk: the course's walk only


def test_the_walk_chosen_is_in_the_link_and_back_returns_to_the_courses(page):
    program = (OWN_CLASSES / "micrograd_no_visited_set.py").read_text()
    open_program(page, program, nodes=5, walk="learner", step=3)
    choice = page.locator('[data-vg="walk-choice"]')
    assert choice.input_value() == "learner"
    assert step_of(page) == 3
    caption = page.locator('[data-vg="caption"]')
    expect(caption).to_contain_text("Your backward · c's step")
    choice.select_option("course")
    expect(caption).to_contain_text("Stage 1")
    assert "walk=" not in page.url  # the default stays out of the link
    page.go_back()
    expect(caption).to_contain_text("Your backward · c's step")
    assert choice.input_value() == "learner" and step_of(page) == 3
