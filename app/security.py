"""Response headers that let the browser enforce what the server promises, and cache rules for
the static files.

Every response gets:
- Content-Security-Policy: script, style, fonts, fetches only from this origin; no inline
  script, no eval, no plugins, no <base>. The page needs no 'unsafe-inline' even for styles:
  its script sets styles through the CSSOM (element.style.setProperty, as D3's .style() does),
  which a policy does not restrict; only style attributes and <style> in markup are.
- framing: the pages may be framed by this origin only (frame-ancestors 'self' and the older
  X-Frame-Options: SAMEORIGIN). /sandbox, where a learner's own code runs, has a policy of its
  own that allows no network (app/sandbox.py). Paths under /embed exist to be framed by lesson pages on any
  site: frame-ancestors * and no X-Frame-Options.
- X-Content-Type-Options: nosniff, and Referrer-Policy: strict-origin-when-cross-origin.

The API docs (/docs) are the vendored Swagger UI under the same policy as the pages (their
widgets' styles are set through the CSSOM, which the policy does not restrict).

Redirects (Starlette's /docs/ -> /docs) name only a path in Location, never the request's Host
header, which the client controls: an absolute URL built from it would send a visitor of a
poisoned cache or a misrouted proxy to any site.

Static files under /static: a URL carrying the file's current content hash (?v=..., made by
StaticVersions.url for the templates) may be cached for a year and never revalidated, because
a changed file gets a new URL. Any other URL (a stale hash, or none, as for the ES modules
that main.js imports by relative path) must be revalidated each time (no-cache), which costs
a 304 thanks to the ETag and Last-Modified that StaticFiles sends.
"""

import hashlib
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from jinja2 import pass_context
from starlette.datastructures import MutableHeaders, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .sandbox import SANDBOX_PATH, sandbox_page

EMBED_PATH = "/embed"
STATIC_PREFIX = "/static/"

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"
)
CACHE_FOREVER = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


def is_embed(path: str) -> bool:
    return path == EMBED_PATH or path.startswith(EMBED_PATH + "/")


def page_headers(path: str) -> dict[str, str]:
    """The security headers for a response to `path` (relative to the app's root)."""
    headers = {"x-content-type-options": "nosniff", "referrer-policy": "strict-origin-when-cross-origin"}
    if path == SANDBOX_PATH:  # the learner's code: no network at all (app/sandbox.py)
        headers["content-security-policy"] = sandbox_page()[1]
    elif is_embed(path):
        headers["content-security-policy"] = f"{PAGE_POLICY}; frame-ancestors *"
    else:
        headers["content-security-policy"] = f"{PAGE_POLICY}; frame-ancestors 'self'"
        headers["x-frame-options"] = "SAMEORIGIN"
    return headers


class StaticVersions:
    """Short content hashes of the files under a static directory, recomputed when a file changes."""

    def __init__(self, directory: Path, length: int = 12):
        self.directory = Path(directory).resolve()
        self.length = length
        self._known = {}  # file -> ((mtime_ns, size), hash); only files that exist

    def version(self, path: str) -> str | None:
        file = (self.directory / path).resolve()
        if not file.is_relative_to(self.directory) or not file.is_file():
            return None
        stat = file.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        known = self._known.get(file)
        if known is None or known[0] != key:
            known = (key, hashlib.sha256(file.read_bytes()).hexdigest()[: self.length])
            self._known[file] = known
        return known[1]

    def template_function(self):
        """static_url(path) for Jinja: the root-relative URL of a static file with ?v=<hash>."""

        @pass_context
        def static_url(context, path: str) -> str:
            url = context["request"].url_for("static", path=path).path
            version = self.version(path)
            return f"{url}?v={version}" if version else url

        return static_url

    def cache_control(self, path: str, query_string: bytes) -> str:
        version = QueryParams(query_string).get("v")
        return CACHE_FOREVER if version is not None and version == self.version(path) else REVALIDATE


class SecurityHeaders:
    """ASGI middleware adding the headers above to every HTTP response."""

    def __init__(self, app: ASGIApp, static: StaticVersions | None = None):
        self.app = app
        self.static = static

    async def __call__(self, scope: Scope, receive: Receive, send: Send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = _app_path(scope)

        async def send_with_headers(message: Message):
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.update(page_headers(path))
                if self.static and path.startswith(STATIC_PREFIX) and message["status"] in (200, 304):
                    headers["cache-control"] = self.static.cache_control(
                        path[len(STATIC_PREFIX) :], scope["query_string"]
                    )
                if "location" in headers:
                    headers["location"] = path_only(headers["location"])
            await send(message)

        await self.app(scope, receive, send_with_headers)


def path_only(location: str) -> str:
    """The path, query and fragment of a redirect's target: the same resource on this host."""
    parts = urlsplit(location)
    return urlunsplit(("", "", parts.path or "/", parts.query, parts.fragment))


def _app_path(scope: Scope) -> str:
    """The path within the app: servers differ on whether scope["path"] includes root_path."""
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path
