"""Big graphs: a 2,000-node graph is drawn without freezing the page, a chunk of records a frame.
How long its tasks take is measured by benchmarks/bench_browser.py (its longest main-thread task),
not here: a test's clock reads the machine's load."""

from pagehelpers import next_frames, url_for, wait_until_still

# Installed before the page's scripts: a frame counter, and the frame in which each record was added.
FRAMES_OF_RECORDS = """
window.__frame = 0;
const tick = () => { window.__frame += 1; requestAnimationFrame(tick); };
requestAnimationFrame(tick);
window.__recordFrames = new Set();
new MutationObserver((changes) => {
  for (const change of changes)
    for (const added of change.addedNodes)
      if (added.matches?.('g.vg-node')) window.__recordFrames.add(window.__frame);
}).observe(document, { childList: true, subtree: true });
"""
COMPACT_CHUNK = 250  # records drawn per frame in the simplified view (static/js/render.js CHUNK.compact)


def chain(steps):
    """x, then `steps` times h = tanh(h * 1.01): three nodes per step."""
    return "x = 0.3\nh = x\n" + "h = tanh(h * 1.01)\n" * steps + "L = h"


def test_a_2000_node_graph_is_drawn_a_chunk_of_records_a_frame(page):
    program = chain(666)
    page.add_init_script(FRAMES_OF_RECORDS)
    page.goto(url_for(program))
    page.wait_for_function(
        "() => document.querySelectorAll('[data-node-id]').length === 1999"
        " && document.querySelector('[data-vg=graph-note]').textContent.startsWith('Simplified view')",
        timeout=20_000,
    )
    # Drawn in one task, every record would be added in one frame; the page yields a frame per chunk.
    frames = page.evaluate("window.__recordFrames.size")
    assert frames >= -(-1999 // COMPACT_CHUNK), f"1,999 records added in {frames} frames"

    # The simplified view says so, and still has the hooks: every node, and its grad at the end.
    note = page.locator('[data-vg="graph-note"]').text_content()
    assert "1,999 nodes are too many to label" in note
    assert page.locator("g.vg-edge-label").count() == 0
    page.get_by_role("button", name="End", exact=True).click()
    assert page.locator('[data-node-id="0"] .vg-compact-text').text_content().startswith("x  0.3 │ ")


# Every subpath of the compact edge bundles, and the view in graph coordinates.
EDGES_AND_VIEW = """() => {
  const svg = document.querySelector('[data-vg=graph] svg');
  const subpaths = [...svg.querySelectorAll('.vg-edge-bundle')]
    .flatMap((p) => p.getAttribute('d').split('M').filter(Boolean));
  const t = svg.querySelector('.vg-viewport').transform.baseVal.consolidate().matrix;
  const box = svg.getBoundingClientRect();
  return { subpaths, edges: Number(svg.dataset.edgeCount),
           view: [-t.e / t.a, -t.f / t.a, (box.width - t.e) / t.a, (box.height - t.f) / t.a] };
}"""


def test_zoomed_in_a_big_graph_draws_the_edges_in_view_and_fit_draws_them_all(page):
    page.goto(url_for(chain(666)))
    page.wait_for_function("() => document.querySelectorAll('[data-node-id]').length === 1999", timeout=20_000)
    page.get_by_role("button", name="Fit").click()
    wait_until_still(page)
    whole = page.evaluate(EDGES_AND_VIEW)
    assert len(whole["subpaths"]) == whole["edges"] == 1998

    box = page.locator("[data-vg=graph] svg").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(25):  # zoom in with the wheel, as a learner would
        page.mouse.wheel(0, -100)
        next_frames(page, 1)
    next_frames(page)
    zoomed = page.evaluate(EDGES_AND_VIEW)
    x0, y0, x1, y1 = zoomed["view"]
    assert x1 - x0 < 3000, "the camera did not zoom in"
    drawn = set(zoomed["subpaths"])
    assert 0 < len(drawn) < 1998 / 4
    # Every edge with a point in view is drawn.
    for subpath in whole["subpaths"]:
        points = [tuple(float(n) for n in pair.split(",")) for pair in subpath.replace("L", " ").split()]
        if any(x0 <= x <= x1 and y0 <= y <= y1 for x, y in points):
            assert subpath in drawn, subpath

    page.get_by_role("button", name="Fit").click()
    wait_until_still(page)
    assert len(page.evaluate(EDGES_AND_VIEW)["subpaths"]) == 1998


# The texts the browser lays out (display not none), of records and of edge labels, and which
# records in view (their centre inside the panel) have their data text shown.
TEXTS = """() => {
  const svg = document.querySelector('[data-vg=graph] svg');
  const shown = (el) => getComputedStyle(el).display !== 'none';
  const records = [...svg.querySelectorAll('[data-node-id] text')];
  const labels = [...svg.querySelectorAll('.vg-edge-label text')];
  const panel = svg.getBoundingClientRect();
  const inView = [...svg.querySelectorAll('[data-node-id]')].filter((g) => {
    const r = g.querySelector('.vg-box').getBoundingClientRect();
    const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    return x > panel.left && x < panel.right && y > panel.top && y < panel.bottom;
  });
  return { records: records.length, recordsShown: records.filter(shown).length, labels: labels.length,
           labelsShown: labels.filter(shown).length, inView: inView.length,
           inViewShown: inView.filter((g) => shown(g.querySelector('.vg-data'))).length,
           k: svg.querySelector('.vg-viewport').transform.baseVal.consolidate().matrix.a };
}"""


def test_the_largest_full_view_lays_out_only_the_texts_that_can_be_read(page):
    """Chromium lays out every shown <text> on each change of zoom scale: a 400-node full view has
    ~3,700, which made zoom frames ~150 ms. Out of view, or too small to read, they are hidden."""
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(url_for(chain(133)))  # 400 nodes, the most the page draws in full
    page.wait_for_function("() => document.querySelectorAll('[data-node-id] .vg-data').length === 400", timeout=20_000)
    wait_until_still(page)
    opened = page.evaluate(TEXTS)  # the page opens at a readable zoom on the output
    assert opened["k"] >= 0.35 and opened["inView"] > 0
    assert opened["inViewShown"] == opened["inView"], "every record in view shows its numbers"
    assert opened["recordsShown"] < opened["records"] / 10 and opened["labelsShown"] < opened["labels"] / 10

    page.get_by_role("button", name="Fit to screen").click()
    wait_until_still(page)
    fitted = page.evaluate(TEXTS)
    assert fitted["k"] < 0.35 and fitted["inView"] > 300
    assert fitted["recordsShown"] == 0 and fitted["labelsShown"] == 0, "texts under 6 px are not laid out"

    page.evaluate("document.querySelector('[data-valuegraph]').valuegraph.camera.reveal(0)")  # x, at a readable zoom
    wait_until_still(page)
    back = page.evaluate(TEXTS)
    assert back["k"] >= 0.35 and back["inViewShown"] == back["inView"] > 0
    assert page.locator('[data-node-id="0"] .vg-data').text_content() == "0.3"
