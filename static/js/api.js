// Every request to the server is built here: POST /backward (the graph, the trace and the
// layout), /layout, /export/html, /rooms, and the jobs: POST /runs, its events, DELETE and
// GET /runs/{id}/graph.

import { COLUMNS_MEDIA_TYPE, decodeColumns } from "./columns.js";

/** A problem in the program, with its place (line and column are 1-based, offset 0-based). */
export class ProgramError extends Error {
  constructor(message, place = null, status = null) {
    super(message);
    this.name = "ProgramError";
    this.status = status; // the HTTP status the server answered with, if it answered
    this.line = place?.line ?? null;
    this.column = place?.column ?? null;
    this.offset = place?.offset ?? null;
  }
}

const NON_FINITE = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };

// The wire format spells non-finite numbers as strings; turn them back into numbers, field by
// field (a reviver over the whole document would also turn a variable named NaN into a number).
export function number(x) {
  return typeof x === "string" && x in NON_FINITE ? NON_FINITE[x] : x;
}

export function reviveNumbers(response) {
  return reviveOthers(reviveRecords(response));
}

/** The numbers of the nodes, the trace's steps and the learner's walk (decodeColumns revives these as it makes them). */
function reviveRecords(response) {
  for (const node of response.nodes) {
    node.data = number(node.data);
    node.grad = number(node.grad);
    const localGrads = node.local_grads; // in place: the list is this answer's own, and no copy is made per node
    for (let k = 0; k < localGrads.length; k++) localGrads[k] = number(localGrads[k]);
    if ("numeric_grad" in node) node.numeric_grad = number(node.numeric_grad);
    if ("exponent" in node) node.exponent = number(node.exponent);
    if ("expected_grad" in node) node.expected_grad = number(node.expected_grad);
  }
  for (const step of response.trace?.propagate ?? []) {
    step.grad = number(step.grad);
    for (const u of step.updates) {
      u.local_grad = number(u.local_grad);
      u.delta = number(u.delta);
      u.grad = number(u.grad);
    }
  }
  for (const step of response.learner_walk ?? []) {
    for (const u of step.updates) u.grad = number(u.grad);
  }
  return response;
}

/** The numbers outside the nodes and the trace: the gradient check's and the backward() calls'. */
function reviveOthers(response) {
  for (const problem of response.gradient_check?.local ?? []) {
    problem.stored = number(problem.stored);
    problem.expected = number(problem.expected);
  }
  for (const run of response.runs ?? []) run.data = number(run.data);
  return response;
}

function messageOf(detail, fallback) {
  if (typeof detail === "string") return detail;
  if (detail && typeof detail.message === "string") return detail.message;
  if (Array.isArray(detail) && detail.length) return detail.map((d) => d.msg ?? String(d)).join("; ");
  return fallback;
}

// What the page accepts for a graph: the columnar encoding first (half the bytes of JSON, and parsed
// and decoded in less time than JSON.parse takes for the JSON answer; docs/performance.md, "The
// columnar encoding"), JSON from a server that does not write it. graphOf reads either by its type.
const GRAPH_ACCEPT = `${COLUMNS_MEDIA_TYPE}, application/json;q=0.9`;

async function post(url, body, signal, accept = "application/json") {
  try {
    return await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: accept },
      body: JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ProgramError("The server could not be reached. Is valuegraph still running?");
  }
}

/**
 * Run a program on the server. `request` is the program's part of the view state as state.js's
 * programRequest makes it ({expression, variables, variant?, seed?, run?}); `fields` adds or
 * overrides request fields (trace, layout, check, nudge, variant). Resolves to the response with
 * numbers revived; rejects with a ProgramError (with its place when the server gives one), or an
 * AbortError when `signal` fires.
 */
// What the page asks of every graph: its trace (the walk) and the server's layout, but not the
// layout of a graph bigger than LAYOUT_WITH_ANSWER (up to a second or more for 50,000 nodes): such a graph opens
// collapsed, and scopeview.js asks POST /layout for the view it shows (the whole graph's only when it
// is shown expanded). Up to it, one request (the layout costs less than a second request's round trip).
export const LAYOUT_WITH_ANSWER = 5000;
const PAGE_FIELDS = { trace: true, layout: true, layout_max_nodes: LAYOUT_WITH_ANSWER };

export async function fetchBackward(request, { signal, baseUrl = "", fields = {} } = {}) {
  return graphAnswer(await post(`${baseUrl}/backward`, { ...request, ...PAGE_FIELDS, ...fields }, signal, GRAPH_ACCEPT));
}

/**
 * A graph answer's parsed body as the page uses it, whichever encoding its Content-Type names: the
 * JSON answer's object, with its numbers revived (the columnar encoding decoded to that object first).
 */
export function graphOf(body, contentType) {
  const columns = (contentType ?? "").split(";")[0].trim().toLowerCase() === COLUMNS_MEDIA_TYPE;
  return columns ? reviveOthers(decodeColumns(body, number)) : reviveNumbers(body);
}

/** A /backward answer (or the same answer from GET /runs/{id}/graph): the response, or a thrown ProgramError. */
async function graphAnswer(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // An empty or non-JSON body is reported below by its status.
  }
  if (response.ok && body) return graphOf(body, response.headers.get("Content-Type"));
  const detail = body?.detail;
  const place = detail && typeof detail === "object" && "line" in detail ? detail : null;
  throw new ProgramError(messageOf(detail, `The server answered ${response.status}.`), place, response.status);
}

