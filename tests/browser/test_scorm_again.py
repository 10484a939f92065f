"""Both SCORM packages (1.2 and 2004 4th edition) in scorm-again, the run-time a learning platform
embeds (npm, pinned in tests/package.json; the README's test command runs
`npm ci --prefix tests`): the package unpacked and served as a platform serves it, its lesson
framed by the platform's page that holds the API object, and walked to the end. The lesson
initializes, reports incomplete and commits, reports completed at the walk's end and commits, and
terminates when it is left; scorm-again reports no error (any would reach the console, which fails
the test)."""

import io
import zipfile
from pathlib import Path

import httpx
import pytest
from pagehelpers import wait_for_graph

PROGRAM = "a = 2; b = 3; L = a * b + a"
PLATFORM = "http://lms.test"
SCORM_AGAIN = Path(__file__).resolve().parents[1] / "node_modules" / "scorm-again" / "dist" / "scorm-again.min.js"

# Per edition: the API object's global name, its class, and the calls and status element by their names.
EDITIONS = {
    "1.2": ("API", "Scorm12API", "LMSInitialize", "LMSSetValue", "LMSCommit", "LMSFinish", "cmi.core.lesson_status"),
    "2004": ("API_1484_11", "Scorm2004API", "Initialize", "SetValue", "Commit", "Terminate", "cmi.completion_status"),
}

COURSE = """<!doctype html><html><head><title>Course</title><script src="/scorm-again.min.js"></script></head><body>
<script>
  window.events = [];
  const api = (window.{object} = new {cls}({{ logLevel: 4, autocommit: false }}));
  for (const name of ["{initialize}", "{set_value}.cmi.*", "{commit}", "{finish}"]) {{
    api.on(name, (...args) => events.push([name.split(".")[0], ...args.filter((a) => a !== undefined).map(String)]));
  }}
  window.lessonStatus = () => api.{get_value}("{status}");
</script>
<iframe id="sco" src="/package/index.html" width="1200" height="900"></iframe>
</body></html>"""


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_package_runs_in_scorm_again_to_completion(page, live_server, edition):
    assert SCORM_AGAIN.exists(), "scorm-again is not installed: npm ci --prefix tests (the README's test command does)"
    object_name, cls, initialize, set_value, commit, finish, status = EDITIONS[edition]
    get_value = "LMSGetValue" if edition == "1.2" else "GetValue"
    course = COURSE.format(
        object=object_name,
        cls=cls,
        initialize=initialize,
        set_value=set_value,
        commit=commit,
        finish=finish,
        get_value=get_value,
        status=status,
    )
    answer = httpx.get(f"{live_server}/export/scorm", params={"expression": PROGRAM, "edition": edition})
    package = zipfile.ZipFile(io.BytesIO(answer.content))
    files = {name: package.read(name) for name in package.namelist()}

    def platform(route):
        path = route.request.url[len(PLATFORM) :]
        if path == "/course.html":
            return route.fulfill(body=course, content_type="text/html")
        if path == "/scorm-again.min.js":
            return route.fulfill(body=SCORM_AGAIN.read_bytes(), content_type="text/javascript")
        name = path.removeprefix("/package/")
        if name in files:
            return route.fulfill(body=files[name], content_type="text/html" if name.endswith(".html") else "text/xml")
        return route.fulfill(status=404, body="")

    page.route(f"{PLATFORM}/**", platform)
    page.goto(f"{PLATFORM}/course.html")
    frame = page.frame(url=f"{PLATFORM}/package/index.html")
    wait_for_graph(frame, 4)
    events = lambda: page.evaluate("window.events")  # noqa: E731
    page.wait_for_function(f"() => window.events.some((e) => e[0] === '{commit}')")
    assert events() == [[initialize], [set_value, status, "incomplete"], [commit]]
    assert page.evaluate("window.lessonStatus()") == "incomplete"

    lesson = page.frame_locator("#sco")
    lesson.get_by_role("button", name="End", exact=True).click()
    page.wait_for_function("() => window.events.length === 5")
    assert events()[3:] == [[set_value, status, "completed"], [commit]]
    assert page.evaluate("window.lessonStatus()") == "completed"

    page.evaluate("document.getElementById('sco').src = 'about:blank'")  # leaving the lesson
    page.wait_for_function("() => window.events.length === 6")
    assert events()[5] == [finish]
    assert page.evaluate(f"window.{object_name}.{'LMSGetLastError' if edition == '1.2' else 'GetLastError'}()") == "0"
