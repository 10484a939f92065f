"""The project holds only what its team wrote (issue 23 §3): no tracked file says it was taken from
another project's source. Vendored libraries keep their own files and licences in static/vendor/
and tests/browser/vendor/; where a test needs micrograd's code, it reads it from the installed
package at test time (tests/test_corpus.py, tests/micrograd_oracle.py)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENDORED = ("static/vendor/", "tests/browser/vendor/")
# Words with which a file says that its text or code came from elsewhere.
TAKEN = re.compile(
    r"source:\s*(?:\S+/)?karpathy|karpathy/(?:micrograd|nn-zero-to-hero)\b.*(?:\.py|\.ipynb)"
    r"|\b(?:taken|copied|pasted|transcribed|ported|adapted|lifted)(?: \w+){0,3} from\b|\bpasted whole\b"
    r"|\bas (?:its|their) authors? wrote\b",
    re.IGNORECASE,
)


def tracked_text_files():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        path = ROOT / name
        if name.startswith(VENDORED) or path == Path(__file__).resolve() or not path.is_file():
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images and other binary files


def claims_of_origin(text):
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if TAKEN.search(line)]


def test_no_file_says_it_was_taken_from_another_projects_source():
    found = [
        f"{name}:{number}: {line[:100]}"
        for name, text in tracked_text_files()
        for number, line in claims_of_origin(text)
    ]
    assert not found, "files that say they come from another project's source:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        '# Source: karpathy/micrograd, README.md, "Example usage".',
        "# Source: Karpathy's microgpt (the single-file GPT): its softmax helper",
        "# micrograd/nn.py as PyPI micrograd 0.1.0 installs it, pasted whole, then a loop",
        "the snippets were transcribed by hand from the sources named in each file",
        "// code copied from the lecture notebook",
        "kept as its authors wrote it (their names, comments and spacing)",
    ],
)
def test_the_check_recognises_a_claim_of_origin(line):
    assert claims_of_origin(line)


@pytest.mark.parametrize(
    "line",
    [
        "Python in the style of [micrograd](https://github.com/karpathy/micrograd)",
        "platforms that turn pasted links into embeds",
        "Tables are Markdown so the figures can be pasted into docs/performance.md",
    ],
)
def test_the_check_lets_a_link_or_a_mention_be(line):
    assert not claims_of_origin(line)
