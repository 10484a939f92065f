"""The wire format of the JSON API, defined once: requests as pydantic models, responses as
pydantic TypedDicts. The OpenAPI schema comes from these types.

Responses are TypedDicts because a large graph has tens of thousands of records: plain
dicts built in one pass and written by pydantic-core, a chunk of records at a time (serialize.py),
cost a few µs per node, where constructing a model per record costs ten times more. Optional keys (`exponent`,
`numeric_grad`, `trace`, `layout`) are NotRequired: absent, never null. Non-finite numbers
are written as the strings "NaN", "Infinity" and "-Infinity".
"""

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError, ValidationError
from typing_extensions import NotRequired, TypedDict

from engine import DEFAULT_NUDGE

CHAPTER_2_PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"
CHAPTER_2_GRAPH = {
    "nodes": [
        {"id": 0, "label": "a", "data": 2.0, "grad": 4.0, "children": [], "local_grads": []},
        {"id": 1, "label": "b", "data": 3.0, "grad": 2.0, "children": [], "local_grads": []},
        {"id": 2, "label": "c", "op": "*", "data": 6.0, "grad": 1.0, "children": [0, 1], "local_grads": [3.0, 2.0]},
        {"id": 3, "label": "L", "op": "+", "data": 8.0, "grad": 1.0, "children": [2, 0], "local_grads": [1.0, 1.0]},
    ],
    "output": 3,
}

NON_FINITE = ("NaN", "Infinity", "-Infinity")

Number = Annotated[
    float,
    WithJsonSchema(
        {"anyOf": [{"type": "number"}, {"type": "string", "enum": list(NON_FINITE)}]},
        mode="serialization",
    ),
]
Op = Literal["+", "*", "**", "log", "exp", "relu", "tanh", "-", "/", "neg"]  # the last three only in posted graphs
Variant = Literal["correct", "no-visited-check", "assign", "no-topological-order"]
VARIABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
VariableName = Annotated[str, Field(pattern=VARIABLE_NAME)]
VariableValue = Annotated[float, Field(strict=True, allow_inf_nan=False)]
# The player's speed menu (multiples of its normal pace): the page, the embed, its `speed` option and a
# room's state all offer these (templates/macros.html draws the menu from this tuple).
PLAYER_SPEEDS = (0.5, 1.0, 2.0, 4.0, 10.0, 50.0)
DEFAULT_SPEED = 1.0

# A body can carry any number of bad members (92,000 bad variables fit in 1 MB). pydantic would
# list every one, and building that list costs seconds of CPU on the event loop, before any error
# handler could cap it; past this many, the members are screened here and become one error.
MAX_LISTED_PROBLEMS = 20
_VARIABLE_NAME = re.compile(VARIABLE_NAME)


def _is_variable(name, value) -> bool:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(name, str) and _VARIABLE_NAME.match(name) is not None and number and math.isfinite(value)


def _screen_variables(variables):
    if isinstance(variables, dict) and len(variables) > MAX_LISTED_PROBLEMS:
        bad = [name for name, value in variables.items() if not _is_variable(name, value)]
        if len(bad) > MAX_LISTED_PROBLEMS:
            raise PydanticCustomError(
                "too_many_bad_variables",
                "{count} of the {size} variables are invalid (a name is ASCII letters, digits and _, not starting "
                "with a digit; a value is a finite number); the first is {first}",
                {"count": f"{len(bad):,}", "size": f"{len(variables):,}", "first": repr(bad[0])[:100]},
            )
    return variables


# Requests

# seed and run mean the same in every request that names a program (BackwardQuery, RoomState).
Seed = Annotated[
    int,
    Field(
        ge=0,
        le=2**32 - 1,
        description="Seeds the program's `random` module: the same program and seed always draw the same numbers.",
    ),
]
RunIndex = Annotated[
    Annotated[int, Field(ge=0)] | None,
    Field(
        description=(
            "Python programs: which backward() call's graph and trace come back (0-based index into `runs`); "
            "null for the last."
        ),
    ),
]


def _not_empty(text: str) -> str:
    if not text:
        raise PydanticCustomError("string_too_short", "the program is empty: write at least one statement")
    return text


