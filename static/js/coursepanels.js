// The course panels beside the visualiser: lessons, the nudge test and the broken walks.
// They hear about each graph the page draws ("valuegraph:loaded" on the root) and drive the page
// only through what startValuegraph returns (editor, run, controls, timeline).

import { DEFAULT_EXAMPLE, EXAMPLES } from "./examples.js";
import { createLessons, linkedLesson, lessonStep } from "./lessons.js";
import { createNudgePanel } from "./nudge.js";
import { readState } from "./state.js";
import { createVariantsPanel } from "./variants.js";

export function startCoursePanels(root, app) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const graphBox = el("graph");
  const nudge = el("nudge") ? createNudgePanel(el("nudge"), { graphBox }) : null;
  const variants = el("variants") ? createVariantsPanel(el("variants"), { initial: readState(window.location.search).variant }) : null;

  root.addEventListener("valuegraph:loaded", (event) => {
    nudge?.load(event.detail);
    variants?.load(event.detail);
  });
  // A click on a leaf in the graph also picks it in the nudge panel.
  graphBox.addEventListener("click", (event) => {
    const node = event.target.closest?.("[data-node-id]");
    if (node) nudge?.selectLeaf(Number(node.dataset.nodeId));
  });

  // how: "pick" (the menu: a history entry of its own) or "link" (the page opened on the lesson's URL: that entry).
  async function openLesson(lesson, how = "pick") {
    app.controls.pause();
    app.setLesson(lesson);
    el("variables").value = "";
    app.editor.value = lesson.program;
    el("examples").value = EXAMPLES.find((e) => e.program === lesson.program)?.id ?? "";
    variants?.select(lesson.variant ?? "correct"); // a lesson without one leaves no broken walk switched on
    const atStart = lesson.stage !== "propagate" && lesson.step === 0;
    // One history entry per lesson: either the run writes it, or the jump to the step does.
    await app.run({ history: atStart ? (how === "link" ? "replace" : "push") : "none", step: 0 });
    if (atStart || app.editor.value !== lesson.program || !app.timeline) return;
    app.controls.go(lessonStep(app.timeline, lesson), how === "link" ? "lesson" : "jump");
  }

  if (!el("lessons")) return;
  const lessons = createLessons(el("lessons"), { open: openLesson });
  // The URL's lesson (?lesson=sort): alone, the page opens on it; beside its own program, its caption is
  // shown (a link the page wrote, Back and Forward); beside another program it is dropped.
  function followUrl(opening) {
    const state = readState(window.location.search);
    const lesson = linkedLesson(state, opening ? null : DEFAULT_EXAMPLE.program); // Back to a link without a program: the default's
    if (lesson && opening && state.expression === null) return lessons.choose(lesson, "link");
    if (!lesson) app.setLesson(null);
    lessons.show(lesson);
  }
  followUrl(true);
  window.addEventListener("popstate", () => followUrl(false));
  // Another program than the lesson's (edited, an example picked): its caption goes with its link.
  root.addEventListener("valuegraph:loaded", (event) => {
    if (!event.detail.state.lesson) lessons.show(null);
  });
}
