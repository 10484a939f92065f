"""Where this site is, for the absolute URLs it hands out (a room's join and embed links, oEmbed's
iframe and provider, the discovery link): never from an arbitrary Host header, or `Host:
evil.example` would make the site advertise evil.example to every cache in between.

In order: VALUEGRAPH_PUBLIC_URL when set; else the request's own scheme and Host when that host is
one of VALUEGRAPH_ALLOWED_HOSTS; else the address the server is listening on (from the socket, not
from the client)."""

from starlette.requests import HTTPConnection

from .config import Settings


def _names(listed: str) -> set[str]:
    return {name.strip().lower() for name in listed.split(",") if name.strip()}


def _host_name(host: str) -> str:
    """'example.org:8000' -> 'example.org'; '[::1]:8000' -> '::1'."""
    if host.startswith("["):
        return host[1 : host.find("]")].lower() if "]" in host else host.lower()
    return host.rsplit(":", 1)[0].lower() if host.count(":") == 1 else host.lower()


def site_origin(connection: HTTPConnection) -> str:
    """scheme://host[:port] of this site, without a trailing slash."""
    settings: Settings = connection.app.state.settings
    if settings.public_url:
        return settings.public_url.rstrip("/")
    scheme = "https" if connection.url.scheme in ("https", "wss") else "http"
    host = connection.headers.get("host", "")
    if host and _host_name(host) in _names(settings.allowed_hosts):
        return f"{scheme}://{host}"
    server = connection.scope.get("server")
    if not server:
        return f"{scheme}://localhost"
    address, port = server[0], server[1]
    if ":" in address:
        address = f"[{address}]"
    default = {"http": 80, "https": 443}[scheme]
    return f"{scheme}://{address}" + ("" if port in (None, default) else f":{port}")


def site_url(connection: HTTPConnection) -> str:
    """The request's own URL, on this site's origin (for the oEmbed discovery link)."""
    query = connection.url.query
    return site_origin(connection) + connection.url.path + (f"?{query}" if query else "")
