"""The `valuegraph` command. `valuegraph` alone is `valuegraph serve`.

Each subcommand is a function registered in SUBCOMMANDS with the arguments it adds, so a new
one (such as `export`) is one function and one entry.
"""

import argparse
import sys

import uvicorn

from . import __version__
from .config import Settings
from .connections import limited_protocol
from .export.command import add_export_arguments, export_command

APP = "app.main:app"
# Teach live sends each step to every student: compressed, each ~300-byte message would be deflated
# once per member (benchmarks/bench_classroom.py: p95 to 200 students 151 ms with it, 122 ms without).
WEBSOCKET_OPTIONS = {"ws_per_message_deflate": False}


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = Settings.from_environ()  # the connection limits' defaults: VALUEGRAPH_* or built in
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default: %(default)s)")
    parser.add_argument("--reload", action="store_true", help="restart when the code changes (development)")
    limits = parser.add_argument_group("connection limits (each also a VALUEGRAPH_ setting)")
    limits.add_argument(
        "--timeout-keep-alive",
        type=float,
        default=defaults.timeout_keep_alive,
        metavar="S",
        help="close a connection idle this long after an answer (default: %(default)s)",
    )
    limits.add_argument(
        "--timeout-headers",
        type=float,
        default=defaults.timeout_headers,
        metavar="S",
        help="close a connection whose request headers take longer, counted from connecting or the last answer "
        "(default: %(default)s)",
    )
    limits.add_argument(
        "--timeout-body",
        type=float,
        default=defaults.timeout_body,
        metavar="S",
        help="close a connection whose request body takes longer after its headers (default: %(default)s)",
    )
    limits.add_argument(
        "--max-connections",
        type=int,
        default=defaults.max_connections,
        metavar="N",
        help="open connections per worker; more are closed at once (default: %(default)s)",
    )


def serve(args: argparse.Namespace) -> int:
    if args.reload and args.workers > 1:
        raise SystemExit("valuegraph: --reload runs a single worker; drop --workers or --reload")
    try:  # checked like the settings they stand for: positive and finite
        Settings(
            timeout_keep_alive=args.timeout_keep_alive,
            timeout_headers=args.timeout_headers,
            timeout_body=args.timeout_body,
            max_connections=args.max_connections,
        )
    except ValueError as error:
        raise SystemExit(f"valuegraph: {error}") from None
    # Forwarded headers (X-Forwarded-For, -Proto) only from the proxies named: by default none, so a
    # client cannot name its own address (and step around the per-address limits) from any host.
    trusted = Settings.from_environ().trusted_proxies.strip()
    options = dict(
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
        host=args.host,
        port=args.port,
        workers=args.workers,
        reload=args.reload,
        timeout_keep_alive=args.timeout_keep_alive,
        http=limited_protocol(args.timeout_headers, args.timeout_body, args.max_connections),
        **WEBSOCKET_OPTIONS,
    )
    config = uvicorn.Config(APP, **options)
    server = uvicorn.Server(config)
    if args.workers > 1 or args.reload:
        # uvicorn's supervisors start the workers; the URL is known before they bind
        print(f"valuegraph running at {_url(args.host, args.port)}", flush=True)
        uvicorn.run(APP, **options)
        return 0
    sockets = [config.bind_socket()]  # bind first: with --port 0 the URL names the real port
    host, port = sockets[0].getsockname()[:2]
    print(f"valuegraph running at {_url(host, port)}", flush=True)
    server.run(sockets=sockets)
    return 0


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    pass  # everything it needs is a VALUEGRAPH_ setting: the Redis URL and the job limits


def worker(args: argparse.Namespace) -> int:
    try:
        settings = Settings.from_environ()
    except ValueError as error:
        raise SystemExit(f"valuegraph: {error}") from None
    if not settings.redis_url:
        raise SystemExit(
            "valuegraph worker: set VALUEGRAPH_REDIS_URL to the Redis the servers use (without it, each server runs "
            "its jobs itself)"
        )
    from .jobs.redisjobs import work  # rq: installed with the [redis] extra

    try:
        print(f"valuegraph worker taking jobs from Redis at {_redis_address(settings.redis_url)}", flush=True)
        work(settings)
    except RuntimeError as error:  # rq not installed
        raise SystemExit(f"valuegraph worker: {error}") from None
    return 0


def _redis_address(url: str) -> str:
    """host:port/db of a Redis URL, without its password."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 6379}{parts.path or '/0'}"


SUBCOMMANDS = {
    "serve": (serve, add_serve_arguments, "start the web server (the default)"),
    "worker": (
        worker,
        add_worker_arguments,
        "run jobs (POST /runs) from the queue on Redis that the servers share (VALUEGRAPH_REDIS_URL), one at a time",
    ),
    "export": (
        export_command,
        add_export_arguments,
        "write a program's walk to a self-contained .html, or .json, .svg, .png",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="valuegraph", description="See reverse-mode autodiff work one scalar at a time."
    )
    parser.add_argument("--version", action="version", version=f"valuegraph {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="command")
    for name, (run, add_arguments, help_text) in SUBCOMMANDS.items():
        subparser = commands.add_parser(name, help=help_text, description=help_text)
        add_arguments(subparser)
        subparser.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["serve", *argv]  # `valuegraph --port 9000` means `valuegraph serve --port 9000`
    args = build_parser().parse_args(argv)
    return args.run(args)


def _url(host: str, port: int) -> str:
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}/"


if __name__ == "__main__":
    sys.exit(main())
