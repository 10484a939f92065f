"""GET /embed in a browser: framed by a page from another origin, talking to it by postMessage,
and every URL option changing what it should."""

from urllib.parse import quote

import httpx
import pytest
from pagehelpers import served_elsewhere, wait_for_graph
from playwright.sync_api import expect

PROGRAM = "a = 2; b = 3; L = a * b + a"


@pytest.fixture(scope="module")
def walk(live_server):
    """Where chapter 2's stages start and end, from the API (the step numbers the page uses)."""
    body = httpx.post(f"{live_server}/backward", json={"expression": PROGRAM}).json()
    sort_end = len(body["trace"]["sort"])
    propagate_start = sort_end + 1
    return {
        "sort_end": sort_end,
        "propagate_start": propagate_start,
        "last": propagate_start + len(body["trace"]["propagate"]),
    }


@pytest.fixture(scope="module")
def lesson_site(live_server):
    """A second HTTP server, on another port (so another origin), serving a lesson page that frames
    /embed, keeps every message it receives, and can send the embed its own."""
    page = f"""<!doctype html><html><head><title>A lesson</title></head><body>
<iframe id="vg" src="{live_server}/embed?expression={quote(PROGRAM)}" width="900" height="500"></iframe>
<script>
  window.received = [];
  window.addEventListener("message", (event) => {{
    if (event.origin === "{live_server}") window.received.push(event.data);
  }});
  window.tell = (message) => document.getElementById("vg").contentWindow.postMessage(message, "{live_server}");
</script></body></html>"""

    with served_elsewhere(page) as url:
        yield url


def embed_url(**options):
    return f"/embed?expression={quote(PROGRAM)}" + "".join(
        f"&{key}={quote(str(value))}" for key, value in options.items()
    )


def latest(page, kind):
    return page.evaluate(f"window.received.filter((m) => m.type === 'valuegraph:{kind}').at(-1) ?? null")


def test_a_lesson_on_another_origin_frames_the_embed_hears_it_and_drives_it(page, lesson_site, live_server, walk):
    page.goto(lesson_site)
    assert not lesson_site.startswith(live_server)
    frame = page.frame_locator("#vg")
    frame.locator("[data-node-id]").first.wait_for()
    page.wait_for_function("() => window.received.some((m) => m.type === 'valuegraph:height' && m.height > 200)")
    page.wait_for_function("() => window.received.some((m) => m.type === 'valuegraph:step')")
    assert latest(page, "step")["step"] == 0
    assert latest(page, "step")["last"] == walk["last"]

    page.evaluate("tell({type: 'valuegraph:goto', step: 5})")
    page.wait_for_function(
        "() => window.received.at(-1)?.type === 'valuegraph:step' && window.received.at(-1).step === 5"
    )
    assert frame.locator('[data-vg="step-label"]').text_content() == f"5 / {walk['last']}"
    assert latest(page, "step")["caption"].startswith(
        "Stage 1 · Pop (b, 0)."
    )  # the step number is the player's one counter

    # A new program from the lesson page: a + a has 2 nodes.
    page.evaluate("tell({type: 'valuegraph:program', expression: 'x = 5; y = x + x'})")
    frame.locator('[data-vg="graph"] svg[data-node-count="2"]').wait_for()
    assert frame.locator('[data-vg="program"]').input_value() == "x = 5; y = x + x"
    page.evaluate("tell({type: 'valuegraph:goto', step: 999})")
    page.wait_for_function(
        "() => window.received.at(-1)?.type === 'valuegraph:step' && window.received.at(-1).step === "
        "window.received.at(-1).last"
    )


def test_defaults_and_step(page, walk):
    page.goto(embed_url(step=3))
    wait_for_graph(page, 4)
    expect(page.locator('[data-vg="step-label"]')).to_have_text(f"3 / {walk['last']}")
    assert page.locator('[data-vg="scrubber"]').is_visible()  # controls=full
    assert page.get_by_role("button", name="Reset").is_visible()
    assert page.locator('[data-vg="program"]').is_editable()  # editor=shown
    assert not page.locator(".vg-tables").is_visible()  # table=hidden
    assert page.locator("html").get_attribute("data-theme") == "auto"
    assert page.locator(".vg-header, .vg-footer").count() == 0  # no page chrome


