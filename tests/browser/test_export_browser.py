"""Exports in a browser: the self-contained file replays the walk from file:// with the network
blocked, and the page's SVG, PNG, JSON, CSV and HTML downloads hold what they should."""

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from html import unescape

import httpx
import pytest
from pagehelpers import open_program, wait_for_graph
from playwright.sync_api import expect

PROGRAM = "a = 2; b = 3; L = a * b + a"
SVG = "{http://www.w3.org/2000/svg}"


def test_the_standalone_file_plays_to_the_end_from_file_with_no_network(page, live_server, tmp_path):
    answer = httpx.post(f"{live_server}/export/html?speed=50", json={"expression": PROGRAM})
    assert answer.status_code == 200
    lesson = tmp_path / "lesson.html"
    lesson.write_bytes(answer.content)
    blocked = []

    def only_files(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.context.route("**/*", only_files)
    page.goto(lesson.as_uri())
    wait_for_graph(page, 4)
    assert page.locator('[data-vg="program"]').input_value() == PROGRAM
    # Gradients start blank and fill in as the walk plays.
    grads = page.locator("[data-node-id] .vg-grad")
    assert grads.all_text_contents() == ["", "", "", ""]
    page.get_by_role("button", name="Play").click()
    expect(page.locator('[data-vg="step-label"]')).to_have_text("13 / 13", timeout=5000)
    by_id = {
        int(n.get_attribute("data-node-id")): n.locator(".vg-grad").text_content()
        for n in page.locator("[data-node-id]").all()
    }
    assert by_id == {0: "4", 1: "2", 2: "1", 3: "1"}  # a, b, a*b, L
    assert blocked == []
    page.context.unroute("**/*")


@pytest.mark.allow_console(r"Content Security Policy")
def test_the_standalone_file_runs_only_its_own_scripts(page, live_server, tmp_path):
    """The file carries its own CSP (hashes of its two inline scripts): a script that got into it
    anyway does not run, while the file itself still plays from disk."""
    html = httpx.post(f"{live_server}/export/html", json={"expression": PROGRAM}).text
    policy = unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)[1])
    assert policy.startswith("default-src 'none'; script-src 'sha256-") and "unsafe-inline" not in policy.split(";")[1]
    lesson = tmp_path / "lesson.html"
    lesson.write_text(html.replace("</main>", "<script>document.title = 'injected'</script></main>", 1), "utf-8")
    page.goto(lesson.as_uri())
    wait_for_graph(page, 4)
    assert page.title() != "injected"


def download(page, name):
    """The file the export menu's item `name` downloads; the menu closes once it is on its way."""
    menu = page.locator('[data-vg="export-menu"]')
    if not menu.evaluate("(menu) => menu.open"):
        menu.locator("summary").click()
    with page.expect_download() as info:
        page.locator(f'[data-vg="{name}"]').click()
    expect(menu).not_to_have_attribute("open", "")
    return info.value


def test_the_export_menu_closes_on_escape_and_on_a_press_elsewhere(page):
    open_program(page, PROGRAM, 4)
    menu = page.locator('[data-vg="export-menu"]')
    menu.locator("summary").click()
    expect(menu).to_have_attribute("open", "")
    page.keyboard.press("Escape")
    expect(menu).not_to_have_attribute("open", "")
    expect(menu.locator("summary")).to_be_focused()
    menu.locator("summary").click()
    page.locator('[data-vg="caption"]').click()
    expect(menu).not_to_have_attribute("open", "")


def test_the_page_exports_svg_png_json_csv_and_html(page, tmp_path):
    open_program(page, PROGRAM, 4, step=13)
    page.locator('[data-vg="export-menu"] summary').click()
    html_button = page.locator('[data-vg="export-html"]')
    expect(html_button).to_have_text(re.compile(r"Self-contained HTML \(\d+ kB\)"))

    # SVG: stands alone (no class left to style it), shows each node's label, data and grad at this step.
    svg_path = tmp_path / "graph.svg"
    download(page, "export-svg").save_as(svg_path)
    tree = ET.parse(svg_path)
    root = tree.getroot()
    assert root.tag == f"{SVG}svg" and float(root.get("width")) > 100
    texts = [t.text for t in root.iter(f"{SVG}text") if t.text]
    for label in ("a", "b", "L", "8", "4"):
        assert label in texts
    assert all("class" not in element.attrib for element in root.iter())
    assert "fill:" in root.find(f".//{SVG}text").get("style")
    # Under the graph: the step, its caption and the legend (issue 11, item 12).
    notes = root.find(f".//{SVG}g[@data-export='notes']")
    lines = [t.text for t in notes.iter(f"{SVG}text")]
    assert lines[0] == "Step 13 / 13"
    assert " ".join(lines).startswith("Step 13 / 13 Stage 2 · ") and "Done: a.grad = 4, b.grad = 2." in " ".join(lines)
    legend = {t.get("data-legend"): t.text for t in notes.iter(f"{SVG}text") if t.get("data-legend")}
    assert (
        legend["vg-data"].startswith("data")
        and legend["vg-grad"].startswith("grad")
        and "local gradient" in legend["vg-edge-text"]
    )
    assert float(root.get("height")) > max(float(t.get("y")) for t in notes.iter(f"{SVG}text")), (
        "the notes are inside the picture"
    )

    png = download(page, "export-png")
    png_path = tmp_path / "graph.png"
    png.save_as(png_path)
    data = png_path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    # The PNG is drawn from the same SVG, notes included: as tall as it, at twice the size.
    png_height = int.from_bytes(data[20:24], "big")
    assert png_height == 2 * int(root.get("height"))

    exported = json.loads(open(download(page, "export-json").path()).read())
    assert exported["output"] == 3 and [n["grad"] for n in exported["nodes"]] == [4, 2, 1, 1]

    rows = list(csv.reader(io.StringIO(open(download(page, "export-csv-propagate").path()).read())))
    assert rows[0] == ["step", "i", "node", ".grad", "what happens"]
    assert [row[2] for row in rows[1:]] == ["L", "L", "a * b", "b", "a"]  # an unnamed value goes by its code (expr)
    rows = list(csv.reader(io.StringIO(open(download(page, "export-csv-sort").path()).read())))
    assert rows[0][:2] == ["step", "pop"] and len(rows) == 1 + 9  # the start, then 8 pops

    html = download(page, "export-html")
    size = int(html_button.get_attribute("data-size"))
    assert html.suggested_filename == "valuegraph.html"
    content = open(html.path(), "rb").read()
    assert len(content) == size
    assert b'data-vg="legend"' in content and b"on an edge: its local gradient" in content, "the file carries a legend"


