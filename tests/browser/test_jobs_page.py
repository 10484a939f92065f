"""The page's jobs (issue 21, runs longer than a request): a program started as a job from the page,
its loss curve, printed lines and progress bar growing from the real server's event stream, a
point of its curve opening that call's graph, Cancel, and a failure placed in the editor. Each job
runs in a real worker process of the live server."""

import re
import sys
import time
from pathlib import Path

import pytest
from pagehelpers import url_for, wait_for_graph
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.test_long_programs
from tests.test_long_programs import NAMES, cpython_stdout, variant  # noqa: E402

# 30 backward() calls, quick enough for /backward to answer too.
THIRTY = """x = Value(2.0)
for step in range(30):
    loss = x * x
    x.grad = 0.0
    loss.backward()
    print(f"step {step} loss {loss.data:.6f}")
    x.data -= 0.01 * x.grad
"""
# The same 30 calls with busy work between them: past /backward's statement limit (1,000,000 by
# default), so the page offers a job, and slow enough (4.5 million statements) that the points
# arrive over a second or more even on an idle machine.
SLOW_THIRTY = """x = Value(2.0)
for step in range(30):
    for i in range(150000):
        pass
    loss = x * x
    x.grad = 0.0
    loss.backward()
    print(f"step {step} loss {loss.data:.6f}", end="\\r")
print()
print("trained")
"""
# A thousand calls, each after a long loop: a job that runs for minutes unless cancelled.
LONG = """x = Value(1.0)
for step in range(1000):
    for i in range(200000):
        pass
    loss = x * x
    loss.backward()
"""
# Fine under /backward's statement limit until it is passed; as a job, it fails later, at line 6.
FAILS_LATE = """x = Value(1.0)
for i in range(1200000):
    pass
loss = x * x
loss.backward()
y = no_such_name + 1
"""
PATIENCE_MS = 60_000  # a bound on a hang on the loaded machine, not a timing

# Records, every frame, what the job panel shows: the number of points and the progress bar's values.
RECORD = """() => {
    window.jobFrames = [];
    const look = () => {
        const bar = document.querySelector('[data-vg="job-progress"]');
        window.jobFrames.push({
            points: document.querySelectorAll('[data-vg="job"] .vg-loss-point').length,
            now: bar.getAttribute('aria-valuenow'),
            max: bar.getAttribute('aria-valuemax'),
            status: document.querySelector('[data-vg="job-status"]').textContent,
            counts: document.querySelector('[data-vg="job-counts"]').textContent,
            printed: document.querySelector('[data-vg="job-printed"]').textContent,
        });
        requestAnimationFrame(look);
    };
    look();
}"""


def job_panel(page):
    return page.locator('[data-vg="job"]')


def model(page, expression):
    return page.evaluate(
        f"() => {{ const m = document.querySelector('[data-valuegraph]').valuegraph.model; return {expression}; }}"
    )


def start_job(page):
    """Presses "Run as job"; the job's 202 answer."""
    with page.expect_response(lambda r: r.url.endswith("/runs") and r.request.method == "POST") as created:
        page.get_by_role("button", name="Run as job", exact=True).click()
    assert created.value.status == 202
    return created.value.json()


@pytest.mark.allow_console(r"status of 400")
def test_an_ordinary_error_offers_no_job(page):
    # a typo is no program too long for a request: its error says where, and offers nothing more
    page.goto(url_for("x = Value(2.0)\ny = x * q\ny.backward()"))
    expect(page.locator('[data-vg="error-message"]')).to_contain_text("unknown name 'q'")
    expect(page.locator('[data-vg="error-job"]')).to_be_hidden()


@pytest.mark.allow_console(r"status of 400")  # /runs refuses it
def test_a_job_of_the_shorthand_is_refused_beside_its_button_leaving_the_graph_as_it_is(page):
    page.goto(url_for("a = 2; b = 3; c = a * b; L = c + a"))
    summary = page.locator('[data-vg="graph-summary"]')
    expect(summary).to_contain_text("output L = 8")
    page.get_by_role("button", name="Run as job").click()
    expect(page.locator('[data-vg="run-hint"]')).to_contain_text("course shorthand")
    expect(page.locator('[data-vg="error"]')).to_be_hidden()
    expect(page.locator('[data-vg="job"]')).to_be_hidden()
    expect(summary).to_contain_text("output L = 8")


