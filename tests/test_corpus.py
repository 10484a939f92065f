"""Every program of tests/corpus/ (micrograd, its lectures and code in their style, as written)
runs unchanged and builds micrograd's graph: node count, op multiset, data and leaf gradients of
every backward() call's graph (the first and the last), and the same loss curve."""

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
    assert program.startswith("# Source:") or program.startswith("# Written in the style")
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
