"""Helpers for the browser tests: opening a program, reading the player and the drawn nodes."""

import re
from urllib.parse import quote


def url_for(program, **params):
    query = "&".join(f"{key}={quote(str(value))}" for key, value in params.items())
    return f"/?expression={quote(program)}" + (f"&{query}" if query else "")


def wait_for_graph(page, nodes=None):
    """Until the graph for the current program is fully drawn (and, if given, has `nodes` nodes)."""
    page.wait_for_function(
        """(nodes) => {
            const svg = document.querySelector('[data-vg="graph"] svg');
            if (!svg || !svg.dataset.nodeCount) return false;
            const count = Number(svg.dataset.nodeCount);
            if (nodes !== null && count !== nodes) return false;
            return document.querySelectorAll('[data-node-id]').length === count
                && document.querySelector('[data-vg="caption"]').textContent !== '';
        }""",
        arg=nodes,
    )


def open_program(page, program, nodes=None, **params):
    page.goto(url_for(program, **params))
    wait_for_graph(page, nodes)


def step_of(page):
    return int(page.locator('[data-vg="scrubber"]').input_value())


def last_step(page):
    return int(page.locator('[data-vg="scrubber"]').get_attribute("max"))


def node(page, label):
    """The drawn node whose label cell reads `label`."""
    return page.locator("[data-node-id]").filter(
        has=page.locator(".vg-label", has_text=re.compile(f"^{re.escape(label)}$"))
    )


def grad_text(page, label):
    return node(page, label).locator(".vg-grad").text_content()
