"""TypeScript and JavaScript carried where the page's programs go (issue 25): the share link and the
embed show the code and run it only when the reader presses Run; the downloaded file plays the graph
the code made and runs nothing; a Teach live room carries the code with its graph, so students draw
it without running it."""

import json
import re
import sys
from pathlib import Path
from urllib.parse import urlencode

from pagehelpers import node, wait_for_graph
from playwright.sync_api import expect
from test_typescript import CHAPTER_2, TS_CLASS, open_code

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the real servers' helpers
from realservers import app_server  # noqa: E402

CODE = TS_CLASS + CHAPTER_2


def sandbox_or_backward(requests):
    return [url for url in requests if re.search(r"/(sandbox|backward)(\?|$)", url)]


def test_the_share_link_and_the_embed_carry_the_code_and_run_it_only_on_run(page):
    open_code(page, CODE)
    wait_for_graph(page, 4)
    page.get_by_role("button", name="Share / embed").click()
    link = page.locator('[data-vg="share-link"]').input_value()
    embed = page.locator('[data-vg="share-snippet"]').get_attribute("data-url")
    page.locator('[data-vg="share-close"]').click()
    assert "language=typescript" in link
    assert "/embed?" in embed and "language=typescript" in embed

    for address in (link, embed):
        reader = page.context.new_page()
        requests = []
        reader.on("request", lambda request, requests=requests: requests.append(request.url))
        reader.goto(address)
        expect(reader.locator('[data-vg="run-hint"]')).to_contain_text("press Run")
        assert reader.get_by_role("textbox", name="Program", exact=True).input_value() == CODE
        reader.wait_for_timeout(500)  # time for a run that should not start
        assert sandbox_or_backward(requests) == [], address
        assert reader.locator('[data-vg="graph"] svg[data-node-count]').count() == 0
        reader.get_by_role("button", name="Run", exact=True).click()
        wait_for_graph(reader, 4)
        assert reader.locator('[data-vg="graph-summary"]').text_content().startswith("4 nodes · 4 edges · output L = 8")
        assert any(url.endswith("/sandbox") for url in requests)
        reader.close()


def test_an_embed_that_hides_its_editor_still_shows_code_it_would_run(page, live_server):
    page.goto(f"{live_server}/embed?{urlencode({'expression': CODE, 'language': 'typescript', 'editor': 'hidden'})}")
    expect(page.get_by_role("textbox", name="Program", exact=True)).to_be_visible()
    expect(page.get_by_role("textbox", name="Program", exact=True)).to_have_value(CODE)
    page.get_by_role("button", name="Run", exact=True).click()
    wait_for_graph(page, 4)
    # Without code to read, editor=hidden hides the editor as before.
    page.goto(f"{live_server}/embed?{urlencode({'expression': 'a = 2; L = a * a', 'editor': 'hidden'})}")
    wait_for_graph(page, 2)
    expect(page.get_by_role("textbox", name="Program", exact=True)).to_be_hidden()


def test_a_small_embed_with_code_shows_its_run_button_until_the_graph_is_drawn(page, live_server):
    page.set_viewport_size({"width": 300, "height": 200})
    page.goto(f"{live_server}/embed?{urlencode({'expression': CODE, 'language': 'typescript'})}")
    expect(page.get_by_role("textbox", name="Program", exact=True)).to_have_value(CODE)
    run = page.get_by_role("button", name="Run", exact=True)
    expect(run).to_be_visible()
    run.click()
    wait_for_graph(page, 4)
    # Drawn, the frame takes its small layout: the graph and a minimal player.
    expect(page.locator("[data-valuegraph-embed]")).to_have_attribute("data-fit", "small")


