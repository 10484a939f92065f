// Every request to the server is built here: POST /backward (the graph, the trace and the
// layout), /layout, /export/html and /rooms.

/** A problem in the program, with its place (line and column are 1-based, offset 0-based). */
export class ProgramError extends Error {
  constructor(message, place = null) {
    super(message);
    this.name = "ProgramError";
    this.line = place?.line ?? null;
    this.column = place?.column ?? null;
    this.offset = place?.offset ?? null;
  }
}

const NON_FINITE = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };

// The wire format spells non-finite numbers as strings; turn them back into numbers, field by
// field (a reviver over the whole document would also turn a variable named NaN into a number).
function number(x) {
  return typeof x === "string" && x in NON_FINITE ? NON_FINITE[x] : x;
}

export function reviveNumbers(response) {
  for (const node of response.nodes) {
    node.data = number(node.data);
    node.grad = number(node.grad);
    node.local_grads = node.local_grads.map(number);
    if ("numeric_grad" in node) node.numeric_grad = number(node.numeric_grad);
    if ("exponent" in node) node.exponent = number(node.exponent);
    if ("expected_grad" in node) node.expected_grad = number(node.expected_grad);
  }
  for (const problem of response.gradient_check?.local ?? []) {
    problem.stored = number(problem.stored);
    problem.expected = number(problem.expected);
  }
  for (const run of response.runs ?? []) run.data = number(run.data);
  for (const step of response.trace?.propagate ?? []) {
    step.grad = number(step.grad);
    for (const u of step.updates) {
      u.local_grad = number(u.local_grad);
      u.delta = number(u.delta);
      u.grad = number(u.grad);
    }
  }
  return response;
}

function messageOf(detail, fallback) {
  if (typeof detail === "string") return detail;
  if (detail && typeof detail.message === "string") return detail.message;
  if (Array.isArray(detail) && detail.length) return detail.map((d) => d.msg ?? String(d)).join("; ");
  return fallback;
}

async function post(url, body, signal) {
  try {
    return await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
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
export async function fetchBackward(request, { signal, baseUrl = "", fields = {} } = {}) {
  const response = await post(`${baseUrl}/backward`, { ...request, trace: true, layout: true, ...fields }, signal);
  let body = null;
  try {
    body = await response.json();
  } catch {
    // An empty or non-JSON body is reported below by its status.
  }
  if (response.ok && body) return reviveNumbers(body);
  const detail = body?.detail;
  const place = detail && typeof detail === "object" && "line" in detail ? detail : null;
  throw new ProgramError(messageOf(detail, `The server answered ${response.status}.`), place);
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