class BackwardQuery(BaseModel):
    """A program and what to return for it; also the query string of GET /backward."""

    # "" is refused as the schema says (422), not by the parser (400). Not Field(min_length=1):
    # pydantic then refuses strings with lone surrogates, which the parser explains better.
    expression: Annotated[str, AfterValidator(_not_empty)] = Field(
        json_schema_extra={"minLength": 1},
        description="The program: statements separated by newlines or ';'; the last one is the output.",
        examples=[CHAPTER_2_PROGRAM],
    )
    trace: bool = Field(True, description="Include every step of the topological sort and of the propagation.")
    check: bool = Field(False, description="Run the nudge test: add numeric_grad to every leaf.")
    nudge: float = Field(DEFAULT_NUDGE, gt=0, allow_inf_nan=False, description="The step h of the nudge test.")
    layout: bool = Field(False, description="Include the server-side layered layout of the graph.")
    layout_max_nodes: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="With `layout`: lay out only a graph of at most this many nodes; a larger graph's answer has "
        "no `layout` key (the page asks POST /layout for the view it shows, which a large graph opens collapsed). "
        "Null: any size.",
    )
    variant: Variant = Field(
        "correct", description="The backward walk to run: the correct one or a broken one to learn from."
    )
    seed: Seed = 0
    run: RunIndex = None

    def as_request(self) -> "BackwardRequest":
        """The POST body this query stands for (a GET carries no variables: they are written in the program)."""
        return BackwardRequest.model_construct(**dict(self), variables={})


GraphNumber = (  # a number, or the string of a non-finite one; only the strings go through a converter
    Annotated[float, Field(strict=True, allow_inf_nan=False)]  # strict: true and false are no numbers
    | Annotated[Literal["NaN", "Infinity", "-Infinity"], AfterValidator(float)]
)
Language = Literal["python", "csharp", "typescript", "javascript", "java"]


class GraphNode(TypedDict):
    """One node of a posted graph: the node fields of an answer. The answer's other fields (span,
    expr, scope, numeric_grad, expected_grad) are accepted and not read, so an answer's `nodes` post
    as they stand; `exponent` is read for "**"."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    id: int
    label: NotRequired[str | None]
    op: NotRequired[str | None]
    data: GraphNumber
    grad: NotRequired[GraphNumber | None]
    grad_before: NotRequired[GraphNumber | None]
    children: list[int]
    local_grads: list[GraphNumber]
    exponent: NotRequired[GraphNumber]
    span: NotRequired[Any]
    expr: NotRequired[Any]
    scope: NotRequired[Any]
    numeric_grad: NotRequired[Any]
    expected_grad: NotRequired[Any]


class Graph(BaseModel):
    """A graph built by any program in any language, as the learner's own Value class left it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    nodes: list[GraphNode] = Field(
        min_length=1,
        description="Children before parents (creation order); ids are any distinct integers. "
        "`grad` is what the learner's backward left: on every node, or on none (status no_backward). "
        "`op` (+ * ** - / neg exp log relu tanh, or add mul pow ..., ReLU, micrograd's **2) is optional: "
        "given, the data and local gradients are checked against its rule. "
        "`grad_before` (optional, 0 where left out or null) is the grad the node held when the learner's "
        "backward() began adding into it (after any reset to 0 it makes itself): what an earlier call left "
        "when nothing reset it, which the check then names as the cause.",
    )
    output: int = Field(description="The id of the output node, where the backward pass starts.")
    walk: list[int] | None = Field(
        None,
        description="Optional: the ids in the order the learner's per-node backward steps ran, repeats kept; "
        "the check replays it to name the cause.",
    )
    language: Language | None = Field(
        None, description="Optional: the language of the learner's class, to name its methods in the message."
    )


