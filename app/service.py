"""The one pipeline from a request to its answer: program -> run -> trace -> (nudge test) ->
(layout) -> the wire format. Every caller that turns a program into a graph comes here: POST and
GET /backward, /export/html, SCORM, Teach live's check of a room's state, the CLI's export and the
notebook helper; a job runner calls the same functions.

Two layers:
- compute() and its wrappers are plain functions of (request, limits): no server, no clock. The
  CLI and the notebook call them directly.
- Service runs them on a server: in a worker thread, within the time budget, the limit on
  concurrent work and the response cache of the app's Settings. One per app (app.state.service);
  routes get it as ServiceDep (app/dependencies.py).
"""

import math
from typing import Callable, NamedTuple

import anyio

from engine import (
    Limits,
    ProgramError,
    ProgramRun,
    Trace,
    Value,
    measure_leaf_gradients,
    replay_program,
    run_program,
    trace,
)
from engine.check import RULES, Check, canonical_op, check, confirmed
from engine.python.observe import LearnerWalk, grads_before, learner_walk, not_number_message
from engine.python.parse import Source
from engine.syntax import WHOLE_PROGRAM

from . import schemas
from .budget import Leftovers, collector_paused, run_within_budget
from .cache import ResponseCache, request_key
from .compression import GzipWriter
from .config import Settings
from .graph import GraphError, check_nodes, read_graph
from .layout import compute_layout
from .serialize import backward_columns, backward_json, backward_response

# What an export replays (the HTML file, SCORM, the notebook): every step, laid out, no nudge test.
EXPORTED = {"trace": True, "layout": True, "layout_max_nodes": None, "check": False}


class Computed(NamedTuple):
    """What the engine made for one request, before it is written: the arguments of
    app.serialize's backward_response and backward_json, in their order."""

    steps: Trace
    measured: dict | None  # {leaf Value: numeric gradient} when the request asked for the check
    layout: dict | None
    include_trace: bool
    program: ProgramRun | None  # None for a graph built in Python
    checked: Check | None = None  # the gradient check of a posted graph; None for programs
    learner_walk: LearnerWalk | None = None  # the steps of a program's own backward

    def response(self) -> schemas.BackwardResponse:
        return backward_response(*self)

    def json(self) -> bytes:
        return backward_json(*self)

    def columns(self, out=None) -> bytes:
        return backward_columns(*self, out=out)


def compute(request: schemas.BackwardRequest, limits: Limits, keep_steps: bool = True) -> Computed:
    """parse -> run -> trace -> (nudge test) -> (layout), as the request asks. keep_steps: False when only the
    columnar answer is written, which the page replays the trace's steps for (engine.trace)."""
    if request.graph is not None:
        return compute_posted_graph(request, limits, keep_steps)
    program = run_program(request.expression, request.variables, limits, request.seed, request.run, request.files)
    return _program_graph(program, request, limits, keep_steps)


def _program_graph(program: ProgramRun, request: schemas.BackwardRequest, limits: Limits, keep_steps=True) -> Computed:
    own = program.python.graph if program.python is not None else None
    if own is not None:  # the program's own value class: its graph, as its backward() left it
        walk = learner_walk(own) if own["backward"] else None
        try:
            return _checked(own_class_graph(own), request, limits, program, walk, keep_steps, own)
        except GraphError as error:  # the program made it: a program's error, at the code that made the node
            raise _made_at(error, own, request.expression) from None
    return _walked(program.output, request, limits, program, keep_steps)  # the syntax tree is freed by now


def _made_at(error: GraphError, own: dict, text: str) -> ProgramError:
    """A problem read_graph finds in a program's own graph (a node with fewer local gradients than inputs, a
    label past the limit, a cycle made by changing a node's inputs), placed where the program made the node."""
    loc = error.loc
    extent = own["nodes"][loc[3]]["origin"][0] if len(loc) > 3 and loc[2] == "nodes" else None
    if extent is None:
        return ProgramError(error.message, WHOLE_PROGRAM)
    return ProgramError(error.message, Source(text).extent_span(extent))


def compute_graph(output: Value, limits: Limits, variant: str = "correct") -> Computed:
    """The same for a graph built in Python (no program to run), traced and laid out as an export replays it."""
    request = schemas.BackwardRequest.model_construct(expression="", variant=variant, **EXPORTED)
    return _walked(output, request, limits, None)


def compute_posted_graph(request: schemas.BackwardRequest, limits: Limits, keep_steps: bool = True) -> Computed:
    """A graph posted whole (`graph`): read -> trace (valuegraph's own walk) -> check (the learner's
    grads against the course's backward) -> (nudge test) -> (layout). The grads in the answer are
    the learner's when the graph has them; the trace keeps the ones its walk computed."""
    return _checked(request.graph, request, limits, None, keep_steps=keep_steps)


