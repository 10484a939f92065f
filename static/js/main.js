// Wiring: editor -> API -> timeline -> graph, walk panel, tables, player, URL.
// Everything is found inside one root element, so the page could hold more than one.

import { cancelJob, fetchBackward, fetchJob, fetchJobGraph, fetchLayout, followJob, outgrewRequest, startJob } from "./api.js";
import { addViewButtons, createCamera } from "./camera.js";
import { createCodeLink } from "./codelink.js";
import { createControls } from "./controls.js";
import { startClassroom } from "./classroom.js";
import { startCoursePanels } from "./coursepanels.js";
import { createEditor } from "./editor.js";
import { DEFAULT_EXAMPLE, starterProgram } from "./examples.js";
import { createExamplesMenu } from "./examplesmenu.js";
import { createFilesPanel } from "./files.js";
import { addFlowToggle, edgeFlows, flowAt } from "./flow.js";
import { formatNumber, grouped, nodeName } from "./format.js";
import { bestBands, placeGraph } from "./layout.js";
import { createLossCurve } from "./losscurve.js";
import { addPresenter } from "./presenter.js";
import { readGraph } from "./importgraph.js";
import { createJobPanel } from "./jobpanel.js";
import { FINISHED, expectedCalls, newJob, withEvent, withStatus } from "./jobs.js";
import { LANGUAGES, runInSandbox } from "./sandbox.js";
import { createStoryCard } from "./storycard.js";
import { createGraphView } from "./render.js";
import { createScopes } from "./scopeview.js";
import { createTables } from "./table.js";
import { buildTimeline, frameAt, levelFrameAt, levelTimeline } from "./timeline.js";
import { fromRoomState, programChoices, programOf, programRequest, readField, readState, roomState, sameProgram, stateSearch, urlGives } from "./state.js";
import { createWalkPanel } from "./walkpanel.js";

/** Past this many nodes labels cannot be read: draw the compact view. */
export const COMPACT_ABOVE = 400;
const URL_THROTTLE_MS = 400; // the steps' URL is written once they pause this long
const JOB_POLL_MS = 500; // at most this often, a running job's status is asked for the line it is printing
const JOB_RECONNECT_MS = 1000; // after a job's event stream was lost

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

