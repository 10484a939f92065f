"""The page asks /backward for the columnar encoding (docs/api.md, "The columnar encoding") and reads
whichever encoding the answer's Content-Type names: from the columns, and from a JSON answer to the
same request (a server that does not write columns), it draws the same picture, the same tables,
and its "API JSON" export is the same file byte for byte (the model the page keeps is the same)."""

from pagehelpers import open_program

COLUMNS_MEDIA_TYPE = "application/vnd.valuegraph.columns+json"
# Chapter 2's walk with a power (a SPARSE column), log(0) = -Infinity and the NaN grad that 0 * inf
# sends back to a: non-finite numbers in VALUES, LISTS and the propagate updates' columns.
PROGRAM = "a = 2\nb = 3\nc = a * b\nL = c ** 2 + log(0 * a)"


def answers_seen(page):
    """[(Accept asked, Content-Type answered)] of the page's /backward requests, as they happen."""
    seen = []

    def answered(response):
        if response.url.split("?")[0].endswith("/backward"):
            seen.append((response.request.headers.get("accept"), response.headers.get("content-type")))

    page.on("response", answered)
    return seen


def download_json(page):
    page.locator('[data-vg="export-menu"] summary').click()
    with page.expect_download() as info:
        page.locator('[data-vg="export-json"]').click()
    with open(info.value.path(), encoding="utf-8") as exported:
        return exported.read()


def what_the_page_shows(page):
    """At the walk's last step: each node's record (label, data, grad, op) and the edges' local
    gradients as drawn, both tables' rows, the summary line, and the API JSON export."""
    open_program(page, PROGRAM, 8)
    last = page.locator('[data-vg="scrubber"]').get_attribute("max")
    open_program(page, PROGRAM, 8, step=last)
    records = page.locator("[data-node-id]").evaluate_all(
        "nodes => nodes.map((n) => [n.dataset.nodeId, n.textContent]).sort()"
    )
    return {
        "records": records,
        "edges": sorted(page.locator("g.vg-edge-label .vg-edge-text").all_text_contents()),
        "sort": page.locator('[data-vg="sort-table"] tbody tr').all_inner_texts(),
        "propagate": page.locator('[data-vg="propagate-table"] tbody tr').all_inner_texts(),
        "summary": page.locator('[data-vg="graph-summary"]').text_content(),
        "json": download_json(page),
    }


def test_the_page_reads_the_columns_and_a_json_answer_alike(page):
    seen = answers_seen(page)
    from_columns = what_the_page_shows(page)
    assert seen and all(COLUMNS_MEDIA_TYPE in accept.split(",")[0] for accept, _ in seen), seen
    assert all(answered == COLUMNS_MEDIA_TYPE for _, answered in seen), seen

    def as_json(route):  # the same request answered in JSON, as a server without the columns would
        route.fulfill(response=route.fetch(headers={**route.request.headers, "accept": "application/json"}))

    page.route("**/backward", as_json)
    seen.clear()
    from_json = what_the_page_shows(page)
    assert seen and all(answered == "application/json" for _, answered in seen), seen

    assert from_columns == from_json
    # and what both show is this program's: -Infinity and NaN as the page writes them, the power's
    # exponent and a's NaN grad in the exported answer
    assert any("-∞" in text or "-Infinity" in text for _, text in from_columns["records"]), from_columns["records"]
    assert '"exponent": 2' in from_columns["json"] and '"data": "-Infinity"' in from_columns["json"]
    assert len(from_columns["sort"]) == 1 + 16 and len(from_columns["propagate"]) >= 8  # the start row, then the pops
