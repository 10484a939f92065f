"""The SCORM package driven in Chromium: unpacked, served as a platform would (a course page
holding a stub of the SCORM 1.2 API that records every call, framing the package's index.html),
and walked to the end."""

import io
import zipfile

import httpx
import pytest
from pagehelpers import wait_for_graph

PROGRAM = "a = 2; b = 3; L = a * b + a"
PLATFORM = "http://lms.test"
COURSE = """<!doctype html><html><head><title>Course</title></head><body>
<script>
  window.calls = [];
  const values = {"cmi.core.lesson_status": "not attempted"};
  window.API = {
    LMSInitialize: (a) => { calls.push(["LMSInitialize", a]); return "true"; },
    LMSGetValue: (k) => { calls.push(["LMSGetValue", k]); return values[k] ?? ""; },
    LMSSetValue: (k, v) => { calls.push(["LMSSetValue", k, v]); values[k] = v; return "true"; },
    LMSCommit: (a) => { calls.push(["LMSCommit", a]); return "true"; },
    LMSFinish: (a) => { calls.push(["LMSFinish", a]); return "true"; },
    LMSGetLastError: () => "0", LMSGetErrorString: () => "", LMSGetDiagnostic: () => "",
  };
</script>
<iframe id="sco" src="/package/index.html" width="1200" height="900"></iframe>
</body></html>"""


def open_package(page, live_server, **options):
    """The package of PROGRAM (with embed `options`) framed by the course page: (its frame's locator, the frame)."""
    answer = httpx.get(f"{live_server}/export/scorm", params={"expression": PROGRAM, **options})
    files = {
        name: data
        for name, data in (
            (n, zipfile.ZipFile(io.BytesIO(answer.content)).read(n))
            for n in zipfile.ZipFile(io.BytesIO(answer.content)).namelist()
        )
    }

    def platform(route):
        path = route.request.url[len(PLATFORM) :]
        if path == "/course.html":
            return route.fulfill(body=COURSE, content_type="text/html")
        name = path.removeprefix("/package/")
        if name in files:
            return route.fulfill(
                body=files[name], content_type="text/html" if name.endswith(".html") else "application/xml"
            )
        return route.fulfill(status=404, body="")

    page.route(f"{PLATFORM}/**", platform)
    page.goto(f"{PLATFORM}/course.html")
    frame = page.frame(url=f"{PLATFORM}/package/index.html")
    wait_for_graph(frame, 4)
    return page.frame_locator("#sco"), frame


def test_the_package_reports_completion_at_the_end_of_the_walk(page, live_server):
    lesson, frame = open_package(page, live_server)
    calls = lambda: page.evaluate("window.calls")  # noqa: E731
    assert calls() == [
        ["LMSInitialize", ""],
        ["LMSGetValue", "cmi.core.lesson_status"],
        ["LMSSetValue", "cmi.core.lesson_status", "incomplete"],
        ["LMSCommit", ""],
    ]
    lesson.get_by_role("button", name="Step forward").click()
    lesson.get_by_role("button", name="Step forward").click()
    assert ["LMSSetValue", "cmi.core.lesson_status", "completed"] not in calls()
    lesson.get_by_role("button", name="End", exact=True).click()
    page.wait_for_function("() => window.calls.some((c) => c[2] === 'completed')")
    assert calls()[4:] == [["LMSSetValue", "cmi.core.lesson_status", "completed"], ["LMSCommit", ""]]
    lesson.get_by_role("button", name="Step back").click()
    lesson.get_by_role("button", name="End", exact=True).click()  # the end again: reported once
    frame.wait_for_function(
        "() => { const s = document.querySelector('[data-vg=scrubber]'); return s.value === s.max; }"
    )
    assert len(calls()) == 6
    page.evaluate("document.getElementById('sco').src = 'about:blank'")  # leaving the lesson
    page.wait_for_function("() => window.calls.length === 7")
    assert calls()[6] == ["LMSFinish", ""]


@pytest.mark.parametrize("stage", ["sort", "propagate"])
def test_a_package_of_one_stage_reports_completion_at_that_stages_end(page, live_server, stage):
    lesson, _ = open_package(page, live_server, stage=stage)
    lesson.get_by_role("button", name="Step forward").click()
    assert ["LMSSetValue", "cmi.core.lesson_status", "completed"] not in page.evaluate("window.calls")
    lesson.get_by_role("button", name="End", exact=True).click()
    page.wait_for_function("() => window.calls.some((c) => c[2] === 'completed')")
