// The lessons menu: the course in order, each lesson a caption in the project's words plus a
// program opened at a stage and step of the walk. Opening a lesson goes
// through the page's own run and step controls, so the URL and Back/Forward work as usual.

import { make } from "./courseapi.js";
import { stageBounds } from "./timeline.js";

// step: a step number within the stage (0 = its first step), or "end"; variant: the broken walk
// the "What if it were done wrong?" panel switches to.
export const LESSONS = [
  {
    id: "value",
    title: "1. A value and its origin",
    caption: "Every box is one Value: its number (data), a grad that stays blank until the backward pass fills it, and a link back to the operation and the inputs that made it. a and b are leaves: nothing made them. c keeps a receipt saying it is a times b.",
    program: "a = 2\nb = 3\nc = a * b",
    stage: "sort",
    step: 0,
  },
  {
    id: "local-add-mul",
    title: "2. Local gradients: + and *",
    caption: "The small numbers on the edges are local gradients, fixed when the operation runs. A sum passes a nudge straight through, so both of its edges carry 1. A product scales a nudge of one input by the other input: the edge from a carries b's data, 3, and the edge from b carries a's data, 2.",
    program: "a = 2\nb = 3\ns = a + b\np = a * b\nL = s + p",
    stage: "sort",
    step: 0,
  },
  {
    id: "local-curved",
    title: "3. **, log, exp and relu",
    caption: "For x ** n the edge carries n times x to the power n minus 1: 6 for x squared at 3. log carries 1 over its input, exp carries its own result, and relu carries 1 for a positive input and 0 otherwise. These are the only rules the backward pass ever needs.",
    program: "x = 3\np = x ** 2\nl = log(x)\ne = exp(x)\nr = relu(x)\nL = p + l + e + r",
    stage: "sort",
    step: 0,
  },
  {
    id: "nudge",
    title: "4. Checking by nudging",
    caption: "You need no calculus to trust a rule: move the input a little, rerun, and divide the change in the output by the size of the move. For a squared at 3 with a move of 0.0001 that gives 6.0001, not 6: the curve gets steeper inside the step. The nudge panel below measures any leaf; try a bigger or smaller h.",
    program: "a = 3\nb = a ** 2",
    stage: "propagate",
    step: "end",
  },
  {
    id: "chapter1",
    title: "5. The forward pass",
    caption: "The forward pass only fills in data, left to right: c = 2 × 3 = 6, d = 6 + 2 = 8, e = 8 squared = 64. Each operation also stores its local gradients as plain numbers right away, so the backward pass never has to work them out.",
    program: "a = 2\nb = 3\nc = a * b\nd = c + a\ne = d ** 2",
    stage: "sort",
    step: 0,
  },
  {
    id: "sort",
    title: "6. Stage 1: the sort",
    caption: "Before any gradient moves, the nodes are put in an order where every input comes before whatever uses it. A stack of (node, input index) pairs does this without recursion. At this step L looks at its second input, a, finds it already visited through c, and skips it: without that check a would be listed twice.",
    program: "a = 2\nb = 3\nc = a * b\nL = c + a",
    stage: "sort",
    step: 7,
  },
  {
    id: "propagate",
    title: "7. Stage 2: the += walk",
    caption: "The sorted list is walked from the end, starting with L.grad = 1. Each node multiplies its grad by each local gradient and adds the product to that input's grad. Here c passes 3 × 1 to a, which already held 1 from L, so a.grad becomes 4.",
    program: "a = 2\nb = 3\nc = a * b\nL = c + a",
    stage: "propagate",
    step: 2,
  },
  {
    id: "reuse",
    title: "8. Reuse: why += matters",
    caption: "Here a feeds b twice and b feeds c twice, so each edge brings its own share and the shares must be added: c gives b 1 + 1 = 2, then b gives a 2 + 2 = 4. The panel below switches += to = so you can watch the shares overwrite each other instead.",
    program: "a = 1\nb = a + a\nc = b + b",
    stage: "propagate",
    step: "end",
    variant: "assign",
  },
  {
    id: "nan-log-zero",
    title: "9. −∞ from log(0)",
    caption: "The logarithm of 0 is minus infinity, and its local gradient 1/0 is infinity. In training this shows up when a probability collapses to 0 before a log; the marked node is where the trouble starts.",
    program: "a = 0\nL = log(a)",
    stage: "propagate",
    step: "end",
  },
  {
    id: "nan-log-negative",
    title: "10. NaN from log(−1)",
    caption: "A logarithm of a negative number has no real answer, so the result is NaN, and every value computed from it is NaN too. The gradients mostly stay numbers, since they multiply local gradients (1/a is −1 here): only the 2, whose local gradient is b's NaN data, gets a NaN gradient.",
    program: "a = -1\nb = log(a)\nL = b * 2 + a",
    stage: "propagate",
    step: "end",
  },
  {
    id: "nan-power",
    title: "11. NaN from (−x) ** 0.5",
    caption: "Raising a negative number to a power that is not whole, such as 0.5 (a square root), has no real answer either: NaN again. When NaN spreads through a graph, look first for a log or a power like this.",
    program: "a = -4\nL = a ** 0.5",
    stage: "propagate",
    step: "end",
  },
];

