"""Absolute URLs and client addresses come from configuration, not from what a client sends
(issue 27, finding 3): `Host: evil.example` never reaches a link this site hands out, and
`X-Forwarded-For` is believed only from the proxies VALUEGRAPH_TRUSTED_PROXIES names."""

import re

import httpx
import pytest
from realservers import valuegraph_server
from starlette.requests import Request

from app.config import Settings
from app.main import create_app
from app.origin import site_origin

pytestmark = pytest.mark.anyio
PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"
EVIL = {"host": "evil.example"}


def client_for(**settings) -> httpx.AsyncClient:
    app = create_app(Settings(**settings))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


async def every_absolute_url(client: httpx.AsyncClient, headers: dict) -> list[str]:
    room = (await client.post("/rooms", json={"state": {"expression": PROGRAM}}, headers=headers)).json()
    site = (await client.get("/oembed", params={"url": "http://testserver/"}, headers=headers)).json()
    page = (await client.get("/", headers=headers)).text
    discovery = re.search(r'<link[^>]+application/json\+oembed[^>]+href="([^"]+)"', page).group(1)
    src = re.search(r'src="([^"]+)"', site["html"]).group(1)
    return [room["join_url"], room["embed_url"], site["provider_url"], src, discovery.replace("&amp;", "&")]


async def test_a_forged_host_never_reaches_a_link():
    async with client_for() as client:
        urls = await every_absolute_url(client, EVIL)
    assert all(url.startswith("http://testserver/") for url in urls), urls
    assert not any("evil" in url for url in urls)


async def test_the_public_url_is_used_when_set():
    async with client_for(public_url="https://valuegraph.example/") as client:
        room = (await client.post("/rooms", json={"state": {"expression": PROGRAM}}, headers=EVIL)).json()
        asked = {"url": "https://valuegraph.example/?expression=x%3D1"}
        site = (await client.get("/oembed", params=asked, headers=EVIL)).json()
        page = (await client.get("/", headers=EVIL)).text
    assert room["join_url"] == f"https://valuegraph.example/?room={room['code']}"
    assert room["embed_url"] == f"https://valuegraph.example/embed?room={room['code']}"
    assert site["provider_url"] == "https://valuegraph.example/"
    assert 'src="https://valuegraph.example/embed?expression=x%3D1"' in site["html"]
    assert 'href="https://valuegraph.example/oembed?url=https%3A%2F%2Fvaluegraph.example%2F&amp;format=json"' in page


async def test_an_allowed_host_is_used_and_others_are_not():
    async with client_for(allowed_hosts="valuegraph.example, school.example") as client:
        room = (
            await client.post(
                "/rooms", json={"state": {"expression": PROGRAM}}, headers={"host": "school.example:8000"}
            )
        ).json()
        assert room["join_url"].startswith("http://school.example:8000/?room=")
        assert all(url.startswith("http://testserver/") for url in await every_absolute_url(client, EVIL))


@pytest.mark.parametrize(
    ("host", "server", "allowed", "origin"),
    [
        ("[::1]:8000", ("::1", 8000), "::1", "http://[::1]:8000"),  # an allowed IPv6 host, in brackets
        ("evil.example", ("::1", 8000), "", "http://[::1]:8000"),  # the socket's IPv6 address, bracketed
        ("evil.example", ("127.0.0.1", 80), "", "http://127.0.0.1"),  # the scheme's own port is left out
        ("evil.example", None, "", "http://localhost"),  # a server that gives no address (a test client)
    ],
)
def test_the_origin_from_the_host_or_the_socket(host, server, allowed, origin):
    app = create_app(Settings(allowed_hosts=allowed))
    scope = {"type": "http", "app": app, "scheme": "http", "path": "/", "query_string": b"", "server": server}
    scope["headers"] = [(b"host", host.encode())]
    assert site_origin(Request(scope)) == origin


def test_valuegraph_serve_ignores_forwarded_headers_unless_the_proxy_is_named():
    body = {"state": {"expression": PROGRAM}}
    with valuegraph_server(room_creations_per_hour=2) as server:
        answers = [
            httpx.post(f"{server.url}/rooms", json=body, headers={"x-forwarded-for": f"198.51.100.{n}"}).status_code
            for n in range(3)
        ]
        assert answers == [200, 200, 429]  # one client, whatever address it names
    with valuegraph_server(room_creations_per_hour=2, trusted_proxies="127.0.0.1") as server:
        answers = [
            httpx.post(f"{server.url}/rooms", json=body, headers={"x-forwarded-for": f"198.51.100.{n}"}).status_code
            for n in range(3)
        ]
        assert answers == [200, 200, 200]  # the named proxy's word is taken: three clients
