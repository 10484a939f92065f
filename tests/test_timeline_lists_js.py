"""The timeline's per-node lists (static/js/timeline.js), kept flat for a big graph's first picture
(issue 22): a node's grad at every step (gradAt), the updates it received up to a step and its
users (storyAt; the users are built only when a story first asks) read the same as the answer's
trace says, for the course's walk, its broken variants and a learner's own walk. Run by node on
answers of the real app; what they should be is worked out here from the answer."""

import json
import pathlib
import shutil
import subprocess

import pytest
from fastapi.testclient import TestClient

from app.main import create_app

STATIC = pathlib.Path(__file__).resolve().parent.parent / "static" / "js"
OWN_CLASSES = pathlib.Path(__file__).resolve().parent / "own_classes"
MLP = "from micrograd.nn import MLP\n\nn = MLP(3, [4, 4, 1])\nx = [2.0, 3.0, -1.0]\ny = n(x)\ny.backward()\n"
SHARED = "a = Value(2.0, label='a')\nb = a * a\nc = b + a\nL = c * b\nL.backward()\n"


def run_on_timeline(model, walk, body):
    """Run `body` by node after the page's timeline of `model` (walk "course" or "learner") is built: `tlm` the
    timeline module, `model` and `walk` as the page has them, `tl` the timeline; what it prints, as JSON."""
    node = shutil.which("node")
    assert node, "node is not installed"
    script = (
        f"import * as tlm from {json.dumps((STATIC / 'timeline.js').as_uri())};\n"
        f"import {{ graphOf }} from {json.dumps((STATIC / 'api.js').as_uri())};\n"
        f"const model = graphOf({json.dumps(model)}, 'application/json');\n"
        f"const walk = {json.dumps(walk)};\n"
        "const tl = tlm.buildTimeline(model, { walk });\n" + body
    )
    done = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def timeline_views(model, walk):
    """What the page's timeline says of `model` (walk "course" or "learner"): every node's grad at
    every step, and its story (received updates, users) at every step, the stories asked from the
    last step back to the first."""
    return run_on_timeline(
        model,
        walk,
        """
        const grads = [];
        const stories = [];
        for (let k = tl.last; k >= 0; k--) {
            grads.unshift(model.nodes.map((n) => tlm.gradAt(tl, n.id, k)));
            stories.unshift(model.nodes.map((n) => {
                const s = tlm.storyAt(tl, n.id, k);
                const received = s.contributions.map((c) => [c.step, c.parent, c.child, c.after]);
                return { received, users: s.parents.map((p) => [p.id, p.slot]) };
            }));
        }
        const kinds = tl.steps.map((s) => s.kind);
        console.log(JSON.stringify({ grads, stories, kinds, propagateStart: tl.propagateStart, last: tl.last }));
        """,
    )


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def answer(client, expression, variant="correct"):
    response = client.post("/backward", json={"expression": expression, "variant": variant})
    assert response.status_code == 200, response.text
    return response.json()


def node_steps(model, views, walk):
    """(k, node, [(child, grad after)]) of each step that passes gradient on, from the answer."""
    if walk == "learner":
        return [
            (k, s["node"], [(u["child"], u["grad"]) for u in s["updates"]])
            for k, s in enumerate(model["learner_walk"], 1)
        ]
    start = views["propagateStart"]
    walked = model["trace"]["propagate"]
    return [(start + 1 + i, s["node"], [(u["child"], u["grad"]) for u in s["updates"]]) for i, s in enumerate(walked)]


def expected_grads(model, steps, seed_at, last):
    """Every node's grad at every step: null until its first change, the answer's grad at the end."""
    changes = {node["id"]: [] for node in model["nodes"]}
    if seed_at is not None:
        changes[model["output"]].append((seed_at, 1))
    for k, _, updates in steps:
        for child, after in updates:
            changes[child].append((k, after))
    table = []
    for k in range(last + 1):
        row = []
        for node in model["nodes"]:
            before = [value for at, value in changes[node["id"]] if at <= k]
            row.append(before[-1] if before else node["grad"] if k >= last else None)
        table.append(row)
    return table


CASES = [
    ("mlp", MLP, variant, "course") for variant in ("correct", "no-visited-check", "assign", "no-topological-order")
]
CASES += [("shared", SHARED, "correct", "course"), ("own class", "micrograd_no_visited_set", "correct", "learner")]


