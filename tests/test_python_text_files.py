"""Issue 21, "the program, as written": the Python a one-file character model needs (strings and
their methods, f-strings with format specs, print's end, files given with the request, random as
CPython's, lambdas with defaults and the built-ins over generators). Each program of
tests/text_and_files/ is run by CPython in a separate process, in a folder holding the same files,
with valuegraph's own Value class as micrograd.engine.Value, and through POST /backward with
`files`: the printed text must be identical, character for character ('\\r' included)."""

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from app.config import Settings
from engine import Limits, ProgramError, run_program

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent / "text_and_files"
ROOT = Path(__file__).parent.parent
NAMES = (HERE / "names.txt").read_text(encoding="utf-8")
MODEL = (HERE / "tiny_char_model.py").read_text(encoding="utf-8")
FEATURES = (HERE / "text_and_builtins.py").read_text(encoding="utf-8")

HARNESS = """
import runpy, sys, types
from engine.value import Value
engine_module = types.ModuleType("micrograd.engine")
engine_module.Value = Value
sys.modules["micrograd"] = types.ModuleType("micrograd")
sys.modules["micrograd.engine"] = engine_module
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def cpython_stdout(program: str, files: dict) -> str:
    """What CPython writes to stdout for the program, run in a folder holding `files`."""
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            Path(folder, name).write_text(text, encoding="utf-8", newline="")
        Path(folder, "program.py").write_text(program, encoding="utf-8")
        Path(folder, "harness.py").write_text(HARNESS, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "harness.py", "program.py"],
            cwd=folder,
            capture_output=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout.decode("utf-8")


def as_stdout(printed: list[str]) -> str:
    """`printed` as the text a terminal was sent: its lines, each ended by a newline."""
    return "".join(line + "\n" for line in printed)


async def printed_through_the_api(client, program: str, files: dict, **fields) -> list[str]:
    response = await client.post("/backward", json={"expression": program, "files": files, **fields})
    assert response.status_code == 200, response.text[:500]
    return response.json()["printed"]


@pytest.mark.parametrize(
    ("program", "files"),
    [
        (MODEL, {"input.txt": NAMES}),
        (FEATURES, {"input.txt": NAMES}),
        # variants: another seed, more steps and a wider model; other names, with Windows line ends
        (
            MODEL.replace("random.seed(7)", "random.seed(11)")
            .replace("steps = 3", "steps = 4")
            .replace("width = 4", "width = 3"),
            {"input.txt": "Ann\r\nbo\r\n\r\nCara\r\ndee\r\n"},
        ),
        (FEATURES.replace("random.seed(2026)", "random.seed(5)"), {"input.txt": NAMES.upper()}),
    ],
    ids=["tiny_char_model", "text_and_builtins", "model_variant", "features_variant"],
)
async def test_the_program_prints_what_cpython_prints(client, program, files):
    expected = cpython_stdout(program, files)
    printed = await printed_through_the_api(client, program, files)
    assert as_stdout(printed) == expected
    assert expected.count("\n") >= 4


async def test_a_progress_line_ended_by_a_carriage_return_is_kept_whole_in_printed(client):
    printed = await printed_through_the_api(client, MODEL, {"input.txt": NAMES})
    progress = next(line for line in printed if line.startswith("step"))
    assert progress.count("\r") == 3 and progress.endswith("\r")  # every loss line, as CPython wrote them
    assert [part[:16] for part in progress.split("\r")[:3]] == [
        "step    1 /    3",
        "step    2 /    3",
        "step    3 /    3",
    ]


@pytest.mark.parametrize("seed", [0, 42, 2**32 - 1])
def test_random_gives_cpythons_numbers_for_the_seed(seed):
    program = (
        f"import random\nrandom.seed({seed})\nxs = list(range(20))\nrandom.shuffle(xs)\n"
        "print(xs)\nprint(random.gauss(0, 0.08), random.gauss(0, 0.08), random.uniform(-2, 3), random.random())\n"
        "print(random.choices(range(5), weights=[1, 2, 3, 0, 4], k=8), random.choices('abc'), random.choice(xs))\n"
        "print(random.choices(['x', 'y'], cum_weights=[0.5, 1.0], k=3))\nv = Value(1.0)"
    )
    rng = random.Random(seed)
    xs = list(range(20))
    rng.shuffle(xs)
    expected = [
        repr(xs),
        " ".join(repr(x) for x in (rng.gauss(0, 0.08), rng.gauss(0, 0.08), rng.uniform(-2, 3), rng.random())),
        f"{rng.choices(range(5), weights=[1, 2, 3, 0, 4], k=8)} {rng.choices('abc')} {rng.choice(xs)}",
        repr(rng.choices(["x", "y"], cum_weights=[0.5, 1.0], k=3)),
    ]
    assert run_program(program).printed == expected


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("import random\nrandom.shuffle((1, 2))", "random.shuffle() shuffles a list in place, not tuple"),
        ("import random\nrandom.choices([1, 2], weights=[1])", "random.choices(): 1 weights for 2 items"),
        ("import random\nrandom.choices([1, 2], weights=[0, 0])", "random.choices(): Total of weights must be greater"),
        ("import random\nrandom.choices([1], k=10**9)", "would pick 1,000,000,000 items; the limit is 100,000"),
    ],
)
def test_random_refuses_what_cpython_refuses_with_a_clear_message(program, message):
    with pytest.raises(ProgramError) as caught:
        run_program(program + "\nv = Value(1.0)")
    assert message in caught.value.message and caught.value.span.line == 2


async def test_a_guarded_download_runs_only_without_the_file(client):
    given = await printed_through_the_api(client, MODEL, {"input.txt": NAMES})
    assert given[0].startswith("names: 26")
    response = await client.post("/backward", json={"expression": MODEL})
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "`urllib.request` is not available: valuegraph has no network" in detail["message"]
    assert "Add the file the program would download in Files (for example input.txt)" in detail["message"]
    assert MODEL.splitlines()[detail["line"] - 1].strip().startswith("import urllib.request")


@pytest.mark.parametrize(
    ("program", "message", "line"),
    [
        (
            "x = open('names.txt').read()",
            "no file named 'names.txt': add names.txt in Files (files given: input.txt)",
            1,
        ),
        ("f = open('input.txt', 'w')", "writing files is not available", 1),
        ("with open('input.txt', mode='a') as f:\n    pass", "writing files is not available", 1),
        ("import os\nos.remove('input.txt')", "os.remove is not available; os offers path", 2),
        ("import os\nos.path.join('a', 'b')", "os.path.join is not available; os.path offers exists", 2),
        ("from os import listdir", "`from os import listdir` is not available; os offers path", 1),
        ("import sys\nprint(sys.argv)", "`import sys` is not available: valuegraph offers math, random and os.path", 1),
        ("import json", "`import json` is not available", 1),
        ("from urllib.request import urlretrieve", "`urllib.request` is not available", 1),
    ],
)
def test_files_are_read_only_and_other_modules_are_refused_with_what_to_do(program, message, line):
    with pytest.raises(ProgramError) as caught:
        run_program(program + "\nv = Value(1.0)", files={"input.txt": "a\n"})
    assert message in caught.value.message
    assert caught.value.span.line == line


def test_a_file_reads_as_cpythons_text_mode():
    program = (
        "import os.path\nwith open('in.txt') as f:\n    lines = [line for line in f]\n"
        "f = open('in.txt')\nwhole = f.read()\nrest = f.read()\nf.close()\n"
        "print(lines, repr(whole), repr(rest), os.path.exists('in.txt'))\nv = Value(1.0)"
    )
    result = run_program(program, files={"in.txt": "a\r\nb\rc\nlast"})
    assert result.printed == ["['a\\n', 'b\\n', 'c\\n', 'last'] 'a\\nb\\nc\\nlast' '' True"]


async def test_files_are_bounded_by_a_named_limit(make_client):
    assert Settings.from_environ({"VALUEGRAPH_MAX_FILES_BYTES": "12"}).limits.max_files_bytes == 12
    client = make_client(max_files_bytes=12)
    program = "print(open('input.txt').read())\nv = Value(1.0)"
    inside = await client.post("/backward", json={"expression": program, "files": {"input.txt": "é" * 1}})
    assert inside.status_code == 200 and inside.json()["printed"] == ["é"]
    outside = await client.post("/backward", json={"expression": program, "files": {"input.txt": "é" * 2}})
    assert outside.status_code == 400
    assert "the files given are 13 bytes; the limit is 12" in outside.json()["detail"]["message"]


async def test_files_are_part_of_the_request_and_of_its_cache_key(client):
    program = "print(open('input.txt').read().split())\nv = Value(1.0)"
    first = await printed_through_the_api(client, program, {"input.txt": "ann bo"})
    second = await printed_through_the_api(client, program, {"input.txt": "cara"})
    assert first == ["['ann', 'bo']"] and second == ["['cara']"]
    assert (await client.post("/backward", json={"graph": json.loads(GRAPH), "files": {"a": "b"}})).status_code == 422
    shorthand = await client.post("/backward", json={"expression": "a = 2; b = a * a", "files": {"a": "b"}})
    assert shorthand.status_code == 400 and "files are read by Python programs" in shorthand.json()["detail"]["message"]
    schema = (await client.get("/openapi.json")).json()["components"]["schemas"]["BackwardRequest"]
    assert "files" in schema["properties"]


GRAPH = '{"nodes": [{"id": 0, "label": "a", "data": 2.0, "children": [], "local_grads": []}], "output": 0}'


def test_strings_are_bounded_by_a_named_limit():
    assert Settings.from_environ({"VALUEGRAPH_MAX_TEXT_LENGTH": "7"}).limits.max_text_length == 7
    limits = Limits(max_text_length=10)
    for program in (
        "s = 'abcdef' + 'ghijk'",
        "s = 'a' * 11",
        "s = '-'.join(['abcde', 'fghij'])",
        "s = f'{12345678901}'",
    ):
        with pytest.raises(ProgramError, match="a string would be 11 characters long; the limit is 10"):
            run_program(program + "\nv = Value(1.0)", limits=limits)
    assert run_program("s = 'abcde' + 'fghij'\nprint(s)\nv = Value(1.0)", limits=limits).printed == ["abcdefghij"]