/**
 * Whether /backward's error says the program needs longer than one request: the request's time
 * budget (503) or its statement limit (400, VALUEGRAPH_MAX_STATEMENTS). Such a program can run as
 * a job. The server's answers carry no code for either, so their messages are read (app/budget.py,
 * engine/python/state.py write them).
 */
export function outgrewRequest(error) {
  if (!(error instanceof ProgramError)) return false;
  if (error.status === 503) return /time budget/.test(error.message);
  return error.status === 400 && /^the program ran more than [\d,]+ statements/.test(error.message);
}

/**
 * Starts a job (POST /runs, the body fetchBackward posts, so that a call's graph answers as the
 * page's /backward does): resolves to {id, status_url, events_url}; rejects with the server's
 * reason (429: too many jobs).
 */
export async function startJob(request, { baseUrl = "" } = {}) {
  const response = await post(`${baseUrl}/runs`, { ...request, ...PAGE_FIELDS });
  const body = await response.json().catch(() => null);
  if (response.status === 202 && body) return body;
  throw new ProgramError(messageOf(body?.detail, `The server answered ${response.status}.`), null, response.status);
}

/**
 * Follows a job's server-sent events (GET /runs/{id}/events): onEvent(name, data) for each
 * `loss`, `printed`, `progress` and `end` (the data parsed, numbers as the wire spells them).
 * The stream replays the job from its start on every connection, so a lost connection is not
 * left to EventSource's own reconnect (which would replay twice into the same view): it is
 * closed and onLost() is told. Returns stop().
 */
export function followJob(eventsUrl, { onEvent, onLost = () => {}, baseUrl = "" }) {
  const source = new EventSource(`${baseUrl}${eventsUrl}`);
  let ended = false;
  for (const name of ["loss", "printed", "progress", "end"]) {
    source.addEventListener(name, (event) => {
      if (ended) return;
      if (name === "end") {
        ended = true;
        source.close(); // the server closes the stream after `end`; EventSource would reconnect
      }
      onEvent(name, JSON.parse(event.data));
    });
  }
  source.addEventListener("error", () => {
    if (ended) return;
    ended = true;
    source.close();
    onLost();
  });
  return () => {
    ended = true;
    source.close();
  };
}

/** A job's status (GET /runs/{id}); null when the job is gone (404: expired). */
export async function fetchJob(statusUrl, { baseUrl = "" } = {}) {
  const response = await fetch(`${baseUrl}${statusUrl}`, { headers: { Accept: "application/json" } });
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`The server answered ${response.status}.`);
  return response.json();
}

/**
 * Cancels a job (DELETE /runs/{id}); resolves to its status after, null when it is gone.
 * `keepalive` lets the request outlive the page (sent as it closes).
 */
export async function cancelJob(statusUrl, { baseUrl = "", keepalive = false } = {}) {
  const response = await fetch(`${baseUrl}${statusUrl}`, { method: "DELETE", headers: { Accept: "application/json" }, keepalive });
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`The server answered ${response.status}.`);
  return response.json();
}

/**
 * The graph of a job's backward() call k (GET /runs/{id}/graph?run=k): exactly what /backward
 * answers for the job's program with run = k. Resolves and rejects like fetchBackward.
 */
export async function fetchJobGraph(statusUrl, run, { signal, baseUrl = "" } = {}) {
  let response;
  try {
    response = await fetch(`${baseUrl}${statusUrl}/graph?run=${encodeURIComponent(run)}`, { headers: { Accept: GRAPH_ACCEPT }, signal });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ProgramError("The server could not be reached. Is valuegraph still running?");
  }
  return graphAnswer(response);
}

/**
 * The server's layered layout for a graph given as children lists (POST /layout): the page's
 * view with scopes collapsed into boxes. Resolves to the layout; rejects like fetchBackward.
 */
export async function fetchLayout(children, { signal, baseUrl = "" } = {}) {
  const response = await post(`${baseUrl}/layout`, { children }, signal);
  const body = await response.json().catch(() => null);
  if (response.ok && body) return body;
  throw new ProgramError(messageOf(body?.detail, `The server answered ${response.status}.`));
}

/**
 * The self-contained HTML file (POST /export/html) of the graph `request` makes (as for
 * fetchBackward), opening at `step`. Resolves to a Blob.
 */
export async function fetchStandalone(request, step, { baseUrl = "" } = {}) {
  const response = await post(`${baseUrl}/export/html?step=${encodeURIComponent(step)}`, request);
  if (!response.ok) throw new Error(`The server answered ${response.status}`);
  return response.blob();
}

/** A Teach live room (POST /rooms) showing `room` (state.js's roomState); resolves to {code, token, ...}. */
// `token` remakes a room the server lost under its old code (the teacher's page holds it).
export async function createRoom(room, { baseUrl = "", maxStudents = null, token = null } = {}) {
  const body = { state: room, ...(maxStudents === null ? {} : { max_students: maxStudents }), ...(token === null ? {} : { token }) };
  const response = await post(`${baseUrl}/rooms`, body);
  const answer = await response.json().catch(() => null);
  if (!response.ok) throw new Error(messageOf(answer?.detail, `The server answered ${response.status}.`));
  return answer;
}
