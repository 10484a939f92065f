// The page's view state: every field of what the page shows, declared once, with its URL name,
// its default and where it travels. The URL, the requests (api.js), the downloaded file, the share
// and embed links and a Teach live room's state are all derived from this table, so a field added
// here reaches every one of them, and none can drop it on the way.
//
//   ?lesson=sort&expression=<program>&variables=x%3D3&step=7&dir=bt&speed=2&variant=assign&seed=3&run=4&walk=learner
//
// A field's `url` is its URL parameter (null: the page keeps it, no link carries it); values
// equal to the default are left out of links and requests. `program: true` marks the fields that
// make the graph: they are the request to POST /backward (and /export/html), and a change to one
// of them means a new graph. `room: true` marks what a Teach live room carries (app/schemas.py's
// RoomState); `embed: false` what the embed link leaves to the embed's own options.

const MAX_SEED = 2 ** 32 - 1; // the API's range for seed
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function wholeNumber(max) {
  return (text) => {
    if (!/^\d+$/.test(text)) return undefined;
    const value = Number(text);
    return value <= max ? value : undefined;
  };
}

const asText = (text) => text;

/** Every field, in the order a URL lists them. read(text) gives the value or undefined (malformed: the default). */
export const FIELDS = Object.freeze([
  // The course lesson shown (lessons.js's id): its caption stays while its program is on screen, on the page
  // and in the embed, so the embed link carries it whenever the page's link does.
  { name: "lesson", url: "lesson", fallback: null, read: (text) => (/^[a-z0-9-]+$/.test(text) ? text : undefined) },
  { name: "expression", url: "expression", fallback: null, program: true, room: true, read: asText },
  { name: "variables", url: "variables", fallback: "", program: true, room: true, read: asText }, // as typed: "x = 3, w = -0.5"
  { name: "step", url: "step", fallback: null, room: true, embed: false, read: wholeNumber(Number.MAX_SAFE_INTEGER) },
  // "dir" is read in any case and written as "bt"; a URL without it lets the panel's shape choose.
  { name: "direction", url: "dir", fallback: "LR", room: true, read: (text) => (text.toUpperCase() === "BT" ? "BT" : "LR"), write: (value) => value.toLowerCase() },
  { name: "speed", url: "speed", fallback: 1, room: true, read: (text) => (Number(text) > 0 && Number.isFinite(Number(text)) ? Number(text) : undefined) },
  { name: "variant", url: "variant", fallback: "correct", program: true, room: true, read: (text) => text || undefined },
  { name: "seed", url: "seed", fallback: 0, program: true, room: true, read: wholeNumber(MAX_SEED) },
  { name: "run", url: "run", fallback: null, program: true, room: true, read: wholeNumber(Number.MAX_SAFE_INTEGER) }, // which backward() call; null: the last
  // The learner's own TypeScript or JavaScript, run in their browser (sandbox.js); null: the server's languages, chosen by themselves.
  { name: "language", url: "language", fallback: null, program: true, room: true, read: (text) => (text === "typescript" || text === "javascript" ? text : undefined) },
  // The graph that TypeScript/JavaScript made in the page (POST /backward's `graph`): a room carries it,
  // so that followers draw it without running the code. Not a program field: the code is.
  { name: "graph", url: null, fallback: null, room: true },
  // Which walk the player steps through: the course's, or ("learner") the program's own backward, when its answer has one.
  { name: "walk", url: "walk", fallback: "course", embed: false, read: (text) => (text === "learner" || text === "course" ? text : undefined) },
  { name: "playing", url: null, fallback: false, room: true },
  { name: "pinned", url: null, fallback: null, room: true }, // the node clicked, whose story stays shown
  // The scopes folded into boxes (keys from scopes.js). null: the graph's own default, which
  // depends on its size. Kept in the page: the keys are long, and a new graph has new ones.
  { name: "collapsed", url: null, fallback: null },
]);

// Program fields the server's request does not carry: the two boxes, and the language (a TypeScript
// or JavaScript program runs in the page and is posted as a `graph`).
const IN_PAGE = new Set(["expression", "variables", "language"]);
const BY_NAME = new Map(FIELDS.map((field) => [field.name, field]));
const isDefault = (field, value) => value === undefined || value === null || value === field.fallback || (field.name === "variables" && value.trim() === "");

/** Every field at its default. */
export function defaultState() {
  return Object.fromEntries(FIELDS.map((field) => [field.name, field.fallback]));
}

/** The state a URL asks for; anything missing or malformed takes its default. */
export function readState(search) {
  const params = new URLSearchParams(search);
  const state = defaultState();
  for (const field of FIELDS) {
    const text = field.url ? params.get(field.url) : null;
    if (text === null) continue;
    const value = field.read(text);
    if (value !== undefined) state[field.name] = value;
  }
  return state;
}