/** The lesson with this id, or null. */
export const lessonById = (id) => LESSONS.find((l) => l.id === id) ?? null;

/**
 * The lesson a link names (state.js's `lesson`, ?lesson=sort): the one rule of the page and the embed. A link
 * that gives no program opens the lesson's; beside the lesson's own program (a link written while the lesson was
 * shown) the lesson is still shown; beside another program it is null, as for an id no lesson has: its caption
 * would describe a graph that is not on screen. `program`: what is shown for a link without one, where that
 * link does not open the lesson (the page going Back to it).
 */
export function linkedLesson(state, program = null) {
  const lesson = lessonById(state.lesson);
  return lesson && (state.expression ?? program ?? lesson.program) === lesson.program ? lesson : null;
}

/** The global step of a lesson's {stage, step} in a timeline ("end": the stage's last step). */
export function lessonStep(tl, { stage, step }) {
  const [first, last] = stageBounds(tl, stage);
  return step === "end" ? last : Math.min(last, first + step);
}

function stageText({ stage, step }) {
  const name = stage === "propagate" ? "stage 2, propagation" : "stage 1, topological sort";
  return step === "end" ? `Opens at the end of ${name}.` : `Opens at ${name}, step ${step}.`;
}

/**
 * `open(lesson, how)` shows the lesson's program at its step (given by the page; how: "pick" or "link"). Builds a select,
 * Previous / Next buttons and the caption inside `container`. Returns {choose(lesson, how), show(lesson)}:
 * open a lesson as if picked in the menu, or show a lesson's caption (null: none) for a program already shown.
 */
export function createLessons(container, { open }) {
  const select = make("select", { attrs: { id: "vg-lesson" } });
  const previous = make("button", { className: "vg-button vg-small", text: "Previous", attrs: { type: "button", "aria-label": "Previous lesson" } });
  const next = make("button", { className: "vg-button vg-small", text: "Next", attrs: { type: "button", "aria-label": "Next lesson" } });
  const row = make("div", { className: "vg-lesson-row" });
  row.append(make("label", { text: "Lesson", attrs: { for: "vg-lesson" } }), select, previous, next);
  const caption = make("p", { className: "vg-lesson-caption", attrs: { "aria-live": "polite", "data-lesson": "caption", hidden: "" } });
  const where = make("p", { className: "vg-muted vg-lesson-where", attrs: { "data-lesson": "where", hidden: "" } });
  container.append(row, caption, where);

  select.append(new Option("Walk through the course…", ""));
  for (const lesson of LESSONS) select.append(new Option(lesson.title, lesson.id));

  const index = () => LESSONS.findIndex((l) => l.id === select.value);
  function showButtons() {
    previous.disabled = index() <= 0;
    next.disabled = index() >= LESSONS.length - 1;
  }

  function show(lesson) {
    select.value = lesson?.id ?? "";
    showButtons();
    caption.textContent = lesson?.caption ?? "";
    where.textContent = lesson ? stageText(lesson) : "";
    caption.hidden = where.hidden = !lesson;
  }

  function choose(lesson, how) {
    show(lesson);
    open(lesson, how);
  }

  select.addEventListener("change", () => {
    if (index() >= 0) choose(LESSONS[index()]);
  });
  previous.addEventListener("click", () => choose(LESSONS[Math.max(0, index() - 1)]));
  next.addEventListener("click", () => choose(LESSONS[Math.min(LESSONS.length - 1, index() + 1)]));
  showButtons();
  container.dataset.ready = "true";
  return { choose, show };
}
