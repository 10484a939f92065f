"""The documentation, tested as code (README.md and docs/*.md; the conventions are in
docs/contributing.md, "Documentation"):

- every setting of app.config.Settings is documented in docs/operating.md, and every VALUEGRAPH_*
  name the documentation mentions is a setting (or a test-only variable listed here);
- every link between pages and to repository files resolves, anchors included;
- every `curl` command in a sh block runs against the app in-process, and equals the json block that
  follows it, if any; every `valuegraph` command runs (a server is started and asked, an export is
  written); every python block runs as a script (against a real server when it says it needs one);
- every other shell command is in NOT_RUN, with the reason it is not run;
- the README stays short, and lines of prose stay readable."""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, fields
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from realservers import app_server, free_port, redis_server

from app.config import PREFIX, Settings
from app.main import create_app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
DOCUMENTED_HOST = "http://127.0.0.1:8000"  # where the examples say `valuegraph` serves
NEEDS_SERVER = f"# needs a server at {DOCUMENTED_HOST}"

# Shell commands the suite does not run, each with why. Keep this short: a command that can run, runs.
NOT_RUN = {
    "apt-get update": "changes the machine's package lists; CI runs it (.ci/run)",
    "apt-get install -y chromium redis-server mono-mcs mono-runtime": "installs system packages; CI runs it "
    "(.ci/run), and the browser, Teach live and C# snippet tests fail without them",
    "npm ci --prefix tests": "installs the node packages the tests run (tests/package.json); CI runs it (.ci/run)",
    "apt-get install -y wrk": "installs a system package, for the benchmarks only",
    "pip install -c constraints.txt -e .": "changes the installed packages; test_pip_commands_name_real_extras "
    "checks it, test_readme.py checks what is installed against constraints.txt",
    "pip install -c constraints.txt -e '.[test]'": "as above; CI runs it (.ci/run)",
    "pip install -c constraints.txt -e '.[redis]'": "as above",
    "pip install -c constraints.txt -e '.[export]'": "as above",
    "apt-get install -y chromium": "installs a system package; CI installs it (.ci/run)",
    "pip install -c constraints.txt -e '.[test,bench]'": "as above",
    "pip install --upgrade --upgrade-strategy eager -e '.[test,bench]'": "upgrades the installed packages "
    "from the network",
    "python3 .ci/lock_dependencies.py": "rewrites constraints.txt, a tracked file",
    "python3 -m pytest": "the whole suite: this test is part of it",
    "python3 -m pytest -n0 tests/test_api.py": "a part of the suite, which runs that file itself",
    "python3 tests/fuzz/fuzz_parser.py -max_total_time=600 -dict=tests/fuzz/program.dict tests/fuzz/seeds "
    "tests/fuzz/regressions": "fuzzes for ten minutes; tests/fuzz/test_fuzz_parser.py runs the same target for "
    "VALUEGRAPH_FUZZ_SECONDS, and the same command for 3 s",
    "python3 docs/screenshots.py": "rewrites the pictures in static/img, tracked files; the browser tests show "
    "the page through its functions and check what it shows",
    "pip wheel .": "tests/test_wheel.py builds the sdist, the wheel from it, and installs that in a new "
    "virtual environment",
    "pip install 'valuegraph-*.whl'": "as above",
    "valuegraph worker": "takes jobs until stopped; tests/test_jobs_redis.py starts it beside a real redis-server "
    "(tests/realservers.py, job_worker)",
    "uvicorn app.main:app": "tests/realservers.py starts the app this way (app_server) for the Teach live tests "
    "and for this file's server example",
}

# VALUEGRAPH_* names that are not settings of the app: variables only the tests read.
TEST_VARIABLES = {"VALUEGRAPH_FUZZ_SECONDS": ROOT / "tests" / "fuzz" / "test_fuzz_parser.py"}

# Files the documented commands read, as a reader would have them (docs/teaching.md, "Export").
EXAMPLE_FILES = {
    "program.txt": "a = 2; b = 3; c = a * b; L = c + a\n",
    "mymodel.py": "from engine import Value\n\na = Value(2.0, label='a')\nloss = a * a + a\n",
    "training.py": (
        "import random\n"
        "w = Value(random.uniform(-1, 1), label='w')\n"
        "for k in range(3):\n"
        "    loss = (w * 2 - 1) ** 2\n"
        "    loss.backward()\n"
        "    w.data += -0.1 * w.grad\n"
        "    w.grad = 0\n"
    ),
}


