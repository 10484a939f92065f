"""Walk steps at the level shown (issue 22), timed in a page that is already open: for bench_browser's rows.

box_walk_step_times(page, count) steps through stage 2 as the player does at the level on screen (with
scopes folded, a box's run of node steps is one step: timeline.js's levelTimeline), from the start of
propagation, and times each step from the call to the frame that paints it, as bench_browser's
FOLLOWED_STEPS times node steps. It returns {"ms": [...], "box_steps": how many of those steps were a
box's, "level_steps": the walk's steps at this level, "node_steps": its node steps}.
"""

# In the page: `count` level steps of stage 2 (go, then the frame that paints it).
BOX_WALK_STEPS = """async (count) => {
  const app = document.querySelector('[data-valuegraph]').valuegraph;
  const levels = app.levels;
  const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  const ms = [];
  let boxSteps = 0;
  for (let j = levels.propagateStart; j <= levels.last && ms.length < count; j++) {
    await frame();  // at the start of a frame: the step is drawn in this frame, after this callback
    const start = performance.now();
    app.controls.goLevel(j, 'step');
    await frame();  // the next frame begins once this one is drawn
    ms.push(performance.now() - start);
    if (levels.item[j] >= 0) boxSteps += 1;
  }
  return { ms, box_steps: boxSteps, level_steps: levels.last + 1, node_steps: app.timeline.last + 1 };
}"""


def box_walk_step_times(page, count):
    """Time up to `count` steps of stage 2 at the level shown, in `page` (the graph already drawn)."""
    return page.evaluate(BOX_WALK_STEPS, count)
