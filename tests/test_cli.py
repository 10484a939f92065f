"""The `valuegraph` command: arguments, the default subcommand, and a real server started by it."""

import os
import pickle
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import httpx
import pytest
import uvicorn
from realservers import stop

from app import cli

REPO = Path(__file__).resolve().parent.parent


def test_pyproject_declares_the_console_script():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["valuegraph"] == "app.cli:main"


def test_serve_defaults():
    args = cli.build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.workers, args.reload) == ("127.0.0.1", 8000, 1, False)


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], ("127.0.0.1", 8000, 1, False)),
        (["--port", "9001"], ("127.0.0.1", 9001, 1, False)),
        (["serve", "--host", "0.0.0.0", "--workers", "3"], ("0.0.0.0", 8000, 3, False)),
        (["--reload"], ("127.0.0.1", 8000, 1, True)),
    ],
)
def test_serve_is_the_default_subcommand(monkeypatch, argv, expected):
    calls = []

    def fake_serve(args):
        calls.append((args.host, args.port, args.workers, args.reload))
        return 0

    monkeypatch.setitem(cli.SUBCOMMANDS, "serve", (fake_serve, cli.add_serve_arguments, "test"))
    assert cli.main(argv) == 0
    assert calls == [expected]


def test_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    assert "serve" in capsys.readouterr().out


@pytest.mark.parametrize(
    "option", ["--timeout-headers=0", "--timeout-body=-1", "--max-connections=0", "--timeout-keep-alive=nan"]
)
def test_bad_connection_limits_are_refused(option):
    with pytest.raises(SystemExit) as exit_:
        cli.main([option])
    assert "must be a positive" in str(exit_.value.code)


def test_connection_limits_default_to_the_settings(monkeypatch):
    monkeypatch.setenv("VALUEGRAPH_TIMEOUT_HEADERS", "4.5")
    monkeypatch.setenv("VALUEGRAPH_MAX_CONNECTIONS", "77")
    args = cli.build_parser().parse_args(["serve"])
    assert (args.timeout_headers, args.max_connections, args.timeout_body) == (4.5, 77, 30.0)


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == "valuegraph 0.1.0\n"


def test_reload_with_several_workers_is_refused():
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--reload", "--workers", "2"])
    assert "--reload runs a single worker" in str(exit_.value.code)


def test_several_workers_go_to_uvicorns_supervisor(monkeypatch, capsys):
    runs = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: runs.append((app, options)))
    assert (
        cli.main(
            [
                "--host",
                "0.0.0.0",
                "--port",
                "8123",
                "--workers",
                "2",
                "--timeout-headers",
                "3",
                "--max-connections",
                "50",
            ]
        )
        == 0
    )
    ((app, options),) = runs
    protocol = options.pop("http")
    assert (app, options) == (
        "app.main:app",
        {
            "proxy_headers": False,  # VALUEGRAPH_TRUSTED_PROXIES unset: no forwarded header is believed
            "forwarded_allow_ips": None,
            "host": "0.0.0.0",
            "port": 8123,
            "workers": 2,
            "reload": False,
            "timeout_keep_alive": 5.0,
            "ws_per_message_deflate": False,
        },
    )
    assert protocol.keywords == {"timeout_headers": 3.0, "timeout_body": 30.0, "max_connections": 50}
    assert pickle.loads(pickle.dumps(protocol)).keywords == protocol.keywords  # the workers get it pickled
    assert capsys.readouterr().out == "valuegraph running at http://127.0.0.1:8123/\n"


def test_one_worker_binds_first_and_prints_the_real_port(monkeypatch, capsys):
    served = []

    def fake_run(server, sockets):
        served.append(sockets[0].getsockname()[1])
        sockets[0].close()

    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    assert cli.main(["--port", "0"]) == 0
    (port,) = served
    assert port != 0
    assert capsys.readouterr().out == f"valuegraph running at http://127.0.0.1:{port}/\n"


@pytest.mark.parametrize(
    "host, url",
    [
        ("127.0.0.1", "http://127.0.0.1:80/"),
        ("0.0.0.0", "http://127.0.0.1:80/"),
        ("::", "http://[::1]:80/"),
        ("::1", "http://[::1]:80/"),
    ],
)
def test_url_to_open(host, url):
    assert cli._url(host, 80) == url


def test_the_command_starts_a_server_that_answers():
    """`python -m app.cli --port 0` (what the console script runs), then a real HTTP request."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "--port", "0"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = _wait_for_url(server, timeout=20)
        with httpx.Client(base_url=url, timeout=10) as client:
            for _ in range(100):  # the URL is printed just before uvicorn starts accepting
                try:
                    response = client.post("backward", json={"expression": "a = 2; b = 3; c = a * b; L = c + a"})
                    break
                except httpx.ConnectError:
                    time.sleep(0.1)
            body = response.json()
        assert response.status_code == 200
        assert [(n["label"], n["grad"]) for n in body["nodes"]] == [("a", 4.0), ("b", 2.0), ("c", 1.0), ("L", 1.0)]
    finally:
        stop(server)
        server.stdout.close()


def _wait_for_url(server: subprocess.Popen, timeout: float) -> str:
    found = []

    def read():
        for line in server.stdout:
            if line.startswith("valuegraph running at "):
                found.append(line.split()[-1])
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    assert found, "the server did not print its URL in time"
    return found[0]
