"""GET /sandbox, the frame a learner's TypeScript/JavaScript runs in (app/sandbox.py): its CSP allows
no network and only its own script, and the page is told the named time and node limits."""

import base64
import hashlib
import re

import pytest

from app.config import Settings

pytestmark = pytest.mark.anyio


async def test_the_sandbox_allows_no_network_and_only_its_own_script(client):
    response = await client.get("/sandbox")
    assert response.status_code == 200
    policy = dict(rule.strip().split(" ", 1) for rule in response.headers["content-security-policy"].split(";"))
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'none'"
    assert policy["worker-src"] == "blob:"
    assert policy["frame-ancestors"] == "*"  # the embed, framed by any site, frames it
    assert "x-frame-options" not in response.headers
    scripts = re.findall(r"<script>(.*?)</script>", response.text, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert policy["script-src"] == f"'sha256-{digest}'"
    assert '<script type="text/plain" id="vg-runtime">' in response.text


async def test_the_page_has_the_usual_policy_and_the_named_limits(make_client):
    client = make_client(browser_run_seconds=1.5, max_nodes=123)
    page = await client.get("/")
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    assert 'data-browser-run-seconds="1.5"' in page.text
    assert 'data-max-nodes="123"' in page.text


def test_the_time_limit_is_a_setting():
    assert Settings.from_environ({"VALUEGRAPH_BROWSER_RUN_SECONDS": "2.5"}).browser_run_seconds == 2.5
    with pytest.raises(ValueError, match="browser_run_seconds"):
        Settings(browser_run_seconds=0)
