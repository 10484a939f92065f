// The page's state in its URL, so a copied link reopens the same view:
//   ?expression=<program>&variables=x%3D3&step=7&dir=bt&speed=2&variant=assign&seed=3&run=4
// `expression` is the API's field name. Values equal to the default are left out.

export const DEFAULTS = Object.freeze({ expression: null, variables: "", step: null, direction: "LR", speed: 1, variant: "correct", seed: 0, run: null });
const MAX_SEED = 2 ** 32 - 1; // the API's range for seed

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The state a URL asks for; anything missing or malformed takes its default. */
export function readState(search) {
  const params = new URLSearchParams(search);
  const step = params.get("step");
  const speed = Number(params.get("speed"));
  return {
    expression: params.get("expression"),
    variables: params.get("variables") ?? DEFAULTS.variables,
    step: step !== null && /^\d+$/.test(step) ? Number(step) : DEFAULTS.step,
    direction: (params.get("dir") ?? "").toUpperCase() === "BT" ? "BT" : "LR",
    speed: Number.isFinite(speed) && speed > 0 ? speed : DEFAULTS.speed,
    variant: params.get("variant") || DEFAULTS.variant,
    seed: wholeNumber(params.get("seed"), MAX_SEED) ?? DEFAULTS.seed,
    run: wholeNumber(params.get("run"), Number.MAX_SAFE_INTEGER) ?? DEFAULTS.run, // which backward() call; null: the last
  };
}

function wholeNumber(text, max) {
  if (text === null || !/^\d+$/.test(text)) return null;
  const value = Number(text);
  return value <= max ? value : null;
}

/** The query string ("?...") for a state. */
export function stateSearch(state) {
  const params = new URLSearchParams();
  if (state.expression !== null && state.expression !== undefined) params.set("expression", state.expression);
  if (state.variables) params.set("variables", state.variables);
  if (state.step !== null && state.step !== undefined) params.set("step", String(state.step));
  if (state.direction === "BT") params.set("dir", "bt");
  if (state.speed !== DEFAULTS.speed) params.set("speed", String(state.speed));
  if (state.variant && state.variant !== DEFAULTS.variant) params.set("variant", state.variant);
  if (state.seed) params.set("seed", String(state.seed));
  if (state.run !== null && state.run !== undefined) params.set("run", String(state.run));
  const query = params.toString();
  return query ? `?${query}` : "";
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
