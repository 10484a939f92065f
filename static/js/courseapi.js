// The course panels' own requests to POST /backward: the nudge test (check + nudge) and the
// broken walks (variant), through the page's one request function.

import { fetchBackward } from "./api.js";

/**
 * Ask the engine about the page's current program. `options` are extra request fields
 * (check, nudge, variant, trace). Rejects with an Error whose message is the server's.
 */
export function askEngine({ expression, variables, seed = 0, run = null }, options, { signal } = {}) {
  return fetchBackward({ expression, variables, seed, run }, { signal, fields: { trace: false, layout: false, ...options } });
}

/** A small DOM helper shared by the panels: an element with a class and text (never markup). */
export function make(tag, { className = "", text = null, attrs = {} } = {}) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== null) el.textContent = text;
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  return el;
}
