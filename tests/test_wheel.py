"""The distribution works without the checkout: build the sdist, build the wheel from it, install
the wheel (not editable) into a new virtual environment outside the repository, and use it as a
user would. The environment borrows the dependencies installed where the suite runs, so the test
needs no network: a .pth file lists the running interpreter's site-packages, whether that is a
virtual environment or the base interpreter (--system-site-packages would see the base
interpreter's only). It checks that valuegraph itself is imported from the new environment."""

import os
import re
import site
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import httpx
import pytest
from realservers import stop

REPO = Path(__file__).resolve().parent.parent
PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"


def borrowed_site_packages() -> list[str]:
    """Where the running interpreter's dependencies are installed: its site-packages (a virtual
    environment's, or the base interpreter's) and the user's, if it reads that. Listed in a .pth
    file, their own .pth files are not run, so an editable valuegraph there stays out of sight."""
    places = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    return [place for place in places if Path(place).is_dir()]


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, **kwargs)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(environment's bin directory, environment variables, a working directory outside the repository)."""
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    # The sdist first, so the wheel is built from what a package index would get.
    build_sdist = f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))"
    sdist = dist / run([sys.executable, "-c", build_sdist], cwd=REPO).strip().splitlines()[-1]
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(name.endswith("/static/vendor/d3.v7.9.2.min.js") for name in names)
    assert any(name.endswith("/templates/index.html") for name in names)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-w", str(dist), str(sdist)], cwd=root)
    (wheel,) = dist.glob("valuegraph-*.whl")
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    purelib = run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    (Path(purelib.strip()) / "borrowed-dependencies.pth").write_text("\n".join(borrowed_site_packages()) + "\n")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-deps",
            "--no-index",
            "--ignore-installed",
            str(wheel),
        ]
    )
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONUNBUFFERED"] = "1"
    work = root / "elsewhere"
    work.mkdir()
    return venv / "bin", env, work


def test_the_installed_package_is_the_one_imported(installed):
    bin_dir, env, work = installed
    where = run(
        [str(bin_dir / "python"), "-c", "import app, engine; print(app.__file__); print(engine.__file__)"],
        cwd=work,
        env=env,
    )
    for line in where.split():
        assert Path(line).is_relative_to(bin_dir.parent), where


def test_version_and_export(installed):
    bin_dir, env, work = installed
    assert run([str(bin_dir / "valuegraph"), "--version"], cwd=work, env=env).strip() == "valuegraph 0.1.0"
    run([str(bin_dir / "valuegraph"), "export", PROGRAM, "-o", "lesson.html"], cwd=work, env=env)
    lesson = (work / "lesson.html").read_text()
    assert "<script src=" not in lesson and '"label": "L"' in lesson.replace('"label":"L"', '"label": "L"')


def test_the_installed_server_serves_everything(installed):
    bin_dir, env, work = installed
    server = subprocess.Popen(
        [str(bin_dir / "valuegraph"), "--port", "0"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = _printed_url(server)
        with httpx.Client(base_url=url, timeout=20) as client:
            page = _first_answer(client, "/")
            assert page.status_code == 200 and "data-vg" in page.text
            assert client.head("/").status_code == 200
            embed = client.get("/embed", params={"expression": PROGRAM})
            assert embed.status_code == 200 and "data-vg" in embed.text
            (script,) = re.findall(r'src="(/static/js/main\.js\?v=[0-9a-f]+)"', page.text)
            static = client.get(script)
            assert static.status_code == 200 and "import" in static.text
            docs = client.get("/docs")
            assert docs.status_code == 200
            for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', docs.text):
                assert client.get(asset).status_code == 200, asset
            answer = client.get("/backward", params={"expression": PROGRAM})
            assert answer.status_code == 200
            assert [(n["label"], n["grad"]) for n in answer.json()["nodes"]] == [
                ("a", 4.0),
                ("b", 2.0),
                ("c", 1.0),
                ("L", 1.0),
            ]
    finally:
        stop(server)
        output = server.stdout.read()
        server.stdout.close()
    assert "Traceback" not in output, output


def _printed_url(server: subprocess.Popen, timeout: float = 30) -> str:
    found = []

    def read():
        for line in server.stdout:
            if line.startswith("valuegraph running at "):
                found.append(line.split()[-1])
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    assert found, "the installed server did not print its URL"
    return found[0]


def _first_answer(client: httpx.Client, path: str) -> httpx.Response:
    for _ in range(200):  # the URL is printed just before uvicorn accepts
        try:
            return client.get(path)
        except httpx.ConnectError:
            time.sleep(0.05)
    raise AssertionError("the installed server never answered")