def test_single_stage_minimal_controls_read_only_editor_dark_theme_and_tables(page, walk):
    page.goto(embed_url(stage="propagate", step=1, controls="minimal", editor="read-only", theme="dark", table="shown"))
    wait_for_graph(page, 4)
    in_stage = walk["last"] - walk["propagate_start"]  # the player counts the stage's steps, from its start
    expect(page.locator('[data-vg="step-label"]')).to_have_text(f"1 / {in_stage}")
    assert page.locator('[data-vg="caption"]').text_content().startswith("Stage 2")
    # minimal: play, back, forward and the step; no scrubber, speed, reset or stage buttons
    assert page.get_by_role("button", name="Play").is_visible()
    assert page.get_by_role("button", name="Step forward").is_visible()
    assert not page.locator('[data-vg="scrubber"]').is_visible()
    assert not page.locator('[data-vg="speed"]').is_visible()
    assert not page.get_by_role("button", name="Reset").is_visible()
    # read-only editor: shown, with the program, not editable
    assert page.locator('[data-vg="program"]').input_value() == PROGRAM
    assert not page.locator('[data-vg="program"]').is_editable()
    # dark theme whatever the system says
    assert page.locator("html").get_attribute("data-theme") == "dark"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert sum(int(c) for c in background[background.index("(") + 1 : background.index(")")].split(",")[:3]) < 150
    # tables shown, only stage 2's
    assert page.locator('[data-vg="propagate-table"]').is_visible()
    assert not page.locator('[data-vg="sort-table"]').is_visible()
    # the stage is a floor: at its start there is no stepping back
    page.get_by_role("button", name="Step back").click()
    assert page.locator('[data-vg="step-label"]').text_content() == f"0 / {in_stage}"
    assert page.get_by_role("button", name="Step back").is_disabled()
    page.keyboard.press("ArrowLeft")
    assert page.locator('[data-vg="step-label"]').text_content() == f"0 / {in_stage}"


def test_autoplay_plays_one_stage_at_the_chosen_speed_with_no_controls_no_editor_light_theme(page, walk):
    page.emulate_media(color_scheme="dark")
    page.goto(embed_url(stage="sort", autoplay="true", speed=50, controls="none", editor="hidden", theme="light"))
    wait_for_graph(page, 4)
    expect(page.locator('[data-vg="step-label"]')).to_have_text(
        f"{walk['sort_end']} / {walk['sort_end']}", timeout=5000
    )
    expect(page.locator('[data-vg="play"]')).to_have_attribute(
        "aria-label", "Play"
    )  # and it stops at the end of stage 1
    assert page.locator('[data-vg="step-label"]').text_content() == f"{walk['sort_end']} / {walk['sort_end']}"
    assert page.locator('[data-vg="speed"]').input_value() == "50"
    assert not page.locator(".vg-transport").is_visible()
    assert page.locator('[data-vg="caption"]').is_visible()
    assert not page.locator(".vg-editor-panel").is_visible()
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert sum(int(c) for c in background[background.index("(") + 1 : background.index(")")].split(",")[:3]) > 600


@pytest.mark.allow_console(r"status of 400")
def test_a_program_the_lesson_sends_that_fails_is_reported_to_it(page, lesson_site):
    page.goto(lesson_site)
    page.frame_locator("#vg").locator("[data-node-id]").first.wait_for()
    page.evaluate("tell({type: 'valuegraph:program', expression: 'x = 5\\ny = x +'})")
    page.wait_for_function("() => window.received.some((m) => m.type === 'valuegraph:error')")
    error = latest(page, "error")
    assert (error["line"], error["column"]) == (2, 8) and error["message"], error