# ---- reading the pages ----


@dataclass(frozen=True)
class Block:
    page: Path
    language: str
    text: str
    line: int  # of the opening fence
    start: int
    end: int

    def __str__(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [
        Block(page, m[1], m[2], text.count("\n", 0, m.start()) + 1, m.start(), m.end()) for m in FENCE.finditer(text)
    ]


def prose(page: Path) -> str:
    """The page without its fenced blocks (their lines kept, empty, so line numbers hold)."""
    return FENCE.sub(lambda m: "\n" * m[0].count("\n"), page.read_text(encoding="utf-8"))


def all_blocks(language: str) -> list[Block]:
    return [block for page in PAGES for block in blocks(page) if block.language == language]


def commands(block: Block) -> list[list[str]]:
    """A sh block's commands: each logical line (backslash continuations joined, comments dropped)
    split into its `&&`-joined parts, each part a list of words."""
    parts = []
    for line in block.text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            parts.append(words[:cut])
            words = words[cut + 1 :]
    return parts


COMMAND_SPAN = re.compile(r"`((?:valuegraph|python3|pip|uvicorn|curl|apt-get) [^`\n]+)`")


def shell_commands() -> list[tuple[str, list[str]]]:
    """Every command the docs show, as (where, words): those in sh blocks, and those in the prose's
    code spans (`valuegraph --version`)."""
    found = [(str(block), words) for block in all_blocks("sh") for words in commands(block)]
    for page in PAGES:
        for number, line in enumerate(prose(page).splitlines(), 1):
            for span in COMMAND_SPAN.findall(line):
                where = f"{page.relative_to(ROOT)}:{number}"
                found += [(where, words) for words in commands(Block(page, "sh", span, number, 0, 0))]
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(page), re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


# ---- settings ----

SETTING_NAME = re.compile(r"\bVALUEGRAPH_[A-Z0-9_]*[A-Z0-9]\b")


def settings_variables() -> set[str]:
    return {PREFIX + field.name.upper() for field in fields(Settings)}


def test_every_setting_is_documented_in_operating():
    operating = (DOCS / "operating.md").read_text(encoding="utf-8")
    in_tables = set(re.findall(r"^\| `(VALUEGRAPH_[A-Z0-9_]+)` \|", operating, re.M))
    missing = settings_variables() - in_tables
    assert not missing, f"settings without a row in a table of docs/operating.md: {sorted(missing)}"


def test_every_documented_setting_exists():
    known = settings_variables() | set(TEST_VARIABLES)
    for page in PAGES:
        unknown = set(SETTING_NAME.findall(page.read_text(encoding="utf-8"))) - known
        assert not unknown, f"{page.relative_to(ROOT)} names settings app/config.py does not have: {sorted(unknown)}"


def test_the_test_only_variables_are_read_by_the_tests():
    for variable, reader in TEST_VARIABLES.items():
        assert variable in reader.read_text(encoding="utf-8"), f"{variable} is no longer read by {reader}"


# ---- links ----

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`[^`\n]+`")
REPOSITORY_PATH = re.compile(r"`((?:\.?[\w-]+/)+(?:[\w.-]+\.\w+)?)`")


def test_every_link_resolves_anchors_included():
    checked = 0
    for page in PAGES:
        for target in LINK.findall(INLINE_CODE.sub("", prose(page))):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto: leave the repository
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)} links to {target}"
            assert resolved.exists(), f"{where}: no such file"
            assert resolved.is_relative_to(ROOT), f"{where}: outside the repository"
            if anchor:
                assert resolved.suffix == ".md", f"{where}: an anchor into a file that is not a page"
                assert anchor in anchors(resolved), f"{where}: no such heading (has {sorted(anchors(resolved))})"
            checked += 1
    assert checked > 40  # the pages do link to one another


def test_every_repository_path_named_in_the_docs_exists():
    """`app/layout.py`, `tests/golden/`, `static/vendor/`: a file or folder named in code font."""
    named = {(page, path) for page in PAGES for path in REPOSITORY_PATH.findall(prose(page))}
    assert len(named) > 20
    missing = [f"{page.relative_to(ROOT)}: {path}" for page, path in sorted(named) if not (ROOT / path).exists()]
    assert not missing, missing


def test_the_anchor_rule_is_githubs():
    assert slug("POST /backward") == "post-backward"
    assert slug("GET /backward and /healthz") == "get-backward-and-healthz"
    assert slug("SCORM 1.2") == "scorm-12"
    assert slug("Python for micrograd") == "python-for-micrograd"


# ---- shape ----


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail into docs/"


def test_lines_of_prose_stay_readable():
    long_lines = []
    for page in PAGES:
        for number, line in enumerate(prose(page).splitlines(), 1):
            in_table = line.lstrip().startswith("|")
            if not in_table and len(line) > 120:
                long_lines.append(f"{page.relative_to(ROOT)}:{number} has {len(line)} characters")
    assert not long_lines, long_lines


def test_each_audience_has_its_page_and_the_index_links_them():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for name in ("learners", "api", "teaching", "operating", "contributing", "performance"):
        assert (DOCS / f"{name}.md").exists()
        assert f"]({name}.md)" in index


# ---- shell commands ----


def is_curl(words):
    return words[0] == "curl"


def valuegraph_arguments(words) -> tuple[dict[str, str], list[str]] | None:
    """(environment, arguments) of a `[NAME=value ...] valuegraph ...` command, else None."""
    environment = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, _, value = words[0].partition("=")
        environment[name] = value
        words = words[1:]
    if not words or words[0] != "valuegraph":
        return None
    return environment, words[1:]


def is_export(words):
    found = valuegraph_arguments(words)
    return found is not None and found[1][:1] == ["export"] and not is_help(words)


def is_serve(words):
    found = valuegraph_arguments(words)
    return (
        found is not None
        and (not found[1] or found[1][0] in ("serve", "--workers", "--host", "--port"))
        and (not is_help(words))
    )


def is_help(words):
    found = valuegraph_arguments(words)
    return found is not None and bool({"--help", "-h", "--version"} & set(found[1]))


def is_benchmark(words):
    return words[:2] == ["python3", "-m"] and words[2].startswith("benchmarks.")


# Commands of these kinds are run by the tests below; benchmarks are checked, not run (they measure
# for minutes: test_benchmark_commands_name_real_modules_and_sections).
RUNNERS = (is_curl, is_export, is_serve, is_help, is_benchmark)


def test_every_shell_command_is_run_or_listed_with_a_reason():
    unaccounted = [
        f"{where}: {shlex.join(words)}"
        for where, words in shell_commands()
        if not any(run(words) for run in RUNNERS) and shlex.join(words) not in NOT_RUN
    ]
    assert not unaccounted, f"run these in a test, or list them in NOT_RUN with the reason: {unaccounted}"


def test_the_not_run_list_has_no_stale_entries():
    shown = {shlex.join(words) for _, words in shell_commands()}
    assert not set(NOT_RUN) - shown, f"no longer in the docs: {sorted(set(NOT_RUN) - shown)}"


def test_benchmark_commands_name_real_modules_and_sections():
    runner = (ROOT / "benchmarks" / "run.py").read_text(encoding="utf-8")
    sections = set(re.findall(r'^    "(\w+)": bench_\w+\.main,$', runner, re.M))
    assert len(sections) >= 5
    benchmarks = [(where, words) for where, words in shell_commands() if is_benchmark(words)]
    assert len(benchmarks) >= 10
    for where, words in benchmarks:
        module = ROOT / (words[2].replace(".", "/") + ".py")
        assert module.exists(), f"{where}: no module {words[2]}"
        if "--only" in words:
            named = set(words[words.index("--only") + 1].split(","))
            assert named <= sections, f"{where}: benchmarks.run has no section {named - sections}"


def test_pip_commands_name_real_extras_and_the_constraints():
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    pips = [
        (where, words)
        for where, words in shell_commands()
        if words[:2] == ["pip", "install"] and not words[-1].endswith(".whl")  # a wheel: tests/test_wheel.py
    ]
    assert len(pips) >= 4
    for block, words in pips:
        target = words[-1]
        assert target.startswith("."), f"{block}: installs {target}, not this checkout"
        named = set(re.findall(r"\[([^\]]*)\]", target)[0].split(",")) if "[" in target else set()
        assert named <= extras, f"{block}: no such extra {named - extras}"
        if "--upgrade" not in words:  # an upgrade moves past the lock on purpose
            assert words[2:4] == ["-c", "constraints.txt"], f"{block}: installs without -c constraints.txt"


# curl, through the app in-process


@dataclass
class CurlRequest:
    method: str
    url: str
    headers: dict[str, str]
    body: str | None
    output: str | None


def parse_curl(words: list[str]) -> CurlRequest:
    method, url, headers, body, output = None, None, {}, None, None
    rest = iter(words[1:])
    for word in rest:
        if word in ("-s", "--silent"):
            continue
        if word in ("-H", "--header"):
            name, _, value = next(rest).partition(":")
            headers[name.strip().lower()] = value.strip()
        elif word in ("-d", "--data"):
            body = next(rest)
        elif word in ("-X", "--request"):
            method = next(rest)
        elif word in ("-o", "--output"):
            output = next(rest)
        elif word.startswith("http"):
            url = word
        else:
            raise AssertionError(f"the docs' curl uses {word!r}, which this test does not understand")
    assert url and url.startswith(DOCUMENTED_HOST + "/"), f"curl of {url}: examples address {DOCUMENTED_HOST}"
    return CurlRequest(method or ("POST" if body is not None else "GET"), url, headers, body, output)


def curl_examples() -> list[tuple[Block, list[str], object]]:
    """Every curl command, with the JSON the docs show right after its block (or None)."""
    found = []
    for page in PAGES:
        page_blocks = blocks(page)
        text = page.read_text(encoding="utf-8")
        for block, following in zip(page_blocks, [*page_blocks[1:], None]):
            if block.language != "sh":
                continue
            curls = [words for words in commands(block) if is_curl(words)]
            shown = None
            if following and following.language == "json" and not text[block.end : following.start].strip():
                assert len(curls) == 1, f"{block}: the answer shown must follow a block of one curl"
                shown = json.loads(following.text)
            found += [(block, words, shown) for words in curls]
    return found


CURLS = curl_examples()


def test_there_are_curl_examples_with_their_answers():
    assert len(CURLS) >= 8
    assert sum(shown is not None for *_, shown in CURLS) >= 3


@pytest.mark.anyio
@pytest.mark.parametrize(("block", "words", "shown"), CURLS, ids=[f"{b}" for b, *_ in CURLS])
async def test_curl_example_runs_against_the_app(block, words, shown, tmp_path):
    request = parse_curl(words)
    parts = urlsplit(request.url)
    transport = httpx.ASGITransport(app=create_app(Settings()))
    async with httpx.AsyncClient(transport=transport, base_url=f"{parts.scheme}://{parts.netloc}") as client:
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        response = await client.request(request.method, path, headers=request.headers, content=request.body)
    if shown is not None:
        assert response.json() == shown, f"{block}: the answer differs from the JSON the docs show"
        expected_error = isinstance(shown, dict) and "detail" in shown
        assert (response.status_code >= 400) == expected_error, f"{block}: status {response.status_code}"
    else:
        assert response.status_code == 200, f"{block}: {response.status_code} {response.text[:300]}"
    if request.output:
        assert len(response.content) > 1000, f"{block}: {request.output} would be nearly empty"


# valuegraph commands, as processes


def valuegraph_process(arguments: list[str]) -> list[str]:
    """The console script pyproject.toml declares (app.cli:main), run from this checkout."""
    return [sys.executable, "-m", "app.cli", *arguments]


def process_environment(extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **extra}


EXPORTS = [(where, words) for where, words in shell_commands() if is_export(words)]


def test_there_are_export_commands():
    assert len(EXPORTS) >= 3


@pytest.mark.parametrize(("block", "words"), EXPORTS, ids=[shlex.join(w[1:3]) for _, w in EXPORTS])
def test_export_command_writes_its_file(block, words, tmp_path):
    for name, text in EXAMPLE_FILES.items():
        (tmp_path / name).write_text(text)
    environment, arguments = valuegraph_arguments(words)
    done = subprocess.run(
        valuegraph_process(arguments),
        cwd=tmp_path,
        env=process_environment(environment),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{block}: {shlex.join(words)}\n{done.stderr}"
    output = tmp_path / arguments[arguments.index("-o") + 1]
    start = output.read_bytes()[:200].lstrip().lower()
    assert start.startswith({".html": b"<!doctype html", ".svg": b"<svg", ".json": b"{"}[output.suffix]), start


def serve_commands() -> list[tuple[str, list[str]]]:
    """One start per set of options: where a command is shown both with settings in its environment
    and without, the one with settings (it tests more)."""
    chosen: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    for where, words in shell_commands():
        if is_serve(words):
            environment, arguments = valuegraph_arguments(words)
            known = chosen.get(tuple(arguments))
            if known is None or len(environment) > len(valuegraph_arguments(known[1])[0]):
                chosen[tuple(arguments)] = (where, words)
    return list(chosen.values())


SERVES = serve_commands()


def test_there_are_serve_commands():
    assert len(SERVES) >= 2  # the README's start command, and Teach live with Redis


def wait_for_health(url: str, process: subprocess.Popen, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server exited with {process.returncode}"
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"no answer from {url} within {seconds} s")


@pytest.mark.parametrize(("block", "words"), SERVES, ids=[shlex.join(w) for _, w in SERVES])
def test_serve_command_serves(block, words, tmp_path):
    """The command as documented, on a free port (and with Redis on a free port where it names one):
    it answers /healthz, and opens a Teach live room, in Redis when it names one."""
    environment, arguments = valuegraph_arguments(words)
    with redis_server() if "VALUEGRAPH_REDIS_URL" in environment else nullcontext() as redis_url:
        if redis_url is not None:  # the documented address, with the throwaway server's port
            port = urlsplit(redis_url).port
            environment["VALUEGRAPH_REDIS_URL"] = re.sub(r":\d+/", f":{port}/", environment["VALUEGRAPH_REDIS_URL"])
        port = free_port()
        process = subprocess.Popen(
            valuegraph_process([*arguments, "--port", str(port)]),
            cwd=tmp_path,
            env=process_environment(environment),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its workers too are stopped below, by this group's id
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_for_health(url, process)
            state = {"expression": "a = 2; b = 3; c = a * b; L = c + a"}
            room = httpx.post(f"{url}/rooms", json={"state": state}, timeout=10)
            assert room.status_code in (200, 201), room.text
            if redis_url is not None:
                import redis

                with redis.Redis.from_url(redis_url) as client:
                    assert client.keys("vg:room:*"), "the room is not in Redis"
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


HELPS = [(where, words) for where, words in shell_commands() if is_help(words)]


@pytest.mark.parametrize(("where", "words"), HELPS, ids=[shlex.join(w) for _, w in HELPS])
def test_help_and_version_commands_answer(where, words, tmp_path):
    environment, arguments = valuegraph_arguments(words)
    done = subprocess.run(
        valuegraph_process(arguments),
        cwd=tmp_path,
        env=process_environment(environment),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith(("usage: valuegraph", "valuegraph ")), (
        f"{where}: {shlex.join(words)}\n{done.stdout}{done.stderr}"
    )


# ---- python examples ----

PYTHONS = all_blocks("python")


def test_there_are_python_examples():
    assert len(PYTHONS) >= 2
    assert any(block.text.startswith(NEEDS_SERVER) for block in PYTHONS)


@pytest.mark.parametrize("block", PYTHONS, ids=str)
def test_python_example_runs(block, tmp_path):
    script = tmp_path / "example.py"
    if block.text.startswith(NEEDS_SERVER):
        with app_server() as server:
            script.write_text(block.text.replace(DOCUMENTED_HOST, server.url))
            done = _run_script(script)
    else:
        assert DOCUMENTED_HOST not in block.text, f"{block}: talks to a server; start it with '{NEEDS_SERVER}'"
        for name, text in EXAMPLE_FILES.items():
            (tmp_path / name).write_text(text)
        script.write_text(block.text)
        done = _run_script(script)
    assert done.returncode == 0, f"{block}:\n{done.stdout}\n{done.stderr}"


def _run_script(script: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        env=process_environment({}),
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---- html examples ----


@pytest.mark.anyio
async def test_html_examples_address_pages_that_exist():
    sources = [(block, url) for block in all_blocks("html") for url in re.findall(r'src="([^"]+)"', block.text)]
    assert sources
    transport = httpx.ASGITransport(app=create_app(Settings()))
    async with httpx.AsyncClient(transport=transport, base_url=DOCUMENTED_HOST) as client:
        for block, url in sources:
            assert url.startswith(DOCUMENTED_HOST + "/"), f"{block}: {url}"
            response = await client.get(url.removeprefix(DOCUMENTED_HOST))
            assert response.status_code == 200, f"{block}: {url} answers {response.status_code}"