@pytest.mark.parametrize(("name", "program", "variant", "walk"), CASES, ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in CASES])
def test_grads_received_updates_and_users_read_as_the_trace_says(client, name, program, variant, walk):
    if walk == "learner":
        program = (OWN_CLASSES / f"{program}.py").read_text(encoding="utf-8")
    model = answer(client, program, variant)
    views = timeline_views(model, walk)
    steps = node_steps(model, views, walk)
    seed_at = views["propagateStart"] if walk == "course" else None
    assert views["grads"] == expected_grads(model, steps, seed_at, views["last"])

    users = {node["id"]: [] for node in model["nodes"]}
    for node in model["nodes"]:
        for slot, child in enumerate(node["children"]):
            users[child].append([node["id"], slot])
    received = {node["id"]: [] for node in model["nodes"]}
    for k, owner, updates in sorted(steps, key=lambda s: s[0]):
        if owner is None:
            continue  # a learner's write outside any node's step is no node's contribution
        for child, after in updates:
            received[child].append([k, owner, child, after])
    for k, stories in enumerate(views["stories"]):
        for node in model["nodes"]:
            story = stories[node["id"]]
            assert story["users"] == users[node["id"]]
            assert story["received"] == [r for r in received[node["id"]] if r[0] <= k]
    assert sum(len(r) for r in received.values()) > 0, "the walk passes gradient on"
    if name == "shared":
        a = next(n["id"] for n in model["nodes"] if n["label"] == "a")
        assert len(users[a]) == 3, "a feeds b twice and c once: three users' edges"


@pytest.mark.parametrize(("name", "program", "variant", "walk"), CASES, ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in CASES])
def test_a_frame_made_from_the_step_before_reads_as_one_made_afresh(client, name, program, variant, walk):
    """frameAt starts from the last frame it made and works out again only the nodes that change between
    the two steps: stepped forward, back, and in jumps, every frame's grads are the trace's and its flags
    those of a frame made with no frame before it."""
    if walk == "learner":
        program = (OWN_CLASSES / f"{program}.py").read_text(encoding="utf-8")
    model = answer(client, program, variant)
    got = run_on_timeline(
        model,
        walk,
        """
        const visits = [];
        for (let k = 0; k <= tl.last; k++) visits.push(k);
        for (let k = tl.last; k >= 0; k--) visits.push(k);
        let seed = 7;
        for (let i = 0; i < 60; i++) {
            seed = (seed * 1103515245 + 12345) % 2147483648;
            const k = seed % (tl.last + 1);
            visits.push(k, Math.max(0, k - 1), Math.min(tl.last, k + 2), k);
        }
        const frames = visits.map((k) => {
            const frame = tlm.frameAt(tl, k);
            const fresh = tlm.frameAt(tlm.buildTimeline(model, { walk }), k);
            const grads = Array.from(frame.flags, (_, id) => tlm.gradOf(frame, id));
            return { k, grads, flags: Array.from(frame.flags), fresh: Array.from(fresh.flags) };
        });
        console.log(JSON.stringify({ frames, last: tl.last, propagateStart: tl.propagateStart }));
        """,
    )
    views = {"propagateStart": got["propagateStart"]}
    steps = node_steps(model, views, walk)
    seed_at = got["propagateStart"] if walk == "course" else None
    expected = expected_grads(model, steps, seed_at, got["last"])
    assert len(got["frames"]) > 2 * (got["last"] + 1)
    for frame in got["frames"]:
        assert frame["grads"] == expected[frame["k"]], f"grads at step {frame['k']}"
        assert frame["flags"] == frame["fresh"], f"flags at step {frame['k']}"
    assert any(flags & 8 for frame in got["frames"] for flags in frame["flags"]), "some frame shows walked nodes"


def test_a_nan_grad_is_a_grad_that_has_arrived_not_one_missing(client):
    # x = log(-1) is NaN, so L = x * x passes x a NaN grad: the frame must tell it from a grad not yet there.
    model = answer(client, "x = log(-1)\nL = x * x")
    x = next(node["id"] for node in model["nodes"] if node["label"] == "x")
    got = run_on_timeline(
        model,
        "course",
        f"""
        const before = tlm.frameAt(tl, tl.propagateStart);
        const after = tlm.frameAt(tl, tl.last);
        const story = (frame) => ({{
            isNull: tlm.gradOf(frame, {x}) === null,
            isNaN: Number.isNaN(tlm.gradOf(frame, {x})),
            hasGradBit: (frame.flags[{x}] & tlm.FLAG.GRAD) !== 0,
        }});
        console.log(JSON.stringify({{ before: story(before), after: story(after) }}));
        """,
    )
    assert got["before"] == {"isNull": True, "isNaN": False, "hasGradBit": False}, "at the seed x has no grad yet"
    assert got["after"] == {"isNull": False, "isNaN": True, "hasGradBit": True}, "at the end x's grad is NaN"
