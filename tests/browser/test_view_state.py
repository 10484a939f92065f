"""Issue 24: one view state. A Python program whose graph depends on its seed (it draws from
`random`) and on which backward() call is shown (each call's graph is larger) shows the same nodes
with seed 5 and run 2 wherever the page's state goes: the page, the downloaded HTML file, the embed
the share dialog makes, the share link, and a Teach live student's page."""

import re

from pagehelpers import url_for, wait_for_graph
from playwright.sync_api import expect

# Four backward() calls: call k (0-based) builds 3 + 2k nodes from fresh random draws.
PROGRAM = """import random
w = Value(random.uniform(-1, 1), label='w')
for i in range(4):
    x = Value(random.uniform(-1, 1), label='x')
    L = w * x
    for j in range(i):
        L = L + x * w
    L.backward()
"""
SEED, RUN = 5, 2
RUN_NODES = 7  # call 2: w, x, w * x, then two more (x * w, +)


def shown_nodes(page):
    """What the graph on screen shows: each drawn node's id, label and value, in id order."""
    wait_for_graph(page)
    return page.evaluate(
        """() => [...document.querySelectorAll('[data-node-id]')]
            .map((n) => [Number(n.dataset.nodeId), n.querySelector('.vg-label')?.textContent ?? '',
                         n.querySelector('.vg-data')?.textContent ?? ''])
            .sort((a, b) => a[0] - b[0])"""
    )


def open_reference(page):
    """The page opened on seed 5, run 2: its nodes, checked to differ from seed 0's and from the last call's."""
    page.goto(url_for(PROGRAM))
    last_call_seed_0 = shown_nodes(page)
    page.goto(url_for(PROGRAM, run=RUN))
    run_seed_0 = shown_nodes(page)
    page.goto(url_for(PROGRAM, seed=SEED, run=RUN))
    nodes = shown_nodes(page)
    assert len(nodes) == RUN_NODES and len(last_call_seed_0) == RUN_NODES + 2, "run picks the call"
    assert [n[2] for n in nodes] != [n[2] for n in run_seed_0], "the seed changes the values"
    expect(page.get_by_label("Seed")).to_have_value(str(SEED))
    return nodes


def test_the_downloaded_html_file_shows_the_pages_seed_and_run(page, tmp_path):
    nodes = open_reference(page)
    page.locator('[data-vg="export-menu"] summary').click()
    expect(page.locator('[data-vg="export-html"]')).to_have_text(re.compile(r"Self-contained HTML \(\d+ kB\)"))
    with page.expect_download() as info:
        page.locator('[data-vg="export-html"]').click()
    lesson = tmp_path / "lesson.html"
    info.value.save_as(lesson)
    page.goto(lesson.as_uri())
    assert shown_nodes(page) == nodes


def test_the_share_link_and_the_embed_show_the_pages_seed_and_run(page, context):
    nodes = open_reference(page)
    page.get_by_role("button", name="Share / embed").click()
    link = page.locator('[data-vg="share-link"]').input_value()
    embed = page.locator('[data-vg="share-snippet"]').get_attribute("data-url")
    page.locator('[data-vg="share-close"]').click()

    other = context.new_page()
    other.goto(link)
    assert shown_nodes(other) == nodes
    other.goto(embed)
    assert shown_nodes(other) == nodes
    other.close()


def test_a_teach_live_student_sees_the_teachers_seed_and_run(page, browser, live_server):
    nodes = open_reference(page)
    page.get_by_role("button", name="Teach live").click()
    expect(page.locator('[data-vg="room-code-shown"]')).to_have_text(re.compile(r"^Room "))
    link = page.locator('[data-vg="room-link"]').input_value()

    student_context = browser.new_context(reduced_motion="reduce")
    student = student_context.new_page()
    student.goto(link)
    expect(student.locator("[data-vg-classroom]")).to_have_attribute("data-following", "true")
    expect(student.locator('[data-vg="program"]')).to_have_value(PROGRAM)
    expect(student.locator('[data-vg="graph"] svg')).to_have_attribute("data-node-count", str(RUN_NODES))
    assert shown_nodes(student) == nodes
    expect(student.get_by_label("Seed")).to_have_value(str(SEED))
    # The teacher's later moves still reach the student: a step on this graph's walk.
    page.get_by_role("button", name="End", exact=True).click()
    expect(student.locator('[data-vg="scrubber"]')).to_have_value(page.locator('[data-vg="scrubber"]').input_value())
    student_context.close()


