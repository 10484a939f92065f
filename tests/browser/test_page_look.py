"""Accessibility (axe-core, vendored for tests only) and the README screenshot."""

import json
from pathlib import Path

import pytest
from pagehelpers import grad_text, next_frames, node, open_program, wait_until_still

AXE = Path(__file__).parent / "vendor" / "axe-core.v4.14.1.min.js"
README_SCREENSHOT = Path(__file__).resolve().parents[2] / "static" / "img" / "screenshot-chapter2.png"
CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"


def axe_violations(page):
    result = page.evaluate("async () => await axe.run(document, { resultTypes: ['violations'] })")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_accessibility_violations(page, scheme, artifacts):
    page.emulate_media(color_scheme=scheme)
    # As an init script: the page's CSP (rightly) refuses an injected <script> tag.
    page.add_init_script(path=str(AXE))
    open_program(page, CHAPTER_2, nodes=4, step=11)
    node(page, "c").click()  # the story panel filled in, too
    violations = axe_violations(page)
    (artifacts / f"axe-{scheme}.json").write_text(json.dumps(violations, indent=2))
    assert violations == []


def test_everything_can_be_reached_with_the_keyboard(page):
    open_program(page, CHAPTER_2, nodes=4)
    reached = set()
    for _ in range(60):
        page.keyboard.press("Tab")
        reached.add(
            page.evaluate(
                "document.activeElement.getAttribute('aria-label') || document.activeElement.id || "
                "document.activeElement.textContent.trim()"
            )
        )
    for name in ["Program", "vg-examples", "Play", "Step forward", "End", "vg-speed", "vg-scrubber", "Fit to screen"]:
        assert name in reached, f"{name} is not reachable with Tab"
    assert any(label and label.startswith("a: data 2") for label in reached), "graph nodes are focusable"


def test_chapter_2_at_the_end_of_the_walk_screenshot(page, artifacts):
    """The picture in the README: chapter 2's graph as c passes its gradient to a and b (a's second
    contribution), with the update callouts and gradient flow on."""
    page.set_viewport_size({"width": 1400, "height": 900})
    open_program(page, CHAPTER_2, nodes=4, step=11)
    page.get_by_role("button", name="Gradient flow").click()
    node(page, "a").click()  # a's story beside the graph: its grad as the sum from two parents
    assert [grad_text(page, name) for name in "abcL"] == ["4", "2", "1", "1"]
    assert page.locator("g.vg-update-label").count() == 2
    wait_until_still(page)  # the fit and the transitions settle
    next_frames(page)
    shot = page.screenshot(path=str(artifacts / "chapter2-end.png"))
    README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    README_SCREENSHOT.write_bytes(shot)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
