// TypeScript and JavaScript, run in the learner's browser: types are stripped here by the vendored
// sucrase (no type checking), then the code runs in a Web Worker inside the sandboxed frame GET
// /sandbox serves (opaque origin, no network: app/sandbox.py). The answer is the graph of the value
// show() was given, for POST /backward's `graph`.

import { ProgramError } from "./api.js";

export const LANGUAGES = Object.freeze(["typescript", "javascript"]);
const SUCRASE = "../vendor/sucrase.v3.35.1.min.js";
const SPARE_MS = 1000; // past the frame's own time limit, the page removes the frame itself

let sucrase = null;
let frame = null; // {element, ready: Promise}
let runCount = 0;

/** The learner's file as plain JavaScript (a classic script, exports turned into `exports.x = ...`). */
async function transpile(code, language) {
  sucrase ??= import(SUCRASE);
  const { transform } = await sucrase;
  const transforms = language === "typescript" ? ["typescript", "imports"] : ["imports"];
  try {
    return transform(code, { transforms, production: true }).code;
  } catch (error) {
    const place = error.loc ? { line: error.loc.line, column: error.loc.column, offset: offsetOf(code, error.loc.line, error.loc.column) } : null;
    throw new ProgramError(`Syntax error: ${error.message}`, place);
  }
}

function offsetOf(code, line, column) {
  const lines = code.split("\n");
  let offset = 0;
  for (let k = 0; k < line - 1 && k < lines.length; k++) offset += lines[k].length + 1;
  return offset + Math.max(0, column - 1);
}

/**
 * The graph as POST /backward takes it, in `language`: each node's span (the stack's line and
 * column in the code after type stripping, which keeps lines but not columns) widened to that
 * line of the learner's code, blanks left out; columns count characters, as the server's do.
 */
function placed(graph, code, language) {
  const lines = code.split("\n");
  for (const node of graph.nodes) {
    if (!node.span) continue;
    const chars = Array.from(lines[node.span.line - 1] ?? "");
    let start = 0;
    let end = chars.length;
    while (start < end && /\s/.test(chars[start])) start++;
    while (end > start && /\s/.test(chars[end - 1])) end--;
    node.span = { line: node.span.line, column: start + 1, end_line: node.span.line, end_column: end + 1 };
  }
  return { ...graph, language };
}

function sandboxFrame(baseUrl) {
  if (frame?.element.isConnected) return frame;
  const element = document.createElement("iframe");
  element.setAttribute("sandbox", "allow-scripts");
  element.hidden = true;
  element.title = "Sandbox for your code";
  element.src = `${baseUrl}/sandbox`;
  const ready = new Promise((resolve) => {
    const onReady = (event) => {
      if (event.source !== element.contentWindow || event.data?.type !== "ready") return;
      window.removeEventListener("message", onReady);
      resolve();
    };
    window.addEventListener("message", onReady);
  });
  document.body.append(element);
  frame = { element, ready };
  return frame;
}

/**
 * Run the learner's file in the sandbox. Resolves to {graph, runs} (the graph show() was given in
 * run `run`, null: the last; runs: how many show() calls); rejects with a ProgramError (with its
 * line and column where known), also at the time limit and the node limit.
 */
export async function runInSandbox(code, { language, run = null, timeLimitSeconds = 5, maxNodes = 50000, baseUrl = "" } = {}) {
  const javascript = await transpile(code, language);
  const { element, ready } = sandboxFrame(baseUrl);
  await ready;
  const id = ++runCount;
  const timeLimitMs = timeLimitSeconds * 1000;
  return new Promise((resolve, reject) => {
    const finish = () => {
      window.removeEventListener("message", onMessage);
      clearTimeout(backstop);
    };
    const timedOut = () => new ProgramError(`Stopped after ${timeLimitSeconds} s: the program ran too long (the time limit, VALUEGRAPH_BROWSER_RUN_SECONDS). Is there a loop that never ends?`);
    const onMessage = (event) => {
      if (event.source !== element.contentWindow || event.data?.id !== id) return;
      finish();
      const answer = event.data;
      if (answer.type === "graph") resolve({ graph: placed(answer.graph, code, language), runs: answer.runs });
      else if (answer.type === "timeout") reject(timedOut());
      else {
        const place = Number.isInteger(answer.line) ? { line: answer.line, column: answer.column ?? 1, offset: offsetOf(code, answer.line, answer.column ?? 1) } : null;
        reject(new ProgramError(String(answer.message), place));
      }
    };
    // Should the frame itself stop answering, the page drops it, and its worker with it.
    const backstop = setTimeout(() => {
      finish();
      element.remove();
      reject(timedOut());
    }, timeLimitMs + SPARE_MS);
    window.addEventListener("message", onMessage);
    element.contentWindow.postMessage({ id, code: javascript, timeLimitMs, maxNodes, run }, "*");
  });
}
