"""Teach live in Chromium: a teacher's page and a student's page (and a student's embed);
the student's graph follows Step forward, leaves it with Explore on my own, and comes back
with Rejoin."""

import re
import sys
from pathlib import Path

import pytest
from pagehelpers import open_program, step_of, wait_for_graph
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the real servers' helpers
from realservers import app_server, redis_process, redis_server  # noqa: E402

PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"


def student_step(page):
    return step_of(page)


def test_a_student_follows_the_teacher_explores_and_rejoins(page, browser, live_server):
    open_program(page, PROGRAM, nodes=4)
    page.get_by_role("button", name="Teach live").click()
    expect(page.locator('[data-vg="room-code-shown"]')).to_have_text(re.compile(r"^Room [2-9A-Z]{4}-[2-9A-Z]{4}$"))
    code = page.locator('[data-vg="room-code-shown"]').text_content().split()[1]
    link = page.locator('[data-vg="room-link"]').input_value()
    assert link == f"{live_server}/?room={code}"
    token = page.evaluate(f"sessionStorage.getItem('valuegraph:teacher:{code}')")
    assert token and token not in link
    page.wait_for_function("() => document.querySelector('[data-vg=\"room-qr\"]').naturalWidth > 0")

    student_context = browser.new_context(viewport={"width": 1200, "height": 900}, reduced_motion="reduce")
    student = student_context.new_page()
    problems = []
    student.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    student.goto(link)
    wait_for_graph(student, 4)
    expect(student.locator("[data-vg-classroom]")).to_have_attribute("data-following", "true")
    expect(student.locator('[data-vg="room-status"]')).to_have_text("Following the teacher.")
    expect(page.locator('[data-vg="room-followers"]')).to_have_text("1 student of at most 500 follows.")

    forward = page.get_by_role("button", name="Step forward")
    for expected in (1, 2, 3):
        forward.click()
        expect(student.locator('[data-vg="scrubber"]')).to_have_value(str(expected))
    expect(student.locator('[data-vg="caption"]')).to_have_text(
        page.locator('[data-vg="caption"]').text_content()
    )  # set just after the step

    # Explore on my own: the student's own moves, and the teacher's are no longer shown.
    student.get_by_role("button", name="Explore on my own").click()
    expect(student.locator('[data-vg="room-status"]')).to_contain_text("Exploring on your own")
    student.get_by_role("button", name="Step back").click()
    student.get_by_role("button", name="Step back").click()
    forward.click()
    forward.click()
    expect(page.locator('[data-vg="scrubber"]')).to_have_value("5")
    # The teacher's step 5 reaches the student, who stays where they explored to.
    expect(student.locator("[data-vg-classroom]")).to_have_attribute("data-room-step", "5")
    assert student_step(student) == 1

    # Rejoin: straight to the teacher's current step, and following again.
    student.get_by_role("button", name="Rejoin").click()
    expect(student.locator('[data-vg="scrubber"]')).to_have_value("5")
    forward.click()
    expect(student.locator('[data-vg="scrubber"]')).to_have_value("6")

    # A move of the student's own while following counts as exploring.
    student.get_by_role("button", name="Step back").click()
    expect(student.get_by_role("button", name="Rejoin")).to_be_visible()
    student.get_by_role("button", name="Rejoin").click()
    expect(student.locator('[data-vg="scrubber"]')).to_have_value("6")

    # A new program reaches the student, graph and all.
    page.locator('[data-vg="program"]').fill("x = 3; y = x * x")
    wait_for_graph(page, 2)
    wait_for_graph(student, 2)
    assert student.locator('[data-vg="program"]').input_value() == "x = 3; y = x * x"

    # The embed follows too (room=CODE on /embed).
    embed = student_context.new_page()
    embed.goto(f"{live_server}/embed?room={code}")
    wait_for_graph(embed, 2)
    forward.click()
    expect(embed.locator('[data-vg="scrubber"]')).to_have_value(page.locator('[data-vg="scrubber"]').input_value())
    expect(page.locator('[data-vg="room-followers"]')).to_have_text("2 students of at most 500 follow.")
    student_context.close()
    assert problems == []


def test_the_teacher_sets_the_room_size_and_locks_the_room(page, browser, live_server):
    open_program(page, PROGRAM, nodes=4)
    page.get_by_label("Students at most").fill("1")
    page.get_by_role("button", name="Teach live").click()
    followers = page.locator('[data-vg="room-followers"]')
    link = page.locator('[data-vg="room-link"]')
    expect(link).to_have_value(re.compile(r"room="))
    first = browser.new_context().new_page()
    first.goto(link.input_value())
    expect(followers).to_have_text("1 student of at most 1 follows.")
    second = browser.new_context().new_page()
    second.goto(link.input_value())
    expect(second.locator('[data-vg="room-status"]')).to_have_text(
        "the room is full (1 student)"
    )  # 1013: it tries again

    lock = page.get_by_role("button", name="Lock the room")
    lock.click()
    expect(followers).to_have_text("1 student of at most 1 follows. The room is locked: nobody new joins.")
    expect(page.get_by_role("button", name="Unlock the room")).to_have_attribute("aria-pressed", "true")
    first.context.close()
    second.context.close()
    third = browser.new_context().new_page()
    third.goto(link.input_value())
    expect(third.locator('[data-vg="room-status"]')).to_have_text("the teacher has locked this room: no new students")
    third.context.close()