def test_the_view_state_declares_each_field_once_and_speaks_the_servers_wire_format(page):
    """state.js's table against the README's link parameters and app/schemas.py: the fields that make
    the graph are those the request and the room share, a room carries every RoomState field but the
    server's own `stage`, and a full state goes through the URL, the request, the room and the embed
    link and comes back whole."""
    from app import schemas

    page.goto(url_for("a = 1"))
    wait_for_graph(page)
    answer = page.evaluate(
        """async () => {
            const main = new URL(document.querySelector('script[type=module]').src).pathname;
            const s = await import(main.replace(/main\\.js.*$/, 'state.js'));
            const full = { expression: 'y = w * 2', variables: 'w = 3', step: 4, direction: 'BT', speed: 2,
                           variant: 'assign', seed: 5, run: 2, language: null, graph: null, playing: true,
                           pinned: 1, collapsed: null, walk: 'learner', lesson: 'sort' };
            return {
                fields: s.FIELDS.map((f) => ({ name: f.name, url: f.url, fallback: f.fallback,
                                               program: Boolean(f.program), room: Boolean(f.room) })),
                full,
                search: s.stateSearch(full),
                back: s.readState(s.stateSearch(full)),
                defaults: s.stateSearch(s.defaultState()),
                request: s.programRequest(full).request,
                room: s.roomState(full),
                fromRoom: s.fromRoomState(s.roomState(full)),
                embed: s.embedSearch(full, { controls: 'minimal', theme: 'auto' }, { controls: 'full', theme: 'auto' }),
                typescript: s.stateSearch({ ...full, language: 'typescript' }),
                typescriptRequest: s.programRequest({ ...full, language: 'typescript' }).request,
            };
        }"""
    )
    fields = {f["name"]: f for f in answer["fields"]}
    assert len(fields) == len(answer["fields"]), "each field is declared once"
    linked = [f for f in answer["fields"] if f["url"]]
    assert [f["url"] for f in linked] == [
        "lesson",
        "expression",
        "variables",
        "step",
        "dir",
        "speed",
        "variant",
        "seed",
        "run",
        "language",
        "walk",
    ]
    assert {f["name"]: f["fallback"] for f in linked} == {
        "lesson": None,
        "expression": None,
        "variables": "",
        "step": None,
        "direction": "LR",
        "speed": 1,
        "variant": "correct",
        "seed": 0,
        "run": None,
        "language": None,
        "walk": "course",
    }
    assert answer["defaults"] == "", "defaults stay out of links"

    program = {name for name, f in fields.items() if f["program"]}
    # language (TypeScript/JavaScript, run in the page) makes the graph too, but no request carries it;
    # the graph that code made is what a room carries beside it, not a field that makes the graph.
    shared = set(schemas.BackwardRequest.model_fields) & set(schemas.RoomState.model_fields)
    assert program == shared - {"graph"} | {"language"}
    assert answer["typescript"].endswith("&run=2&language=typescript&walk=learner")
    assert answer["typescriptRequest"] == answer["request"]
    assert {name for name, f in fields.items() if f["room"]} == set(schemas.RoomState.model_fields) - {"stage"}

    full = answer["full"]
    assert (
        answer["search"]
        == "?lesson=sort&expression=y+%3D+w+*+2&variables=w+%3D+3&step=4&dir=bt&speed=2&variant=assign&seed=5&run=2"
        "&walk=learner"
    )
    assert {f["name"]: answer["back"][f["name"]] for f in linked} == {f["name"]: full[f["name"]] for f in linked}
    assert answer["request"] == {
        "expression": "y = w * 2",
        "variables": {"w": 3},
        "variant": "assign",
        "seed": 5,
        "run": 2,
    }
    schemas.BackwardRequest.model_validate(answer["request"])
    schemas.RoomState.model_validate(answer["room"])
    assert {name: answer["fromRoom"][name] for name in answer["room"]} == {name: full[name] for name in answer["room"]}
    assert answer["embed"] == (
        "?lesson=sort&expression=y+%3D+w+*+2&variables=w+%3D+3&dir=bt&speed=2&variant=assign&seed=5&run=2&step=4"
        "&controls=minimal"
    )


CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"


def test_the_share_dialogs_embed_of_one_stage_opens_on_the_pages_step(page, context):
    """The embed counts `step` from the start of the stage it shows: the dialog writes the page's step so."""
    page.goto(url_for(CHAPTER_2, step=11))
    wait_for_graph(page, 4)
    sort_end, propagate_start = page.evaluate(
        "() => { const t = document.querySelector('[data-valuegraph]').valuegraph.timeline; "
        "return [t.sortEnd, t.propagateStart]; }"
    )
    assert sort_end < 11 and propagate_start <= 11, "the page's step is in stage 2"
    caption = page.locator('[data-vg="caption"]').inner_text()
    page.get_by_role("button", name="Share / embed").click()
    other = context.new_page()
    page.locator('[data-vg="share-options"] select[name="stage"]').select_option("propagate")
    other.goto(page.locator('[data-vg="share-snippet"]').get_attribute("data-url"))
    assert f"step={11 - propagate_start}" in other.url
    expect(other.locator('[data-vg="caption"]')).to_have_text(caption)  # the page's step
    page.locator('[data-vg="share-options"] select[name="stage"]').select_option("sort")
    other.goto(page.locator('[data-vg="share-snippet"]').get_attribute("data-url"))
    assert f"step={sort_end}" in other.url  # past the sort: its last step, the nearest it has
    other.close()