/** A field's value from text as a URL or an input gives it; undefined when malformed. */
export function readField(name, text) {
  return BY_NAME.get(name).read(text);
}

/** Whether a URL gives a field at all (a given direction is kept; a missing one is chosen by the panel). */
export function urlGives(search, name) {
  return new URLSearchParams(search).has(BY_NAME.get(name).url);
}

/** A state's URL parameters, defaults left out; `only(field)` picks which fields. */
function stateParams(state, only = () => true) {
  const params = new URLSearchParams();
  for (const field of FIELDS) {
    if (!field.url || !only(field)) continue;
    const value = state[field.name];
    if (isDefault(field, value)) continue;
    params.set(field.url, field.write ? field.write(value) : String(value));
  }
  return params;
}

/** The query string ("?..." or "") of a page showing `state`. */
export function stateSearch(state) {
  const query = stateParams(state).toString();
  return query ? `?${query}` : "";
}

/**
 * The query of an embed showing `state` (GET /embed): every URL field but the step, which the
 * embed counts within the stage it shows (given when past the start), then the embed's options
 * that differ from their defaults.
 */
export function embedSearch(state, options = {}, optionDefaults = {}) {
  const params = stateParams(state, (field) => field.embed !== false);
  if (state.step !== null && state.step !== undefined && state.step > 0) params.set("step", String(state.step));
  for (const [name, value] of Object.entries(options)) {
    if (value !== optionDefaults[name]) params.set(name, value);
  }
  return `?${params}`;
}

/** The fields that make the graph, as they stand in `state`. */
export function programOf(state) {
  return Object.fromEntries(FIELDS.filter((field) => field.program).map((field) => [field.name, state[field.name] ?? field.fallback]));
}

/**
 * The program fields that live in neither the editor nor the variables box (variant, seed, run):
 * the page keeps them as chosen, and a new program field is one of them.
 */
export function programChoices(state) {
  const choices = programOf(state);
  delete choices.expression;
  delete choices.variables;
  return choices;
}

/** Whether two states show the same graph (the same program fields). */
export function sameProgram(a, b) {
  return FIELDS.every((field) => !field.program || normalized(field, a[field.name]) === normalized(field, b[field.name]));
}

function normalized(field, value) {
  if (value === undefined || value === null) return field.fallback;
  return field.name === "variables" ? value.trim() : value;
}

/**
 * The request that makes the graph of `state` (the body of POST /backward and /export/html, before
 * api.js adds its own fields): the variables as {name: number}; the other fields only when they
 * differ from their defaults, which are the API's too. Returns {request} or {error} (the
 * variables box could not be read).
 */
export function programRequest(state) {
  const variables = parseVariables(state.variables ?? "");
  if (variables.error) return { error: variables.error };
  const request = { expression: state.expression ?? "", variables: variables.values };
  for (const field of FIELDS) {
    if (field.program && !IN_PAGE.has(field.name) && !isDefault(field, state[field.name])) request[field.name] = state[field.name];
  }
  return { request };
}

/** What a Teach live room carries of `state` (RoomState), the variables as {name: number}. */
export function roomState(state) {
  const room = {};
  for (const field of FIELDS) {
    if (!field.room) continue;
    const value = state[field.name] ?? field.fallback;
    room[field.name] = field.name === "variables" ? parseVariables(value).values ?? {} : value;
  }
  return room;
}

/** The state a room's state shows (the inverse of roomState). */
export function fromRoomState(room) {
  const state = defaultState();
  for (const field of FIELDS) {
    if (!field.room || room[field.name] === undefined) continue;
    state[field.name] = field.name === "variables" ? variablesText(room.variables) : room[field.name];
  }
  return state;
}

/** {name: number} as the variables box shows it: "x = 3, w = -0.5". */
export function variablesText(values) {
  return Object.entries(values ?? {}).map(([name, value]) => `${name} = ${value}`).join(", ");
}

/**
 * The variables box, "x = 3, w = -0.5" (commas, semicolons or newlines between them), as the
 * API's {name: number}. Returns {values} or {error}.
 */
export function parseVariables(text) {
  const values = {};
  for (const part of text.split(/[,;\n]/)) {
    if (part.trim() === "") continue;
    const match = part.match(/^\s*([^=\s]+)\s*=\s*(\S+)\s*$/);
    if (!match) return { error: `Variables: write name = number, not "${part.trim()}"` };
    const [, name, raw] = match;
    if (!NAME.test(name)) return { error: `Variables: "${name}" is not a name (letters, digits and _, not starting with a digit)` };
    const value = Number(raw);
    if (raw === "" || !Number.isFinite(value)) return { error: `Variables: ${name} must be a finite number, not "${raw}"` };
    values[name] = value;
  }
  return { values };
}
