"""Every program of tests/corpus/ (our own, written as micrograd's users write), and micrograd's
own nn.py read from the installed package, runs unchanged and builds micrograd's graph: node count,
op multiset, data and leaf gradients of every backward() call's graph (the first and the last), and
the same loss curve."""

import importlib.util
import re
from pathlib import Path

import pytest
from micrograd_oracle import assert_same_graph, micrograd_calls

from engine import run_program

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.py"))


def test_the_corpus_has_at_least_15_programs():
    assert len(CORPUS) >= 15


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_corpus_program_matches_micrograd(path):
    program = path.read_text(encoding="utf-8")
    assert program.startswith("# "), "each program says first what it exercises"
    calls = micrograd_calls(program)
    assert_same_graph(program, run=-1, oracle_calls=calls)
    if len(calls) > 1:
        assert_same_graph(program, run=0, oracle_calls=calls)
    assert run_program(program).runs  # every corpus program calls backward()


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_every_node_of_a_corpus_program_has_a_place_and_text(path):
    from engine import trace

    program = path.read_text(encoding="utf-8")
    result = run_program(program)
    nodes = trace(result.output).nodes
    lines = program.split("\n")
    for node, origin in zip(nodes, result.origins(nodes)):
        assert origin.span is not None and origin.expr, (node, origin)
        line, column, end_line, end_column = origin.span
        assert 1 <= line <= end_line <= len(lines) and 1 <= column and end_column <= len(lines[end_line - 1]) + 1
    labels = [o.label for o in result.origins(nodes) if o.label]
    assert len(labels) == len(set(labels))  # distinct


# A training loop of our own after micrograd's nn.py as the installed package has it.
NN_TRAINING = """
model = MLP(2, [3, 1])
print(model)
rows = [[0.8, -1.5], [-0.2, 0.6]]
wanted = [1.0, -1.0]
for step in range(2):
    scores = [model(row) for row in rows]
    error = sum((score - goal) ** 2 for score, goal in zip(scores, wanted))
    model.zero_grad()
    error.backward()
    for p in model.parameters():
        p.data -= 0.05 * p.grad
"""


def test_micrographs_own_nn_module_runs_as_cpython_runs_it():
    """nn.py's text from the installed micrograd (read here, never stored in the project), as a
    program: its classes, **kwargs, __repr__ with f-strings, and our loop on top."""
    nn_source = Path(importlib.util.find_spec("micrograd.nn").origin).read_text(encoding="utf-8")
    program = nn_source + NN_TRAINING
    calls = micrograd_calls(program)
    assert len(calls) == 2
    assert_same_graph(program, run=-1, oracle_calls=calls)
    assert_same_graph(program, run=0, oracle_calls=calls)


def page_python_examples() -> dict[str, str]:
    """{id: program} of the page's "micrograd Python" examples, read from static/js/examples.js."""
    script = (Path(__file__).resolve().parents[1] / "static" / "js" / "examples.js").read_text(encoding="utf-8")
    texts = dict(re.findall(r"^const (\w+) = `(.*?)`;$", script, re.M | re.S))
    entries = re.findall(r'\{ id: "([\w-]+)", group: "micrograd Python", title: "[^"]*", program: (\w+) \}', script)
    return {example: texts[name] for example, name in entries}


def test_the_page_has_python_examples():
    assert len(page_python_examples()) == 5


@pytest.mark.parametrize("example", sorted(page_python_examples()))
def test_page_python_example_matches_micrograd(example):
    program = page_python_examples()[example]
    calls = micrograd_calls(program)
    assert_same_graph(program, run=-1, oracle_calls=calls)
    if len(calls) > 1:
        assert_same_graph(program, run=0, oracle_calls=calls)
