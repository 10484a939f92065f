// The embed (GET /embed) and the self-contained file: the page's visualiser (main.js) started
// with the options the server wrote on the root element, talking to the page that frames it.
//
// Steps in the options and in messages count within the stage shown: with stage=propagate,
// step 0 is the start of propagation; with stage=both they are the page's step numbers. `step`
// is the node step (the URL's: the same whatever boxes are folded); `shownStep` counts the steps
// at the level shown, as the player's counter does (a folded box's run is one step).
//
// Messages to window.parent (any origin: they carry nothing private):
//   {type: "valuegraph:height", height}                      the content's height in CSS pixels
//   {type: "valuegraph:step", step, last, shownStep, shownLast, stage, caption}   on every step shown
//   {type: "valuegraph:error", message, line, column}         a program that fails (line, column: null
//                                                             where the error has no place)
// Messages from window.parent:
//   {type: "valuegraph:goto", step} or {type: "valuegraph:goto", shownStep}
//   {type: "valuegraph:program", expression, variables?}
//   {type: "valuegraph:play"}           {type: "valuegraph:pause"}

import { fetchBackward, reviveNumbers } from "./api.js";
import { startClassroom } from "./classroom.js";
import { exportNotes, pngBlob, standaloneSvg } from "./export.js";
import { lessonById, lessonStep, linkedLesson } from "./lessons.js";
import { connectScorm } from "./scorm.js";
import { startValuegraph } from "./main.js";
import { readState } from "./state.js";
import { stageBounds } from "./timeline.js";

const PREFIX = "valuegraph:";
const LANGUAGE_NAMES = { typescript: "TypeScript", javascript: "JavaScript" }; // the code a link or file may carry

export function startEmbed(root, { parent = window.parent } = {}) {
  const options = root.dataset;
  const stored = document.getElementById("vg-data");
  const saved = stored ? JSON.parse(stored.textContent) : null;
  const framed = parent && parent !== window;
  const post = (message) => {
    if (framed) parent.postMessage({ ...message, type: PREFIX + message.type }, "*");
  };
  let app = null;
  const scorm = options.scorm ? connectScorm(window, options.scorm) : null; // "1.2" or "2004"

  // The steps of the chosen stage, [first, last], in the page's numbering (the player keeps to them).
  const range = () => (app?.timeline ? stageBounds(app.timeline, options.stage) : [0, 0]);

  function onStep(k, frame) {
    const [first, last] = range();
    if (k === last) {
      app.controls.pause();
      scorm?.complete(); // the end of the walk shown (of its one stage, when one is chosen)
    }
    const { levelOf } = app.levels;
    const shown = { shownStep: frame.level.index - levelOf[first], shownLast: levelOf[last] - levelOf[first] };
    post({ type: "step", step: k - first, last: last - first, ...shown, stage: frame.stage, caption: frame.caption });
  }

  /** To node step `step` of the stage (the level step holding it). */
  function goTo(step) {
    const [first, last] = range();
    app.controls.pause();
    app.controls.go(Math.min(last, first + Math.max(0, Math.round(step))), "jump");
  }

  /** To level step `shown` of the stage, counted as the player counts. */
  function goToShown(shown) {
    const [first, last] = range().map((k) => app.levels.levelOf[k]);
    app.controls.pause();
    app.controls.goLevel(Math.min(last, first + Math.max(0, Math.round(shown))), "jump");
  }

  const backend = saved
    ? async () => reviveNumbers(JSON.parse(stored.textContent).response) // a fresh copy each time
    : fetchBackward;
  const state = { step: null, speed: Number(options.speed) || 1 };
  if (saved) Object.assign(state, { expression: saved.expression ?? "", variables: saved.variables ?? "" });
  // A course lesson (?lesson=propagate), by the page's rule (lessons.js): a link that gives no program opens the
  // lesson's, at the lesson's step unless `step` says otherwise; beside its own program only its caption shows.
  const asked = saved ? null : readState(window.location.search);
  const lesson = asked && linkedLesson(asked);
  const opensLesson = lesson !== null && asked.expression === null;
  if (opensLesson) Object.assign(state, { expression: lesson.program, variables: "" });
  if (!saved) state.lesson = lesson?.id ?? null;
  // The self-contained file has no server to lay out collapsed scopes: it opens the views laid out
  // into it when it was made (fileLayouts), and with none it shows the graph expanded.
  app = startValuegraph(root, { history: null, backend, layout: saved ? fileLayouts(saved.views) : undefined, state, stage: options.stage, onStep });

  if (!saved) showLesson(root, lesson, new URLSearchParams(window.location.search).get("lesson"));

  // A file made from TypeScript or JavaScript shows that code and plays the graph it made; nothing runs it.
  const savedLanguage = LANGUAGE_NAMES[saved?.language] ?? null;
  if (savedLanguage) root.dataset.language = saved.language;
  // A live embed whose link carries such code shows it, even with editor=hidden: it is read before Run.
  const linkLanguage = saved ? null : new URLSearchParams(window.location.search).get("language");
  if (LANGUAGE_NAMES[linkLanguage]) root.dataset.carriesCode = linkLanguage;

  app.ready.then(() => {
    if (savedLanguage) {
      const hint = root.querySelector('[data-vg="run-hint"]');
      hint.textContent = `${savedLanguage}: this file plays the graph the code made; it does not run the code.`;
      hint.hidden = false;
    }
    if (!app.timeline) return;
    if (options.step !== "") goTo(Number(options.step));
    else if (opensLesson) goTo(lessonStep(app.timeline, lesson) - range()[0]);
    else goTo(0);
    if (options.autoplay === "true") app.controls.play();
  });

  window.addEventListener("message", (event) => {
    if (event.source !== parent || !event.data || typeof event.data !== "object") return;
    const { type } = event.data;
    if (type === `${PREFIX}goto` && (event.data.shownStep ?? null) !== null && Number.isFinite(Number(event.data.shownStep)) && app.timeline) {
      goToShown(Number(event.data.shownStep));
    } else if (type === `${PREFIX}goto` && Number.isFinite(Number(event.data.step)) && app.timeline) {
      goTo(Number(event.data.step));
    } else if (type === `${PREFIX}program` && typeof event.data.expression === "string" && !saved) {
      app.controls.pause();
      app.editor.value = event.data.expression;
      if (typeof event.data.variables === "string") root.querySelector('[data-vg="variables"]').value = event.data.variables;
      app.run({ history: "none", step: 0 });
    } else if (type === `${PREFIX}play`) {
      app.controls.play();
    } else if (type === `${PREFIX}pause`) {
      app.controls.pause();
    }
  });

  root.addEventListener("valuegraph:error", (event) => {
    const { message, line, column } = event.detail;
    post({ type: "error", message, line: Number.isInteger(line) ? line : null, column: Number.isInteger(column) ? column : null });
  });

  // Teach live (not in the self-contained file: it has no server): ?room=CODE follows a room.
  const classroomBox = root.querySelector("[data-vg-classroom]");
  if (classroomBox && !saved) startClassroom(classroomBox, app);

  // The frame's layout: what is optional is shown only where the space actually left allows it,
  // decided afresh from the same starting state at every size (no hysteresis), and reported.
  const fit = fitFrame(root, options.table === "shown");
  let height = 0;
  function layout() {
    const next = fit();
    if (next === height) return;
    height = next;
    post({ type: "height", height });
  }
  layout();
  window.addEventListener("resize", layout); // before the frame is painted at its new size
  // Content that changes its height without the frame changing (an error shown, new table rows):
  // laid out again in the next frame (a change inside a ResizeObserver callback would loop).
  let queued = false;
  const observer = new ResizeObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      layout();
    });
  });
  for (const part of root.querySelectorAll(':scope > section, .vg-table, [data-vg="lesson"]')) observer.observe(part);
  app.ready.then(layout);

  // For scripts driving the page (the CLI's SVG and PNG export renders the standalone file).
  window.valuegraphExport = {
    svg: () => standaloneSvg(app.svg, exportNotes(app)).text,
    png: async () => {
      const bytes = new Uint8Array(await (await pngBlob(app.svg, exportNotes(app))).arrayBuffer());
      let binary = "";
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return btoa(binary);
    },
  };
  return app;
}

