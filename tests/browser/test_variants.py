"""What if it were done wrong?: each broken walk's hand-worked wrong gradient beside the correct
one, marked as wrong, with the broken walk's own steps."""

import pytest
from pagehelpers import open_program

REUSE = "a = 1\nb = a + a\nc = b + b"
CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"


def row(page, name):
    return page.locator(f'[data-variant="table"] tr[data-node="{name}"]')


@pytest.mark.parametrize(
    ("variant", "choice", "program", "nodes", "correct", "broken"),
    [
        ("no-visited-check", "No visited check", REUSE, 3, "4", "8"),
        ("assign", "= instead of +=", CHAPTER_2, 4, "4", "3"),
        ("no-topological-order", "No topological order", REUSE, 3, "4", "6"),
    ],
)
def test_broken_walk_beside_the_correct_one(page, artifacts, variant, choice, program, nodes, correct, broken):
    open_program(page, program, nodes=nodes)
    panel = page.locator('[data-vg="variants"]')
    assert not panel.locator('[data-variant="result"]').is_visible()
    page.get_by_label(choice).check()
    a = row(page, "a")
    a.wait_for()
    cells = a.locator("td")
    assert cells.nth(0).text_content() == correct
    assert cells.nth(1).text_content() == f"{broken} ✗ wrong"
    assert a.get_attribute("data-verdict") == "wrong" and "vg-wrong" in a.get_attribute("class")
    assert row(page, "b").get_attribute("data-verdict") == "right" if variant != "assign" else True
    banner = panel.locator('[data-variant="banner"]').text_content()
    assert banner.startswith("Broken on purpose") and f"a.grad {broken} instead of {correct}" in banner
    assert panel.locator("th.vg-broken-col").text_content().startswith("Broken")
    steps = panel.locator('[data-variant="steps"] li')
    assert steps.count() > 0
    order = panel.locator('[data-variant="order"]').text_content()
    if variant == "no-visited-check":
        assert order == "Sorted list: a, a, b, a, a, b, c"  # a and b sorted twice
    elif variant == "no-topological-order":
        assert order.startswith("No sorted list")
        # One update per line, in the order they happen: b is entered (grad 1) before c's second update reaches it.
        assert steps.nth(1).text_content() == "b (grad 1): a.grad += 1 × 1 → 1"
        assert steps.nth(3).text_content() == "b (grad 1): a.grad += 1 × 1 → 2"
        assert steps.nth(5).text_content() == "c (grad 1): b.grad += 1 × 1 → 2"
    else:
        assert steps.nth(1).text_content().startswith("c (grad 1): a.grad = 3 × 1 → 3")  # overwrites the 1 from L
    play = panel.get_by_role("link", name="Play the broken walk on the main graph")
    assert f"variant={variant}" in play.get_attribute("href")
    panel.screenshot(path=str(artifacts / f"variant-{variant}.png"))

    page.get_by_label("Correct", exact=True).check()
    assert not panel.locator('[data-variant="result"]').is_visible()


def test_a_graph_without_reuse_is_right_even_when_broken_and_the_panel_follows_the_program(page):
    open_program(page, "a = 2\nb = 3\nc = a * b", nodes=3)
    page.get_by_label("No visited check").check()
    page.locator('[data-variant="banner"]').filter(has_text="every gradient of this graph comes out right").wait_for()
    assert page.locator('[data-variant="table"] tr[data-verdict="wrong"]').count() == 0
    page.locator('[data-vg="program"]').fill(REUSE)
    row(page, "a").filter(has_text="8 ✗ wrong").wait_for()