@pytest.mark.allow_console(r"status of (400|503)")  # /backward refuses it: statements or time
def test_a_program_past_the_request_runs_as_a_job_and_its_curve_grows_live(page):
    page.goto(url_for(SLOW_THIRTY))
    # /backward refuses it (its statement limit, or its time budget): the page offers a job.
    offer = page.locator('[data-vg="error-job"]')
    expect(offer).to_be_visible(timeout=PATIENCE_MS)
    expect(page.locator('[data-vg="error-message"]')).to_contain_text(re.compile("statements|time budget"))
    page.evaluate(RECORD)
    with page.expect_response(lambda r: r.url.endswith("/runs") and r.request.method == "POST") as created:
        offer.get_by_role("button", name="Run as a job").click()
    assert created.value.status == 202
    expect(page.locator('[data-vg="error"]')).to_be_hidden()
    bar = page.get_by_role("progressbar")
    expect(bar).to_have_attribute("aria-valuenow", "30", timeout=PATIENCE_MS)
    expect(bar).to_have_attribute("aria-valuemax", "30")
    expect(page.locator('[data-vg="job-status"]')).to_have_text("Done")
    expect(job_panel(page).locator(".vg-loss-point")).to_have_count(30)
    expect(page.get_by_role("button", name="Cancel")).to_be_hidden()
    # The printed text as a terminal shows it: the step line rewritten by each \r, then "trained".
    expect(page.locator('[data-vg="job-printed"]')).to_have_text(re.compile(r"^step 29 loss \d\.\d{6}\ntrained$"))
    frames = page.evaluate("() => window.jobFrames")
    growing = sorted({frame["points"] for frame in frames if 0 < frame["points"] < 30})
    assert len(growing) >= 3, f"the points came all at once: {growing}"
    # While it ran, the bar counted calls of the expected 30 and the time left was estimated.
    running = [frame for frame in frames if frame["status"] == "Running" and frame["points"] > 0]
    assert running and all(frame["max"] == "30" for frame in running)
    assert any(int(frame["now"]) < 30 for frame in running)
    assert any(re.search(r"about .+ left", frame["counts"]) for frame in running)
    # The line rewritten with end='\r' showed its state as it ran (the stream sends it only once it ends).
    assert any(re.fullmatch(r"step \d+ loss \d\.\d{6}", frame["printed"]) for frame in running)


def test_a_point_of_the_jobs_curve_opens_that_calls_graph(page):
    from test_page_look import AXE, axe_violations

    page.add_init_script(path=str(AXE))
    page.goto(url_for(THIRTY))
    wait_for_graph(page)
    created = start_job(page)
    expect(page.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "30", timeout=PATIENCE_MS)
    expect(page.locator('[data-vg="job-status"]')).to_have_text("Done")
    printed = page.locator('[data-vg="job-printed"]').text_content().splitlines()
    assert len(printed) == 30 and printed[0] == "step 0 loss 4.000000"
    assert axe_violations(page) == []  # the job panel: its progress bar, curve, printed lines
    for run, how in ((7, "click"), (3, "keyboard")):
        point = job_panel(page).locator(f'.vg-loss-point[data-run="{run}"]')
        with page.expect_response(lambda r: f"/graph?run={run}" in r.url) as answered:
            if how == "click":
                point.click()
            else:
                point.focus()
                page.keyboard.press("Enter")
        assert answered.value.url.endswith(f"{created['status_url']}/graph?run={run}")
        # asked and read as /backward's answer is: in the columnar encoding
        assert answered.value.headers["content-type"] == "application/vnd.valuegraph.columns+json"
        page.wait_for_url(re.compile(rf"[?&]run={run}(&|$)"))
        wait_for_graph(page)
        expected = page.request.post("/backward", data={"expression": THIRTY, "run": run}).json()
        assert model(page, "m.run") == run
        assert model(page, "m.nodes.map((n) => n.data)") == [node["data"] for node in expected["nodes"]]
        output = expected["nodes"][expected["output"]]
        assert output["data"] == expected["runs"][run]["data"] == model(page, "m.nodes[m.output].data")
        expect(job_panel(page).locator(".vg-loss-point.is-current")).to_have_attribute("data-run", str(run))
        expect(page.locator('[data-vg="runs-summary"]')).to_contain_text(f"the graph is from call {run + 1}")
    # While a job's graph is shown, the curve under the program opens the job's calls too.
    with page.expect_response(lambda r: "/graph?run=12" in r.url) as answered:
        page.locator('[data-vg="runs"] .vg-loss-point[data-run="12"]').click()
    assert answered.value.url.endswith(f"{created['status_url']}/graph?run=12")
    expect(job_panel(page).locator(".vg-loss-point.is-current")).to_have_attribute("data-run", "12")
    wait_for_graph(page)
    assert model(page, "m.run") == 12