/**
 * The lesson's title and caption over the graph, while its program is on screen: as on the page, another program
 * (edited, or sent by the parent) takes the lesson with it (main.js). `named`: the link's lesson= as written. An id
 * no lesson has (a typo, a lesson renamed since) is said in a line, so that a teacher trying the link sees why
 * no caption shows; the embed shows what it would without it.
 */
function showLesson(root, lesson, named) {
  const box = root.querySelector('[data-vg="lesson"]');
  if (lesson) {
    root.querySelector('[data-vg="lesson-title"]').textContent = lesson.title;
    root.querySelector('[data-vg="lesson-caption"]').textContent = lesson.caption;
    box.hidden = false;
    root.addEventListener("valuegraph:loaded", (event) => {
      if (!event.detail.state.lesson) box.hidden = true;
    });
  }
  if (named && !lessonById(named)) {
    const notice = root.querySelector('[data-vg="lesson-unknown"]');
    notice.textContent = `No lesson is called "${named.slice(0, 40)}": this link's lesson is left out.`;
    notice.hidden = false;
  }
}

// The graph keeps at least this much height beside the walk panel, or the walk panel is left out.
const GRAPH_BESIDE_WALK = 200;
// Shown tables get up to this share of the height the graph and the tables have together.
const TABLES_SHARE = 0.45;
const TABLES_AT_LEAST = 64; // less than this, and the tables are left out
// A frame up to this tall is short: the editor goes beside the graph. So is a taller one where the
// controls one above the other would leave the graph less than SHORT_BELOW (a narrow frame).
const SHORT_UP_TO = 560;
const SHORT_BELOW = 120;
// Where the controls asked for leave the graph less than this, the frame is small (data-fit): the
// graph and a minimal player only.
const SMALL_GRAPH = 140;