@pytest.mark.parametrize("width", [390, 1280])
def test_the_export_menu_opens_inside_the_window(page, width):
    page.set_viewport_size({"width": width, "height": 844})
    open_program(page, PROGRAM, 4)
    page.locator('[data-vg="export-menu"] summary').click()
    expect(page.locator('[data-vg="export-html"]')).to_have_text(re.compile(r"\(\d+ kB\)"))  # its widest
    for name in ("export-html", "export-svg", "export-csv-propagate"):
        left, right = page.locator(f'[data-vg="{name}"]').evaluate(
            "(b) => { const r = b.getBoundingClientRect(); return [r.left, r.right]; }"
        )
        assert 0 <= left and right <= width, (name, left, right)


def test_the_share_dialog_gives_link_snippet_and_preview(page):
    open_program(page, PROGRAM, 4, step=2)
    page.get_by_role("button", name="Share / embed").click()
    dialog = page.locator('[data-vg="share-dialog"]')
    expect(dialog).to_be_visible()
    assert "expression=" in page.locator('[data-vg="share-link"]').input_value()
    page.locator('[data-vg="share-options"] select[name="controls"]').select_option("minimal")
    snippet = page.locator('[data-vg="share-snippet"]').input_value()
    assert snippet.startswith('<iframe src="http://127.0.0.1') and "/embed?expression=" in snippet
    assert "controls=minimal" in snippet and "step=2" in snippet
    preview = page.frame_locator('[data-vg="share-preview"]')
    expect(preview.locator('[data-vg="graph"] svg[data-node-count="4"]')).to_have_count(1)
    expect(preview.locator('[data-vg="step-label"]')).to_have_text("2 / 13")
    page.locator('[data-vg="share-close"]').click()
    expect(dialog).to_be_hidden()


def test_the_notebook_output_plays_in_its_iframe_with_no_network(page):
    from app.notebook import show
    from engine import Value

    a = Value(3.0, label="a")
    b = a**2
    b.label = "b"
    blocked = []
    page.context.route("**/*", lambda route: blocked.append(route.request.url) or route.abort())
    page.set_content(f"<!doctype html><title>notebook</title>{show(b, alone=True)._repr_html_()}")
    frame = page.frame_locator("iframe")
    expect(frame.locator("[data-node-id]")).to_have_count(2)
    frame.get_by_role("button", name="End", exact=True).click()
    expect(frame.locator('[data-node-id="0"] .vg-grad')).to_have_text("6")
    assert blocked == []
    page.context.unroute("**/*")


MLP_FORWARD = "from micrograd.nn import MLP\n\nn = MLP(3, [4, 4, 1])\nx = [2.0, 3.0, -1.0]\ny = n(x)\ny.backward()\n"


def box(page, layer):
    return page.locator(f'.vg-scope-box[data-scope^="MLP.__call__ › {layer}"]')


def test_the_file_opens_folded_as_the_page_and_holds_the_view_on_screen(page, tmp_path):
    """With no server to lay out a folded view, the file holds the views the page sent when it was
    made (the one it opens with, the one on screen): those open as on the page, and another says
    that it needs the server, keeping the picture it had."""
    open_program(page, MLP_FORWARD)
    titles = page.locator(".vg-scope-title")
    folded = ["⊞ Layer[0]", "⊞ Layer[1]", "⊞ Layer[2]"]
    layer_1_open = ["⊞ Layer.__init__", "⊞ Layer[0]", "⊞ Layer[2]"]  # its weights: the parameters' scope
    expect(titles).to_have_text(folded)
    box(page, "Layer[1]").click()
    expect(titles).to_have_text(layer_1_open)
    page.locator('[data-vg="export-menu"] summary').click()
    expect(page.locator('[data-vg="export-html"]')).to_have_text(re.compile(r"Self-contained HTML \(\d+ kB\)"))
    lesson = tmp_path / "lesson.html"
    download(page, "export-html").save_as(lesson)

    page.goto(lesson.as_uri())
    wait_for_graph(page)
    expect(titles).to_have_text(folded)  # as the graph opens
    box(page, "Layer[1]").click()  # as it was on screen
    expect(titles).to_have_text(layer_1_open)
    box(page, "Layer[0]").focus()  # a view the file does not hold (the camera may have left it out of view)
    page.keyboard.press("Enter")
    expect(page.locator('[data-vg="graph-note"]')).to_have_text(re.compile("open the program in valuegraph"))
    expect(titles).to_have_text(layer_1_open)
