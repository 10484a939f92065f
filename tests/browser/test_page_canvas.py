"""Past 5,000 records the compact picture is painted on a canvas (static/js/canvaspaint.js); the SVG
above it keeps the gestures, and pointing at a painted record still tells its story."""

from pagehelpers import next_frames, url_for, wait_until_still

GRAPH = '[data-vg="graph"]'
STEPS = 1700  # x, then 3 nodes a step: 5,101 nodes


def chain(steps):
    return "x = 0.3\nh = x\n" + "h = tanh(h * 1.01)\n" * steps + "L = h"


# How many of the canvas's pixels are painted, and a checksum of them.
PIXELS = """() => {
  const canvas = document.querySelector('[data-vg="graph"] canvas.vg-canvas');
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let painted = 0, sum = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3]) painted++;
    sum = (sum * 31 + data[i] + 7 * data[i + 1] + 13 * data[i + 2] + data[i + 3]) % 1000000007;
  }
  return { painted, sum, width: canvas.width, height: canvas.height };
}"""


def open_painted(page):
    page.goto(url_for(chain(STEPS)))
    page.wait_for_function(
        "() => document.querySelector('[data-vg=\"graph\"] svg')?.dataset.renderer === 'canvas'"
        " && document.querySelector('[data-vg=\"caption\"]').textContent !== ''",
        timeout=30_000,
    )
    wait_until_still(page)
    next_frames(page)


def test_a_big_graph_is_painted_on_a_canvas_and_repainted_at_each_step(page):
    open_painted(page)
    svg = page.locator(f"{GRAPH} svg.vg-svg")
    assert svg.get_attribute("data-node-count") == str(1 + 3 * STEPS)
    assert page.locator("[data-node-id]").count() == 0  # no element per record
    before = page.evaluate(PIXELS)
    assert before["width"] > 0 and before["painted"] > 1000, before

    page.get_by_role("button", name="End", exact=True).click()
    next_frames(page, 3)
    after = page.evaluate(PIXELS)
    assert after["sum"] != before["sum"], "the walk's last step did not change the painted picture"


def test_a_small_compact_graph_keeps_its_svg_records(page):
    page.goto(url_for(chain(200)))
    page.wait_for_function("() => document.querySelectorAll('[data-node-id]').length === 601", timeout=20_000)
    assert page.locator(f"{GRAPH} svg.vg-svg").get_attribute("data-renderer") == "svg"
    assert page.locator(f"{GRAPH} canvas").count() == 0


def test_pointing_at_a_painted_record_tells_its_story_and_a_click_pins_it(page):
    open_painted(page)
    box = page.locator(f"{GRAPH} svg.vg-svg").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    for _ in range(12):  # zoom in on the middle until a record is large enough to aim at
        page.mouse.wheel(0, -100)
        next_frames(page, 1)
    wait_until_still(page)
    title = page.locator('[data-vg="story-title"]')
    default = title.text_content()
    # Sweep the middle of the panel until the pointer is over a record.
    spot = None
    for dy in range(-60, 61, 8):
        for dx in range(-120, 121, 20):
            page.mouse.move(cx + dx, cy + dy)
            if title.text_content() != default:
                spot = (cx + dx, cy + dy)
                break
        if spot:
            break
    assert spot, "no painted record answered the pointer"
    told = title.text_content()
    page.mouse.click(*spot)
    page.mouse.move(box["x"] + 2, box["y"] + 2)  # away from every record
    next_frames(page)
    assert title.text_content() == told  # pinned: the story stays after the pointer left
