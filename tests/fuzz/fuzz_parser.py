"""Coverage-guided fuzz target for the parser and the engine behind it (atheris / libFuzzer).

Any bytes become program text (UTF-8; undecodable bytes become lone surrogates, which a JSON
body can carry too), then parse -> evaluate -> trace (every variant) -> nudge test, under small
limits so that each input takes milliseconds. The same text also goes through the Python front
end (issue 10): ast parse -> whitelist -> interpreter -> trace, and the place every node says
it came from must lie inside the text. The only acceptable failure is a ProgramError whose
place (offset, line, column) really points into the text; anything else raised is a crash.

The test suite runs it for a few seconds (tests/fuzz/test_fuzz_parser.py). By hand, for longer,
from the repository root:

    python3 tests/fuzz/fuzz_parser.py -max_total_time=600 -dict=tests/fuzz/program.dict \
        tests/fuzz/seeds tests/fuzz/regressions

The directories named are read, never written: new interesting inputs go to a fresh temporary
directory (its name is printed first), or to the one `--corpus=DIR` names. A crash stops the run and
writes crash-<sha1> in the current directory: fix the bug, then copy that file into
tests/fuzz/regressions/, where the test suite replays it on every run.
"""

import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: find engine/ from here
with atheris.instrument_imports(include=["engine"]):
    from engine import VARIANTS, Limits, ProgramError, ProgramRun, evaluate, measure_leaf_gradients, parse, trace
    from engine.python import run_python

LIMITS = Limits(
    max_source_length=4096,
    max_depth=64,
    max_nodes=2000,
    max_check_evaluations=20_000,
    max_variant_steps=20_000,
    max_statements=20_000,
    max_call_depth=30,
    max_collection_length=2000,
    max_backward_calls=50,
    max_printed_characters=2000,
)
VARIABLES = {"x": 0.5, "y": -2.0, "w": 3.0}


def check_program(data: bytes) -> None:
    """Raises AssertionError, or whatever the engine raised, when data finds a bug."""
    source = data.decode("utf-8", "surrogateescape")
    try:
        output = evaluate(parse(source, LIMITS), VARIABLES)
        for variant in VARIANTS:
            check_trace(trace(output, LIMITS, variant), variant)
        measured = measure_leaf_gradients(output, 1e-4, LIMITS)
        assert all(isinstance(gradient, float) for gradient in measured.values())
    except ProgramError as error:
        check_place(error, source)
    check_python(source)


def check_python(source: str) -> None:
    """The Python front end on the same text: a ProgramError at a right place, or a graph whose
    nodes point into the text."""
    try:
        result = run_python(source, LIMITS, seed=0)
        steps = trace(result.output, LIMITS)
        check_trace(steps, "correct")
        lines = source.replace("\r\n", "\n").split("\n")
        for origin in ProgramRun(result.output, result.runs, result.run, result.printed, result).origins(steps.nodes):
            assert isinstance(origin.expr, str) and len(origin.expr) <= 40
            if origin.span is not None:
                line, column, end_line, end_column = origin.span
                assert 1 <= line <= end_line <= len(lines), f"span {origin.span} outside {len(lines)} lines"
                assert 1 <= column <= len(lines[line - 1]) + 1 and 1 <= end_column <= len(lines[end_line - 1]) + 1, (
                    f"span {origin.span}"
                )
        assert all(isinstance(text, str) for text in result.printed)
    except ProgramError as error:
        check_place(error, source)


def check_place(error: ProgramError, source: str) -> None:
    assert isinstance(error.message, str) and error.message, "an error without a message"
    offset = error.offset
    assert 0 <= offset <= len(source), f"offset {offset} outside a {len(source)}-character program"
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    assert (error.line, error.column) == (line, column), (
        f"{error.message!r} at {error.line}:{error.column}, offset {offset} is {line}:{column}"
    )


def check_trace(steps, variant: str) -> None:
    count = len(steps.nodes)
    assert steps.output == count - 1, "the output is not the last node created"
    if variant == "correct":
        assert sorted(steps.order) == list(range(count)), "the order is not a permutation of the nodes"
        ids = {node: i for i, node in enumerate(steps.nodes)}
        position = {node_id: i for i, node_id in enumerate(steps.order)}
        for parent, node in enumerate(steps.nodes):
            for child in node._children:
                assert position[ids[child]] < position[parent], "a child comes after its parent"
        assert steps.nodes[steps.output].grad == 1.0, "the output's grad is not 1"
    for step in steps.propagate:
        assert 0 <= step.node < count and all(0 <= update.child < count for update in step.updates)


def libfuzzer_arguments(argv: list[str]) -> list[str]:
    """libFuzzer writes what it finds into the first corpus directory it is given: put the directory
    for new inputs first (`--corpus=DIR`, or a fresh temporary one), so that the committed seeds and
    regressions are only read. Given input files instead of directories (to replay a crash), the
    arguments pass unchanged."""
    chosen = [argument.split("=", 1)[1] for argument in argv[1:] if argument.startswith("--corpus=")]
    rest = [argument for argument in argv[1:] if not argument.startswith("--corpus=")]
    options = [argument for argument in rest if argument.startswith("-")]
    inputs = [argument for argument in rest if not argument.startswith("-")]
    if not all(Path(place).is_dir() for place in inputs):
        return [argv[0], *rest]
    corpus = Path(chosen[-1]) if chosen else Path(tempfile.mkdtemp(prefix="valuegraph-fuzz-corpus-"))
    corpus.mkdir(parents=True, exist_ok=True)
    print(f"new inputs go to {corpus}", file=sys.stderr)
    return [argv[0], *options, str(corpus), *inputs]


def main() -> None:
    atheris.Setup(libfuzzer_arguments(sys.argv), check_program)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
