// The embed (GET /embed) and the self-contained file: the page's visualiser (main.js) started
// with the options the server wrote on the root element, talking to the page that frames it.
//
// Steps in the options and in messages count within the stage shown: with stage=propagate,
// step 0 is the start of propagation; with stage=both they are the page's step numbers.
//
// Messages to window.parent (any origin: they carry nothing private):
//   {type: "valuegraph:height", height}                      the content's height in CSS pixels
//   {type: "valuegraph:step", step, last, stage, caption}     on every step shown
// Messages from window.parent:
//   {type: "valuegraph:goto", step}     {type: "valuegraph:program", expression, variables?}
//   {type: "valuegraph:play"}           {type: "valuegraph:pause"}

import { fetchBackward, reviveNumbers } from "./api.js";
import { startClassroom } from "./classroom.js";
import { exportNotes, pngBlob, standaloneSvg } from "./export.js";
import { connectScorm } from "./scorm.js";
import { startValuegraph } from "./main.js";

const PREFIX = "valuegraph:";

export function startEmbed(root, { parent = window.parent } = {}) {
  const options = root.dataset;
  const stored = document.getElementById("vg-data");
  const saved = stored ? JSON.parse(stored.textContent) : null;
  const framed = parent && parent !== window;
  const post = (message) => {
    if (framed) parent.postMessage({ ...message, type: PREFIX + message.type }, "*");
  };
  let app = null;
  const scorm = options.scorm === "true" ? connectScorm(window) : null;

  // The steps of the chosen stage, [first, last], in the page's numbering.
  function range() {
    const tl = app?.timeline;
    if (!tl) return [0, 0];
    if (options.stage === "sort") return [0, tl.sortEnd];
    if (options.stage === "propagate") return [tl.propagateStart, tl.last];
    return [0, tl.last];
  }

  function onStep(k, frame) {
    const [first, last] = range();
    if (k < first || k > last) {
      // Out of the stage shown (played past it, or a reset): stop at its edge.
      app.controls.pause();
      app.controls.go(k < first ? first : last, "jump");
      return;
    }
    if (k === last) app.controls.pause();
    if (k === app.timeline.last) scorm?.complete(); // the end of the walk
    post({ type: "step", step: k - first, last: last - first, stage: frame.stage, caption: frame.caption });
  }

  function goTo(step) {
    const [first, last] = range();
    app.controls.pause();
    app.controls.go(Math.min(last, first + Math.max(0, Math.round(step))), "jump");
  }

  const backend = saved
    ? async () => reviveNumbers(JSON.parse(stored.textContent).response) // a fresh copy each time
    : fetchBackward;
  const state = { step: null, speed: Number(options.speed) || 1 };
  if (saved) Object.assign(state, { expression: saved.expression ?? "", variables: saved.variables ?? "" });
  // The self-contained file has no server to lay out collapsed scopes: it shows them expanded.
  app = startValuegraph(root, { history: null, backend, layout: saved ? null : undefined, state, onStep });

  app.ready.then(() => {
    if (!app.timeline) return;
    if (options.step !== "") goTo(Number(options.step));
    else goTo(0);
    if (options.autoplay === "true") app.controls.play();
  });

  window.addEventListener("message", (event) => {
    if (event.source !== parent || !event.data || typeof event.data !== "object") return;
    const { type } = event.data;
    if (type === `${PREFIX}goto` && Number.isFinite(Number(event.data.step)) && app.timeline) {
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

  // Teach live (not in the self-contained file: it has no server): ?room=CODE follows a room.
  const classroomBox = root.querySelector("[data-vg-classroom]");
  if (classroomBox && !saved) startClassroom(classroomBox, app);

  let height = 0;
  new ResizeObserver(() => {
    const next = Math.ceil(root.getBoundingClientRect().height);
    if (next === height) return;
    height = next;
    post({ type: "height", height });
  }).observe(root);

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

function start() {
  const root = document.querySelector("[data-valuegraph-embed]");
  if (root) startEmbed(root);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
