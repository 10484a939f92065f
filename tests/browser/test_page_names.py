"""Names: reassigned names read x, x′, x″ everywhere, and unnamed values show the code that made
them (the server's `expr`) instead of #n."""

from pagehelpers import open_program


def labels_in_graph(page):
    return page.locator("[data-node-id] .vg-label").all_text_contents()


def test_reassigned_names_are_distinct_in_the_graph_and_the_sorted_list(page):
    open_program(page, "x = 2\nx = x * 3\nx = x + 1", nodes=5)
    shown = labels_in_graph(page)
    assert {"x", "x′", "x″"} <= set(shown)
    assert not any(text.startswith("#") for text in shown)
    page.keyboard.press("End")  # the walk is done: the list holds every node once (stage 2 reads it backwards)
    page.wait_for_function("() => document.querySelectorAll('[data-vg=\"sorted\"] li').length === 5")
    sorted_names = page.locator('[data-vg="sorted"] li').all_text_contents()
    assert [name for name in sorted_names if name.startswith("x")] == ["x″", "x′", "x"]


def test_unnamed_values_show_the_code_that_made_them(page):
    open_program(page, "a = 2\nb = 3\nL = a * b + a", nodes=4)
    shown = labels_in_graph(page)
    assert "a * b" in shown  # the product has no name of its own
    assert not any(text.startswith("#") for text in shown)