def _checked(
    posted: schemas.Graph, request, limits: Limits, program, walked_by=None, keep_steps=True, own=None
) -> Computed:
    """own: the observed graph of a program's own class that `posted` is made from (own_class_graph)."""
    replayable = request.check and program is None  # a program's class may have ops the nudge test cannot replay
    graph = read_graph(posted, limits, replayable=replayable)
    steps = trace(graph.output, limits, request.variant, keep_steps)
    ids = steps.ids
    walk = None if graph.walk is None else [ids[value] for value in graph.walk if value in ids]
    # The correct walk's order and grads are the course's backward already: the check reuses them,
    # and where they plainly agree with the learner's (most large graphs), it needs nothing more.
    walked = request.variant == "correct"
    expected = [value.grad for value in steps.nodes] if walked else None
    checked = walked and confirmed(steps.nodes, steps.children, graph.grads, expected, steps.output)
    if not checked:
        checked = check(
            check_nodes(steps, graph.grads),
            steps.output,
            walk,
            posted.language,
            limits.max_variant_steps,
            order=steps.order if walked else None,
            expected=expected,
            before=_by_id(_grads_left(posted, own), graph.values, steps.ids),
            assigns=None if own is None else own["assigns"],
            variant=request.variant,
        )
    if own is not None and own["not_numbers"]:
        checked = _grads_not_numbers(checked, own, graph.values, steps)
    for value, grad in graph.grads.items():
        value.grad = grad
    # Only the nudge test (check) needs to know; a large graph is posted without it.
    nudged = request.check and (
        replayable or all(node.get("op") is not None or not node["children"] for node in posted.nodes)
    )
    return _finished(steps, graph.output, request, limits, program, checked, nudged, walked_by)


def _grads_not_numbers(checked: Check, own: dict, values, steps) -> Check:
    """The check, "wrong" at the grads the program's backward left holding no number (which the answer shows as
    0), whatever the numbers say: a grad of None or of a string is a mistake in the walk, not a 0 it passed on."""
    ids = steps.ids
    reached = {ids[values[found.node]]: found for found in own["not_numbers"] if values[found.node] in ids}
    if not reached:
        return checked
    walked = {node: rank for rank, node in enumerate(reversed(steps.order))}  # the course's walk, from the output
    first = min(reached, key=lambda at: walked.get(at, len(walked)))

    def name(position):  # as the check names a node (engine.check): its label, else its id in the answer
        label = own["nodes"][position]["label"]
        at = ids.get(values[position])
        return label or (f"node {at}" if at is not None else "a node the output does not reach")

    record = {
        **checked.gradient_check,
        "status": "wrong",
        "wrong": sorted(set(checked.gradient_check["wrong"]) | set(reached)),
        "first": first,
        "message": not_number_message(own, reached[first], name),
    }
    return Check(checked.expected_grad, record)


def _grads_left(posted: schemas.Graph, own) -> dict:
    """{position in posted.nodes: the grad the node held when the learner's backward() began}, where not 0:
    observed as a program's own class ran, else as posted (`grad_before`)."""
    if own is not None:
        return grads_before(own) if own["backward"] else {}
    return {i: node["grad_before"] for i, node in enumerate(posted.nodes) if node.get("grad_before")}


def _by_id(before, values, ids) -> dict:
    """{position: grad} of the posted nodes as {id in the answer: grad}, for the nodes the output reaches."""
    return {ids[values[at]]: grad for at, grad in before.items() if values[at] in ids}


def own_class_graph(observed: dict) -> schemas.Graph:
    """The graph of a program's own value class (engine.python.observe) as a posted graph: an op
    the check does not know is left out (its local gradients are used as given), a local gradient
    that could not be derived is NaN, a node its backward never gave a grad has 0 when others have one
    (and no node has a grad before the program calls backward()), and the walk is the nodes whose
    _backward closures ran, in that order."""
    nodes = []
    with_grad = observed["backward"] and any(node["grad"] is not None for node in observed["nodes"])
    arity = {}  # op -> the number of inputs of its rule, None when the check does not know it
    for node in observed["nodes"]:
        op = node["op"]
        if op not in arity:
            known = canonical_op(op)[0]
            arity[op] = None if known is None else RULES[known][0]
        local_grads, grad = node["local_grads"], node["grad"]
        # An op applied to one input twice (x * x) whose inputs a set kept once has fewer inputs than
        # its rule: it is left out, and its (derived) local gradient is used as given.
        left_out = op is not None and arity[op] != len(node["children"])
        if not left_out and local_grads is not None and (grad is not None if with_grad else grad is None):
            nodes.append(node)  # already as posted: read_graph reads only the fields a posted node has
            continue
        if left_out:
            op = None
        if local_grads is None:
            local_grads = [math.nan] * len(node["children"])
        grad = (grad if grad is not None else 0.0) if with_grad else None
        nodes.append(
            {
                "id": node["id"],
                "label": node["label"],
                "op": op,
                "data": node["data"],
                "grad": grad,
                "children": node["children"],
                "local_grads": local_grads,
            }
        )
    walk = [observed["nodes"][node]["id"] for node in observed["calls"]] or None
    return schemas.Graph.model_construct(nodes=nodes, output=observed["output"], walk=walk, language="python")


