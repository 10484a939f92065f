"""The wire format of the JSON API, defined once: requests as pydantic models, responses as
pydantic TypedDicts. The OpenAPI schema comes from these types.

Responses are TypedDicts because a large graph has tens of thousands of records: plain
dicts built in one pass and dumped by pydantic-core in one call (serialize.py) cost a few µs per node,
where constructing a model per record costs ten times more. Optional keys (`exponent`,
`numeric_grad`, `trace`, `layout`) are NotRequired: absent, never null. Non-finite numbers
are written as the strings "NaN", "Infinity" and "-Infinity".
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator
from typing_extensions import NotRequired, TypedDict

from engine import DEFAULT_NUDGE

CHAPTER_2_PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"

NON_FINITE = ("NaN", "Infinity", "-Infinity")

Number = Annotated[
    float,
    WithJsonSchema(
        {"anyOf": [{"type": "number"}, {"type": "string", "enum": list(NON_FINITE)}]},
        mode="serialization",
    ),
]
Op = Literal["+", "*", "**", "log", "exp", "relu", "tanh"]
Variant = Literal["correct", "no-visited-check", "assign", "no-topological-order"]
VariableName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
VariableValue = Annotated[float, Field(strict=True, allow_inf_nan=False)]


# Requests


class BackwardQuery(BaseModel):
    """A program and what to return for it; also the query string of GET /backward."""

    expression: str = Field(
        description="The program: statements separated by newlines or ';'; the last one is the output.",
        examples=[CHAPTER_2_PROGRAM],
    )
    trace: bool = Field(True, description="Include every step of the topological sort and of the propagation.")
    check: bool = Field(False, description="Run the nudge test: add numeric_grad to every leaf.")
    nudge: float = Field(DEFAULT_NUDGE, gt=0, allow_inf_nan=False, description="The step h of the nudge test.")
    layout: bool = Field(False, description="Include the server-side layered layout of the graph.")
    variant: Variant = Field("correct", description="The backward walk to run: the correct one or a broken one to learn from.")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seeds the program's `random` module: the same program and seed always draw the same numbers.")
    run: int | None = Field(
        None, ge=0, description="Python programs: which backward() call's graph and trace come back (0-based index into `runs`); null for the last."
    )


class BackwardRequest(BackwardQuery):
    """The body of POST /backward."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"expression": CHAPTER_2_PROGRAM}]},
    )

    variables: dict[VariableName, VariableValue] = Field(
        default_factory=dict,
        description="Leaf values by name, used where the program reads a name it does not assign.",
    )


class LayoutRequest(BaseModel):
    """The body of POST /layout: a graph to lay out as the page draws it with some scopes
    collapsed into boxes. Node i's children are children[i], ids in creation order."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"children": [[], [], [0, 1], [2, 0]]}]})

    children: list[list[Annotated[int, Field(ge=0)]]] = Field(
        min_length=1,
        description="Per node, its inputs (duplicates kept). Every child's id is below its parent's, and every node reaches the last node, the output.",
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


# Responses


class SourceSpan(TypedDict):
    """Where in the program text: lines 1-based, columns 1-based in characters, end_column just past the last character."""

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


class BackwardResponse(TypedDict):
    """The graph after the backward pass, and how the walk got there."""

    output: int
    nodes: list[Node]
    order: list[int]
    trace: NotRequired[Trace]  # when trace is true
    warnings: list[NonFiniteWarning]
    variant: Variant
    layout: NotRequired[Layout]  # when layout is true
    runs: list[Run]  # one per backward() call of a Python program, in call order
    run: int | None  # which of `runs` the graph and trace are from; null when there was none
    printed: list[str]  # the lines the program printed


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