class BackwardRequest(BackwardQuery):
    """The body of POST /backward. Strict: JSON has real booleans and numbers, so `"layout": 0`
    or `"trace": "yes"` is refused as the schema says (the GET form reads strings leniently).
    Either `expression` (a program) or `graph` (a graph built elsewhere), not both."""

    @model_validator(mode="before")
    @classmethod
    def _screen_unknown_fields(cls, data):
        if isinstance(data, dict) and len(data) > MAX_LISTED_PROBLEMS:
            unknown = [key for key in data if key not in cls.model_fields]
            if len(unknown) > MAX_LISTED_PROBLEMS:
                raise PydanticCustomError(
                    "too_many_unknown_fields",
                    "{count} unknown fields, such as {first}",
                    {"count": f"{len(unknown):,}", "first": repr(unknown[0])[:100]},
                )
        return data

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"expression": CHAPTER_2_PROGRAM}, {"graph": CHAPTER_2_GRAPH}]},
    )

    expression: Annotated[str, AfterValidator(_not_empty)] | None = Field(
        None,
        json_schema_extra={"minLength": 1},
        description="The program: statements separated by newlines or ';'; the last one is the output. "
        "Give this or `graph`.",
        examples=[CHAPTER_2_PROGRAM],
    )
    graph: Graph | None = Field(
        None,
        description="A graph built elsewhere (the learner's own Value class in C#, TypeScript, Python...), "
        "instead of a program: traced, walked and checked (expected_grad, gradient_check).",
    )

    @model_validator(mode="before")
    @classmethod
    def _expression_required_without_graph(cls, data):
        """Without a graph, the program is missing, as it was before graphs could be posted."""
        if isinstance(data, dict) and "expression" not in data and "graph" not in data:
            raise ValidationError.from_exception_data(
                cls.__name__, [{"type": "missing", "loc": ("expression",), "input": data}]
            )
        return data

    @model_validator(mode="after")
    def _expression_or_graph(self):
        if (self.expression is None) == (self.graph is None):
            raise PydanticCustomError(
                "expression_or_graph",
                "give either `expression` (a program) or `graph` (a graph), not both"
                if self.graph is not None
                else "give `expression` (a program) or `graph` (a graph): neither was given a value",
            )
        if self.graph is not None and self.variables:
            raise PydanticCustomError("graph_variables", "variables are for programs; a graph's leaves hold their data")
        if self.graph is not None and self.files:
            raise PydanticCustomError("graph_files", "files are for programs; a graph reads none")
        return self

    variables: Annotated[dict[VariableName, VariableValue], BeforeValidator(_screen_variables)] = Field(
        default_factory=dict,
        # pydantic writes the key pattern as patternProperties only; without this a key outside it
        # (such as "") would be schema-valid, though it answers 422.
        json_schema_extra={"additionalProperties": False},
        description="Leaf values by name, used where the program reads a name it does not assign.",
    )
    files: dict[Annotated[str, Field(min_length=1, max_length=200)], str] = Field(
        default_factory=dict,
        description="Python programs: files the program may read, by name, with open(name) and os.path.exists(name) "
        "(read only; nothing is written). Their UTF-8 bytes are bounded by VALUEGRAPH_MAX_FILES_BYTES (more: 400).",
        examples=[{"input.txt": "emma\nolivia\nava\n"}],
    )


class LayoutRequest(BaseModel):
    """The body of POST /layout: a graph to lay out as the page draws it with some scopes
    collapsed into boxes. Node i's children are children[i], ids in creation order."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"children": [[], [], [0, 1], [2, 0]]}]})

    children: list[list[Annotated[int, Field(ge=0)]]] = Field(
        min_length=1,
        description=(
            "Per node, its inputs (duplicates kept). Every child's id is below its parent's, and every node "
            "reaches the last node, the output."
        ),
    )

    @model_validator(mode="after")
    def _a_graph_towards_the_output(self):
        reaches = [False] * len(self.children)
        reaches[-1] = True
        for parent in range(len(self.children) - 1, -1, -1):
            for child in self.children[parent]:
                if child >= parent:
                    raise ValueError(f"node {parent} has child {child}: every child's id must be below its parent's")
                reaches[child] = reaches[child] or reaches[parent]
        if not all(reaches):
            raise ValueError(f"node {reaches.index(False)} does not reach the output (the last node)")
        return self


class ExportRequest(BackwardRequest):
    """The body of POST /export/html and /export/scorm: POST /backward's, and, beside a `graph` that
    TypeScript or JavaScript made in the learner's browser, the code that made it, to show."""

    source: str | None = Field(
        None,
        description="With `graph`: the code that made it (`graph.language` says which language), shown "
        "read-only in the file and never run: the file plays the graph.",
    )
    views: list[LayoutRequest] = Field(
        default_factory=list,
        description="Views of the graph with scopes collapsed into boxes, each as POST /layout's body (the page "
        "sends the one on screen and the one a big graph opens with). The server lays each out into the file, "
        "which has no server to ask: there they open as on the page, and another view says it needs the server. "
        "Their nodes count together against VALUEGRAPH_MAX_NODES (more: 400).",
    )

    @model_validator(mode="after")
    def _source_with_graph(self):
        if self.source is not None and self.graph is None:
            raise PydanticCustomError("source_without_graph", "source is the code that made `graph`: give both")
        return self


