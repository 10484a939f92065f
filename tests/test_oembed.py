"""oEmbed: /oembed answers the rich type for this site's links only, and every page says where it is."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest

pytestmark = pytest.mark.anyio


async def test_a_link_to_the_page_becomes_the_embed_iframe(client):
    answer = await client.get(
        "/oembed", params={"url": "http://testserver/?expression=a%20%3D%202%3B%20b%20%3D%20a%20*%20a&step=3"}
    )
    assert answer.status_code == 200
    body = answer.json()
    assert {k: body[k] for k in ("version", "type", "provider_name", "provider_url", "width", "height")} == {
        "version": "1.0",
        "type": "rich",
        "provider_name": "valuegraph",
        "provider_url": "http://testserver/",
        "width": 800,
        "height": 640,
    }
    assert body["html"].startswith(
        '<iframe src="http://testserver/embed?expression=a%20%3D%202%3B%20b%20%3D%20a%20*%20a&amp;step=3" '
    )
    small = (
        await client.get(
            "/oembed", params={"url": "http://testserver/embed?room=K7MP-Q2XR", "maxwidth": 400, "maxheight": 300}
        )
    ).json()
    assert (small["width"], small["height"]) == (400, 300) and 'width="400" height="300"' in small["html"]
    # A small frame is chosen: the graph and a minimal player, unless the link chose its own controls.
    assert 'src="http://testserver/embed?room=K7MP-Q2XR&amp;controls=minimal&amp;editor=hidden"' in small["html"]
    chosen = (
        await client.get(
            "/oembed", params={"url": "http://testserver/?controls=full", "maxwidth": 300, "maxheight": 200}
        )
    ).json()
    assert 'src="http://testserver/embed?controls=full&amp;editor=hidden"' in chosen["html"]
    assert "controls=minimal" not in body["html"]  # 800×640: the link's own layout


async def test_a_format_other_than_json_answers_501_as_oembed_says(client):
    for asked in ("xml", "yaml"):
        answer = await client.get("/oembed", params={"url": "http://testserver/", "format": asked})
        assert answer.status_code == 501
        assert answer.json()["detail"]["message"] == f"format {asked!r} is not offered: only format=json (oEmbed 1.0)"


async def test_the_url_must_be_a_page_of_this_site(client):
    for url, message in [
        ("https://evil.example/?expression=1", "url must be a page of this site (http://testserver/...)"),
        ("http://testserver.evil.example/", "url must be a page of this site (http://testserver/...)"),
        ("http://testserver/docs", "url must be this site's page (/) or its embed (/embed), not '/docs'"),
        ("javascript:alert(1)", "url must be a page of this site (http://testserver/...)"),
        ("http://[::1", "url must be a page of this site (http://testserver/...)"),  # no address urlsplit can read
        ("http://[zz]/", "url must be a page of this site (http://testserver/...)"),
    ]:
        answer = await client.get("/oembed", params={"url": url})
        assert answer.status_code == 404 and answer.json()["detail"]["message"] == message, url
    assert (await client.get("/oembed")).status_code == 422
    assert (await client.get("/oembed", params={"url": "http://testserver/?" + "x" * 20_000})).status_code == 422


async def test_an_attribute_breaking_query_is_escaped(client):
    body = (await client.get("/oembed", params={"url": 'http://testserver/?expression="><script>'})).json()
    assert "<script>" not in body["html"] and "&quot;&gt;&lt;script&gt;" in body["html"]


@pytest.mark.parametrize("path", ["/", "/embed?expression=a%3D1"])
async def test_every_page_carries_the_discovery_link(client, path):
    page = (await client.get(path)).text
    links = re.findall(
        r'<link rel="alternate" type="application/json\+oembed" href="([^"]+)" title="valuegraph">', page
    )
    assert len(links) == 1
    href = urlsplit(links[0].replace("&amp;", "&"))
    assert href.path == "/oembed" and parse_qs(href.query) == {"url": [f"http://testserver{path}"], "format": ["json"]}
    assert (await client.get(links[0].replace("&amp;", "&"))).status_code == 200
