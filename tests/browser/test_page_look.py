"""Accessibility (axe-core, vendored for tests only) and the README screenshot."""

import json
import sys
from pathlib import Path

import pytest
from pagehelpers import grad_text, next_frames, node, open_program, wait_until_still

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))
import screenshots  # noqa: E402  (docs/screenshots.py, a script)

AXE = Path(__file__).parent / "vendor" / "axe-core.v4.14.1.min.js"
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


def test_the_readme_picture_shows_chapter_2_as_c_passes_its_gradient(page, artifacts):
    """The README's picture, as docs/screenshots.py takes it: chapter 2's graph as c passes its
    gradient to a and b (a's second contribution), with the update callouts, gradient flow on and
    a's story open. Taken here into the artifacts folder, not into static/img."""
    screenshots.show_chapter_2(page)
    assert [grad_text(page, name) for name in "abcL"] == ["4", "2", "1", "1"]
    assert page.locator("g.vg-update-label").count() == 2
    assert page.get_by_role("button", name="Gradient flow").get_attribute("aria-pressed") == "true"
    wait_until_still(page)  # the fit and the transitions settle
    next_frames(page)
    shot = page.screenshot(path=str(artifacts / "chapter2-end.png"))
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