class RoomState(BaseModel):
    """Teach live: what the teacher shows, and so what every follower shows (app/rooms.py checks
    `step` and `pinned` against the walk of this program, seed and run)."""

    model_config = ConfigDict(extra="forbid")

    expression: str
    variables: dict[VariableName, VariableValue] = Field(default_factory=dict)
    variant: Variant = "correct"
    seed: Seed = 0
    run: RunIndex = None
    step: int = Field(0, ge=0)
    stage: Literal["sort", "propagate"] | None = Field(None, description="Set by the server from the step.")
    playing: bool = False
    speed: float = DEFAULT_SPEED
    pinned: int | None = Field(None, ge=0)
    direction: Literal["LR", "BT"] = "LR"
    language: Literal["typescript", "javascript"] | None = Field(
        None,
        description="The teacher's own TypeScript or JavaScript (in `expression`), run in the teacher's browser: "
        "never run by the server nor by the students' pages, which draw `graph`, the graph it made.",
    )
    graph: Graph | None = Field(
        None, description="With `language`: the graph the code made, as POST /backward takes it."
    )

    @model_validator(mode="after")
    def _graph_with_language(self):
        if self.graph is not None and self.language is None:
            raise ValueError("`graph` is the graph the teacher's own code made: give it with `language`")
        return self


# Responses


class SourceSpan(TypedDict):
    """Where in the program text: lines, columns 1-based in characters; end_column just past the last character."""

    line: int
    column: int
    end_line: int
    end_column: int


class Node(TypedDict):
    """One Value; its id is its position in `nodes` (creation order)."""

    id: int
    label: str | None  # distinct across the graph: a repeated label becomes x, x′, x″, …
    span: SourceSpan | None  # the code that made the node; null where no program text did
    expr: str  # that code's text, whitespace collapsed, at most 40 characters
    scope: list[str]  # the calls and loop iterations it was made in, outermost first
    op: Op | None
    exponent: NotRequired[Number]  # only for "**" nodes
    data: Number
    grad: Number
    children: list[int]  # aligned with local_grads; duplicates kept (a * a has two)
    local_grads: list[Number]
    numeric_grad: NotRequired[Number]  # only on leaves, only when check is true
    expected_grad: NotRequired[Number]  # only for posted graphs: the course's backward on them


class SortStep(TypedDict):
    """One pop of the (node, index) stack of the topological sort."""

    node: int
    index: int
    action: Literal["descend", "skip", "emit"]
    child: int | None


class Update(TypedDict):
    """child.grad += local_grad * the node's grad."""

    child: int
    local_grad: Number
    delta: Number
    grad: Number  # the child's grad after the update


class PropagateStep(TypedDict):
    """One node of the reverse walk; no updates when its grad is 0."""

    node: int
    grad: Number
    updates: list[Update]


class Trace(TypedDict):
    sort: list[SortStep]
    propagate: list[PropagateStep]


class NonFiniteWarning(TypedDict):
    """Where a non-finite number first appears, and why."""

    node: int
    message: str


class LayoutNode(TypedDict):
    id: int
    rank: int  # column, 0 leftmost; the output has the highest rank
    row: float


class LayoutEdge(TypedDict):
    """One edge per (parent, slot); bends are the dummy positions of edges spanning ranks."""

    parent: int
    slot: int
    child: int
    bends: list[Annotated[list[float], Field(min_length=2, max_length=2)]]  # [rank, row] pairs


class Layout(TypedDict):
    """Abstract layered layout, left to right."""

    ranks: int
    rows: float
    nodes: list[LayoutNode]
    edges: list[LayoutEdge]


class Run(TypedDict):
    """One backward() call of a Python program: its line and the output's data then (the loss curve)."""

    line: int
    data: Number


class LocalGradientProblem(TypedDict):
    """A stored local gradient that differs from its op's rule."""

    node: int
    input: int  # the input's slot in the node's children and local_grads
    stored: Number
    expected: Number


