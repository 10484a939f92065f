"""oEmbed (https://oembed.com): GET /oembed?url=<a page of this site> answers the `rich` type
with the embed's iframe, so platforms that turn pasted links into embeds do it for valuegraph.
Every page names this endpoint in a discovery <link> (templates/base.html, embed.html)."""

from html import escape
from typing import Annotated
from urllib.parse import parse_qs, urlencode, urlsplit

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from ..errors import json_error
from ..origin import site_origin, site_url

router = APIRouter(tags=["embedding"])

PAGES = ("/", "/embed")  # the paths whose links become embeds
DEFAULT_WIDTH, DEFAULT_HEIGHT = 800, 640
MAX_URL_LENGTH = 20_000
# A frame asked for below this (width, height) gets the graph and a minimal player, without the
# editor, unless the link chose its own controls or editor (the embed itself also falls back to
# that layout wherever the controls would leave the graph too little room).
SMALL_FRAME = (480, 400)
SMALL_OPTIONS = {"controls": "minimal", "editor": "hidden"}


class OEmbed(BaseModel):
    version: str = "1.0"
    type: str = "rich"
    provider_name: str = "valuegraph"
    provider_url: str
    title: str
    html: str
    width: int
    height: int


@router.get(
    "/oembed",
    response_model=OEmbed,
    responses={
        404: {"description": "The url is not a valuegraph page of this site"},
        501: {"description": "A format other than json (oEmbed 1.0's answer to a format it does not offer)"},
    },
)
async def oembed(
    request: Request,
    url: Annotated[str, Query(max_length=MAX_URL_LENGTH, description="A link to this site's page or embed")],
    maxwidth: Annotated[int | None, Query(gt=0, le=10_000)] = None,
    maxheight: Annotated[int | None, Query(gt=0, le=10_000)] = None,
    format: Annotated[
        str, Query(max_length=20, description="Only json is offered; any other format answers 501, as oEmbed 1.0 says")
    ] = "json",
):
    if format != "json":
        return json_error(501, {"message": f"format {format[:20]!r} is not offered: only format=json (oEmbed 1.0)"})
    site = urlsplit(site_origin(request))
    try:
        asked = urlsplit(url)
    except ValueError:  # a bracketed host that is no IPv6 address ("http://[::1", "http://[zz]/")
        asked = None
    if asked is None or (asked.scheme, asked.netloc) != (site.scheme, site.netloc):
        return json_error(404, {"message": f"url must be a page of this site ({site.scheme}://{site.netloc}/...)"})
    if asked.path not in PAGES:
        return json_error(
            404, {"message": f"url must be this site's page (/) or its embed (/embed), not {asked.path[:100]!r}"}
        )
    width = min(DEFAULT_WIDTH, maxwidth or DEFAULT_WIDTH)
    height = min(DEFAULT_HEIGHT, maxheight or DEFAULT_HEIGHT)
    query = asked.query
    if width < SMALL_FRAME[0] or height < SMALL_FRAME[1]:  # the layout that fits: the graph and a minimal player
        given = parse_qs(query)
        chosen = {name: value for name, value in SMALL_OPTIONS.items() if name not in given}
        query = "&".join(part for part in (query, urlencode(chosen)) if part)
    embed = f"{site.scheme}://{site.netloc}/embed" + (f"?{query}" if query else "")
    title = "valuegraph: reverse-mode autodiff, step by step"
    html = (
        f'<iframe src="{escape(embed)}" title="{title}" width="{width}" height="{height}" style="border: 0" '
        'loading="lazy" allow="clipboard-write"></iframe>'
    )
    return OEmbed(provider_url=f"{site.scheme}://{site.netloc}/", title=title, html=html, width=width, height=height)


def discovery_href(request: Request) -> str:
    """The oEmbed URL for the page being rendered (for the <link> in every page's head)."""
    return f"{site_origin(request)}/oembed?{urlencode({'url': site_url(request), 'format': 'json'})}"