// Options for the embed and the standalone file: `backend` answers instead of the server,
// `history: null` leaves the URL alone, `state` overrides what the URL asks for, and
// `onStep(step, frame)` hears every step shown, and `stage` ("sort", "propagate") keeps the player to one stage.
// `layout` lays out collapsed scopes on the server (null: no server, scopes stay expanded).
export function startValuegraph(root, { location = window.location, history = window.history, backend = fetchBackward, layout = fetchLayout, state = {}, stage = "both", onStep: notifyStep = () => {} } = {}) {
  const el = (name) => root.querySelector(`[data-vg="${name}"]`);
  const initial = { ...readState(location.search), ...state };
  // Unless a direction was asked for (the URL's dir, the button), the graph takes the one that
  // suits the panel's shape: a long chain on a phone reads better bottom to top.
  const directionGiven = state.direction !== undefined || urlGives(location.search, "direction");
  // lesson: {id, program} of the course lesson shown (coursepanels.js), dropped when the program changes.
  const lessonOf = (id, program) => (id ? { id, program: program ?? DEFAULT_EXAMPLE.program } : null);
  const view = { direction: initial.direction, autoDirection: !directionGiven, lesson: lessonOf(initial.lesson, initial.expression) };
  // The program's fields beyond the editor and the variables box (variant, seed, run: state.js).
  const choices = programChoices(initial);
  let runProgram = initial.expression; // the program choices.run (a backward() call) was chosen for
  let tl = null;
  let levels = null; // tl's steps at the level shown (levelTimeline): a folded box's run is one step
  let model = null;
  let placement = null;
  let pending = null; // AbortController of the request in flight
  let requestCount = 0;
  let pinned = null;
  let hovered = null;
  let urlTimer = null;
  let waitingUrl = null; // the steps' URL, written once they pause (writeUrl's later)
  let shapeKey = "";
  let shownProgram = null; // the program fields (state.js) of the graph on screen
  const changeListeners = [];
  const changed = () => changeListeners.forEach((listener) => listener());

  const graphBox = el("graph");
  const note = el("graph-note");
  const caption = el("caption");
  const summary = el("graph-summary");
  // Cut short on a narrow head ("4 nodes · 4 edges · o…"): the whole line is its tooltip.
  new MutationObserver(() => (summary.title = summary.textContent)).observe(summary, { childList: true, characterData: true, subtree: true });
  const errorBox = el("error");
  const errorMessage = el("error-message");
  const errorGoto = el("error-goto");
  const variablesInput = el("variables");
  const examples = el("examples");
  const directionButton = el("direction");

  const graph = createGraphView(graphBox, {
    onNodeEnter: (id) => {
      hovered = id;
      showStory();
    },
    onNodeLeave: () => {
      hovered = null;
      showStory();
    },
    onNodeClick: (id) => pin(pinned === id ? null : id),
    onProgress: (done, total) => {
      if (done < total) setNote(`Drawing ${grouped(done)} of ${grouped(total)} nodes…`);
      else setNote(compactNote());
    },
    onResize: () => resized(),
  });
  // The embed's frame is small: it opens on the whole graph, and Follow is one press away.
  const camera = createCamera(graph, { buttons: addViewButtons(el("fit")), follow: !root.matches("[data-valuegraph-embed]") });
  const storyCard = createStoryCard(root, graphBox, {
    onClose: () => pin(null),
    onCover: (edges) => camera.cover(edges, pinned),
    nodesSeen: () => {
      const view = camera.visible();
      const at = (id) => {
        const p = placement?.nodes[id];
        return p ? { x: (p.cx - view.x0) * view.k, y: (p.cy - view.y0) * view.k } : null;
      };
      return { count: placement ? placement.nodes.length : 0, at };
    },
  });
  // Escape closes the pinned node's story, as it closes a dialog; registered before presenter mode's
  // Escape (which leaves that mode), which waits for a second press while a story is open.
  root.ownerDocument.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || pinned === null || event.defaultPrevented) return;
    const target = event.target;
    if (target?.matches?.("textarea, input, select, [contenteditable]")) return; // the editor's Escape is its own
    if (target?.closest?.("dialog[open]")) return; // and an open dialog's (Share) closes it
    if (target !== root.ownerDocument.body && !root.contains(target)) return;
    event.preventDefault();
    pin(null);
  });
  let flowOn = false; // "Gradient flow"
  let flows = null; // edgeFlows(tl) while it is on
  // The page (not the embed, whose frame is its screen) has presenter mode.
  if (root.matches(".vg-app")) addPresenter(root, el("fit"), camera);
  addFlowToggle(el("fit"), graphBox, (on) => {
    flowOn = on;
    flows = on && tl ? edgeFlows(tl) : null;
    if (tl) showStep(controls.step, "history");
  });
  const walk = createWalkPanel(root);
  const tables = createTables(root, {
    onJump: (j) => {
      controls.pause();
      controls.goLevel(j, "jump");
    },
  });
  const controls = createControls(root, {
    stage,
    onStep: (k, how) => showStep(k, how),
    onPlayingChange: (playing) => {
      // Announcing every caption while playing would drown a screen reader.
      caption.setAttribute("aria-live", playing ? "off" : "polite");
      if (!playing) writeUrl("replace");
      changed();
    },
  });
  const editor = createEditor(root, {
    onChange: (text) => {
      examplesMenu.sync(text);
      // The learner's own TypeScript/JavaScript runs only when they ask (Run, Ctrl+Enter): a
      // half-typed loop would otherwise start a worker at every key.
      if (inBrowser()) showRunHint("Press Run to run your code.");
      else run({ history: "replace" });
    },
    onRun: () => run({ history: "push", moveCaret: true }),
  });

  // ---- the language: the server's (Python, the shorthand: chosen by themselves) or TypeScript /
  // JavaScript, run in this browser (sandbox.js) and posted to /backward as a `graph` ----
  const languageSelect = el("language");
  const runButton = el("run-code");
  const runHint = el("run-hint");
  const inBrowser = () => LANGUAGES.includes(choices.language);
  const browserLimits = { timeLimitSeconds: Number(root.dataset.browserRunSeconds) || 5, maxNodes: Number(root.dataset.maxNodes) || 50000 };
  function showRunHint(text) {
    if (!runHint) return;
    runHint.textContent = text;
    runHint.hidden = text === "";
  }
  function showLanguage() {
    if (languageSelect) languageSelect.value = choices.language ?? "";
    if (runButton) runButton.hidden = !inBrowser();
    if (runJobButton) runJobButton.hidden = inBrowser() || !jobPanel; // jobs run the server's languages
    if (!inBrowser()) showRunHint("");
  }
  languageSelect?.addEventListener("change", () => {
    const language = languageSelect.value || null;
    // A starter (or nothing) gives way to the new language's; the learner's own code stays.
    const starterOf = (name) => starterProgram(name) ?? DEFAULT_EXAMPLE.program;
    const starter = (code) => code.trim() === "" || code === DEFAULT_EXAMPLE.program || code === starterOf(choices.language);
    if (starter(editor.value)) editor.value = starterOf(language);
    choices.language = language;
    choices.run = null;
    showLanguage();
    if (inBrowser()) {
      writeUrl("push");
      showRunHint("Press Run to run your code.");
    } else run({ history: "push" });
  });
  runButton?.addEventListener("click", () => run({ history: "push", moveCaret: true }));

  /**
   * The learner's TypeScript/JavaScript run in the sandbox (or the graph it made, when given: a
   * Teach live room's), its graph traced by the server; {response, made}, `made` the graph posted.
   * A posted graph's answer has no spans: each node takes the one its stack gave (sandbox.js), the
   * answer's nodes being the posted ones in the same order.
   */
  async function runInPage(code, signal, given) {
    const made = given ?? (await runInSandbox(code, { language: choices.language, run: choices.run, ...browserLimits })).graph;
    signal.throwIfAborted();
    const response = await fetchBackward({ graph: made }, { signal });
    if (response.nodes.length === made.nodes.length) response.nodes.forEach((node, i) => (node.span ??= made.nodes[i].span ?? null));
    return { response, made };
  }
  let pointedScope = []; // the members of the collapsed scope pointed at
  const scopes = createScopes(root, graph, {
    fetchLayout: layout,
    onChange: (opened) => model && refold(opened), // opened: the key of a box just opened
    onRefused: (message) => setNote(message), // a file opens only the views it was saved with
    onPoint: (ids) => {
      pointedScope = ids;
      showStory();
    },
  });
  const filesPanel = createFilesPanel(root, { onChange: () => run({ history: "replace" }) });
  const lossCurve = createLossCurve(root, {
    onPick: (index) => {
      // A job's graph is on screen: its other calls come from the job too (a request may not reach them).
      if (openRun !== null && editor.value === job.program.expression) return openJobGraph(index);
      choices.run = index === model.runs.length - 1 ? null : index; // null: the last call, the default
      runProgram = editor.value;
      run({ history: "push" });
    },
  });
  const seedInput = el("seed");
  seedInput?.addEventListener("change", () => {
    const seed = readField("seed", seedInput.value.trim());
    if (seed === undefined) {
      showError({ message: "Seed: write a whole number from 0 to 4294967295" });
      return;
    }
    choices.seed = seed;
    run({ history: "push" });
  });
  const codeLink = createCodeLink(root, {
    rows: editor.rows,
    onLine: (line, ids) => {
      graph.setLinked(ids);
      scopes.setLinked(ids);
    },
  });

  // ---- the examples menu and the other inputs ----
  const examplesMenu = createExamplesMenu(examples, { editor, load: () => run({ history: "push", step: 0 }) });
  let variablesTimer = null;
  variablesInput.addEventListener("input", () => {
    clearTimeout(variablesTimer);
    variablesTimer = setTimeout(() => run({ history: "replace" }), 350);
  });
  directionButton.addEventListener("click", () => {
    view.direction = view.direction === "LR" ? "BT" : "LR";
    view.autoDirection = false;
    showDirection();
    if (model) redraw({ refit: true });
    writeUrl("push");
    changed();
  });
  // Fit, + and − are the learner's own moves: they pause following, as a drag or the wheel does.
  el("fit").addEventListener("click", () => {
    camera.pause();
    camera.fit();
  });
  el("zoom-in").addEventListener("click", () => {
    camera.pause();
    camera.zoomBy(1.4);
  });
  el("zoom-out").addEventListener("click", () => {
    camera.pause();
    camera.zoomBy(1 / 1.4);
  });
  function resized() {
    if (model && view.autoDirection && bestDirection() !== view.direction) redraw({ refit: true });
    else if (placement?.compact && !placement.boxes && bestBands(placeGraph(model, { direction: view.direction, compact: true }), camera.visible().width, camera.visible().height) !== placement.bands) redraw({ refit: true });
    else if (camera.following) camera.refresh();
    else camera.fit(false);
  }

  /** The direction whose whole-graph view is larger in the panel (left to right unless clearly not). */
  function bestDirection() {
    const { width, height } = camera.visible();
    const [lr, bt] = ["LR", "BT"].map((direction) => scopes.size(model, direction, COMPACT_ABOVE)); // with collapsed scopes as boxes: the picture drawn
    const scale = (p) => Math.min(width / p.width, height / p.height);
    return scale(bt) > 1.25 * scale(lr) ? "BT" : "LR";
  }

  function showDirection() {
    const bt = view.direction === "BT";
    directionButton.setAttribute("aria-pressed", String(bt));
    directionButton.textContent = bt ? "Left to right" : "Bottom to top";
    directionButton.title = bt ? "Draw the graph from left to right" : "Draw the graph from bottom to top";
  }

  function setNote(text) {
    note.textContent = text;
    note.hidden = text === "";
  }

  function compactNote() {
    if (!model) return "";
    if (graphBox.classList.contains("is-stale")) return "This program has an error: showing the last one that worked.";
    if (!placement?.compact) return "";
    return `Simplified view: ${grouped(model.nodes.length)} nodes are too many to label, so edges carry no labels and records are compact. Zoom in to read the values.`;
  }

  // ---- running a program ----
  // `graph`: the graph the code made, given (a room's): shown without running the code.
  async function run({ history: how = "replace", step = null, moveCaret = false, graph: given = null } = {}) {
    const expression = editor.value;
    if (view.lesson && expression !== view.lesson.program) view.lesson = null; // another program than the lesson's
    if (choices.run !== null && expression !== runProgram) choices.run = null; // a new program: its last backward() call
    const { program, request, error } = currentRequest();
    if (error) {
      showError({ message: error });
      return;
    }
    pending?.abort();
    pending = new AbortController();
    const id = ++requestCount;
    const current = () => id === requestCount;
    summary.textContent = inBrowser() ? "Running your code…" : "Computing…";
    showRunHint("");
    try {
      const { response, made } = inBrowser() ? await runInPage(expression, pending.signal, given) : { response: await backend(request, { signal: pending.signal }), made: null };
      if (!current()) return;
      hideError();
      // A graph made in the page has no program the server could make again: the exports and a
      // room carry the graph itself beside the code, and the course panels leave it alone.
      shownProgram = made ? { ...program, graph: made } : program;
      if (openRun !== null) {
        openRun = null; // the graph on screen is no longer a job's
        drawJob();
      }
      await load(response, step, current, expression);
      if (current()) codeLink.setModel(response, expression);
      if (current()) lossCurve.show(response);
      if (current()) writeUrl(how);
      // The course panels (nudge test, broken walks) follow the graph on screen: `state` is the
      // page's view state, the request's fields are the graph's program (variables as numbers).
      if (current() && !made) root.dispatchEvent(new CustomEvent("valuegraph:loaded", { detail: { ...program, ...request, state: linkState(), model: response } }));
    } catch (error) {
      if (error.name === "AbortError" || !current()) return;
      showError(error, { moveCaret });
      writeUrl(how === "push" ? "push" : "replace");
    }
  }

  /** The request for the program in the boxes: {program (state.js's program fields), request} or {error}. */
  function currentRequest() {
    const program = programOf(viewState());
    const { request, error } = programRequest(program);
    if (error) return { error };
    const files = filesPanel.files(); // not part of the URL or a room's state: a names list is too long for either
    if (Object.keys(files).length) request.files = files;
    return { program, request };
  }

  // ---- jobs: a program run past one request (POST /runs), followed live in the job panel ----
  const runJobButton = el("run-job");
  const errorJob = el("error-job");
  let job = null; // jobs.js's record of the job in the panel (one at a time)
  let openRun = null; // the index of the job's backward() call whose graph is in the main view
  let stopFollowing = () => {};
  let drawQueued = false;
  let polledAt = -Infinity;
  const jobPanel = createJobPanel(root, {
    onPick: (k) => openJobGraph(k),
    onCancel: () => cancelShownJob(),
    onGoTo: () => {
      showJobProgram();
      editor.markError(job.error);
      editor.goTo(job.error.offset);
    },
  });
  runJobButton?.addEventListener("click", () => runAsJob());
  // Only this page follows its job, and a reload cannot find it again: leaving the page cancels it
  // (it would otherwise hold one of the client's few job places until it ended).
  window.addEventListener("pagehide", () => {
    if (job && !FINISHED.includes(job.status)) cancelJob(job.statusUrl, { keepalive: true }).catch(() => {});
  });
  el("error-run-job")?.addEventListener("click", () => runAsJob());

  /** Draws the job at most once a frame, however fast its events come. */
  function drawJob() {
    if (drawQueued || !job) return;
    drawQueued = true;
    requestAnimationFrame(() => {
      drawQueued = false;
      jobPanel.show(job, performance.now(), openRun);
    });
  }

  async function runAsJob() {
    const { program, request, error } = currentRequest();
    if (error) {
      showError({ message: error });
      return;
    }
    delete request.run; // a job runs the whole program; a call's graph is asked for by its index
    runJobButton.disabled = true;
    try {
      const created = await startJob(request);
      // The job supersedes a request for the program still on its way (it would only come back refused),
      // and the job the panel followed (it follows one).
      pending?.abort();
      summary.textContent = model ? summaryText() : "";
      if (job && !FINISHED.includes(job.status)) cancelJob(job.statusUrl).catch(() => {});
      stopFollowing();
      job = newJob(created, program, expectedCalls(request.expression), performance.now());
      openRun = null;
      hideError();
      showRunHint("");
      follow(job.id);
      drawJob();
    } catch (problem) {
      // Refused before it ran (too many jobs, the shorthand, the server out of reach): said beside the
      // button; the program, its graph and the job followed are left as they are.
      showRunHint(problem.message);
    } finally {
      runJobButton.disabled = false;
    }
  }

  function follow(jobId) {
    const mine = () => job?.id === jobId;
    stopFollowing = followJob(job.eventsUrl, {
      onEvent: (name, data) => {
        if (!mine()) return;
        job = withEvent(job, name, data, performance.now());
        if (name === "progress") pollPrinting();
        if (name === "end" && job.status === "failed" && editor.value === job.program.expression) editor.markError(job.error);
        drawJob();
      },
      // The stream replays the job from its start: begin again from nothing (unless it has ended meanwhile).
      onLost: () =>
        setTimeout(async () => {
          if (!mine()) return;
          const status = await fetchJob(job.statusUrl).catch(() => undefined);
          if (!mine()) return;
          if (status === null) job = { ...job, status: "failed", error: { message: "The server no longer has this job (it restarted, or the job expired).", line: 1, column: 1, offset: 0 } };
          else if (status && FINISHED.includes(status.status)) job = withStatus(job, status, performance.now());
          else {
            job = { ...job, runs: [], printed: [] };
            follow(jobId);
          }
          drawJob();
        }, JOB_RECONNECT_MS),
    });
  }

  /** The line a running job is printing, which its stream sends only once it ends (jobs.js's withStatus). */
  function pollPrinting() {
    const now = performance.now();
    if (now - polledAt < JOB_POLL_MS) return;
    polledAt = now;
    const polled = job.id;
    fetchJob(job.statusUrl)
      .then((status) => {
        if (!status || job?.id !== polled || FINISHED.includes(job.status)) return;
        job = withStatus(job, status, performance.now());
        drawJob();
      })
      .catch(() => {}); // the stream reports a lost server
  }

  async function cancelShownJob() {
    const cancelling = job.id;
    try {
      const status = await cancelJob(job.statusUrl);
      if (job?.id !== cancelling) return;
      stopFollowing();
      if (status) job = withStatus(job, status, performance.now());
      drawJob();
    } catch (problem) {
      showError(problem);
    }
  }

  /** The job's program back in the boxes (when the learner has changed them since it started). */
  function showJobProgram() {
    const { program } = job;
    if (editor.value !== program.expression) {
      editor.value = program.expression;
      examplesMenu.sync(program.expression);
    }
    variablesInput.value = program.variables;
    Object.assign(choices, programChoices(program));
    runProgram = program.expression;
    if (seedInput) seedInput.value = String(choices.seed);
  }

  /** The graph of the job's backward() call k (GET /runs/{id}/graph?run=k) in the main view, as the loss curve's points open theirs. */
  async function openJobGraph(k) {
    const shown = job;
    pending?.abort();
    pending = new AbortController();
    const id = ++requestCount;
    const current = () => id === requestCount && job?.id === shown.id;
    const opening = `Opening backward() call ${grouped(k + 1)}: the server runs the program again to that call…`;
    summary.textContent = opening;
    setNote(opening); // in the graph panel too: it can take as long as the job took to get there
    try {
      const response = await fetchJobGraph(shown.statusUrl, k, { signal: pending.signal });
      if (!current()) return;
      hideError();
      showJobProgram();
      choices.run = k;
      // A job's graph: no request could make it again within its limits (exports, Teach live, the course panels).
      shownProgram = null;
      openRun = k;
      await load(response, null, current, shown.program.expression);
      if (current()) codeLink.setModel(response, shown.program.expression);
      if (current()) lossCurve.show(response);
      if (current()) writeUrl("push");
      drawJob();
    } catch (error) {
      if (error.name === "AbortError" || !current()) return;
      showError(error);
    }
  }

  /** A graph pasted or dropped in "Import graph": traced and checked by the server, shown like
   * any answer, with the check's message above it. The program and the URL stay as they were. */
  async function importGraph(text) {
    let graphJson;
    try {
      graphJson = readGraph(text);
    } catch (error) {
      showError(error);
      return;
    }
    pending?.abort();
    pending = new AbortController();
    const id = ++requestCount;
    const current = () => id === requestCount;
    summary.textContent = "Computing…";
    try {
      const response = await fetchBackward({ graph: graphJson }, { signal: pending.signal });
      if (!current()) return;
      hideError();
      shownProgram = null;
      await load(response, null, current);
      if (current()) lossCurve.show(response);
    } catch (error) {
      if (error.name === "AbortError" || !current()) return;
      showError(error);
    }
  }

  const importText = el("import-text");
  if (importText) {
    const importFrom = async (file) => {
      importText.value = await file.text();
      importGraph(importText.value);
    };
    el("import-run").addEventListener("click", () => importGraph(importText.value));
    el("import-file").addEventListener("change", (event) => event.target.files[0] && importFrom(event.target.files[0]));
    const dropZone = el("import");
    dropZone.addEventListener("dragover", (event) => event.preventDefault());
    dropZone.addEventListener("drop", (event) => {
      event.preventDefault();
      const file = event.dataTransfer?.files?.[0];
      if (file) importFrom(file);
    });
  }

  /** The gradient check's message above the graph, for a graph posted whole; hidden for programs. */
  function showCheck(response) {
    const message = el("check-message");
    if (!message) return;
    const check = response.gradient_check;
    message.hidden = !check;
    message.textContent = check ? check.message : ""; // its status shows as a glyph too (valuegraph.css)
    message.dataset.status = check ? check.status : "";
    const setsNote = el("sets-note");
    if (setsNote) setsNote.hidden = response.inputs_in_sets !== true;
  }

  // A big graph is loaded in several tasks (scopes, timeline, first nodes, the rest in frames),
  // so that no single task blocks the page for long. `source`: the program it came from, if any.
  async function load(response, step, current, source = null) {
    const atEnd = tl !== null && controls.step === tl.last;
    await nextTask();
    if (!current()) return;
    // Which scopes are collapsed; the server lays out their view while the timeline is built.
    const prepared = scopes.prepare(response, source);
    await nextTask();
    const timeline = buildTimeline(response, { walk: showWalkChoice(response) });
    await prepared;
    if (!current()) return;
    model = response;
    tl = timeline;
    flows = flowOn ? edgeFlows(tl) : null;
    graphBox.classList.remove("is-stale");
    pinned = pinned !== null && pinned < model.nodes.length ? pinned : null;
    hovered = null;
    summary.textContent = summaryText();
    showCheck(model);
    showWarnings();
    useLevels();
    controls.go(step ?? (atEnd ? tl.last : Math.min(controls.step, tl.last)), "quiet");
    const drawn = redraw({ refit: false });
    await nextTask();
    if (!current()) return;
    showStep(controls.step, "load");
    await drawn;
    const firstWrong = model.gradient_check?.first;
    if (current() && firstWrong !== null && firstWrong !== undefined) camera.showNode(firstWrong);
  }

  /**
   * Whether the picture, as it (re)opens, shows its boxes rather than the walk's first node (the output,
   * often a lone value far from every box): a folded graph at the walk's start that does not read whole,
   * unless the gradient check has a first wrong node to go to. From the learner's first step the camera follows.
   */
  function opensOnBoxes() {
    const firstWrong = model.gradient_check?.first;
    return controls.step === 0 && placement.boxes?.length > 0 && camera.following && !camera.readsWhole()
      && (firstWrong === null || firstWrong === undefined);
  }

  /** Lay out and draw the current model; refit when the picture changed shape. */
  async function redraw({ refit }) {
    if (view.autoDirection) {
      view.direction = bestDirection();
      showDirection();
    }
    const compact = model.nodes.length > COMPACT_ABOVE;
    placement = scopes.place(model, view.direction, COMPACT_ABOVE); // with collapsed scopes as boxes
    // A long, thin big graph (the 3,001-node chain) is folded into bands to fill the panel.
    if (!placement.boxes) {
      const { width, height } = camera.visible();
      const bands = bestBands(placement, width, height);
      if (bands > 1) placement = placeGraph(model, { direction: view.direction, compact, bands });
    }
    const key = `${view.direction}:${placement.bands}:${model.nodes.length}:${placement.width}x${placement.height}`;
    const reshaped = key !== shapeKey;
    shapeKey = key;
    setNote(placement.compact ? `Drawing ${grouped(model.nodes.length)} nodes…` : "");
    const drawing = graph.setGraph(model, placement, tl);
    scopes.draw(placement);
    graph.pin(pinned);
    const frame = shownFrame(controls.step);
    graph.applyFrame(frame);
    scopes.applyFrame(frame);
    if (refit || reshaped) {
      camera.fit(false); // the whole graph, unless the camera is following the walk
      if (opensOnBoxes()) camera.showArea(scopes.boxesArea(), { animate: false }); // before the first paint
      else {
        camera.release();
        camera.show(frame, { force: true });
      }
    }
    const complete = await drawing;
    if (complete) setNote(compactNote());
  }

  function summaryText() {
    const edges = model.nodes.reduce((sum, node) => sum + node.children.length, 0);
    const out = model.nodes[model.output];
    const variant = model.variant && model.variant !== "correct" ? ` · variant: ${model.variant} (deliberately wrong)` : "";
    const plural = (n, word) => `${grouped(n)} ${word}${n === 1 ? "" : "s"}`;
    return `${plural(model.nodes.length, "node")} · ${plural(edges, "edge")} · output ${nodeName(out)} = ${formatNumber(out.data)}${variant}`;
  }

  function showError(error, { moveCaret = false } = {}) {
    root.dispatchEvent(new CustomEvent("valuegraph:error", { detail: error })); // the embed tells its parent
    errorBox.hidden = false;
    errorMessage.textContent = error.message;
    const offerJob = Boolean(jobPanel) && !inBrowser() && outgrewRequest(error);
    if (errorJob) errorJob.hidden = !offerJob;
    const placed = Number.isInteger(error.line);
    errorGoto.hidden = !placed;
    if (placed) {
      errorGoto.textContent = `Go to line ${error.line}, column ${error.column}`;
      errorGoto.onclick = () => editor.goTo(error.offset);
      editor.markError(error);
      if (moveCaret) editor.goTo(error.offset);
    }
    summary.textContent = model ? summaryText() : "";
    if (model) {
      graphBox.classList.add("is-stale");
      setNote(compactNote());
    } else {
      setNote(offerJob ? "No graph yet: run the program as a job, then choose a point of its loss curve." : "No graph yet: fix the program to see one.");
    }
  }

  function hideError() {
    errorBox.hidden = true;
    errorMessage.textContent = "";
    if (errorJob) errorJob.hidden = true;
    editor.clearError();
  }

  function showWarnings() {
    const box = el("warnings");
    const list = el("warning-list");
    const warnings = model.warnings ?? [];
    box.hidden = warnings.length === 0;
    list.replaceChildren(
      ...warnings.map((w) => {
        const li = document.createElement("li");
        const button = document.createElement("button");
        button.type = "button";
        button.className = "vg-link-button";
        button.textContent = `Show ${nodeName(model.nodes[w.node])}`;
        button.addEventListener("click", () => {
          camera.reveal(w.node);
          pin(w.node);
        });
        const text = document.createElement("span");
        text.textContent = `${w.message}. `;
        li.append(text, button);
        return li;
      }),
    );
  }

  // ---- which walk the player steps through: the course's, or the learner's own backward ----
  const walkChoice = el("walk-choice");
  const walkChoiceBox = el("walk-choice-box");

  /** Offer the choice when the answer has the learner's walk; the walk to show ("course" without one). */
  function showWalkChoice(response) {
    const offered = Boolean("learner_walk" in response && walkChoice); // `in`: its steps are made when read
    if (walkChoiceBox) walkChoiceBox.hidden = !offered;
    if (!offered && walkChoice) walkChoice.value = "course";
    return offered ? walkChoice.value : "course";
  }

  /** Step through the other walk of the graph on screen, from `step`. */
  async function useWalk(step, how) {
    if (!model) return;
    tl = buildTimeline(model, { walk: showWalkChoice(model) });
    flows = flowOn ? edgeFlows(tl) : null;
    useLevels();
    controls.go(Math.min(step, tl.last), "quiet");
    await redraw({ refit: false });
    showStep(controls.step, how);
  }

  /** The walk's steps at the level shown (the scopes folded now), for the player and the tables. */
  function useLevels() {
    levels = levelTimeline(tl, scopes.folded());
    controls.setTimeline(levels);
    tables.setTimeline(tl, levels);
  }

  /** A box opened or closed: the walk's steps at the new level, from the same node step. */
  function refold(opened = null) {
    useLevels();
    redraw({ refit: !opened });
    showStep(controls.step, "fold");
    if (opened) camera.showArea(scopes.areaOf(opened)); // a box just opened: show its insides, not the walk's node
  }

  walkChoice?.addEventListener("change", () => useWalk(0, "jump"));

  // ---- showing a step ----
  /** What node step k shows at the level shown: its level step's frame. */
  let lastShown = null; // {tl, levels, j, frame}: a graph's load and its first step show one frame (each a pass over every node)
  function shownFrame(k) {
    const j = levels.levelOf[k];
    if (lastShown?.tl !== tl || lastShown.levels !== levels || lastShown.j !== j) lastShown = { tl, levels, j, frame: levelFrameAt(tl, levels, j) };
    return lastShown.frame;
  }

  let stepShown = null;
  function showStep(k, how) {
    if (!tl) return;
    if (stepShown !== null && k !== stepShown) camera.release(); // the walk moved on from an area the camera showed
    stepShown = k;
    const frame = shownFrame(k);
    graph.applyFrame(frame);
    scopes.applyFrame(frame);
    graph.showFlow(flows ? flowAt(flows, k) : null);
    camera.show(frame);
    walk.showFrame(tl, frame);
    tables.show(frame.level.index);
    caption.textContent = frame.caption;
    codeLink.showWalk(frame.focus);
    showStory();
    notifyStep(k, frame);
    changed();
    if (how === "jump") writeUrl("push");
    else if (how !== "load" && how !== "history") writeUrl("replace", { later: true });
  }

  /** Pin a node (its story stays shown, as a card over the graph), or unpin with null. */
  function pin(id) {
    pinned = id;
    graph.pin(pinned);
    showStory();
    changed();
  }

  function showStory() {
    const id = pinned ?? hovered;
    // Only a click opens the card: pointing at nodes on the way to another should not flash cards over the graph.
    const card = pinned !== null && tl !== null && pinned < tl.n;
    storyCard.show(card, card ? [pinned, lastShown?.tl === tl ? lastShown.frame.focus : null] : []);
    const box = tl && scopes.showStory(el("story-title"), el("story-body"), () => frameAt(tl, controls.step)); // a collapsed scope pointed at
    if (!box) walk.showStory(tl, id !== null && tl && id < tl.n ? id : null, controls.step);
    codeLink.showNodes(pointedScope.length ? pointedScope : tl ? [hovered ?? pinned] : []);
  }

  // ---- the view state (state.js): what the page shows, and what its links carry ----
  function viewState() {
    return {
      ...choices,
      expression: editor.value,
      variables: variablesInput.value.trim(),
      step: tl ? controls.step : null,
      direction: view.direction,
      speed: controls.speed,
      playing: controls.playing,
      pinned,
      collapsed: scopes.collapsed,
      walk: walkChoice && walkChoiceBox && !walkChoiceBox.hidden ? walkChoice.value : "course",
      lesson: view.lesson?.id ?? null,
    };
  }

  /** The view state as a link carries it: a direction the panel picked by itself is left for the opener's panel to pick. */
  function linkState() {
    return { ...viewState(), direction: view.autoDirection ? "LR" : view.direction };
  }

  /** Drop a URL write still waiting; `flush`: make it now. */
  function cancelUrlWrite({ flush = false } = {}) {
    clearTimeout(urlTimer);
    urlTimer = null;
    if (flush && waitingUrl !== null) history.replaceState(null, "", waitingUrl);
    waitingUrl = null;
  }

  /**
   * Write the view state into the URL: "push" a history entry, or "replace" the current one
   * ("none": leave it). `later`: replace it once the moves pause, the page painted meanwhile (with
   * the program in the URL a replaceState takes milliseconds, 5-15 in a profile of the demo's walk:
   * too many for every step); a push first writes the waiting URL into the entry it leaves.
   */
  function writeUrl(how, { later = false } = {}) {
    cancelUrlWrite({ flush: how === "push" });
    if (how === "none" || !history) return; // Back/Forward: the URL is already the state
    const search = stateSearch(linkState());
    if (search === location.search) return;
    const url = `${location.pathname}${search}${location.hash}`;
    if (later) {
      waitingUrl = url;
      urlTimer = setTimeout(() => cancelUrlWrite({ flush: true }), URL_THROTTLE_MS);
    } else if (how === "push") history.pushState(null, "", url);
    else history.replaceState(null, "", url);
  }

  window.addEventListener("popstate", () => {
    cancelUrlWrite(); // a write still waiting was for the entry left behind
    const state = readState(location.search);
    controls.pause();
    controls.speed = state.speed;
    const program = state.expression ?? DEFAULT_EXAMPLE.program;
    view.lesson = lessonOf(state.lesson, program);
    const sameGraph = sameProgram({ ...state, expression: program }, viewState());
    const directionChanged = state.direction !== view.direction;
    view.direction = state.direction;
    view.autoDirection = !urlGives(location.search, "direction");
    Object.assign(choices, programChoices(state));
    showLanguage();
    runProgram = program;
    if (seedInput) seedInput.value = String(choices.seed);
    showDirection();
    const walkChanged = walkChoice !== null && state.walk !== walkChoice.value;
    if (walkChoice) walkChoice.value = state.walk;
    if (sameGraph && model) {
      if (walkChanged) {
        useWalk(state.step ?? 0, "history");
        return;
      }
      if (directionChanged) redraw({ refit: true });
      controls.go(state.step ?? 0, "history");
      return;
    }
    editor.value = program;
    variablesInput.value = state.variables;
    run({ history: "none", step: state.step ?? 0 });
  });

  // ---- start ----
  if (walkChoice) walkChoice.value = initial.walk; // used once the answer offers the learner's walk
  showDirection();
  controls.speed = initial.speed;
  controls.disable();
  const program = initial.expression ?? DEFAULT_EXAMPLE.program;
  editor.value = program;
  variablesInput.value = initial.variables;
  if (seedInput) seedInput.value = String(choices.seed);
  examplesMenu.sync(program);
  showLanguage();
  // A link carrying TypeScript or JavaScript shows the code and runs it only when the reader presses Run.
  let ready = Promise.resolve();
  if (inBrowser()) showRunHint("This link carries code: read it, then press Run to run it in your browser.");
  else ready = run({ history: "replace", step: initial.step ?? 0 });

  // ---- Teach live (classroom.js): what the page shows, as a room's state, and back ----
  function shownState() {
    if (!tl || !shownProgram) return null;
    return roomState({ ...viewState(), ...shownProgram }); // the graph on screen, not the editor's text
  }

  /** What the page shows, for the exports: the view state with the program of the graph on screen. */
  function shownView() {
    return shownProgram && { ...linkState(), ...shownProgram };
  }

  async function apply(room) {
    const s = fromRoomState(room);
    controls.pause(); // the teacher's steps arrive one by one; a local timer would race them
    controls.speed = s.speed;
    if (s.direction !== view.direction) {
      view.direction = s.direction;
      view.autoDirection = false; // the teacher's direction, not the one this panel would pick
      showDirection();
      if (model) redraw({ refit: true });
    }
    if (!shownProgram || !sameProgram(shownProgram, s)) {
      editor.value = s.expression;
      variablesInput.value = s.variables;
      Object.assign(choices, programChoices(s));
      showLanguage();
      runProgram = s.expression;
      if (seedInput) seedInput.value = String(choices.seed);
      // The teacher's TypeScript/JavaScript is not run here: the room carries the graph it made.
      await run({ history: "replace", step: s.step, graph: s.graph });
    }
    controls.go(s.step, "follow");
    pinned = model && s.pinned !== null && s.pinned < model.nodes.length ? s.pinned : null;
    graph.pin(pinned);
    showStory();
  }

  const onChange = (listener) => changeListeners.push(listener);

  /** The course lesson shown ({id, program}, or null): the URL carries it while its program is on screen. */
  const setLesson = (lesson) => (view.lesson = lessonOf(lesson?.id, lesson?.program));

  return { run, setLesson, controls, editor, ready, camera, graph, scopes, state: shownState, view: linkState, shown: shownView, files: filesPanel.files, apply, onChange, get timeline() { return tl; }, get levels() { return levels; }, get model() { return model; }, get svg() { return graphBox.querySelector("svg"); } };
}

const root = document.querySelector("[data-valuegraph]");
// export.js and share.js find the running page on its root element.
if (root) startCoursePanels(root, (root.valuegraph = startValuegraph(root)));
const classroomBox = document.querySelector("[data-vg-classroom]");
if (root && classroomBox) startClassroom(classroomBox, root.valuegraph);