/**
 * fitFrame(root, tablesShown) returns a function that lays the embed out for the frame's current
 * size and returns the content's height for the valuegraph:height message.
 *
 * The graph's row takes what the rest leaves (down to nothing: then the document scrolls, the
 * controls being taller than the frame). The frame is short (data-shape) up to SHORT_UP_TO px
 * or where the tall layout would leave the graph less than SHORT_BELOW. From the full layout
 * (walk panel shown, tables whole), the walk panel is left out if the graph would keep less than
 * GRAPH_BESIDE_WALK, and the tables get their share. The content's height is what the embed needs with the graph at 300 px and the
 * tables whole, or the frame's height if that is more (a frame is never asked to shrink).
 * Where the tall layout leaves the graph under SMALL_GRAPH px, the short one is tried; where that does too,
 * a lesson's caption is left out (data-lesson-room="none") and both are tried again; where the graph still
 * has too little, the frame is small (data-fit="small"): the graph and a minimal player, the rest left out.
 */
export function fitFrame(root, tablesShown) {
  const layOut = fitControls(root, tablesShown);
  const graph = root.querySelector('[data-vg="graph"]');
  const lesson = root.querySelector('[data-vg="lesson"]');
  const graphHeight = () => graph.getBoundingClientRect().height;
  // The layout just made (its content's height: `height`), else the short one, if it leaves the graph
  // SMALL_GRAPH px: the content's height, or null.
  function fitted(height) {
    if (graphHeight() >= SMALL_GRAPH) return height;
    if (root.dataset.shape !== "tall") return null;
    // The tall layout would leave only the graph: where the short one (the editor beside the graph) keeps
    // the controls, the frame is short after all, or a frame a little taller than a short one shows less.
    const short = layOut("short");
    return graphHeight() >= SMALL_GRAPH ? short : null;
  }
  return () => {
    delete root.dataset.fit;
    delete root.dataset.lessonRoom;
    const height = layOut(); // what the controls asked for need: a parent that grows the frame gets them
    const asked = fitted(height);
    if (asked !== null) return asked;
    if (!lesson.hidden) {
      // The lesson's caption goes first: a frame it alone would make small keeps the controls it asked for.
      root.dataset.lessonRoom = "none";
      const withoutLesson = fitted(layOut());
      if (withoutLesson !== null) return withoutLesson;
    }
    root.dataset.fit = "small";
    layOut();
    return height;
  };
}

function fitControls(root, tablesShown) {
  const graph = root.querySelector('[data-vg="graph"]');
  const tables = root.querySelector(".vg-tables");
  const walk = root.querySelector(".vg-walk-panel");
  // The height the graph and the tables have together (negative: the rest overflows the frame).
  const room = () => {
    const over = root.getBoundingClientRect().height - window.innerHeight;
    return graph.getBoundingClientRect().height + (tablesShown ? tables.getBoundingClientRect().height : 0) - Math.max(0, over);
  };
  return (shape = null) => {
    delete root.dataset.tablesRoom;
    root.style.removeProperty("--vg-tables-height");
    const whole = tablesShown ? tables.getBoundingClientRect().height : 0;
    const share = (space) => Math.min(whole, Math.max(0, Math.floor(space * TABLES_SHARE)));
    root.dataset.walk = "hidden";
    root.dataset.shape = "tall";
    if (shape === "short" || window.innerHeight <= SHORT_UP_TO) root.dataset.shape = "short";
    else {
      const space = room();
      if (space - share(space) < SHORT_BELOW) root.dataset.shape = "short";
    }
    root.dataset.walk = "shown";
    root.classList.add("vg-embed-natural");
    const natural = Math.ceil(root.getBoundingClientRect().height);
    root.classList.remove("vg-embed-natural");
    let space = room();
    if (walk.getBoundingClientRect().height > 0 && space - share(space) < GRAPH_BESIDE_WALK) {
      root.dataset.walk = "hidden";
      space = room();
    }
    if (tablesShown && share(space) < whole) {
      if (share(space) < TABLES_AT_LEAST) root.dataset.tablesRoom = "none";
      else root.style.setProperty("--vg-tables-height", `${share(space)}px`);
    }
    return Math.max(natural, window.innerHeight);
  };
}

/** The file's views (POST /export/html's `views`, laid out then), as the page's fetchLayout: a view it holds, or an error named NeedsServer; null: none. */
export function fileLayouts(views) {
  if (!views?.length) return null;
  const byChildren = new Map(views.map((view) => [JSON.stringify(view.children), view.layout]));
  return async (children) => {
    const layout = byChildren.get(JSON.stringify(children));
    if (layout) return structuredClone(layout);
    const error = new Error("This file holds the pictures it was saved with; open the program in valuegraph to open other boxes.");
    error.name = "NeedsServer";
    throw error;
  };
}

function start() {
  const root = document.querySelector("[data-valuegraph-embed]");
  if (root) startEmbed(root);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
