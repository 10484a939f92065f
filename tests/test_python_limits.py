"""The limits of Python programs: each named in engine.Limits and app Settings (VALUEGRAPH_*),
each refusing with a clear message at the place, and a program just inside each one running."""

import pytest

from app.config import Settings
from engine import Limits, ProgramError, run_program

pytestmark = pytest.mark.anyio

LOOP = "x = Value(1.0)\nfor i in range({n}):\n    y = x * 2\n"
RECURSION = "def f(n):\n    return Value(1.0) if n == 0 else f(n - 1) * 2\ny = f({n})\n"
LIST = "x = Value(1.0)\nxs = [i for i in range({n})]\n"
BACKWARD = "x = Value(1.0)\nfor i in range({n}):\n    y = x * 2\n    y.backward()\n"
PRINTING = "x = Value(1.0)\nfor i in range({n}):\n    print('ab')\n"

CASES = [
    # (limit name, program, inside, outside, message)
    ("max_statements", LOOP, 4, 20, "the program ran more than 10 statements; the limit is 10"),
    ("max_call_depth", RECURSION, 9, 10, "calls nest deeper than 10"),
    ("max_collection_length", LIST, 10, 11, "a list would hold more than 10 items; the limit is 10"),
    ("max_backward_calls", BACKWARD, 10, 11, "the program calls backward() more than 10 times; the limit is 10"),
]


@pytest.mark.parametrize("name, program, inside, outside, message", CASES, ids=[c[0] for c in CASES])
def test_each_limit_refuses_past_it_and_allows_within(name, program, inside, outside, message):
    limits = Limits(**{name: 10})
    run_program(program.format(n=inside), limits=limits)
    with pytest.raises(ProgramError) as caught:
        run_program(program.format(n=outside), limits=limits)
    assert message in caught.value.message
    assert caught.value.line >= 2


def test_printing_stops_at_its_limit_and_says_so():
    limits = Limits(max_printed_characters=10)
    assert run_program(PRINTING.format(n=3), limits=limits).printed == ["ab", "ab", "ab"]
    printed = run_program(PRINTING.format(n=10), limits=limits).printed
    assert printed[:3] == ["ab", "ab", "ab"] and printed[3] == "a"
    assert printed[-1] == "… (print output stops here: the limit is 10 characters)"


def test_a_long_separator_between_many_values_is_joined_only_as_far_as_the_limit():
    """print(*xs, sep=s) at the limits would join 10**11 characters before the limit cut them; the
    output is the same as joining whole and cutting, and every value's own __repr__ still runs."""
    program = (
        "class Loud:\n    def __repr__(self):\n        said.append(1)\n        return 'L'\n"
        "said = []\nx = Value(1.0)\ns = 'ab' * 500_000\nxs = [Loud() for i in range(100_000)]\n"
        "print(*xs, sep=s)\nprint(len(said))\nprint(1, 2, 3, sep='-')\nL = x * len(said)\n"
    )
    run = run_program(program, limits=Limits())
    assert run.printed[0] == ("L" + "ab" * 50_000)[:100_000]
    assert run.printed[1] == "… (print output stops here: the limit is 100,000 characters)" and len(run.printed) == 2
    assert run.output.data == 100_000
    limits = Limits(max_printed_characters=3_000_000)
    printed = run_program(program.replace("100_000)", "3)"), limits=limits).printed
    assert printed == ["L" + "ab" * 500_000 + "L" + "ab" * 500_000 + "L", "3", "1-2-3"]


def test_an_fstring_of_more_fields_than_the_limit_is_refused_before_the_parser_reads_it():
    """Python 3.11's parser places an f-string's fields in quadratic time while holding the interpreter
    lock (32,000 fields: 0.76 s): more than max_fstring_fields are refused where the f-string starts;
    braces elsewhere (dicts, plain strings, doubled braces) are not fields."""
    program = "x = Value(1.0)\ns = 'a'\nprint(f\"{{ {FIELDS} }}\")\nt = '{' * 3000\nd = {1: {}}\n"
    fields = lambda n: program.replace("{FIELDS}", "{s}" * n)  # noqa: E731
    assert run_program(fields(1_000), limits=Limits()).printed == ["{ " + "a" * 1_000 + " }"]
    with pytest.raises(ProgramError) as caught:
        run_program(fields(32_000), limits=Limits())
    assert caught.value.message == (
        "this f-string has 32,000 {fields}; the limit is 1,000 (build the text in parts, as with ''.join(...))"
    )
    assert (caught.value.line, caught.value.column) == (3, 7)
    with pytest.raises(ProgramError, match="has 11 {fields}; the limit is 10"):
        run_program(fields(11), limits=Limits(max_fstring_fields=10))
    assert Settings.from_environ({"VALUEGRAPH_MAX_FSTRING_FIELDS": "10"}).limits.max_fstring_fields == 10


def test_the_defaults_are_the_issues():
    limits = Limits()
    assert (limits.max_statements, limits.max_call_depth, limits.max_collection_length, limits.max_backward_calls) == (
        1_000_000,
        4_000,  # issue 20: a learner's recursive build_topo runs on a 3,000-deep chain
        100_000,
        10_000,
    )


