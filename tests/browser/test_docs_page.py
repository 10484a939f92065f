"""/docs: the vendored Swagger UI renders the API from /openapi.json under the page policy,
with no request leaving the server (no CDN) and no CSP violation."""

from urllib.parse import urlsplit

from playwright.sync_api import expect


def test_docs_render_offline_without_csp_violations(page, live_server):
    foreign, violations = [], []
    page.on(
        "request",
        lambda request: (
            foreign.append(request.url) if urlsplit(request.url).netloc != urlsplit(live_server).netloc else None
        ),
    )
    page.on(
        "console",
        lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None,
    )
    page.goto(f"{live_server}/docs")
    expect(page.locator(".opblock-summary-path", has_text="/backward").first).to_be_visible(timeout=15000)
    page.locator(".opblock-post .opblock-summary").first.click()
    expect(page.locator(".opblock-post .opblock-body")).to_be_visible()
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    assert foreign == [] and violations == []