def test_a_student_joins_by_typing_the_code(page, browser, live_server):
    open_program(page, PROGRAM, nodes=4)
    page.get_by_role("button", name="Teach live").click()
    expect(page.locator('[data-vg="room-code-shown"]')).to_have_text(re.compile(r"^Room "))
    code = page.locator('[data-vg="room-code-shown"]').text_content().split()[1]
    page.get_by_role("button", name="Step forward").click()

    student = browser.new_context().new_page()
    student.goto(live_server + "/")
    wait_for_graph(student)
    student.get_by_label("Room code").fill(code.lower().replace("-", ""))
    student.get_by_role("button", name="Join").click()
    expect(student.locator('[data-vg="scrubber"]')).to_have_value("1")
    expect(student.locator('[data-vg="room-code-shown"]')).to_have_text(f"Room {code}")

    other = browser.new_context().new_page()
    other.goto(live_server + "/?room=2345-6789")
    expect(other.locator('[data-vg="room-status"]')).to_have_text("there is no room 2345-6789 (it may have expired)")


@pytest.mark.allow_console(r"WebSocket connection to .* failed")
def test_both_reconnect_after_the_server_dies_and_nothing_the_teacher_did_is_lost(page, browser):
    """The server process (rooms in a real redis-server) is killed with -9 and started again on
    the same port: both pages reconnect by themselves; the steps the teacher took meanwhile reach
    the student."""
    with redis_server() as redis_url, app_server(redis_url=redis_url) as first:
        page.goto(
            f"{first.url}/?expression=a%20%3D%202%3B%20b%20%3D%203%3B%20c%20%3D%20a%20*%20b%3B%20L%20%3D%20c%20%2B%20a"
        )
        wait_for_graph(page, 4)
        page.get_by_role("button", name="Teach live").click()
        expect(page.locator('[data-vg="room-code-shown"]')).to_have_text(re.compile(r"^Room "))
        student = browser.new_context().new_page()
        student.goto(page.locator('[data-vg="room-link"]').input_value())
        wait_for_graph(student, 4)
        forward = page.get_by_role("button", name="Step forward")
        forward.click()
        forward.click()
        expect(student.locator('[data-vg="scrubber"]')).to_have_value("2")

        first.kill()
        expect(page.locator('[data-vg="room-status"]')).to_have_text("Connection lost: reconnecting…")
        expect(student.locator('[data-vg="room-status"]')).to_have_text("Connection lost: reconnecting…")
        forward.click()
        forward.click()  # the teacher moves on while the server is down
        with app_server(port=first.port, redis_url=redis_url):
            expect(page.locator('[data-vg="room-status"]')).to_have_text(
                "Teaching live: every student's copy follows yours.", timeout=15_000
            )
            expect(student.locator('[data-vg="scrubber"]')).to_have_value("4", timeout=15_000)
            expect(student.locator('[data-vg="room-status"]')).to_have_text("Following the teacher.")
            forward.click()
            expect(student.locator('[data-vg="scrubber"]')).to_have_value("5")
        student.context.close()


@pytest.mark.allow_console(r"WebSocket connection to .* failed")
def test_a_room_redis_lost_is_made_again_by_the_teachers_page_and_the_student_follows_on(page, browser):
    """Redis (no persistence) is killed with -9 mid-class and started again empty: the teacher's
    page makes the room again under the same code with its own state; the student's page rejoins
    by itself and follows on."""
    with redis_process() as redis, app_server(redis_url=redis.url, redis_retry_seconds=0.5) as server:
        page.goto(
            f"{server.url}/?expression=a%20%3D%202%3B%20b%20%3D%203%3B%20c%20%3D%20a%20*%20b%3B%20L%20%3D%20c%20%2B%20a"
        )
        wait_for_graph(page, 4)
        page.get_by_role("button", name="Teach live").click()
        code_shown = page.locator('[data-vg="room-code-shown"]')
        expect(code_shown).to_have_text(re.compile(r"^Room "))
        code = code_shown.inner_text()
        student = browser.new_context().new_page()
        student.goto(page.locator('[data-vg="room-link"]').input_value())
        wait_for_graph(student, 4)
        forward = page.get_by_role("button", name="Step forward")
        forward.click()
        forward.click()
        expect(student.locator('[data-vg="scrubber"]')).to_have_value("2")

        redis.kill()
        forward.click()  # the teacher moves on while Redis is down
        redis.start()  # empty: the room is gone
        expect(page.locator('[data-vg="room-status"]')).to_have_text(
            "Teaching live: every student's copy follows yours.", timeout=20_000
        )
        expect(code_shown).to_have_text(code)
        expect(student.locator('[data-vg="scrubber"]')).to_have_value("3", timeout=20_000)
        expect(student.locator('[data-vg="room-status"]')).to_have_text("Following the teacher.")
        forward.click()
        expect(student.locator('[data-vg="scrubber"]')).to_have_value("4")
        student.context.close()