class GradientCheck(TypedDict):
    """Where the learner's own backward goes wrong, and the likely cause."""

    status: Literal["ok", "wrong", "no_backward"]
    wrong: list[int]  # nodes whose grad differs from expected_grad beyond 1e-9 relative
    # the one the message is about: the first in the course's reverse walk, the one the cause names, or the first
    # rule problem
    first: int | None
    message: str
    local: list[LocalGradientProblem]


class LearnerUpdate(TypedDict):
    """One grad the learner's own backward wrote: the node's id and its grad after the write."""

    child: int
    grad: Number | None  # null when the program stored something other than a number


class LearnerStep(TypedDict):
    """One step of the learner's own backward: a node passing its gradient on to its inputs."""

    node: int | None  # whose step; null for a write outside any node's step (the seed, a reset)
    updates: list[LearnerUpdate]  # in the order they were written


class BackwardResponse(TypedDict):
    """The graph after the backward pass, and how the walk got there."""

    output: int
    nodes: list[Node]
    order: list[int]
    trace: NotRequired[Trace]  # when trace is true
    warnings: list[NonFiniteWarning]
    variant: Variant
    layout: NotRequired[Layout]  # when layout is true (and the graph is within layout_max_nodes)
    runs: list[Run]  # one per backward() call of a Python program, in call order
    run: int | None  # which of `runs` the graph and trace are from; null when there was none
    printed: list[str]  # the lines the program printed
    gradient_check: NotRequired[GradientCheck]  # only for posted graphs
    grads_carried: NotRequired[
        Annotated[
            int,
            Field(
                description="Only for a Python program on valuegraph's Value that calls backward(): how many of the "
                "graph's nodes other than the output held a grad other than 0 when the backward() call shown began "
                "(what earlier calls left: micrograd's grads add up until the program zeroes them). The graph's "
                "grads and trace are that call's walk from 0; the program's walk added to those grads and passed "
                "them on, so the grads it prints differ."
            ),
        ]
    ]
    inputs_in_sets: NotRequired[
        Annotated[
            bool,
            Field(
                description="Only for a Python program that defines its own value class: whether a node keeps its "
                "inputs in a set (micrograd's `_prev`). A set has no fixed order in CPython; valuegraph gives each "
                "node's inputs in the order the method that made it passed them."
            ),
        ]
    ]
    learner_walk: NotRequired[
        Annotated[
            list[LearnerStep],
            Field(
                description="Only for a Python program that defines its own value class and calls its backward(): "
                "the program's own walk, one step per node that passed its gradient on (a `_backward()` call, or a "
                "loop's writes to one node's inputs in order), in the order they ran, repeats kept; a write outside "
                "any node's step (the seed) is a step with node null."
            ),
        ]
    ]


class Health(BaseModel):
    status: Literal["ok"]


# Errors


class ProgramErrorDetail(BaseModel):
    message: str
    line: int = Field(description="1-based")
    column: int = Field(description="1-based, in characters")
    offset: int = Field(description="0-based character offset")


class ProgramErrorResponse(BaseModel):
    detail: ProgramErrorDetail


class MessageDetail(BaseModel):
    message: str


class MessageResponse(BaseModel):
    detail: MessageDetail


class RunCreated(BaseModel):
    """POST /runs: the job is queued; follow its status (and, later, its events) at these paths."""

    id: str
    status_url: str = Field(description="GET it for the job's status, progress, loss curve and printed lines")
    events_url: str = Field(description="GET it for the job's events, as server-sent events")


class RunProgress(BaseModel):
    statements: int = Field(description="statements the program has run")
    backward_calls: int = Field(description="backward() calls so far")
    elapsed_seconds: float = Field(description="wall-clock seconds since the job started running")


class RunPoint(BaseModel):
    line: int = Field(description="the line of the backward() call")
    data: float | str = Field(description='the output\'s data at that call ("NaN", "Infinity", "-Infinity" as text)')


class RunError(ProgramErrorDetail):
    limit: str | None = Field(description="the VALUEGRAPH_JOB_... setting whose limit ended the job, or null")


class RunStatus(BaseModel):
    id: str
    status: Literal["queued", "running", "done", "failed", "cancelled"]
    progress: RunProgress
    runs: list[RunPoint] = Field(description="the loss curve so far: the output's data at each backward() call")
    printed: list[str] = Field(description="the lines the program has printed so far")
    error: RunError | None = Field(description="why the job failed, where in the program (failed only)")
