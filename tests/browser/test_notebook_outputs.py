"""A notebook run headlessly by nbclient (a real IPython kernel), its outputs read as a front end
reads them: each output's MIME bundle holds the still picture (image/svg+xml) beside the walk
(text/html), the first output carries the page's code and the next one stays under 100 KB; put in
one document, as JupyterLab, the classic Notebook and VS Code put a notebook's outputs, both open
their walk with the network blocked, in either order; where no script runs, the picture shows."""

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from playwright.sync_api import expect

REPO = Path(__file__).resolve().parents[2]
CELLS = [
    "from engine import Value\nfrom app.notebook import show\na = Value(2.0, label='a')\nb = Value(3.0, label='b')",
    "L = a * b + a\nL.label = 'L'\nshow(L)",
    "x = Value(0.5)\ny = (x * 4).tanh()\nshow(y)",
]


def run_notebook():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{REPO}{os.pathsep}{env_path}" if env_path else str(REPO)
    try:
        NotebookClient(
            notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}
        ).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
        if not env_path:
            del os.environ["PYTHONPATH"]
    return [cell.outputs[0]["data"] for cell in notebook.cells[1:]]


def test_a_notebook_run_by_nbclient_shares_the_pages_code_and_keeps_its_picture(page):
    first, second = run_notebook()
    for bundle in (first, second):
        assert {"text/html", "image/svg+xml", "text/plain"} <= set(bundle)
    sizes = [sum(len(text.encode()) for text in bundle.values()) for bundle in (first, second)]
    assert sizes[0] > 500_000 and sizes[1] < 100_000, sizes

    blocked = []
    page.context.route("**/*", lambda route: blocked.append(route.request.url) or route.abort())
    for order in ((first, second), (second, first)):  # a later output may be drawn before the first
        page.set_content("<!doctype html><title>notebook</title>" + "".join(b["text/html"] for b in order))
        frames = page.locator("iframe")
        expect(frames).to_have_count(2)
        for index in (0, 1):  # both graphs have 4 nodes: a, b, a*b, L and x, 4, x*4, tanh(x*4)
            expect(page.frame_locator("iframe").nth(index).locator("[data-node-id]")).to_have_count(4)
        expect(page.locator("[data-vg-still]")).to_have_count(0)
    names = page.frame_locator("iframe").nth(0).locator("[data-node-id] .vg-label").all_text_contents()
    assert "x*4" in names  # the second cell's unlabelled values are named in the page too
    assert blocked == []
    page.context.unroute("**/*")

    page.set_content("<!doctype html><title>alone</title>" + second["text/html"])  # its first output is gone
    expect(page.locator("[data-vg-still] svg g")).to_have_count(4)
    expect(page.locator("iframe")).to_have_count(0)
