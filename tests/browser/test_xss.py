"""Markup sent to the page is shown as text and runs nothing: in a program comment, in an error
message that echoes the input, in URL parameters.

The Content-Security-Policy would stop inline handlers even if the page inserted the markup, so
"nothing ran" alone would prove little. These tests also check that no element of the payload
exists in the page and that the browser reported no CSP violation (an inserted
<img src=x onerror=...> would load /x and be refused one), so the page itself treats the input
as text; the policy is the second line of defence.
"""

from urllib.parse import quote

import pytest
from pagehelpers import open_program, url_for

ANSWERED_400 = r"status of 400"
ANSWERED_422 = r"status of 422"  # a variant that is not one is refused by the API
MARKER = "window.__xss.push"
PAYLOAD = (
    f"<img src=x onerror=\"{MARKER}('img')\"><svg onload=\"{MARKER}('svg')\"></svg>"
    f"<script>{MARKER}('script')</script><iframe src=\"javascript:parent.__xss.push('iframe')\"></iframe>"
)
WATCH = """
window.__xss = [];
document.addEventListener(
  "securitypolicyviolation", (e) => window.__xss.push("csp " + e.effectiveDirective + " " + e.blockedURI));
"""
INJECTED = "img[src='x'], svg[onload], iframe[src^='javascript'], script:not([src])"


@pytest.fixture
def watched(page):
    """The page, recording anything the payload could run, and any dialog it could open."""
    dialogs = []
    page.add_init_script(WATCH)
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    # Nothing is left loading: an injected image's error or frame's load would have fired by now.
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => [...document.images].every((image) => image.complete)")
    assert page.evaluate("window.__xss") == []
    assert page.locator(INJECTED).count() == 0
    assert dialogs == []


def test_markup_in_a_comment_is_text(watched):
    program = f"a = 2  # {PAYLOAD}\nb = a * 3"
    open_program(watched, program, nodes=3)
    assert watched.get_by_role("textbox", name="Program", exact=True).input_value() == program


@pytest.mark.allow_console(ANSWERED_400)
def test_markup_around_a_program_error_is_text(watched):
    """The error marks redraw the program text around the culprit, comment and all."""
    program = f"# {PAYLOAD}\na = 2\nb = a <b>bold</b>"
    watched.goto(url_for(program))
    message = watched.locator('[data-vg="error-message"]')
    message.wait_for()
    assert "unexpected character '<'" in message.text_content()
    marks = watched.locator(".vg-code-marks")
    assert PAYLOAD in marks.text_content() and "<b>bold</b>" in marks.text_content()
    assert marks.locator("b, img, svg, script").count() == 0


def test_an_error_echoing_the_input_is_text(watched):
    """The variables box echoes what it cannot read in its error message."""
    watched.goto(url_for("a = 1\nb = a * x", variables=f"{PAYLOAD} = 1"))
    message = watched.locator('[data-vg="error-message"]')
    message.wait_for()
    assert PAYLOAD in message.text_content()
    assert message.locator("*").count() == 0


@pytest.mark.allow_console(ANSWERED_400, ANSWERED_422)
@pytest.mark.parametrize("parameter", ["variant", "step", "speed", "dir", "nonsense"])
def test_markup_in_other_url_parameters_is_ignored(watched, parameter):
    watched.goto(url_for("a = 2\nb = a * 3") + f"&{parameter}={quote(PAYLOAD)}#{quote(PAYLOAD)}")
    watched.wait_for_function(
        "() => document.querySelector('[data-vg=\"graph-summary\"]').textContent !== 'Computing…'"
    )
    assert PAYLOAD not in watched.locator("body").inner_html()