@pytest.mark.allow_console(r"status of (400|503)")  # the page's own /backward of it, as it is typed
def test_cancel_stops_a_long_job(page):
    page.goto(url_for("a = 1"))
    wait_for_graph(page)
    page.get_by_role("textbox", name="Program", exact=True).fill(LONG)
    created = start_job(page)
    bar = page.get_by_role("progressbar")
    expect(bar).to_have_attribute("aria-valuemax", "1000", timeout=PATIENCE_MS)  # read from range(1000)
    expect(job_panel(page).locator(".vg-loss-point")).not_to_have_count(0, timeout=PATIENCE_MS)
    expect(page.locator('[data-vg="job-counts"]')).to_contain_text(re.compile(r"of 1,000 backward\(\) calls .* left"))
    page.get_by_role("button", name="Cancel").click()
    # Within a few seconds (the server stops the worker at once; this bounds the page's part).
    expect(page.locator('[data-vg="job-status"]')).to_have_text("Cancelled", timeout=5_000)
    expect(page.get_by_role("button", name="Cancel")).to_be_hidden()
    status = page.request.get(created["status_url"]).json()
    assert status["status"] == "cancelled"
    assert int(bar.get_attribute("aria-valuenow")) < 1000
    # Leaving the page cancels its job: nothing else could follow it, and it holds a place.
    second = start_job(page)
    expect(page.get_by_role("button", name="Cancel")).to_be_visible()
    page.goto(url_for("a = 1"))
    wait_for_graph(page)
    deadline = time.monotonic() + PATIENCE_MS / 1000
    while page.request.get(second["status_url"]).json()["status"] != "cancelled":
        assert time.monotonic() < deadline, "the job outlived its page"
        time.sleep(0.1)


@pytest.mark.allow_console(r"status of (400|503)")  # /backward refuses it: statements or time
def test_a_failed_job_shows_its_message_and_marks_its_place_in_the_editor(page):
    page.goto(url_for(FAILS_LATE))
    expect(page.locator('[data-vg="error-job"]')).to_be_visible(timeout=PATIENCE_MS)
    page.get_by_role("button", name="Run as a job").click()
    expect(page.locator('[data-vg="job-status"]')).to_have_text("Failed", timeout=PATIENCE_MS)
    expect(page.locator('[data-vg="job-error-message"]')).to_contain_text("no_such_name")
    goto = page.locator('[data-vg="job-error-goto"]')
    expect(goto).to_have_text("Go to line 6, column 5")
    # The editor marks the failing place: its line in the gutter, the character underlined.
    expect(page.locator('[data-vg="editor"]')).to_have_class(re.compile("has-error"))
    expect(page.locator(".vg-error-mark")).to_have_text("n")
    goto.click()
    caret = page.locator('[data-vg="caret"]')
    expect(caret).to_have_text("Ln 6, Col 5")


@pytest.mark.allow_console(r"status of (400|503)")  # /backward refuses it: statements or time
def test_the_transformer_runs_as_a_job_from_the_page_with_the_bundled_names_printing_what_cpython_prints(page):
    """Issue 21's done-when, on the page: the course-style transformer (tests/test_long_programs.py),
    its input.txt the page's bundled names list, run as a job from the editor; the job panel's printed
    text is what CPython prints for the same program and file."""
    program = variant(steps=2)
    page.goto("/")
    editor = page.get_by_role("textbox", name="Program", exact=True)
    editor.fill(program)
    page.locator('[data-vg="files"] summary').click()
    page.locator('[data-vg="files-names"]').click()
    expect(page.locator('[data-vg="files-text"]')).to_have_value(NAMES)
    with page.expect_response(lambda r: r.url.endswith("/runs") and r.request.method == "POST") as created:
        page.locator('[data-vg="run-job"]').click()
    assert created.value.status == 202
    expect(page.locator('[data-vg="job-status"]')).to_have_text("Done", timeout=300_000)
    expect(job_panel(page).locator(".vg-loss-point")).to_have_count(2)
    expected = cpython_stdout(program, {"input.txt": NAMES})
    assert page.locator('[data-vg="job-printed"]').text_content() == expected.rstrip("\n")
