// The course panels' own requests to POST /backward: the nudge test (check + nudge) and the
// broken walks (variant). Only the fields those panels read are turned back into numbers.

const NON_FINITE = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };
const number = (x) => (typeof x === "string" && x in NON_FINITE ? NON_FINITE[x] : x);

function revive(response) {
  for (const node of response.nodes) {
    node.data = number(node.data);
    node.grad = number(node.grad);
    if ("numeric_grad" in node) node.numeric_grad = number(node.numeric_grad);
  }
  for (const step of response.trace?.propagate ?? []) {
    step.grad = number(step.grad);
    for (const u of step.updates) {
      u.local_grad = number(u.local_grad);
      u.grad = number(u.grad);
    }
  }
  return response;
}

/**
 * Ask the engine about the page's current program. `options` are extra request fields
 * (check, nudge, variant, trace). Rejects with an Error whose message is the server's.
 */
export async function askEngine({ expression, variables }, options, { signal } = {}) {
  const response = await fetch("/backward", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ expression, variables, trace: false, layout: false, ...options }),
    signal,
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    // reported below by its status
  }
  if (response.ok && body) return revive(body);
  const detail = body?.detail;
  throw new Error(typeof detail?.message === "string" ? detail.message : `The server answered ${response.status}.`);
}

/** A small DOM helper shared by the panels: an element with a class and text (never markup). */
export function make(tag, { className = "", text = null, attrs = {} } = {}) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== null) el.textContent = text;
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  return el;
}