def test_the_downloaded_file_shows_the_code_and_plays_the_graph_it_made_running_nothing(page, tmp_path):
    open_code(page, CODE)
    wait_for_graph(page, 4)
    page.locator('[data-vg="export-menu"] summary').click()
    expect(page.locator('[data-vg="export-html"]')).to_have_text(re.compile(r"Self-contained HTML \(\d+ kB\)"))
    with page.expect_download() as info:
        page.locator('[data-vg="export-html"]').click()
    lesson = tmp_path / "lesson.html"
    info.value.save_as(lesson)

    reader = page.context.new_page()
    blocked = []

    def only_files(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    reader.route("**/*", only_files)
    reader.goto(lesson.as_uri())
    wait_for_graph(reader, 4)
    assert reader.locator('[data-vg="program"]').input_value() == CODE
    expect(reader.locator('[data-vg="run-hint"]')).to_have_text(
        "TypeScript: this file plays the graph the code made; it does not run the code."
    )
    assert reader.locator("[data-valuegraph-embed]").get_attribute("data-language") == "typescript"
    node(reader, "c").hover()  # the file links each node to its line, as the page does
    expect(reader.locator(".vg-link-hover")).to_have_attribute("data-line", str(TS_CLASS.count("\n") + 3))
    expect(reader.get_by_role("button", name="Run", exact=True)).to_be_hidden()
    reader.get_by_role("button", name="End", exact=True).click()
    expect(reader.locator('[data-vg="step-label"]')).to_have_text("13 / 13")
    grads = {
        int(n.get_attribute("data-node-id")): n.locator(".vg-grad").text_content()
        for n in reader.locator("[data-node-id]").all()
    }
    assert grads == {0: "4", 1: "2", 2: "1", 3: "1"}  # a, b, c, L
    assert reader.locator("iframe").count() == 0  # no sandbox: nothing runs the code
    assert blocked == []
    reader.close()


def test_a_room_carries_the_code_and_its_graph_and_students_run_nothing(page, browser, live_server):
    open_code(page, CODE)
    wait_for_graph(page, 4)
    sent = []  # the teacher's messages to the room
    page.on("websocket", lambda socket: socket.on("framesent", lambda payload: sent.append(json.loads(payload))))
    page.get_by_role("button", name="Teach live").click()
    expect(page.locator('[data-vg="room-code-shown"]')).to_have_text(re.compile(r"^Room [2-9A-Z]{4}-[2-9A-Z]{4}$"))
    code = page.locator('[data-vg="room-code-shown"]').text_content().split()[1]

    context = browser.new_context(viewport={"width": 1200, "height": 900}, reduced_motion="reduce")
    student = context.new_page()
    requests = []
    student.on("request", lambda request: requests.append(request.url))
    student.goto(f"{live_server}/?room={code}")
    expect(student.locator("[data-vg-classroom]")).to_have_attribute("data-following", "true")
    expect(student.get_by_role("textbox", name="Program", exact=True)).to_have_value(CODE)
    wait_for_graph(student, 4)
    assert student.get_by_label("Language").input_value() == "typescript"
    # The page first draws its opening program (4 nodes too), then the room's: wait for the room's.
    expect(student.locator('[data-vg="graph-summary"]')).to_have_text(re.compile(r"^4 nodes · 4 edges · output L = 8"))
    forward = page.get_by_role("button", name="Step forward")
    for expected in (1, 2):
        forward.click()
        expect(student.locator('[data-vg="scrubber"]')).to_have_value(str(expected))
    assert not any(url.endswith("/sandbox") for url in requests)  # the room's graph, drawn: no code ran
    # The graph went with the room (POST /rooms); each step after it leaves the graph out.
    steps = [message["state"] for message in sent if message["type"] == "state"]
    assert [state["step"] for state in steps][-2:] == [1, 2]
    assert steps[-1]["graph"] is None and steps[-1]["expression"] == CODE
    context.close()


def test_a_graph_over_the_rooms_message_limit_is_held_back_with_the_reason(page):
    with app_server(room_max_message_bytes=4000) as server:
        page.goto(f"{server.url}/?{urlencode({'expression': CODE, 'language': 'typescript'})}")
        page.get_by_role("button", name="Run", exact=True).click()
        wait_for_graph(page, 4)
        page.get_by_role("button", name="Teach live").click()
        status = page.locator('[data-vg="room-status"]')
        expect(status).to_have_text("Teaching live: every student's copy follows yours.")
        chain = (
            TS_CLASS + "let s = new Value(0);\nfor (let i = 0; i < 30; i++) s = s.add(new Value(1));\ns.backward();\n"
        )
        page.get_by_role("textbox", name="Program", exact=True).fill(chain)
        page.get_by_role("button", name="Run", exact=True).click()
        wait_for_graph(page, 61)
        expect(status).to_have_text(
            re.compile(
                r"^Not sent to the students: this graph takes [\d,]+ bytes, over the room's limit of 4,000 "
                r"\(VALUEGRAPH_ROOM_MAX_MESSAGE_BYTES\)\.$"
            )
        )
        page.wait_for_timeout(500)
        expect(page.locator('[data-vg="room-code-shown"]')).to_be_visible()  # still in the room: nothing closed it
        expect(status).not_to_have_text(re.compile("reconnecting|closed", re.I))