def test_sum_list_and_growth_are_bounded_by_the_collection_length():
    limits = Limits(max_collection_length=10)
    for program in (
        "x = Value(1.0)\ny = sum(range(11))",
        "x = Value(1.0)\ny = list(range(11))",
        "x = Value(1.0)\ny = [0] * 11",
        "x = Value(1.0)\ny = [0] * 6 + [1] * 5",
        "x = Value(1.0)\ny = []\nfor i in range(11):\n    y.append(i)",
        "x = Value(1.0)\ny = {}\nfor i in range(11):\n    y[i] = i",
        "x = Value(1.0)\ny = [1] * 6\ny += y",
        "x = Value(1.0)\ny = ('a,' * 10).split(',')",
        "x = Value(1.0)\ny = ('a\\n' * 11).splitlines()",
        "x = Value(1.0)\ny = ('a b ' * 6).rsplit()",
    ):
        with pytest.raises(ProgramError, match="the limit is 10"):
            run_program(program, limits=limits)
    run_program("x = Value(1.0)\ny = sum(range(10)) + len([0] * 10) + len(('a,' * 9).split(','))", limits=limits)


def test_the_node_limit_bounds_the_graph_that_comes_back():
    from engine import trace

    program = "x = Value(1.0)\nfor i in range(20):\n    x = x * 2\nx.backward()"
    result = run_program(program, limits=Limits(max_nodes=10))
    with pytest.raises(ProgramError, match="the graph has 41 nodes; the limit is 10"):
        trace(result.output, Limits(max_nodes=10))


ENVIRONMENT = {
    "VALUEGRAPH_MAX_STATEMENTS": ("max_statements", LOOP.format(n=20), "the limit is 10"),
    "VALUEGRAPH_MAX_CALL_DEPTH": ("max_call_depth", RECURSION.format(n=10), "calls nest deeper than 10"),
    "VALUEGRAPH_MAX_COLLECTION_LENGTH": ("max_collection_length", LIST.format(n=11), "the limit is 10"),
    "VALUEGRAPH_MAX_BACKWARD_CALLS": ("max_backward_calls", BACKWARD.format(n=11), "more than 10 times"),
}


@pytest.mark.parametrize("variable", sorted(ENVIRONMENT))
async def test_limits_come_from_the_environment_through_the_api(make_client, variable):
    name, program, message = ENVIRONMENT[variable]
    settings = Settings.from_environ({variable: "10"})
    assert getattr(settings, name) == 10 and getattr(settings.limits, name) == 10
    limited = make_client(**{name: 10})
    response = await limited.post("/backward", json={"expression": program})
    assert response.status_code == 400
    assert message in response.json()["detail"]["message"]
    assert response.json()["detail"]["line"] >= 2
    unlimited = make_client()
    assert (await unlimited.post("/backward", json={"expression": program})).status_code == 200


async def test_printed_characters_come_from_the_environment(make_client):
    assert Settings.from_environ({"VALUEGRAPH_MAX_PRINTED_CHARACTERS": "4"}).limits.max_printed_characters == 4
    body = (
        await make_client(max_printed_characters=4).post("/backward", json={"expression": PRINTING.format(n=5)})
    ).json()
    assert body["printed"][:2] == ["ab", "a"] and "the limit is 4 characters" in body["printed"][-1]


def test_items_built_at_once_count_as_statements():
    limits = Limits(max_statements=100, max_collection_length=1000)
    run_program("x = Value(1.0)\ny = [0] * 90", limits=limits)
    for program in (
        "x = Value(1.0)\nxs = [x] * 60\ny = sum(xs) + sum(xs)",
        "x = Value(1.0)\ny = [0] * 101",
        "x = Value(1.0)\ny = list(range(101))",
        "x = Value(1.0)\ny = [0] * 60\nz = y[:] + y",
    ):
        with pytest.raises(ProgramError, match="each item a statement builds at once counts as one"):
            run_program(program, limits=limits)


@pytest.mark.parametrize(
    "program, message",
    [
        ("d = {i: i for i in range(11)}", "a dict would hold more than 10 items; the limit is 10"),
        ("d = {}\nfor i in range(11):\n    d[i] = i", "a dict would hold 11 items; the limit is 10"),
        ("d = dict(zip(range(11), range(11)))", "a dict would hold more than 10 items; the limit is 10"),
        ("d = dict({i: i for i in range(10)}, z=1)", "a dict would hold 11 items; the limit is 10"),
    ],
)
def test_a_dict_past_the_collection_limit_is_called_a_dict(program, message):
    with pytest.raises(ProgramError) as caught:
        run_program("x = Value(1.0)\n" + program + "\n", limits=Limits(max_collection_length=10))
    assert caught.value.message == message


def test_a_dict_is_limited_by_the_items_it_holds_not_the_pairs_it_was_given():
    limits = Limits(max_collection_length=10)
    run = run_program(
        "x = Value(1.0)\nd = dict((k % 2, k) for k in range(50))\ne = {k % 3: k for k in range(50)}\nprint(d, e)\n",
        limits=limits,
    )
    assert run.printed == ["{0: 48, 1: 49} {0: 48, 1: 49, 2: 47}"]


def test_dict_takes_a_mapping_or_pairs_and_keywords_as_cpython():
    program = (
        "x = Value(1.0)\nd = dict(zip('abc', range(3)), z=9)\n"
        "print(d, dict(d) == d, dict(d) is d, dict([(1, 2), [3, 4], 'ab']), dict(), dict(a=1))\n"
    )
    assert run_program(program).printed == [
        "{'a': 0, 'b': 1, 'c': 2, 'z': 9} True False {1: 2, 3: 4, 'a': 'b'} {} {'a': 1}"
    ]
    for pairs, said in (("[(1, 2, 3)]", "item 0 is a tuple of 3"), ("[(1, 2), 5]", "item 1 is of type int")):
        with pytest.raises(ProgramError) as caught:
            run_program(f"x = Value(1.0)\nd = dict({pairs})\n")
        assert caught.value.message == f"dict() needs (key, value) pairs; {said}"