def _walked(output: Value, request: schemas.BackwardRequest, limits: Limits, program, keep_steps=True) -> Computed:
    return _finished(trace(output, limits, request.variant, keep_steps), output, request, limits, program)


def _finished(steps, output, request, limits, program, checked=None, nudge=True, learner_walk=None) -> Computed:
    """The traced graph's (nudge test) -> (layout), as the request asks. `nudge`: false when an op
    of the graph is one the nudge test cannot replay; `learner_walk`: what the answer carries as it."""
    measured = measure_leaf_gradients(output, request.nudge, limits) if request.check and nudge else None
    laid_out = request.layout and (request.layout_max_nodes is None or len(steps.nodes) <= request.layout_max_nodes)
    layout = compute_layout(steps) if laid_out else None
    return Computed(steps, measured, layout, request.trace, program, checked, learner_walk)


def answer(request: schemas.BackwardRequest, limits: Limits) -> schemas.BackwardResponse:
    """The answer as data (rooms, exports), built with the cyclic collector paused."""
    with collector_paused():
        return compute(request, limits).response()


def answer_json(
    request: schemas.BackwardRequest, limits: Limits, columns: bool = False, gzipped: bool = False
) -> tuple[bytes, Leftovers]:
    """The answer's bytes (written a chunk at a time; in the columnar encoding when columns, and then
    gzip-compressed as it is written when gzipped), and the graph and trace that made them, to free once
    the bytes are sent."""
    with collector_paused():
        made = compute(request, limits, keep_steps=not columns)
        if columns and gzipped:
            with GzipWriter() as out:
                return made.columns(out), Leftovers(made)
        return made.columns() if columns else made.json(), Leftovers(made)


def replayed_json(
    request: schemas.BackwardRequest, limits: Limits, runs: list, printed: list, snapshot, columns: bool = False
) -> bytes:
    """answer_json's bytes (in the columnar encoding when columns) for run `request.run` of a finished
    job's Python program, whose `runs` and `printed` are known: the program replayed from the job's
    snapshot at or before that run (or from its start, when None), only as far as that run
    (engine.replay_program)."""
    with collector_paused():
        program = replay_program(
            request.expression, limits, request.seed, request.run, request.files, runs, printed, snapshot
        )
        made = _program_graph(program, request, limits, keep_steps=not columns)
        return made.columns() if columns else made.json()


def exported(request: schemas.BackwardRequest, limits: Limits) -> schemas.BackwardResponse:
    """The answer an export replays for the request's program (its seed and run included)."""
    return answer(request.model_copy(update=EXPORTED), limits)


def exported_graph(output: Value, limits: Limits = Limits(), variant: str = "correct") -> schemas.BackwardResponse:
    """The same for a graph built in Python."""
    with collector_paused():
        return compute_graph(output, limits, variant).response()


class Service:
    """The pipeline on a server, within its Settings: each piece of work runs in a worker thread,
    within the time budget (TimeBudgetExceeded past it) and the limit on concurrent work."""

    def __init__(self, settings: Settings, limiter: anyio.CapacityLimiter, cache: ResponseCache):
        self.settings = settings
        self.limits = settings.limits
        self.limiter = limiter  # bounds how many pieces of work run at once; the rest wait, within their budget
        self.cache = cache  # /backward's answers

    async def run(self, function: Callable, *args):
        """function(*args) within the budget: the one place the server's work is started."""
        return await run_within_budget(function, *args, seconds=self.settings.time_budget, limiter=self.limiter)

    async def backward_json(
        self, request: schemas.BackwardRequest, columns: bool = False, gzipped: bool = False
    ) -> tuple[bytes, Callable[[], None] | None]:
        """The answer's bytes (JSON, or the columnar encoding when columns, gzip-compressed when also
        gzipped), from the cache or computed, and what to call once they are sent (frees the graph and
        trace off the event loop), or None."""
        # A posted graph is not cached: its key would cost about what its answer does, on the event loop.
        key = None
        if not request.graph:
            encoding = ("columns+gzip" if gzipped else "columns") if columns else "json"
            key = request_key(request.model_dump(), encoding)
        body = None if key is None else self.cache.get(key)
        if body is not None:
            return body, None
        body, leftovers = await self.run(answer_json, request, self.limits, columns, gzipped)
        if key is not None:
            self.cache.put(key, body)
        return body, leftovers.free
